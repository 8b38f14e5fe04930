"""The optimization barrier: ``optimization_barrier``.

``optimization_barrier(*xs)`` is the identity on any number of values of any
types; a compiler may move no computation across it and may not merge a
computation before it with one after it (XLA's ``OptimizationBarrier``). It
has no constraints. Its derivative is the barrier on the nonzero tangents
(primals and tangents through separate barriers, as JAX stages them); its
transpose is the barrier on the nonzero cotangents; under vmap it is the
barrier on the batched values, each keeping its batch axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.interpreter import canonical_aval_of, from_primitive
from spec._src.core.registry import declare
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.core.state_types import RefType
from spec._src.interpreters.ad_util import Zero
from spec._src.interpreters.batching import AxisData
from spec._src.core.effects import Effect
from spec._src.lowering.effects import register_lowerable
from spec._src.lowering.emitter import LoweringContext, tensor_type

_NAME = "optimization_barrier"


def _barrier_type(*xs: ArrayType) -> list[ArrayType]:
    return list(xs)


def _barrier_impl(*xs: np.ndarray) -> list[np.ndarray]:
    return list(xs)


def _barrier_sharding(*xs: ArrayType) -> list[Any]:
    return [x.sharding for x in xs]


def _through_barrier(values: Sequence[Any]) -> list[Any]:
    """The barrier on the values that are not symbolic zeros; zeros stay."""
    live = [v for v in values if type(v) is not Zero]
    if not live:
        return list(values)
    out = iter(optimization_barrier_p.bind(*live))
    return [v if type(v) is Zero else next(out) for v in values]


def _barrier_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    return optimization_barrier_p.bind(*primals), _through_barrier(tangents)


def _barrier_transpose(cts: list[Any], *operands: Any) -> list[Any]:
    return _through_barrier(cts)


def _barrier_batch(axis: AxisData, args: list[Any], dims: list[Any]
                   ) -> tuple[list[Any], list[Any]]:
    return optimization_barrier_p.bind(*args), list(dims)


def _barrier_lowering(ctx: LoweringContext, operands: Sequence[str],
                      in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]
                      ) -> list[str]:
    if not operands:
        return []
    return ctx.generic_op("stablehlo.optimization_barrier", operands, in_avals, out_avals)


optimization_barrier_p = declare(
    _NAME, typing=_barrier_type, impl=_barrier_impl, multiple_results=True,
    sharding=_barrier_sharding, jvp=_barrier_jvp, transpose=_barrier_transpose,
    batch=_barrier_batch, lowering=_barrier_lowering,
    per_device=from_primitive(PD.local),
    doc="The identity, across which a compiler moves and merges no computation.")


def _is_ref(x: Any) -> bool:
    return type(canonical_aval_of(x)) is RefType


def optimization_barrier(operand: Any, /) -> Any:
    """``operand`` (a pytree) unchanged, its array leaves passed through one
    barrier; refs go around it, returned as they are."""
    leaves, treedef = tree_util.tree_flatten(operand)
    values = [x for x in leaves if not _is_ref(x)]
    out = iter(optimization_barrier_p.bind(*values))
    return tree_util.tree_unflatten(
        treedef, [x if _is_ref(x) else next(out) for x in leaves])


__all__ = ["optimization_barrier", "optimization_barrier_p"]


# ================================================================= dce_sink
# ``dce_sink(x)`` marks ``x`` as used: an equation with no results whose
# effect keeps it (and what computes ``x``) through dead-code elimination.
# With ``prevent_mlir_dce`` its lowering is a side-effecting custom call, so
# the compiler keeps it too; without, it lowers to nothing.

class NoDCEEffect(Effect):
    """``dce_sink``'s effect: never removed, in no particular order."""

    def __str__(self) -> str:
        return "NoDCE"

    __repr__ = __str__


no_dce_effect = NoDCEEffect()
register_lowerable(NoDCEEffect)


def _dce_sink_jvp(primals: list[Any], tangents: list[Any], *, prevent_mlir_dce: bool
                  ) -> tuple[list[Any], list[Any]]:
    """JAX's linear rule: the sink on the primal, and on a nonzero tangent."""
    dce_sink_p.bind(primals[0], prevent_mlir_dce=prevent_mlir_dce)
    if type(tangents[0]) is not Zero:
        dce_sink_p.bind(tangents[0], prevent_mlir_dce=prevent_mlir_dce)
    return [], []


def _dce_sink_transpose(ct: Any, x: Any, *, prevent_mlir_dce: bool) -> list[Any]:
    return [Zero(x.aval.ct_type())]


def _dce_sink_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                    prevent_mlir_dce: bool) -> tuple[list[Any], list[Any]]:
    dce_sink_p.bind(args[0], prevent_mlir_dce=prevent_mlir_dce)
    return [], []


def _dce_sink_lowering(ctx: LoweringContext, operands: Sequence[str],
                       in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                       prevent_mlir_dce: bool) -> list[str]:
    if prevent_mlir_dce:
        ctx.results(f"stablehlo.custom_call @dce_sink({operands[0]}) {{backend_config = \"\", "
                    "has_side_effect = true, mhlo.backend_config = {}, operand_layouts = "
                    "[dense<> : tensor<0xindex>], result_layouts = []} : "
                    f"({tensor_type(in_avals[0])}) -> ()", 0)
    return []


dce_sink_p = declare(
    "dce_sink", typing=lambda x, *, prevent_mlir_dce: [], impl=lambda x, **p: [],
    multiple_results=True, sharding=lambda x, **p: [], jvp=_dce_sink_jvp,
    transpose=_dce_sink_transpose, batch=_dce_sink_batch, lowering=_dce_sink_lowering,
    effects_rule=lambda atoms, params: frozenset({no_dce_effect}),
    per_device=from_primitive(PD.local),
    doc="Marks a value as used: no results, an effect that dead-code elimination keeps.")


def dce_sink(val: Any, *, prevent_mlir_dce: bool = False) -> None:
    """Keep every leaf of ``val`` (and what computes it) through dead-code
    elimination; with ``prevent_mlir_dce`` through the compiler's too."""
    for leaf in tree_util.tree_leaves(val):
        dce_sink_p.bind(leaf, prevent_mlir_dce=prevent_mlir_dce)


__all__ += ["dce_sink", "dce_sink_p"]
