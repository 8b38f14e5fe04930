"""Rematerialisation primitives: ``remat2`` (what ``checkpoint`` binds) and
``name`` (what ``checkpoint_name`` binds).

``remat2`` carries a sub-jaxpr and evaluates it; it differs from a plain call
only under reverse-mode differentiation. Linearizing it splits its JVP jaxpr
with a *policy-aware* partial evaluator: the primal side computes the primal
outputs and only those residuals the policy calls saveable; everything else
the tangent side needs is recomputed inside a ``remat2`` equation marked
``differentiated=True`` that reads the saved residuals and the checkpoint's
own inputs. A policy is a predicate ``policy(prim, *in_avals, **params)`` on
the equations of the JVP jaxpr whose inputs are all primal; ``None`` means
nothing is saveable.

``name`` is the identity; the name labels a value so that name-based
policies can select it.
"""

from __future__ import annotations

import ml_dtypes

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.interpreters import ad, batching
from spec._src.interpreters.batching import AxisData
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero
from spec._src.core.interpreter import (
    Atom,
    Eqn,
    Jaxpr,
    Var,
    canonical_aval_of,
    dce_sub_jaxpr,
    eval_jaxpr,
    eval_jaxpr_values,
    pp_eqn_default,
    set_current_trace,
    sharding_of_call,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.lowering import control as CL
from spec._src.lowering import structural as ST
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.core.interpreter import from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.core.interpreter import VMA_FROM_TYPING
from spec._src.core import source_info as si
from spec._src.core import types as T
from spec._src.lax import call_shardings as CS
from spec._src.lax.reductions import reduce_precision_p
from spec._src.lax.reshard import ArrayCopySemantics, device_put_p

Policy = Callable[..., Any]


@dataclass(frozen=True)
class Offloadable:
    """A policy's answer for a value kept in another memory (memory kind
    ``src`` to ``dst``, e.g. ``"device"`` to ``"pinned_host"``) rather than
    recomputed: the forward pass copies it there, the backward pass copies it
    back before reading it."""

    src: str
    dst: str

    def __bool__(self) -> bool:
        return True


class RecomputeType:
    """The type of ``Recompute``, a policy's answer for a value recomputed
    in the backward pass (as ``False``)."""

    def __bool__(self) -> bool:
        return False


class SaveableType:
    """The type of ``Saveable``, a policy's answer for a value saved as a
    residual (as ``True``)."""

    def __bool__(self) -> bool:
        return True


Recompute = RecomputeType()
Saveable = SaveableType()

# ------------------------------------------------------------------ remat2


def _remat_type(*avals: ArrayType, jaxpr: Jaxpr, prevent_cse: bool | tuple[bool, ...],
                differentiated: bool, policy: Policy | None) -> list[ArrayType]:
    expected = jaxpr.in_avals
    require(not jaxpr.constvars, "remat2", "C1",
            f"the jaxpr must be closed over no constants; it has {len(jaxpr.constvars)}")
    require(len(avals) == len(expected), "remat2", "C2",
            f"called with {len(avals)} operands, the jaxpr takes {len(expected)}")
    for i, (got, want) in enumerate(zip(avals, expected)):
        require(got.shape == want.shape and got.dtype == want.dtype, "remat2", "C3",
                f"operand {i} has type {got}, the jaxpr expects {want}")
    require(isinstance(prevent_cse, bool) or len(prevent_cse) == len(avals), "remat2", "C4",
            f"prevent_cse must be a bool or one bool per operand ({len(avals)}); got "
            f"{prevent_cse}")
    return jaxpr.out_avals


def _remat_impl(*args: np.ndarray, jaxpr: Jaxpr, **params: Any) -> Sequence[np.ndarray]:
    return eval_jaxpr_values(jaxpr, [], args)


class _Masked:
    """A param shown with object addresses masked, as JAX prints params
    (``<function f at 0xXXXXXXXXXXXX>``): jaxpr text is then reproducible."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                      str(self.value))


def _pp_remat(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    params["policy"] = _Masked(params["policy"])
    return pp_eqn_default(eqn, ctx, params)


def _hoist_consts(jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    """All constants become leading inputs (the jaxpr of ``remat2`` is
    closed over nothing; its constants are operands, as in JAX)."""
    if not jaxpr.constvars:
        return jaxpr, []
    new = Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                jaxpr.effects)
    return new, list(jaxpr.consts)


def _cse_extend(prevent_cse: bool | tuple[bool, ...], n: int) -> bool | tuple[bool, ...]:
    return prevent_cse + (True,) * n if isinstance(prevent_cse, tuple) else prevent_cse


# ---------------------------------------------------------------------- JVP

def _jvp_jaxpr(jaxpr: Jaxpr, nonzero: tuple[bool, ...]) -> tuple[Jaxpr, list[Any], list[bool]]:
    """The JVP of ``jaxpr`` (``ad.jvp_jaxpr``) with its constants hoisted to
    leading inputs, their values returned."""
    traced, out_nonzero = ad.jvp_jaxpr(jaxpr, nonzero)
    new, consts = _hoist_consts(traced)
    return new, consts, out_nonzero


def _remat_jvp(primals: list[Any], tangents: list[Any], *, jaxpr: Jaxpr,
               prevent_cse: bool | tuple[bool, ...], differentiated: bool,
               policy: Policy | None) -> tuple[list[Any], list[Any]]:
    """Forward mode: a ``remat2`` of the JVP jaxpr (JAX keeps the
    ``differentiated`` flag as it was)."""
    nonzero = tuple(type(t) is not Zero for t in tangents)
    new, consts, out_nonzero = _jvp_jaxpr(jaxpr, nonzero)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    cse = prevent_cse
    if isinstance(cse, tuple):
        cse = (False,) * len(consts) + cse + (True,) * len(nz_tangents)
    outs = remat_p.bind(*consts, *primals, *nz_tangents, jaxpr=new, prevent_cse=cse,
                        differentiated=differentiated, policy=policy)
    n_out = len(jaxpr.outvars)
    it = iter(outs[n_out:])
    t_outs = [next(it) if nz else Zero(v.aval.tangent_type())
              for nz, v in zip(out_nonzero, jaxpr.outvars)]
    return list(outs[:n_out]), t_outs


# ------------------------------------------------- policy-aware partial eval


@dataclass
class RematSplit:
    """A jaxpr split by remat partial evaluation.

    ``known`` takes the known inputs and returns the known outputs followed by
    the ``num_res`` residuals (the values the policy allowed to be saved that
    the staged side reads). ``staged`` takes the residuals followed by the
    inputs flagged in ``staged_inputs`` (known inputs included: they are the
    checkpoint's own inputs, always available) and returns the unknown
    outputs; it recomputes every non-saveable primal value it needs."""

    known: Jaxpr
    staged: Jaxpr
    out_unknowns: list[bool]
    num_res: int
    staged_inputs: list[bool]
    out_staged: list[bool]


def _nothing_saveable(*_: Any, **__: Any) -> bool:
    return False


def _answer(policy: Policy, eqn: Eqn) -> Any:
    """The policy's answer for ``eqn``: falsy (recompute), an ``Offloadable``,
    or anything else truthy (save)."""
    return policy(eqn.primitive, *[a.aval for a in eqn.invars], **eqn.params)


def _saveable(policy: Policy, eqn: Eqn) -> bool:
    return bool(_answer(policy, eqn))


def _copy_to_memory(x: Var, out: Var, kind: str) -> Eqn:
    """``out = device_put x`` into the memory of ``kind`` (always a copy)."""
    return Eqn([x], [out], device_put_p,
               {"devices": (T.memory_space_of_kind(kind),), "srcs": (None,),
                "copy_semantics": (ArrayCopySemantics.ALWAYS_COPY,)})


def _offload(offload: Offloadable, eqn: Eqn) -> tuple[list[Eqn], list[Eqn], list[Var]]:
    """The known side copies each output of ``eqn`` to ``offload.dst`` (a
    residual); the staged side copies it back to ``offload.src`` into the
    output's own variable."""
    known, staged, residuals = [], [], []
    for v in eqn.outvars:
        moved = Var(v.aval.update(memory_space=T.memory_space_of_kind(offload.dst)))
        known.append(_copy_to_memory(v, moved, offload.dst))
        staged.append(_copy_to_memory(moved, v, offload.src))
        residuals.append(moved)
    return known, staged, residuals


# A partial-eval rule of a primitive with sub-jaxprs (scan, cond, while):
# ``rule(policy, unks_in, inst_in, eqn)`` returns the known equation (or
# None), the staged equation (or None), which outputs are unknown, which the
# staged side has, and the residual variables (known values the staged
# equation reads that it could not compute itself).
CustomRule = Callable[[Policy, list[bool], list[bool], Eqn],
                      tuple[Eqn | None, Eqn | None, list[bool], list[bool], list[Var]]]


def partial_eval_jaxpr_custom(jaxpr: Jaxpr, in_unknowns: Sequence[bool],
                              in_inst: bool | Sequence[bool],
                              ensure_out_unknowns: bool | Sequence[bool],
                              ensure_out_inst: bool | Sequence[bool],
                              policy: Policy | None
                              ) -> tuple[Jaxpr, Jaxpr, list[bool], list[bool], int]:
    """JAX's policy-aware split (``partial_eval_jaxpr_custom``), no cleanup.

    Each variable has two flags: *unknown* (depends on an unknown input) and
    *instantiated* (the staged side has it without a residual). An equation
    reading an unknown is staged. One reading only knowns runs on the known
    side; if the policy saves it, its outputs are known but not
    instantiated (a staged reader makes them residuals); otherwise it is also
    copied to the staged side (recomputed there). Primitives with a
    ``remat_rule`` (a ``CustomRule``) split themselves; calls (``remat2``, ``jit``) split
    recursively. Returns the known jaxpr (known inputs -> known outputs,
    residuals), the staged jaxpr (residuals, instantiated inputs ->
    instantiated outputs), the output flags and the number of residuals."""
    pol = policy if policy is not None else _nothing_saveable
    n_in, n_out = len(jaxpr.invars), len(jaxpr.outvars)
    inst_in = [in_inst] * n_in if isinstance(in_inst, bool) else list(in_inst)
    ens_uk = [ensure_out_unknowns] * n_out if isinstance(ensure_out_unknowns, bool) \
        else list(ensure_out_unknowns)
    ens_inst = [ensure_out_inst] * n_out if isinstance(ensure_out_inst, bool) \
        else list(ensure_out_inst)
    env: dict[int, tuple[bool, bool]] = {}
    residuals: dict[int, Var] = {}
    known_eqns: list[Eqn] = []
    staged_eqns: list[Eqn] = []

    def read(a: Atom) -> tuple[bool, bool]:
        return env.get(id(a), (False, True)) if isinstance(a, Var) else (False, True)

    def write(unk: bool, inst: bool, v: Var) -> None:
        env[id(v)] = (unk, inst)

    def ensure_inst(a: Atom) -> None:
        if isinstance(a, Var) and not read(a)[1]:
            residuals.setdefault(id(a), a)

    for v, u, i in zip(jaxpr.invars, in_unknowns, inst_in):
        write(u, i, v)
    for eqn in jaxpr.eqns:
        unks = [read(a)[0] for a in eqn.invars]
        rule = eqn.primitive.remat_rule
        if callable(rule):
            k_eqn, s_eqn, unks_out, inst_out, res = rule(
                pol, unks, [read(a)[1] for a in eqn.invars], eqn)
            if k_eqn is not None:
                known_eqns.append(k_eqn)
            if s_eqn is not None:
                staged_eqns.append(s_eqn)
            for r in res:
                residuals.setdefault(id(r), r)
            for v, u, i in zip(eqn.outvars, unks_out, inst_out):
                write(u, i, v)
        elif any(unks) and callable(eqn.primitive.partial_eval):
            if eqn.primitive.name in ("remat2", "jit"):
                # Nested calls split recursively under this (outer) policy, as JAX does.
                k_eqn2, u_eqn, outs_unknown = _split_call(eqn, unks, pol)
            else:
                k_eqn2, u_eqn, outs_unknown = eqn.primitive.partial_eval(eqn, unks)
            if k_eqn2 is not None:
                known_eqns.append(k_eqn2)
                saved = _saveable(pol, k_eqn2)
                if not saved:
                    # The known call is recomputed whole on the staged side (a
                    # primal-only equation there, which transposition evaluates).
                    for a in k_eqn2.invars:
                        ensure_inst(a)
                    staged_eqns.append(k_eqn2)
                for v in k_eqn2.outvars:
                    write(False, not saved, v)
            if u_eqn is not None:
                for a in u_eqn.invars:
                    ensure_inst(a)
                staged_eqns.append(u_eqn)
            for v, u in zip(eqn.outvars, outs_unknown):
                if u:
                    write(True, True, v)
        elif any(unks):
            for a in eqn.invars:
                ensure_inst(a)
            staged_eqns.append(eqn)
            for v in eqn.outvars:
                write(True, True, v)
        else:
            known_eqns.append(eqn)
            answer = _answer(pol, eqn)
            if isinstance(answer, Offloadable):
                copies_out, copies_back, moved = _offload(answer, eqn)
                known_eqns.extend(copies_out)
                staged_eqns.extend(copies_back)
                for m in moved:
                    residuals.setdefault(id(m), m)
                for v in eqn.outvars:
                    write(False, True, v)
            elif answer:
                for v in eqn.outvars:
                    write(False, False, v)
            else:
                for a in eqn.invars:
                    ensure_inst(a)
                staged_eqns.append(eqn)
                for v in eqn.outvars:
                    write(False, True, v)
    out_flags = [read(a) for a in jaxpr.outvars]
    for a, (_, i), e in zip(jaxpr.outvars, out_flags, ens_inst):
        if e and not i:
            ensure_inst(a)
    out_unknowns = [f[0] or e for f, e in zip(out_flags, ens_uk)]
    out_inst = [f[1] or e for f, e in zip(out_flags, ens_inst)]
    res_vars = list(residuals.values())
    known = Jaxpr(list(jaxpr.constvars), [v for v, u in zip(jaxpr.invars, in_unknowns) if not u],
                  [*(a for a, u in zip(jaxpr.outvars, out_unknowns) if not u), *res_vars],
                  known_eqns, consts=list(jaxpr.consts))
    staged = Jaxpr(list(jaxpr.constvars),
                   [*res_vars, *(v for v, i in zip(jaxpr.invars, inst_in) if i)],
                   [a for a, i in zip(jaxpr.outvars, out_inst) if i], staged_eqns,
                   consts=list(jaxpr.consts))
    return known, staged, out_unknowns, out_inst, len(res_vars)


def remat_partial_eval_jaxpr(jaxpr: Jaxpr, in_unknowns: Sequence[bool],
                             policy: Policy | None, stage_known_outputs: bool = False
                             ) -> RematSplit:
    """Split ``jaxpr`` (closed over nothing) as JAX's ``remat_partial_eval``:
    ``partial_eval_jaxpr_custom`` with every input instantiated (the
    checkpoint's inputs are available on both sides), then dead code is
    removed (with the primitives' DCE rules): the staged side keeps its
    unknown outputs (with ``stage_known_outputs`` also the known outputs it
    recomputes) and the inputs and residuals they need, the known side its
    known outputs and those residuals. Residuals that the known side also
    reads get a ``reduce_precision`` (as JAX does, so that both passes see
    the same rounded value)."""
    known, staged, out_unknowns, out_inst, num_res = partial_eval_jaxpr_custom(
        jaxpr, in_unknowns, True, False, False, policy)
    out_staged = [u or (stage_known_outputs and i) for u, i in zip(out_unknowns, out_inst)]
    keep = [st for st, i in zip(out_staged, out_inst) if i]
    staged, staged_used = dce_sub_jaxpr(staged, keep)
    res_used = staged_used[:num_res]
    staged_inputs = staged_used[num_res:]
    n_known_out = len(known.outvars) - num_res
    known, _ = dce_sub_jaxpr(known, [True] * n_known_out + res_used, True)
    n_res = sum(res_used)
    known = _insert_reduce_precision(known, n_res)
    return RematSplit(known, staged, out_unknowns, n_res, staged_inputs, out_staged)


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool], prune_inputs: bool = True
              ) -> tuple[Jaxpr, list[bool]]:
    """Drop equations whose outputs nothing reads (and, with
    ``prune_inputs``, inputs nothing reads); returns which inputs are used."""
    outvars = [a for a, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {id(a) for a in outvars if isinstance(a, Var)}
    kept: list[Eqn] = []
    for eqn in reversed(jaxpr.eqns):
        if any(id(v) in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(id(a) for a in eqn.invars if isinstance(a, Var))
    kept.reverse()
    used_in = [id(v) in live for v in jaxpr.invars]
    invars = [v for v, u in zip(jaxpr.invars, used_in) if u] if prune_inputs \
        else list(jaxpr.invars)
    return Jaxpr(list(jaxpr.constvars), invars, outvars, kept, jaxpr.effects,
                 list(jaxpr.consts)), used_in


def _float_layout(dt: np.dtype[Any]) -> tuple[int, int]:
    info = ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]
    return int(info.nexp), int(info.nmant)


def _insert_reduce_precision(jaxpr: Jaxpr, num_res: int) -> Jaxpr:
    """After the producer of each floating residual that known equations
    also read, round it with ``reduce_precision`` to its own format; later
    readers and the residual output see the rounded value."""
    res_vars = jaxpr.outvars[len(jaxpr.outvars) - num_res:]
    read = {id(a) for e in jaxpr.eqns for a in e.invars if isinstance(a, Var)}
    eqns = list(jaxpr.eqns)
    for v in res_vars:
        if not isinstance(v, Var) or not T.is_float(v.aval.dtype) or id(v) not in read:
            continue
        where = [i for i, e in enumerate(eqns) if any(o is v for o in e.outvars)]
        if not where:
            continue  # an input: JAX rounds only computed residuals here
        i = where[0]
        producer = eqns[i]
        e_bits, m_bits = _float_layout(v.aval.dtype)
        params = {"exponent_bits": e_bits, "mantissa_bits": m_bits}
        if producer.primitive is reduce_precision_p and producer.params == params:
            continue
        fresh = Var(v.aval)
        eqns[i] = producer.replace(outvars=[fresh if o is v else o for o in producer.outvars])
        eqns.insert(i + 1, Eqn([fresh], [v], reduce_precision_p, params))
    return Jaxpr(list(jaxpr.constvars), list(jaxpr.invars), list(jaxpr.outvars), eqns,
                 jaxpr.effects, list(jaxpr.consts))


def _split_call(eqn: Eqn, ins_unknown: list[bool], policy: Policy | None,
                nested: bool = False) -> tuple[Eqn, Eqn, list[bool]]:
    """Split a call equation (``remat2`` or ``jit``) in two with ``policy``:
    a known call returning the known outputs and residuals, and a staged call
    (``differentiated=True`` for remat2) reading them and the call's operands.
    ``nested``: the staged call also returns the known outputs it recomputes."""
    params = eqn.params
    split = remat_partial_eval_jaxpr(params["jaxpr"], ins_unknown, policy, nested)
    res_vars = [Var(v.aval) for v in split.known.outvars[len(split.known.outvars)
                                                         - split.num_res:]]
    known_outvars = [v for v, u in zip(eqn.outvars, split.out_unknowns) if not u]
    unknown_outvars = [v for v, st in zip(eqn.outvars, split.out_staged) if st]
    known_in = [a for a, u in zip(eqn.invars, ins_unknown) if not u]
    staged_in = [a for a, u in zip(eqn.invars, split.staged_inputs) if u]
    known_params = {**params, "jaxpr": split.known}
    staged_params = {**params, "jaxpr": split.staged}
    if eqn.primitive is remat_p:
        cse = params["prevent_cse"]
        if isinstance(cse, tuple):
            known_params["prevent_cse"] = tuple(c for c, u in zip(cse, ins_unknown) if not u)
            staged_params["prevent_cse"] = (True,) * len(res_vars) + tuple(
                c for c, u in zip(cse, split.staged_inputs) if u)
        staged_params["differentiated"] = True
    else:  # jit: one donation flag and sharding entry per operand
        known_params["donated_invars"] = (False,) * len(known_in)
        staged_params["donated_invars"] = (False,) * (len(res_vars) + len(staged_in))
        ins, outs = CS.shardings_of(params, len(eqn.invars), len(eqn.outvars))
        known_params = CS.with_shardings(
            known_params, CS.kept(ins, [not u for u in ins_unknown]),
            [*CS.kept(outs, [not u for u in split.out_unknowns]), *CS.unspecified(len(res_vars))])
        staged_params = CS.with_shardings(
            staged_params, [*CS.unspecified(len(res_vars)), *CS.kept(ins, split.staged_inputs)],
            CS.kept(outs, split.out_staged))
    known = eqn.replace(invars=known_in, outvars=[*known_outvars, *res_vars],
                        params=known_params)
    staged = eqn.replace(invars=[*res_vars, *staged_in], outvars=unknown_outvars,
                         params=staged_params)
    return known, staged, split.out_unknowns


# ----------------------------------------------------------- direct linearize


def _remat_linearize(trace: ad.LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                     jaxpr: Jaxpr, prevent_cse: bool | tuple[bool, ...],
                     differentiated: bool, policy: Policy | None
                     ) -> tuple[list[Any], list[Any]]:
    """The primal side runs the known part inline (the primal outputs and
    the saved residuals); the tangent side gets one ``remat2`` equation,
    ``differentiated=True``, reading the residuals, the checkpoint's inputs
    it needs and the tangents, and recomputing everything else."""
    nonzero = tuple(type(t) is not Zero for t in tangents)
    jvp, consts, out_nonzero = _jvp_jaxpr(jaxpr, nonzero)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    operands = [*consts, *primals, *nz_tangents]
    n_known = len(consts) + len(primals)
    in_unknowns = [False] * n_known + [True] * len(nz_tangents)
    split = remat_partial_eval_jaxpr(jvp, in_unknowns, policy)
    n_out = len(jaxpr.outvars)
    if any(split.out_unknowns[:n_out]):
        raise ValueError("Linearization of remat2 failed to compute its primal outputs "
                         "from the primal inputs alone")
    with set_current_trace(trace.parent):
        known_outs = eval_jaxpr(split.known, [], *operands[:n_known])
    n_known_out = len(known_outs) - split.num_res
    residuals = known_outs[n_known_out:]
    primal_outs = known_outs[:n_out]
    # Tangent outputs computed on the known side (none in practice) are constants.
    known_t_outs = iter(known_outs[n_out:n_known_out])
    staged_in = [x for x, u in zip(operands, split.staged_inputs) if u]
    cse = prevent_cse
    if isinstance(cse, tuple):
        full = (False,) * len(consts) + cse + (True,) * len(nz_tangents)
        cse = (True,) * len(residuals) + tuple(c for c, u in zip(full, split.staged_inputs)
                                               if u)
    with si.whole_name_stack_under_suffix():
        staged_outs = iter(trace.tangent_trace.process_primitive(
            remat_p, [*residuals, *staged_in],
            {"jaxpr": split.staged, "prevent_cse": cse, "differentiated": True,
             "policy": policy}))
    t_flags = iter(split.out_unknowns[n_out:])
    t_outs: list[Any] = []
    for nz, v in zip(out_nonzero, jaxpr.outvars):
        if not nz:
            t_outs.append(Zero(v.aval.tangent_type()))
        else:
            t_outs.append(next(staged_outs) if next(t_flags) else next(known_t_outs))
    return list(primal_outs), t_outs


# ---------------------------------------------------- legacy partial eval


def _remat_partial_eval(eqn: Eqn, ins_unknown: list[bool]
                        ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
    """Legacy linearize: the known side is a ``remat2`` equation (same
    policy) returning the known outputs and the saved residuals; the unknown
    side a ``remat2`` equation with ``differentiated=True``. (JAX inlines the
    known side instead; values are the same.)"""
    return _split_call(eqn, ins_unknown, eqn.params["policy"])


# ---------------------------------------------------------------- transpose


def _rematted_backward(jaxpr: Jaxpr, undefined: Sequence[bool], ct_nonzero: Sequence[bool]
                       ) -> Callable[..., list[Any]]:
    """The backward pass of a checkpointed (linear-in-``undefined``) jaxpr as
    a function to trace, as JAX transposes ``remat2``: the jaxpr is first
    split by partial evaluation (a loop carrying primal and tangent values
    splits into a primal loop and a linear one), the primal part is
    re-evaluated from the defined operands, then the linear part is
    transposed. Takes the defined operands then the nonzero output
    cotangents; returns every input's cotangent (None for defined ones)."""
    split = ad.partial_eval_jaxpr(jaxpr, list(undefined), False)
    n_defined = sum(not u for u in undefined)
    n_known_out = len(split.known.outvars) - split.num_res
    lin_avals = [v.aval for v, u in zip(jaxpr.invars, undefined) if u]

    def backward(*xs: Any) -> list[Any]:
        # As in JAX, the recomputed primal values carry the scope
        # ``rematted_computation``.
        with si.named_scope("rematted_computation"):
            known_outs = eval_jaxpr(split.known, split.known.consts, *xs[:n_defined])
        res = known_outs[n_known_out:]
        ct_it = iter(xs[n_defined:])
        cts = [next(ct_it) if nz else Zero(v.aval.ct_type())
               for nz, v in zip(ct_nonzero, jaxpr.outvars)]
        lin_cts = [c for c, u in zip(cts, split.out_unknowns) if u]
        got = iter(ad.backward_pass(split.unknown, [], [*res, *(UndefinedPrimal(a)
                                                                for a in lin_avals)],
                                    lin_cts)[len(res):])
        return [next(got) if u else None for u in undefined]

    return backward


def _remat_transpose(cts: list[Any], *args: Any, jaxpr: Jaxpr,
                     prevent_cse: bool | tuple[bool, ...], differentiated: bool,
                     policy: Policy | None) -> list[Any]:
    """A ``remat2`` of the transposed jaxpr: it reads the defined operands
    and the nonzero cotangents, re-evaluates the primal recomputation the
    linear jaxpr holds, and returns the nonzero input cotangents."""
    undefined = [type(a) is UndefinedPrimal for a in args]
    defined = [a for a, u in zip(args, undefined) if not u]
    ct_nonzero = [type(c) is not Zero for c in cts]
    in_nonzero: list[bool] = []

    backward = _rematted_backward(jaxpr, undefined, ct_nonzero)

    def transposed(*xs: Any) -> list[Any]:
        cts_in = backward(*xs)
        # float0 cotangents (of integer tangents) stay symbolic zeros.
        got = [c for c, u in zip(cts_in, undefined) if u]
        in_nonzero.extend(type(c) is not Zero and canonical_aval_of(c).dtype != FLOAT0
                          for c in got)
        return [c for c, nz in zip(got, in_nonzero) if nz]

    avals = [canonical_aval_of(a) for a in defined] + \
        [v.aval.ct_type() for v, nz in zip(jaxpr.outvars, ct_nonzero) if nz]
    # The backward rules' logs leave the recomputation unchanged.
    logged = ad.LoggedBody()
    traced, _ = trace_to_jaxpr(logged.wrap(transposed), avals)
    t_jaxpr, consts = _hoist_consts(traced)
    cse = prevent_cse
    if isinstance(cse, tuple):
        cse = (False,) * len(consts) + tuple(c for c, u in zip(cse, undefined) if not u) + \
            (True,) * sum(ct_nonzero)
    got, logs = logged.split(remat_p.bind(
        *consts, *defined, *(c for c in cts if type(c) is not Zero), jaxpr=t_jaxpr,
        prevent_cse=cse, differentiated=differentiated, policy=policy))
    ad.add_logs(logs, f"the transpose rule for '{remat_p.name}'")
    outs = iter(got)
    flags = iter(in_nonzero)
    result: list[Any] = []
    for a, u in zip(args, undefined):
        if not u:
            result.append(None)
        elif next(flags):
            result.append(next(outs))
        else:
            result.append(Zero(a.aval.ct_type()))
    return result


def _remat_batch(axis: AxisData, args: list[Any], dims: list[Any], *, jaxpr: Jaxpr,
                 prevent_cse: bool | tuple[bool, ...], differentiated: bool,
                 policy: Policy | None) -> tuple[list[Any], list[Any]]:
    """A ``remat2`` of the batched jaxpr (its constants hoisted to operands):
    inputs keep their batch axes, mapped outputs get theirs at 0 (as JAX)."""
    batched, out_dims = batching.batch_jaxpr(
        jaxpr, axis, dims, [batching.zero_if_mapped] * len(jaxpr.outvars))
    new, consts = _hoist_consts(batched)
    outs = remat_p.bind(*consts, *args, jaxpr=new,
                        prevent_cse=_cse_extend_front(prevent_cse, len(consts)),
                        differentiated=differentiated, policy=policy)
    return list(outs), out_dims


def _cse_extend_front(prevent_cse: bool | tuple[bool, ...], n: int) -> bool | tuple[bool, ...]:
    return (True,) * n + prevent_cse if isinstance(prevent_cse, tuple) else prevent_cse


def _remat_dce(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
    """The checkpoint of the pruned jaxpr: unused results, the work only they
    needed, and operands nothing reads any more go (with their per-operand
    ``prevent_cse`` flags)."""
    jaxpr: Jaxpr = eqn.params["jaxpr"]
    new, used_inputs = dce_sub_jaxpr(jaxpr, used_outputs)
    if new is jaxpr:
        return used_inputs, eqn
    prevent_cse = eqn.params["prevent_cse"]
    if isinstance(prevent_cse, tuple):
        prevent_cse = tuple(p for p, u in zip(prevent_cse, used_inputs) if u)
    return used_inputs, eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, jaxpr=new, prevent_cse=prevent_cse))


remat_p = declare("remat2", lowering=CL.remat,
                  typing=_remat_type, impl=_remat_impl, multiple_results=True,
                  pp_rule=_pp_remat, jvp=_remat_jvp, transpose=_remat_transpose,
                  batch=_remat_batch, sharding=sharding_of_call("jaxpr"),
                  doc="checkpoint / remat: evaluate a jaxpr; rematerialise under AD",
                  linearize=_remat_linearize, partial_eval=_remat_partial_eval, dce=_remat_dce,
                  per_device=from_primitive(PD.call_program("jaxpr")),
                  vma_rule=VMA_FROM_TYPING)


# --------------------------------------------------------------------- name


def _name_type(x: ArrayType, *, name: str) -> list[ArrayType]:
    require(isinstance(name, str), "name", "C1",
            f"the name must be a string; got {name!r} of type {type(name).__name__}")
    return [x]


def _name_sharding(x: ArrayType, *, name: str) -> list[Any]:
    # The identity: the operand's sharding (unreduced/reduced axes included).
    return [x.sharding]


def _name_impl(x: np.ndarray, *, name: str) -> list[np.ndarray]:
    return [x]


def _name_jvp(primals: list[Any], tangents: list[Any], *, name: str
              ) -> tuple[list[Any], list[Any]]:
    # The tangent is not named (as in JAX): policies select primal values.
    return [name_p.bind(primals[0], name=name)], [tangents[0]]


def _name_transpose(ct: Any, x: Any, *, name: str) -> list[Any]:
    return [ct]


name_p = declare("name", lowering=ST.identity, typing=_name_type, impl=_name_impl, jvp=_name_jvp,
                 transpose=_name_transpose, batch=batching.vectorized(),
                 sharding=_name_sharding,
                 doc="checkpoint_name: the identity, labelled",
                 per_device=from_primitive(PD.local))


__all__ = ["Recompute", "RecomputeType", "Saveable", "SaveableType", "Offloadable", "RematSplit",
           "dce_jaxpr", "name_p", "remat_p", "remat_partial_eval_jaxpr"]
