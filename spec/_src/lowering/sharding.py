"""Shardy (``sdy``) text for a program's meshes and shardings, as JAX 0.12
emits it: ``sdy.mesh @mesh = <["x"=2, "y"=2]> {...}`` declarations at module
level, ``#sdy.sharding<@mesh, [{"x"}, {}]>`` on arguments and results of an
explicitly sharded program, ``<@mesh, [...]>`` in ``sdy.sharding_constraint``
and ``sdy.manual_computation``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.core.interpreter import jaxprs_in_params
from spec._src.core.sharding import AbstractMesh, AxisType, P, SingleDeviceSharding
from spec._src.core.types import ArrayType, MemorySpace
from spec._src.lowering.module import ModuleState


def _dim_text(entry: Any) -> str:
    if entry is None:
        return "{}"
    names = entry if isinstance(entry, tuple) else (entry,)
    return "{" + ", ".join(f'"{n}"' for n in names) + "}"


def dims_text(spec: Any, ndim: int, open_dims: Sequence[int] = ()) -> str:
    """``[{"x"}, {}]``: each dimension's mesh axes (a dimension left open
    for the partitioner is ``{?}``); unreduced axes as ``unreduced={...}``."""
    given = list(spec.partitions)
    parts = given + [None] * (ndim - len(given))
    dims = [("{?}" if d in open_dims and parts[d] is None else _dim_text(parts[d]))
            for d in range(ndim)]
    text = "[" + ", ".join(dims) + "]"
    # (Reduced axes are not written: JAX's text leaves them out.)
    unreduced = sorted(getattr(spec, "unreduced", ()) or ())
    if unreduced:
        text += ", unreduced={" + ", ".join(f'"{n}"' for n in unreduced) + "}"
    return text


def tensor_sharding(module: ModuleState, mesh: Any, spec: Any, ndim: int,
                    open_dims: Sequence[int] = ()) -> str:
    """``<@mesh, [{"x"}, {}]>``."""
    return f"<{module.symbol(mesh)}, {dims_text(spec, ndim, open_dims)}>"


def explicit_sharding(aval: ArrayType) -> Any:
    """The aval's NamedSharding when it is over a non-empty mesh with an
    Explicit axis (JAX annotates such values), else None."""
    s = aval.sharding
    if s is None or s.mesh.empty:
        return None
    if not any(t == AxisType.Explicit for t in s.mesh.axis_types):
        return None
    return s


def arg_attr(module: ModuleState, aval: ArrayType, alias: int | None = None, *,
             info: str | None = None, placed: Any = None, kind: str | None = None) -> str:
    """An argument's or result's attributes, in JAX's order:
    ``jax.result_info = "result[0]"`` for a result named ``info``,
    ``mhlo.memory_kind = "pinned_host"`` for one in host memory (or
    ``kind`` where the program names memory kinds, ``memory_kinds``),
    ``sdy.sharding = #sdy.sharding<...>`` for an explicitly sharded value (or
    one ``placed`` on a mesh: an Auto-mode argument's NamedSharding, or
    by jit's shardings, a single device's over the empty mesh),
    ``tf.aliasing_output = k : i32`` for an argument donated to result k;
    empty when there are none."""
    attrs = []
    if info is not None:
        attrs.append(f'jax.result_info = "{_escaped(info)}"')
    if kind is None and getattr(aval, "memory_space", None) is MemorySpace.Host:
        kind = "pinned_host"
    if kind is not None:
        attrs.append(f'mhlo.memory_kind = "{kind}"')
    s = explicit_sharding(aval)
    if s is not None:
        attrs.append("sdy.sharding = #sdy.sharding"
                     + tensor_sharding(module, s.mesh, s.spec, aval.ndim))
    elif isinstance(placed, SingleDeviceSharding):  # (replicated over the empty mesh)
        attrs.append("sdy.sharding = #sdy.sharding"
                     + tensor_sharding(module, AbstractMesh((), ()), P(), aval.ndim))
    elif placed is not None and not placed.mesh.empty:
        mesh = getattr(placed.mesh, "abstract_mesh", placed.mesh)
        attrs.append("sdy.sharding = #sdy.sharding"
                     + tensor_sharding(module, mesh, placed.spec, aval.ndim))
    if alias is not None:
        attrs.append(f"tf.aliasing_output = {alias} : i32")
    return f" {{{', '.join(attrs)}}}" if attrs else ""


def placement_kind(placement: Any) -> str:
    """The memory kind a jit sharding entry, a ``device_put`` target or a
    ``jax.memory.Space`` names (a sharding without one: device memory)."""
    if isinstance(placement, MemorySpace):
        return "pinned_host" if placement is MemorySpace.Host else "device"
    kind = getattr(placement, "memory_kind", None)
    return "device" if kind is None else str(kind)


def names_memory_kinds(jaxpr: Any, placements: Sequence[Any]) -> bool:
    """Whether a program names a memory other than device memory: one of
    its call's placements (``placements``: jit's shardings and committed
    arguments'), a value in host memory at its boundary, or a
    ``device_put`` or nested jit sharding inside. Only then does JAX's
    lowering write every argument's and result's memory kind."""
    if any(p is not None and placement_kind(p) != "device" for p in placements):
        return True
    boundary = [*jaxpr.in_avals, *jaxpr.out_avals]
    if any(getattr(a, "memory_space", None) is MemorySpace.Host for a in boundary):
        return True
    return _inner_memory_kinds(jaxpr)


def _inner_memory_kinds(jaxpr: Any) -> bool:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "device_put":
            targets = [d for d in eqn.params["devices"] if d is not None]
        elif name == "jit":
            targets = [s for s in (*(eqn.params.get("in_shardings") or ()),
                                   *(eqn.params.get("out_shardings") or ()))
                       if hasattr(s, "memory_kind")]
        else:
            targets = []
        if any(placement_kind(t) != "device" for t in targets
               if isinstance(t, MemorySpace) or hasattr(t, "memory_kind")):
            return True
        if any(_inner_memory_kinds(j) for j in jaxprs_in_params(eqn.params)):
            return True
    return False


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
