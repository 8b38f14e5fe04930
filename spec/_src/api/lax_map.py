"""``lax.map``: a scan without carry, or with ``batch_size`` a scan of
``vmap``-ed batches (so it sits above the lax layer, beside ``vmap``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spec._src.api.vmap import vmap
from spec._src.core import tree_util
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.loops import scan
from spec._src.lax.shaping import reshape
from spec._src.lax.slicing import concatenate, slice as lax_slice

__all__ = ["map"]


def map(f: Callable[..., Any], xs: Any, *, batch_size: int | None = None) -> Any:
    """``f`` applied to each slice of ``xs`` along axis 0, stacked; with
    ``batch_size``, ``vmap``-ed over batches (a remainder batch separately)."""
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    leaves, tree = tree_util.tree_flatten(xs)
    if not leaves:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    total = canonical_aval_of(leaves[0]).shape[0]
    num, rem = (0, total) if batch_size == 0 else divmod(total, batch_size)
    used = num * batch_size

    def rows(x: Any, start: int, stop: int) -> Any:
        # As ``x[start:stop]``: no equation for the whole axis, no strides.
        shape = canonical_aval_of(x).shape
        if (start, stop) == (0, shape[0]):
            return x
        return lax_slice(x, (start, *[0] * (len(shape) - 1)), (stop, *shape[1:]))

    # Each leaf's batches, then its remainder, as JAX slices them.
    batched, rest = [], []
    for x in leaves:
        if num:
            batched.append(reshape(rows(x, 0, used),
                                   (num, batch_size, *canonical_aval_of(x).shape[1:])))
        if rem or not num:
            rest.append(rows(x, used, total))
    outs = []
    if num:
        ys = scan(lambda _, x: ((), vmap(f)(x)), (),
                  tree_util.tree_unflatten(tree, batched))[1]
        outs.append(tree_util.tree_map(
            lambda y: reshape(y, (used, *canonical_aval_of(y).shape[2:])), ys)
            if not rem else ys)
    if rem or not num:
        outs.append(vmap(f)(tree_util.tree_unflatten(tree, rest)))
    if len(outs) == 1:
        return outs[0]
    return tree_util.tree_map(
        lambda a, b: concatenate(
            [reshape(a, (used, *canonical_aval_of(a).shape[2:])), b], 0),
        outs[0], outs[1])
