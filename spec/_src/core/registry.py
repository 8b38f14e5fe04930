"""The primitive registry and the helpers every rule module uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from spec._src.core.interpreter import (
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
            jvp: Section = Pending("autodiff (issue 3)"),
            transpose: Section = Pending("autodiff (issue 3)"),
            batch: Section = Pending("vmap (issue 4)"),
            sharding: Section = Pending("sharding (issue 5)"),
            multiple_results: bool = False, pp_rule: PpRule | None = None,
            doc: str = "") -> Primitive:
    """Declare a primitive with all its sections and register it."""
    if name in REGISTRY:
        raise ValueError(f"primitive {name} declared twice")
    prim = Primitive(name, typing=typing, impl=impl, multiple_results=multiple_results,
                     jvp=jvp, transpose=transpose, batch=batch, sharding=sharding,
                     pp_rule=pp_rule, doc=doc)
    REGISTRY[name] = prim
    return prim


def primitive(name: str) -> Primitive:
    return REGISTRY[name]


def missing_sections() -> list[tuple[str, str, str]]:
    """(primitive, section, issue) for every section still pending."""
    missing = []
    for name, prim in sorted(REGISTRY.items()):
        for section in Primitive.SECTIONS:
            value = prim.section(section)
            if isinstance(value, Pending):
                missing.append((name, section, value.issue))
            elif not (callable(value) or isinstance(value, NotApplicable)):
                missing.append((name, section, "absent"))
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
