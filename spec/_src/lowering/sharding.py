"""Shardy (``sdy``) text for a program's meshes and shardings, as JAX 0.12
emits it: ``sdy.mesh @mesh = <["x"=2, "y"=2]> {...}`` declarations at module
level, ``#sdy.sharding<@mesh, [{"x"}, {}]>`` on arguments and results of an
explicitly sharded program, ``<@mesh, [...]>`` in ``sdy.sharding_constraint``
and ``sdy.manual_computation``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spec._src.core.sharding import AxisType
from spec._src.core.types import ArrayType


@dataclass
class Meshes:
    """The module's mesh declarations, one symbol per distinct mesh: the
    program's mesh is ``@mesh``; the mesh a shard_map body's collectives
    name (its manual axes made Manual) is the next one, ``@mesh_0``."""

    symbols: dict[Any, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    # The meshes of the shard_map bodies being written, innermost last.
    manual: list[Any] = field(default_factory=list)
    # Host callbacks numbered so far (their custom calls' ``index``).
    callbacks: int = 0
    # The current token of each ordered effect.
    tokens: dict[Any, str] = field(default_factory=dict)
    # Private functions, written after @main, and the names they took.
    functions: list[str] = field(default_factory=list)
    function_names: dict[str, int] = field(default_factory=dict)

    def function_name(self, base: str) -> str:
        """``base``, then ``base_0``, ``base_1``, ... (MLIR's renaming)."""
        k = self.function_names.get(base, -1)
        self.function_names[base] = k + 1
        return base if k < 0 else f"{base}_{k}"

    def maximal(self, device: int) -> str:
        """The mesh of the one device ``device``: ``@maximal_mesh_<device>``."""
        key = ("maximal", device)
        if key not in self.symbols:
            self.symbols[key] = f"@maximal_mesh_{device}"
            self.lines.append(
                f"  sdy.mesh @maximal_mesh_{device} = <[], device_ids=[{device}]> "
                f"{{stablehlo.mesh = {{axes = [], device_ids = dense<{device}> : "
                "tensor<1xi64>}}")
        return self.symbols[key]

    def next_callback(self) -> int:
        self.callbacks += 1
        return self.callbacks - 1

    def symbol(self, mesh: Any, key: Any = None) -> str:
        key = (mesh, key)
        if key not in self.symbols:
            count = sum(1 for k in self.symbols if k[0] != "maximal")
            name = "mesh" if not count else f"mesh_{count - 1}"
            self.symbols[key] = "@" + name
            self.lines.append(f"  sdy.mesh @{name} = {_mesh_text(mesh)}")
        return self.symbols[key]


def _mesh_text(mesh: Any) -> str:
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    entries = ", ".join(f'{{name = "{n}", size = {s} : i64}}'
                        for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    return f"<[{axes}]> {{stablehlo.mesh = {{axes = [{entries}]}}}}"


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


def tensor_sharding(meshes: Meshes, mesh: Any, spec: Any, ndim: int,
                    open_dims: Sequence[int] = ()) -> str:
    """``<@mesh, [{"x"}, {}]>``."""
    return f"<{meshes.symbol(mesh)}, {dims_text(spec, ndim, open_dims)}>"


def explicit_sharding(aval: ArrayType) -> Any:
    """The aval's NamedSharding when it is over a non-empty mesh with an
    Explicit axis (JAX annotates such values), else None."""
    s = aval.sharding
    if s is None or s.mesh.empty:
        return None
    if not any(t == AxisType.Explicit for t in s.mesh.axis_types):
        return None
    return s


def arg_attr(meshes: Meshes, aval: ArrayType, alias: int | None = None) -> str:
    """`` {sdy.sharding = #sdy.sharding<...>}`` for an explicitly sharded
    argument or result, ``tf.aliasing_output = k : i32`` for an argument
    donated to result k; empty otherwise."""
    attrs = []
    s = explicit_sharding(aval)
    if s is not None:
        attrs.append("sdy.sharding = #sdy.sharding"
                     + tensor_sharding(meshes, s.mesh, s.spec, aval.ndim))
    if alias is not None:
        attrs.append(f"tf.aliasing_output = {alias} : i32")
    return f" {{{', '.join(attrs)}}}" if attrs else ""
