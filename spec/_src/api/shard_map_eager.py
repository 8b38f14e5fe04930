"""Eager shard_map: the body runs op by op, each operation on every device's
block (SPEC.md section 15). A value inside is a ``ShardMapTracer`` holding
one buffer per device; printing it shows each device's block, as JAX does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.interpreters import spmd as S
from spec._src.core import tree_util
from spec._src.core.interpreter import (
    Primitive,
    Trace,
    Tracer,
    apply_typing,
    canonical_aval_of,
    set_current_trace,
)
from spec._src.core.types import ArrayType
from spec._src.lax.collectives import vma_checked
from spec._src.lax.shard_map import _inside, enter_block


class ShardMapTracer(Tracer):
    __slots__ = ("_trace", "dist")

    def __init__(self, trace: ShardMapTrace, dist: S.Dist) -> None:
        self._trace = trace
        self.dist = dist

    @property
    def aval(self) -> ArrayType:
        return self.dist.aval

    def __str__(self) -> str:
        """Each device's block, with its device and mesh coordinates."""
        trace = self._trace
        assert isinstance(trace, ShardMapTrace)
        mesh = trace.mesh
        names = f"({', '.join(map(str, mesh.axis_names))},)"
        blocks = []
        for (idx, device), buf in zip(np.ndenumerate(mesh.devices), self.dist.bufs):
            if buf is None:  # held by another process
                continue
            blocks.append(f"On {device} at mesh coordinates {names} = {idx}:\n"
                          f"{np.asarray(buf)}\n")
        return "\n".join(blocks)

    __repr__ = __str__

    def _concrete(self) -> np.ndarray | None:
        """An invariant value is the same on every device: it is known (as
        JAX's to_concrete_value, under check_vma)."""
        a = self.aval
        if not vma_checked() or a.vma or a.munreduced or a.mreduced:
            return None
        return np.asarray(self.dist.any)

    def __bool__(self) -> bool:
        v = self._concrete()
        return bool(v) if v is not None else super().__bool__()

    def __int__(self) -> int:
        v = self._concrete()
        return int(v) if v is not None else super().__int__()

    # (float() stays an error, as in JAX: its tracers' float has no concrete path.)

    def __index__(self) -> int:
        v = self._concrete()
        return int(v.__index__()) if v is not None else super().__index__()

    def item(self, *args: Any) -> Any:
        v = self._concrete()
        return v.item(*args) if v is not None else super().item(*args)


class ShardMapTrace(Trace):
    name = "ShardMapTrace"

    def __init__(self, mesh: Any, geo: S.Geometry) -> None:
        super().__init__()
        self.mesh = mesh
        self.geo = geo

    def to_dist(self, x: Any) -> S.Dist:
        if isinstance(x, ShardMapTracer) and x._trace is self:
            return x.dist
        if isinstance(x, Tracer):
            raise TypeError(f"a {type(x).__name__} reached an eager shard_map body")
        value = S.from_value(x, self.geo)
        # Outside values are the same on every device: one block each.
        return S.uniform(value.any, canonical_aval_of(x).update(sharding=None), self.geo)

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        dists = [self.to_dist(a) for a in args]
        out_avals = apply_typing(prim, [d.aval for d in dists], params)
        outs = S.apply(prim, dists, params, out_avals, self.geo)
        return [ShardMapTracer(self, o) for o in outs]


def run_eager(f: Callable[..., Any], leaves: list[Any], in_tree: Any, local: list[ArrayType],
              specs: list[Any], mesh: Any, concrete: Any, check_vma: bool,
              manual: frozenset[Any]) -> tuple[list[S.Dist], Any, list[ArrayType]]:
    """The body run on every device's blocks: the result blocks, the output
    tree and the result block types."""
    geo = S.geometry(mesh, S.procs_of(concrete))
    trace = ShardMapTrace(concrete, geo)
    tracers = [ShardMapTracer(trace, enter_block(S.from_value(x, geo), spec, inner, mesh, geo))
               for x, spec, inner in zip(leaves, specs, local)]
    try:
        with _inside(mesh, check_vma, manual), set_current_trace(trace):
            out = f(*tree_util.tree_unflatten(in_tree, tracers))
            flat, out_tree = tree_util.tree_flatten(out)
            dists = [trace.to_dist(o) for o in flat]
    finally:
        trace.invalidate()
    return dists, out_tree, [d.aval for d in dists]


__all__ = ["ShardMapTrace", "ShardMapTracer", "run_eager"]
