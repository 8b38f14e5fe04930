"""``reshard``: change an array's sharding, keeping its value (SPEC.md section 14.2).

The value is unchanged; only its layout moves. The per-device program
(``spec._src.interpreters.spmd.reshard``) realises any pair of layouts: pending reductions run
(all-reduce / reduce-scatter), new unreduced axes keep the value at position
0 and zeros elsewhere, re-split dimensions are gathered (all-gather /
all-to-all) and sliced; casts to or from reduced are free.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.interpreters.ad_util import linear_jvp, linear_transpose
from spec._src.core.interpreter import pp_hiding
from spec._src.lax import sharding_kit as SK
from spec._src.core.registry import declare
from spec._src.core.sharding import UnreducedKind
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import Primitive, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry


def _target(dst_sharding: Any) -> Any:
    return None if dst_sharding is None else SK.abstract(dst_sharding)


def _reshard_type(x: ArrayType, *, dst_sharding: Any, concrete_mesh: Any) -> list[ArrayType]:
    # The typing step applies sharding sections only for operands with a
    # sharding or a `sharding`/`out_sharding` param; reshard's param has
    # another name, so the type carries the destination itself.
    dst = _target(dst_sharding)
    if dst is not None:
        _check_unreduced(x, dst)
    out = x.update(sharding=dst)
    check_divisible(out)
    return [out]


def check_divisible(aval: ArrayType) -> None:
    """C3: each sharded dimension is a multiple of the number of pieces its
    mesh axes cut it into (ValueError, JAX's message; JAX checks it whenever
    it makes a sharded type)."""
    s = aval.sharding
    if s is None:
        return
    sizes = dict(zip(s.mesh.axis_names, s.mesh.axis_sizes))
    for dim, (part, size) in enumerate(zip(s.spec.partitions, aval.shape)):
        if part is None:
            continue
        names = part if isinstance(part, tuple) else (part,)
        pieces = int(np.prod([sizes[n] for n in names]))
        if size % pieces:
            raise ValueError(
                f"Sharding spec {names} implies that array axis {dim} is partitioned {pieces}"
                f" times, but does not evenly divide the dimension size {size}. Got shape:"
                f" {aval.shape} and sharding {s}")


def _check_unreduced(x: ArrayType, dst: Any) -> None:
    """C1: a max/min-unreduced destination cannot add unreduced axes (there
    is no identity to fill them with); C2: unreduced kinds must agree."""
    src = x.sharding.spec if x.sharding is not None else None
    src_u = frozenset() if src is None else src.unreduced
    spec = dst.spec
    if spec.unreduced and spec.unreduced_kind is not UnreducedKind.sum and \
            spec.unreduced - src_u:
        raise ValueError("out_sharding passed to `jax.reshard` cannot be more unreduced than"
                         f" the input. Got input pspec: {src}, out pspec: {spec}")
    if src_u and spec.unreduced and src is not None and \
            src.unreduced_kind != spec.unreduced_kind:
        raise ValueError("The unreduced_kind of input and output sharding passed to"
                         f" `jax.reshard` should be the same. Got input spec: {src} and"
                         f" output spec: {spec}")


def _reshard_impl(x: np.ndarray, *, dst_sharding: Any, concrete_mesh: Any) -> list[np.ndarray]:
    return [x]


def _reshard_sharding(x: ArrayType, *, dst_sharding: Any, concrete_mesh: Any) -> list[Any]:
    return [_target(dst_sharding)]


def _reshard_transpose(ct: Any, operand: Any, *, dst_sharding: Any,
                       concrete_mesh: Any) -> Any:
    """Moving a value between layouts is linear; its transpose moves the
    cotangent back, to the operand's cotangent sharding."""
    return reshard_p.bind(ct, dst_sharding=operand.aval.ct_type().sharding,
                          concrete_mesh=concrete_mesh)


def _reshard_batch(axis: Any, args: list[Any], dims: list[Any], *, dst_sharding: Any,
                   concrete_mesh: Any) -> tuple[list[Any], list[Any]]:
    """Per example the destination layout; the batch dimension keeps the
    vmap's explicit mesh axes (unsharded when it has none), as JAX."""
    from spec._src.interpreters.batching import sharding_for_vmap
    (x,), (d,) = args, dims
    dst = sharding_for_vmap(axis, dst_sharding, d)
    return [reshard_p.bind(x, dst_sharding=dst, concrete_mesh=concrete_mesh)], [d]


def _reshard(prim: Primitive) -> PD.Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        (x,), (out,) = args, out_avals
        src = x.aval.sharding
        if src is not None and not src.mesh.empty:
            src_geo = S.geometry(src.mesh, geo.procs)
            if src_geo != geo:  # onto another mesh of the same devices
                return [S.moved_mesh(x, out, src_geo, geo)]
        return [S.reshard(x, out, geo)]
    return program


reshard_p = declare("reshard", typing=_reshard_type, impl=_reshard_impl,
                    sharding=_reshard_sharding, jvp=linear_jvp(),
                    transpose=linear_transpose(_reshard_transpose), batch=_reshard_batch,
                    pp_rule=pp_hiding("dst_sharding", "concrete_mesh"),
                    per_device=from_primitive(_reshard))


# ------------------------------------------------------- sharding_constraint
#
# In Auto mode a sharding is a hint for the compiler, not part of the type:
# ``with_sharding_constraint`` stages this identity, whose params carry the
# hint. (Under Explicit axes it is an assertion on the type instead, and
# stages nothing: spec/sharding.py.)


def _sc_type(x: ArrayType, *, sharding: Any, layout: Any, context_mesh: Any,
             unconstrained_dims: Any) -> list[ArrayType]:
    return [x]


def _sc_impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    return [x]


def _sc_sharding(x: ArrayType, **params: Any) -> list[Any]:
    return [x.sharding]


def _sc_transpose(ct: Any, operand: Any, **params: Any) -> Any:
    return sharding_constraint_p.bind(ct, **params)


def _sc_batch(axis: Any, args: list[Any], dims: list[Any], *, sharding: Any, layout: Any,
              context_mesh: Any, unconstrained_dims: Any) -> tuple[list[Any], list[Any]]:
    """The hint gains an unconstrained entry for the batch dimension."""
    from spec._src.core.sharding import NamedSharding
    (x,), (d,) = args, dims
    parts = list(sharding.spec.partitions)
    parts.insert(d, None)
    hinted = NamedSharding(sharding.mesh, sharding.spec.update(partitions=parts))
    shifted = frozenset(u + 1 if u >= d else u for u in unconstrained_dims) | {d}
    return [sharding_constraint_p.bind(x, sharding=hinted, layout=layout,
                                       context_mesh=context_mesh,
                                       unconstrained_dims=shifted)], [d]


class _Dims:
    """A frozenset of dims printed as JAX prints it (``frozenset({})`` when
    empty)."""

    def __init__(self, dims: frozenset[int]) -> None:
        self.dims = dims

    def __repr__(self) -> str:
        return "frozenset({" + ", ".join(map(str, sorted(self.dims))) + "})"


def _pp_sc(eqn: Any, ctx: Any) -> Any:
    from spec._src.core.interpreter import pp_eqn_default
    params = dict(eqn.params)
    params["unconstrained_dims"] = _Dims(params["unconstrained_dims"])
    return pp_eqn_default(eqn, ctx, params)


sharding_constraint_p = declare(
    "sharding_constraint", typing=_sc_type, impl=_sc_impl, sharding=_sc_sharding,
    pp_rule=_pp_sc,
    jvp=linear_jvp(), transpose=linear_transpose(_sc_transpose), batch=_sc_batch,
    doc="with_sharding_constraint in Auto mode: the identity, with a layout hint",
    per_device=from_primitive(PD.local))


__all__ = ["reshard_p", "sharding_constraint_p"]
