"""Where an equation came from: the user's source line and the name stack.

Every staged equation records a ``SourceInfo``: the innermost frame of user
code (the first frame outside spec's package and Python's standard library)
at the moment the primitive was bound, and the name stack of the enclosing
``named_scope`` / ``named_call`` blocks. Name stacks are relative to the
jaxpr being traced: tracing a nested jaxpr (a jit body, a loop body) starts
from an empty stack, and the equation that calls it carries the outer one.

When a transformation re-binds the equations of a jaxpr (evaluating it under
another trace), each new equation inherits the source of the equation it
came from (``inherited``), so derivatives and residuals point at the user's
line that produced the original operation, as in JAX.

The source also records the XLA metadata in effect when the equation was
bound (``set_xla_metadata`` used as a context manager): string key/value
pairs the lowering attaches to the equation's operation as
``frontend_attributes``. Unlike the name stack, the metadata is ambient
across nested traces (a jit body traced inside the block carries it), and
an inherited equation keeps its own metadata over the ambient one, so
derivatives of tagged operations are tagged too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from spec._src.core.config import config

__all__ = ["Metadata", "NameStack", "SourceInfo", "caller", "current", "current_xla_metadata",
           "inherited", "named_call", "named_scope", "summarize",
           "tracing_from", "transform", "transposed", "updated_metadata", "xla_metadata"]

_F = TypeVar("_F", bound=Callable[..., Any])

# XLA metadata: (key, value) pairs sorted by key, values as the strings the
# lowering attaches.
Metadata = tuple[tuple[str, str], ...]

_SPEC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                      for k in ("stdlib", "platstdlib")})


@dataclass(frozen=True)
class Transform:
    """A transformation on the name stack: it wraps the scope opened right
    inside it (``jvp(outer)``), or stands alone as ``jvp()``."""

    name: str


@dataclass(frozen=True)
class NameStack:
    """The enclosing scopes and transformations, outermost first (printed
    ``transpose(jvp(outer))/inner``)."""

    names: tuple[str | Transform, ...] = ()

    def extend(self, name: str) -> NameStack:
        return NameStack((*self.names, name))

    def transform(self, name: str) -> NameStack:
        return NameStack((*self.names, Transform(name)))

    def __add__(self, other: NameStack) -> NameStack:
        return NameStack((*self.names, *other.names))

    def __str__(self) -> str:
        # From the innermost entry out: a scope adds a name, a
        # transformation wraps the name added last.
        parts: list[str] = []
        for entry in reversed(self.names):
            if isinstance(entry, Transform):
                if parts:
                    parts[-1] = f"{entry.name}({parts[-1]})"
                else:
                    parts.append(f"{entry.name}()")
            else:
                parts.append(entry)
        return "/".join(reversed(parts))

    def __bool__(self) -> bool:
        return bool(self.names)


@dataclass(frozen=True)
class SourceInfo:
    """A user frame (its code object and instruction offset, resolved to a
    line and column only when printed) and the name stack."""

    code: types.CodeType | None
    lasti: int
    name_stack: NameStack
    xla_metadata: Metadata = ()
    # ``jax_threefry_partitionable`` when the equation was bound: evaluating
    # or lowering it later draws bits by that scheme (JAX's equation context).
    threefry_partitionable: bool = True

    def replace_name_stack(self, name_stack: NameStack) -> SourceInfo:
        return SourceInfo(self.code, self.lasti, name_stack, self.xla_metadata,
                          self.threefry_partitionable)


class _State(threading.local):
    def __init__(self) -> None:
        self.name_stack = NameStack()
        # The source of the equation being re-bound by a transformation.
        self.inherited: SourceInfo | None = None
        # The frame that started the innermost trace: frames at or above it
        # are outside the traced function and never its source.
        self.boundary: types.FrameType | None = None
        # The XLA metadata of the enclosing ``set_xla_metadata`` blocks
        # (None outside any: a block whose updates remove every key still
        # leaves an empty metadata, a different jit cache key, as in JAX).
        self.xla_metadata: Metadata | None = None


_state = _State()


def _is_user_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    if path.startswith(_SPEC_DIR + os.sep):
        return False
    return not path.startswith(_STDLIB_DIRS) and not filename.startswith("<frozen")


def name_stack_depth() -> int:
    """How many scopes and transformations enclose the code running now."""
    return len(_state.name_stack.names)


def current(depth: int = 0) -> SourceInfo:
    """The source of a primitive bound now, for a trace started when the
    name stack was ``depth`` deep: its name stack holds only the names
    pushed since."""
    stack = _state.name_stack
    if depth:
        stack = NameStack(stack.names[depth:])
    inherited_info = _state.inherited
    if inherited_info is not None:
        # (the name stack and the ambient metadata already hold the
        # inherited equation's)
        return SourceInfo(inherited_info.code, inherited_info.lasti, stack,
                          _state.xla_metadata or (), _partitionable())
    boundary = _state.boundary
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame is not boundary \
            and not _is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or frame is boundary:
        return SourceInfo(None, 0, stack, _state.xla_metadata or (), _partitionable())
    return SourceInfo(frame.f_code, frame.f_lasti, stack, _state.xla_metadata or (),
                      _partitionable())


def _partitionable() -> bool:
    return bool(config.jax_threefry_partitionable)


@contextlib.contextmanager
def traced_context(info: SourceInfo | None) -> Iterator[None]:
    """Within the block, ``jax_threefry_partitionable`` is the value the
    equation of ``info`` was bound under (the current one for None)."""
    if info is None or info.threefry_partitionable == _partitionable():
        yield
        return
    with config.as_traced("jax_threefry_partitionable", info.threefry_partitionable):
        yield


def caller() -> SourceInfo:
    """The innermost user frame of the current call stack."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and not _is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return SourceInfo(None, 0, NameStack())
    return SourceInfo(frame.f_code, frame.f_lasti, NameStack())


@contextlib.contextmanager
def inherited(info: SourceInfo | None) -> Iterator[None]:
    """Within the block, bound primitives take ``info`` as their source:
    its name stack is pushed on the current one (so that equations a rule
    evaluates within the block nest under it), and its XLA metadata updates
    the ambient metadata (its values win)."""
    previous = (_state.inherited, _state.xla_metadata, _state.name_stack)
    _state.inherited = info
    if info is not None:
        _state.name_stack = _state.name_stack + info.name_stack
        if info.xla_metadata:
            _state.xla_metadata = updated_metadata(_state.xla_metadata, dict(info.xla_metadata))
    try:
        with traced_context(info):
            yield
    finally:
        _state.inherited, _state.xla_metadata, _state.name_stack = previous


def updated_metadata(base: Metadata | None, updates: dict[str, str | None]) -> Metadata:
    """``base`` with ``updates`` applied: a value replaces the key's value,
    None removes the key."""
    merged = dict(base or ())
    for key, value in updates.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return tuple(sorted(merged.items()))


def current_xla_metadata() -> Metadata | None:
    """The XLA metadata of the enclosing ``set_xla_metadata`` blocks (None
    outside any)."""
    return _state.xla_metadata


@contextlib.contextmanager
def xla_metadata(updates: dict[str, str | None]) -> Iterator[None]:
    """Equations bound within the block carry the ambient metadata updated
    with ``updates`` (None removes a key)."""
    previous = _state.xla_metadata
    _state.xla_metadata = updated_metadata(previous, updates)
    try:
        yield
    finally:
        _state.xla_metadata = previous


@contextlib.contextmanager
def tracing_from(entry: types.FrameType) -> Iterator[None]:
    """Trace a jaxpr from the frame ``entry``: its equations' name stacks
    start empty, and their sources are user frames below ``entry`` (none
    inherited)."""
    previous = (_state.name_stack, _state.inherited, _state.boundary)
    _state.name_stack, _state.inherited, _state.boundary = NameStack(), None, entry
    try:
        yield
    finally:
        _state.name_stack, _state.inherited, _state.boundary = previous


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Equations staged within the block carry ``name`` on their name stack."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    with _name_stack(_state.name_stack.extend(name)):
        yield


@contextlib.contextmanager
def transform(name: str, named: bool = True) -> Iterator[None]:
    """Equations staged within the block were made by transformation ``name``
    (a user's call of it; a rule transforming a body it traces afresh passes
    ``named=False``: the body's equations keep their own name stacks)."""
    if not named:
        yield
        return
    with _name_stack(_state.name_stack.transform(name)):
        yield


@contextlib.contextmanager
def whole_name_stack_under_suffix() -> Iterator[None]:
    """Within the block, a trace that records the names pushed since its
    start records those followed by the whole name stack: JAX's checkpoint
    linearization stages its equation with the whole stack, which its
    linearization then evaluates under the names pushed since it started
    (``transpose(jvp(vmap(jvp())))`` under ``vmap(grad(checkpoint(f)))``)."""
    with _name_stack(_state.name_stack + _state.name_stack):
        yield


@contextlib.contextmanager
def whole_name_stack_twice(depth: int) -> Iterator[None]:
    """Within the block, a trace that records the names pushed since it
    started ``depth`` deep records the whole name stack twice: JAX stages a
    custom_jvp rule's jnp function with the whole stack and evaluates its
    tangent side under the whole stack again, names from before the
    linearization included."""
    stack = _state.name_stack
    with _name_stack(NameStack(stack.names[:depth]) + stack + stack):
        yield


@contextlib.contextmanager
def _name_stack(stack: NameStack) -> Iterator[None]:
    previous = _state.name_stack
    _state.name_stack = stack
    try:
        yield
    finally:
        _state.name_stack = previous


def transposed(info: SourceInfo | None) -> SourceInfo | None:
    """The source of the transpose of an equation with source ``info``."""
    if info is None:
        return None
    return info.replace_name_stack(NameStack((Transform("transpose"),
                                              *info.name_stack.names)))


def named_call(fun: _F, *, name: str | None = None) -> _F:
    """``fun`` whose equations carry ``name`` (default: its ``__name__``)
    on their name stack."""
    scope = name if name is not None else getattr(fun, "__name__", type(fun).__name__)

    def named(*args: Any, **kwargs: Any) -> Any:
        with named_scope(scope):
            return fun(*args, **kwargs)

    return named  # type: ignore[return-value]


def _position(code: types.CodeType, lasti: int) -> tuple[int, int]:
    """The line and column (0-based) of the instruction at ``lasti``."""
    positions = list(code.co_positions())
    index = lasti // 2
    if 0 <= index < len(positions):
        line, _, column, _ = positions[index]
        if line is not None:
            return line, column or 0
    return code.co_firstlineno, 0


def user_location(info: SourceInfo | None) -> tuple[str, int]:
    """The file name and line of the user frame of ``info``
    (``("(unknown file)", 0)`` when no user frame bound it): where a
    logging record made at the binding says it was made."""
    if info is None or info.code is None:
        return "(unknown file)", 0
    return info.code.co_filename, _position(info.code, info.lasti)[0]


def summarize(info: SourceInfo | None) -> str:
    """``file:line:column (function)`` of the user frame (column omitted
    when 0), or empty when no user frame bound it."""
    if info is None or info.code is None:
        return ""
    line, column = _position(info.code, info.lasti)
    where = f"{info.code.co_filename}:{line}"
    if column:
        where += f":{column}"
    return f"{where} ({info.code.co_qualname})"
