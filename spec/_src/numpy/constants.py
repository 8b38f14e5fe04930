"""NumPy's constants as ``jnp`` exports them (Python floats, and ``newaxis``)."""

from __future__ import annotations

import numpy as np

pi: float = np.pi


e: float = np.e


inf: float = np.inf


nan: float = np.nan


euler_gamma: float = np.euler_gamma


newaxis: None = None


__all__ = [
    "e", "euler_gamma", "inf", "nan", "newaxis", "pi",
]
