"""Devices as the public-API layer sees them.

The API layer places arrays (``jnp.zeros(..., device=d)``, ``jnp.linspace``'s ``device``)
and lays meshes over devices (``shard_map`` without a mesh in context). The device list
comes from the backend registered with core (``spec._src.core.backend``); the device class
and ``device_put`` belong to the backends package, which sits above this layer and
registers them here when it is imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from spec._src.core.backend import current_backend


@dataclasses.dataclass(frozen=True)
class Placement:
    device_type: type
    device_put: Callable[[Any, Any], Any]


_PLACEMENT: list[Placement] = []


def register_placement(device_type: type, device_put: Callable[[Any, Any], Any]) -> None:
    """Install the backends' device class and ``device_put`` (the latest wins)."""
    _PLACEMENT[:] = [Placement(device_type, device_put)]


def _placement() -> Placement:
    if not _PLACEMENT:
        raise RuntimeError("no device backend is registered (import spec first)")
    return _PLACEMENT[0]


def is_device(x: Any) -> bool:
    """Whether ``x`` is one of the backend's devices."""
    return isinstance(x, _placement().device_type)


def devices() -> list[Any]:
    """Every device of the backend."""
    return current_backend().devices()


def device_put(x: Any, device: Any) -> Any:
    """The backends' ``jax.device_put``."""
    return _placement().device_put(x, device)
