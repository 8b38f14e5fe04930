"""When the Python callables of ``custom_jvp`` / ``custom_vjp`` functions run.

A call of a decorated function is handed, unstaged, to the innermost trace,
which decides what to run, as JAX's traces do:

- evaluation runs the function itself;
- forward mode (JVP, linearize) with a nonzero input tangent runs the JVP
  rule, or the fwd rule, on the primal values of the enclosing trace
  (concrete ones when nothing else is tracing), and never the function; with
  no tangent it hands the call to the enclosing trace;
- vmap hands the call, with the function and the rules batched, to the
  enclosing trace;
- staging (and any other trace) traces the function into ``call_jaxpr`` and
  binds ``custom_jvp_call`` / ``custom_vjp_call``, whose rules are traced to
  jaxprs once, the first time the equation is differentiated (once per
  pattern of symbolic-zero tangents and input types), then evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core.interpreter import (
    EvalTrace,
    Jaxpr,
    Trace,
    Tracer,
    canonical_aval_of,
    eval_jaxpr,
    set_current_trace,
    trace_to_jaxpr,
)
from spec._src.core.types import ArrayType
from spec._src.interpreters import ad, batching
from spec._src.interpreters.ad_util import Zero
from spec._src.lax.custom import (
    SymbolicZero,
    batched_jvp_rule,
    batched_vjp_rules,
    custom_jvp_call_p,
    custom_vjp_call_p,
)

FlatFun = Callable[..., list[Any]]


class JvpCall:
    """A ``custom_jvp`` function applied: the function and its rule over
    flat lists (``rule(primals, tangents) -> (primal_outs, tangent_outs)``)."""

    def __init__(self, fun: FlatFun, rule: Any, symbolic_zeros: bool) -> None:
        self.fun = fun
        self.rule = rule
        self.symbolic_zeros = symbolic_zeros


class VjpCall:
    """A ``custom_vjp`` function applied: the function, ``fwd(primals,
    nonzeros) -> (residuals, primal_outs)`` and ``bwd(residuals, cts) ->
    cts_in`` over flat lists; ``out_trees`` gives the output and residual trees."""

    def __init__(self, fun: FlatFun, fwd: Any, bwd: Any, out_trees: Any,
                 symbolic_zeros: bool) -> None:
        self.fun = fun
        self.fwd = fwd
        self.bwd = bwd
        self.out_trees = out_trees
        self.symbolic_zeros = symbolic_zeros


# ------------------------------------------------------------------ dispatch


def _evaluated(trace: EvalTrace, fun: FlatFun, args: Sequence[Any]) -> list[Any]:
    with set_current_trace(trace):
        return list(fun(*args))


def _primals_and_tangents(trace: ad.JVPTrace, args: Sequence[Any]
                          ) -> tuple[list[Any], list[Any]]:
    pairs = [trace.unpack(a) for a in args]
    return [p for p, _ in pairs], [t for _, t in pairs]


def process_custom_jvp(trace: Trace, call: JvpCall, args: Sequence[Any]) -> list[Any]:
    """The outputs of ``call`` applied to ``args`` under ``trace``."""
    if isinstance(trace, EvalTrace):
        return _evaluated(trace, call.fun, args)
    if isinstance(trace, ad.JVPTrace):
        primals, tangents = _primals_and_tangents(trace, args)
        if all(type(t) is Zero for t in tangents):
            return process_custom_jvp(trace.parent, call, primals)
        params = {"call_jaxpr": None, "jvp_jaxpr_fun": call.rule, "num_consts": 0,
                  "symbolic_zeros": call.symbolic_zeros}
        p_outs, t_outs = trace.apply_rule(custom_jvp_call_p, primals, tangents, params)
        return trace.wrap(custom_jvp_call_p, p_outs, t_outs)
    if isinstance(trace, batching.BatchTrace):
        vals, dims = _unbatched(trace, args)
        if all(d is None for d in dims):
            return process_custom_jvp(trace.parent, call, vals)
        out_dims: list[Any] = []
        batched = JvpCall(_batched_fun(call.fun, trace.axis, dims, out_dims),
                          batched_jvp_rule(call.rule, trace.axis, dims, out_dims),
                          call.symbolic_zeros)
        outs = process_custom_jvp(trace.parent, batched, vals)
        return [trace.wrap(o, d) for o, d in zip(outs, out_dims)]
    primal = ad.split_primal_side(trace, args)
    if primal is not None:
        return process_custom_jvp(primal, call, args)
    return _stage_jvp(trace, call, args)


def process_custom_vjp(trace: Trace, call: VjpCall, args: Sequence[Any]) -> list[Any]:
    """The outputs of ``call`` applied to ``args`` under ``trace``."""
    if isinstance(trace, EvalTrace):
        return _evaluated(trace, call.fun, args)
    if isinstance(trace, ad.JVPTrace):
        primals, tangents = _primals_and_tangents(trace, args)
        if all(type(t) is Zero for t in tangents):
            return process_custom_vjp(trace.parent, call, primals)
        params = {"call_jaxpr": None, "fwd_jaxpr_thunk": call.fwd, "num_consts": 0,
                  "bwd": call.bwd, "out_trees": call.out_trees,
                  "symbolic_zeros": call.symbolic_zeros}
        p_outs, t_outs = trace.apply_rule(custom_vjp_call_p, primals, tangents, params)
        return trace.wrap(custom_vjp_call_p, p_outs, t_outs)
    if isinstance(trace, batching.BatchTrace):
        vals, dims = _unbatched(trace, args)
        if all(d is None for d in dims):
            return process_custom_vjp(trace.parent, call, vals)
        out_dims: list[Any] = []
        fwd, bwd = batched_vjp_rules(call.fwd, call.bwd, trace.axis, dims, out_dims)
        batched = VjpCall(_batched_fun(call.fun, trace.axis, dims, out_dims), fwd, bwd,
                          call.out_trees, call.symbolic_zeros)
        outs = process_custom_vjp(trace.parent, batched, vals)
        return [trace.wrap(o, d) for o, d in zip(outs, out_dims)]
    primal = ad.split_primal_side(trace, args)
    if primal is not None:
        return process_custom_vjp(primal, call, args)
    return _stage_vjp(trace, call, args)


def _unbatched(trace: batching.BatchTrace, args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    pairs = [trace.unpack(a) for a in args]
    return [v for v, _ in pairs], [d for _, d in pairs]


def _batched_fun(fun: FlatFun, axis: batching.AxisData, dims: list[Any],
                 out_dims: list[Any]) -> FlatFun:
    """``fun`` run per example; its outputs where they come out, recorded
    in ``out_dims`` (moved to those already there when a rule ran first)."""
    def batched(*vals: Any) -> list[Any]:
        outs, natural = batching.batch_flat(fun, axis, list(vals), dims)
        if not out_dims:
            out_dims[:] = natural
        return [batching.match_axis(axis, o, d, w) for o, d, w in zip(outs, natural, out_dims)]
    return batched


# ------------------------------------------------------------------ staging


def _staged_body(fun: FlatFun, args: Sequence[Any]) -> tuple[Jaxpr, list[Any]]:
    """``fun`` traced with the types of ``args``; its closed-over values
    become the first inputs of the jaxpr, returned with them."""
    traced, _ = trace_to_jaxpr(lambda *xs: list(fun(*xs)), [canonical_aval_of(x) for x in args])
    jaxpr = Jaxpr([], [*traced.constvars, *traced.invars], traced.outvars, traced.eqns,
                  traced.effects)
    return jaxpr, list(traced.consts)


def _stage_jvp(trace: Trace, call: JvpCall, args: Sequence[Any]) -> list[Any]:
    jaxpr, consts = _staged_body(call.fun, args)
    with set_current_trace(trace):
        outs = custom_jvp_call_p.bind(
            *consts, *args, call_jaxpr=jaxpr, jvp_jaxpr_fun=TracedJvpRule(call.rule),
            num_consts=len(consts), symbolic_zeros=call.symbolic_zeros)
    return list(outs)


def _stage_vjp(trace: Trace, call: VjpCall, args: Sequence[Any]) -> list[Any]:
    jaxpr, consts = _staged_body(call.fun, args)
    with set_current_trace(trace):
        outs = custom_vjp_call_p.bind(
            *consts, *args, call_jaxpr=jaxpr, fwd_jaxpr_thunk=TracedFwd(call.fwd),
            num_consts=len(consts), bwd=TracedBwd(call.bwd), out_trees=call.out_trees,
            symbolic_zeros=call.symbolic_zeros)
    return list(outs)


def _is_zero(x: Any) -> bool:
    return type(x) in (Zero, SymbolicZero)


def _type_of(x: Any) -> Any:
    return x.aval if _is_zero(x) else canonical_aval_of(x)


Split = Callable[[list[Any]], tuple[list[Any], Any]]


class _TracedOnce:
    """A flat rule of a staged equation, traced to a jaxpr the first time it
    runs with given input types and symbolic zeros, then evaluated: its
    Python code runs once, as JAX traces a staged equation's rules once.
    A jaxpr closing over tracers (of the traces around that first run) is
    used for that run only; rules over refs run as Python each time."""

    def __init__(self, rule: Any) -> None:
        self.rule = rule
        self.__name__ = getattr(rule, "__name__", str(rule))
        self.fun_name = getattr(rule, "fun_name", "<unknown>")
        self.memo: dict[Any, tuple[Jaxpr, list[Any], Any]] = {}

    def run(self, inputs: list[Any], split: Split, extra: Any = ()) -> tuple[list[Any], Any]:
        """``split(inputs)``: its flat outputs (zeros as ``SymbolicZero`` /
        ``Zero``) and what it says about them (``aux``), recorded when traced."""
        types = [_type_of(x) for x in inputs]
        if not all(type(t) is ArrayType for t in types):
            return split(inputs)
        zeros_in = tuple(_is_zero(x) for x in inputs)
        key = (zeros_in, tuple(types), extra)
        live = [x for x, z in zip(inputs, zeros_in) if not z]
        known = self.memo.get(key)
        if known is None:
            jaxpr, out_zeros, aux = _trace_rule(inputs, zeros_in, split)
            if jaxpr is None:
                return out_zeros, aux
            if not any(isinstance(c, Tracer) for c in jaxpr.consts):
                self.memo[key] = (jaxpr, out_zeros, aux)
        else:
            jaxpr, out_zeros, aux = known
        values = iter(eval_jaxpr(jaxpr, jaxpr.consts, *live))
        return [z if z is not None else next(values) for z in out_zeros], aux


def _trace_rule(inputs: list[Any], zeros_in: tuple[bool, ...], split: Split
                ) -> tuple[Jaxpr | None, list[Any], Any]:
    """The jaxpr of a rule over its nonzero inputs, per output its zero
    (``None`` for a value the jaxpr computes), and the rule's ``aux``; a rule
    returning refs gives no jaxpr but its outputs as computed."""
    out_zeros: list[Any] = []
    aux: list[Any] = [None]

    def flat(*xs: Any) -> list[Any]:
        it = iter(xs)
        outs, aux[0] = split([x if z else next(it) for x, z in zip(inputs, zeros_in)])
        out_zeros[:] = [o if _is_zero(o) or o is None else None for o in outs]
        return [o for o in outs if not (_is_zero(o) or o is None)]

    live = [x for x, z in zip(inputs, zeros_in) if not z]
    jaxpr, _ = trace_to_jaxpr(flat, [_type_of(x) for x in live])
    if all(type(v.aval) is ArrayType for v in jaxpr.outvars):
        return jaxpr, out_zeros, aux[0]
    # Refs among the outputs: this once, the jaxpr evaluated (values
    # recomputed from it later would not be the refs the rule returns).
    values = iter(eval_jaxpr(jaxpr, jaxpr.consts, *live))
    return None, [z if z is not None else next(values) for z in out_zeros], aux[0]


class TracedJvpRule(_TracedOnce):
    """A staged ``custom_jvp_call``'s JVP rule (see ``_TracedOnce``)."""

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any]
                 ) -> tuple[list[Any], list[Any]]:
        n = len(primals)

        def split(xs: list[Any]) -> tuple[list[Any], Any]:
            p_outs, t_outs = self.rule(xs[:n], xs[n:])
            return [*p_outs, *t_outs], len(p_outs)

        outs, n_out = self.run([*primals, *tangents], split)
        return outs[:n_out], outs[n_out:]


class TracedFwd(_TracedOnce):
    """A staged ``custom_vjp_call``'s fwd rule (see ``_TracedOnce``)."""

    def __call__(self, primals: Sequence[Any], nonzeros: Sequence[bool]
                 ) -> tuple[list[Any], list[Any]]:
        def split(xs: list[Any]) -> tuple[list[Any], Any]:
            residuals, p_outs = self.rule(xs, list(nonzeros))
            return [*residuals, *p_outs], len(residuals)

        outs, n_res = self.run(list(primals), split, tuple(nonzeros))
        return outs[:n_res], outs[n_res:]


class TracedBwd(_TracedOnce):
    """A staged ``custom_vjp_call``'s bwd rule (see ``_TracedOnce``); one
    that logs (``defvjp_with_logs``) runs as Python each time."""

    def __call__(self, residuals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        if getattr(self.rule, "with_logs", False):
            return list(self.rule(residuals, cts))
        r = len(residuals)
        outs, _ = self.run([*residuals, *cts], lambda xs: (list(self.rule(xs[:r], xs[r:])), None))
        return outs
