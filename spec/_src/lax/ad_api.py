"""``lax.stop_gradient``."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.lax.ad_prims import stop_gradient_p


def _stop(x: Any) -> Any:
    from spec._src.core.array import Array
    from spec._src.core.interpreter import EvalTrace, canonical_value, current_trace
    from spec._src.core.types import is_python_scalar
    if type(current_trace()) is EvalTrace:
        # Outside every transform the primitive is the identity and JAX
        # hands back what it was given: an Array as itself, a host value as a
        # host value (Python scalars unchanged, NumPy values at their
        # canonical dtype), never moved to the device.
        if isinstance(x, Array):
            return x
        if is_python_scalar(x):
            canonical_value(x)  # out-of-range integers still raise
            return x
        if isinstance(x, (np.ndarray, np.generic)):
            return canonical_value(x)[0]
    return stop_gradient_p.bind(x)


def stop_gradient(x: Any) -> Any:
    """The identity on every leaf of ``x``, with zero derivative under every
    transform (nested differentiation included)."""
    return tree_util.tree_map(_stop, x)


__all__ = ["stop_gradient"]
