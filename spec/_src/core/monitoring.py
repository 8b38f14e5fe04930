"""``jax.monitoring``: named events and the listeners they are reported to.

A program (or a library) records events, durations, time spans and scalars by name; every
listener registered for that kind is called with them, in registration order. spec itself
records none (JAX records its compilation and cache events under ``/jax/...``).
``clear_event_listeners`` forgets the event, duration and time-span listeners and keeps the
scalar ones, as JAX 0.12's does; unregistering a listener that is not registered is an
AssertionError, as JAX's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Listener = Callable[..., None]

_listeners: dict[str, list[Listener]] = {
    "event": [], "duration": [], "time_span": [], "scalar": []}


def record_event(event: str, **kwargs: str | int) -> None:
    for callback in list(_listeners["event"]):
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    for callback in list(_listeners["duration"]):
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
    for callback in list(_listeners["time_span"]):
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    for callback in list(_listeners["scalar"]):
        callback(event, value, **kwargs)


def register_event_listener(callback: Listener) -> None:
    _listeners["event"].append(callback)


def register_event_duration_secs_listener(callback: Listener) -> None:
    _listeners["duration"].append(callback)


def register_event_time_span_listener(callback: Listener) -> None:
    _listeners["time_span"].append(callback)


def register_scalar_listener(callback: Listener) -> None:
    _listeners["scalar"].append(callback)


def _unregister(kind: str, callback: Any) -> None:
    assert callback in _listeners[kind]
    _listeners[kind].remove(callback)


def unregister_event_listener(callback: Listener) -> None:
    _unregister("event", callback)


def unregister_event_duration_listener(callback: Listener) -> None:
    _unregister("duration", callback)


def unregister_event_time_span_listener(callback: Listener) -> None:
    _unregister("time_span", callback)


def unregister_scalar_listener(callback: Listener) -> None:
    _unregister("scalar", callback)


def clear_event_listeners() -> None:
    for kind in ("event", "duration", "time_span"):
        _listeners[kind].clear()


__all__ = [
    "clear_event_listeners", "record_event", "record_event_duration_secs",
    "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
    "register_event_listener", "register_event_time_span_listener", "register_scalar_listener",
    "unregister_event_duration_listener", "unregister_event_listener",
    "unregister_event_time_span_listener", "unregister_scalar_listener",
]
