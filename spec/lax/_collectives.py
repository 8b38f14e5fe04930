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


def _manual(axes: tuple[Any, ...]) -> tuple[Any, ...]:
    """The named axes that are manual mesh axes of the shard_map in context
    (when it tracks varying axes)."""
    from spec.rules.shard_map import vma_checked
    from spec.sharding import get_abstract_mesh
    if not vma_checked():
        return ()
    manual = get_abstract_mesh().manual_axes
    return tuple(a for a in axes if a in manual)


def _varying_over(leaf: Any, axes: tuple[Any, ...]) -> Any:
    """``leaf`` cast to vary along ``axes`` (a reduction over an axis first
    makes an invariant operand vary along it, as JAX does)."""
    from spec.interpreter import canonical_aval_of
    from spec.rules.shard_map import pvary
    missing = tuple(a for a in axes if a not in canonical_aval_of(leaf).vma)
    return pvary(leaf, missing) if missing else leaf


def _reduce(prim: Any, x: Any, axis_name: Any, axis_index_groups: Any) -> Any:
    axes = _axes(axis_name)
    manual = _manual(axes)
    return tree_util.tree_map(
        lambda leaf: prim.bind(_varying_over(leaf, manual) if manual else leaf, axes=axes,
                               axis_index_groups=axis_index_groups), x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """All-reduce sum over the named axes (a pytree is reduced leafwise).
    Over manual axes of a shard_map that tracks varying axes it is
    ``psum_invariant`` (varying in, invariant out)."""
    axes = _axes(axis_name)
    manual = _manual(axes)
    if manual and len(manual) == len(axes):
        from spec.rules.shard_map import psum_invariant_p
        return tree_util.tree_map(
            lambda leaf: psum_invariant_p.bind(_varying_over(leaf, manual), axes=manual), x)
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


def pvary(x: Any, axis_name: Any) -> Any:
    """Cast to varying along manual axes (free: only the type changes)."""
    from spec.rules.shard_map import pvary as cast
    axes = _axes(axis_name)
    return tree_util.tree_map(lambda leaf: cast(leaf, axes), x)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Send each device's block to another position along the named axes."""
    from spec.rules.shard_map import ppermute_p
    axes = _axes(axis_name)
    pairs = tuple((int(s), int(d)) for s, d in perm)
    manual = _manual(axes)
    return tree_util.tree_map(
        lambda leaf: ppermute_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                     axis_name=axes, perm=pairs), x)


__all__ = ["all_gather", "axis_index", "pmax", "pmean", "pmin", "ppermute", "psum", "pvary"]
