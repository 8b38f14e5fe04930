"""Text formatting options (NumPy's "Input and output"): NumPy's own
functions, as ``jnp`` re-exports them."""

from __future__ import annotations

import numpy as np

# NumPy's print-option helpers and array printers, re-exported as JAX does.
printoptions = np.printoptions


get_printoptions = np.get_printoptions


set_printoptions = np.set_printoptions


array_repr = np.array_repr


array_str = np.array_str


__all__ = [
    "array_repr", "array_str", "get_printoptions", "printoptions", "set_printoptions",
]
