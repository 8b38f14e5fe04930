"""Where a computation runs, from where its operands live.

An array is committed when it was placed explicitly (``device_put`` to a
device or a sharding) or computed from committed operands; otherwise it is
uncommitted and follows the default device. A computation whose operands
include committed arrays runs on their device(s), and its results are
committed there; committed operands on different devices are an error, as
in JAX. A computation on uncommitted operands alone runs on the default
device (``jax_default_device`` at the time of the call), uncommitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.core.sharding import _context as _mesh_context


def device_ids(x: Any) -> list[int]:
    """The ids of the devices ``x`` lives on, in mesh order."""
    sharding = x._sharding
    if sharding is not None:
        return [int(d.id) for d in sharding.mesh.devices.flat]
    return [int(x._single_device().id)]


def is_committed(x: Any) -> bool:
    return bool(getattr(x, "_committed", False)) or getattr(x, "_sharding", None) is not None


def committed_device(operands: Sequence[Any], names: Sequence[str], fun_name: str) -> Any:
    """The device of the committed single-device operands (None when there
    are none or the committed ones are sharded); a ValueError naming the
    first two operands that are committed to different devices."""
    first: tuple[int, Any] | None = None
    for i, x in enumerate(operands):
        if not is_committed(x):
            continue
        if getattr(x, "_deleted", None) is not None:
            x.check_not_deleted()
        if first is None:
            first = (i, x)
            continue
        both_sharded = x._sharding is not None and first[1]._sharding is not None
        # (arrays over two meshes of different shapes are the sharding rules'
        # to refuse, in their words; over one shape laid on other devices, here)
        if (not both_sharded or _same_shape(x, first[1])) \
                and device_ids(x) != device_ids(first[1]):
            j, y = first
            raise ValueError(
                "Received incompatible devices for jitted computation. Got "
                f"{_describe(names[j], fun_name, y)} and {_describe(names[i], fun_name, x)}")
    if first is None or first[1]._sharding is not None:
        return None
    _check_context_mesh(names[first[0]], fun_name, first[1])
    return first[1]._single_device()


def _check_context_mesh(name: str, fun_name: str, x: Any) -> None:
    """Under a concrete context mesh a computation runs on all of its
    devices, so an operand committed to one device is an error (JAX's)."""
    mesh = _mesh_context.concrete
    if _mesh_context.placing:
        ids = [int(d.id) for d in mesh.devices.flat]
        raise ValueError(
            "Received incompatible devices for jitted computation. Got "
            f"{_describe(name, fun_name, x)} and jit's context mesh with device ids {ids} "
            "on platform CPU")


def _same_shape(x: Any, y: Any) -> bool:
    return bool(x._sharding.mesh.abstract_mesh == y._sharding.mesh.abstract_mesh)


def _describe(name: str, fun_name: str, x: Any) -> str:
    return (f"argument {name} of {fun_name} with shape {x.aval.str_short()} and with device "
            f"ids {device_ids(x)} on platform CPU")


def positional_names(n: int) -> list[str]:
    """How JAX names the operands of a primitive applied directly."""
    return [f"args[{i}]" for i in range(n)]
