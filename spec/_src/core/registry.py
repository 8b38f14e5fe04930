"""The primitive registry and the helpers every rule module uses."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NoReturn, ParamSpec

from spec._src.core.interpreter import (
    Default,
    NotApplicable,
    Pending,
    Primitive,
)
from spec._src.core.types import ArrayType

REGISTRY: dict[str, Primitive] = {}
P = ParamSpec("P")


def _registering(make: Callable[P, Primitive]) -> Callable[P, Primitive]:
    """``make``'s signature (``Primitive``'s keyword list, the one list of
    fields), with registration."""
    def declare(*args: P.args, **fields: P.kwargs) -> Primitive:
        """Declare a primitive with every one of its fields and register it.

        This is the one way a primitive comes to exist, for spec's own
        families and for user-defined primitives alike; nothing is attached
        afterwards. Each keyword is a field of ``Primitive`` (its docstring
        says what each means): the rule sections default to
        ``pending(what)``, listed by ``missing_sections()``; the optional
        hooks default to a named ``Default`` saying what happens without a
        rule (``GATHERED``, ``KEPT_OR_DROPPED_WHOLE``, ``STANDARD_VMA``,
        ...); the flags to False. A rule that needs the primitive object (a
        per-device program running its impl, a discharge rule that binds it)
        is passed as ``from_primitive(build)``.
        """
        prim = make(*args, **fields)
        if prim.name in REGISTRY:
            raise ValueError(f"primitive {prim.name} declared twice")
        REGISTRY[prim.name] = prim
        return prim
    # ``inspect.signature(declare)`` shows the fields (it follows ``__wrapped__``).
    return functools.update_wrapper(declare, make, assigned=(), updated=())


declare = _registering(Primitive)


def declaring(cls: Callable[P, Primitive]) -> Callable[P, Primitive]:
    """``declare`` for a primitive of a subclass of ``Primitive`` (one whose
    ``bind`` does more: jit's places its operands and results)."""
    return _registering(cls)


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
