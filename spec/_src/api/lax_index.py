"""``lax.dynamic_index_in_dim`` and ``lax.dynamic_update_index_in_dim``: JAX wraps
these two in ``jit`` (their jaxprs contain a ``jit`` equation), so they sit above
the lax layer, beside ``jit``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.shaping import expand_dims, squeeze
from spec._src.lax.slicing import dynamic_slice_in_dim, dynamic_update_slice_in_dim

__all__ = ["dynamic_index_in_dim", "dynamic_update_index_in_dim"]


def _ndim(x: Any) -> int:
    return canonical_aval_of(x).ndim if not isinstance(x, (list, tuple)) else int(np.ndim(x))


def _dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True,
                          *, allow_negative_indices: bool = True) -> Any:
    result = dynamic_slice_in_dim(operand, index, 1, axis,
                                  allow_negative_indices=allow_negative_indices)
    return result if keepdims else squeeze(result, (axis,))


def _dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                 allow_negative_indices: bool = True) -> Any:
    axis = int(axis)
    if _ndim(update) != _ndim(operand):
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


@functools.cache
def _jitted(name: str) -> Callable[..., Any]:
    """The ``jit``-wrapped body, built once per name (the name JAX's equation shows)."""
    table: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
        "dynamic_index_in_dim": (_dynamic_index_in_dim,
                                 ("axis", "keepdims", "allow_negative_indices")),
        "dynamic_update_index_in_dim": (_dynamic_update_index_in_dim,
                                        ("axis", "allow_negative_indices")),
    }
    fn, statics = table[name]
    fn.__name__ = name
    jitted: Callable[..., Any] = jit(fn, static_argnames=statics)
    return jitted


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    return _jitted("dynamic_index_in_dim")(operand, index, axis, keepdims,
                                           allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    return _jitted("dynamic_update_index_in_dim")(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices)
