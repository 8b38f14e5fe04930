"""The parts of a StableHLO module outside @main's body that the rules add
to: mesh declarations, private functions, callback numbering, tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ModuleState:
    """What a module holds besides @main's body: its mesh declarations (one
    symbol per distinct mesh: the program's mesh is ``@mesh``; the mesh a
    shard_map body's collectives name is the next one, ``@mesh_0``), private
    functions, the callback count and the ordered effects' tokens."""

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
    function_names: set[str] = field(default_factory=lambda: {"main"})
    # MLIR's symbol table renames a clashing symbol with one counter for the
    # whole module, whatever the name: ``f``, ``g``, ``g_0``, ``f_1``, ...
    renamed: int = 0

    def function_name(self, base: str) -> str:
        """``base`` if no function holds it, else ``base_<k>`` for the next
        free value of the module's one renaming counter (MLIR's renaming)."""
        name = base
        while name in self.function_names:
            name = f"{base}_{self.renamed}"
            self.renamed += 1
        self.function_names.add(name)
        return name

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
            count = sum(1 for v in self.symbols.values() if v.startswith("@mesh"))
            name = "mesh" if not count else f"mesh_{count - 1}"
            if not mesh.axis_names:  # (a single device's placement, as JAX names it)
                name = "empty_mesh"
            self.symbols[key] = "@" + name
            self.lines.append(f"  sdy.mesh @{name} = {_mesh_text(mesh)}")
        return self.symbols[key]


def _mesh_text(mesh: Any) -> str:
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    entries = ", ".join(f'{{name = "{n}", size = {s} : i64}}'
                        for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    return f"<[{axes}]> {{stablehlo.mesh = {{axes = [{entries}]}}}}"
