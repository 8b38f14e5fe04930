"""``lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``:
collectives over axes named by vmap (and, later, shard_map)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec import tree_util
from spec.rules.collectives import all_gather_p, axis_index_p, axis_size, pmax_p, pmin_p, \
    psum_p


def _axes(axis_name: Any) -> tuple[Any, ...]:
    """Axis names as a tuple, each bound (NameError otherwise, as JAX)."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        if not isinstance(n, (int, np.integer)):
            axis_size(n)
    return names


def _reduce(prim: Any, x: Any, axis_name: Any, axis_index_groups: Any) -> Any:
    axes = _axes(axis_name)
    return tree_util.tree_map(
        lambda leaf: prim.bind(leaf, axes=axes, axis_index_groups=axis_index_groups), x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """All-reduce sum over the named axes (a pytree is reduced leafwise)."""
    return _reduce(psum_p, x, axis_name, axis_index_groups)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    return _reduce(pmax_p, x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    return _reduce(pmin_p, x, axis_name, axis_index_groups)


def _group_size(axis_name: Any) -> int:
    size = 1
    for n in _axes(axis_name):
        if not isinstance(n, (int, np.integer)):
            size *= axis_size(n)
    return size


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """``psum(x) / n``, n the number of members of the named axes."""
    from spec import lax
    n = _group_size(axis_name)
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    return tree_util.tree_map(lambda t: lax.div(t, lax.full_like(t, n, shape=())), total)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False) -> Any:
    """Every member's value, stacked along ``axis`` (concatenated if tiled)."""
    names = _axes(axis_name)
    size = _group_size(axis_name)

    def gather(leaf: Any) -> Any:
        from spec.interpreter import canonical_aval_of
        ndim = canonical_aval_of(leaf).ndim
        dim = axis % (ndim + (0 if tiled else 1)) if ndim or not tiled else axis
        return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=names,
                                 axis_index_groups=axis_index_groups, axis_size=size,
                                 tiled=tiled)
    return tree_util.tree_map(gather, x)


def axis_index(axis_name: Any) -> Any:
    """This member's position along the named axis (int32)."""
    axis_size(axis_name)
    return axis_index_p.bind(axis_name=axis_name)


__all__ = ["all_gather", "axis_index", "pmax", "pmean", "pmin", "psum"]
