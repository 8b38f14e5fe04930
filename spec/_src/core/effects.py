"""Effects: what an equation does besides computing its results.

An equation's ``effects`` is a frozenset of ``Effect`` objects; a jaxpr's is
the union of its equations' effects that reach outside it (JAX's effect
system, JEP 10657). Two kinds exist:

- effects on the world (printing, calling back into Python): ``Debug``,
  ``OrderedDebug``, ``IO``, ``OrderedIO`` and the FFI's side effect. They name
  no variable, so every enclosing equation and jaxpr carries them: a ``jit``,
  ``cond``, ``scan`` or ``while`` whose body prints has the ``Debug`` effect;
- writes to refs (``RefEffect`` in ``state_types``), which name the written
  ref and reach a jaxpr only when the ref is one of its inputs.

Dead-code elimination keeps every equation that has an effect. The ordered
ones (``OrderedDebug``, ``OrderedIO``) happen in program order across calls
(JAX threads a token through them); spec evaluates sequentially, so program
order is the order they run in. They cannot be batched by ``vmap`` (io
callbacks) nor split across devices by ``shard_map``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class Effect:
    """The base of every effect; effects compare by identity of their class
    singletons (world effects) or by value (ref effects, dataclasses)."""

    ordered = False


class DebugEffect(Effect):
    """``jax.debug.print``/``debug.callback``: may run in any order, never removed."""

    def __str__(self) -> str:
        return "Debug"

    __repr__ = __str__


class OrderedDebugEffect(Effect):
    """``jax.debug.print(..., ordered=True)``: runs in program order."""

    ordered = True

    def __str__(self) -> str:
        return "OrderedDebug"

    __repr__ = __str__


class IOEffect(Effect):
    """``io_callback(..., ordered=False)``."""

    def __str__(self) -> str:
        return "IO"

    __repr__ = __str__


class OrderedIOEffect(Effect):
    """``io_callback(..., ordered=True)``: runs in program order."""

    ordered = True

    def __str__(self) -> str:
        return "OrderedIO"

    __repr__ = __str__


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()
io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()


def names_ref(effect: object) -> bool:
    """A ref effect (it names the variable of the ref it writes)."""
    return getattr(effect, "ref", None) is not None


def world_effects(effects: Iterable[object]) -> frozenset[object]:
    """The effects that name no variable: they reach every enclosing jaxpr."""
    return frozenset(e for e in effects if not names_ref(e))


def ordered_effects(effects: Iterable[object]) -> list[object]:
    """The ordered effects among ``effects``, sorted by name (for messages)."""
    return sorted((e for e in effects if getattr(e, "ordered", False)), key=str)


# Whether evaluation is inside a compiled (jitted) program: there, as with
# XLA's host callbacks, an exception a callback raises surfaces as a
# JaxRuntimeError; an eager debug callback raises it unchanged.
_compiled = threading.local()


@contextmanager
def running_compiled() -> Iterator[None]:
    depth = getattr(_compiled, "depth", 0)
    _compiled.depth = depth + 1
    try:
        yield
    finally:
        _compiled.depth = depth


def in_compiled_program() -> bool:
    return getattr(_compiled, "depth", 0) > 0


__all__ = ["DebugEffect", "Effect", "IOEffect", "OrderedDebugEffect", "OrderedIOEffect",
           "debug_effect", "in_compiled_program", "io_effect", "names_ref", "ordered_debug_effect",
           "ordered_effects", "ordered_io_effect", "running_compiled", "world_effects"]
