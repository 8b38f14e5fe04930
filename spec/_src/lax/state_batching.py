"""Batching (vmap) rules of the ref primitives.

Kept apart from ``spec/_src/lax/state.py`` so that the vmap rules of refs can
grow on their own; the declarations there take their ``batch`` sections
from here (this module must not import ``spec._src.lax.state``: each rule
binds the primitive it is attached to).

A batched ref is a ref of the batched value: ``Ref{f32[B,n]}`` with its
batch dimension where the value had it. Reads and writes never move that
dimension (a ref is updated in place, so it cannot be transposed); instead
the indexer gains an entry for it:

* when no integer indexer is batched and all integer indexers are scalars,
  the whole batch dimension is sliced (``Slice(0, B)``);
* otherwise every array indexer gets the batch as its leading dimension
  (batched ones have theirs moved there, unbatched ones are broadcast), and
  a batched ref is indexed along its batch dimension by an ``iota`` of that
  shape, so that example ``b`` reads and writes its own part.

The indexed result then has its batch dimension where NumPy's rule puts it
(``_Plan.result_dim``). One case needs a transpose: integer indexers that
were adjacent (their dimensions in place in the result) become separated by
the inserted iota, so NumPy moves them to the front; the result (get, swap's
old value) is transposed back, and the value written is transposed to match.

A write (``swap``, ``addupdate``) into a ref that is not batched is refused
whatever else is batched: all examples would write the one shared location.
As JAX, these rules and ``new_ref``'s run even when no operand is batched
(``batching.batch_unmapped``): a ref made inside the vmapped function is
always batched, since a batched value may be written into it later.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.state_types import NDIndexer, Slice, unflatten_transforms
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    _PrimitiveRule,
    batch_unmapped,
    broadcast,
    match_axis,
    moveaxis,
)
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.shaping import broadcast_in_dim, broadcasted_iota, transpose


# ------------------------------------------------------------- indexers


def _contiguous(flags: Sequence[bool]) -> bool:
    """Whether the integer entries are adjacent (NumPy then keeps their
    dimensions in place; separated ones lead the result)."""
    where = [k for k, f in enumerate(flags) if f]
    return all(b - a == 1 for a, b in itertools.pairwise(where))


@dataclass(frozen=True)
class _Plan:
    """How one batched indexing is done unbatched.

    ``leaves``/``tree``: the operands and ``tree`` param of the new indexer;
    ``result_dim``: the batch dimension of the indexed part in the natural
    layout (the per-example result with the batch dimension added there);
    ``to_natural``: the permutation from the new indexer's result layout to
    the natural one, or None when they agree."""

    leaves: list[Any]
    tree: Any
    result_dim: int
    to_natural: tuple[int, ...] | None


def _plan(indexer: NDIndexer, idx_dims: Sequence[BatchDim], size: int,
          ref_shape: tuple[int, ...], ref_dim: BatchDim) -> _Plan:
    """The indexer of the batched ref (shape ``ref_shape``, batch dimension
    ``ref_dim``) whose integer operands are batched at ``idx_dims``."""
    idx_batched = any(d is not None for d in idx_dims)
    int_shape = (size, *indexer.int_indexer_shape)
    dims = iter(idx_dims)
    entries: list[Any] = []
    if any(isinstance(e, Slice) and e.is_dynamic_start for e in indexer.indices):
        # (only the transposes of slicing into gradient refs make these)
        raise NotImplementedError("vmap of ref reads and writes at dynamic slices is not "
                                  "specified yet")
    for entry in indexer.indices:
        if isinstance(entry, Slice):  # static: the same for every example
            entries.append(entry)
            continue
        dim = next(dims)
        ndim = canonical_aval_of(entry).ndim
        if dim is not None:
            entries.append(moveaxis(entry, dim, 0))
        elif ndim:
            # an array indexer shared by the examples: one copy per example
            entries.append(broadcast_in_dim(entry, int_shape, tuple(range(1, ndim + 1))))
        else:
            entries.append(entry)  # a scalar broadcasts against the others
    adds_int_axis = idx_batched or bool(indexer.int_indexer_shape)
    if ref_dim is not None:
        if adds_int_axis:
            batch_entry: Any = broadcasted_iota(np.dtype("int32"), int_shape, 0)
        else:
            batch_entry, int_shape = Slice(0, size), ()
        entries.insert(ref_dim, batch_entry)
    new = NDIndexer(tuple(entries), ref_shape, int_shape)
    old_flags, new_flags = indexer.is_int, new.is_int
    new_contiguous = _contiguous(new_flags)
    if adds_int_axis and not new_contiguous:
        result_dim = 0  # NumPy leads with the integer indexers' shape
    elif adds_int_axis:
        result_dim = new_flags.index(True)
    else:
        assert ref_dim is not None  # (something is batched)
        result_dim = ref_dim - sum(new_flags[:ref_dim])  # scalar indexers drop dims
    to_natural = None
    if adds_int_axis and _contiguous(old_flags) and not new_contiguous:
        # The per-example integer dimensions were in place after ``pos`` sliced
        # ones; the inserted iota moved them (with the batch) to the front.
        pos, n_int = old_flags.index(True), len(int_shape)
        rank = n_int + sum(1 for e in entries if isinstance(e, Slice))
        perm = (0, *range(n_int, n_int + pos), *range(1, n_int), *range(n_int + pos, rank))
        if perm != tuple(range(rank)):
            to_natural = perm
    leaves, tree = tree_util.tree_flatten((new,))
    return _Plan(leaves, tree, result_dim, to_natural)


def _transpose(x: Any, perm: tuple[int, ...]) -> Any:
    return transpose(x, perm)


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(k) for k in np.argsort(perm))


def _single(prim: str, transforms: tuple[NDIndexer, ...]) -> NDIndexer:
    if len(transforms) > 1:
        raise NotImplementedError(f"vmap of `{prim}` with more than one indexer is not "
                                  "supported (as in JAX)")
    return transforms[0]


# ---------------------------------------------------------------- rules


class _NewRef(batch_unmapped):
    """A ref of a batched value is batched where the value is; a ref of an
    unbatched value is batched anyway (broadcast to the front), since a
    batched value may be written into it later."""

    def __call__(self, axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> tuple[list[Any], list[BatchDim]]:
        (x,), (d,) = args, dims
        if d is None:
            x, d = broadcast(x, axis.size, 0, axis.explicit_mesh_axis), 0
        return [self.prim.bind(x, **params)], [d]


class _Freeze(batch_unmapped):
    """The contents of a batched ref are batched where the ref is."""

    def __call__(self, axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                 **params: Any) -> tuple[list[Any], list[BatchDim]]:
        return [self.prim.bind(args[0], **params)], [dims[0]]


class _Get(_PrimitiveRule):
    """A read: of a batched ref and/or at batched indices."""

    def __call__(self, axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                 *, tree: Any) -> tuple[list[Any], list[BatchDim]]:
        ref, *idx = args
        ref_dim, *idx_dims = dims
        transforms = unflatten_transforms(tree, idx)
        if not transforms:  # ``ref[...]``: the ref is what is batched
            return [self.prim.bind(ref, tree=tree)], [ref_dim]
        plan = _plan(_single("get", transforms), idx_dims, axis.size,
                     canonical_aval_of(ref).shape, ref_dim)
        out = self.prim.bind(ref, *plan.leaves, tree=plan.tree)
        if plan.to_natural is not None:
            out = _transpose(out, plan.to_natural)
        return [out], [plan.result_dim]


def _refuse_unbatched(what: str, ref: Any) -> None:
    # JAX raises a bare Exception here; the test suite checks the class.
    raise Exception(  # noqa: TRY002
        f"performing {what} operation with vmapped value on an unbatched array reference of "
        f"type {canonical_aval_of(ref)}. Move the array reference to be an argument to the "
        "vmapped function?")


class _Write(batch_unmapped):
    """``swap`` and ``addupdate``: writes into a batched ref, of a value and
    at indices either of which may be batched."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __call__(self, axis: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                 *, tree: Any) -> tuple[list[Any], list[BatchDim]]:
        ref, val, *idx = args
        ref_dim, val_dim, *idx_dims = dims
        if ref_dim is None:
            _refuse_unbatched(self.what, ref)
        transforms = unflatten_transforms(tree, idx)
        if not transforms:  # the whole ref: the value batched like it
            val = match_axis(axis, val, val_dim, ref_dim)
            return self._bind(ref, val, [], tree, ref_dim)
        plan = _plan(_single(self.prim.name, transforms), idx_dims, axis.size,
                     canonical_aval_of(ref).shape, ref_dim)
        val = match_axis(axis, val, val_dim, plan.result_dim)
        if plan.to_natural is None:
            return self._bind(ref, val, plan.leaves, plan.tree, plan.result_dim)
        outs, out_dims = self._bind(ref, _transpose(val, _inverse(plan.to_natural)),
                                    plan.leaves, plan.tree, plan.result_dim)
        return [_transpose(o, plan.to_natural) for o in outs], out_dims

    def _bind(self, ref: Any, val: Any, leaves: list[Any], tree: Any, dim: BatchDim
              ) -> tuple[list[Any], list[BatchDim]]:
        out = self.prim.bind(ref, val, *leaves, tree=tree)
        if self.prim.multiple_results:  # addupdate: no results
            return list(out), [dim] * len(out)
        return [out], [dim]


new_ref_batch = _NewRef()
get_batch = _Get()
swap_batch = _Write("a set/swap")
addupdate_batch = _Write("an addupdate")
freeze_batch = _Freeze()

__all__ = ["addupdate_batch", "freeze_batch", "get_batch", "new_ref_batch", "swap_batch"]
