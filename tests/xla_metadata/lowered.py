"""Reading JAX's lowered StableHLO text: each function's operations, with
the ``mhlo.frontend_attributes`` they carry, matched against a spec jaxpr
equation by equation (``frontend_attributes``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from spec._src.core.interpreter import Literal, dce_jaxpr
from spec._src.lax.xla_metadata import frontend_attributes, xla_metadata_value_p

_FUNC = re.compile(r'func\.func (?:public |private )?@("[^"]+"|[\w.$-]+)\(')
_OP = re.compile(r'^\s*(?:%[\w#:]+(?:, %[\w#:]+)* = )?"?([\w.]+)"?[ (]')
_CALLEE = re.compile(r'call @("[^"]+"|[\w.$-]+)\(')
_ATTRS = re.compile(r"mhlo\.frontend_attributes = \{([^}]*)\}")
_PAIR = re.compile(r'(\w+) = "([^"]*)"')

# The StableHLO operation each primitive of the test programs lowers to.
OP_OF = {"sin": "stablehlo.sine", "cos": "stablehlo.cosine", "mul": "stablehlo.multiply",
         "add": "stablehlo.add", "add_any": "stablehlo.add", "neg": "stablehlo.negate",
         "exp": "stablehlo.exponential", "xla_metadata_call": "call", "jit": "call",
         "reduce_sum": "stablehlo.reduce", "convert_element_type": "stablehlo.convert",
         "broadcast_in_dim": "stablehlo.broadcast_in_dim"}


@dataclass
class Op:
    name: str
    attributes: dict[str, str]
    callee: str | None


def functions(text: str) -> dict[str, list[Op]]:
    """Each function of the module (by name, quotes stripped) and its
    operations in order; constants (and their broadcasts), returns and
    reduction bodies left out."""
    funcs: dict[str, list[Op]] = {}
    current: list[Op] | None = None
    depth = 0
    for line in text.splitlines():
        head = _FUNC.search(line)
        if head:
            current = funcs.setdefault(head.group(1).strip('"'), [])
            depth = 0
            continue
        if current is None:
            continue
        op = _OP.match(line)
        # (a literal operand lowers to a constant, broadcast when the other
        # operand is an array: neither is an equation)
        literal = op is not None and op.group(1) == "stablehlo.broadcast_in_dim" \
            and "broadcast_in_dim %cst" in line
        if depth == 0 and op and not literal and op.group(1) not in (
                "stablehlo.constant", "return", "stablehlo.return"):
            attrs = _ATTRS.search(line)
            callee = _CALLEE.search(line)
            current.append(Op(op.group(1), dict(_PAIR.findall(attrs.group(1))) if attrs else {},
                              callee.group(1).strip('"') if callee else None))
        # (a reduction's body region is part of its operation)
        depth += line.count("({") - line.count("})")
    return funcs


def assert_same_attributes(jaxpr: Any, text: str, func: str = "main") -> int:
    """Check that spec's ``frontend_attributes`` of each equation of
    ``jaxpr`` are the attributes of the corresponding operation of ``func``
    in JAX's text (operations in order, one per equation; a value tag lowers
    to none), recursing into called functions. Returns the number of
    operations compared. The jaxpr is cleaned of dead code first, as jit
    does before lowering."""
    funcs = functions(text)
    return _compare(dce_jaxpr(getattr(jaxpr, "jaxpr", jaxpr)), funcs, func)


def _lowers_to_an_operation(eqn: Any) -> bool:
    """A value tag lowers to none, a broadcast literal to a constant."""
    if eqn.primitive is xla_metadata_value_p:
        return False
    return not (eqn.primitive.name == "broadcast_in_dim" and isinstance(eqn.invars[0], Literal))


def _compare(jaxpr: Any, funcs: dict[str, list[Op]], func: str) -> int:
    kept = [(e, a) for e, a in zip(jaxpr.eqns, frontend_attributes(jaxpr))
            if _lowers_to_an_operation(e)]
    eqns, attrs = [e for e, _ in kept], [a for _, a in kept]
    ops = funcs[func]
    assert [OP_OF[e.primitive.name] for e in eqns] == [o.name for o in ops], (func, eqns, ops)
    assert attrs == [o.attributes for o in ops], (func, attrs, ops)
    compared = len(ops)
    for e, o in zip(eqns, ops):
        if o.callee is not None:
            compared += _compare(e.params["jaxpr"], funcs, o.callee)
    return compared
