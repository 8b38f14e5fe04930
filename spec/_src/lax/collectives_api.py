"""``lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``:
collectives over axes named by vmap (and, later, shard_map)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.lax.collectives import (
    all_gather_p,
    axis_index_p,
    axis_size,
    check_bound,
    pmax_p,
    pmin_p,
    psum_p,
)
from spec._src.core.interpreter import JaxprTrace, Tracer, canonical_aval_of, current_trace
from spec._src.core.sharding import _context, get_abstract_mesh
from spec._src.lax.shaping import canonicalize_axis


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
    from spec._src.lax.shard_map import vma_checked
    if not vma_checked():
        return ()
    manual = get_abstract_mesh().manual_axes
    return tuple(a for a in axes if a in manual)


def _varying_over(leaf: Any, axes: tuple[Any, ...]) -> Any:
    """``leaf`` cast to vary along ``axes`` (a reduction over an axis first
    makes an invariant operand vary along it, as JAX does)."""
    from spec._src.lax.shard_map import pvary
    missing = tuple(a for a in axes if a not in canonical_aval_of(leaf).vma)
    return pvary(leaf, missing) if missing else leaf


def _names(axis_name: Any) -> tuple[Any, ...]:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _reduce(prim: Any, x: Any, axis_name: Any, axis_index_groups: Any) -> Any:
    # As JAX: the reductions check their axes when typing an equation.
    check_bound(_names(axis_name), "psum")
    axes = _axes(axis_name)
    manual = _manual(axes)
    return tree_util.tree_map(
        lambda leaf: prim.bind(_varying_over(leaf, manual) if manual else leaf, axes=axes,
                               axis_index_groups=axis_index_groups), x)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """All-reduce sum over the named axes (a pytree is reduced leafwise).
    Over manual axes of a shard_map that tracks varying axes it is
    ``psum_invariant`` (varying in, invariant out)."""
    if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(x)):
        check_bound(_names(axis_name), "psum")
    axes = _axes(axis_name)
    manual = _manual(axes)
    if manual and len(manual) == len(axes):
        from spec._src.lax.shard_map import psum_invariant_p
        return tree_util.tree_map(lambda leaf: _manual_sum(leaf, manual, psum_invariant_p), x)
    return _reduce(psum_p, x, axis_name, axis_index_groups)


def _manual_sum(leaf: Any, axes: tuple[Any, ...], psum_invariant_p: Any) -> Any:
    """An operand unreduced along the axes is summed from its partials
    (unreduced -> invariant); otherwise varying -> invariant."""
    if frozenset(axes) <= canonical_aval_of(leaf).munreduced:
        from spec._src.lax.manual_collectives import unreduced_psum_p
        return unreduced_psum_p.bind(leaf, axes=axes)
    return psum_invariant_p.bind(_varying_over(leaf, axes), axes=axes)


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
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    n = _group_size(axis_name)
    return tree_util.tree_map(lambda t: lax.div(t, lax.full_like(t, n, shape=())), total)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False) -> Any:
    """Every member's value, stacked along ``axis`` (concatenated if tiled)."""
    names = _axes(axis_name)
    size = _group_size(axis_name)

    manual = _manual(names)

    def gather(leaf: Any) -> Any:
        if manual:  # an invariant operand first varies along the gathered axes
            leaf = _varying_over(leaf, manual)
        ndim = canonical_aval_of(leaf).ndim
        dim = canonicalize_axis(axis, ndim if tiled else ndim + 1)
        return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=names,
                                 axis_index_groups=axis_index_groups, axis_size=size,
                                 tiled=tiled)
    return tree_util.tree_map(gather, x)


def axis_index(axis_name: Any) -> Any:
    """This member's position along the named axis (int32)."""
    check_bound(_names(axis_name), "axis_index")
    axis_size(axis_name)
    return axis_index_p.bind(axis_name=axis_name)


def pvary(x: Any, axis_name: Any) -> Any:
    """Cast to varying along manual axes (free: only the type changes)."""
    from spec._src.lax.shard_map import pvary as cast
    axes = _axes(axis_name)
    return tree_util.tree_map(lambda leaf: cast(leaf, axes), x)


def _check_ppermute_bound(names: tuple[Any, ...]) -> None:
    """An unbound axis name fails as in JAX: while staging (jit, make_jaxpr;
    under vmap too, whose rule passes the collective down) with JAX's advice
    (NameError); eagerly, ppermute reaches evaluation, which it has none
    of outside shard_map (NotImplementedError)."""
    from spec._src.lax.collectives import check_bound
    bound = {n for n, _ in _context.axis_frames}
    if all(isinstance(n, (int, np.integer)) or n in bound for n in names):
        return
    trace: Any = current_trace()
    while trace is not None:
        if isinstance(trace, JaxprTrace):
            check_bound(names, "ppermute")
        trace = getattr(trace, "parent", None)
    raise NotImplementedError("Evaluation rule for 'ppermute' not implemented")


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Send each device's block to another position along the named axes."""
    from spec._src.lax.shard_map import ppermute_p
    _check_ppermute_bound(_names(axis_name))
    axes = _axes(axis_name)
    pairs = tuple((int(s), int(d)) for s, d in perm)
    manual = _manual(axes)
    return tree_util.tree_map(
        lambda leaf: ppermute_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                     axis_name=axes, perm=pairs), x)


__all__ = ["all_gather", "all_to_all", "axis_index", "axis_size", "pcast", "pmax", "pmean",
           "pmin", "ppermute", "pshuffle", "psum", "psum_scatter", "pswapaxes", "pvary"]


# ------------------------------------------------- manual-mode collectives
# psum_scatter, all_to_all, pshuffle, pswapaxes, axis_size and pcast; their
# primitives are in spec/_src/lax/manual_collectives.py.


def _state(leaf: Any, axes: tuple[Any, ...], who: str) -> str:
    """Along ``axes``, which of the four manual states ``leaf`` is in
    (ValueError when the axes disagree, as JAX)."""
    aval = canonical_aval_of(leaf)
    states = {"varying" if a in aval.vma else "unreduced" if a in aval.munreduced
              else "reduced" if a in aval.mreduced else "invarying" for a in axes}
    if len(states) > 1:
        raise ValueError(f"{who} can only accept axis_name which corresponds to one of "
                         f"varying, unreduced, reduced or invarying state of the input. Got "
                         f"input type: {aval}, axes: {axes} and input state: {states}")
    return states.pop()


def _canonical_dim(dim: int, ndim: int) -> int:
    return canonicalize_axis(dim, ndim)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """``psum`` with each member keeping only its block of
    ``scatter_dimension`` (removed if untiled, divided if tiled). An
    operand unreduced along the axes is summed by ``unreduced_reduce_scatter``."""
    from spec._src.lax.manual_collectives import reduce_scatter_p, unreduced_reduce_scatter_p
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axes:
        return x

    def scatter(leaf: Any) -> Any:
        size = _group_size(axes)
        dim = _canonical_dim(scatter_dimension, canonical_aval_of(leaf).ndim)
        if _state(leaf, axes, "jax.lax.psum_scatter") == "unreduced":
            if axis_index_groups is not None:
                raise NotImplementedError("psum_scatter of an unreduced value with "
                                          "axis_index_groups")
            return unreduced_reduce_scatter_p.bind(leaf, axis_name=axes, scatter_dimension=dim,
                                                   axis_size=size, tiled=tiled)
        manual = _manual(axes)
        return reduce_scatter_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                     axis_name=axes, scatter_dimension=dim,
                                     axis_index_groups=axis_index_groups, axis_size=size,
                                     tiled=tiled)
    return tree_util.tree_map(scatter, x)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Each member splits ``split_axis`` into one chunk per member and
    receives the members' chunks along ``concat_axis``. Untiled, the split
    axis (of size = number of members) disappears and a new one appears at
    ``concat_axis``; JAX stages that as expand_dims, the primitive, squeeze."""
    from spec import lax
    from spec._src.lax.manual_collectives import all_to_all_p

    def exchange(leaf: Any) -> Any:
        ndim = canonical_aval_of(leaf).ndim
        split, concat = _canonical_dim(split_axis, ndim), _canonical_dim(concat_axis, ndim)
        size = _group_size(axis_name)
        n = canonical_aval_of(leaf).shape[split]
        if tiled and n % size:
            raise ValueError(f"The size of all_to_all split_axis ({n}) has to be divisible by "
                             f"the size of the named axis {axis_name} ({size})")
        if not tiled and n != size:
            raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to "
                             f"equal x.shape[split_axis], but they are {size} and {n} "
                             "respectively.")
        if not tiled and split < concat:
            concat += 1  # concat_axis counts positions after split_axis is gone
            leaf = lax.expand_dims(leaf, (concat,))
        elif not tiled and concat < split:
            leaf = lax.expand_dims(leaf, (concat,))
            split += 1
        manual = _manual(_axes(axis_name))
        out = all_to_all_p.bind(_varying_over(leaf, manual) if manual else leaf,
                                split_axis=split, concat_axis=concat, axis_name=axis_name,
                                axis_index_groups=axis_index_groups, tiled=tiled)
        if not tiled and split != concat:
            out = lax.squeeze(out, (split,))
        return out
    return tree_util.tree_map(exchange, x)


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """``all_to_all(x, axis_name, axis, axis)``."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pshuffle(x: Any, axis_name: Any, perm: Any) -> Any:
    """``ppermute`` where member i receives from member ``perm[i]``."""
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def axis_size(axis_name: Any) -> int:  # type: ignore[no-redef]  # noqa: F811
    """The number of members along the named axes (a Python int; NameError
    for an unbound one)."""
    from spec._src.lax.manual_collectives import group_size
    return group_size(axis_name)


_PCAST_ALLOWED = ("unreduced", "reduced", "varying")


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Change a value's state along manual axes without moving data:
    invariant -> varying (``pvary``), invariant -> reduced (``preduced``),
    varying -> unreduced (``vary_unreduced_cast``), reduced -> varying
    (``reduced_vary_cast``)."""
    from spec._src.lax import manual_collectives as M
    from spec._src.lax.shard_map import pvary_p, vma_checked
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"{axis_name=} must be a tuple or a str. Got {axis_name}")
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axis_name:
        return x
    if to not in _PCAST_ALLOWED:
        raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                         f"{set(_PCAST_ALLOWED)}")
    casts = {("invarying", "varying"): pvary_p, ("invarying", "reduced"): M.preduced_p,
             ("varying", "unreduced"): M.vary_unreduced_cast_p,
             ("reduced", "varying"): M.reduced_vary_cast_p}

    def cast(leaf: Any) -> Any:
        state = _state(leaf, axes, "jax.lax.pcast")
        prim = casts.get((state, to))
        if prim is None:
            raise ValueError(f"Unsupported pcast from={state}, {to=}")
        _axes(axes)  # NameError for an unbound axis
        if not vma_checked() and _all_manual(axes):
            return leaf  # without check_vma the casts are no-ops, as in JAX
        return prim.bind(leaf, axes=M.mesh_ordered(axes))
    return tree_util.tree_map(cast, x)


def _all_manual(axes: tuple[Any, ...]) -> bool:
    manual = get_abstract_mesh().manual_axes
    return all(a in manual for a in axes)

