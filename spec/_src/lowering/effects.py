"""What the lowering does with a program's effects: refs are discharged
first (the program then has none), the world effects whose primitives emit
them (callbacks, prints, side-effecting FFI calls) are lowerable, and any
other effect is JAX's ValueError ``Cannot lower jaxpr with effects``."""

from __future__ import annotations

from typing import Any

from spec._src.core.interpreter import Jaxpr
from spec._src.core.state_types import RefEffect, RefType
from spec._src.interpreters.discharge import discharge_state

# The effect types a lowering rule emits; a primitive module registers the
# effects its rules lower (JAX's ``effects.lowerable_effects``).
_LOWERABLE: set[type] = {RefEffect}


def register_lowerable(effect_type: type) -> None:
    _LOWERABLE.add(effect_type)


TOKEN = "!stablehlo.token"


def ordered_effects(jaxpr: Jaxpr) -> list[Any]:
    """The program's ordered effects, each threading one token (sorted by
    name, as JAX orders its token arguments)."""
    return sorted((e for e in jaxpr.effects if getattr(e, "ordered", False)), key=str)


def check_lowerable(jaxpr: Jaxpr) -> None:
    """JAX's ValueError for a program with an effect no rule lowers."""
    if any(type(e) not in _LOWERABLE for e in jaxpr.effects):
        shown = "{" + ", ".join(sorted(str(e) for e in jaxpr.effects)) + "}"
        raise ValueError(f"Cannot lower jaxpr with effects: {shown}")


def _is_ref(aval: Any) -> bool:
    return type(aval) is RefType


def has_refs(jaxpr: Jaxpr) -> bool:
    """Whether the program takes or makes refs (at its own level; nested
    bodies are discharged when they are lowered)."""
    binders = [*jaxpr.constvars, *jaxpr.invars]
    return any(_is_ref(v.aval) for v in binders) or any(
        _is_ref(v.aval) for e in jaxpr.eqns for v in e.outvars)


def ref_arguments(jaxpr: Jaxpr) -> list[int]:
    """The positions of the arguments that are refs, when the program has
    no ref constants (whose final contents would come first)."""
    if any(_is_ref(v.aval) for v in jaxpr.constvars):
        return []
    return [i for i, v in enumerate(jaxpr.invars) if _is_ref(v.aval)]


def discharged(jaxpr: Jaxpr) -> Jaxpr:
    """The pure program JAX lowers for a program with refs: each ref is
    the value it holds; a ref argument's final contents are extra results
    after the program's own (spec._src.interpreters.discharge)."""
    if not has_refs(jaxpr):
        return jaxpr
    new, _ = discharge_state(jaxpr)
    return new


def after_discharge(name: str) -> Any:
    """The rule of a ref primitive: the lowering discharges every program
    with refs before walking it, so the rule is reached only for a ref that
    discharge left in place, which has no lowering."""
    def rule(*args: Any, **params: Any) -> list[str]:
        raise NotImplementedError(
            f"MLIR translation rule for primitive '{name}' not found: a ref that is not "
            "discharged has no lowering")
    return rule
