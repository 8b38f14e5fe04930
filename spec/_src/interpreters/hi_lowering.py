"""Lowering programs with hi types to programs on arrays.

A jaxpr may have values of user-defined (hi) types: as inputs, outputs,
constants and intermediates. ``lower_jaxpr`` gives the same program on the
arrays those values lower to: each hi input becomes its ``lo_types``, and
each equation that touches a hi type is replaced by what its primitive's
``to_lojax`` rule does with the hi values rebuilt from their components
(a hijax primitive: its ``expand``; a call: its body, lowered). Equations
on arrays only are re-staged unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.core.hitypes import is_high, lo_types, lower_value, raise_values
from spec._src.core.interpreter import (
    Eqn,
    Jaxpr,
    Literal,
    Var,
    jaxprs_in_params,
    literal_value,
    trace_to_jaxpr,
)


def has_hi_types(jaxpr: Jaxpr) -> bool:
    """Whether any value of ``jaxpr`` (or of a sub-jaxpr) has a hi type."""
    if any(is_high(v.aval) for v in (*jaxpr.constvars, *jaxpr.invars)):
        return True
    return any(_eqn_has_hi_types(e) for e in jaxpr.eqns)


def _eqn_has_hi_types(eqn: Eqn) -> bool:
    if any(is_high(a.aval) for a in (*eqn.invars, *eqn.outvars)):
        return True
    return any(has_hi_types(j) for j in jaxprs_in_params(eqn.params))


def lower_jaxpr(jaxpr: Jaxpr, lo_in: Sequence[Any] | None = None) -> Jaxpr:
    """The program of ``jaxpr`` on the lowered components of its values
    (of types ``lo_in`` where the caller knows more of them than the hi
    types say, e.g. inside shard_map, along which axes they vary)."""
    in_avals = jaxpr.in_avals
    if lo_in is None:
        lo_in = [lo for a in in_avals for lo in lo_types(a)]
    out_avals = jaxpr.out_avals

    def run(*los: Any) -> list[Any]:
        outs = eval_lowering(jaxpr, jaxpr.consts, raise_values(in_avals, los))
        return [lo for a, o in zip(out_avals, outs) for lo in lower_value(a, o)]

    lowered, _ = trace_to_jaxpr(run, list(lo_in))
    return lowered


def eval_lowering(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Evaluate ``jaxpr`` with hi values as their value classes: equations
    that touch hi types run their primitive's ``to_lojax`` rule."""
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom: Any) -> Any:
        return literal_value(atom) if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.invars]
        prim = eqn.primitive
        if _eqn_has_hi_types(eqn):
            if not callable(prim.to_lojax):
                raise NotImplementedError(
                    f"'{prim.name}' has no rule for hi-typed operands or results (to_lojax); "
                    f"its equation {eqn} cannot be lowered")
            outs = prim.to_lojax(*ins, **eqn.params)
        else:
            out = prim.bind(*ins, **eqn.params)
            outs = out if prim.multiple_results else [out]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def lower_call(args: Sequence[Any], jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    """A call's body lowered, and its operands as their components."""
    los = [lo for a, x in zip(jaxpr.in_avals, args) for lo in lower_value(a, x)]
    return lower_jaxpr(jaxpr), los


def expand_flags(avals: Sequence[Any], flags: Sequence[Any]) -> tuple[Any, ...]:
    """A per-operand parameter (e.g. donation) repeated per component."""
    return tuple(f for a, f in zip(avals, flags) for _ in lo_types(a))


__all__ = ["eval_lowering", "expand_flags", "has_hi_types", "lower_call", "lower_jaxpr"]
