"""Devices as the public-API layer sees them, provided by the backend.

The API layer places arrays (``jnp.zeros(..., device=d)``, ``jnp.linspace``'s
``device``) and lays meshes over devices (``shard_map`` without a mesh in
context), but the devices themselves belong to the backend, which sits above
this layer. The backend (``spec._src.backends.devices``) registers its device
class, its device list and its ``device_put`` here when it is imported, as
JAX's backends register themselves with its core.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Backend:
    device_type: type
    devices: Callable[[], list[Any]]
    device_put: Callable[[Any, Any], Any]


_BACKEND: list[Backend] = []


def register_backend(device_type: type, devices: Callable[[], list[Any]],
                     device_put: Callable[[Any, Any], Any]) -> None:
    """Install the backend's devices (the latest registration wins)."""
    _BACKEND[:] = [Backend(device_type, devices, device_put)]


def _backend() -> Backend:
    if not _BACKEND:
        raise RuntimeError("no device backend is registered (import spec first)")
    return _BACKEND[0]


def is_device(x: Any) -> bool:
    """Whether ``x`` is one of the backend's devices."""
    return isinstance(x, _backend().device_type)


def devices() -> list[Any]:
    """Every device of the backend."""
    return _backend().devices()


def device_put(x: Any, device: Any) -> Any:
    """The backend's ``jax.device_put``."""
    return _backend().device_put(x, device)
