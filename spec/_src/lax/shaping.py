"""Conversion and shaping primitives: dtype conversion, creation, broadcasting, reshaping.

None of these computes on element values except convert_element_type (a cast)
and bitcast_convert_type (a reinterpretation of bits); the rest place the
operand's elements in a new shape. Each typing rule's constraints are
numbered C1, C2, ... in the order they are checked; the numbers are cited in
error messages and in SPEC.md (section 9.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.core.canonical import canonical_axis, hashable_params, shape_like
from spec._src.lowering import rules as LR
from spec._src.lowering import structural as ST
from spec._src.interpreters.ad_util import (
    UndefinedPrimal,
    Zero,
    is_undefined_primal,
    linear_jvp,
    linear_transpose,
    zero_jvp,
)
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    moveaxis,
    sharding_for_vmap,
)
from spec._src.core.interpreter import (
    canonical_aval_of,
    Primitive,
    from_primitive,
    not_applicable,
    pp_eqn_default,
    pp_hiding,
)
from spec._src.core.errors import ShardingTypeError
from spec._src.lax import sharding_kit as SK
from spec._src.core.denormals import flush_result as flush
from spec._src.core.sharding import UnreducedKind, forbid_moved_axes
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.core.array import Array, host_value
from spec._src.core.interpreter import EvalTrace, JaxprTrace, current_trace



import math
import operator
import weakref
import warnings


from spec._src.core.interpreter import Tracer
from spec._src.core.registry import primitive
from spec._src.interpreters.ad import (
    computed_on_primal_side,
    in_linearize_rule,
    inside_inline_body,
)
from spec._src.interpreters.ad_util import zeros_hooks
from spec._src.lax.reshard import place, reshard
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding, fit_out
from spec._src.core.array import on_device, placed_on
from spec._src.core.sharding import (
    AbstractMesh,
    AxisType,
    NamedSharding,
    P,
    Sharding,
    get_abstract_mesh,
    get_concrete_mesh,
)

Shape = tuple[int, ...]


def _is_int_seq(obj: Any) -> bool:
    return isinstance(obj, (tuple, list, np.ndarray)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in obj)


def _check_shapelike(prim: str, c: str, arg: str, obj: Any) -> None:
    """Static shape-like params: a sequence of non-negative ints (TypeError)."""
    require(_is_int_seq(obj), prim, c, f"{arg} must be a tuple of integers, got {obj!r}")
    require(all(d >= 0 for d in obj), prim, c,
            f"{arg} must have every element be nonnegative, got {tuple(obj)}")


def _all_weak(*avals: ArrayType) -> bool:
    return all(a.weak_type for a in avals)


def _shape_of(x: Any) -> Shape:
    return x.aval.shape if is_undefined_primal(x) else canonical_aval_of(x).shape


def _cts_or_none(cts: Sequence[Any], operands: Sequence[Any]) -> list[Any]:
    """Per operand: its cotangent if it is being transposed, else None."""
    return [ct if is_undefined_primal(x) else None for ct, x in zip(cts, operands)]


def _zero_cts(operands: Sequence[Any]) -> list[Any]:
    return [Zero(x.aval.ct_type()) if is_undefined_primal(x) else None for x in operands]


# Batching rules: ``rule(axis, args, dims, **params) -> (outs, out_dims)``,
# called with at least one operand mapped (see spec/batching.py). They follow
# JAX 0.12's rules primitive for primitive, including where JAX computes
# axis numbers with NumPy (the params then hold np.int64 values, which the
# jaxpr prints as ``np.int64(1)``).

Batched = tuple[list[Any], list[BatchDim]]


def _bd(dim: BatchDim) -> int:
    """A batch axis known to be present (the rule was called because the
    only operand, or this one, is mapped)."""
    assert dim is not None
    return dim


def _no_operands(name: str) -> Any:
    return not_applicable(f"{name} has no operands, so vmap never batches it")


# ================================================================ sharding
# The sharding sections of the structural primitives (SPEC.md section 14),
# following JAX's partition rules; the unreduced/reduced rules come from
# spec._src.lax.sharding_kit.

_Parts = tuple[Any, ...]
_NO_AXES: frozenset[Any] = frozenset()


def _spec_size(mesh: Any, entry: Any) -> int:
    names = entry if isinstance(entry, tuple) else (entry,)
    return int(np.prod([mesh.shape[n] for n in names], dtype=np.int64))


def _varying_out_shape(name: str, mesh: Any, x: ArrayType, out_shape: Shape) -> _Parts:
    """slice/pad/dynamic_slice: the operand's partitions, as long as every
    resized sharded dim still splits evenly; all-None for a shape of ones."""
    if not out_shape or all(o == 1 for o in out_shape):
        return (None,) * len(out_shape)
    ps = SK.parts(x)
    for op_sh, out_sh, entry in zip(x.shape, out_shape, ps):
        if op_sh != out_sh and entry is not None and out_sh % _spec_size(mesh, entry):
            raise ShardingTypeError(
                f"{name} on sharded dims where out dim ({out_sh}) is not divisible by mesh"
                f" axes ({_spec_size(mesh, entry)}) with spec ({entry}) is not implemented. Got"
                f" input type={x.str_short(True)} and output shape={tuple(out_shape)}")
    return ps


def _param_ur(x: ArrayType, sharding: Any, who: str) -> SK.UR:
    """Unreduced/reduced axes of an op with an optional output-sharding param:
    the param's where it names some, else the operand's (as sums)."""
    spec = None if sharding is None else SK.abstract(sharding).spec
    if spec is not None and spec.unreduced:
        if spec.unreduced_kind not in (None, UnreducedKind.sum):
            raise ValueError(f"`{who}` passed to `convert_element_type` can only contain"
                             f" unreduced of kind `sum`. Got sharding={sharding}")
        unreduced = frozenset(spec.unreduced)
    else:
        unreduced = SK.getu(x)
    reduced = frozenset(spec.reduced) if spec is not None and spec.reduced else SK.getr(x)
    return unreduced, reduced, UnreducedKind.sum if unreduced else None


def _convert_parts(mesh: Any, x: ArrayType, *, new_dtype: Any, weak_type: bool,
                   sharding: Any = None) -> list[_Parts]:
    if sharding is None:
        return [SK.parts(x)]
    return [SK.param_parts(SK.abstract(sharding), x.ndim)]


def _convert_ur(x: ArrayType, *, new_dtype: Any, weak_type: bool, sharding: Any = None
                ) -> SK.UR:
    return _param_ur(x, sharding, "sharding")


def _bid_parts(mesh: Any, x: ArrayType, *, shape: Shape, broadcast_dimensions: Shape,
               sharding: Any = None) -> list[_Parts]:
    src = dict(zip(broadcast_dimensions, SK.parts(x)))
    natural = tuple(src.get(i) for i in range(len(shape)))
    if sharding is not None:
        requested = SK.param_parts(SK.abstract(sharding), len(shape))
        forbid_moved_axes("broadcast_in_dim", natural, requested)
        return [requested]
    return [natural]


def _bid_ur(x: ArrayType, *, shape: Shape, broadcast_dimensions: Shape, sharding: Any = None
            ) -> SK.UR:
    if sharding is not None:
        spec = SK.abstract(sharding).spec
        if spec.unreduced and spec.unreduced_kind is not UnreducedKind.sum:
            raise ValueError("`out_sharding` passed to `broadcast_in_dim` can only contain"
                             f" unreduced of kind `sum`. Got out_sharding={sharding}")
        u = frozenset(spec.unreduced)
        return u, frozenset(spec.reduced), UnreducedKind.sum if u else None
    return SK.linear_unary(x)


def _transpose_parts(mesh: Any, x: ArrayType, *, permutation: Shape) -> list[_Parts]:
    ps = SK.parts(x)
    return [tuple(ps[i] for i in permutation)]


def _squeeze_parts(mesh: Any, x: ArrayType, *, dimensions: Shape) -> list[_Parts]:
    drop = set(dimensions)
    return [tuple(p for i, p in enumerate(SK.parts(x)) if i not in drop)]


# --- reshape: JAX's rule. A reshape that only adds or removes size-1 dims
# keeps the partitions; one that splits a single dim gives the split dims the
# dim's mesh axes, major first, as far as they divide; one that merges dims
# into a single dim needs the merged group's sharded dims to lead. Any other
# reshape of a sharded operand needs an explicit `out_sharding`.

class _Unsupported(Exception):
    pass


def _reshape_error(x: ArrayType, new_sizes: Shape) -> ShardingTypeError:
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the"
        f" `out_sharding` argument of jax.lax.reshape. Got operand type: {x}, new sizes:"
        f" {tuple(new_sizes) if not isinstance(new_sizes, tuple) else new_sizes}")


def _split_one_axis(op_shape: Sequence[int], new_sizes: Sequence[int]
                    ) -> tuple[bool, list[Any]]:
    """Whether ``new_sizes`` (ones dropped) splits exactly one dim of
    ``op_shape`` (ones dropped) into several; per operand dim its size, or
    the list of sizes it splits into."""
    op = [s for s in op_shape if s != 1]
    new = [s for s in new_sizes if s != 1]
    if len(new) <= len(op):
        return False, []
    i = j = count = 0
    out: list[Any] = []
    while j < len(new):
        if i >= len(op):
            raise _Unsupported()
        if op[i] == new[j]:
            out.append(op[i])
        else:
            count += 1
            if count > 1:
                raise _Unsupported()
            group = [new[j]]
            while int(np.prod(group)) != op[i]:
                if int(np.prod(group)) > op[i]:
                    return False, []
                j += 1
                if j >= len(new):
                    raise _Unsupported()
                group.append(new[j])
            out.append(group)
        i += 1
        j += 1
    if len(out) != len(op):
        raise _Unsupported()
    return True, out


def _split_partitions(mesh: Any, axes: tuple[Any, ...], sizes: Sequence[int]) -> list[Any]:
    it = iter(axes)
    result: list[Any] = []
    for o in sizes:
        taken: list[Any] = []
        while o > 1:
            name = next(it, None)
            if name is None:
                break
            o, rem = divmod(o, mesh.shape[name])
            if rem:
                raise _Unsupported()
            taken.append(name)
        result.append(tuple(taken))
    if next(it, None) is not None:
        raise _Unsupported()
    return result


def _place_ones(x: ArrayType, new_sizes: Shape, inner: list[Any], keep_ones: bool) -> _Parts:
    """Spread the partitions of the non-1 output dims over ``new_sizes``;
    size-1 output dims take the operand's entry at the same position when it
    is a size-1 dim too (``keep_ones``), else None."""
    ps = SK.parts(x)
    it = iter(inner)
    out: list[Any] = []
    for i, n in enumerate(new_sizes):
        if n == 1:
            out.append(ps[i] if keep_ones and i < x.ndim and x.shape[i] == 1 else None)
        else:
            out.append(next(it))
    return tuple(out)


def _reshape_partitions(mesh: Any, x: ArrayType, new_sizes: Shape,
                        dimensions: Shape | None) -> _Parts:
    ps = SK.parts(x)
    if all(p is None for p in ps):
        return (None,) * len(new_sizes)
    live = [p for s, p in zip(x.shape, ps) if s != 1]
    if [s for s in x.shape if s != 1] == [s for s in new_sizes if s != 1]:
        it = iter(live)
        return tuple(None if n == 1 else next(it) for n in new_sizes)
    is_split, groups = _split_one_axis(x.shape, new_sizes)
    if is_split:
        inner: list[Any] = []
        for g, p in zip(groups, live):
            if not isinstance(g, list):
                inner.append(p)
            elif p is None:
                inner.extend([None] * len(g))
            elif dimensions is None:
                inner.extend(_split_partitions(mesh, p if isinstance(p, tuple) else (p,), g))
            else:
                raise _Unsupported()
        return _place_ones(x, new_sizes, inner, keep_ones=True)
    is_merge, groups = _split_one_axis(new_sizes, x.shape)
    if not is_merge:
        raise _Unsupported()
    merged: list[Any] = []
    it = iter(live)
    for n, g in zip([s for s in new_sizes if s != 1], groups):
        if not isinstance(g, list):
            merged.append(next(it))
            continue
        group = [next(it) for _ in g]
        if all(p is None for p in group):
            merged.append(None)
        elif dimensions is None:
            flat: list[Any] = []
            for p in group:
                flat.extend(p if isinstance(p, tuple) else (p,))
            while flat and flat[-1] is None:
                flat.pop()
            if None in flat:
                raise _Unsupported()
            merged.extend(_split_partitions(mesh, tuple(flat), [n]))
        else:
            raise _Unsupported()
    return _place_ones(x, new_sizes, merged, keep_ones=True)


def _reshape_parts(mesh: Any, x: ArrayType, *, new_sizes: Shape, dimensions: Shape | None,
                   sharding: Any = None) -> list[_Parts]:
    if sharding is not None:
        return [SK.param_parts(SK.abstract(sharding), len(new_sizes))]
    try:
        return [_reshape_partitions(mesh, x, tuple(new_sizes), dimensions)]
    except _Unsupported:
        raise _reshape_error(x, new_sizes) from None


def _reshape_ur(x: ArrayType, *, new_sizes: Shape, dimensions: Shape | None,
                sharding: Any = None) -> SK.UR:
    spec = None if sharding is None else SK.abstract(sharding).spec
    u, kind, r = SK.getu(x), SK.getu_kind(x), SK.getr(x)
    if u and spec is not None:
        if frozenset(spec.unreduced) != u:
            raise ValueError("out_sharding passed to reshape must be unreduced over the same"
                             f" mesh axes as operand. Got out_sharding: {spec} and operand"
                             f" type: {x.str_short(True)}")
        if spec.unreduced_kind != kind:
            raise ValueError("out_sharding passed to reshape must have the same unreduced_kind"
                             f" as operand. Got out_sharding: {spec} and operand type:"
                             f" {x.str_short(True)}")
    if not u and spec is not None and spec.unreduced:
        raise ValueError("out_sharding passed to `reshape` cannot contain unreduced axes."
                         f" Got {sharding}")
    if r and spec is not None and frozenset(spec.reduced) != r:
        raise ValueError("out_sharding passed to reshape must be reduced over the same mesh"
                         f" axes as operand. Got out_sharding: {spec} and operand type:"
                         f" {x.str_short(True)}")
    if not r and spec is not None and spec.reduced:
        raise ValueError("out_sharding passed to `reshape` cannot contain reduced axes."
                         f" Got {sharding}")
    return u, r, kind if u else None


def _from_param(key: str) -> Any:
    """iota/empty: the output sharding is the param (they have no operands)."""
    def rule(*avals: ArrayType, **params: Any) -> list[Any]:
        s = params.get(key)
        return [None if s is None else SK.abstract(s)]
    return rule


def _bitcast_parts(mesh: Any, x: ArrayType, *, new_dtype: T.DType) -> list[_Parts]:
    # A narrower dtype adds a trailing (replicated) dim; a wider one drops it.
    old, new = _nbits(x.dtype), _nbits(new_dtype)
    ps = SK.parts(x)
    if old == new:
        return [ps]
    return [(*ps, None)] if old > new else [ps[:-1]]


def _reshape_natural(args: list[Dist], out_avals: list[ArrayType], *, new_sizes: Any,
                     dimensions: Any, sharding: Any = None) -> list[ArrayType] | None:
    if dimensions is not None:
        return None
    x = args[0].aval
    if x.sharding is None:
        return [out_avals[0].update(sharding=None)] if S.is_plain(out_avals[0]) else None
    rule: Any = reshape_p.sharding
    try:
        (s,) = rule(x, new_sizes=new_sizes, dimensions=None, sharding=None)
    except Exception:  # a layout the local reshape cannot realise
        return None
    nat = out_avals[0].update(sharding=s)
    return [nat] if _reshape_is_local(x, nat) else None


def _reshape_is_local(x: ArrayType, out: ArrayType) -> bool:
    """A local reshape realises the layout when dims merge or split only in
    groups whose leading dim alone is split, over the same axes on both
    sides (then every device's block is a contiguous run of each group)."""
    groups = _reshape_groups(x.shape, out.shape)
    if groups is None:
        return False
    xp, op = S.parts_of(x), S.parts_of(out)
    for ins, outs in groups:
        if any(xp[d] for d in ins[1:]) or any(op[d] for d in outs[1:]):
            return False
        lead_in = xp[ins[0]] if ins else ()
        lead_out = op[outs[0]] if outs else ()
        if lead_in != lead_out:
            return False
    return True


def _reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]
                    ) -> list[tuple[list[int], list[int]]] | None:
    """Pair runs of input and output dims with equal products (size-1 dims
    join the run before them)."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        ins, outs = [], []
        pa = pb = 1
        while True:
            if pa <= pb and i < len(src):
                pa *= src[i]
                ins.append(i)
                i += 1
            elif j < len(dst):
                pb *= dst[j]
                outs.append(j)
                j += 1
            else:
                break
            if pa == pb and (i == len(src) or src[i] != 1) and (j == len(dst) or dst[j] != 1):
                break
        if pa != pb:
            return None
        groups.append((ins, outs))
    return groups


def _bid_natural(args: list[Dist], out_avals: list[ArrayType], *, shape: Any,
                 broadcast_dimensions: Any, sharding: Any = None) -> list[ArrayType] | None:
    x, out = args[0].aval, out_avals[0]
    parts: list[tuple[str, ...]] = [()] * len(shape)
    xp = S.parts_of(x)
    for i, d in enumerate(broadcast_dimensions):
        if xp[i] and x.shape[i] != shape[d]:
            return None
        parts[d] = xp[i]
    return [PD.laid_out(out, parts, S.unreduced_of(x), out, x)]


def _same_layout_natural(args: list[Dist], out_avals: list[ArrayType], **params: Any
                         ) -> list[ArrayType] | None:
    x = args[0].aval
    return [PD.laid_out(out_avals[0], S.parts_of(x), S.unreduced_of(x), out_avals[0], x)]


def _iota(prim: Primitive) -> PD.Program:
    """Each device's block of the ramp: a local ramp plus the block's offset."""
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *, dtype: Any,
                shape: Any, dimension: int, sharding: Any = None) -> list[Dist]:
        (out,) = out_avals
        local_shape = S.local_shape(out, geo)
        (ramp,) = prim.impl(dtype=dtype, shape=local_shape, dimension=dimension)
        axes = S.parts_of(out)[dimension]
        if not axes:
            return [Dist(out, geo.place(ramp))]
        offsets = geo.position(axes) * local_shape[dimension]
        held = {int(offsets[k]) for k in geo.local}
        blocks = {o: (ramp + np.asarray(o).astype(ramp.dtype)).astype(ramp.dtype) for o in held}
        return [Dist(out, tuple(blocks.get(int(o)) for o in offsets))]
    return program


# ====================================================== convert_element_type

def _convert_type(x: ArrayType, *, new_dtype: T.DType, weak_type: bool,
                  sharding: Any = None) -> list[ArrayType]:
    require(isinstance(new_dtype, np.dtype) and T.is_valid_dtype(new_dtype),
            "convert_element_type", "C1", f"new_dtype {new_dtype!r} is not a JAX dtype")
    if not isinstance(x.dtype, np.dtype):  # an extended dtype (typed PRNG keys)
        raise ValueError(f"Cannot convert_element_type from {x.dtype} to {new_dtype} "
                         "(convert_element_type C2)")
    return [ArrayType(x.shape, new_dtype, bool(weak_type))]


def _float_to_int(x: np.ndarray, dt: T.DType) -> np.ndarray:
    """XLA CPU semantics: truncate toward zero, NaN -> 0, saturate at the bounds."""
    info = ml_dtypes.iinfo(dt)  # type: ignore[no-untyped-call]
    lo, hi = int(info.min), int(info.max)
    f = np.trunc(x.astype(np.float64))
    f = np.where(np.isnan(f), 0.0, f)
    # float(hi) may round up (2**63 for int64); >= then catches exactly the
    # values that do not fit.
    above, below = f >= float(hi), f <= float(lo)
    inner = np.where(above | below, 0.0, f)
    wide = np.uint64 if lo == 0 else np.int64
    out = inner.astype(wide)
    out = np.where(above, wide(hi), np.where(below, wide(lo), out))
    return out.astype(dt)


def _int_to_int(x: np.ndarray, dt: T.DType) -> np.ndarray:
    """Two's-complement wrap-around, also for the sub-byte ml_dtypes ints."""
    if dt not in T.NARROW_INT_TYPES and dt not in T.NARROW_UINT_TYPES:
        if x.dtype in T.NARROW_INT_TYPES or x.dtype in T.NARROW_UINT_TYPES:
            x = x.astype(np.int64)
        return x.astype(dt)
    bits = T.iinfo_bits(dt)
    lo = int(ml_dtypes.iinfo(dt).min)  # type: ignore[no-untyped-call]
    wide = x.astype(np.int64) if x.dtype != np.uint64 else x.astype(np.uint64).view(np.int64)
    wrapped = ((wide - lo) & ((1 << bits) - 1)) + lo
    return wrapped.astype(dt)


_FLUSHED_WHEN_WIDENED = (T.float32, T.complex64)


def _convert_impl(x: np.ndarray, *, new_dtype: T.DType, weak_type: bool,
                  sharding: Any = None) -> list[np.ndarray]:
    src = x.dtype
    with np.errstate(all="ignore"):
        if T.is_complex(src) and not T.is_complex(new_dtype):
            x = x.real  # complex -> real keeps the real part, as XLA does
            src = x.dtype
        if new_dtype == T.bool_:
            wide = x.astype(np.float32) if T.is_float(src) and src.itemsize < 4 else x
            return [np.asarray(flush(wide) != 0)]  # a float compare: subnormals are zero
        if src in _FLUSHED_WHEN_WIDENED and new_dtype in (T.float64, T.complex128):
            x = flush(x)  # widening is float arithmetic on XLA CPU: denormals-are-zero
        if T.is_int(new_dtype) and T.is_float(src):
            return [_float_to_int(x, new_dtype)]
        if T.is_int(new_dtype) and T.is_int(src):
            return [_int_to_int(x, new_dtype)]
        if src in T.NARROW_INT_TYPES or src in T.NARROW_UINT_TYPES:
            x = x.astype(np.int64)
        return [np.asarray(x.astype(new_dtype))]


def fold_convert(x: Any, dtype: T.DType, weak_type: bool) -> Any:
    """JAX's staging folds a conversion of a rank-0 host constant (a jaxpr
    literal, such as the 1.0 that seeds ``grad``) into a new literal, by a
    NumPy cast, instead of recording an equation. Returns None where it does
    not apply: no staging trace, or not a rank-0 host value."""
    if type(current_trace()) is EvalTrace:
        return None
    return _fold_literal(x, dtype, weak_type)


def _fold_literal(x: Any, dtype: T.DType, weak_type: bool) -> Any:
    if type(x) is not Array or x._py is None or x.aval.shape:
        return None
    value = np.asarray(x._value)
    if T.is_complex(value.dtype) and not T.is_complex(dtype):
        value = value.real
    with np.errstate(all="ignore"):
        out = value.astype(dtype)
    return host_value(out, ArrayType((), dtype, bool(weak_type)), "convert_element_type")


def _convert(x: Any, dtype: T.DType, weak_type: bool, sharding: Any) -> Any:
    """convert_element_type as JAX stages it: no equation when it would not
    change the type (forwarded to its operand) or when it folds."""
    aval = canonical_aval_of(x)
    if aval.dtype == dtype and aval.weak_type == weak_type and sharding is None:
        return x
    folded = fold_convert(x, dtype, weak_type) if sharding is None else None
    if folded is not None:
        return folded
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type,
                                       sharding=sharding)


def _convert_jvp(primals: list[Any], tangents: list[Any], *, new_dtype: T.DType,
                 weak_type: bool, sharding: Any = None) -> tuple[list[Any], list[Any]]:
    """The tangent is converted like the primal; a conversion to an integer or
    bool type (or from one: its tangent is float0) has a zero tangent."""
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                      sharding=sharding)
    t_dtype = T.tangent_dtype(new_dtype)
    if type(t) is Zero or t_dtype == T.FLOAT0 or canonical_aval_of(t).dtype == T.FLOAT0:
        return [out], [Zero.from_primal_value(out)]
    return [out], [_convert(t, t_dtype, weak_type, sharding)]


def _convert_transpose(ct: Any, operand: UndefinedPrimal, *, new_dtype: T.DType,
                       weak_type: bool, sharding: Any = None) -> list[Any]:
    """Back to the operand's dtype AND weak type; integer operands get a float0 zero."""
    aval = operand.aval
    if type(ct) is Zero or T.tangent_dtype(aval.dtype) == T.FLOAT0:
        return [Zero(ArrayType(aval.shape, T.tangent_dtype(aval.dtype), False))]
    return [_convert(ct, aval.dtype, aval.weak_type, None)]


def _convert_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   new_dtype: T.DType, weak_type: bool, sharding: Any = None) -> Batched:
    """Elementwise: the same conversion, batched where the operand is (a
    ``sharding`` param gains the batch axis, sharded over the vmap's explicit
    mesh axes)."""
    if sharding is not None:
        sharding = sharding_for_vmap(axis, sharding, _bd(dims[0]))
    out = convert_element_type_p.bind(args[0], new_dtype=new_dtype, weak_type=weak_type,
                                      sharding=sharding)
    return [out], [dims[0]]


def _convert_const_fold(x: Any, *, new_dtype: T.DType, weak_type: bool,
                        sharding: Any = None) -> list[Any] | None:
    """A literal operand reaching a staging trace (e.g. through an autodiff
    trace, which binds constants' conversions on its parent) folds too."""
    if sharding is not None:
        return None
    folded = _fold_literal(x, new_dtype, weak_type)
    return None if folded is None else [folded]


convert_element_type_p = declare(
    "convert_element_type", typing=_convert_type, impl=_convert_impl,
    lowering=LR.convert_element_type,
    pp_rule=pp_hiding("sharding"), jvp=_convert_jvp, transpose=_convert_transpose,
    batch=_convert_batch,
    sharding=SK.elementwise_rule(
        SK.section("convert_element_type", _convert_parts, _convert_ur)),
    const_fold=_convert_const_fold,
    per_device=from_primitive(lambda p: PD.then_reshard(p, _same_layout_natural, PD.local)))


# ====================================================== bitcast_convert_type

def _nbits(dt: T.DType) -> int:
    if T.is_int(dt):
        return T.iinfo_bits(dt)
    if dt in T.SMALL_FLOAT_TYPES:
        return int(ml_dtypes.finfo(dt).bits)  # type: ignore[no-untyped-call]
    return int(dt.itemsize * 8)


def _bitcast_type(x: ArrayType, *, new_dtype: T.DType) -> list[ArrayType]:
    name = "bitcast_convert_type"
    require(isinstance(new_dtype, np.dtype) and T.is_valid_dtype(new_dtype), name, "C1",
            f"new_dtype {new_dtype!r} is not a JAX dtype")
    special = (T.is_bool(x.dtype) or T.is_complex(x.dtype) or T.is_bool(new_dtype)
               or T.is_complex(new_dtype))
    require(not special or x.dtype == new_dtype, name, "C2",
            "bool and complex values can only be bitcast to their own dtype; got operand "
            f"dtype={x.dtype.name}, new_dtype={new_dtype.name}")
    old_bits, new_bits = _nbits(x.dtype), _nbits(new_dtype)
    if old_bits == new_bits:
        shape = x.shape
    elif old_bits > new_bits:
        require(old_bits % new_bits == 0, name, "C3",
                f"{x.dtype.name} ({old_bits} bits) is not a multiple of {new_dtype.name} "
                f"({new_bits} bits)", ValueError)
        shape = (*x.shape, old_bits // new_bits)
    else:
        last = x.shape[-1] if x.shape else 1
        require(last * old_bits == new_bits, name, "C3",
                f"converting shape {x.shape} from {x.dtype.name} ({old_bits} bits) to "
                f"{new_dtype.name} ({new_bits} bits) needs a last axis of size "
                f"{new_bits // old_bits}, got {last}", ValueError)
        shape = x.shape[:-1]
    return [ArrayType(shape, new_dtype, False)]


def _bitcast_impl(x: np.ndarray, *, new_dtype: T.DType) -> list[np.ndarray]:
    old_bits, new_bits = _nbits(x.dtype), _nbits(new_dtype)
    if (old_bits < 8 or new_bits < 8) and old_bits != new_bits:
        raise NotImplementedError(
            "bitcast_convert_type between sub-byte types of different widths is not "
            "specified yet")
    arr = np.ascontiguousarray(x)
    if old_bits == new_bits:
        return [arr.view(new_dtype).reshape(x.shape)]
    if old_bits > new_bits:  # little-endian (XLA CPU): lowest bytes first
        return [arr.reshape(*x.shape, 1).view(new_dtype)]
    return [arr.view(new_dtype).reshape(x.shape[:-1])]


def _bitcast_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   new_dtype: T.DType) -> Batched:
    """Elementwise, except that a bitcast to a wider dtype consumes the last
    axis (and one to a narrower dtype appends one): a batch axis that is the
    last axis is moved to the front first. (JAX 0.12 treats the primitive as
    purely elementwise and fails on that case.)"""
    (x,), dim = args, _bd(dims[0])
    aval = canonical_aval_of(x)
    if _nbits(aval.dtype) < _nbits(new_dtype) and dim == aval.ndim - 1:
        x, dim = moveaxis(x, dim, 0), 0
    return [bitcast_convert_type_p.bind(x, new_dtype=new_dtype)], [dim]


bitcast_convert_type_p = declare(
    "bitcast_convert_type", lowering=ST.bitcast_convert_type,
    typing=_bitcast_type, impl=_bitcast_impl, jvp=zero_jvp(),
    batch=_bitcast_batch,
    transpose=not_applicable("bitcast_convert_type has a zero derivative (its bits are "
                             "reinterpreted), so it never appears in a linear program"),
    sharding=SK.section("bitcast_convert_type", _bitcast_parts),
    per_device=from_primitive(PD.aligned))


# ===================================================================== iota

def _iota_type(*, dtype: T.DType, shape: Shape, dimension: int, sharding: Any = None
               ) -> list[ArrayType]:
    _check_shapelike("iota", "C1", "shape", shape)
    require(isinstance(dtype, np.dtype) and T.is_valid_dtype(dtype) and dtype != T.bool_,
            "iota", "C2", f"iota does not accept dtype {dtype}; accepted dtypes are integer, "
            "floating and complex types")
    require(0 <= dimension < len(shape), "iota", "C3",
            f"dimension must be between 0 and len(shape), got dimension={dimension} for "
            f"shape={tuple(shape)}", ValueError)
    return [ArrayType(tuple(shape), dtype, False)]


def _iota_impl(*, dtype: T.DType, shape: Shape, dimension: int, sharding: Any = None
               ) -> list[np.ndarray]:
    ramp = np.arange(shape[dimension], dtype=np.int64)
    if T.is_int(dtype):
        vals = _int_to_int(ramp, dtype)
    else:
        vals = ramp.astype(dtype)  # exact where representable, rounded otherwise
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return [np.broadcast_to(vals.reshape(view), shape).copy()]


iota_p = declare("iota", typing=_iota_type, impl=_iota_impl, jvp=zero_jvp(), lowering=LR.iota,
                 transpose=not_applicable("iota has no operands"), batch=_no_operands("iota"),
                 sharding=_from_param("sharding"),
                 per_device=from_primitive(_iota))


# ==================================================================== empty

def _as_dtype(dtype: Any) -> T.DType | None:
    """The NumPy dtype ``dtype`` names (the param keeps what the caller gave,
    e.g. ``jnp.float32``, as JAX's does), or None."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    return dt if T.is_valid_dtype(dt) else None


def _empty_type(*, shape: Shape, dtype: Any, out_sharding: Any = None
                ) -> list[ArrayType]:
    _check_shapelike("empty", "C1", "shape", shape)
    dt = _as_dtype(dtype)
    require(dt is not None, "empty", "C2", f"dtype {dtype!r} is not a JAX dtype")
    assert dt is not None
    return [ArrayType(tuple(shape), dt, False)]


def _empty_impl(*, shape: Shape, dtype: Any, out_sharding: Any = None
                ) -> list[np.ndarray]:
    # The contents are unspecified; zeros is one valid choice.
    return [np.zeros(shape, np.dtype(dtype))]


empty_p = declare("empty", lowering=ST.zeros, typing=_empty_type, impl=_empty_impl, jvp=zero_jvp(),
                  transpose=not_applicable("empty has no operands"), batch=_no_operands("empty"),
                  sharding=_from_param("out_sharding"),
                  per_device=from_primitive(lambda p: PD.localized(p, PD.shape_fix("shape"))))


# ========================================================= broadcast_in_dim

def _broadcast_in_dim_type(x: ArrayType, *, shape: Shape, broadcast_dimensions: Shape,
                           sharding: Any = None) -> list[ArrayType]:
    name = "broadcast_in_dim"
    _check_shapelike(name, "C1", "shape", shape)
    _check_shapelike(name, "C1", "broadcast_dimensions", broadcast_dimensions)
    require(len(broadcast_dimensions) == x.ndim, name, "C2",
            f"broadcast_dimensions {tuple(broadcast_dimensions)} must have one entry per "
            f"operand axis, operand has rank {x.ndim}")
    require(len(shape) >= x.ndim, name, "C3",
            f"target shape {tuple(shape)} must have rank at least the operand rank {x.ndim}")
    require(all(0 <= d < len(shape) for d in broadcast_dimensions), name, "C4",
            f"broadcast_dimensions {tuple(broadcast_dimensions)} must be axes of the result "
            f"shape {tuple(shape)}")
    for axis, d in enumerate(broadcast_dimensions):
        require(x.shape[axis] in (1, shape[d]), name, "C5",
                f"operand axis {axis} has size {x.shape[axis]}, which cannot broadcast to "
                f"result axis {d} of size {shape[d]} (sizes must match or be 1)")
    require(len(set(broadcast_dimensions)) == len(broadcast_dimensions), name, "C6",
            f"broadcast_dimensions {tuple(broadcast_dimensions)} must not contain duplicates")
    return [ArrayType(tuple(shape), x.dtype, x.weak_type)]


def _broadcast_in_dim_impl(x: np.ndarray, *, shape: Shape, broadcast_dimensions: Shape,
                           sharding: Any = None) -> list[np.ndarray]:
    # Put operand axes in the order of their result axes, then insert the new ones.
    order = np.argsort(broadcast_dimensions, kind="stable")
    x = np.transpose(x, order) if x.ndim else x
    expanded = [1] * len(shape)
    for k, d in enumerate(sorted(broadcast_dimensions)):
        expanded[d] = x.shape[k]
    return [np.broadcast_to(x.reshape(expanded), shape)]


def _pp_broadcast_in_dim(eqn: Any, ctx: Any) -> Any:
    params = {k: v for k, v in eqn.params.items() if k not in ("shape", "sharding")}
    if not params.get("broadcast_dimensions"):
        params.pop("broadcast_dimensions", None)
    return pp_eqn_default(eqn, ctx, params)


def bind_reduce_sum(x: Any, axes: tuple[int, ...]) -> Any:
    """``lax.reduce_sum(x, axes)`` for the transposes of the families below
    reductions (shaping, state, slicing), whose wrappers the reductions' rules
    use: they find the primitive in the registry."""
    return primitive("reduce_sum").bind(x, axes=tuple(int(a) for a in axes), out_sharding=None)


def _broadcast_in_dim_transpose(ct: Any, operand: UndefinedPrimal, *, shape: Shape,
                                broadcast_dimensions: Shape, sharding: Any = None) -> Any:
    """Sum over the result axes that are new or broadcast from size 1, then
    reinsert the operand's size-1 axes."""
    unit = [i for i, d in enumerate(operand.aval.shape) if d == 1]
    kept = [d for i, d in enumerate(broadcast_dimensions) if i not in unit]
    axes = tuple(i for i in range(len(shape)) if i not in kept)
    return expand_dims(bind_reduce_sum(ct, axes), unit)


def _broadcast_in_dim_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                            shape: Shape, broadcast_dimensions: Shape,
                            sharding: Any = None) -> Batched:
    """The batch axis goes to the front of operand and result; the operand's
    other axes shift by one (and so does a ``sharding`` param, whose new
    leading entry is the vmap's explicit mesh axes)."""
    (x,), dim = args, _bd(dims[0])
    x = moveaxis(x, dim, 0)
    new_shape = (canonical_aval_of(x).shape[0], *shape)
    new_dims = (0, *np.add(1, broadcast_dimensions))
    sharding = sharding_for_vmap(axis, sharding, 0)
    if canonical_aval_of(x).shape == new_shape and new_dims == tuple(range(len(new_shape))):
        if sharding is None or sharding == canonical_aval_of(x).sharding:
            return [x], [0]  # the identity, which JAX's staging forwards
        # JAX's lax.broadcast_in_dim turns an identity that changes the
        # sharding into a reshard.
        return [reshard(x, sharding)], [0]
    out = broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_dims,
                                  sharding=sharding)
    return [out], [0]


broadcast_in_dim_p = declare(
    "broadcast_in_dim", typing=_broadcast_in_dim_type, impl=_broadcast_in_dim_impl,
    lowering=LR.broadcast_in_dim,
    pp_rule=_pp_broadcast_in_dim, jvp=linear_jvp(),
    transpose=linear_transpose(_broadcast_in_dim_transpose), batch=_broadcast_in_dim_batch,
    sharding=SK.auto_placed(SK.section("broadcast_in_dim", _bid_parts, _bid_ur),
                            SK.broadcast_placement),
    per_device=from_primitive(lambda p: PD.then_reshard(
        p, _bid_natural, lambda q: PD.localized(q, PD.shape_fix("shape")))))


# ================================================================== reshape

def _reshape_type(x: ArrayType, *, new_sizes: Shape, dimensions: Shape | None,
                  sharding: Any = None) -> list[ArrayType]:
    name = "reshape"
    require(_is_int_seq(new_sizes) and all(d >= 0 for d in new_sizes), name, "C1",
            f"new_sizes must all be nonnegative integers, got {tuple(new_sizes)}")
    if dimensions is not None:
        require(sorted(dimensions) == list(range(x.ndim)), name, "C2",
                f"dimensions must be a permutation of operand dimensions, got dimensions "
                f"{tuple(dimensions)} for shape {x.shape}")
    size = int(np.prod(new_sizes, dtype=np.int64))
    # JAX's shape rule omits this check and XLA rejects the program later with a
    # ValueError; the spec states it here.
    require(size == x.size, name, "C3",
            f"cannot reshape operand of shape {x.shape} ({x.size} elements) to new_sizes "
            f"{tuple(new_sizes)} ({size} elements)", ValueError)
    return [ArrayType(tuple(new_sizes), x.dtype, x.weak_type)]


def _reshape_impl(x: np.ndarray, *, new_sizes: Shape, dimensions: Shape | None,
                  sharding: Any = None) -> list[np.ndarray]:
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return [x.reshape(new_sizes)]


def _reshape_transpose(ct: Any, operand: UndefinedPrimal, *, new_sizes: Shape,
                       dimensions: Shape | None, sharding: Any = None) -> Any:
    """Reshape back; with ``dimensions`` (transpose-then-reshape), reshape to the
    permuted operand shape and undo the permutation."""
    shape = operand.aval.shape
    if dimensions is None:
        return reshape(ct, shape)
    permuted = reshape(ct, tuple(shape[d] for d in dimensions))
    return transpose(permuted, list(np.argsort(dimensions)))


def _reshape_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   new_sizes: Shape, dimensions: Shape | None, sharding: Any = None
                   ) -> Batched:
    """Batch axis to the front, kept as the result's leading axis (also in a
    ``sharding`` param, sharded over the vmap's explicit mesh axes)."""
    x = moveaxis(args[0], _bd(dims[0]), 0)
    if dimensions is not None:
        dimensions = (0, *np.add(1, dimensions))
    size = canonical_aval_of(x).shape[0]
    out_sharding = sharding_for_vmap(axis, sharding, 0)
    return [reshape(x, (size, *new_sizes), dimensions, out_sharding=out_sharding)], [0]


reshape_p = declare("reshape", typing=_reshape_type, impl=_reshape_impl, jvp=linear_jvp(),
                    lowering=LR.reshape,
                    transpose=linear_transpose(_reshape_transpose), batch=_reshape_batch,
                    sharding=SK.auto_placed(SK.section("reshape", _reshape_parts, _reshape_ur),
                                            SK.reshaped_placement),
                    per_device=from_primitive(lambda p: PD.then_reshard(
                        p, _reshape_natural, lambda q: PD.localized(q, PD.shape_fix("new_sizes")))))


# ================================================================ transpose

def _transpose_type(x: ArrayType, *, permutation: Shape) -> list[ArrayType]:
    require(isinstance(permutation, (tuple, list, np.ndarray)), "transpose", "C1",
            f"permutation must be a tuple/list/ndarray, got {type(permutation)}")
    require(sorted(permutation) == list(range(x.ndim)), "transpose", "C2",
            f"permutation {tuple(permutation)} is not a permutation of the operand "
            f"dimensions of shape {x.shape}")
    return [ArrayType(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)]


def _transpose_impl(x: np.ndarray, *, permutation: Shape) -> list[np.ndarray]:
    return [np.transpose(x, permutation)]


def _transpose_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                     permutation: Shape) -> Batched:
    """One permutation that also brings the batch axis to the front."""
    dim = _bd(dims[0])
    perm = (dim, *(i if i < dim else i + 1 for i in permutation))
    return [transpose(args[0], perm)], [0]


transpose_p = declare(
    "transpose", typing=_transpose_type, impl=_transpose_impl, jvp=linear_jvp(),
    lowering=LR.transpose,
    transpose=linear_transpose(
        lambda ct, x, *, permutation: transpose(ct, list(np.argsort(permutation)))),
    batch=_transpose_batch,
    sharding=SK.auto_placed(SK.section("transpose", _transpose_parts, SK.keeps),
                            SK.transposed_placement),
    per_device=from_primitive(PD.local))


# ================================================================== squeeze

def _squeeze_type(x: ArrayType, *, dimensions: Shape) -> list[ArrayType]:
    name = "squeeze"
    require(len(set(dimensions)) == len(dimensions), name, "C1",
            f"dimensions are not unique: {tuple(dimensions)}", ValueError)
    require(all(0 <= d < x.ndim for d in dimensions), name, "C2",
            f"dimensions outside range [0, {x.ndim}): {tuple(dimensions)}", ValueError)
    require(all(x.shape[d] == 1 for d in dimensions), name, "C3",
            f"cannot squeeze an axis whose size is not one, got shape={x.shape} and "
            f"dimensions={tuple(dimensions)}", ValueError)
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return [ArrayType(shape, x.dtype, x.weak_type)]


def _squeeze_impl(x: np.ndarray, *, dimensions: Shape) -> list[np.ndarray]:
    return [np.squeeze(x, axis=tuple(dimensions))]


def _squeeze_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                   dimensions: Shape) -> Batched:
    """Batch axis to the front; the squeezed axes shift by one."""
    x = moveaxis(args[0], _bd(dims[0]), 0)
    return [squeeze(x, tuple(np.add(1, dimensions)))], [0]


squeeze_p = declare(
    "squeeze", typing=_squeeze_type, impl=_squeeze_impl, jvp=linear_jvp(),
    lowering=LR.squeeze,
    transpose=linear_transpose(lambda ct, x, *, dimensions: expand_dims(ct, dimensions)),
    batch=_squeeze_batch,
    sharding=SK.auto_placed(SK.section("squeeze", _squeeze_parts, SK.keeps),
                            SK.squeezed_placement),
    per_device=from_primitive(PD.local))


# ================================================================ lax wrappers
# The wrappers canonicalise static arguments (shapes, axes, dtypes), skip the
# bind where JAX returns its operand unchanged, and otherwise bind exactly one
# primitive (or the short sequence JAX emits), so that jaxprs match JAX's.

_builtin_slice = slice


def _is_array(x: Any) -> bool:
    """JAX's ``isinstance(x, Array)``: concrete arrays and tracers alike."""
    return isinstance(x, (Array, Tracer))


def canonicalize_axis(axis: Any, ndim: int) -> int:
    return canonical_axis(axis, ndim)


def _ndim(x: Any) -> int:
    return canonical_aval_of(x).ndim if not isinstance(x, (list, tuple)) else int(np.ndim(x))


def _shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, (list, tuple)):
        return tuple(np.shape(x))
    return canonical_aval_of(x).shape


# ================================================================ conversion

def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast to ``new_dtype`` (a strong type)."""
    return _convert_element_type(operand, T.to_dtype(new_dtype, "convert_element_type"), False)


def _convert_element_type(operand: Any, new_dtype: T.DType | None = None,
                          weak_type: bool = False, sharding: Any = None,
                          warn_on_complex_to_real_cast: bool = True) -> Any:
    if hasattr(operand, "__jax_array__") and not _is_array(operand):
        operand = operand.__jax_array__()
    try:
        aval = canonical_aval_of(operand)
    except OverflowError:
        # A Python int beyond the default integer still converts to an inexact dtype
        # (full_like(1.0, 2**70)), as in JAX; to an integer dtype it overflows.
        if not (isinstance(operand, int) and new_dtype is not None
                and T.is_inexact(new_dtype)):
            raise
        aval = T.ArrayType((), new_dtype, weak_type)
    new_dtype = aval.dtype if new_dtype is None else new_dtype
    weak_type = bool(weak_type)
    if (warn_on_complex_to_real_cast and T.is_complex(aval.dtype)
            and not T.is_complex(new_dtype)):
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=3)
    if _is_array(operand):
        if aval.dtype == new_dtype and aval.weak_type == weak_type and not (
                isinstance(operand, Tracer) and operand.to_concrete_value() is not None
                and not inside_inline_body()):
            # A tracer whose value is known (an eager autodiff tracer) is
            # converted anyway, as JAX does: the result is a new value, so a
            # residual saved from it is not the argument itself.
            return operand
        folded = fold_convert(operand, new_dtype, weak_type) if sharding is None else None
        if folded is not None:
            return folded
        return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type,
                                           sharding=sharding)
    # Python scalars and NumPy values convert now; under a trace the result is
    # a literal (scalars) or a constant, as in JAX.
    if type(operand) is np.ndarray and operand.ndim:
        return _converted_numpy(operand, new_dtype, weak_type)
    if isinstance(operand, int) and not isinstance(operand, bool):
        raw = np.asarray(operand)
        if raw.dtype == object:  # beyond int64: let NumPy round it to the target
            raw = raw.astype(np.float64 if not T.is_int(new_dtype) else np.int64)
    else:
        raw = np.asarray(operand)
    if raw.dtype not in T.ALL_DTYPES:
        raw = raw.astype(aval.dtype)
    (out,) = _convert_impl(raw, new_dtype=new_dtype, weak_type=weak_type)
    return host_value(np.asarray(out), T.ArrayType(raw.shape, new_dtype, weak_type),
                      "convert_element_type")


# While staging, a NumPy array is converted once per (trace, array, dtype,
# weak type): a program that reads the same NumPy constant twice captures one
# constant, as in JAX. Entries keep their trace alive (so its id is not
# reused) and a weak reference to the source array (to detect a recycled id).
# Evaluation never caches: the array may change between calls.
_NUMPY_CONVERSIONS: dict[tuple[int, int, T.DType, bool], tuple[Any, Any, Any]] = {}
_NUMPY_CONVERSIONS_LIMIT = 256


def _converted_numpy(x: np.ndarray, dtype: T.DType, weak: bool) -> Any:
    trace = current_trace()
    staging = type(trace) is not EvalTrace
    key = (id(trace), id(x), dtype, weak)
    known = _NUMPY_CONVERSIONS.get(key) if staging else None
    if known is not None and known[1]() is x:
        return known[2]
    raw = x if x.dtype in T.ALL_DTYPES else x.astype(T.dtype_of_value(x))
    (out,) = _convert_impl(raw, new_dtype=dtype, weak_type=weak)
    result = host_value(np.asarray(out), T.ArrayType(raw.shape, dtype, weak),
                        "convert_element_type")
    if staging:
        if len(_NUMPY_CONVERSIONS) >= _NUMPY_CONVERSIONS_LIMIT:
            _NUMPY_CONVERSIONS.clear()
        _NUMPY_CONVERSIONS[key] = (trace, weakref.ref(x), result)
    return result


def asarray(x: Any) -> Any:
    """``lax.asarray``: arrays unchanged; Python scalars become weak arrays."""
    if _is_array(x):
        return x
    if T.is_python_scalar(x) and type(x) is not bool:
        return _convert_element_type(x, T.python_scalar_dtype(type(x)), True)
    return _convert_element_type(x, canonical_aval_of(x).dtype, False)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    return bitcast_convert_type_p.bind(operand,
                                       new_dtype=T.to_dtype(new_dtype, "bitcast_convert_type"))


# ================================================================== creation
# The creation wrappers and their shardings (SPEC.md, "creation functions and
# shardings"). A sharding is concrete when it names real devices (a
# NamedSharding over a Mesh, a SingleDeviceSharding) and abstract when it is
# a type-level NamedSharding over an AbstractMesh; JAX treats the two apart.

class NotAPlacementError(AttributeError, TypeError):
    """A ``sharding`` that is not a Sharding object (a bare PartitionSpec given
    to lax.full or as jnp's ``device=``). JAX fails looking an attribute up on
    it (AttributeError); it is a TypeError too, the class that names the fault."""


def _sharding_is_concrete(sharding: Any, who: str) -> bool:
    if not isinstance(sharding, Sharding):
        raise NotAPlacementError(
            f"{who}: sharding must be a jax.sharding.Sharding (a NamedSharding, or a device's "
            f"SingleDeviceSharding), got {sharding!r} of type {type(sharding).__name__}")
    return not (isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh))


def _canonical_out_sharding(sharding: Any, api_name: str) -> Any:
    """An ``out_sharding`` argument (None, P, NamedSharding) as the abstract
    NamedSharding a primitive records (TypeError/ValueError as JAX's)."""
    return canonicalize_out_sharding(sharding, api_name)


def iota(dtype: Any, size: int) -> Any:
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *,
                     out_sharding: Any = None) -> Any:
    dt = T.to_dtype(dtype, "broadcasted_iota")
    shp = T.check_shape(shape, "broadcasted_iota")
    dim = int(dimension)  # int(), as JAX's broadcasted_iota reads it
    sharding = _canonical_out_sharding(out_sharding, "broadcasted_iota")
    if sharding is not None:
        # The result type must fit the layout (rank, divisibility): JAX's
        # ValueError when it builds that type. Checked here until iota's
        # typing rule does it; the param keeps the spec as given.
        fit_out(sharding, shp)
    return iota_p.bind(dtype=dt, shape=shp, dimension=dim, sharding=sharding)


def empty(shape: Sequence[int], dtype: Any, *, out_sharding: Any = None) -> Any:
    return empty_p.bind(shape=T.check_shape(shape, "empty"), dtype=dtype,
                        out_sharding=out_sharding)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *,
         sharding: Any = None) -> Any:
    # The sizes' signs are checked after the fill value is converted, as JAX's broadcast
    # checks them (full((-1,), 2**70) is the conversion's OverflowError).
    shp = T.check_shape(shape, "full", nonnegative=False)
    if fill_value is None:  # JAX reads the value's dtype, or converts it, first
        raise ValueError("Invalid argument to dtype: None.")
    # (a Python scalar is rank 0 whatever its size: 2**70 converts to a float dtype)
    fill_shape = () if isinstance(fill_value, T.PYTHON_SCALAR_TYPES) else _shape(fill_value)
    if fill_shape:
        raise TypeError("full must be called with scalar fill_value, got fill_value.shape "
                        f"{fill_shape}.")
    if dtype is None:
        aval = canonical_aval_of(fill_value)
        fill_dtype, weak = aval.dtype, aval.weak_type
    else:
        fill_dtype, weak = T.to_dtype(dtype, "full"), False
    value = _convert_element_type(fill_value, fill_dtype, weak)
    T.check_shape(shp, "full")
    if sharding is None:
        return computed_on_primal_side(broadcast(value, shp))
    if not _sharding_is_concrete(sharding, "lax.full"):
        return _broadcast_scalar_sharded(value, shp, sharding)
    if _is_concrete_value(value):
        return _filled_on_devices(value, fill_dtype, shp, sharding)
    # Staged, a concrete sharding places nothing: JAX drops it.
    return broadcast(value, shp)


def _zeros_of_type(aval: T.ArrayType) -> Any:
    """A zero of exactly type ``aval``: weak types kept, so that sums with it
    (add_any takes its first operand's type) keep theirs; sharded zeros are
    laid out as the type says (cotangent types are a function of primal
    types, zeros included)."""
    zero = _convert_element_type(0, aval.dtype, aval.weak_type)
    if aval.sharding is not None and not aval.shape:
        # A scalar needs no broadcast, only its layout: JAX reshards it.
        return primitive("reshard").bind(zero, dst_sharding=aval.sharding, concrete_mesh=None)
    return full(aval.shape, zero, sharding=aval.sharding)


zeros_hooks.array_zeros = _zeros_of_type  # the zeros autodiff materialises (zeros_like_aval)


def _is_concrete_value(value: Any) -> bool:
    """JAX's ``isinstance(fill_value, ArrayImpl)``: a concrete array, i.e. any
    Array when evaluating eagerly, and under a trace only a captured device
    array (a Python scalar converted while tracing is a literal)."""
    if not isinstance(value, Array):
        return False
    return type(current_trace()) is EvalTrace or value._py is None


def _filled_on_devices(value: Any, dtype: T.DType, shape: tuple[int, ...], sharding: Any) -> Any:
    """A concrete array of ``shape`` filled with ``value``, laid out by the
    concrete ``sharding`` (JAX builds it shard by shard, so the result is not
    weakly typed). The layout is checked first: rank, divisibility, and JAX
    cannot place blocks of an unreduced layout (NotImplementedError)."""
    sharding.shard_shape(shape)
    if isinstance(sharding, NamedSharding):
        sharding.devices_indices_map(shape)
    filled = on_device(broadcast(_convert_element_type(value, dtype, False), shape))
    if isinstance(sharding, NamedSharding):
        return place(filled, sharding)
    return placed_on(filled, next(iter(sharding.device_set)), True)


def _broadcast_scalar_sharded(value: Any, shape: tuple[int, ...], sharding: Any) -> Any:
    """JAX's ``broadcast(value, shape, out_sharding=sharding)`` for a scalar:
    the sharding canonicalised (an empty mesh's is none); a rank-0 result is
    the scalar itself, moved to the layout by a reshard when its own differs."""
    s = _canonical_out_sharding(sharding, "broadcast_in_dim")
    if s is None:
        return broadcast(value, shape)
    if _layout_kept(value):
        # JAX's ValueError building the result type (rank, divisibility);
        # checked here until broadcast_in_dim's typing rule does it.
        fit_out(s, shape)
    if not shape and canonical_aval_of(value).sharding != s:
        return reshard(value, s)
    return broadcast(value, shape, out_sharding=s)


def _layout_kept(value: Any) -> bool:
    """Whether a broadcast of ``value`` gets its ``sharding`` param as its
    type's layout: only with explicit mesh axes in context or on ``value``
    (otherwise JAX's sharding rule is not consulted and the result is
    replicated, whatever the param says)."""
    own = canonical_aval_of(value).sharding
    meshes = [get_abstract_mesh()] + ([own.mesh] if own is not None else [])
    return any(AxisType.Explicit in m.axis_types for m in meshes)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None,
              sharding: Any = None) -> Any:
    # The prototype is read, never converted (as JAX): its shape unless one is given,
    # its dtype and weak type unless a dtype is; a NumPy string array or a string has both.
    if shape is not None:
        fill_shape = T.check_shape(shape, "full_like")
    else:
        fill_shape = tuple(np.shape(x)) if isinstance(x, (np.ndarray, str, bytes)) \
            else _shape(x)
    if dtype is not None:
        x_dtype, x_weak = T.canonicalize_dtype(np.dtype(dtype)), False
    elif hasattr(x, "dtype") and not _is_array(x) and not isinstance(x, (np.ndarray, np.generic)):
        x_dtype, x_weak = T.canonicalize_dtype(np.dtype(x.dtype)), bool(
            getattr(x, "weak_type", False))  # ShapeDtypeStruct-like
    else:
        aval = canonical_aval_of(x)
        x_dtype, x_weak = aval.dtype, aval.weak_type
    weak = dtype is None and x_weak
    dt = x_dtype if dtype is None else T.canonicalize_dtype(np.dtype(dtype))
    if sharding is None:
        sharding = like_sharding(x, fill_shape, shape is None, weak)
    out = full(fill_shape, _convert_element_type(fill_value, dt, weak), sharding=sharding)
    out = reduced_like(out, x)
    # Inside shard_map the result varies wherever x does (a free cast).
    vma: frozenset[Any] = getattr(getattr(x, "aval", None), "vma", frozenset())
    if vma:
        out = _pvary(out, tuple(vma - canonical_aval_of(out).vma))
    return out


def _pvary(x: Any, axes: tuple[Any, ...]) -> Any:
    """shard_map's ``pvary``: its family (manual axes, with the collectives its
    transpose binds) sits above this module, so the cast finds the primitive in
    the registry."""
    if not axes:
        return x
    return primitive("pvary").bind(x, axes=SK.mesh_ordered(axes))


def like_sharding(x: Any, shape: tuple[int, ...], same_shape: bool, weak: bool) -> Any:
    """The sharding a ``*_like`` result inherits from ``x`` when none is given.
    A traced ``x`` passes its type's sharding (reduced/unreduced axes too) when
    no new shape is asked for. A concrete ``x`` passes its placement when it
    was placed on purpose (committed: spec's arrays on a mesh, a
    ShapeDtypeStruct's sharding), over real devices or an explicit mesh, ``x``
    is not weakly typed, and the shape is kept or the layout is replicated."""
    if isinstance(x, Tracer):
        return x.aval.sharding if same_shape else None
    if in_linearize_rule() and isinstance(x, Array) and x._sharding is not None:
        return canonical_aval_of(x).sharding if same_shape else None
    s = x._sharding if isinstance(x, Array) else getattr(x, "sharding", None)
    if s is None or weak or not getattr(x, "committed", True):
        return None
    placed = (_sharding_is_concrete(s, "full_like") or not get_concrete_mesh().empty
              or (isinstance(s, NamedSharding)
                  and all(t == AxisType.Explicit for t in s.mesh.axis_types)))
    if placed and (shape == _shape(x) or s.is_fully_replicated):
        return s
    return None


def reduced_like(out: Any, x: Any) -> Any:
    """JAX's last step of ``*_like`` outside shard_map: under an explicit
    context mesh, a rank-0 result that is replicated over the axes on which
    the result or ``x`` is reduced is resharded to be reduced over them."""
    mesh = get_abstract_mesh()
    if mesh.empty or any(t != AxisType.Explicit for t in mesh.axis_types):
        return out
    out_aval = canonical_aval_of(out)
    if out_aval.shape:
        return out
    out_spec = getattr(out_aval.sharding, "spec", None)
    x_spec = getattr(getattr(getattr(x, "aval", None), "sharding", None), "spec", None)
    if x_spec is None and not isinstance(x, (Array, Tracer)):
        x_spec = getattr(getattr(x, "sharding", None), "spec", None)
    reduced = frozenset().union(*(s.reduced for s in (out_spec, x_spec) if s is not None))
    if not reduced:
        return out
    used: set[Any] = set()
    if out_spec is not None:
        for entry in out_spec.partitions:
            used.update(entry if isinstance(entry, tuple) else (entry,))
        used |= out_spec.unreduced | out_spec.reduced
    if reduced <= frozenset(mesh.axis_names) - used:
        return reshard(out, P(reduced=reduced))
    return out


# ============================================================== broadcasting

def _out_sharding(sharding: Any, api_name: str) -> Any:
    """A P or NamedSharding as the abstract NamedSharding primitives record."""
    if sharding is None:
        return None
    return canonicalize_out_sharding(sharding, api_name)


def _forwarded(x: Any) -> bool:
    """An identity applied to ``x`` is ``x`` (everywhere but under
    ``linear_transpose``'s tracing, for what depends on its inputs)."""
    trace = current_trace()
    return not isinstance(trace, JaxprTrace) or trace.forwards(x)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     *, out_sharding: Any = None) -> Any:
    out_sharding = _out_sharding(out_sharding, "broadcast_in_dim")
    # JAX returns an array of the result's rank with no dimensions to place before it
    # reads the shape's elements: only their number counts there.
    if (_ndim(operand) == len(shape) and not len(broadcast_dimensions) and _is_array(operand)
            and out_sharding is None):
        return operand
    canonical_aval_of(operand)  # an operand that is no JAX type, before the parameters
    if isinstance(shape, np.ndarray):
        # JAX compares the operand's shape with the shape as given: for a NumPy array that
        # is NumPy's elementwise comparison, whose truth value is NumPy's ValueError unless
        # it has one element.
        try:
            bool(_shape(operand) == shape)
        except ValueError as err:
            raise ValueError(f"{err} (broadcast_in_dim compares the operand's shape "
                             f"{_shape(operand)} with the shape {shape!r}, a NumPy array; "
                             "pass a tuple)") from None
    # Any iterable of integers is a shape here (a set too, as JAX's lax reads it); JAX
    # makes both tuples, then hashes them as the primitive's parameters, then checks them.
    given_shape, given_dims = tuple(shape), tuple(broadcast_dimensions)
    hashable_params("broadcast_in_dim", shape=given_shape, broadcast_dimensions=given_dims)
    shp = shape_like(given_shape, "broadcast_in_dim", "shape")
    dims = shape_like(given_dims, "broadcast_in_dim", "broadcast_dimensions")
    if (_is_array(operand) and out_sharding is None and _shape(operand) == tuple(shp)
            and dims == tuple(range(len(shp))) and _forwarded(operand)):
        # The identity: JAX's staging forwards such an equation to its operand
        # (so e.g. expand_dims(x, ()) adds nothing to a jaxpr).
        return operand
    if (out_sharding is not None and _shape(operand) == tuple(shp)
            and dims == tuple(range(len(shp)))
            and canonical_aval_of(operand).sharding != out_sharding):
        # Only the layout changes: a reshard, as JAX stages it.
        return reshard(operand, out_sharding)
    return broadcast_in_dim_p.bind(operand, shape=shp, broadcast_dimensions=dims,
                                   sharding=out_sharding)


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    if len(sizes) == 0 and out_sharding is None:
        return asarray(operand)
    shp = _shape(operand)
    dims = tuple(range(len(sizes), len(sizes) + len(shp)))
    return broadcast_in_dim(operand, tuple(sizes) + shp, dims, out_sharding=out_sharding)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    nd = _ndim(x)
    if nd == rank:
        return asarray(x)
    return broadcast(x, (1,) * (rank - nd))


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    dimensions = tuple(dimensions)
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    ndim_out = _ndim(array) + len(dimensions)
    dims = [canonicalize_axis(i, ndim_out) for i in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
    result_shape = list(_shape(array))
    for i in sorted(dims):
        result_shape.insert(i, 1)
    kept = [i for i in range(ndim_out) if i not in dims]
    return broadcast_in_dim(array, tuple(result_shape), kept)


# ================================================================= reshaping

def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            *, out_sharding: Any = None) -> Any:
    sizes = T.check_shape(new_sizes, "reshape", "new_sizes", nonnegative=False)
    shp = _shape(operand)
    if dimensions is None:
        dims: tuple[int, ...] | None = None
        same_dims = True
    else:
        dims = tuple(operator.index(d) for d in dimensions)
        same_dims = dims == tuple(range(len(shp)))
    out_sharding = _out_sharding(out_sharding, "reshape")
    same_sharding = out_sharding is None or canonical_aval_of(operand).sharding == out_sharding
    if shp and shp == sizes and same_dims and same_sharding and _is_array(operand):
        return operand
    return reshape_p.bind(operand, new_sizes=sizes,
                          dimensions=None if dims is None or same_dims else dims,
                          sharding=out_sharding)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    perm = tuple(operator.index(d) for d in permutation)
    if perm == tuple(range(_ndim(operand))) and _is_array(operand):
        return operand
    return transpose_p.bind(operand, permutation=perm)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    nd = _ndim(array)
    dims = tuple(sorted(canonicalize_axis(i, nd) for i in dimensions))
    if not dims and _is_array(array):
        return array
    return squeeze_p.bind(array, dimensions=dims)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    shp = _shape(operand)
    lo, hi, _ = _builtin_slice(start_dimension, stop_dimension).indices(len(shp))
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: {shp}"
                         f"[{start_dimension}:{stop_dimension}]")
    size = math.prod(shp[lo:hi])
    return reshape(operand, shp[:lo] + (size,) + shp[hi:])


__all__ = [
    "asarray", "bitcast_convert_type", "bitcast_convert_type_p", "broadcast", "broadcast_in_dim",
    "broadcast_in_dim_p", "broadcast_to_rank", "broadcasted_iota", "collapse",
    "convert_element_type", "convert_element_type_p", "empty", "empty_p", "expand_dims",
    "full", "full_like", "iota", "iota_p", "reshape", "reshape_p", "squeeze", "squeeze_p",
    "transpose", "transpose_p",
]
