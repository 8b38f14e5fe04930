"""Helpers for the sharding sections of reductions, sorts and dot_general.

A sharding section receives the operand types and returns one NamedSharding
(or None) per output. An operand without a sharding reads as replicated on
no mesh (JAX gives it an empty-mesh sharding with every entry None); the
operands with shardings must share one abstract mesh. Output specs that use a
mesh axis twice are reported as JAX reports them: as an illegally sharded
result of the primitive.

Primitives without an unreduced/reduced rule in JAX (products, logical
reductions, argmax/argmin, cumulative reductions, sort, top_k) refuse
unreduced or reduced operands and output shardings as JAX does.
"""

from __future__ import annotations

import math

import types
from collections.abc import Sequence
from typing import Any

from spec._src.core.errors import ShardingTypeError
from spec._src.core.sharding import AbstractMesh, DuplicateSpecError, Mesh, NamedSharding, P
from spec._src.core.types import ArrayType
from spec._src.core.sharding import AxisType, get_abstract_mesh

Parts = tuple[Any, ...]

def parts_of(x: ArrayType) -> Parts:
    """The spec entries of ``x``, one per dimension (None where unsharded)."""
    s = x.sharding
    if s is None:
        return (None,) * x.ndim
    parts = tuple(s.spec.partitions)
    return parts + (None,) * (x.ndim - len(parts))


def mesh_of(avals: Sequence[ArrayType]) -> AbstractMesh:
    """The one mesh of the sharded operands (ValueError, as JAX, when two differ)."""
    mesh: AbstractMesh | None = None
    for a in avals:
        if a.sharding is None or a.sharding.mesh.empty:
            continue
        if mesh is not None and a.sharding.mesh != mesh:
            raise ValueError(f"Mesh for all inputs should be equal. Got one mesh: {mesh} and "
                             f"another mesh: {a.sharding.mesh}")
        mesh = a.sharding.mesh
    if mesh is None:  # only called with a sharded operand; kept total anyway
        return get_abstract_mesh()
    return mesh


def _no_ur_rule(prim: str) -> NotImplementedError:
    return NotImplementedError(f"unreduced/reduced rule for {prim} is not implemented. Please"
                               " file an issue at https://github.com/jax-ml/jax/issues")


def refuse_unreduced(prim: str, avals: Sequence[ArrayType]) -> None:
    """A primitive with no unreduced/reduced rule takes no operand with
    unreduced or reduced axes (JAX's NotImplementedError)."""
    for a in avals:
        s = a.sharding
        if s is not None and (s.spec.unreduced or s.spec.reduced):
            raise _no_ur_rule(prim)


def refuse_unreduced_out(prim: str, out_sharding: NamedSharding) -> None:
    if out_sharding.spec.unreduced or out_sharding.spec.reduced:
        raise _no_ur_rule(prim)


def make(prim: str, avals: Sequence[ArrayType], out: ArrayType, mesh: AbstractMesh,
         parts: Parts) -> NamedSharding:
    """NamedSharding(mesh, P(*parts)); a mesh axis used twice is JAX's
    ShardingTypeError naming the operands and the illegal result type."""
    try:
        return NamedSharding(mesh, P(*parts))
    except DuplicateSpecError:
        loose = types.SimpleNamespace(spec=P(*parts), mesh=mesh)
        shown = ArrayType(out.shape, out.dtype, sharding=loose).str_short(True)
        inputs = ", ".join(a.str_short(True) for a in avals)
        raise ShardingTypeError(f"{prim} operation with inputs: {inputs} produces an illegally "
                                f"sharded result: {shown}") from None


def fit_out(out_sharding: NamedSharding, shape: tuple[int, ...]) -> NamedSharding:
    """An out_sharding as the result type's sharding (as JAX checks it): a
    short spec is padded with None; a longer one, or a sharded dimension the
    mesh axes do not divide, is a ValueError."""
    ndim = len(shape)
    spec = out_sharding.spec
    if len(spec) < ndim:
        spec = spec._normalized_spec_for_aval(ndim)
        out_sharding = NamedSharding(out_sharding.mesh, spec)
    if len(spec) != ndim:
        raise ValueError(f"Length of sharding.spec ({len(spec)}) must be equal to aval's ndim "
                         f"({ndim}). Got sharding.spec {spec}, aval.ndim {ndim} "
                         f"and sharding {out_sharding}")
    sizes = out_sharding.mesh.shape
    for dim, (entry, n) in enumerate(zip(spec.partitions, shape)):
        if entry is None:
            continue
        axes = entry if isinstance(entry, tuple) else (entry,)
        ways = math.prod(sizes[a] for a in axes)
        if n % ways:
            raise ValueError(f"Sharding spec {axes} implies that array axis {dim} is "
                             f"partitioned {ways} times, but does not evenly divide the "
                             f"dimension size {n}. Got shape: {shape} and sharding "
                             f"{out_sharding}")
    return out_sharding


def canonicalize_out_sharding(sharding: Any, api_name: str) -> NamedSharding | None:
    """A user's ``out_sharding`` (None, P, NamedSharding) as the NamedSharding
    over an abstract mesh that the primitive records (JAX's canonical form):
    a P needs the mesh of ``set_mesh``; a concrete mesh becomes abstract."""
    if sharding is None:
        return None
    if isinstance(sharding, NamedSharding) and sharding.mesh.empty:
        return None
    if not isinstance(sharding, (NamedSharding, P)):
        raise TypeError(f"`out_sharding` argument of {api_name} only supports instances of "
                        f"`NamedSharding` or `PartitionSpec`. Got {sharding} of type: "
                        f"{type(sharding)}")
    current = get_abstract_mesh()
    if isinstance(sharding, P):
        if current.empty:
            raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                             "allowed. Please pass a NamedSharding instance or enter into a "
                             f"mesh context via `jax.set_mesh`. Got {sharding}")
        sharding = NamedSharding(current, sharding)
    else:
        abstract = sharding.mesh.abstract_mesh
        if not current.empty and abstract != current:
            raise ValueError(f"Context mesh {current} should match the mesh of sharding "
                             f"{abstract} passed to {api_name}.")
        if isinstance(sharding.mesh, Mesh):
            sharding = NamedSharding(abstract, sharding.spec)
    result: NamedSharding = sharding
    names = result.mesh._name_to_type
    spec = result.spec
    for entry in (*spec.partitions, *spec.unreduced, *spec.reduced):
        for axis in (entry if isinstance(entry, tuple) else (entry,)):
            if axis is not None and names.get(axis) in (AxisType.Auto, AxisType.Manual):
                raise ValueError(f"PartitionSpec passed to {api_name} cannot contain axis "
                                 f"names that are of type Auto or Manual. Got PartitionSpec: "
                                 f"{spec} with axis name: {axis} of type: {names[axis]}.")
    return result
