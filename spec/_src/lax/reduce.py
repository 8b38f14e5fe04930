"""``lax.reduce``: a reduction of one or more operands with a user computation.

The wrapper recognises the monoids JAX recognises (``lax.add`` from 0,
``lax.mul`` from 1, ``lax.max``/``lax.min`` from their identities, the
bitwise ones on integers and booleans) and binds the matching reduce_*
primitive; any other computation binds the variadic ``reduce`` primitive,
whose ``jaxpr`` param is the computation traced on scalars: ``2n`` inputs
(the accumulators, then the elements) and ``n`` outputs.

Typing of ``reduce`` (cited in errors, SPEC.md "Reductions"):
C1 as many initial values as operands; C2 the initial values are scalars;
C3 each initial value has its operand's dtype; C4 the operands share one
shape; C5 the dimensions are distinct and in [0, rank); C6 the jaxpr takes
the ``2n`` scalars and returns ``n`` scalars of the operands' dtypes.
Result ``i``: operand ``i``'s shape without ``dimensions``, its dtype,
weak where both operand ``i`` and initial value ``i`` are.

Evaluation combines halves pairwise (a tree), padding an odd half with the
initial values, as the JVP rule (JAX's) differentiates it; XLA leaves the
order of combination unspecified, so a computation that is not associative
has no specified result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.core.interpreter import (
    Eqn,
    Primitive,
    Jaxpr,
    PpContext,
    Tracer,
    canonical_aval_of,
    eval_jaxpr,
    from_primitive,
    eval_jaxpr_values,
    not_applicable,
    pp_eqn_default,
    to_concrete_value,
)
from spec._src.core.registry import declare, require
from spec._src.core.sharding import NamedSharding, P
from spec._src.core.types import ArrayType
from spec._src.interpreters import ad
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.interpreters.ad_util import Zero
from spec._src.interpreters.batching import AxisData, batch_flat, batch_jaxpr, bdim_at_front
from spec._src.lax import elementwise as E
from spec._src.lax import reductions as R
from spec._src.lax.sharding_reduce_dot import parts_of
from spec._src.lax.shaping import _convert_element_type, full, reshape, squeeze
from spec._src.lax.slicing import pad, slice_in_dim
from spec._src.lowering.emitter import LoweringContext, lower_body


# ------------------------------------------------------------------ typing

def _split(avals: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    n = len(avals) // 2
    return list(avals[:n]), list(avals[n:])


def _reduce_type(*avals: ArrayType, computation: Any, jaxpr: Jaxpr,
                 dimensions: tuple[int, ...]) -> list[ArrayType]:
    require(len(avals) % 2 == 0, "reduce", "C1",
            f"expected as many initial values as operands, got {len(avals)} arguments in all",
            ValueError)
    ops, inits = _split(avals)
    require(all(i.shape == () for i in inits), "reduce", "C2",
            f"reduce found non-scalar initial value: {[i.shape for i in inits]}", ValueError)
    require([o.dtype for o in ops] == [i.dtype for i in inits], "reduce", "C3",
            "reduce operand dtypes should match corresponding initial value dtypes, got "
            f"operands={ops} and initial_values={inits}")
    require(all(o.shape == ops[0].shape for o in ops), "reduce", "C4",
            f"operands must share one shape, got {[o.shape for o in ops]}", ValueError)
    ndim = len(ops[0].shape) if ops else 0
    require(len(set(dimensions)) == len(dimensions)
            and all(0 <= d < ndim for d in dimensions), "reduce", "C5",
            f"dimensions {dimensions} must be distinct and in [0, {ndim})", ValueError)
    R.require_scalar_computation("reduce", "C6", ops, jaxpr)
    return [ArrayType(tuple(d for k, d in enumerate(o.shape) if k not in dimensions), o.dtype,
                      o.weak_type and i.weak_type) for o, i in zip(ops, inits)]


def _reduce_sharding(*avals: ArrayType, computation: Any, jaxpr: Jaxpr,
                     dimensions: tuple[int, ...]) -> list[Any]:
    """Each result drops the reduced dimensions' spec entries (an operand
    without a mesh gives no sharding)."""
    ops, _ = _split(avals)
    out: list[Any] = []
    for o in ops:
        if o.sharding is None:
            out.append(None)
            continue
        kept = (p for k, p in enumerate(parts_of(o)) if k not in dimensions)
        out.append(NamedSharding(o.sharding.mesh, P(*kept)))
    return out


def _reduce_program(prim: Primitive) -> PD.Program:
    """On a mesh: each operand's reduced dimensions gathered (the kept ones
    stay split), the reduction run on every device's block, the results
    moved to their types. Unreduced operands are gathered whole."""
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        if any(S.unreduced_of(a.aval) for a in args):
            return fallback(geo, args, out_avals, **params)
        dims = set(params["dimensions"])
        n = len(args) // 2
        ops: list[Dist] = []
        natural: list[ArrayType] = []
        for a, out in zip(args[:n], out_avals):
            parts = S.parts_of(a.aval)
            whole = [() if k in dims else p for k, p in enumerate(parts)]
            if any(parts[k] for k in dims):
                a = S.reshard(a, PD.laid_out(a.aval, whole, frozenset(), a.aval, out), geo)
            ops.append(a)
            kept = [p for k, p in enumerate(whole) if k not in dims]
            natural.append(PD.laid_out(out, kept, frozenset(), a.aval, out))
        outs = S.run_local(prim, geo, [*ops, *args[n:]], natural, params)
        return [S.reshard(o, want, geo) for o, want in zip(outs, out_avals)]
    return program


# ---------------------------------------------------------------- evaluation

def _combine(jaxpr: Jaxpr, n: int, size: int, left: list[np.ndarray],
             right: list[np.ndarray]) -> list[np.ndarray]:
    """The computation on ``size`` pairs at once: its jaxpr batched over them."""
    batched, _ = batch_jaxpr(jaxpr, AxisData(size), [0] * (2 * n), [0] * n)
    return eval_jaxpr_values(batched, batched.consts, [*left, *right])


def _reduce_impl(*values: np.ndarray, computation: Any, jaxpr: Jaxpr,
                 dimensions: tuple[int, ...]) -> list[np.ndarray]:
    ops, inits = _split(values)
    n, shape = len(ops), ops[0].shape
    kept = [k for k in range(len(shape)) if k not in dimensions]
    out_shape = tuple(shape[k] for k in kept)
    rows = math.prod(shape[d] for d in dimensions)
    cols = math.prod(out_shape)
    if rows == 0:
        return [np.full(out_shape, i, dtype=o.dtype) for o, i in zip(ops, inits)]
    flat = [np.transpose(o, (*dimensions, *kept)).reshape(rows, cols) for o in ops]
    while rows > 1:
        half = rows // 2  # an odd last row waits for the next level
        size = half * cols
        outs = _combine(jaxpr, n, size, [f[:half].reshape(size) for f in flat],
                        [f[half:2 * half].reshape(size) for f in flat])
        flat = [np.concatenate([np.asarray(o).reshape(half, cols), f[2 * half:]])
                for o, f in zip(outs, flat)]
        rows = half + rows % 2
    # The initial values enter once, as the accumulator XLA's loop starts from.
    starts = [np.full(cols, i, dtype=o.dtype) for o, i in zip(ops, inits)]
    outs = _combine(jaxpr, n, cols, starts, [f.reshape(cols) for f in flat])
    return [np.asarray(o).reshape(out_shape) for o in outs]


# ------------------------------------------------------------------ autodiff

def _vmapped(fun: Callable[..., Sequence[Any]], times: int) -> Callable[..., list[Any]]:
    """``fun`` vmapped ``times`` over the leading axis of every argument (JAX's
    ``vmap``: outputs batched at 0)."""
    if times == 0:
        return lambda *xs: list(fun(*xs))
    inner = _vmapped(fun, times - 1)

    def mapped(*xs: Any) -> list[Any]:
        size = canonical_aval_of(xs[0]).shape[0]
        axis = AxisData(size)
        outs, dims = batch_flat(inner, axis, xs, [0] * len(xs), named=False)
        return [bdim_at_front(o, d, size) for o, d in zip(outs, dims)]
    return mapped


def _tree(reducer: Callable[..., list[Any]], inits: list[Any], kept_shape: tuple[int, ...]
          ) -> Callable[..., list[Any]]:
    """Reduce the leading axis by repeatedly combining its halves (an odd
    second half padded with the initial values)."""
    def tree(*xs: Any) -> list[Any]:
        vals = list(xs)
        while canonical_aval_of(vals[0]).shape[0] > 1:
            rows = canonical_aval_of(vals[0]).shape[0]
            half = (rows + 1) // 2
            firsts = [slice_in_dim(x, 0, half) for x in vals]
            seconds = [slice_in_dim(x, half, None) for x in vals]
            if rows - half != half:
                config = [(0, 0, 0)] * len(canonical_aval_of(vals[0]).shape)
                config[0] = (0, 1, 0)
                seconds = [pad(x, i, config) for x, i in zip(seconds, inits)]
            vals = reducer(*firsts, *seconds)
        if canonical_aval_of(vals[0]).shape[0] == 0:
            return [full(kept_shape, i) for i in inits]
        return [squeeze(x, (0,)) for x in vals]
    return tree


def _reduce_jvp(primals: list[Any], tangents: list[Any], *, computation: Any, jaxpr: Jaxpr,
                dimensions: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    """JAX's rule: the reduced axes moved to the front and flattened, the
    computation vmapped over the rest, and the tree reduction differentiated."""
    xs, inits = _split(primals)
    txs, tinits = _split(tangents)
    if any(type(t) is not Zero for t in tinits):
        raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                                  "initial values to reduction not implemented")
    shape = canonical_aval_of(xs[0]).shape
    kept = tuple(k for k in range(len(shape)) if k not in dimensions)
    rows = math.prod(shape[d] for d in dimensions)
    permutation = tuple(dimensions) + kept
    new_shape = (rows, *(shape[k] for k in kept))
    xs = [reshape(x, new_shape, permutation) for x in xs]
    txs = [t if type(t) is Zero else reshape(t, new_shape, permutation) for t in txs]
    txs = [Zero(canonical_aval_of(x)) if type(t) is Zero else t for x, t in zip(xs, txs)]

    def reducer(*args: Any) -> list[Any]:
        return eval_jaxpr(jaxpr, jaxpr.consts, *args)

    tree = _tree(_vmapped(reducer, len(kept) + 1), inits, new_shape[1:])
    return ad.jvp_flat(tree, xs, txs, named=False)


def _reduce_batch(axis: AxisData, args: list[Any], dims: list[Any], *, computation: Any,
                  jaxpr: Jaxpr, dimensions: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    """Operands batched at the front, the dimensions shifted past it;
    batched initial values are not specified (JAX's rule raises)."""
    ops, inits = _split(args)
    op_dims, init_dims = _split(dims)
    if any(d is not None for d in init_dims):
        raise NotImplementedError("vmap of lax.reduce over its initial values is not "
                                  "supported")
    ops = [bdim_at_front(o, d, axis.size) for o, d in zip(ops, op_dims)]
    outs = reduce_p.bind(*ops, *inits, computation=computation, jaxpr=jaxpr,
                         dimensions=tuple(d + 1 for d in dimensions))
    return list(outs), [0] * len(ops)


def _reduce_lowering(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                     out_avals: Sequence[ArrayType], *, computation: Any, jaxpr: Jaxpr,
                     dimensions: tuple[int, ...]) -> list[str]:
    """``stablehlo.reduce`` over all operands, its region the computation's
    body on (accumulators, elements)."""
    scalars = [ArrayType((), a.dtype) for a in in_avals[len(in_avals) // 2:]]

    def body(ctx: LoweringContext, args: list[str]) -> list[str]:
        return lower_body(ctx, jaxpr, args)
    region = ctx.region(scalars + scalars, scalars, body)
    dims = ", ".join(str(d) for d in dimensions)
    return ctx.generic_op("stablehlo.reduce", operands, in_avals, out_avals,
                          properties=f"dimensions = array<i64{': ' + dims if dims else ''}>",
                          regions=[region])


def _pp_reduce(eqn: Eqn, ctx: PpContext) -> Any:
    params = dict(eqn.params)
    params["computation"] = _Masked(params["computation"])
    return pp_eqn_default(eqn, ctx, params)


class _Masked:
    """The computation shown with its address masked, as JAX prints it."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                      str(self.value))


reduce_p = declare("reduce", typing=_reduce_type, impl=_reduce_impl, multiple_results=True,
                   sharding=_reduce_sharding, jvp=_reduce_jvp,
                   transpose=not_applicable("reduce with a general computation is not linear"),
                   batch=_reduce_batch, lowering=_reduce_lowering, pp_rule=_pp_reduce,
                   per_device=from_primitive(_reduce_program),
                   doc="lax.reduce with a computation that is not a recognised monoid")


# ------------------------------------------------------------------ wrapper

def _identity(kind: str, dtype: T.DType) -> Any:
    """The identity of the monoid ``kind`` on ``dtype`` (JAX's)."""
    if kind in ("or", "xor", "sum"):
        return np.array(0, dtype)
    if kind == "and":
        return np.array(-1).astype(dtype)
    if kind == "prod":
        return np.array(1, dtype)
    lowest = kind == "max"
    if dtype == T.bool_:
        return np.array(not lowest, np.bool_)
    if T.is_int(dtype):
        info = np.iinfo(dtype)
        return np.array(info.min if lowest else info.max, dtype)
    finfo = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    has_inf = bool(np.isinf(np.array(np.inf, dtype).astype(np.float64)))
    if has_inf:
        return np.array(-np.inf if lowest else np.inf, dtype)
    return np.array(finfo.min if lowest else finfo.max, dtype)


_MONOIDS: dict[Any, tuple[str, Callable[..., Any], bool]] = {
    E.add: ("sum", R.reduce_sum, False), E.mul: ("prod", R.reduce_prod, False),
    E.bitwise_or: ("or", R.reduce_or, True), E.bitwise_and: ("and", R.reduce_and, True),
    E.bitwise_xor: ("xor", R.reduce_xor, True), E.max: ("max", R.reduce_max, False),
    E.min: ("min", R.reduce_min, False),
}


def _monoid_reducer(computation: Any, inits: list[Any]) -> Callable[..., Any] | None:
    """The reduce_* wrapper for ``computation`` started from its identity
    (a single concrete scalar initial value), as JAX recognises it."""
    if len(inits) != 1:
        return None
    try:
        entry = _MONOIDS.get(computation)
    except TypeError:  # an unhashable callable
        return None
    if entry is None:
        return None
    kind, reducer, int_like_only = entry
    (x,) = inits
    aval = canonical_aval_of(x)
    value = to_concrete_value(x) if isinstance(x, Tracer) else x
    if value is None or aval.shape != ():
        return None
    if int_like_only and not (aval.dtype == T.bool_ or T.is_int(aval.dtype)):
        return None
    if kind in ("max", "min") and not (aval.dtype == T.bool_ or T.is_int(aval.dtype)
                                       or T.is_inexact(aval.dtype)):
        raise ValueError(f"Unsupported dtype for {kind}: {aval.dtype}")
    ok = bool(np.equal(np.asarray(value), _identity(kind, aval.dtype)))
    return reducer if ok else None


def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int], out_sharding: Any = None) -> Any:
    """Reduce ``operands`` (a pytree of arrays of one shape) over
    ``dimensions`` with ``computation``, a monoid whose identity is
    ``init_values`` (a pytree of scalars of the same structure)."""
    flat_operands, operand_tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if operand_tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{operand_tree} vs. {init_tree}")
    if len(flat_operands) != len(flat_inits):
        raise ValueError("Must have same total number of operands as init_values:  "
                         f"{len(flat_operands)} vs. {len(flat_inits)}")
    dims = tuple(int(d) for d in dimensions)
    reducer = _monoid_reducer(computation, flat_inits)
    if reducer is not None:
        weak = (all(canonical_aval_of(x).weak_type for x in flat_operands)
                and all(canonical_aval_of(x).weak_type for x in flat_inits))
        if out_sharding is not None and reducer is not R.reduce_sum:
            raise NotImplementedError("out_sharding is supported only for a sum")
        extra = {"out_sharding": out_sharding} if out_sharding is not None else {}
        out = reducer(*flat_operands, dims, **extra)
        return _convert_element_type(out, weak_type=weak)
    init_avals = [canonical_aval_of(x) for x in flat_inits]
    jaxpr, out_tree = R.computation_jaxpr(computation, init_avals, init_tree)
    outs = reduce_p.bind(*flat_operands, *flat_inits, computation=computation, jaxpr=jaxpr,
                         dimensions=dims)
    return tree_util.tree_unflatten(out_tree, list(outs))


__all__ = ["reduce", "reduce_p"]
