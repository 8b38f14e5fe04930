"""The primitive registry and the helpers every rule module uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from spec._src.core.interpreter import (
    DEFAULT_PP,
    ENCLOSING_CONTEXT,
    GATHERED,
    GENERIC_REMAT,
    JVP_THEN_PARTIAL_EVAL,
    KEPT_OR_DROPPED_WHOLE,
    NO_CONST_FOLD,
    NO_DISCHARGE,
    NO_EFFECTS,
    NO_LOWERING,
    NOT_COLLECTIVE,
    STANDARD_VMA,
    WHOLE_PARTIAL_EVAL,
    Default,
    Eqn,
    FromPrimitive,
    Hook,
    NotApplicable,
    Pending,
    Primitive,
    PpRule,
    Section,
    TypingRule,
)
from spec._src.core.types import ArrayType

REGISTRY: dict[str, Primitive] = {}


def declare(name: str, *, typing: TypingRule, impl: Callable[..., Sequence[Any]],
            jvp: Section = Pending("the jvp rule"),
            transpose: Section = Pending("the transpose rule"),
            batch: Section = Pending("the batching rule"),
            sharding: Section = Pending("the sharding rule"),
            per_device: Hook | FromPrimitive = GATHERED,
            discharge: Hook | FromPrimitive = NO_DISCHARGE,
            remat_rule: Hook = GENERIC_REMAT,
            effects_rule: Callable[[list[Any], dict[str, Any]], frozenset[Any]]
            | Default = NO_EFFECTS,
            axis_collective: Callable[[dict[str, Any]], Any] | Default = NOT_COLLECTIVE,
            body_context: Callable[[dict[str, Any]], Any] | Default = ENCLOSING_CONTEXT,
            linearize: Hook = JVP_THEN_PARTIAL_EVAL,
            partial_eval: Hook = WHOLE_PARTIAL_EVAL,
            const_fold: Callable[..., list[Any] | None] | Default = NO_CONST_FOLD,
            dce: Callable[[Eqn, list[bool]], tuple[list[bool], Eqn | None]]
            | Default = KEPT_OR_DROPPED_WHOLE,
            vma_rule: Callable[..., list[frozenset[Any]]] | Default = STANDARD_VMA,
            pp_rule: PpRule | Default = DEFAULT_PP,
            lowering: Hook = NO_LOWERING,
            multiple_results: bool = False, accepts_refs: bool = False,
            jvp_on_zero_tangents: bool = False, transpose_accumulates: bool = False,
            doc: str = "") -> Primitive:
    """Declare a primitive with every one of its fields and register it.

    This is the one way a primitive comes to exist, for spec's own families
    and for user-defined primitives alike; nothing is attached afterwards.
    Each keyword is a field of ``Primitive`` (its docstring says what each
    means): the rule sections default to ``pending(what)``, listed by
    ``missing_sections()``; the optional hooks default to a named
    ``Default`` saying what happens without a rule (``GATHERED``,
    ``KEPT_OR_DROPPED_WHOLE``, ``STANDARD_VMA``, ...); the flags to False.
    A rule that needs the primitive object (a per-device program running its
    impl, a discharge rule that binds it) is passed as
    ``from_primitive(build)``.
    """
    if name in REGISTRY:
        raise ValueError(f"primitive {name} declared twice")
    prim = Primitive(name, typing=typing, impl=impl, jvp=jvp, transpose=transpose, batch=batch,
                     sharding=sharding, per_device=per_device, discharge=discharge,
                     remat_rule=remat_rule, effects_rule=effects_rule,
                     axis_collective=axis_collective, body_context=body_context,
                     linearize=linearize, partial_eval=partial_eval, const_fold=const_fold,
                     dce=dce, vma_rule=vma_rule, pp_rule=pp_rule, lowering=lowering,
                     multiple_results=multiple_results, accepts_refs=accepts_refs,
                     jvp_on_zero_tangents=jvp_on_zero_tangents,
                     transpose_accumulates=transpose_accumulates, doc=doc)
    REGISTRY[name] = prim
    return prim


def primitive(name: str) -> Primitive:
    return REGISTRY[name]


def missing_sections() -> list[tuple[str, str, str]]:
    """(primitive, field, issue) for every field of every primitive that is
    not accounted for: a rule section still pending, or any field that is
    neither a rule, a ``not_applicable(why)`` marker, a named ``Default``
    (hooks) nor a bool (flags)."""
    missing = []
    for name, prim in sorted(REGISTRY.items()):
        for field in Primitive.FIELDS:
            value = prim.field(field)
            if isinstance(value, Pending):
                missing.append((name, field, value.what))
            elif field in Primitive.FLAGS:
                if not isinstance(value, bool):
                    missing.append((name, field, "absent"))
            elif not (callable(value) or isinstance(value, NotApplicable)
                      or (field in Primitive.HOOKS and isinstance(value, Default))):
                missing.append((name, field, "absent"))
    return missing


def fail(prim: str, constraint: str, message: str, exc: type[Exception] = TypeError) -> NoReturn:
    """Raise the error for a violated typing constraint, citing its number."""
    raise exc(f"{prim} {constraint}: {message}")


def require(ok: bool, prim: str, constraint: str, message: str,
            exc: type[Exception] = TypeError) -> None:
    if not ok:
        fail(prim, constraint, message, exc)


def single(aval: ArrayType) -> list[ArrayType]:
    return [aval]
