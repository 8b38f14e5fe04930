"""Gradient accumulators and the differentiation mode, for rules that push
cotangents instead of returning them (user-defined primitives' ``vjp_bwd``).

A backward rule receives one accumulator per primal input: a ``ValAccum``
(the caller wants the gradient back as a value), a ``RefAccum`` (the
caller bound a gradient ref; ``spec._src.interpreters.ad``) or a
``NullAccum`` (the gradient is not wanted). ``accum(ct)`` adds a
contribution; ``freeze()`` gives what was accumulated.

``reverse_mode`` says whether the linearization running now is for reverse
mode (``vjp``/``grad``) or for ``linearize``: a user primitive linearizes
through its ``vjp_fwd`` rule in the first case and its ``lin`` rule in the
second, as JAX's linearize trace does with its ``is_vjp`` flag.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from spec._src.core.hitypes import is_high
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.types import ArrayType
from spec._src.interpreters.ad_util import Zero, add_tangents


class GradAccum:
    """Where a backward rule puts the cotangent of one primal input; ``aval``
    is the cotangent's type."""

    aval: ArrayType

    def accum(self, ct: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement `accum`")

    def freeze(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement `freeze`")


def _layout(a: ArrayType) -> Any:
    """Shape, dtype and explicit sharding, as printed; a hi type itself."""
    if is_high(a):
        return a
    return a.update(weak_type=False, vma=frozenset(), munreduced=frozenset(),
                    mreduced=frozenset()).str_short(True)


def check_cotangent(aval: ArrayType, ct: Any, where: str) -> None:
    """A contribution must have exactly the accumulator's cotangent type
    (shape, dtype and explicit sharding; a weak type is not a different
    type): a ValueError
    otherwise, JAX's class for it (a non-array is a TypeError)."""
    try:
        got = ct.aval if type(ct) is Zero else canonical_aval_of(ct)
    except TypeError:
        raise TypeError(f"{where} produced a cotangent that is a {type(ct).__name__}, not "
                        "an array") from None
    if _layout(got) != _layout(aval):
        raise ValueError(f"{where} produced a cotangent of type {got.str_short(True)} where "
                        f"{aval.str_short(True)} was expected (the cotangent type of the "
                        "corresponding primal input)")


class ValAccum(GradAccum):
    """Adds contributions functionally into a value (``Zero`` until one comes)."""

    def __init__(self, aval: ArrayType, where: str = "a backward rule") -> None:
        self.aval = aval
        self.where = where
        self.val: Any = Zero(aval)

    def __repr__(self) -> str:
        return f"ValAccum({self.aval.str_short(True)})"

    def accum(self, ct: Any) -> None:
        if ct is None:
            return
        check_cotangent(self.aval, ct, self.where)
        self.val = add_tangents(self.val, ct)

    def freeze(self) -> Any:
        return self.val


class NullAccum(GradAccum):
    """Discards contributions: this input's gradient is not wanted."""

    def __init__(self, aval: ArrayType) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"NullAccum({self.aval.str_short(True)})"

    def accum(self, ct: Any) -> None:
        return None

    def freeze(self) -> Any:
        raise TypeError("a NullAccum holds nothing: the gradient was not wanted")


_reverse: contextvars.ContextVar[bool] = contextvars.ContextVar("reverse_mode", default=False)


def is_reverse_mode() -> bool:
    """Whether the linearization running now is for ``vjp``/``grad``."""
    return _reverse.get()


@contextlib.contextmanager
def reverse_mode(on: bool) -> Iterator[None]:
    """Linearize (in the block) for reverse mode (``on``) or for
    ``linearize``/``jvp``."""
    token = _reverse.set(on)
    try:
        yield
    finally:
        _reverse.reset(token)


__all__ = ["GradAccum", "NullAccum", "ValAccum", "check_cotangent", "is_reverse_mode",
           "reverse_mode"]
