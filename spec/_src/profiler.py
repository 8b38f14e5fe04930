"""``jax.profiler`` as no-ops: spec has no device timeline, so tracing records nothing.

The entry points keep JAX's signatures and its one-profile-at-a-time rule, so programs that
profile run unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class ProfileOptions:
    """Options a profile would be taken with; spec records them and ignores them."""

    def __init__(self) -> None:
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.device_tracer_level = 1
        self.start_timestamp_ns = 0
        self.duration_ms = 0


class TraceAnnotation:
    """A named region of the host timeline; a context manager that does nothing here."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name = name
        self.metadata = kwargs

    def __enter__(self) -> TraceAnnotation:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


class StepTraceAnnotation(TraceAnnotation):
    """A TraceAnnotation marking one training step (``step_num`` among its keywords)."""


def annotate_function(func: F, name: str | None = None, **decorator_kwargs: Any) -> F:
    """Wrap ``func`` so each call runs inside a TraceAnnotation named after it."""
    label = name if name is not None else getattr(func, "__qualname__", repr(func))

    @functools.wraps(func)
    def annotated(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)

    return annotated  # type: ignore[return-value]


class _ProfileState:
    active_log_dir: os.PathLike[str] | str | None = None
    running = False


def start_trace(log_dir: os.PathLike[str] | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Begin a (no-op) profile; only one may run at a time, as in JAX."""
    if _ProfileState.running:
        raise RuntimeError("Profile has already been started. Only one profile may be run at "
                           "a time.")
    _ProfileState.running = True
    _ProfileState.active_log_dir = log_dir


def stop_trace() -> None:
    """End the profile start_trace began; RuntimeError when none is running."""
    if not _ProfileState.running:
        raise RuntimeError("No profile started")
    _ProfileState.running = False
    _ProfileState.active_log_dir = None


@contextlib.contextmanager
def trace(log_dir: os.PathLike[str] | str | None = None, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None) -> Iterator[None]:
    """start_trace on entry and stop_trace on exit."""
    start_trace(log_dir if log_dir is not None else "", create_perfetto_link,
                create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()
