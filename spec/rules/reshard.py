"""``reshard``: change an array's sharding, keeping its value (SPEC.md section 14.2).

So far only what autodiff needs: the seed cotangent of ``grad`` under a mesh
is a literal resharded to the output's cotangent sharding, as JAX stages it.
Execution is interim like every sharded primitive: the value is the operand's,
laid out per device by the result's sharding (the collectives that realise a
layout change are the rest of issue 5). Batching is pending.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec.ad_util import linear_jvp, linear_transpose
from spec.interpreter import pp_hiding
from spec.rules import _sharding_kit as SK
from spec.rules._registry import declare
from spec.types import ArrayType


def _target(dst_sharding: Any) -> Any:
    return None if dst_sharding is None else SK.abstract(dst_sharding)


def _reshard_type(x: ArrayType, *, dst_sharding: Any, concrete_mesh: Any) -> list[ArrayType]:
    # The typing step applies sharding sections only for operands with a
    # sharding or a `sharding`/`out_sharding` param; reshard's param has
    # another name, so the type carries the destination itself.
    return [x.update(sharding=_target(dst_sharding))]


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
    """Per example the destination layout; the batch axis is unsharded."""
    from spec.sharding import NamedSharding, P
    (x,), (d,) = args, dims
    dst = dst_sharding
    if dst is not None:
        parts = list(dst.spec.partitions)
        parts.insert(d, None)
        dst = NamedSharding(dst.mesh, P(*parts, unreduced=dst.spec.unreduced,
                                        reduced=dst.spec.reduced))
    return [reshard_p.bind(x, dst_sharding=dst, concrete_mesh=concrete_mesh)], [d]


reshard_p = declare("reshard", typing=_reshard_type, impl=_reshard_impl,
                    sharding=_reshard_sharding, jvp=linear_jvp(),
                    transpose=linear_transpose(_reshard_transpose), batch=_reshard_batch,
                    pp_rule=pp_hiding("dst_sharding", "concrete_mesh"))


__all__ = ["reshard_p"]
