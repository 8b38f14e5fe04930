"""Custom-derivative primitives: ``custom_jvp_call``, ``custom_vjp_call`` and
the linear ``custom_lin``.

``custom_jvp_call`` and ``custom_vjp_call`` evaluate a sub-jaxpr
(``call_jaxpr``: the user's function, whose closed-over values were turned
into its first ``num_consts`` inputs) and carry the user's derivative rules
as opaque callables in their params (built by ``spec._src.api.custom_derivatives``):

- ``jvp_jaxpr_fun(primals, tangents) -> (primal_outs, tangent_outs)``;
- ``fwd_jaxpr_thunk(primals, nonzeros) -> (residuals, primal_outs)``;
- ``bwd(residuals, cts_out) -> cts_in`` (``Zero`` for inputs given none).

All take and return flat lists without the consts. The JVP of
``custom_jvp_call`` runs the user's rule; the JVP of ``custom_vjp_call``
runs ``fwd`` and applies ``custom_lin`` (linear in the tangents, reading the
residuals), whose transpose runs ``bwd``. ``custom_lin`` cannot be evaluated
or differentiated in forward mode: that is where a forward-mode derivative of
a ``custom_vjp`` function fails, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.interpreters import ad, batching
from spec._src.interpreters.batching import AxisData
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero
from spec._src.interpreters.ad_util import zeros_like_aval as laid_out_zeros
from spec._src.core.errors import UnexpectedTracerError
from spec._src.core.interpreter import (
    Eqn,
    Jaxpr,
    PpContext,
    Tracer,
    canonical_aval_of,
    dce_sub_jaxpr,
    eval_jaxpr,
    eval_jaxpr_values,
    not_applicable,
    pp_eqn_default,
    sharding_of_call,
    trace_to_jaxpr,
)
from spec._src.core import tree_util
from spec._src.lowering.emitter import (
    LoweringContext,
    element_type,
    lower_body,
    symbol_text,
    tensor_type,
)
from spec._src.core.registry import declare, primitive, require
from spec._src.lowering import control as CL
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.core.interpreter import from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.lax.calls import call_effects
from spec._src.lax.reductions import reduce_sum
from spec._src.lax.shaping import _convert_element_type, broadcast
from spec._src.core.interpreter import VMA_FROM_TYPING


class SymbolicZero:
    """A zero tangent (or cotangent) passed to a custom rule declared with
    ``symbolic_zeros=True``, in place of a materialised array: the input is not
    being differentiated. Rules may also return one for a zero output."""

    __slots__ = ("aval",)

    def __init__(self, aval: ArrayType) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return "SymbolicZero"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.aval.shape, dtype=np.int64))

    @staticmethod
    def from_primal_value(x: Any) -> SymbolicZero:
        return SymbolicZero(canonical_aval_of(x).tangent_type())


def rule_name(f: Any) -> str:
    """The name a rule prints under: a function's ``__name__`` (through
    ``functools.partial``), else its ``str``."""
    while hasattr(f, "func") and not hasattr(f, "__name__"):
        f = f.func
    return str(getattr(f, "__name__", f))


FORWARD_MODE_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."

# ------------------------------------------------------------------ typing


def _call_type(prim: str, avals: Sequence[ArrayType], jaxpr: Jaxpr,
               num_consts: int) -> list[ArrayType]:
    expected = jaxpr.in_avals
    require(len(avals) == len(expected), prim, "C1",
            f"called with {len(avals)} operands, call_jaxpr takes {len(expected)}")
    require(0 <= num_consts <= len(avals), prim, "C2",
            f"num_consts={num_consts} is not between 0 and the {len(avals)} operands")
    for i, (got, want) in enumerate(zip(avals, expected)):
        require(got.shape == want.shape and got.dtype == want.dtype, prim, "C3",
                f"operand {i} has type {got}, call_jaxpr expects {want}")
    return list(jaxpr.out_avals)


def _custom_jvp_call_type(*avals: ArrayType, call_jaxpr: Jaxpr, num_consts: int,
                          **params: Any) -> list[ArrayType]:
    return _call_type("custom_jvp_call", avals, call_jaxpr, num_consts)


def _custom_vjp_call_type(*avals: ArrayType, call_jaxpr: Jaxpr, num_consts: int,
                          **params: Any) -> list[ArrayType]:
    return _call_type("custom_vjp_call", avals, call_jaxpr, num_consts)


def _call_impl(*args: np.ndarray, call_jaxpr: Jaxpr, **params: Any) -> Sequence[np.ndarray]:
    # Closed-over values are operands (num_consts of them), so the jaxpr has none.
    return eval_jaxpr_values(call_jaxpr, [], args)


# ---------------------------------------------------------------- printing


def _pp_call(eqn: Eqn, ctx: PpContext, hidden: Sequence[str], shown: dict[str, Any],
             rule: Any) -> Any:
    """``name=`` (the user's function) first, the rest sorted; the rules by
    name; ``num_consts`` only when nonzero."""
    params = {k: v for k, v in eqn.params.items() if k not in hidden}
    if not params.get("num_consts"):
        params.pop("num_consts", None)
    params.update(shown)
    name = getattr(rule, "fun_name", "<unknown>")
    ordered = {"name": name, **{k: params[k] for k in sorted(params)}}
    return pp_eqn_default(eqn, ctx, ordered, sort=False)


def _pp_custom_jvp_call(eqn: Eqn, ctx: PpContext) -> Any:
    rule = eqn.params["jvp_jaxpr_fun"]
    return _pp_call(eqn, ctx, ("jvp_jaxpr_fun",), {"jvp": rule_name(rule)}, rule)


def _pp_custom_vjp_call(eqn: Eqn, ctx: PpContext) -> Any:
    fwd, bwd = eqn.params["fwd_jaxpr_thunk"], eqn.params["bwd"]
    return _pp_call(eqn, ctx, ("fwd_jaxpr_thunk", "bwd", "out_trees"),
                    {"fwd": rule_name(fwd), "bwd": rule_name(bwd)}, fwd)


def _pp_custom_lin(eqn: Eqn, ctx: PpContext) -> Any:
    params = {k: v for k, v in eqn.params.items() if k != "out_avals"}
    params["bwd"] = rule_name(params["bwd"])
    params["in_zeros"] = list(params["in_zeros"])  # JAX's param is a list
    return pp_eqn_default(eqn, ctx, params)


# ---------------------------------------------------------------- autodiff


def _check_no_const_tangents(prim: str, tangents: Sequence[Any], num_consts: int) -> None:
    """Differentiating with respect to a value the function closes over is not
    supported (JAX fails on it too: the rule knows nothing of such inputs)."""
    for t in tangents[:num_consts]:
        if type(t) is not Zero:
            raise UnexpectedTracerError(
                f"Encountered an unexpected tracer: a {prim.split('_call')[0]} function "
                f"closes over a value of type {t.aval if hasattr(t, 'aval') else '?'} "
                "that is being differentiated. Custom derivative rules only say how to "
                "differentiate with respect to the function's arguments: pass the value "
                "as an argument instead of closing over it.")


def zeros_like_aval(aval: ArrayType) -> Any:
    """A materialised zero of type ``aval``, weak type included (as JAX's);
    float0 zeros are NumPy arrays."""
    if aval.dtype == FLOAT0:
        return np.zeros(aval.shape, FLOAT0)
    if aval.sharding is not None:  # laid out as the type says
        return laid_out_zeros(aval)
    return broadcast(_convert_element_type(0, aval.dtype, aval.weak_type), aval.shape)


def _to_rule_tangent(t: Any, symbolic_zeros: bool) -> Any:
    if type(t) is not Zero:
        return t
    return SymbolicZero(t.aval) if symbolic_zeros else zeros_like_aval(t.aval)


def _from_rule_tangent(t: Any) -> Any:
    return Zero(t.aval) if type(t) is SymbolicZero else t


def _custom_jvp_call_jvp(primals: list[Any], tangents: list[Any], *, call_jaxpr: Jaxpr,
                         jvp_jaxpr_fun: Any, num_consts: int,
                         symbolic_zeros: bool) -> tuple[list[Any], list[Any]]:
    _check_no_const_tangents("custom_jvp_call", tangents, num_consts)
    args = primals[num_consts:]
    ts = [_to_rule_tangent(t, symbolic_zeros) for t in tangents[num_consts:]]
    p_outs, t_outs = jvp_jaxpr_fun(args, ts)
    return list(p_outs), [_from_rule_tangent(t) for t in t_outs]


def _custom_jvp_call_transpose(cts: list[Any], *args: Any, call_jaxpr: Jaxpr,
                               **params: Any) -> list[Any]:
    """A custom_jvp function used linearly (its rule applied it to tangents)
    transposes as its own body."""
    return ad.backward_pass(call_jaxpr, [], list(args), cts)


def _custom_vjp_call_jvp(primals: list[Any], tangents: list[Any], *, call_jaxpr: Jaxpr,
                         fwd_jaxpr_thunk: Any, num_consts: int, bwd: Any, out_trees: Any,
                         symbolic_zeros: bool) -> tuple[list[Any], list[Any]]:
    _check_no_const_tangents("custom_vjp_call", tangents, num_consts)
    args = primals[num_consts:]
    ts = tangents[num_consts:]
    nonzero = [type(t) is not Zero for t in ts]
    residuals, p_outs = fwd_jaxpr_thunk(args, nonzero)
    out_avals = tuple(canonical_aval_of(p).tangent_type() for p in p_outs)
    t_outs = custom_lin_p.bind(
        *residuals, *(t for t in ts if type(t) is not Zero), num_res=len(residuals), bwd=bwd,
        out_avals=out_avals, symbolic_zeros=symbolic_zeros,
        in_zeros=tuple(not nz for nz in nonzero))
    return list(p_outs), list(t_outs)


def _custom_lin_sharding(*avals: ArrayType, out_avals: tuple[ArrayType, ...],
                         **params: Any) -> list[Any]:
    """The tangent outputs' types were recorded when linearizing: their
    shardings with them."""
    return [a.sharding for a in out_avals]


def _custom_lin_type(*avals: ArrayType, num_res: int, out_avals: tuple[ArrayType, ...],
                     in_zeros: tuple[bool, ...], **params: Any) -> list[ArrayType]:
    n_tangents = sum(not z for z in in_zeros)
    require(len(avals) == num_res + n_tangents, "custom_lin", "C1",
            f"called with {len(avals)} operands, expected num_res={num_res} residuals and "
            f"{n_tangents} tangents")
    return list(out_avals)


def _custom_lin_impl(*args: Any, **params: Any) -> Sequence[np.ndarray]:
    raise TypeError(FORWARD_MODE_ERROR)


def _custom_lin_jvp(primals: list[Any], tangents: list[Any],
                    **params: Any) -> tuple[list[Any], list[Any]]:
    raise TypeError(FORWARD_MODE_ERROR)


def _custom_lin_transpose(cts: list[Any], *invals: Any, num_res: int, bwd: Any,
                          out_avals: tuple[ArrayType, ...], symbolic_zeros: bool,
                          in_zeros: tuple[bool, ...]) -> list[Any]:
    residuals = list(invals[:num_res])
    cts_out = [_to_rule_tangent(c, symbolic_zeros) for c in cts]
    cts_in = bwd(residuals, cts_out)
    nonzero_cts = [ct for ct, z in zip(cts_in, in_zeros) if not z]
    undefined = [type(a) is UndefinedPrimal for a in invals[num_res:]]
    return [None] * num_res + [ct if u else None for ct, u in zip(nonzero_cts, undefined)]


# ---------------------------------------------------------------- batching
# A custom rule is per-example code: batched, it runs under vmap itself. The
# function's outputs (and the rule's) are batched where the function's batched
# jaxpr naturally puts them (at 0 for one that does not vary); residuals
# keep the axes the batched forward pass gives them; a cotangent for an
# input that was not batched is summed over the batch.


def _per_example(t: Any, d: Any) -> Any:
    """A symbolic zero of a batched value, as the rule sees it per example."""
    if isinstance(t, SymbolicZero) and d is not None:
        return SymbolicZero(batching.unbatched_aval(t.aval, d))
    return t


def _is_array_like(t: Any) -> bool:
    return not isinstance(t, (SymbolicZero, Zero)) and t is not None


def _sum_out(x: Any, d: Any) -> Any:
    """A per-example cotangent of an unbatched input: summed over the batch."""
    if d is None:
        return x
    return reduce_sum(x, (d,))


class _NamedRule:
    """A batched rule that prints (and names its function) as the user's rule
    it wraps, as JAX's batched rules do."""

    def __init__(self, fn: Any, like: Any) -> None:
        self.fn = fn
        self.__name__ = rule_name(like)
        self.fun_name = getattr(like, "fun_name", "<unknown>")

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def _call_out_dims(call_jaxpr: Jaxpr, axis: AxisData, dims: list[Any]
                   ) -> tuple[Jaxpr, list[Any]]:
    """The call's jaxpr batched with its outputs where they naturally come
    out (as JAX); an output that does not depend on the batch is broadcast at
    0 anyway, since the rule run under vmap may give a batched value for it."""
    new_call, natural = batching.batch_jaxpr(call_jaxpr, axis, dims)
    if None not in natural:
        return new_call, natural
    wanted: list[Any] = [0 if d is None else d for d in natural]
    new_call, _ = batching.batch_jaxpr(call_jaxpr, axis, dims, wanted)
    return new_call, wanted


def _merged_dim(primal: Any, tangent: Any) -> Any:
    """Where a primal output and its tangent both go: the batched one's axis
    (the primal's if both are); unbatched when neither is."""
    return tangent if primal is None else primal


def batched_jvp_rule(rule: Any, axis: AxisData, arg_dims: list[Any],
                     out_dims: list[Any]) -> Any:
    """A flat JVP rule run per example on arguments batched at ``arg_dims``;
    its primal and tangent outputs are moved to ``out_dims``, which, when
    empty (the function itself has not run), the rule's own outputs fill."""
    def batched_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        live = [_is_array_like(t) for t in tangents]
        vals = [*primals, *(t for t, a in zip(tangents, live) if a)]
        vdims = [*arg_dims, *(d for d, a in zip(arg_dims, live) if a)]
        n = len(primals)

        def per_example(*xs: Any) -> list[Any]:
            it = iter(xs[n:])
            ts = [next(it) if a else _per_example(t, d)
                  for t, a, d in zip(tangents, live, arg_dims)]
            p_out, t_out = rule(list(xs[:n]), ts)
            return [*p_out, *t_out]

        outs, dims = batching.batch_flat(per_example, axis, vals, vdims, named=False)
        n_out = len(outs) // 2
        if not out_dims:
            out_dims[:] = [_merged_dim(p, t) for p, t in zip(dims[:n_out], dims[n_out:])]
        moved = [batching.match_axis(axis, o, d, w)
                 for o, d, w in zip(outs, dims, out_dims * 2)]
        return moved[:n_out], moved[n_out:]

    return _NamedRule(batched_jvp, rule)


def _custom_jvp_call_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                           call_jaxpr: Jaxpr, jvp_jaxpr_fun: Any, num_consts: int,
                           symbolic_zeros: bool) -> tuple[list[Any], list[Any]]:
    new_call, out_dims = _call_out_dims(call_jaxpr, axis, dims)
    rule = batched_jvp_rule(jvp_jaxpr_fun, axis, list(dims[num_consts:]), list(out_dims))
    outs = custom_jvp_call_p.bind(*args, call_jaxpr=new_call, jvp_jaxpr_fun=rule,
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros)
    return list(outs), out_dims


def _batched_bwd(bwd: Any, axis: AxisData, res_dims: list[Any], ct_dims: list[Any],
                 in_dims: list[Any]) -> Any:
    """``bwd`` run per example: residuals at ``res_dims``, cotangents at
    ``ct_dims``; input cotangents returned at ``in_dims`` (summed over the
    batch for unbatched inputs)."""
    def batched(residuals: list[Any], cts: list[Any]) -> list[Any]:
        live = [_is_array_like(c) for c in cts]
        vals = [*residuals, *(c for c, a in zip(cts, live) if a)]
        vdims = [*res_dims, *(d for d, a in zip(ct_dims, live) if a)]
        r = len(residuals)
        zero_slots: list[bool] = []

        def per_example(*xs: Any) -> list[Any]:
            it = iter(xs[r:])
            cs = [next(it) if a else _per_example(c, d) for c, a, d in zip(cts, live, ct_dims)]
            outs = list(bwd(list(xs[:r]), cs))
            zero_slots[:] = [not _is_array_like(o) for o in outs]
            return [o for o in outs if _is_array_like(o)]

        # The rule's logs come out batched at 0, as JAX's batched rules give them.
        logged = ad.LoggedBody()
        arrays, out_dims = batching.batch_flat(logged.wrap(per_example), axis, vals, vdims)
        n_logs = logged.num_leaves
        kept_dims = [d for d, z in zip(in_dims, zero_slots) if not z] + [0] * n_logs
        moved_all = [batching.match_axis(axis, o, d, w) if w is not None else
                     _sum_out(o, d) for o, d, w in zip(arrays, out_dims, kept_dims)]
        moved_cts, logs = logged.split(moved_all)
        ad.add_logs(logs, f"the custom_vjp rule {rule_name(bwd)}")
        moved = iter(moved_cts)
        return [None if z else next(moved) for z in zero_slots]

    return batched


def batched_vjp_rules(fwd: Any, bwd: Any, axis: AxisData, arg_dims: list[Any],
                      out_dims: list[Any]) -> tuple[Any, Any]:
    """Flat fwd and bwd rules run per example on arguments batched at
    ``arg_dims``: fwd's primal outputs are moved to ``out_dims`` (filled from
    its own outputs, unbatched ones at 0, when empty); its residuals keep the
    axes the batched forward pass gives them, which bwd then reads."""
    res_dims: list[Any] = []

    def batched_fwd(primals: list[Any], nonzero: list[bool]) -> tuple[list[Any], list[Any]]:
        n_res: list[int] = []

        def per_example(*xs: Any) -> list[Any]:
            residuals, p_outs = fwd(list(xs), nonzero)
            n_res[:] = [len(residuals)]
            return [*residuals, *p_outs]

        outs, dims_out = batching.batch_flat(per_example, axis, list(primals), arg_dims)
        r = n_res[0]
        res_dims[:] = dims_out[:r]
        if not out_dims:
            out_dims[:] = [0 if d is None else d for d in dims_out[r:]]
        p_outs = [batching.match_axis(axis, o, d, w) for o, d, w in
                  zip(outs[r:], dims_out[r:], out_dims)]
        return outs[:r], p_outs

    def lazy_bwd(residuals: list[Any], cts: list[Any]) -> list[Any]:
        # The residuals' axes are known once the batched forward pass ran.
        run = _batched_bwd(bwd, axis, list(res_dims), list(out_dims), arg_dims)
        return list(run(residuals, cts))

    return _NamedRule(batched_fwd, fwd), _NamedRule(lazy_bwd, bwd)


def _custom_vjp_call_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                           call_jaxpr: Jaxpr, fwd_jaxpr_thunk: Any, num_consts: int,
                           bwd: Any, out_trees: Any, symbolic_zeros: bool
                           ) -> tuple[list[Any], list[Any]]:
    new_call, out_dims = _call_out_dims(call_jaxpr, axis, dims)
    fwd_b, bwd_b = batched_vjp_rules(fwd_jaxpr_thunk, bwd, axis, list(dims[num_consts:]),
                                     list(out_dims))
    outs = custom_vjp_call_p.bind(*args, call_jaxpr=new_call, fwd_jaxpr_thunk=fwd_b,
                                  num_consts=num_consts, bwd=bwd_b, out_trees=out_trees,
                                  symbolic_zeros=symbolic_zeros)
    return list(outs), out_dims


def _custom_lin_batch(axis: AxisData, args: list[Any], dims: list[Any], *, num_res: int,
                      bwd: Any, out_avals: tuple[ArrayType, ...], symbolic_zeros: bool,
                      in_zeros: tuple[bool, ...]) -> tuple[list[Any], list[Any]]:
    """The tangent map batched: its transpose runs ``bwd`` per example, with
    the output cotangents at axis 0 and input cotangents at the tangents' axes."""
    res_dims = list(dims[:num_res])
    # Every tangent at axis 0 (an unmapped one broadcast), so the input
    # cotangents the transpose returns are there too.
    moved = [*args[:num_res], *(batching.match_axis(axis, t, d, 0)
                                for t, d in zip(args[num_res:], dims[num_res:]))]
    in_dims: list[Any] = [None if z else 0 for z in in_zeros]
    batched_avals = tuple(batching.batched_aval(a, 0, axis.size, axis.explicit_mesh_axis)
                          for a in out_avals)
    outs = custom_lin_p.bind(
        *moved, num_res=num_res,
        bwd=_batched_bwd(bwd, axis, res_dims, [0] * len(out_avals), in_dims),
        out_avals=batched_avals, symbolic_zeros=symbolic_zeros, in_zeros=in_zeros)
    return list(outs), [0] * len(out_avals)


# --------------------------------------------------------------- declaring

# Refs pass through custom rules as plumbing: a custom_vjp function may take
# refs (not differentiated), and its fwd rule may return ref arguments as
# residuals, which the bwd rule then writes (JAX's special allowance): all
# three declare ``accepts_refs``.
custom_jvp_call_p = declare(
    "custom_jvp_call", lowering=CL.inline("call_jaxpr"),
    typing=_custom_jvp_call_type, impl=_call_impl, multiple_results=True,
    pp_rule=_pp_custom_jvp_call, jvp=_custom_jvp_call_jvp,
    transpose=_custom_jvp_call_transpose, batch=_custom_jvp_call_batch,
    sharding=sharding_of_call("call_jaxpr"),
    doc="A function with a user-defined JVP rule.",
    accepts_refs=True, per_device=from_primitive(PD.call_program("call_jaxpr")),
    vma_rule=VMA_FROM_TYPING)

custom_vjp_call_p = declare(
    "custom_vjp_call", lowering=CL.inline("call_jaxpr"),
    typing=_custom_vjp_call_type, impl=_call_impl, multiple_results=True,
    pp_rule=_pp_custom_vjp_call, jvp=_custom_vjp_call_jvp,
    transpose=not_applicable("custom_vjp_call is not linear: its JVP emits custom_lin"),
    batch=_custom_vjp_call_batch, sharding=sharding_of_call("call_jaxpr"),
    doc="A function with user-defined forward and backward passes.",
    accepts_refs=True, per_device=from_primitive(PD.call_program("call_jaxpr")),
    vma_rule=VMA_FROM_TYPING)

custom_lin_p = declare(
    "custom_lin", lowering=not_applicable(
        "custom_lin exists only between linearize and transpose, which replaces it by the "
        "bwd rule; JAX has no lowering for it either (lowering one raises "
        "NotImplementedError)"),
    typing=_custom_lin_type, impl=_custom_lin_impl, multiple_results=True,
    pp_rule=_pp_custom_lin, jvp=_custom_lin_jvp, transpose=_custom_lin_transpose,
    batch=_custom_lin_batch,
    sharding=_custom_lin_sharding,
    doc="The tangent map of a custom_vjp function: transposes to its bwd rule.",
    accepts_refs=True,
    vma_rule=VMA_FROM_TYPING)


__all__ = ["FORWARD_MODE_ERROR", "SymbolicZero", "batched_jvp_rule", "batched_vjp_rules",
           "custom_jvp_call_p", "custom_lin_p", "custom_vjp_call_p", "rule_name",
           "zeros_like_aval"]


# ================================================================ composite
# A named function XLA may implement natively: the call runs (and lowers to) its
# decomposition. JAX defines no JVP, transpose or batching rule for it.

def _composite_type(*avals: ArrayType, name: str, attributes: Any, version: int,
                    call_jaxpr: Jaxpr) -> list[ArrayType]:
    require([ArrayType(a.shape, a.dtype) for a in avals]
            == [ArrayType(a.shape, a.dtype) for a in call_jaxpr.in_avals], "composite", "C1",
            f"composite {name} operands {list(avals)} do not match its decomposition's "
            f"inputs {call_jaxpr.in_avals}")
    return list(call_jaxpr.out_avals)


def _composite_jvp(primals: list[Any], tangents: list[Any], **params: Any
                   ) -> tuple[list[Any], list[Any]]:
    raise ValueError("JVP rule for composite not implemented. You can use `jax.custom_jvp` to "
                     "add support. See "
                     "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


def _composite_transpose(ct: Any, *args: Any, **params: Any) -> list[Any]:
    raise ValueError("Transpose rule for composite not implemented. You can use"
                     "`jax.custom_jvp` or `jax.custom_vjp` to add support. See "
                     "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


def _composite_batch(axis: AxisData, args: list[Any], dims: list[Any], **params: Any
                     ) -> tuple[list[Any], list[Any]]:
    raise NotImplementedError("Batching rule for 'composite' not implemented")


def _attribute_text(value: Any, nested: bool = False) -> str:
    """A composite attribute as MLIR writes it (JAX's ``ir_attribute``): numbers
    typed i64/f64 at the top level and bare inside arrays, sequences as arrays,
    dtypes as their element types."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return f"{int(value)}" + ("" if nested else " : i64")
    if isinstance(value, (float, np.floating)):
        return f"{float(value):e}" + ("" if nested else " : f64")
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_attribute_text(v, True) for v in value) + "]"
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return element_type(np.dtype(value))
    raise NotImplementedError(f"lowering a composite attribute of type {type(value)} "
                              "(bool, int, float, str, sequences and dtypes) is not specified")


def _composite_lowering(ctx: LoweringContext, operands: Sequence[str],
                        in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                        name: str, attributes: Any, version: int,
                        call_jaxpr: Jaxpr) -> list[str]:
    """``stablehlo.composite "name"`` of the operands, its decomposition a
    private function named ``name`` (JAX's lowering)."""
    def body(c: LoweringContext, args: list[str]) -> list[str]:
        return lower_body(c, call_jaxpr, args)
    with ctx.detached():
        symbol = ctx.function(name, in_avals, out_avals, body)
    values = {k: tree_util.tree_unflatten(tree, list(leaves)) for k, leaves, tree in attributes}
    shown = [f"{k} = {_attribute_text(v)}" for k, v in sorted(values.items()) if v is not None]
    props = [f"composite_attributes = {{{', '.join(shown)}}}"] if shown else []
    props.append(f"decomposition = @{symbol_text(symbol)}")
    if version:
        props.append(f"version = {int(version)} : i32")
    ins = ", ".join(tensor_type(a) for a in in_avals)
    outs = ", ".join(tensor_type(a) for a in out_avals)
    result = outs if len(out_avals) == 1 else f"({outs})"
    return ctx.results(f'stablehlo.composite "{name}" {", ".join(operands)} '
                       f"{{{', '.join(props)}}} : ({ins}) -> {result}", len(out_avals))


composite_p = declare(
    "composite", typing=_composite_type, impl=_call_impl, multiple_results=True,
    jvp=_composite_jvp, transpose=_composite_transpose, batch=_composite_batch,
    sharding=sharding_of_call("call_jaxpr"), lowering=_composite_lowering,
    per_device=from_primitive(PD.call_program("call_jaxpr")),
    doc="A named function with its decomposition (XLA's composite op)")


def composite(decomposition: Callable[..., Any], name: str, version: int = 0
              ) -> Callable[..., Any]:
    """``decomposition`` as one ``composite`` equation named ``name``: its
    keyword arguments are the op's attributes (static), its positional ones
    the operands; the call runs the decomposition."""
    @functools.wraps(decomposition)
    def decorated(*args: Any, **kwargs: Any) -> Any:
        flat_args, in_tree = tree_util.tree_flatten(args)
        if any(isinstance(v, Tracer) for v in kwargs.values()):
            raise UnexpectedTracerError(
                "Found a JAX Tracer as an attribute in the decomposition for the "
                f"composite op '{name}'. This means that the decomposition function "
                "closes over a value that is involved in a JAX transformation. "
                "Any values that aren't explicitly known at compile time must be "
                "explicitly passed as arguments to the composite."
                "\n\nNote: If you are passing jax arrays as attributes, use numpy "
                "arrays instead.")
        out_trees: list[Any] = []

        def flat_fun(*flat: Any) -> list[Any]:
            leaves, tree = tree_util.tree_flatten(
                decomposition(*tree_util.tree_unflatten(in_tree, list(flat)), **kwargs))
            out_trees.append(tree)
            return leaves
        traced, _ = trace_to_jaxpr(flat_fun, [canonical_aval_of(x) for x in flat_args])
        if any(isinstance(c, Tracer) for c in traced.consts):
            raise UnexpectedTracerError(
                "Found a JAX Tracer as a constant in the decomposition for the "
                f"composite op '{name}'. This means that the decomposition function "
                "closes over a value that is involved in a JAX transformation. "
                "Any values that aren't explicitly known at compile time must be "
                "explicitly passed as arguments to the composite.")
        # The decomposition's constants become its leading inputs.
        call_jaxpr = Jaxpr([], [*traced.constvars, *traced.invars], traced.outvars,
                           traced.eqns, traced.effects)
        attributes = tuple((k, tuple(leaves), tree) for k, (leaves, tree) in
                           ((k, tree_util.tree_flatten(v)) for k, v in kwargs.items()))
        outs = composite_p.bind(*traced.consts, *flat_args, name=name, attributes=attributes,
                                version=version, call_jaxpr=call_jaxpr)
        return tree_util.tree_unflatten(out_trees[0], list(outs))
    return decorated


__all__ += ["composite", "composite_p"]


# ============================================================== linear_call
# A function linear in its last operands, with its transpose given by the user: the
# call runs ``callee`` (its constants first, then the residuals, then the linear
# operands); its JVP is the same call on the tangents, and its transpose the call of
# the transpose function (traced when first needed) on the cotangents, whose own
# transpose is ``callee`` again. JAX defines no batching rule for it.


def _linear_call_type(*avals: ArrayType, callee: Jaxpr, transpose_thunk: Any,
                      num_callee_consts: int, num_res: int) -> list[ArrayType]:
    require(num_callee_consts + num_res <= len(avals), "linear_call", "C2",
            f"num_callee_consts={num_callee_consts} and num_res={num_res} exceed the "
            f"{len(avals)} operands")
    return _call_type("linear_call", avals, callee, 0)


def _linear_call_impl(*args: np.ndarray, callee: Jaxpr, **params: Any
                      ) -> Sequence[np.ndarray]:
    return eval_jaxpr_values(callee, [], args)


def _linear_call_jvp(primals: list[Any], tangents: list[Any], *, callee: Jaxpr,
                     transpose_thunk: Any, num_callee_consts: int, num_res: int
                     ) -> tuple[list[Any], list[Any]]:
    """The call again on the linear operands' tangents (constants and residuals must
    have none: JAX asserts it)."""
    k = num_callee_consts + num_res
    if not all(type(t) is Zero for t in tangents[:k]):
        raise AssertionError("linear_call: its constants and residuals are not "
                             "differentiable (a tangent reached one)")
    params = dict(callee=callee, transpose_thunk=transpose_thunk,
                  num_callee_consts=num_callee_consts, num_res=num_res)
    outs = linear_call_p.bind(*primals, **params)
    lin = [zeros_like_aval(t.aval) if type(t) is Zero else t for t in tangents[k:]]
    return list(outs), list(linear_call_p.bind(*primals[:k], *lin, **params))


def _linear_call_transpose_rule(cts: list[Any], *args: Any, callee: Jaxpr,
                                transpose_thunk: Any, num_callee_consts: int, num_res: int
                                ) -> list[Any]:
    transpose, t_consts = transpose_thunk()
    f_consts = list(args[:num_callee_consts])
    residuals = list(args[num_callee_consts:num_callee_consts + num_res])
    ct_avals = transpose.in_avals[len(t_consts) + num_res:]

    def new_transpose_thunk() -> tuple[Jaxpr, list[Any]]:
        return callee, f_consts

    cts = [zeros_like_aval(a) if type(ct) is Zero else ct for ct, a in zip(cts, ct_avals)]
    cts_out = linear_call_p.bind(*t_consts, *residuals, *cts, callee=transpose,
                                 transpose_thunk=new_transpose_thunk,
                                 num_callee_consts=len(t_consts), num_res=num_res)
    return [None] * (num_callee_consts + num_res) + list(cts_out)


def _linear_call_batch(axis: AxisData, args: list[Any], dims: list[Any], **params: Any
                       ) -> tuple[list[Any], list[Any]]:
    raise NotImplementedError("Batching rule for 'linear_call' not implemented")


def _pp_linear_call(eqn: Eqn, ctx: PpContext) -> Any:
    params = dict(eqn.params)
    params["transpose_thunk"] = _MaskedAddress(params["transpose_thunk"])
    return pp_eqn_default(eqn, ctx, params)


class _MaskedAddress:
    """A function param shown as JAX shows it, its address masked
    (``<function f at 0xXXXXXXXXXXXX>``), so that jaxpr text is reproducible."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        text = str(self.value)
        at = text.rfind(" at 0x")
        if at < 0:
            return text
        digits = len(text) - at - len(" at 0x") - 1  # (the closing '>')
        return text[:at] + " at 0x" + "X" * digits + ">"


linear_call_p = declare(
    "linear_call", typing=_linear_call_type, impl=_linear_call_impl, multiple_results=True,
    jvp=_linear_call_jvp, transpose=_linear_call_transpose_rule, batch=_linear_call_batch,
    sharding=sharding_of_call("callee"), lowering=CL.inline("callee"), pp_rule=_pp_linear_call,
    per_device=from_primitive(PD.call_program("callee")),
    doc="A call linear in its last operands, with a user-given transpose")

__all__ += ["linear_call_p"]


# ================================================================ remat_opt
# The forward pass of a custom_vjp function declared with ``optimize_remat=True``: its fwd
# rule staged as ``fwd_jaxpr`` (operands: its ``num_consts`` constants, then the primal
# arguments; results: the ``num_res`` residuals that are not arguments themselves, then the
# primal outputs). ``fun_jaxpr_thunk() -> (jaxpr, consts)`` traces the function itself on the
# primal arguments. Dead-code elimination is what the primitive is for: with no residual
# used, the equation becomes an ``eval_jaxpr`` of the function (under checkpoint the primal
# pass runs the function, not the fwd rule); otherwise the fwd jaxpr loses the outputs nobody
# reads.

REMAT_OPT_HIGHER_ORDER = "remat optimization for custom_vjp does not support higher-order AD"


def _memoize(thunk: Callable[[], Any]) -> Callable[[], Any]:
    """``thunk`` run once, its result kept (a body is traced when first asked)."""
    done: list[Any] = []

    def memoized() -> Any:
        if not done:
            done.append(thunk())
        return done[0]
    return memoized


# Public under a plain name; the thunks it makes print as JAX's do
# (``<function _memoize.<locals>.memoized at 0x...>``).
memoize = _memoize


def consts_as_inputs(jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    """``jaxpr`` with its constants turned into leading inputs, and their values."""
    if not jaxpr.constvars:
        return jaxpr, []
    return (Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                  jaxpr.effects), list(jaxpr.consts))


def _closed(jaxpr: Jaxpr, consts: Sequence[Any]) -> Jaxpr:
    return Jaxpr(list(jaxpr.constvars), list(jaxpr.invars), list(jaxpr.outvars),
                 list(jaxpr.eqns), jaxpr.effects, list(consts))


def _remat_opt_type(*avals: ArrayType, num_consts: int, num_res: int, fwd_jaxpr: Jaxpr,
                    fun_jaxpr_thunk: Any) -> list[ArrayType]:
    outs = _call_type("remat_opt", avals, fwd_jaxpr, num_consts)
    require(0 <= num_res <= len(outs), "remat_opt", "C4",
            f"num_res={num_res} is not between 0 and the {len(outs)} results of fwd_jaxpr")
    return outs


def _remat_opt_impl(*args: np.ndarray, fwd_jaxpr: Jaxpr, **params: Any
                    ) -> Sequence[np.ndarray]:
    return eval_jaxpr_values(fwd_jaxpr, [], args)


def _instantiated(tangents: Sequence[Any], avals: Sequence[ArrayType]) -> list[Any]:
    return [zeros_like_aval(a.tangent_type()) if type(t) is Zero else t
            for t, a in zip(tangents, avals)]


def _jvp_of_fwd(fwd_jaxpr: Jaxpr, num_consts: int, consts_nonzero: list[bool], num_res: int
                ) -> tuple[Jaxpr, list[Any]]:
    """The JVP of the fwd jaxpr, every output tangent instantiated, its binders in the
    order remat_opt needs: (constants, nonzero constant tangents, primals, tangents) in,
    (residuals, their tangents, outputs, their tangents) out; constants hoisted."""
    n_in = len(fwd_jaxpr.invars)
    n_args = n_in - num_consts
    nonzero = [*consts_nonzero, *([True] * n_args)]
    jvp, out_nonzero = ad.jvp_jaxpr(fwd_jaxpr, nonzero)
    n_cd = sum(consts_nonzero)
    out_avals = fwd_jaxpr.out_avals

    def rearranged(*xs: Any) -> list[Any]:
        consts, c_dots = xs[:num_consts], xs[num_consts:num_consts + n_cd]
        args = xs[num_consts + n_cd:num_consts + n_cd + n_args]
        a_dots = xs[num_consts + n_cd + n_args:]
        outs = eval_jaxpr(jvp, jvp.consts, *consts, *args, *c_dots, *a_dots)
        primals = outs[:len(out_avals)]
        it = iter(outs[len(out_avals):])
        dots = _instantiated([next(it) if nz else Zero(a.tangent_type())
                              for nz, a in zip(out_nonzero, out_avals)], out_avals)
        return [*primals[:num_res], *dots[:num_res], *primals[num_res:], *dots[num_res:]]

    in_avals = fwd_jaxpr.in_avals
    t_avals = [a.tangent_type() for a in in_avals]
    traced, _ = trace_to_jaxpr(rearranged, [
        *in_avals[:num_consts], *(a for a, nz in zip(t_avals, consts_nonzero) if nz),
        *in_avals[num_consts:], *t_avals[num_consts:]])
    return consts_as_inputs(traced)


def _remat_opt_jvp(primals: list[Any], tangents: list[Any], *, num_consts: int,
                   num_res: int, fwd_jaxpr: Jaxpr, fun_jaxpr_thunk: Any
                   ) -> tuple[list[Any], list[Any]]:
    """A remat_opt of the fwd jaxpr's JVP; its function's JVP is traced when asked (not
    kept: JAX's rule does not memoize it). Linearizing it fails as in JAX: the primal
    outputs come out of the same equation as the tangents."""
    if ad.in_linearize_rule():
        raise ValueError("Linearization failed to produce known values for all output "
                         "primals. This is typically caused by attempting to differentiate a "
                         "function uses an operation that does not support reverse-mode "
                         "autodiff.")
    consts, args = primals[:num_consts], primals[num_consts:]
    consts_dot = tangents[:num_consts]
    arg_dots = _instantiated(tangents[num_consts:],
                             [canonical_aval_of(x) for x in args])
    consts_nonzero = [type(t) is not Zero for t in consts_dot]
    nz_consts_dot = [t for t, nz in zip(consts_dot, consts_nonzero) if nz]
    jvp_fwd, jvp_consts = _jvp_of_fwd(fwd_jaxpr, num_consts, consts_nonzero, num_res)
    num_out = len(fwd_jaxpr.outvars) - num_res

    def fun_jvp_jaxpr_thunk() -> tuple[Jaxpr, list[Any]]:
        fun_jaxpr, fun_consts = fun_jaxpr_thunk()
        as_inputs, values = consts_as_inputs(_closed(fun_jaxpr, fun_consts))
        fun_jvp, jvp_values = _jvp_of_fwd(as_inputs, len(values), [False] * len(values), 0)
        known = [*jvp_values, *values]
        return _bound_leading(fun_jvp, len(known)), known

    outs = remat_opt_p.bind(*jvp_consts, *consts, *nz_consts_dot, *args, *arg_dots,
                            num_consts=len(jvp_consts) + num_consts + len(nz_consts_dot),
                            num_res=2 * num_res, fwd_jaxpr=jvp_fwd,
                            fun_jaxpr_thunk=fun_jvp_jaxpr_thunk)
    res, res_dot = outs[:num_res], outs[num_res:2 * num_res]
    p_outs, p_dots = outs[2 * num_res:2 * num_res + num_out], outs[2 * num_res + num_out:]
    return [*res, *p_outs], [*res_dot, *p_dots]


def _bound_leading(jaxpr: Jaxpr, n: int) -> Jaxpr:
    """``jaxpr``'s first ``n`` inputs as its constvars (their values come with it)."""
    return Jaxpr([*jaxpr.constvars, *jaxpr.invars[:n]], list(jaxpr.invars[n:]),
                 list(jaxpr.outvars), list(jaxpr.eqns), jaxpr.effects)


def _remat_opt_transpose(cts: list[Any], *args: Any, **params: Any) -> list[Any]:
    raise NotImplementedError(REMAT_OPT_HIGHER_ORDER)


def _remat_opt_batch(axis: AxisData, args: list[Any], dims: list[Any], *, num_consts: int,
                     num_res: int, fwd_jaxpr: Jaxpr, fun_jaxpr_thunk: Any
                     ) -> tuple[list[Any], list[Any]]:
    """The fwd jaxpr batched with every batched operand and result at axis 0; the
    function's batched jaxpr is traced when asked, its outputs where the fwd's are."""
    moved = [x if d is None else batching.match_axis(axis, x, d, 0) for x, d in zip(args, dims)]
    in_dims: list[Any] = [None if d is None else 0 for d in dims]
    wanted = [batching.zero_if_mapped] * len(fwd_jaxpr.outvars)
    batched, out_dims = batching.batch_jaxpr(fwd_jaxpr, axis, in_dims, wanted)
    new_fwd, extra = consts_as_inputs(batched)
    arg_dims = in_dims[num_consts:]

    def batched_fun_jaxpr_thunk() -> tuple[Jaxpr, list[Any]]:
        fun_jaxpr, fun_consts = fun_jaxpr_thunk()
        fun_b, _ = batching.batch_jaxpr(_closed(fun_jaxpr, fun_consts), axis, arg_dims,
                                        out_dims[num_res:])
        return fun_b, list(fun_b.consts)

    outs = remat_opt_p.bind(*extra, *moved, num_consts=num_consts + len(extra),
                            num_res=num_res, fwd_jaxpr=new_fwd,
                            fun_jaxpr_thunk=_memoize(batched_fun_jaxpr_thunk))
    return list(outs), out_dims


def _remat_opt_dce(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
    """Residuals used: the fwd jaxpr without the unused results (its arguments kept, as a
    later elimination may still need them). No residual used: the function itself, as an
    ``eval_jaxpr`` of its pruned jaxpr."""
    params = eqn.params
    num_consts, num_res = params["num_consts"], params["num_res"]
    if not any(used_outputs) and not eqn.effects:
        return [False] * len(eqn.invars), None
    outvars = [v for v, u in zip(eqn.outvars, used_outputs) if u]
    used_res = used_outputs[:num_res]
    if any(used_res):
        keep = [False] * num_consts + [True] * (len(eqn.invars) - num_consts)
        fwd, used_ins = dce_sub_jaxpr(params["fwd_jaxpr"], used_outputs, keep)
        new_params = dict(params, fwd_jaxpr=fwd, num_consts=sum(used_ins[:num_consts]),
                          num_res=sum(used_res))
        return used_ins, eqn.replace(invars=[a for a, u in zip(eqn.invars, used_ins) if u],
                                     outvars=outvars, params=new_params)
    fun_jaxpr, consts = params["fun_jaxpr_thunk"]()
    fun, used_args = dce_sub_jaxpr(_closed(fun_jaxpr, consts), used_outputs[num_res:])
    args = eqn.invars[num_consts:]
    return ([False] * num_consts + used_args,
            eqn.replace(invars=[a for a, u in zip(args, used_args) if u], outvars=outvars,
                        primitive=primitive("eval_jaxpr"), params={"call_jaxpr": fun}))


def _remat_opt_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return call_effects(atoms, {"jaxpr": params["fwd_jaxpr"]})


def _pp_remat_opt(eqn: Eqn, ctx: PpContext) -> Any:
    params = dict(eqn.params)
    params["fun_jaxpr_thunk"] = _MaskedAddress(params["fun_jaxpr_thunk"])
    return pp_eqn_default(eqn, ctx, params)


remat_opt_p = declare(
    "remat_opt", typing=_remat_opt_type, impl=_remat_opt_impl, multiple_results=True,
    jvp=_remat_opt_jvp, transpose=_remat_opt_transpose, batch=_remat_opt_batch,
    sharding=sharding_of_call("fwd_jaxpr"), lowering=CL.inline("fwd_jaxpr"), dce=_remat_opt_dce,
    effects_rule=_remat_opt_effects, pp_rule=_pp_remat_opt, vma_rule=VMA_FROM_TYPING,
    per_device=from_primitive(PD.call_program("fwd_jaxpr")),
    doc="The fwd rule of a custom_vjp function with optimize_remat, replaced by the "
        "function where its residuals are unused")

__all__ += ["consts_as_inputs", "memoize", "remat_opt_p"]
