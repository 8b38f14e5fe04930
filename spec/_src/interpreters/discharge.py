"""Discharging refs (SPEC.md 17): turning a program with refs into a pure one.

Each ref becomes the value it holds, threaded through the program. Every
equation's primitive says how through its ``discharge`` field
(``discharge(ins, atoms, params) -> (outs, [(operand position, final
contents)])``): ``get`` reads the value, ``swap`` and ``addupdate`` compute
the updated value, calls and control flow discharge their bodies. An
equation whose primitive has no rule runs as usual, unless it is given refs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.array import Array
from spec._src.core.interpreter import Jaxpr, Literal, current_trace, literal_value, trace_to_jaxpr
from spec._src.core.state_types import RefType
from spec._src.core.types import ArrayType

Discharged = tuple[list[Any], list[tuple[int, Any]]]  # (results, (operand, new contents))


def discharge_state(jaxpr: Jaxpr, consts: Sequence[Any] | None = None
                    ) -> tuple[Jaxpr, list[Any]]:
    """The pure program of a jaxpr with refs, and its constants.

    The new jaxpr takes the same constants and arguments, with each ref
    replaced by the array it holds (a ref constant's current contents), and
    returns the original results followed by the final contents of every ref
    it takes, constants first, in order. A call (``jit``) given refs becomes
    a call of its discharged jaxpr.
    """
    consts = list(jaxpr.consts if consts is None else consts)
    binders = [*jaxpr.constvars, *jaxpr.invars]
    n_consts = len(jaxpr.constvars)
    refs = [k for k, v in enumerate(binders) if type(v.aval) is RefType]

    def run(*values: Any) -> list[Any]:
        outs, final = _run_discharged(jaxpr, values)
        return [*outs, *(final[k] for k in refs)]

    in_avals = [_value_type(v.aval) for v in binders]
    traced, _ = trace_to_jaxpr(run, in_avals)
    snapshot = [Array._from_checked(np.array(c._value, copy=True), c.aval.inner_aval, "ref")
                if type(getattr(c, "aval", None)) is RefType else c for c in consts]
    new = Jaxpr([*traced.constvars, *traced.invars[:n_consts]], traced.invars[n_consts:],
                traced.outvars, traced.eqns, traced.effects, [*traced.consts, *snapshot])
    return new, list(new.consts)


def _value_type(aval: ArrayType) -> ArrayType:
    return aval.inner_aval if isinstance(aval, RefType) else aval


def _run_discharged(jaxpr: Jaxpr, values: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Evaluate ``jaxpr`` (binders given ``values``, refs as their contents)
    under the current trace; returns its results and the final contents of
    its binders (unchanged for non-refs)."""
    binders = [*jaxpr.constvars, *jaxpr.invars]
    env: dict[int, Any] = {id(v): x for v, x in zip(binders, values)}

    def read(a: Any) -> Any:
        return literal_value(a) if isinstance(a, Literal) else env[id(a)]

    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.invars]
        prim = eqn.primitive
        rule = prim.discharge
        if callable(rule):
            outs, updates = rule(ins, eqn.invars, eqn.params)
            for k, new_value in updates:
                env[id(eqn.invars[k])] = new_value
        elif any(type(a.aval) is RefType for a in eqn.invars):
            raise NotImplementedError(
                f"discharge_state: refs given to '{prim.name}' are not supported yet")
        else:
            outs = current_trace().process_primitive(prim, ins, eqn.params)
        for v, o in zip(eqn.outvars, outs):
            env[id(v)] = o
    return [read(a) for a in jaxpr.outvars], [env[id(v)] for v in binders]


__all__ = ["Discharged", "discharge_state"]
