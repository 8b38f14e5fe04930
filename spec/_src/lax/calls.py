"""Call primitives: ``jit`` (a staged sub-program).

Its autodiff rules transform the sub-jaxpr and bind ``jit`` again, so that
differentiated programs keep their call structure: the JVP of a call is a
call of the JVP jaxpr; linearizing a call gives a primal call (returning the
residuals) and a tangent call (reading them); transposing a call is a call
of the transposed jaxpr; partial evaluation splits a call in two.

The rules are written once for any call primitive (``CallRules``): a call
primitive says how the params of a derived call follow from its own
(``DeriveParams``), and whether autodiff made that call (the tangent and
transposed calls) or it is the same computation in another form (JVP,
primal, batched, partial evaluation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import weakref

import numpy as np

from spec._src.core.array import Array
from spec._src.core.hitypes import is_high, raise_values
from spec._src.lowering.donation import check_buffer_reuse, donation_plan, partitioned_plan
from spec._src.lowering.emitter import jit_call
from spec._src.interpreters import ad, batching, hi_lowering
from spec._src.interpreters.batching import AxisData
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, instantiate
from spec._src.core.interpreter import (
    Eqn,
    canonical_aval_of,
    dce_jaxpr,
    dce_sub_jaxpr,
    Jaxpr,
    JitTracer,
    Primitive,
    Tracer,
    Var,
    eval_jaxpr,
    eval_jaxpr_values,
    pp_eqn_default,
    sharding_of_call,
    trace_to_jaxpr,
)
from spec._src.core.config import config
from spec._src.core import source_info as si
from spec._src.core import tree_util
from spec._src.lax import call_shardings as CS
from spec._src.core.effects import running_compiled
from spec._src.core.sharding import _context as _typing_context
from spec._src.core.source_info import current_xla_metadata
from spec._src.core.registry import declaring, primitive, require
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.core.interpreter import EvalTrace, current_trace, from_primitive
from spec._src.core.state_types import RefEffect, RefType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.discharge import Discharged, discharge_state
from spec._src.core.interpreter import VMA_FROM_TYPING
from spec._src.core.interpreter import canonical_value, set_current_trace


def _jit_type(*avals: ArrayType, jaxpr: Jaxpr, **params: Any) -> list[ArrayType]:
    expected = jaxpr.in_avals
    require(len(avals) == len(expected), "jit", "C1",
            f"called with {len(avals)} operands, the jaxpr takes {len(expected)}")
    for i, (got, want) in enumerate(zip(avals, expected)):
        same = got == want if is_high(got) or is_high(want) else \
            got.shape == want.shape and got.dtype == want.dtype
        require(same, "jit", "C2", f"operand {i} has type {got}, the jaxpr expects {want}")
    if CS.carries(params):
        ins, outs = params[CS.IN], params[CS.OUT]
        require(len(ins) == len(avals) and len(outs) == len(jaxpr.outvars), "jit", "C3",
                f"in_shardings has {len(ins)} entries for {len(avals)} operands and "
                f"out_shardings {len(outs)} for {len(jaxpr.outvars)} results")
    return jaxpr.out_avals


def call_impl(*args: np.ndarray, jaxpr: Jaxpr, **params: Any) -> Sequence[np.ndarray]:
    """A call runs its (live) program as one compiled computation."""
    live = _live_program(jaxpr)
    consts = [_const_value(c) for c in live.consts]
    with running_compiled():
        return eval_jaxpr_values(live, consts, args)


# A compiled call runs its program after dead-code elimination: work nothing
# reads (an unused pure_callback included) does not run, effects always do.
_LIVE: weakref.WeakKeyDictionary[Jaxpr, Jaxpr | None] = weakref.WeakKeyDictionary()


def _live_program(jaxpr: Jaxpr) -> Jaxpr:
    if jaxpr in _LIVE:
        return _LIVE[jaxpr] or jaxpr
    live = dce_jaxpr(jaxpr)
    # (an unchanged program is not stored as its own value: the entry would keep it alive)
    _LIVE[jaxpr] = None if live is jaxpr else live
    return live


def _jit_to_lojax(*args: Any, jaxpr: Jaxpr, **params: Any) -> list[Any]:
    """A call with hi-typed operands or results: the call of its lowered
    body on the operands' components, its results rebuilt. As a compiled
    call runs, the body is lowered after dead-code elimination (a hijax
    result nothing reads is not expanded)."""
    lowered, los = hi_lowering.lower_call(args, _live_program(jaxpr))
    donated = hi_lowering.expand_flags(jaxpr.in_avals, params.pop("donated_invars"))
    params = CS.with_shardings(params, (), ())  # (placed per hi value, not per component)
    outs = jit_p.bind(*los, jaxpr=lowered, donated_invars=donated, **params)
    return raise_values(jaxpr.out_avals, outs)


def _const_value(c: Any) -> np.ndarray:
    return canonical_value(c)[0]


def _pp_jit(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    params.pop("inline", None)
    if not any(params.get("donated_invars", ())):
        params.pop("donated_invars", None)
    if not params.get("keep_unused", False):
        params.pop("keep_unused", None)
    for key in (CS.IN, CS.OUT):  # printed when some entry is specified
        if all(e is CS.UNSPECIFIED for e in params.get(key, ())):
            params.pop(key, None)
    mesh = params.get("ctx_mesh")
    if mesh is None or mesh.empty:  # printed only when a mesh was in context
        params.pop("ctx_mesh", None)
    inner = params["jaxpr"]
    if id(inner) not in ctx.shared:
        ctx.suggest_same_names(inner.invars, eqn.invars)
        ctx.suggest_same_names(inner.outvars, eqn.outvars)
    # name= first, then the rest sorted: easier to scan, and JAX's order.
    name = params.pop("name")
    ordered = {"name": name, **{k: params[k] for k in sorted(params)}}
    return pp_eqn_default(eqn, ctx, ordered, sort=False)


# ------------------------------------------------------------------ autodiff

# (the call's params, the derived call's jaxpr, whether autodiff derived it
# beyond the forward computation) -> the derived call's params
DeriveParams = Callable[[dict[str, Any], Jaxpr, bool], dict[str, Any]]


def _call_params(params: dict[str, Any], jaxpr: Jaxpr, by_autodiff: bool = False
                 ) -> dict[str, Any]:
    """The params of a derived call: same name and options, a new jaxpr."""
    return {**params, "jaxpr": jaxpr, "donated_invars": (False,) * len(jaxpr.invars)}


def _donating(params: dict[str, Any], flags: Sequence[bool]) -> dict[str, Any]:
    """A derived call's params donating the operands ``flags`` names (a
    call primitive without donation is left as it is)."""
    if "donated_invars" not in params:
        return params
    return {**params, "donated_invars": tuple(bool(f) for f in flags)}


def _donations_of(params: dict[str, Any], n: int) -> list[bool]:
    return list(params.get("donated_invars", ())) or [False] * n


def _evaluator(jaxpr: Jaxpr) -> Any:
    return lambda *xs: eval_jaxpr(jaxpr, jaxpr.consts, *xs)


def _without_duplicate_outputs(jaxpr: Jaxpr, n_primal: int) -> tuple[Jaxpr, list[int | None]]:
    """The primal call returns each variable once: a residual that is a
    primal output (or an earlier residual) is read from that output. Returns
    the jaxpr and, per original output, the index among the kept outputs it
    is read from (None: its own)."""
    kept: list[Any] = []
    position: dict[int, int] = {}
    duplicates: list[int | None] = []
    for i, v in enumerate(jaxpr.outvars):
        earlier = position.get(id(v)) if isinstance(v, Var) else None
        if i >= n_primal and earlier is not None:
            duplicates.append(earlier)
            continue
        if isinstance(v, Var):
            position[id(v)] = len(kept)
        kept.append(v)
        duplicates.append(None)
    if len(kept) == len(jaxpr.outvars):
        return jaxpr, duplicates
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.eqns, jaxpr.effects,
                 consts=list(jaxpr.consts)), duplicates


def _input_forwards(jaxpr: Jaxpr, n_primal: int) -> list[int | None]:
    """Per primal output of the primal call, the input it is (by position),
    or None: JAX's primal call does not return its inputs."""
    inputs = {id(v): k for k, v in enumerate(jaxpr.invars)}
    return [inputs.get(id(v)) if isinstance(v, Var) else None
            for v in jaxpr.outvars[:n_primal]]


def _with_duplicates(outs: Sequence[Any], duplicates: list[int | None]) -> list[Any]:
    """The call's results with the pruned duplicates restored."""
    own = iter(outs)
    return [next(own) if d is None else outs[d] for d in duplicates]


def _staged_leaves(entries: list[Any]) -> list[Any]:
    """The distinct staged values among the leaves of structured residual
    entries, each once (a value saved under several names is returned once)."""
    unique: dict[int, Any] = {}
    for leaf in tree_util.tree_leaves(entries):
        if isinstance(leaf, Tracer):
            unique.setdefault(id(leaf), leaf)
    return list(unique.values())


# Jaxprs that a transformation derives from a call's jaxpr (its linearized,
# transposed and batched forms), per jaxpr and per everything else the
# derivation reads: the rule's own inputs, the configuration, the typing
# context (mesh, named axes), the ambient XLA metadata and the source context
# (the derived equations' name stacks). Calling grad or
# vmap of a jitted function again derives nothing anew, as in JAX, and the
# derived calls, being the same jaxprs, run the programs generated for them.
_DERIVED: weakref.WeakKeyDictionary[Jaxpr, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
_D = TypeVar("_D")


def _derived(jaxpr: Jaxpr, key: Hashable, derive: Callable[[], tuple[_D, bool]]) -> _D:
    """``derive()``'s value (the first of its pair) for ``jaxpr`` under
    ``key`` in the current context, remembered where the second is True
    (nothing in it belongs to a trace that ends)."""
    full = (key, config.values_key(), _typing_context.typing_key, current_xla_metadata(),
            si.current())
    per_jaxpr = _DERIVED.setdefault(jaxpr, {})
    try:
        known: _D | None = per_jaxpr.get(full)
    except TypeError:  # an unhashable param or axis name: derived every time
        return derive()[0]
    if known is not None:
        return known
    value, lasting = derive()
    if lasting:
        per_jaxpr[full] = value
    return value


def _no_tracers(*jaxprs: Jaxpr | None) -> bool:
    return not any(isinstance(c, Tracer) for j in jaxprs if j is not None for c in j.consts)


@dataclass
class TransposedOperands:
    """A transposed call's view of its operands: which are undefined (their
    cotangents are results), which accumulate into refs (ref operands,
    values bound to gradient refs: the refs are passed to the transposed
    call, which adds into them and returns nothing for them), and which are
    defined (residuals, passed first)."""

    args: Sequence[Any]
    undefined: list[bool]
    accums: list[bool]
    refs: list[Any]
    wanted: list[bool]
    defined: list[Any]

    @staticmethod
    def of(args: Sequence[Any]) -> TransposedOperands:
        undefined = [type(a) is UndefinedPrimal for a in args]
        accums = [isinstance(a, ad.RefAccum) for a in args]
        refs = [a.inst() for a in args if isinstance(a, ad.RefAccum)]
        # float0 inputs (tangents of integers) get symbolic zero cotangents.
        wanted = [u and (is_high(a.aval) or a.aval.dtype != FLOAT0)
                  for a, u in zip(args, undefined)]
        defined = [a for a, u, r in zip(args, undefined, accums) if not u and not r]
        return TransposedOperands(args, undefined, accums, refs, wanted, defined)

    def transposed(self, jaxpr: Jaxpr, cts: Sequence[Any], logged: ad.LoggedBody) -> Jaxpr:
        """``jaxpr``'s backward pass as a jaxpr: the defined operands, the
        refs and the nonzero cotangents (``cts``: Zero or not) in, the
        wanted cotangents out, then the leaves of the logs its rules
        returned (``logged`` keeps their tree)."""
        ct_nonzero = [type(c) is not Zero for c in cts]
        backward = ad.call_backward(jaxpr, jaxpr.consts, self.undefined, ct_nonzero,
                                    self.accums)

        def fun(*xs: Any) -> list[Any]:
            return [instantiate(c) for c, w in zip(backward(*xs), self.wanted) if w]

        avals = [canonical_aval_of(a) for a in [*self.defined, *self.refs]] + \
            [v.aval.ct_type() for v, nz in zip(jaxpr.outvars, ct_nonzero) if nz]
        return trace_to_jaxpr(logged.wrap(fun), avals)[0]

    def operands(self, cts: Sequence[Any]) -> list[Any]:
        """The transposed call's operands."""
        return [*self.defined, *self.refs, *(c for c in cts if type(c) is not Zero)]

    def cotangents(self, outs: Sequence[Any]) -> list[Any]:
        """Each operand's cotangent from the transposed call's results."""
        it = iter(outs)
        return [next(it) if w else (Zero(a.aval.ct_type()) if u else None)
                for a, u, w in zip(self.args, self.undefined, self.wanted)]


def transpose_call(bind: Callable[[list[Any], Jaxpr], Sequence[Any]], cts: list[Any],
                   args: Sequence[Any], jaxpr: Jaxpr, name: str) -> list[Any]:
    """The transpose of a call of ``jaxpr``: a call (made by ``bind`` from
    the operands and the transposed jaxpr) of the jaxpr's backward pass. The
    logs of the body's rules pass out unchanged (``name``: the primitive)."""
    ops = TransposedOperands.of(args)
    logged = ad.LoggedBody()

    def derive() -> tuple[Jaxpr, bool]:
        t_jaxpr = ops.transposed(jaxpr, cts, logged)
        # (a body that logs or adds into refs is transposed every time)
        return t_jaxpr, not ops.refs and not logged.raw and _no_tracers(t_jaxpr)

    key = ("transpose", tuple(ops.undefined), tuple(ops.wanted),
           tuple(type(c) is not Zero for c in cts),
           tuple(canonical_aval_of(a) for a in ops.defined), ad.logs_wanted(),
           ad.integer_cotangents[0])
    t_jaxpr = _derived(jaxpr, key, derive)
    outs, logs = logged.split(bind(ops.operands(cts), t_jaxpr))
    ad.add_logs(logs, f"the transpose rule for '{name}'")
    return ops.cotangents(outs)


def _jit_dce(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
    """A call of the pruned jaxpr: unused results go, with the work only they
    needed and the operands nothing else reads (JAX ignores ``keep_unused``
    here; it matters only when compiling)."""
    jaxpr: Jaxpr = eqn.params["jaxpr"]
    new, used_inputs = dce_sub_jaxpr(jaxpr, used_outputs)
    if new is jaxpr:
        return used_inputs, eqn
    params = dict(eqn.params, jaxpr=new, donated_invars=tuple(
        d for d, u in zip(eqn.params["donated_invars"], used_inputs) if u))
    ins, outs = CS.shardings_of(eqn.params, len(eqn.invars), len(eqn.outvars))
    params = CS.with_shardings(params, CS.kept(ins, used_inputs), CS.kept(outs, used_outputs))
    return used_inputs, eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u], params=params)


# Calls take refs as operands (refs passed to, or closed over by, jit).
def call_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    """A call writes the operands its body writes (its inputs, by position)."""
    inner: Jaxpr = params["jaxpr"]
    if not inner.effects:
        return frozenset()
    position = {id(v): k for k, v in enumerate(inner.invars)}
    out = set()
    for e in inner.effects:
        k = position.get(id(getattr(e, "ref", None)))
        if k is not None and isinstance(atoms[k], Var):
            out.add(RefEffect(e.kind, atoms[k]))
    return frozenset(out)


@dataclass(frozen=True)
class _LinearSplit:
    """A call's linearization: the primal call's jaxpr (the primal outputs,
    then the residuals it computes, then the staged values of structured
    residuals ``sres``; each variable once, ``duplicates`` restoring the
    rest) and the tangent call's jaxpr (the residuals, then the nonzero
    input tangents, in; the tangents ``out_nonzero`` marks out; None where
    every output tangent is a symbolic zero). ``forwarded`` and
    ``sres_forwarded`` say which residuals are the call's own inputs (by
    position), passed from outside rather than returned."""

    primal_jaxpr: Jaxpr
    duplicates: list[int | None]
    n_computed: int
    forwarded: list[int | None]
    tangent_jaxpr: Jaxpr | None
    out_nonzero: list[bool]
    structured: list[Any]
    sres: list[Any]
    sres_forwarded: list[int | None]

    @staticmethod
    def of(jaxpr: Jaxpr, avals: Sequence[ArrayType], differentiate: Sequence[bool]
           ) -> tuple[_LinearSplit, bool]:
        """The split, and whether it lasts beyond this trace (no staged
        structured residuals, no constants of an enclosing trace)."""
        n_out = len(jaxpr.outvars)
        found: dict[str, Any] = {}

        def primal_fun(*xs: Any) -> list[Any]:
            lin = ad.direct_linearize(_evaluator(jaxpr), xs, differentiate, named=False)
            inputs = {id(x): i for i, x in enumerate(xs)}
            traced = [(v, c) for v, c in zip(lin.jaxpr.constvars, lin.jaxpr.consts)
                      if isinstance(c, JitTracer) or id(c) in lin.host_residuals]
            found["lin"], found["traced"] = lin.jaxpr, traced
            found["out_nonzero"] = lin.out_nonzero or [True] * n_out
            found["forwarded"] = [inputs.get(id(c)) for _, c in traced]
            # A host scalar residual is returned as itself: a literal output.
            computed = [lin.host_residuals.get(id(c), c)
                        for (_, c), f in zip(traced, found["forwarded"]) if f is None]
            found["structured"], sres = lin.structured, _staged_leaves(lin.structured)
            found["sres"], found["sres_forwarded"] = sres, [inputs.get(id(x)) for x in sres]
            found["n_computed"] = len(computed)
            return [*lin.primals_out, *computed,
                    *(x for x, f in zip(sres, found["sres_forwarded"]) if f is None)]

        primal_jaxpr, _ = trace_to_jaxpr(primal_fun, avals)
        # JAX cleans the primal call of work nothing returns (e.g. stacked outputs
        # of an inner loop that only the tangent side would have read).
        primal_jaxpr = dce_jaxpr(primal_jaxpr)
        primal_jaxpr, duplicates = _without_duplicate_outputs(primal_jaxpr, n_out)
        lin, traced = found["lin"], found["traced"]
        traced_ids = {id(v) for v, _ in traced}
        kept = [(v, c) for v, c in zip(lin.constvars, lin.consts) if id(v) not in traced_ids]
        # As JAX's, the tangent call returns only the tangents that are not
        # symbolic zeros; the others stay symbolic outside the call.
        nonzero = found["out_nonzero"]
        tangent_jaxpr = None if not any(nonzero) else dce_jaxpr(Jaxpr(
            [v for v, _ in kept], [v for v, _ in traced] + lin.invars,
            [v for v, nz in zip(lin.outvars, nonzero) if nz], lin.eqns,
            consts=[c for _, c in kept]))
        split = _LinearSplit(primal_jaxpr, duplicates, found["n_computed"], found["forwarded"],
                             tangent_jaxpr, nonzero, found["structured"], found["sres"],
                             found["sres_forwarded"])
        return split, not split.sres and _no_tracers(primal_jaxpr, tangent_jaxpr)


@dataclass(frozen=True)
class CallRules:
    """The JVP, linearize, transpose, partial-evaluation, batching and
    discharge rules of the call primitive ``name``; each derived call gets
    its params from ``derive``."""

    name: str
    derive: DeriveParams

    @property
    def prim(self) -> Primitive:
        return primitive(self.name)

    def jvp(self, primals: list[Any], tangents: list[Any], *, jaxpr: Jaxpr,
            **params: Any) -> tuple[list[Any], list[Any]]:
        nonzero = tuple(type(t) is not Zero for t in tangents)
        operands = [*primals, *(t for t in tangents if type(t) is not Zero)]
        n_out = len(jaxpr.outvars)
        if ad.recording_call_entry():
            structured = ad.structured_jvp_jaxpr(jaxpr, nonzero)
            new, out_nonzero, n_sres = structured.jaxpr, structured.out_nonzero, structured.n_sres
        else:
            (new, out_nonzero), n_sres = ad.jvp_jaxpr(jaxpr, nonzero), 0
        ins_s, outs_s = CS.shardings_of(params, len(primals), n_out)
        donated = _donations_of(params, len(primals))
        derived = CS.with_shardings(
            _donating(self.derive(params, new, False), [*donated, *CS.kept(donated, nonzero)]),
            [*ins_s, *CS.kept(ins_s, nonzero)],
            [*outs_s, *CS.unspecified(n_sres), *CS.kept(outs_s, out_nonzero)])
        outs = self.prim.bind(*operands, **derived)
        if n_sres:
            ad.fill_call_entry(structured.entries(outs[n_out:n_out + n_sres]))
        it = iter(outs[n_out + n_sres:])
        t_outs = [next(it) if nz else Zero(v.aval.tangent_type())
                  for nz, v in zip(out_nonzero, jaxpr.outvars)]
        return list(outs[:n_out]), t_outs

    def linearize(self, trace: ad.LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                  jaxpr: Jaxpr, **params: Any) -> tuple[list[Any], list[Any]]:
        """A primal call returning the primal outputs and the residuals it
        computes, and a tangent call reading the residuals. Residuals that are
        inputs of the call are passed from outside, not returned."""
        differentiate = tuple(type(t) is not Zero for t in tangents)
        avals = tuple(canonical_aval_of(x) for x in primals)
        split = _derived(jaxpr, ("linearize", differentiate, avals, ad.recording_call_entry()),
                         lambda: _LinearSplit.of(jaxpr, avals, differentiate))
        n_out = len(jaxpr.outvars)
        ins_s, outs_s = CS.shardings_of(params, len(primals), n_out)
        # A primal output that is an input of the call, placed as the call
        # leaves it, is that input (JAX's input forwarding).
        forwards = [f if s is CS.UNSPECIFIED else None
                    for f, s in zip(_input_forwards(split.primal_jaxpr, n_out), outs_s)]
        returned = [f is None for f in forwards] + [True] * (
            len(split.primal_jaxpr.outvars) - n_out)
        primal_jaxpr = split.primal_jaxpr
        if not all(returned):
            primal_jaxpr = dataclasses.replace(
                primal_jaxpr, outvars=[v for v, r in zip(primal_jaxpr.outvars, returned) if r],
                _plan=None)
        primal_params = CS.with_shardings(
            _donating(self.derive(params, primal_jaxpr, False),
                      _donations_of(params, len(primals))), ins_s,
            [*CS.kept(outs_s, returned[:n_out]),
             *CS.unspecified(len(split.primal_jaxpr.outvars) - n_out)])
        with set_current_trace(trace.parent):
            got = iter(self.prim.bind(*primals, **primal_params))
        kept_outs = [primals[f] if f is not None else next(got)
                     for f in forwards + [None] * (len(returned) - n_out)]
        outs = _with_duplicates(kept_outs, split.duplicates)
        n_res = n_out + split.n_computed
        computed = iter(outs[n_out:n_res])
        residuals = [primals[f] if f is not None else next(computed) for f in split.forwarded]
        if split.sres:
            structured = iter(outs[n_res:])
            values = {id(x): primals[f] if f is not None else next(structured)
                      for x, f in zip(split.sres, split.sres_forwarded)}
            ad.fill_call_entry(ad.entries_with_values(split.structured, values))
        zeros = [Zero(v.aval.tangent_type()) for v in jaxpr.outvars]
        if split.tangent_jaxpr is None:
            return list(outs[:n_out]), zeros
        t_in = [t for t in tangents if type(t) is not Zero]
        tangent_params = CS.with_shardings(
            self.derive(params, split.tangent_jaxpr, True),
            [*CS.unspecified(len(residuals)), *CS.kept(ins_s, differentiate)],
            CS.kept(outs_s, split.out_nonzero))
        t_nonzero = iter(trace.tangent_trace.process_primitive(
            self.prim, [*residuals, *t_in], tangent_params))
        return list(outs[:n_out]), [next(t_nonzero) if nz else z
                                    for nz, z in zip(split.out_nonzero, zeros)]

    def transpose(self, cts: list[Any], *args: Any, jaxpr: Jaxpr, **params: Any) -> list[Any]:
        ins_s, outs_s = CS.shardings_of(params, len(args), len(cts))
        ops = TransposedOperands.of(args)
        # Operands: the defined values and refs, placed as they were, then
        # the nonzero cotangents, placed as their results; results: the
        # cotangents, placed as their operands, then the logs.
        t_ins = [*(s for s, u, r in zip(ins_s, ops.undefined, ops.accums) if not u and not r),
                 *CS.kept(ins_s, ops.accums),
                 *(s for s, c in zip(outs_s, cts) if type(c) is not Zero)]
        t_outs = CS.kept(ins_s, ops.wanted)

        def bind(operands: list[Any], t_jaxpr: Jaxpr) -> Sequence[Any]:
            derived = CS.with_shardings(
                self.derive(params, t_jaxpr, True), t_ins,
                [*t_outs, *CS.unspecified(len(t_jaxpr.outvars) - len(t_outs))])
            outs: Sequence[Any] = self.prim.bind(*operands, **derived)
            return outs
        return transpose_call(bind, cts, args, jaxpr, self.name)

    def partial_eval(self, eqn: Eqn, ins_unknown: list[bool]
                     ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
        """Split a call whose inputs are partly unknown into a known call (also
        returning residuals) and an unknown call reading them. A residual
        that is a known input or a known output of the call is read from
        there, not returned a second time (JAX's forwarding)."""
        inner: Jaxpr = eqn.params["jaxpr"]
        split = ad.partial_eval_jaxpr(inner, ins_unknown)
        known_jaxpr = split.known
        n_known_out = len(known_jaxpr.outvars) - split.num_res
        known_outvars = [v for v, u in zip(eqn.outvars, split.out_unknowns) if not u]
        known_in = [a for a, u in zip(eqn.invars, ins_unknown) if not u]
        unknown_outvars = [v for v, u in zip(eqn.outvars, split.out_unknowns) if u]
        unknown_in = [a for a, u in zip(eqn.invars, ins_unknown) if u]
        # Where each residual comes from: a known input, a known output, or
        # an extra output of the known call.
        from_input = {id(v): a for v, a in zip(known_jaxpr.invars, known_in)}
        from_output = {id(v): o for v, o in zip(known_jaxpr.outvars[:n_known_out],
                                                known_outvars)}
        res_atoms: list[Any] = []
        returned: list[Any] = []  # the known call's residual outputs, inside
        new_res: list[Var] = []  # and outside
        for r in known_jaxpr.outvars[n_known_out:]:
            if id(r) in from_input:
                res_atoms.append(from_input[id(r)])
            elif id(r) in from_output:
                res_atoms.append(from_output[id(r)])
            else:
                new_res.append(Var(r.aval))
                res_atoms.append(new_res[-1])
                returned.append(r)
        if len(returned) != split.num_res:
            known_jaxpr = dataclasses.replace(
                known_jaxpr, outvars=[*known_jaxpr.outvars[:n_known_out], *returned],
                _plan=None)
        ins_s, outs_s = CS.shardings_of(eqn.params, len(eqn.invars), len(eqn.outvars))
        known_outs = [not u for u in split.out_unknowns]
        donated = _donations_of(eqn.params, len(eqn.invars))
        known_params = CS.with_shardings(
            _donating(self.derive(eqn.params, known_jaxpr, False),
                      CS.kept(donated, [not u for u in ins_unknown])),
            CS.kept(ins_s, [not u for u in ins_unknown]),
            [*CS.kept(outs_s, known_outs), *CS.unspecified(len(returned))])
        unknown_params = CS.with_shardings(
            _donating(self.derive(eqn.params, split.unknown, False),
                      [*[False] * split.num_res, *CS.kept(donated, ins_unknown)]),
            [*CS.unspecified(split.num_res), *CS.kept(ins_s, ins_unknown)],
            CS.kept(outs_s, split.out_unknowns))
        known = eqn.replace(invars=known_in, outvars=[*known_outvars, *new_res],
                            params=known_params)
        unknown = eqn.replace(invars=[*res_atoms, *unknown_in], outvars=unknown_outvars,
                              params=unknown_params)
        return known, unknown, split.out_unknowns

    def batch(self, axis: AxisData, args: list[Any], dims: list[Any], *, jaxpr: Jaxpr,
              **params: Any) -> tuple[list[Any], list[Any]]:
        """A call of the batched jaxpr; batch axes stay where they are."""
        def derive() -> tuple[tuple[Jaxpr, list[Any]], bool]:
            new, out_dims = batching.batch_jaxpr(jaxpr, axis, dims)
            return (new, out_dims), _no_tracers(new)

        new, out_dims = _derived(jaxpr, ("batch", axis, tuple(dims)), derive)
        ins_s, outs_s = CS.shardings_of(params, len(args), len(jaxpr.outvars))
        derived = CS.with_shardings(
            _donating(self.derive(params, new, False), _donations_of(params, len(args))),
            [CS.batched(s, d, a, axis.spmd_name)
             for s, d, a in zip(ins_s, dims, new.in_avals)],
            [CS.batched(s, d, a, axis.spmd_name)
             for s, d, a in zip(outs_s, out_dims, new.out_avals)])
        outs = self.prim.bind(*args, **derived)
        return list(outs), list(out_dims)

    def discharge(self, ins: list[Any], atoms: list[Any], params: dict[str, Any]) -> Discharged:
        """A call given refs: a call of the discharged jaxpr, which also returns
        the refs' final contents; one given none runs as usual."""
        if not any(type(a.aval) is RefType for a in atoms):
            return current_trace().process_primitive(self.prim, ins, params), []
        inner: Jaxpr = params["jaxpr"]
        new, _ = discharge_state(inner)
        n_out = len(inner.outvars)
        ins_s, outs_s = CS.shardings_of(params, len(ins), n_out)
        derived = CS.with_shardings(self.derive(params, new, False), ins_s,
                                    [*outs_s, *CS.unspecified(len(new.outvars) - n_out)])
        outs = self.prim.bind(*ins, **derived)
        refs = [k for k, v in enumerate(inner.invars) if type(v.aval) is RefType]
        return list(outs[:n_out]), list(zip(refs, outs[n_out:]))


_JIT = CallRules("jit", _call_params)


class _CallPrimitive(Primitive):
    """jit's primitive. Evaluated eagerly (an equation of a staged program,
    a call autodiff derives), a call carrying shardings places its operands
    and results by them, with the placement the API layer registers
    (``CS.register_eager_placement``)."""

    evaluates_eagerly = True

    def evaluate_eagerly(self, trace: EvalTrace, args: Sequence[Any], params: dict[str, Any]
                         ) -> list[Any] | None:
        donated = params.get("donated_invars", ())
        if any(donated):
            return _run_donating(trace, self, args, params)
        placement = CS.eager_placement()
        if placement is None or not CS.carries(params):
            return None
        operands = placement.operands(args, params[CS.IN])
        plain = CS.with_shardings(params, (), ())
        plain["jaxpr"] = _at_types(params["jaxpr"], [canonical_aval_of(x) for x in operands])
        outs = trace.process_primitive(self, operands, plain)
        return placement.results(outs, params[CS.OUT])


def _run_donating(trace: EvalTrace, prim: Primitive, args: Sequence[Any],
                  params: dict[str, Any]) -> list[Any]:
    """A compiled call with donated operands: the operands whose buffers
    the call takes (``donation_plan``) are deleted once it has run. On
    several devices each buffer is one device's shard; where the results'
    types do not give their layouts, XLA alone pairs buffers (by bytes,
    with the layouts the run gives the results). NumPy arrays and scalars
    are copied in, so nothing is taken from the caller."""
    jaxpr: Jaxpr = params["jaxpr"]
    donated = params["donated_invars"]
    keep = bool(params.get("keep_unused"))
    laid_out = any(isinstance(x, Array) and x._sharding is not None for x in args) or any(
        getattr(a, "sharding", None) is not None for a in jaxpr.in_avals)
    plan = partitioned_plan(jaxpr, donated, keep, stacklevel=6) if laid_out else \
        donation_plan(jaxpr, donated, keep, stacklevel=6)
    if plan is not None:
        check_buffer_reuse(plan, args)
    plain = dict(params, donated_invars=(False,) * len(args))
    outs = trace.process_primitive(prim, args, plain)
    if plan is None:
        plan = donation_plan(
            jaxpr, donated, keep,
            in_shapes=tuple(_buffer_shape(x, a) for x, a in zip(args, jaxpr.in_avals)),
            out_shapes=tuple(_buffer_shape(o, v.aval) for o, v in zip(outs, jaxpr.outvars)),
            by_xla=True)
    for i in plan.consumed:
        x = args[i]
        if isinstance(x, Array):
            x.delete()
    return outs


def _buffer_shape(x: Any, aval: Any) -> tuple[int, ...]:
    """The shape of one device's buffer of ``x`` (of type ``aval``)."""
    s = getattr(x, "_sharding", None) if isinstance(x, Array) else None
    if s is None:
        return tuple(aval.shape)
    return tuple(s.shard_shape(tuple(aval.shape)))


# Bodies retyped at the types of placed operands, per body and types.
_RETYPED: weakref.WeakKeyDictionary[Jaxpr, dict[tuple[Any, ...], Jaxpr]] = \
    weakref.WeakKeyDictionary()


def _at_types(jaxpr: Jaxpr, avals: list[Any]) -> Jaxpr:
    """The body typed at its placed operands' types: the results of a
    program whose operands are laid out over a mesh are laid out as the
    sharding rules give them (where JAX's compiler propagates the operands'
    shardings), not gathered by the unplaced types it was traced at."""
    if all(a == b and getattr(a, "sharding", None) == getattr(b, "sharding", None)
           for a, b in zip(avals, jaxpr.in_avals)):
        return jaxpr
    known = _RETYPED.setdefault(jaxpr, {})
    key = tuple(avals)
    if key not in known:
        known[key] = trace_to_jaxpr(_evaluator(jaxpr), avals)[0]
    return known[key]


jit_p = declaring(_CallPrimitive)("jit", typing=_jit_type, impl=call_impl, multiple_results=True,
                lowering=jit_call,
                pp_rule=_pp_jit, jvp=_JIT.jvp, transpose=_JIT.transpose, batch=_JIT.batch,
                sharding=sharding_of_call("jaxpr"),
                linearize=_JIT.linearize, partial_eval=_JIT.partial_eval, dce=_jit_dce,
                transpose_accumulates=True,  # the call's body adds into gradient refs
                accepts_refs=True, effects_rule=call_effects, discharge=_JIT.discharge,
                per_device=from_primitive(PD.call_program("jaxpr")),
                vma_rule=VMA_FROM_TYPING, to_lojax=_jit_to_lojax)
