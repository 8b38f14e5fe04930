"""Reductions, arg-reductions, cumulative reductions and sort.

Constraint numbering (cited in error messages, see SPEC.md, section 9.4):

- reduce_*:  C1 every axis is in [0, rank); C2 axes are distinct; C3 dtype class.
- argmax/argmin: C1 exactly one axis, in [0, rank); C2 the reduced axis is
  non-empty; C3 index_dtype is an integer type.
- cum*: C1 axis is in [0, rank) (negative axes are rejected); C2 dtype is a number.
- sort: C1 at least one operand; C2 operands share one shape; C3 dimension in
  [0, rank); C4 1 <= num_keys <= number of operands.
- top_k: C1 operand is not complex; C2 k >= 0; C3 rank >= 1; C4 axis in
  [0, rank); C5 k <= operand.shape[axis]; C6 operand.shape[axis] <= 2**31.
- reduce_precision (elementwise; declared here while the elementwise module is
  being edited by someone else): C1 dtype is a real floating type;
  C2 exponent_bits >= 1; C3 mantissa_bits >= 0.

Autodiff (as JAX's rules, see notes/spec_ad_reductions.md): reduce_sum, cumsum
and reduce_precision are linear; reduce_max/min share the tangent among tied
extrema; reduce_prod and the other cumulative reductions are differentiated
through a tree / parallel-prefix scan carried on (primal, tangent) pairs;
sort and top_k gather the tangents by the permutation; the logical and
arg-reductions have zero JVPs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.canonical import canonical_axis, static_int
from spec._src.core import types as T
from spec._src.lowering import rules as LR
from spec._src.lowering import structural as ST
from spec._src.interpreters.ad_util import (
    Zero,
    add_tangents,
    defjvp2,
    instantiate,
    linear_jvp,
    linear_transpose,
    zero_jvp,
)
from spec._src.interpreters.batching import (
    AxisData,
    _PrimitiveRule,
    moveaxis,
    sharding_for_vmap,
    vectorized,
)
from spec._src.core.interpreter import (
    Jaxpr,
    Tracer,
    canonical_aval_of,
    from_primitive,
    not_applicable,
    trace_to_jaxpr,
)
from spec._src.core.interpreter import Primitive
from spec._src.core.denormals import arithmetic, flush_result
from spec._src.lax.elementwise_kit import compute_dtype, total_order_key
from spec._src.core.registry import declare, require
from spec._src.lax.sharding_reduce_dot import (
    fit_out,
    parts_of,
    refuse_unreduced,
    refuse_unreduced_out,
)
from spec._src.core.errors import ShardingTypeError
from spec._src.core.sharding import (
    NamedSharding,
    P,
    UnreducedKind,
    forbid_moved_axes,
    forbid_unmarked_reduction,
)
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
import operator
from collections.abc import Sequence
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.prng import KeyTy, PRNGS
from spec._src.lax import elementwise as E
from spec._src.lax import sharding_kit as SK
from spec._src.lax.indexing import GatherDimensionNumbers, GatherScatterMode, gather
from spec._src.lax.shaping import (
    broadcast_in_dim,
    broadcast_in_dim_p,
    broadcasted_iota,
    convert_element_type,
    expand_dims,
    full,
    full_like,
    reshape,
    squeeze,
)
from spec._src.lax.slicing import concatenate, pad, rev, slice_in_dim

Impl = Callable[..., list[np.ndarray]]


# ------------------------------------------------------------------ helpers

def _check_axes(name: str, x: ArrayType, axes: tuple[int, ...], logical: bool) -> None:
    """JAX's classes: duplicate axes are a ValueError; an out-of-range axis
    a ValueError, except an axis past the end of a logical reduction's
    operand, an IndexError (JAX indexes the operand's shape with it)."""
    require(len(set(axes)) == len(axes), name, "C2", f"duplicate value in 'axes': {axes}",
            ValueError)
    for a in axes:
        require(0 <= a < x.ndim, name, "C1", f"axis {a} in axes {axes} is out of bounds for "
                f"operand of type {x}", IndexError if logical and a >= x.ndim else ValueError)


def _is_number(dt: T.DType) -> bool:
    return dt != T.bool_


def _reduced_shape(x: ArrayType, axes: tuple[int, ...]) -> T.Shape:
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _reduce_type(name: str, accepts: Callable[[T.DType], bool], accepted: str,
                 keep_weak: bool) -> Any:
    def typing(x: ArrayType, *, axes: tuple[int, ...], **params: Any) -> list[ArrayType]:
        # JAX checks the logical reductions' dtype before their axes, the
        # arithmetic ones' axes first; the order decides which error wins.
        if not keep_weak:
            require(accepts(x.dtype), name, "C3", f"operand dtype {x.dtype.name} is not "
                    f"accepted; accepted dtypes are {accepted}")
        _check_axes(name, x, axes, logical=not keep_weak)
        require(accepts(x.dtype), name, "C3", f"operand dtype {x.dtype.name} is not accepted; "
                f"accepted dtypes are {accepted}")
        return [ArrayType(_reduced_shape(x, axes), x.dtype, x.weak_type and keep_weak)]
    return typing


def _lift(x: np.ndarray) -> np.ndarray:
    """Narrow floats are reduced in float32 and rounded once (XLA CPU does
    the same); other dtypes are reduced in their own dtype."""
    cd = compute_dtype(x.dtype)
    return x.astype(cd) if cd != x.dtype else x


def _identity_fill(x: np.ndarray, axes: tuple[int, ...], value: Any) -> np.ndarray:
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return np.full(shape, value, dtype=x.dtype)


def _min_value(dt: T.DType) -> Any:
    """reduce_max's identity: the lowering's (JAX's) init value."""
    return -np.inf if T.is_complex(dt) else LR.lowest(dt)


def _max_value(dt: T.DType) -> Any:
    """reduce_min's identity: the lowering's (JAX's) init value."""
    return np.inf if T.is_complex(dt) else LR.highest(dt)


def _empty_reduction(x: np.ndarray, axes: tuple[int, ...]) -> bool:
    return any(x.shape[a] == 0 for a in axes)


# ------------------------------------------------------------ autodiff rules
# JVPs and transposes follow JAX's: the same mathematics and the same
# sequence of primitives, so that differentiated jaxprs print as JAX's. The
# rules compute with the lax wrappers, so that each operation is recorded or
# evaluated by the current trace; operations that read no tangent go to the
# primal side under linearize.

def _aval(x: Any) -> ArrayType:
    return canonical_aval_of(x)


def _kept_axes(ndim: int, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def _reduce_sum_transpose(ct: Any, operand: Any, *, axes: tuple[int, ...],
                          out_sharding: Any = None) -> Any:
    """Every operand element contributes once to its reduced output element:
    the cotangent is broadcast back along the reduced axes."""
    shape = operand.aval.shape
    # JAX computes the kept axes with NumPy and binds them unconverted
    # (np.int64 entries, visible in the printed jaxpr); so does this rule.
    kept = tuple(np.delete(np.arange(len(shape)), axes))
    if not kept and canonical_aval_of(ct).ndim == len(shape):
        return ct  # nothing to broadcast (a rank-0 sum over no axes): lax forwards it
    # The broadcast cotangent is laid out as the operand (cotangent types
    # follow primal types).
    return broadcast_in_dim_p.bind(ct, shape=tuple(shape), broadcast_dimensions=kept,
                                   sharding=operand.aval.ct_type().sharding)


def _chooser_jvp(g: Any, ans: Any, operand: Any, *, axes: tuple[int, ...],
                 out_sharding: Any = None) -> Any:
    """reduce_max/reduce_min: the tangent is the mean of the operand's
    tangents at the positions that attain the extremum (ties share it)."""
    x = _aval(operand)
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    where = convert_element_type(E.eq(operand, reshape(ans, keep_shape)),
                                     _aval(g).dtype)
    counts = reduce_sum(where, axes)
    return E.div(reduce_sum(E.mul(g, where), axes), counts)


Pair = tuple[Any, Any]  # a primal value and its tangent


def _pairwise(fn: Callable[[Any], Any], pair: Pair) -> Pair:
    """A linear structural operation applied to a primal and to its tangent
    (primal first, as a JVP rule binds them)."""
    return fn(pair[0]), fn(pair[1])


def _mul_pair(a: Pair, b: Pair) -> Pair:
    out = E.mul(a[0], b[0])
    return out, add_tangents(E.mul(a[1], b[0]), E.mul(a[0], b[1]))


def _reduce_prod_jvp(primals: list[Any], tangents: list[Any], *, axes: tuple[int, ...]
                     ) -> tuple[list[Any], list[Any]]:
    """JAX differentiates a product through a balanced tree of pairwise
    products: the reduced axes are moved to the front and flattened, then the
    leading axis is halved repeatedly (an odd half is padded with the
    identity 1) and the halves multiplied. Primal and tangent are carried
    together, each product contributing t_a * b + a * t_b."""
    x = _aval(primals[0])
    kept = _kept_axes(x.ndim, axes)
    n = math.prod(x.shape[a] for a in axes)
    flat = (n, *(x.shape[i] for i in kept))
    perm = tuple(axes) + kept
    pair = _pairwise(lambda v: reshape(v, flat, perm),
                     (primals[0], instantiate(tangents[0])))
    one = np.array(1, x.dtype)
    while n > 1:
        n1 = (n + 1) // 2
        low = _pairwise(functools.partial(slice_in_dim, start_index=0, limit_index=n1),
                        pair)
        high = _pairwise(functools.partial(slice_in_dim, start_index=n1,
                                           limit_index=None), pair)
        if n - n1 != n1:
            config = [(0, 1, 0)] + [(0, 0, 0)] * len(kept)
            # The tangent pads with a zero pad's JVP rule materialises.
            high = (pad(high[0], one, config), pad(high[1], full((), 0, x.dtype), config))
        pair = _mul_pair(low, high)
        n = n1
    if n == 0:
        out = full(flat[1:], one)
        return [out], [Zero(_aval(out).tangent_type())]
    p, t = _pairwise(lambda v: squeeze(v, (0,)), pair)
    return [p], [t]


def _cumsum_transpose(ct: Any, operand: Any, *, axis: int, reverse: bool) -> Any:
    """Each output is a sum of a prefix (suffix): the cotangent of an input
    is the sum of the output cotangents of the windows holding it."""
    return cumsum(ct, axis=axis, reverse=not reverse)


# The scan JAX differentiates cumulative reductions through (its
# associative_scan): combine adjacent pairs, scan the half-length result
# recursively (those are the odd outputs), combine each odd output with the
# following input (the even outputs), and interleave the two halves with
# strided pads. Every structural step acts on the primal and its tangent;
# ``combine`` maps two (primal, tangent) pairs to their combined pair.

Combine = Callable[[Pair, Pair], Pair]


def _interleave(a: Pair, b: Pair, axis: int) -> Pair:
    na, nb = _aval(a[0]).shape[axis], _aval(b[0]).shape[axis]
    ndim = _aval(a[0]).ndim
    a_cfg = [(0, 0, 0)] * ndim
    b_cfg = [(0, 0, 0)] * ndim
    a_cfg[axis] = (0, 1 if na == nb else 0, 1)
    b_cfg[axis] = (1, 0 if na == nb else 1, 1)
    dtype = _aval(a[0]).dtype
    zero = np.array(0, dtype)
    # The tangents pad with the padding value's tangent, a zero that pad's
    # linear JVP rule materialises on the primal side (a residual, as JAX's).
    pa = pad(a[0], zero, a_cfg), pad(a[1], full((), 0, dtype), a_cfg)
    pb = pad(b[0], zero, b_cfg), pad(b[1], full((), 0, dtype), b_cfg)
    return E.add(pa[0], pb[0]), E.add(pa[1], pb[1])


def _scan_pairs(combine: Combine, elems: Pair, axis: int) -> Pair:
    n = _aval(elems[0]).shape[axis]
    if n < 2:
        return elems

    def sl(start: int, limit: int | None, stride: int = 1) -> Callable[[Any], Any]:
        return lambda v: slice_in_dim(v, start, limit, stride=stride, axis=axis)

    reduced = combine(_pairwise(sl(0, -1, 2), elems), _pairwise(sl(1, None, 2), elems))
    odd = _scan_pairs(combine, reduced, axis)
    if n % 2 == 0:
        even = combine(_pairwise(sl(0, -1), odd), _pairwise(sl(2, None, 2), elems))
    else:
        even = combine(odd, _pairwise(sl(2, None, 2), elems))
    first = _pairwise(sl(0, 1), elems)
    even = (concatenate([first[0], even[0]], axis),
            concatenate([first[1], even[1]], axis))
    return _interleave(even, odd, axis)


def _balanced_cmp(x: Any, y: Any) -> Any:
    """1 where x > y, 1/2 where x == y, 0 elsewhere (also for NaN): the share
    of a max's derivative that goes to x; ties split it evenly."""
    gt_mask = E.gt(x, y)
    eq_mask = E.eq(x, y)
    dt = _aval(x).dtype
    ones = full_like(gt_mask, 1, dtype=dt)
    zeros = full_like(gt_mask, 0, dtype=dt)
    half = full_like(gt_mask, 0.5, dtype=dt)
    return E.select(gt_mask, ones, E.select(eq_mask, half, zeros))


def _chooser_pair(is_max: bool) -> Combine:
    def combine(a: Pair, b: Pair) -> Pair:
        out = E.max(a[0], b[0]) if is_max else E.min(a[0], b[0])
        wa = _balanced_cmp(a[0], b[0]) if is_max else _balanced_cmp(b[0], a[0])
        ta = E.mul(a[1], wa)
        wb = _balanced_cmp(b[0], a[0]) if is_max else _balanced_cmp(a[0], b[0])
        return out, add_tangents(ta, E.mul(b[1], wb))
    return combine


def _drop_pos_inf(x: Any) -> Any:
    """x with +inf replaced by 0 (keeps exp(x - out) finite when both are +inf)."""
    inf = np.array(np.inf, _aval(x).dtype)
    return E.select(E.eq(x, inf), full_like(x, 0), x)


def _logaddexp_pair(a: Pair, b: Pair) -> Pair:
    """log(exp(a) + exp(b)) computed as JAX's logaddexp does (max plus
    log1p(exp(-|a - b|)); a + b where the difference is NaN), with
    derivative exp(a - out) t_a + exp(b - out) t_b."""
    x1, x2 = a[0], b[0]
    if not T.is_float(_aval(x1).dtype):
        raise NotImplementedError("the JVP of cumlogsumexp is implemented for real floating "
                                  f"operands, got {_aval(x1).dtype.name}")
    amax = E.max(x1, x2)
    delta = E.sub(x1, x2)
    out = E.select(E.ne(delta, delta), E.add(x1, x2),
                     E.add(amax, E.log1p(E.exp(E.neg(E.abs(delta))))))
    ta = E.mul(a[1], E.exp(E.sub(_drop_pos_inf(x1), _drop_pos_inf(out))))
    tb = E.mul(b[1], E.exp(E.sub(_drop_pos_inf(x2), _drop_pos_inf(out))))
    return out, E.add(ta, tb)


def _cumulative_jvp(combine: Callable[[], Combine]) -> Callable[..., tuple[list[Any], list[Any]]]:
    """The JVP of a cumulative reduction: the scan above, carried on (primal,
    tangent) pairs; the primal output is the scan's (as in JAX)."""
    def rule(primals: list[Any], tangents: list[Any], *, axis: int, reverse: bool
             ) -> tuple[list[Any], list[Any]]:
        pair: Pair = (primals[0], instantiate(tangents[0]))
        if reverse:
            pair = _pairwise(lambda v: rev(v, (axis,)), pair)
        pair = _scan_pairs(combine(), pair, axis)
        if reverse:
            pair = _pairwise(lambda v: rev(v, (axis,)), pair)
        return [pair[0]], [pair[1]]
    return rule


def _sort_jvp(primals: list[Any], tangents: list[Any], *, dimension: int, is_stable: bool,
              num_keys: int) -> tuple[list[Any], list[Any]]:
    """Sort the operands together with an iota along ``dimension``; the
    sorted iota is the permutation, by which each tangent is gathered."""
    shape = _aval(primals[0]).shape
    index_dtype = T.uint64 if any(d > np.iinfo(np.uint32).max for d in shape) else T.uint32
    iota = broadcasted_iota(index_dtype, shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)
    # JAX builds the batching axes with NumPy (np.int64 entries); kept so
    # that the printed dimension numbers are the same.
    batch: Any = tuple(np.delete(np.arange(len(shape), dtype=np.int64), dimension))
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(dimension,),
                                   start_index_map=(dimension,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    idx = expand_dims(outs[-1], (len(shape),))
    t_outs = [t if type(t) is Zero else
              gather(t, idx, dnums, (1,) * len(shape),
                         mode=GatherScatterMode.PROMISE_IN_BOUNDS)
              for t in tangents]
    return list(outs[:-1]), t_outs


def _top_k_jvp(primals: list[Any], tangents: list[Any], *, k: int, axis: int,
               is_stable: bool) -> tuple[list[Any], list[Any]]:
    """The tangents at the chosen indices, gathered along ``axis``."""
    values, idxs = top_k_p.bind(primals[0], k=k, axis=axis, is_stable=is_stable)
    idx_zero = Zero(_aval(idxs).tangent_type())
    if type(tangents[0]) is Zero:
        return [values, idxs], [Zero(_aval(values).tangent_type()), idx_zero]
    idx_shape = _aval(idxs).shape
    rank = len(idx_shape)
    batch = tuple(i for i in range(rank) if i != axis)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    indices = reshape(idxs, (*idx_shape, 1))
    t_out = gather(tangents[0], indices, dnums, (1,) * rank)
    return [values, idxs], [t_out, idx_zero]


def _reduce_precision_transpose(ct: Any, operand: Any, *, exponent_bits: int,
                                mantissa_bits: int) -> Any:
    return reduce_precision_p.bind(ct, exponent_bits=exponent_bits,
                                   mantissa_bits=mantissa_bits)


# ------------------------------------------------------------ batching
#
# Reductions and their relatives act independently along every axis they do
# not reduce/scan/sort, so the batch axis simply becomes one more such axis:
# the primitive binds once on the batched operand with its axis parameters
# renumbered to skip the batch axis.


class _ReducerBatch(_PrimitiveRule):
    """Reductions (and arg-reductions): the reduced axes are renumbered past
    the batch axis (as NumPy int64s, as JAX's rule leaves them); the output's
    batch axis is where the operand's lands among the kept axes. An
    ``out_sharding`` (written for the per-example result) gains that batch
    axis, sharded over the vmap's explicit mesh axes."""

    def __call__(self, axis: AxisData, args: list[Any], dims: list[Any], *,
                 axes: tuple[int, ...], **params: Any) -> tuple[list[Any], list[Any]]:
        (x,), (d,) = args, dims
        new_axes = tuple(np.int64(a + 1) if a >= d else np.int64(a) for a in axes)
        out_dim = sum(1 for i in range(d) if i not in new_axes)
        if params.get("out_sharding") is not None:
            params = dict(params, out_sharding=sharding_for_vmap(
                axis, params["out_sharding"], out_dim))
        return [self.prim.bind(x, axes=new_axes, **params)], [out_dim]


class _CumulativeBatch(_PrimitiveRule):
    """cumsum and friends scan one axis; it moves past the batch axis."""

    # The vmap axis arrives positionally: ``axis`` is the primitive's param.
    def __call__(self, axis_data: AxisData, args: list[Any], dims: list[Any], *,
                 axis: int, reverse: bool) -> tuple[list[Any], list[Any]]:
        (x,), (d,) = args, dims
        scan = axis + 1 if axis >= d else axis
        return [self.prim.bind(x, axis=scan, reverse=reverse)], [d]


def _sort_batch(axis: AxisData, args: list[Any], dims: list[Any], *, dimension: int,
                is_stable: bool, num_keys: int) -> tuple[list[Any], list[Any]]:
    """Every operand gets the batch axis of the first batched one (moved
    there, or broadcast in for unbatched operands); the sorted axis is
    renumbered past it."""
    proto, bdim = next((x, d) for x, d in zip(args, dims) if d is not None)
    shape = _aval(proto).shape
    moved = []
    # Unbatched operands broadcast to the first batched one's type, sharding included.
    proto_sharding = _aval(proto).sharding
    for x, d in zip(args, dims):
        if d is None:
            kept = tuple(i for i in range(len(shape)) if i != bdim)
            moved.append(broadcast_in_dim(x, shape, kept, out_sharding=proto_sharding))
        else:
            moved.append(moveaxis(x, d, bdim))
    new_dim = dimension + 1 if bdim <= dimension else dimension
    outs = sort_p.bind(*moved, dimension=new_dim, is_stable=is_stable, num_keys=num_keys)
    return list(outs), [bdim] * len(moved)


def _top_k_batch(axis_data: AxisData, args: list[Any], dims: list[Any], *, k: int, axis: int,
                 is_stable: bool) -> tuple[list[Any], list[Any]]:
    (x,), (d,) = args, dims
    along = axis + 1 if d <= axis else axis
    outs = top_k_p.bind(x, k=k, axis=along, is_stable=is_stable)
    return list(outs), [d, d]


# ------------------------------------------------------------ sharding
#
# Type-level rules (SPEC.md section 14): a reduction drops the reduced
# dimensions' spec entries (the implied all-reduce leaves the result
# replicated over their mesh axes) unless ``out_sharding`` names the result
# sharding; scans, sorts and top_k keep the operand's sharding and refuse a
# sharded scan/sort axis, which would need the whole axis on every device.


_KINDS = {"reduce_sum": UnreducedKind.sum, "reduce_max": UnreducedKind.max,
          "reduce_min": UnreducedKind.min}


def _dropped(x: ArrayType, axes: tuple[int, ...]) -> NamedSharding:
    s = x.sharding
    assert s is not None  # the section is called only with a sharded operand
    gone = {int(a) for a in axes}
    return NamedSharding(s.mesh, P(*(p for i, p in enumerate(parts_of(x)) if i not in gone)))


def _reduce_ur(name: str, x: ArrayType, axes: tuple[int, ...], out: Any
               ) -> tuple[frozenset[Any], frozenset[Any], UnreducedKind | None]:
    """reduce_sum/max/min are linear in the sense of their own monoid: the
    result is unreduced over the operand's unreduced axes (of the same kind)
    or over the axes ``out_sharding`` asks for, which must split reduced
    dimensions (or already be unreduced); reduced axes pass through. The
    other reductions have no such rule."""
    kind = _KINDS.get(name)
    if kind is None:
        refuse_unreduced(name, [x])
        if out is not None:
            refuse_unreduced_out(name, out)
        return frozenset(), frozenset(), None
    spec = x.sharding.spec if x.sharding is not None else P()
    if out is not None and out.spec.unreduced:
        if out.spec.unreduced_kind is not kind:
            raise ShardingTypeError(f"{name} requires `out_sharding`'s unreduced_kind to be "
                                    f"{kind} but got {out.spec}")
        used = {a for i, p in enumerate(parts_of(x)) if i in axes
                for a in (p if isinstance(p, tuple) else (p,)) if a is not None}
        used |= set(spec.unreduced)
        if not out.spec.unreduced <= used:
            raise ShardingTypeError(
                f"out_sharding's unreduced axes should be in operand's specs that were "
                f"{name} over. Got operand={x!r}, axes={frozenset(axes)}, "
                f"unreduced_spec={out.spec.unreduced}")
        unreduced = frozenset(out.spec.unreduced)
    else:
        unreduced = frozenset(spec.unreduced)
        if unreduced and spec.unreduced_kind is not kind:
            raise ValueError(f"Expected unreduced_kind={kind} but got {spec.unreduced_kind}")
    if out is not None and out.spec.reduced:
        raise ValueError(f"out_sharding passed to {name} cannot be reduced. Got "
                         f"out_sharding={out}")
    return unreduced, frozenset(spec.reduced), kind if unreduced else None


def _reduce_sharding(name: str) -> Any:
    def rule(x: ArrayType, *, axes: tuple[int, ...], **params: Any) -> list[Any]:
        out = params.get("out_sharding")
        u, r, kind = _reduce_ur(name, x, axes, out)
        if out is not None:
            _forbid_collectives(x, axes, out)
        base = _dropped(x, axes) if out is None else fit_out(out, _reduced_shape(x, axes))
        return [NamedSharding(base.mesh, base.spec.update(unreduced=u, reduced=r,
                                                          unreduced_kind=kind))]
    return SK.auto_placed(rule, SK.reduced_placement)


def _forbid_collectives(x: ArrayType, axes: tuple[int, ...], out: NamedSharding) -> None:
    """Under ``no_collectives`` (JAX's checks of a requested result): a
    reduction over a forbidden axis leaves the result unreduced over it, and
    the kept dimensions keep their forbidden axes."""
    ps = parts_of(x)
    forbid_unmarked_reduction(
        [ps[i] for i in axes], out.spec.unreduced,
        "reduction over axis '{r}' does not mark it unreduced in the output.")
    forbid_moved_axes("reduce", [p for i, p in enumerate(ps) if i not in axes],
                      out.spec.partitions)


def _cum_sharding(name: str) -> Any:
    def rule(x: ArrayType, *, axis: int, reverse: bool) -> list[Any]:
        return _cum_rule(name, x, axis)
    # (over Auto axes JAX's propagation keeps the operand's split, even along ``axis``)
    return SK.auto_placed(rule, SK.as_split_operands)


def _cum_rule(name: str, x: ArrayType, axis: int) -> list[Any]:
    refuse_unreduced(name, [x])
    if parts_of(x)[axis] is not None:
        raise ShardingTypeError(f"Input should be unsharded over the axis being reduced. Got "
                                f"input type={x} and axis={axis}")
    return [x.sharding]


def _sort_sharding(*xs: ArrayType, dimension: int, is_stable: bool, num_keys: int
                   ) -> list[Any]:
    refuse_unreduced("sort", xs)
    sharded = [x.sharding for x in xs if x.sharding is not None and not x.sharding.mesh.empty]
    for x in xs:
        s = x.sharding
        if s is None or s.mesh.empty:
            continue
        if parts_of(x)[dimension] is not None:
            raise ShardingTypeError(f"Arguments to sort must be unsharded over the sorting "
                                    f"dimension. Got arg sharding={s} and sorting "
                                    f"dimension={dimension}")
        if s != sharded[0]:
            shown = " ".join(str(t) for t in sharded)
            raise ShardingTypeError(f"Arguments to sort must have equal shardings, got: "
                                    f"{shown}")
    # Operands without a mesh (NumPy arrays) take the sharded operands' sharding.
    return [sharded[0]] * len(xs)


def _top_k_sharding(x: ArrayType, *, k: int, axis: int, is_stable: bool) -> list[Any]:
    refuse_unreduced("top_k", [x])
    if parts_of(x)[axis] is not None:
        raise ShardingTypeError(f"The input should be unsharded over the axis along which to "
                                f"compute the top_k values. Got input type={x} and axis={axis}")
    return [x.sharding, x.sharding]


def _same_sharding(name: str) -> Any:
    def rule(x: ArrayType, **params: Any) -> list[Any]:
        return [x.sharding]  # linear in the sense JAX gives it: unreduced/reduced pass
    return rule


# ------------------------------------------------------------ arithmetic

def _reduce_sum_impl(x: np.ndarray, *, axes: tuple[int, ...], out_sharding: Any = None
                     ) -> list[np.ndarray]:
    # Integer sums wrap modulo 2**bits, as XLA's do: NumPy sums in the dtype itself.
    return [_reduced_by(np.add, x, axes)]


def _reduce_prod_impl(x: np.ndarray, *, axes: tuple[int, ...]) -> list[np.ndarray]:
    return [_reduced_by(np.multiply, x, axes)]


def _reduced_by(ufunc: np.ufunc, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``ufunc.reduce`` over ``axes`` in the compute dtype (the arithmetic
    environment quiet and flushing), rounded once to ``x``'s dtype."""
    lx = _lift(x)
    total = np.asarray(arithmetic(ufunc.reduce, lx, axes, lx.dtype))
    if lx is x:
        return total
    with np.errstate(all="ignore"):  # narrowing may overflow to inf: a value here
        return total.astype(x.dtype)


def _chooser_impl(fn: Callable[..., Any], identity: Callable[[T.DType], Any]) -> Impl:
    def impl(x: np.ndarray, *, axes: tuple[int, ...], out_sharding: Any = None
             ) -> list[np.ndarray]:
        init = identity(x.dtype)
        # XLA folds the init value in: an empty reduction is the identity, and
        # a NaN identity (float8_e8m0fnu has no infinity but NaN) makes every
        # result NaN.
        if _empty_reduction(x, axes) or (T.is_float(x.dtype) and np.isnan(init)):
            return [_identity_fill(x, axes, init)]
        lx = _lift(x)
        # (NaN propagates, as in XLA's max/min; the arithmetic environment is quiet)
        chosen = np.asarray(arithmetic(fn, lx, axes))
        return [chosen if lx is x else chosen.astype(x.dtype)]
    return impl


def _logical_impl(ufunc: np.ufunc, bool_fn: Callable[..., Any]) -> Impl:
    def impl(x: np.ndarray, *, axes: tuple[int, ...]) -> list[np.ndarray]:
        if x.dtype == T.bool_:
            return [np.asarray(bool_fn(x, axis=axes))]
        # Integers: bitwise reduction; the identity covers empty axes.
        init = x.dtype.type(-1 if ufunc is np.bitwise_and else 0) if T.is_signed_int(x.dtype) \
            else (~x.dtype.type(0) if ufunc is np.bitwise_and else x.dtype.type(0))
        return [np.asarray(ufunc.reduce(x, axis=axes, initial=init)).astype(x.dtype)]
    return impl


def _xor_bool(x: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    return np.asarray(np.logical_xor.reduce(x, axis=axis, initial=False))


_NUMBER = "number types (not bool)"


reduce_sum_p = declare("reduce_sum", batch=_ReducerBatch(), lowering=LR.reduce_sum,
                   sharding=_reduce_sharding("reduce_sum"),
                       typing=_reduce_type("reduce_sum", _is_number, _NUMBER, True),
                       impl=_reduce_sum_impl, jvp=linear_jvp(),
                       transpose=linear_transpose(_reduce_sum_transpose),
                       per_device=from_primitive(lambda p: PD.Reduction(p, "sum")))
reduce_prod_p = declare("reduce_prod", batch=_ReducerBatch(), lowering=LR.reduce_prod,
                   sharding=_reduce_sharding("reduce_prod"),
                        typing=_reduce_type("reduce_prod", _is_number, _NUMBER, True),
                        impl=_reduce_prod_impl, jvp=_reduce_prod_jvp,
                        transpose=not_applicable("reduce_prod is not linear"),
                        per_device=from_primitive(lambda p: PD.Reduction(p, "prod")))
reduce_max_p = declare("reduce_max", batch=_ReducerBatch(), lowering=LR.reduce_max,
                   sharding=_reduce_sharding("reduce_max"),
                       typing=_reduce_type("reduce_max", lambda d: True, "any", True),
                       impl=_chooser_impl(np.max, _min_value), jvp=defjvp2(_chooser_jvp),
                       transpose=not_applicable("reduce_max is not linear"),
                       per_device=from_primitive(lambda p: PD.Reduction(p, "max")))
reduce_min_p = declare("reduce_min", batch=_ReducerBatch(), lowering=LR.reduce_min,
                   sharding=_reduce_sharding("reduce_min"),
                       typing=_reduce_type("reduce_min", lambda d: True, "any", True),
                       impl=_chooser_impl(np.min, _max_value), jvp=defjvp2(_chooser_jvp),
                       transpose=not_applicable("reduce_min is not linear"),
                       per_device=from_primitive(lambda p: PD.Reduction(p, "min")))

_INT_OR_BOOL = "bool or integer types"


def _int_or_bool(dt: T.DType) -> bool:
    return dt == T.bool_ or T.is_int(dt)


reduce_and_p = declare("reduce_and", batch=_ReducerBatch(), lowering=LR.reduce_and,
                   sharding=_reduce_sharding("reduce_and"),
                       typing=_reduce_type("reduce_and", _int_or_bool, _INT_OR_BOOL, False),
                       impl=_logical_impl(np.bitwise_and, np.all), jvp=zero_jvp(),
                       transpose=not_applicable("reduce_and has integer or bool results"),
                       per_device=from_primitive(lambda p: PD.Reduction(p, "and")))
reduce_or_p = declare("reduce_or", batch=_ReducerBatch(), lowering=LR.reduce_or,
                   sharding=_reduce_sharding("reduce_or"),
                      typing=_reduce_type("reduce_or", _int_or_bool, _INT_OR_BOOL, False),
                      impl=_logical_impl(np.bitwise_or, np.any), jvp=zero_jvp(),
                      transpose=not_applicable("reduce_or has integer or bool results"),
                      per_device=from_primitive(lambda p: PD.Reduction(p, "or")))
reduce_xor_p = declare("reduce_xor", lowering=ST.reduce_xor, batch=_ReducerBatch(),
                   sharding=_reduce_sharding("reduce_xor"),
                       typing=_reduce_type("reduce_xor", _int_or_bool, _INT_OR_BOOL, False),
                       impl=_logical_impl(np.bitwise_xor, _xor_bool), jvp=zero_jvp(),
                       transpose=not_applicable("reduce_xor has integer or bool results"),
                       per_device=from_primitive(lambda p: PD.Reduction(p, "xor")))


# --------------------------------------------------------- argmax / argmin

def _argminmax_type(name: str) -> Any:
    def typing(x: ArrayType, *, axes: tuple[int, ...], index_dtype: T.DType
               ) -> list[ArrayType]:
        require(len(axes) == 1 and 0 <= axes[0] < x.ndim, name, "C1",
                f"axes must be one axis of the operand, got {axes} for operand of type {x}",
                ValueError)
        (axis,) = axes
        require(x.shape[axis] >= 1, name, "C2", f"the reduced axis {axis} of operand {x} is "
                "empty; argmin and argmax require a non-empty reduced dimension", ValueError)
        require(T.is_int(np.dtype(index_dtype)), name, "C3",
                f"index_dtype must be an integer type, got {np.dtype(index_dtype).name}")
        return [ArrayType(_reduced_shape(x, axes), np.dtype(index_dtype), False)]
    return typing


def _argminmax_impl(fn: Callable[..., Any], identity: Callable[[T.DType], Any]) -> Impl:
    def impl(x: np.ndarray, *, axes: tuple[int, ...], index_dtype: T.DType
             ) -> list[np.ndarray]:
        # NumPy's argmax/argmin already pick the first NaN, else the first
        # extremal element: JAX's comparator gives the same answer. JAX's
        # reduction starts from (identity, index 0); where that identity is
        # NaN (float8_e8m0fnu) it wins every comparison and the index is 0.
        if T.is_float(x.dtype) and np.isnan(identity(x.dtype)):
            return [np.zeros(np.delete(x.shape, axes), index_dtype)]
        if T.is_float(x.dtype) and x.dtype.itemsize < 4:
            x = x.astype(T.float32)  # exact; ml_dtypes floats lack fast arg-reductions
        x = flush_result(x)  # a float comparison: subnormals compare as zero
        return [np.asarray(fn(x, axis=axes[0])).astype(index_dtype)]
    return impl


argmax_p = declare("argmax", lowering=ST.argmax, batch=_ReducerBatch(),
                   sharding=_reduce_sharding("argmax"),
                   typing=_argminmax_type("argmax"), impl=_argminmax_impl(np.argmax, LR.lowest),
                   jvp=zero_jvp(), transpose=not_applicable("argmax has integer results"),
                   per_device=from_primitive(lambda p: PD.Reduction(p, "none")))
argmin_p = declare("argmin", lowering=ST.argmin, batch=_ReducerBatch(),
                   sharding=_reduce_sharding("argmin"),
                   typing=_argminmax_type("argmin"), impl=_argminmax_impl(np.argmin, LR.highest),
                   jvp=zero_jvp(), transpose=not_applicable("argmin has integer results"),
                   per_device=from_primitive(lambda p: PD.Reduction(p, "none")))


# ----------------------------------------------------- cumulative reductions

def _cum_type(name: str) -> Any:
    def typing(x: ArrayType, *, axis: int, reverse: bool) -> list[ArrayType]:
        require(axis >= 0, name, "C1", f"axis {axis} is negative; the primitive takes a "
                "non-negative axis (lax.cumsum and friends do not wrap negative axes)",
                ValueError)
        require(axis < x.ndim, name, "C1", f"axis {axis} is out of bounds for operand of type "
                f"{x}", ValueError)
        require(_is_number(x.dtype), name, "C2", f"operand dtype {x.dtype.name} is not "
                f"accepted; accepted dtypes are {_NUMBER}")
        return [x]
    return typing


# XLA's CPU backend computes a cumulative reduction (a reduce_window whose
# window spans the whole axis) as a blocked scan with blocks of 16 elements:
# a scan inside each block, then a scan of the block totals (recursively),
# whose running values are combined into the following blocks. Each window
# is folded left to right starting from the monoid identity. For floats this
# fixes the rounding, so the same blocking is the specification here; each
# step rounds to the operand dtype (bfloat16 and float16 included).
_SCAN_BLOCK = 16

Combine2 = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _window_scan(blocks: np.ndarray, op: Combine2, init: Any, reverse: bool) -> np.ndarray:
    """Scan each row of ``blocks`` (last axis): forward windows are x[0..i],
    reverse windows x[i..], each folded left to right from ``init``."""
    acc = np.array(op(np.asarray(init, blocks.dtype), blocks))
    for k in range(1, blocks.shape[-1]):  # over the 16 columns of a block
        if reverse:
            acc[..., :k] = op(acc[..., :k], blocks[..., k:k + 1])
        else:
            acc[..., k] = op(acc[..., k - 1], blocks[..., k])
    return acc


def _blocked_scan(x: np.ndarray, op: Combine2, init: Any, reverse: bool) -> np.ndarray:
    """The scan of ``x`` along its last axis, blocked as XLA CPU does."""
    n = x.shape[-1]
    if n == 0:
        return x.copy()
    m = -(-n // _SCAN_BLOCK)
    pad = np.full((*x.shape[:-1], m * _SCAN_BLOCK - n), init, x.dtype)
    blocks = np.concatenate([x, pad], axis=-1).reshape(*x.shape[:-1], m, _SCAN_BLOCK)
    out = _window_scan(blocks, op, init, reverse)
    if m > 1:
        if reverse:
            carry = _blocked_scan(out[..., 0], op, init, reverse)
            out[..., :-1, :] = op(out[..., :-1, :], carry[..., 1:, None])
        else:
            carry = _blocked_scan(out[..., -1], op, init, reverse)
            out[..., 1:, :] = op(carry[..., :-1, None], out[..., 1:, :])
    return out.reshape(*x.shape[:-1], m * _SCAN_BLOCK)[..., :n]


def _cum_impl(op: Combine2, identity: Callable[[T.DType], Any]) -> Impl:
    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> list[np.ndarray]:
        moved = np.moveaxis(x, axis, -1)
        with np.errstate(all="ignore"):
            scanned = arithmetic(_blocked_scan, moved, op, identity(x.dtype), reverse)
            out = flush_result(np.asarray(scanned))
        result = np.array(np.moveaxis(out, -1, axis), order="C", copy=None)
        return [result.astype(x.dtype, copy=False)]
    return impl


def _run(prim: Primitive, *xs: np.ndarray) -> np.ndarray:
    return np.asarray(prim.impl(*xs)[0])


def _logaddexp_steps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """logaddexp as JAX's cumlogsumexp reducer computes it, every operation
    rounded to the operand dtype (visible in the narrow floats):
    max(a, b) + log1p(exp(-|a - b|)), or a + b where a - b is NaN."""
    delta = _run(E.sub_p, a, b)
    tail = _run(E.log1p_p, _run(E.exp_p, _run(E.neg_p, _run(E.abs_p, delta))))
    return np.where(np.isnan(delta), _run(E.add_p, a, b), _run(E.add_p, _run(E.max_p, a, b), tail))


# The identities of max and min are the lowering's (JAX's): +-inf, or the
# largest finite magnitude for the float8 types without infinities, whose
# +-inf would round to NaN (float8_e4m3fn) and poison every window. On
# float8_e8m0fnu JAX keeps +-inf, which is NaN there: every window is NaN.
_lowest = LR.lowest
_highest = LR.highest


cumsum_p = declare("cumsum", batch=_CumulativeBatch(), lowering=ST.cumsum,
                   sharding=_cum_sharding("cumsum"),
                   typing=_cum_type("cumsum"),
                   impl=_cum_impl(np.add, lambda dt: 0), jvp=linear_jvp(),
                   transpose=linear_transpose(_cumsum_transpose),
                   per_device=from_primitive(PD.local))
cumprod_p = declare("cumprod", batch=_CumulativeBatch(), lowering=ST.cumprod,
                   sharding=_cum_sharding("cumprod"),
                    typing=_cum_type("cumprod"),
                    impl=_cum_impl(np.multiply, lambda dt: 1),
                    jvp=_cumulative_jvp(lambda: _mul_pair),
                    transpose=not_applicable("cumprod is not linear"),
                    per_device=from_primitive(PD.local))
cummax_p = declare("cummax", batch=_CumulativeBatch(), lowering=ST.cummax,
                   sharding=_cum_sharding("cummax"),
                   typing=_cum_type("cummax"), impl=_cum_impl(E.xla_max, _lowest),
                   jvp=_cumulative_jvp(lambda: _chooser_pair(True)),
                   transpose=not_applicable("cummax is not linear"),
                   per_device=from_primitive(PD.local))
cummin_p = declare("cummin", batch=_CumulativeBatch(), lowering=ST.cummin,
                   sharding=_cum_sharding("cummin"),
                   typing=_cum_type("cummin"), impl=_cum_impl(E.xla_min, _highest),
                   jvp=_cumulative_jvp(lambda: _chooser_pair(False)),
                   transpose=not_applicable("cummin is not linear"),
                   per_device=from_primitive(PD.local))
cumlogsumexp_p = declare("cumlogsumexp", batch=_CumulativeBatch(), lowering=ST.cumlogsumexp,
                   sharding=_cum_sharding("cumlogsumexp"),
                         typing=_cum_type("cumlogsumexp"),
                         impl=_cum_impl(_logaddexp_steps, lambda dt: -np.inf),
                         jvp=_cumulative_jvp(lambda: _logaddexp_pair),
                         transpose=not_applicable("cumlogsumexp is not linear"),
                         per_device=from_primitive(PD.local))


# --------------------------------------------------------------------- sort

def _sort_type(*xs: ArrayType, dimension: int, is_stable: bool, num_keys: int
               ) -> list[ArrayType]:
    name = "sort"
    require(len(xs) >= 1, name, "C1", "sort requires at least one operand")
    shapes = [x.shape for x in xs]
    require(all(s == shapes[0] for s in shapes), name, "C2",
            f"operands must have equal shapes, got {' '.join(str(s) for s in shapes)}")
    require(0 <= dimension < len(shapes[0]), name, "C3",
            f"dimension {dimension} is out of bounds for operands of shape {shapes[0]}",
            ValueError)
    require(1 <= num_keys <= len(xs), name, "C4",
            f"num_keys={num_keys} must be between 1 and the number of operands {len(xs)}",
            ValueError)
    return list(xs)


def _float_sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """Keys giving JAX's total order on floats: -0.0 == 0.0, every NaN last
    (and all NaNs equal). Listed most significant first."""
    if T.is_float(x.dtype) and x.dtype.itemsize < 4:
        x = x.astype(T.float32)  # exact widening; preserves the order
    x = flush_result(x)  # compared as floats: subnormals equal zero (values move unchanged)
    nan = np.isnan(x)
    value = np.where(nan, 0, x) + x.dtype.type(0)  # + 0.0 turns -0.0 into 0.0
    return [nan, value]


def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    if T.is_complex(x.dtype):
        return _float_sort_keys(x.real) + _float_sort_keys(x.imag)
    if T.is_float(x.dtype):
        return _float_sort_keys(x)
    return [x]


def _sort_impl(*xs: np.ndarray, dimension: int, is_stable: bool, num_keys: int
               ) -> list[np.ndarray]:
    keys: list[np.ndarray] = []
    for k, x in enumerate(xs[:num_keys]):
        if not _orderable(x.dtype):
            # JAX stages a sort of typed keys and fails when its comparator
            # is built (at run time): the same class and message here.
            raise TypeError(f"lt_to does not accept dtype {_key_name(x.dtype)} at position {k}. "
                            f"Accepted dtypes at position {k} are subtypes of integer, bool, "
                            "floating.")
        keys.extend(_sort_keys(x))
    # np.lexsort is stable and takes its most significant key last.
    perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in xs]


def _key_name(physical: Any) -> str:
    """The key dtype whose values are records of dtype ``physical``."""
    for impl in PRNGS.values():
        if KeyTy(impl).physical == physical:
            return KeyTy(impl).name
    return str(physical)


def _orderable(dt: Any) -> bool:
    """Whether sort can compare values of dtype ``dt`` (typed PRNG keys,
    which are structured records here, cannot)."""
    return bool(dt.fields is None)


sort_p = declare("sort", lowering=ST.sort, batch=_sort_batch,
                   sharding=SK.auto_placed(_sort_sharding, SK.sorted_placement),
                 typing=_sort_type, impl=_sort_impl, multiple_results=True,
                 jvp=_sort_jvp, transpose=not_applicable("sort is not linear"),
                 per_device=from_primitive(PD.aligned))


# -------------------------------------------------------------------- top_k

_INT32_MAX = int(np.iinfo(np.int32).max)


def _top_k_type(x: ArrayType, *, k: int, axis: int, is_stable: bool) -> list[ArrayType]:
    name = "top_k"
    # The order of the checks decides which error wins; it is JAX's.
    require(not T.is_complex(x.dtype), name, "C1",
            f"operand dtype {x.dtype.name} is complex; top_k is not compatible with complex "
            "inputs", ValueError)
    require(k >= 0, name, "C2", f"k argument to top_k must be nonnegative, got k={k}",
            ValueError)
    require(x.ndim >= 1, name, "C3", f"top_k operand must have >= 1 dimension, got operand "
            f"of type {x}")
    require(0 <= axis < x.ndim, name, "C4", f"axis argument out of range: axis={axis} for "
            f"operand of type {x}", ValueError)
    require(x.shape[axis] >= k, name, "C5", f"k argument to top_k must be no larger than "
            f"size along axis; got k={k} with operand of type {x} and axis={axis}", ValueError)
    require(x.shape[axis] <= _INT32_MAX + 1, name, "C6", f"top_k returns int32 indices, which "
            f"overflow for axis {axis} of size {x.shape[axis]} > 2**31", ValueError)
    shape = list(x.shape)
    shape[axis] = k
    return [ArrayType(tuple(shape), x.dtype, x.weak_type),
            # The indices inherit the operand's weak type (JAX updates only the dtype).
            ArrayType(tuple(shape), T.int32, x.weak_type)]


def _top_k_impl(x: np.ndarray, *, k: int, axis: int, is_stable: bool) -> list[np.ndarray]:
    # ~key reverses the order without overflow; a stable ascending argsort of
    # it is a stable descending sort of x (ties keep their input order).
    order = np.argsort(~total_order_key(x), axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis=axis)
    return [np.array(values, order="C", copy=None),
            np.array(idx, order="C", copy=None).astype(T.int32)]


top_k_p = declare("top_k", lowering=ST.top_k, batch=_top_k_batch,
                   sharding=SK.auto_placed(_top_k_sharding, SK.as_split_operands),
                  typing=_top_k_type, impl=_top_k_impl, multiple_results=True,
                  jvp=_top_k_jvp, transpose=not_applicable("top_k is not linear"),
                  per_device=from_primitive(PD.local))


# --------------------------------------------------------- reduce_precision
# An elementwise primitive, declared in this module because spec/_src/lax/
# elementwise.py was being edited by another helper when it was added.

def _reduce_precision_type(x: ArrayType, *, exponent_bits: int, mantissa_bits: int
                           ) -> list[ArrayType]:
    name = "reduce_precision"
    require(T.is_float(x.dtype), name, "C1", f"reduce_precision does not accept dtype "
            f"{x.dtype.name}. Accepted dtypes are subtypes of floating.")
    require(exponent_bits >= 1, name, "C2", f"exponent_bits must be positive; got "
            f"{exponent_bits}", ValueError)
    require(mantissa_bits >= 0, name, "C3", f"mantissa_bits must be non-negative; got "
            f"{mantissa_bits}", ValueError)
    return [x]


def _float_layout(dt: T.DType) -> tuple[int, int]:
    """(exponent bits, explicit mantissa bits) of a float dtype."""
    import ml_dtypes  # its finfo also knows bfloat16 and the float8 types
    info = ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]
    return int(info.nexp), int(info.nmant)


def _reduce_precision_impl(x: np.ndarray, *, exponent_bits: int, mantissa_bits: int
                           ) -> list[np.ndarray]:
    """XLA's bit-level algorithm, on the unsigned-integer view of ``x``:
    round the mantissa to ``mantissa_bits`` (nearest, ties to even; a carry
    may bump the exponent), then saturate exponents the reduced format cannot
    hold: too large -> signed inf, too small (its subnormals too) -> signed
    zero. NaNs are returned unchanged."""
    nbits = 8 * x.dtype.itemsize
    udt = np.dtype(f"uint{nbits}")
    e_src, m_src = _float_layout(x.dtype)
    u = x.view(udt)
    one = udt.type(1)
    if mantissa_bits < m_src:
        shift = udt.type(m_src - mantissa_bits)
        last_bit = one << shift
        base_bias = (last_bit >> one) - one
        bias = ((u & last_bit) >> shift) + base_bias
        with np.errstate(over="ignore"):
            u = (u + bias) & ~(last_bit - one)
    if exponent_bits < e_src:
        sign = u & (one << udt.type(nbits - 1))
        exp_mask = udt.type(((1 << e_src) - 1) << m_src)
        bias_src = (1 << (e_src - 1)) - 1
        bias_dst = (1 << (exponent_bits - 1)) - 1
        exponent = u & exp_mask
        overflow = exponent > udt.type((bias_src + bias_dst) << m_src)
        underflow = exponent <= udt.type((bias_src - bias_dst) << m_src)
        u = np.where(overflow, sign | exp_mask, np.where(underflow, sign, u))
    out = np.asarray(u, dtype=udt).view(x.dtype)
    nan = x
    if x.dtype == T.bfloat16:
        # XLA CPU computes bfloat16 in float32 and converts back, which makes
        # every NaN the canonical quiet NaN (its sign kept).
        quiet = (x.view(udt) & udt.type(0x8000)) | udt.type(0x7FC0)
        nan = quiet.view(x.dtype)
    return [np.where(np.isnan(x), nan, out).astype(x.dtype)]


reduce_precision_p = declare("reduce_precision", lowering=ST.reduce_precision, batch=vectorized(),
                             sharding=_same_sharding("reduce_precision"),
                             typing=_reduce_precision_type,
                             impl=_reduce_precision_impl, jvp=linear_jvp(),
                             transpose=linear_transpose(_reduce_precision_transpose),
                             per_device=from_primitive(PD.aligned))


# ------------------------------------------------------------ lax wrappers

def _axes(axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(static_int(a, "axes entry") for a in axes)


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_sum_p.bind(operand, axes=_axes(axes),
                      out_sharding=canonicalize_out_sharding(out_sharding, "reduce_sum"))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_prod_p.bind(operand, axes=_axes(axes))


def reduce_max(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_max_p.bind(operand, axes=_axes(axes),
                      out_sharding=canonicalize_out_sharding(out_sharding, "reduce_max"))


def reduce_min(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_min_p.bind(operand, axes=_axes(axes),
                      out_sharding=canonicalize_out_sharding(out_sharding, "reduce_min"))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_and_p.bind(operand, axes=_axes(axes))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_or_p.bind(operand, axes=_axes(axes))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_xor_p.bind(operand, axes=_axes(axes))


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the largest element along ``axis`` (first NaN, else first maximum)."""
    return argmax_p.bind(operand, axes=(static_int(axis, 'axis'),),
                         index_dtype=T.to_dtype(index_dtype, "argmax"))


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    return argmin_p.bind(operand, axes=(static_int(axis, 'axis'),),
                         index_dtype=T.to_dtype(index_dtype, "argmin"))


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    # lax's cumulative reductions read the axis with int(), as JAX's do: 1.0 is
    # axis 1 here, while jnp.cumsum (operator.index) rejects it.
    return cumsum_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cumprod_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cummax_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cummin_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    return cumlogsumexp_p.bind(operand, axis=int(axis), reverse=bool(reverse))


def canonicalize_axis(axis: int, ndim: int) -> int:
    """A possibly negative axis as an index in [0, ndim)."""
    return canonical_axis(axis, ndim)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort along ``dimension``: floats in the total order -inf < ... < inf < NaN
    with -0.0 == 0.0; a sequence of operands is sorted by its first ``num_keys``."""
    if isinstance(operand, (list, tuple)):
        if not operand:
            raise TypeError("Sort requires at least one operand")
        if not 1 <= num_keys <= len(operand):
            raise ValueError(f"num_keys={num_keys} must be between 1 and "
                             f"len(operand)={len(operand)}")
        dim = canonicalize_axis(dimension, canonical_aval_of(operand[0]).ndim)
        return tuple(sort_p.bind(*operand, dimension=dim, is_stable=bool(is_stable),
                                 num_keys=int(num_keys)))
    if num_keys != 1:
        raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
    dim = canonicalize_axis(dimension, canonical_aval_of(operand).ndim)
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Any, Any]:
    dim = canonicalize_axis(dimension, canonical_aval_of(keys).ndim)
    k, v = sort_p.bind(keys, values, dimension=dim, is_stable=bool(is_stable), num_keys=1)
    return k, v


def top_k(operand: Any, k: int, *, axis: int = -1, is_stable: bool = True
          ) -> list[Any]:
    """The ``k`` largest entries along ``axis`` (XLA's total order: NaN above
    inf, 0.0 above -0.0), largest first, and their int32 indices; ties keep
    their input order."""
    k = operator.index(k)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    dim = canonicalize_axis(axis, canonical_aval_of(operand).ndim)
    values, indices = top_k_p.bind(operand, k=k, axis=dim, is_stable=bool(is_stable))
    return [values, indices]  # a list, as JAX returns


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round ``operand`` to a float format with the given exponent and mantissa
    widths, keeping its dtype."""
    for name, v in (("exponent_bits", exponent_bits), ("mantissa_bits", mantissa_bits)):
        if isinstance(v, Tracer):
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: the "
                f"{name} argument of lax.reduce_precision must be static")
    return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                   mantissa_bits=operator.index(mantissa_bits))


# ------------------------------------------------------ user computations

def computation_jaxpr(computation: Callable[..., Any], init_avals: list[ArrayType],
                      init_tree: Any) -> tuple[Jaxpr, Any]:
    """The computation traced on (accumulators, elements), each a tree of
    scalars shaped as the initial values; returns the jaxpr and its output tree."""
    out_tree: list[Any] = []

    def flat_computation(*flat: Any) -> list[Any]:
        k = len(flat) // 2
        xs = tree_util.tree_unflatten(init_tree, list(flat[:k]))
        ys = tree_util.tree_unflatten(init_tree, list(flat[k:]))
        leaves, tree = tree_util.tree_flatten(computation(xs, ys))
        out_tree.append(tree)
        return leaves

    scalars = [ArrayType((), a.dtype, a.weak_type) for a in init_avals]
    jaxpr, _ = trace_to_jaxpr(flat_computation, scalars + scalars)
    if any(isinstance(c, Tracer) for c in jaxpr.consts):
        raise NotImplementedError("Reduction computations can't close over Tracers. Please "
                                  "open an issue at https://github.com/jax-ml/jax.")
    return jaxpr, out_tree[0]


def require_scalar_computation(prim: str, constraint: str, ops: Sequence[ArrayType],
                               jaxpr: Jaxpr) -> None:
    """A reduction computation maps (accumulators, elements), one scalar of each operand's
    dtype each, to one scalar per operand."""
    n = len(ops)
    scalars = [ArrayType((), o.dtype) for o in ops]
    got_in = [ArrayType((), a.dtype) for a in jaxpr.in_avals]
    got_out = [ArrayType(a.shape, a.dtype) for a in jaxpr.out_avals]
    require(got_in == scalars + scalars and got_out == scalars, prim, constraint,
            f"the computation must map {2 * n} scalars of dtypes "
            f"{[s.dtype.name for s in scalars] * 2} to {n} of dtypes "
            f"{[s.dtype.name for s in scalars]}; its jaxpr has inputs {jaxpr.in_avals} and "
            f"outputs {jaxpr.out_avals}")


__all__ = [
    "argmax", "argmin", "computation_jaxpr", "cumlogsumexp", "cummax", "cummin", "cumprod",
    "cumsum", "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_precision",
    "reduce_prod", "reduce_sum", "reduce_xor", "sort", "sort_key_val", "top_k",
]
