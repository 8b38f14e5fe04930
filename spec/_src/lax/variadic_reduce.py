"""The reduction with a user computation: ``reduce``.

``reduce(*operands, *init_values, computation, jaxpr, dimensions)`` folds N
operands of one shape together over ``dimensions`` with ``jaxpr``, a closed
jaxpr taking 2N scalars (the accumulated values, then the next elements) to
N scalars, started from the N scalar ``init_values``: XLA's variadic
``Reduce``. The result is correct when ``jaxpr`` is associative and the init
values are its identity (a monoid); XLA leaves the order of the folds
unspecified. Constraint numbering (cited in error messages, see SPEC.md,
section 9): C1 the init values are scalars; C2 each init value has its
operand's dtype; C3 the operands have one shape; C4 the dimensions are
distinct axes of the operands; C5 ``jaxpr`` takes 2N scalars of the
operands' dtypes and returns N of them.

The NumPy evaluation folds the reduced elements, flattened in row-major
order, as a balanced tree: the first half with the second half (an odd last
element carried to the next level) until one is left, the jaxpr applied to
all pairs of a level at once (batched), then folds that into the init values
once; an empty reduction gives the init values. JAX's JVP runs its own tree
(the first ceil(n/2) elements with the rest, the odd one out paired with the
init values), differentiated.

``lax.reduce`` binds ``reduce_sum``, ``reduce_prod``, ``reduce_max``,
``reduce_min``, ``reduce_and``, ``reduce_or`` or ``reduce_xor`` instead when
the computation is that monoid's lax function with one concrete scalar init
value equal to its identity (JAX's choice).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.core.interpreter import (
    Jaxpr,
    Tracer,
    canonical_aval_of,
    eval_jaxpr,
    eval_jaxpr_values,
    not_applicable,
    pp_eqn_default,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.interpreters.ad import jvp_flat
from spec._src.interpreters.ad_util import Zero
from spec._src.interpreters.batching import AxisData, batch_flat, batch_jaxpr, bdim_at_front
from spec._src.lax import elementwise as E
from spec._src.lax import reductions as R
from spec._src.lax import sharding_kit as SK
from spec._src.lax.shaping import _convert_element_type, asarray, full, reshape, squeeze
from spec._src.lax.slicing import pad, slice_in_dim
from spec._src.lowering.emitter import LoweringContext, lower_body

_NAME = "reduce"


# ------------------------------------------------------------------ typing

def _split(avals: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    n = len(avals) // 2
    return list(avals[:n]), list(avals[n:])


def _reduce_type(*avals: ArrayType, computation: Any, jaxpr: Jaxpr,
                 dimensions: tuple[int, ...]) -> list[ArrayType]:
    operands, inits = _split(avals)
    require(all(a.shape == () for a in inits), _NAME, "C1",
            f"reduce found non-scalar initial value: {[a.shape for a in inits]}", ValueError)
    require([a.dtype for a in operands] == [a.dtype for a in inits], _NAME, "C2",
            "reduce operand dtypes should match corresponding initial value dtypes, got "
            f"operands={operands} and initial_values={inits}")
    shapes = [a.shape for a in operands]
    require(all(s == shapes[0] for s in shapes), _NAME, "C3",
            f"reduce operands must have equal shapes, got {shapes}", ValueError)
    ndim = len(shapes[0]) if shapes else 0
    require(len(set(dimensions)) == len(dimensions)
            and all(0 <= d < ndim for d in dimensions), _NAME, "C4",
            f"reduce dimensions {dimensions} must be distinct axes of operands of rank {ndim}",
            ValueError)
    want = [ArrayType((), a.dtype) for a in (*inits, *inits)]
    got = [ArrayType((), v.aval.dtype) for v in jaxpr.invars if v.aval.shape == ()]
    outs = [ArrayType((), v.aval.dtype) for v in jaxpr.outvars if v.aval.shape == ()]
    require(len(jaxpr.invars) == len(want) and got == want
            and outs == [ArrayType((), a.dtype) for a in inits], _NAME, "C5",
            f"reduce computation must take {len(want)} scalars of dtypes "
            f"{[a.dtype.name for a in want]} to {len(inits)} of the operands' dtypes, "
            f"got {jaxpr.in_avals} -> {[v.aval for v in jaxpr.outvars]}")
    kept = tuple(n for d, n in enumerate(shapes[0]) if d not in dimensions) if shapes else ()
    return [ArrayType(kept, x.dtype, x.weak_type and i.weak_type)
            for x, i in zip(operands, inits)]


# -------------------------------------------------------------------- impl

def _apply_values(jaxpr: Jaxpr, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``jaxpr`` (on scalars) applied to every position of arrays of one
    shape at once: the jaxpr batched over the flattened positions."""
    shape = args[0].shape
    size = math.prod(shape)
    batched, dims = batch_jaxpr(jaxpr, AxisData(size), [0] * len(args))
    outs = eval_jaxpr_values(batched, batched.consts, [a.reshape(size) for a in args])
    return [np.broadcast_to(o, (size,)).reshape(shape) if d is None else o.reshape(shape)
            for o, d in zip(outs, dims)]


def _fold_tree(xs: list[Any], inits: Sequence[Any], combine: Callable[..., list[Any]],
               take: Callable[[Any, int, int | None], Any],
               pad_one: Callable[[Any, Any], Any]) -> list[Any]:
    """The balanced fold over axis 0 of ``xs``: first half with second half
    (padded with one row of the init values when the count is odd) until
    one row is left."""
    while xs[0].shape[0] > 1:
        n = xs[0].shape[0]
        n1 = (n + 1) // 2
        first = [take(x, 0, n1) for x in xs]
        second = [take(x, n1, None) for x in xs]
        if n - n1 != n1:
            second = [pad_one(x, i) for x, i in zip(second, inits)]
        xs = combine(*first, *second)
    return xs


def _to_front(shape: Sequence[int], dimensions: Sequence[int]) -> tuple[list[int], list[int]]:
    """The permutation putting the reduced axes first, and the kept shape."""
    kept = [d for d in range(len(shape)) if d not in dimensions]
    return [*dimensions, *kept], [shape[d] for d in kept]


def _fold_values(jaxpr: Jaxpr, xs: list[np.ndarray]) -> list[np.ndarray]:
    """The balanced fold over axis 0: the first half with the second half
    (an odd last row carried over) until one row is left."""
    while xs[0].shape[0] > 1:
        n = xs[0].shape[0]
        half = n // 2
        pairs = _apply_values(jaxpr, [*(x[:half] for x in xs), *(x[half:2 * half] for x in xs)])
        xs = [np.concatenate([p, x[2 * half:]]) for p, x in zip(pairs, xs)]
    return xs


def _reduce_impl(*args: np.ndarray, computation: Any, jaxpr: Jaxpr,
                 dimensions: tuple[int, ...]) -> list[np.ndarray]:
    operands, inits = _split(args)
    perm, kept = _to_front(operands[0].shape, dimensions)
    n = math.prod(operands[0].shape[d] for d in dimensions)
    start = [np.full((1, *kept), i, dtype=i.dtype) for i in inits]
    if n == 0:
        return [s[0] for s in start]
    folded = _fold_values(jaxpr, [np.transpose(x, perm).reshape(n, *kept) for x in operands])
    # The init values enter once, first (as XLA's CPU loop starts from them).
    return [np.ascontiguousarray(x[0]) for x in _apply_values(jaxpr, [*start, *folded])]


# ---------------------------------------------------------------- autodiff

def _vmapped(fun: Callable[..., list[Any]], size: int) -> Callable[..., list[Any]]:
    def batched(*xs: Any) -> list[Any]:
        outs, dims = batch_flat(fun, AxisData(size), xs, [0] * len(xs), named=False)
        return [bdim_at_front(o, d, size) for o, d in zip(outs, dims)]
    return batched


def _apply_traced(jaxpr: Jaxpr, args: Sequence[Any]) -> list[Any]:
    """``jaxpr`` applied at every position of traced arrays of one shape:
    JAX's reducer under one vmap per axis."""
    def fun(*xs: Any) -> list[Any]:
        return eval_jaxpr(jaxpr, jaxpr.consts, *xs)

    applied: Callable[..., list[Any]] = fun
    for size in reversed(canonical_aval_of(args[0]).shape):
        applied = _vmapped(applied, size)
    return applied(*args)


def _traced_tree(jaxpr: Jaxpr, inits: Sequence[Any], dimensions: tuple[int, ...]
                 ) -> Callable[..., list[Any]]:
    def tree(*operands: Any) -> list[Any]:
        shape = canonical_aval_of(operands[0]).shape
        perm, kept = _to_front(shape, dimensions)
        n = math.prod(shape[d] for d in dimensions)
        if n == 0:
            return [full(tuple(kept), i) for i in inits]
        xs = [reshape(x, (n, *kept), dimensions=perm) for x in operands]
        zero_pads = [(0, 0, 0)] * len(kept)
        folded = _fold_tree(
            xs, inits, lambda *ab: _apply_traced(jaxpr, ab),
            lambda x, lo, hi: slice_in_dim(x, lo, hi),
            lambda x, i: pad(x, i, [(0, 1, 0), *zero_pads]))
        return [squeeze(x, (0,)) for x in folded]
    return tree


def _reduce_jvp(primals: list[Any], tangents: list[Any], *, computation: Any, jaxpr: Jaxpr,
                dimensions: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    operands, inits = _split(primals)
    d_operands, d_inits = _split(tangents)
    if any(type(t) is not Zero for t in d_inits):
        raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                                  "initial values to reduction not implemented")
    return jvp_flat(_traced_tree(jaxpr, inits, dimensions), operands, d_operands, named=False)


def _reduce_batch(axis: AxisData, args: list[Any], dims: list[Any], *, computation: Any,
                  jaxpr: Jaxpr, dimensions: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    operands, inits = _split(args)
    operand_dims, init_dims = _split(dims)
    if any(d is not None for d in init_dims):
        raise NotImplementedError("vmap of lax.reduce over batched initial values")
    fronted = [bdim_at_front(x, d, axis.size) for x, d in zip(operands, operand_dims)]
    outs = reduce_p.bind(*fronted, *inits, computation=computation, jaxpr=jaxpr,
                         dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * len(outs)


# ---------------------------------------------------------------- sharding

def _reduce_parts(mesh: AbstractMesh, *avals: ArrayType, computation: Any, jaxpr: Jaxpr,
                  dimensions: tuple[int, ...]) -> list[SK.Parts]:
    operands, _ = _split(avals)
    return [tuple(p for d, p in enumerate(SK.parts(x)) if d not in dimensions)
            for x in operands]


# ---------------------------------------------------------------- lowering

def _reduce_lowering(ctx: LoweringContext, operands: Sequence[str],
                     in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                     computation: Any, jaxpr: Jaxpr, dimensions: tuple[int, ...]) -> list[str]:
    _, init_avals = _split(in_avals)
    scalars = [ArrayType((), a.dtype) for a in init_avals]
    region = ctx.region([*scalars, *scalars], scalars,
                        lambda c, args: lower_body(c, jaxpr, args))
    dims = ", ".join(str(int(d)) for d in dimensions)
    return ctx.generic_op("stablehlo.reduce", operands, in_avals, out_avals,
                          properties=f"dimensions = array<i64{': ' + dims if dims else ''}>",
                          regions=[region])


class _AddressMasked:
    """The computation as JAX prints it: its address masked, so that jaxpr
    text is reproducible (``<function f at 0xXXXXXXXXXXXX>``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                      str(self.value))


def _reduce_pp(eqn: Any, ctx: Any) -> Any:
    return pp_eqn_default(eqn, ctx, {**eqn.params,
                                     "computation": _AddressMasked(eqn.params["computation"])})


reduce_p = declare(
    _NAME, typing=_reduce_type, impl=_reduce_impl, multiple_results=True,
    sharding=SK.section(_NAME, _reduce_parts), jvp=_reduce_jvp,
    transpose=not_applicable("a reduction with a general computation is not linear; "
                             "its JVP is written with other primitives"),
    batch=_reduce_batch, lowering=_reduce_lowering, pp_rule=_reduce_pp,
    doc="XLA's variadic Reduce with a computation given as a jaxpr.")


# ------------------------------------------------------------ lax wrapper

def _identity(kind: str, dtype: np.dtype[Any]) -> Any:
    if kind in ("sum", "or", "xor"):
        return np.zeros((), dtype)
    if kind == "prod":
        return np.ones((), dtype)
    if kind == "and":
        return np.array(-1).astype(dtype)
    if dtype == T.bool_:
        return np.array(kind == "min")
    if T.is_int(dtype):
        info = np.iinfo(dtype)
        return np.array(info.min if kind == "max" else info.max, dtype)
    return np.array(-np.inf if kind == "max" else np.inf, dtype)


_MONOIDS: dict[int, tuple[str, Callable[..., Any], bool]] = {
    id(E.add): ("sum", R.reduce_sum, False), id(E.mul): ("prod", R.reduce_prod, False),
    id(E.max): ("max", R.reduce_max, False), id(E.min): ("min", R.reduce_min, False),
    id(E.bitwise_or): ("or", R.reduce_or, True), id(E.bitwise_and): ("and", R.reduce_and, True),
    id(E.bitwise_xor): ("xor", R.reduce_xor, True),
}


def _monoid_reducer(computation: Any, inits: Sequence[Any]) -> Callable[..., Any] | None:
    """The reduce_<monoid> wrapper JAX binds for ``computation`` started
    from its identity, or None."""
    entry = _MONOIDS.get(id(computation))
    if entry is None or len(inits) != 1 or isinstance(inits[0], Tracer):
        return None
    kind, reducer, int_like_only = entry
    value = np.asarray(inits[0])
    dtype = canonical_aval_of(inits[0]).dtype
    if value.shape != () or (int_like_only and not (dtype == T.bool_ or T.is_int(dtype))):
        return None
    return reducer if bool(np.equal(value, _identity(kind, np.dtype(dtype)))) else None


def _computation_jaxpr(computation: Callable[..., Any], init_avals: list[ArrayType],
                       init_tree: Any) -> tuple[Jaxpr, Any]:
    """``computation`` staged on scalars (accumulated, next), flattened."""
    n = len(init_avals)
    out_tree: list[Any] = []

    def flat(*xs: Any) -> list[Any]:
        a = tree_util.tree_unflatten(init_tree, list(xs[:n]))
        b = tree_util.tree_unflatten(init_tree, list(xs[n:]))
        leaves, tree = tree_util.tree_flatten(computation(a, b))
        out_tree.append(tree)
        return [asarray(x) for x in leaves]

    scalars = [ArrayType((), a.dtype, a.weak_type) for a in init_avals]
    jaxpr, _ = trace_to_jaxpr(flat, [*scalars, *scalars])
    if any(isinstance(c, Tracer) for c in jaxpr.consts):
        raise NotImplementedError("Reduction computations can't close over Tracers. Please "
                                  "open an issue at https://github.com/jax-ml/jax.")
    if out_tree[0] != init_tree:
        raise TypeError(f"reduction computation must return the structure of init_values "
                        f"{init_tree}, got {out_tree[0]}")
    return jaxpr, out_tree[0]


def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any],
           dimensions: Sequence[int], out_sharding: Any = None) -> Any:
    """Fold ``operands`` (a pytree of arrays of one shape) over
    ``dimensions`` with ``computation`` from ``init_values`` (a pytree of
    scalars of the same structure); see the module docstring."""
    flat_operands, operand_tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if operand_tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{operand_tree} vs. {init_tree}")
    if len(flat_operands) != len(flat_inits):
        raise ValueError("Must have same total number of operands as init_values: "
                         f" {len(flat_operands)} vs. {len(flat_inits)}")
    dims = tuple(int(d) for d in dimensions)
    reducer = _monoid_reducer(computation, flat_inits)
    if reducer is not None:
        weak = all(canonical_aval_of(x).weak_type for x in (*flat_operands, *flat_inits))
        if out_sharding is not None and reducer is not R.reduce_sum:
            raise NotImplementedError
        kwargs = {} if out_sharding is None else {"out_sharding": out_sharding}
        out = reducer(flat_operands[0], dims, **kwargs)
        aval = canonical_aval_of(out)
        return _convert_element_type(out, aval.dtype, weak)
    init_avals = [canonical_aval_of(x) for x in flat_inits]
    jaxpr, out_tree = _computation_jaxpr(computation, init_avals, init_tree)
    outs = reduce_p.bind(*[asarray(x) for x in flat_operands], *[asarray(x) for x in flat_inits],
                         computation=computation, jaxpr=jaxpr, dimensions=dims)
    return tree_util.tree_unflatten(out_tree, outs)


__all__ = ["reduce", "reduce_p"]
