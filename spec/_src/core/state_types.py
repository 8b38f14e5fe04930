"""Refs as data: the ref type, ref effects and indexers.

A ref is a mutable array. Its type ``RefType`` is the type of the array it
holds, marked as a ref: it prints ``Ref{float32[3]}`` (``Ref{f32[3]}`` in
jaxprs). RefType is an ArrayType subclass, so that variables, caches and
type checks carry it like any type; primitives refuse ref operands unless
they declare ``accepts_refs`` (interpreter ``_typed``).

An index into a ref is an ``NDIndexer``: per dimension of the ref, either a
static ``Slice(start, size, stride)`` or an integer indexer (a scalar or an
integer array, an operand of the equation). Indexers are pytrees: the ``tree``
param of get/swap/addupdate is the structure of the tuple of indexers, whose
leaves are the integer indexers (as in JAX, ``()`` for ``ref[...]``).

This module holds data only (it imports no trace machinery), so that the
interpreter can import RefType.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.effects import Effect
from spec._src.core.types import ArrayType, is_int

# ================================================================== the type


@dataclass(frozen=True, slots=True)
class RefType(ArrayType):
    """The type of a ref holding an array of type ``inner_aval``."""

    @property
    def inner_aval(self) -> ArrayType:
        return ArrayType(self.shape, self.dtype, self.weak_type, self.sharding, self.vma,
                         self.munreduced, self.mreduced)

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return "Ref{" + self.inner_aval.str_short(short_dtypes) + "}"

    def __str__(self) -> str:
        return "Ref{" + str(self.inner_aval) + "}"

    def __repr__(self) -> str:
        return "Ref{" + str(self.inner_aval) + "}"


def ref_type_of(aval: ArrayType) -> RefType:
    """The type of a ref initialised with a value of type ``aval``: weak
    types are dropped (a ref's dtype is fixed)."""
    return RefType(aval.shape, aval.dtype, False, aval.sharding, aval.vma)


def is_ref_type(aval: Any) -> bool:
    return type(aval) is RefType


# =============================================================== effects


@dataclass(frozen=True)
class RefEffect(Effect):
    """An equation's write to a ref it reads as an operand. ``ref`` is the
    variable of that operand (JAX names the ref the same way on equations).
    Writes are never removed by dead-code elimination; reads are, as in JAX,
    so only writes (``swap``, ``addupdate``, calls that write their ref
    operands) are recorded."""

    kind: str  # "write" (swap) or "accum" (addupdate)
    ref: Any  # the Var of the written ref

    def __repr__(self) -> str:
        name = "WriteEffect" if self.kind == "write" else "AccumEffect"
        return f"{name}({self.ref!r})"


# ============================================================== indexers


@dataclass(frozen=True)
class Slice:
    """A slice of one dimension: ``size`` elements from ``start``, ``stride``
    apart. The start is static (an int) or dynamic (a scalar integer
    operand, a leaf of the indexer; the transposes of slicing make such
    slices, as JAX's ``ds(start, size)``); size and stride are static."""

    start: Any
    size: int
    stride: int = 1

    @property
    def is_dynamic_start(self) -> bool:
        return not isinstance(self.start, (int, np.integer))

    def __repr__(self) -> str:
        start = repr(self.start) if self.is_dynamic_start else str(self.start)
        return f"Slice(start={start}, size={self.size}, stride={self.stride})"


def _flatten_slice(s: Slice) -> tuple[tuple[Any, None], tuple[Any, int, int]]:
    # As JAX: a static start is node data, a dynamic one a child.
    if s.is_dynamic_start:
        return (s.start, None), (None, s.size, s.stride)
    return (None, None), (s.start, s.size, s.stride)


def _unflatten_slice(aux: tuple[Any, int, int], children: Any) -> Slice:
    start, size, stride = aux
    dynamic = list(children)[0] if children else None
    return Slice(start if dynamic is None else dynamic, size, stride)


tree_util.register_pytree_node(Slice, _flatten_slice, _unflatten_slice)


@dataclass(frozen=True, eq=False)
class NDIndexer:
    """One index into a ref of shape ``shape``: an entry per dimension, a
    Slice or an integer indexer (an operand: a value, an aval, a jaxpr atom,
    whatever the leaves of the tree are). ``int_indexer_shape`` is the
    common shape of the integer indexers."""

    indices: tuple[Any, ...]
    shape: tuple[int, ...]
    int_indexer_shape: tuple[int, ...]

    def __repr__(self) -> str:
        return (f"NDIndexer(indices={_tuple_repr(self.indices)}, shape={self.shape}, "
                f"int_indexer_shape={self.int_indexer_shape}, validate=False)")

    @property
    def is_int(self) -> list[bool]:
        return [not isinstance(i, Slice) for i in self.indices]

    def result_shape(self) -> tuple[int, ...]:
        """NumPy's rule: the integer indexers' shape replaces their dimensions
        where they are adjacent, else leads; slices keep their sizes."""
        is_int = self.is_int
        slice_shape = tuple(i.size for i in self.indices if isinstance(i, Slice))
        positions = [k for k, b in enumerate(is_int) if b]
        if not positions:
            return slice_shape
        if positions != list(range(positions[0], positions[0] + len(positions))):
            return self.int_indexer_shape + slice_shape
        return slice_shape[:positions[0]] + self.int_indexer_shape + slice_shape[positions[0]:]


def _tuple_repr(t: tuple[Any, ...]) -> str:
    return "(" + ", ".join(repr(x) for x in t) + ("," if len(t) == 1 else "") + ")"


def _flatten_indexer(ix: NDIndexer) -> tuple[list[Any], tuple[Any, ...]]:
    leaves, treedef = tree_util.tree_flatten(ix.indices)
    return leaves, (treedef, ix.shape, ix.int_indexer_shape)


def _unflatten_indexer(aux: tuple[Any, ...], leaves: Any) -> NDIndexer:
    treedef, shape, int_shape = aux
    return NDIndexer(tuple(tree_util.tree_unflatten(treedef, list(leaves))), shape, int_shape)


tree_util.register_pytree_node(NDIndexer, _flatten_indexer, _unflatten_indexer)


def transforms_repr(transforms: Sequence[Any]) -> str:
    return _tuple_repr(tuple(transforms))


# ============================================================ index parsing


class RefIndexError(Exception):
    """An index spec's slice of refs does not handle (reported as
    NotImplementedError by the caller)."""


def _expand(idx: Any, ndim: int) -> list[Any]:
    """``idx`` as one entry per dimension: ``...`` expanded, trailing
    dimensions sliced whole. ``None`` entries are ignored (JAX's ref
    indexing drops them)."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    items = [i for i in items if i is not None]
    n_ellipsis = sum(1 for i in items if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ellipsis:
        k = next(k for k, i in enumerate(items) if i is Ellipsis)
        fill = ndim - (len(items) - 1)
        items = items[:k] + [slice(None)] * max(fill, 0) + items[k + 1:]
    if len(items) > ndim:
        raise IndexError(f"Too many indices: {len(items)} > {ndim}.")
    return items + [slice(None)] * (ndim - len(items))


def parse_index(idx: Any, shape: tuple[int, ...], aval_of: Any, check_bounds: bool,
                broadcast: Any = None) -> tuple[NDIndexer | None, list[Any]]:
    """An index expression as (indexer, its integer operands); None for the
    whole ref (``ref[...]``, ``ref[()]`` on a scalar, or ``idx`` None).

    ``aval_of(x)`` types an integer operand; with ``check_bounds`` static
    integers out of range raise ValueError (JAX checks eagerly, not when
    tracing). The integer indexers broadcast against each other (NumPy's
    rule); ``broadcast(x, shape)`` makes one of another shape that shape.
    """
    if idx is None or idx is Ellipsis or (isinstance(idx, tuple) and not idx):
        return None, []
    entries = _expand(idx, len(shape))
    indices: list[Any] = []
    operands: list[Any] = []
    int_shapes: list[tuple[int, ...]] = []
    for entry, dim in zip(entries, shape):
        if isinstance(entry, Slice):
            indices.append(_checked_slice(entry, dim, aval_of, check_bounds))
            continue
        if isinstance(entry, slice):
            start, stop, step = entry.indices(dim)
            if step < 1:
                raise RefIndexError("ref slices with a negative step")
            indices.append(Slice(start, len(range(start, stop, step)), step))
            continue
        aval = aval_of(entry)
        if not is_int(aval.dtype):
            if aval.dtype == np.dtype(bool):
                raise RefIndexError("boolean ref indexers")
            raise TypeError(f"Invalid ref index {entry!r} of type {aval}: ref indexers must "
                            "be integers or slices")
        if check_bounds and not aval.shape and isinstance(entry, (int, np.integer)):
            # (as JAX: only the upper bound; negative indices wrap and clamp)
            if int(entry) >= dim:
                raise ValueError(f"Out of bound indexer: idx={int(entry)}, dim={dim}.")
        indices.append(None)
        operands.append(entry)
        int_shapes.append(aval.shape)
    try:
        int_shape = tuple(np.broadcast_shapes(*int_shapes))
    except ValueError:
        raise ValueError(f"Cannot broadcast shapes for indexing: {int_shapes}") from None
    if check_bounds:  # (as JAX, only eagerly) array indexers have the common rank
        for x, s in zip(operands, int_shapes):
            if s and len(s) != len(int_shape):
                raise ValueError(f"Indexer must have rank {len(s)}: idx={x!r} vs. "
                                 f"self.int_indexer_shape={int_shape}")
    if any(s != int_shape for s in int_shapes):
        if broadcast is None:
            raise RefIndexError("integer ref indexers of different shapes (broadcasting)")
        operands = [x if s == int_shape else broadcast(x, int_shape)
                    for x, s in zip(operands, int_shapes)]
    it = iter(operands)
    filled = tuple(next(it) if i is None else i for i in indices)
    indexer = NDIndexer(filled, tuple(shape), int_shape)
    # The operands in the indexer's leaf order: integer indexers and the
    # dynamic starts of ``ds`` slices.
    return indexer, tree_util.tree_leaves(indexer)


def _checked_slice(entry: Slice, dim: int, aval_of: Any, check_bounds: bool) -> Slice:
    """A ``ds(start, size, stride)`` entry as JAX checks it: a static start
    non-negative, and (eagerly) the slice within the dimension; a dynamic
    start a scalar integer (clamped into range when read or written)."""
    if entry.is_dynamic_start:
        aval = aval_of(entry.start)
        if aval.shape or not is_int(aval.dtype):
            raise TypeError(f"Invalid ref slice start {entry.start!r} of type {aval}: a dynamic "
                            "start must be a scalar integer")
        return entry
    if entry.start < 0:
        raise TypeError("slice start_indices must have every element be nonnegative, got "
                        f"({entry.start},).")
    if check_bounds and entry.size and entry.start + entry.stride * (entry.size - 1) >= dim:
        raise ValueError(f"Out of bound slice: start={entry.start}, size={entry.size}, "
                         f"stride={entry.stride}, dim={dim}.")
    return entry


def ds(start: Any, size: int | None = None, stride: int = 1) -> Slice:
    """``ds(start, size)``: ``size`` elements from ``start`` (a static int or
    a scalar integer array), ``stride`` apart; ``ds(n)`` is ``ds(0, n)``."""
    if size is None:
        return Slice(0, int(start), stride)
    return Slice(int(start) if isinstance(start, (int, np.integer)) else start, int(size),
                 int(stride))


def indexer_tree(indexer: NDIndexer | None) -> Any:
    """The ``tree`` param: the structure of the tuple of transforms."""
    return tree_util.tree_structure(() if indexer is None else (indexer,))


def unflatten_transforms(tree: Any, leaves: Sequence[Any]) -> tuple[NDIndexer, ...]:
    return tuple(tree_util.tree_unflatten(tree, list(leaves)))


def numpy_index(indexer: NDIndexer | None, dynamic_clamp: bool = True) -> Any:
    """A NumPy index for the value of a ref (the impls). Integer indexers are
    NumPy arrays here; as in XLA (JAX lowers ref reads and writes to dynamic
    slices and gathers), negative indices count from the end and the result
    is clamped into range rather than raising."""
    if indexer is None:
        return ...
    out: list[Any] = []
    for entry, dim in zip(indexer.indices, indexer.shape):
        if isinstance(entry, Slice):
            start = entry.start
            if entry.is_dynamic_start:  # clamped into range, as XLA's dynamic slices
                span = entry.stride * (entry.size - 1) + 1 if entry.size else 0
                start = int(np.clip(np.asarray(start).astype(np.int64), 0, dim - span))
            out.append(slice(start, start + entry.stride * (entry.size - 1) + 1
                             if entry.size else start, entry.stride))
            continue
        i = np.asarray(entry).astype(np.int64)
        i = np.where(i < 0, i + dim, i)
        out.append(np.clip(i, 0, max(dim - 1, 0)) if dynamic_clamp else i)
    return tuple(out)


def with_leaves(indexer: NDIndexer, leaves: Sequence[Any]) -> NDIndexer:
    it = iter(leaves)
    return replace(indexer, indices=tuple(
        e if isinstance(e, Slice) else next(it) for e in indexer.indices))


__all__ = ["NDIndexer", "RefEffect", "RefIndexError", "RefType", "Slice", "ds", "indexer_tree",
           "is_ref_type", "numpy_index", "parse_index", "ref_type_of", "unflatten_transforms"]
