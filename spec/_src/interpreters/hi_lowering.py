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

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core.config import config
from spec._src.core.hitypes import lo_types, lower_value, raise_values
from spec._src.core.interpreter import (
    Eqn,
    Jaxpr,
    Literal,
    Tracer,
    Var,
    eqn_has_hi_types,
    has_hi_types,
    literal_value,
    lowering_hi_values,
    trace_to_jaxpr,
)
from spec._src.core.sharding import get_abstract_mesh


# Each program's lowerings, by the component types and the context they
# were lowered in: a call run again is not lowered (its rules' ``expand``
# not run) again, as JAX compiles a jitted program once.
_LOWERED: weakref.WeakKeyDictionary[Jaxpr, dict[Any, Jaxpr]] = weakref.WeakKeyDictionary()


def lower_jaxpr(jaxpr: Jaxpr, lo_in: Sequence[Any] | None = None) -> Jaxpr:
    """The program of ``jaxpr`` on the lowered components of its values
    (of types ``lo_in`` where the caller knows more of them than the hi
    types say, e.g. inside shard_map, along which axes they vary)."""
    if lo_in is None:
        lo_in = [lo for a in jaxpr.in_avals for lo in lo_types(a)]
    key = (tuple(lo_in), config.values_key(), get_abstract_mesh())
    known = _LOWERED.get(jaxpr)
    if known is not None and key in known:
        return known[key]
    lowered = _lower(jaxpr, lo_in)
    # (a program lowered with values of an enclosing trace is not kept)
    if not any(isinstance(c, Tracer) for c in (*jaxpr.consts, *lowered.consts)):
        _LOWERED.setdefault(jaxpr, {})[key] = lowered
    return lowered


def _lower(jaxpr: Jaxpr, lo_in: Sequence[Any]) -> Jaxpr:
    in_avals = jaxpr.in_avals
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

    with lowering_hi_values():
        for eqn in jaxpr.eqns:
            _lower_eqn(eqn, env, read)
    return [read(v) for v in jaxpr.outvars]


def _lower_eqn(eqn: Eqn, env: dict[Var, Any], read: Callable[[Any], Any]) -> None:
    """One equation: one that touches hi types by its ``to_lojax`` rule."""
    ins = [read(a) for a in eqn.invars]
    prim = eqn.primitive
    if eqn_has_hi_types(eqn):
        if not callable(prim.to_lojax):
            raise NotImplementedError(
                f"'{prim.name}' has no rule for hi-typed operands or results (to_lojax); "
                f"its equation {eqn} cannot be lowered")
        outs = prim.to_lojax(*ins, **eqn.params)
        outs = outs if prim.multiple_results else [outs]
    else:
        out = prim.bind(*ins, **eqn.params)
        outs = out if prim.multiple_results else [out]
    for v, o in zip(eqn.outvars, outs):
        env[v] = o


def bind_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Evaluate ``jaxpr`` by binding each equation's primitive, so that an
    equation applied to hi values themselves runs its ``to_lojax`` rule (as
    ``bind`` does; ``eval_jaxpr`` hands values straight to the trace)."""
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom: Any) -> Any:
        return literal_value(atom) if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        out = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
        for v, o in zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def lower_call(args: Sequence[Any], jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    """A call's body lowered, and its operands as their components."""
    los = [lo for a, x in zip(jaxpr.in_avals, args) for lo in lower_value(a, x)]
    return lower_jaxpr(jaxpr), los


def expand_flags(avals: Sequence[Any], flags: Sequence[Any]) -> tuple[Any, ...]:
    """A per-operand parameter (e.g. donation) repeated per component."""
    return tuple(f for a, f in zip(avals, flags) for _ in lo_types(a))


__all__ = ["bind_jaxpr", "eval_lowering", "expand_flags", "has_hi_types", "lower_call",
           "lower_jaxpr"]
