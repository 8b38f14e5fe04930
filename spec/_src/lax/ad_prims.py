"""Primitives that autodiff itself introduces: ``add_any`` (the sum of two
tangents or cotangents) and ``stop_gradient`` (the identity with a zero
derivative)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.interpreters.ad_util import Zero, add_tangents, linear_jvp
from spec._src.interpreters.batching import AxisData, match_axis, vectorized
from spec._src.core.interpreter import not_applicable
from spec._src.lax import sharding_kit as SK
from spec._src.core.denormals import arithmetic
from spec._src.core.registry import declare, require
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.core.interpreter import from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.core import tree_util
from spec._src.lowering import structural as ST
from spec._src.core.array import Array
from spec._src.core.interpreter import (
    EvalTrace,
    JaxprTrace,
    JitTracer,
    Var,
    canonical_value,
    current_trace,
)
from spec._src.core.types import is_python_scalar


# ================================================================== add_any

def _add_any_type(x: ArrayType, y: ArrayType) -> list[ArrayType]:
    require(x.shape == y.shape and x.dtype == y.dtype, "add_any", "C1",
            f"operands must have equal shapes and dtypes, got {x} and {y}")
    return [x]


def _add_any_impl(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    if x.dtype == FLOAT0:  # no data to add
        return [x]
    return [arithmetic(np.add, x, y)]


def _add_any_transpose(ct: Any, x: Any, y: Any) -> list[Any]:
    return [ct, ct]


def _add_any_batch(axis: AxisData, args: list[Any], dims: list[Any]
                   ) -> tuple[list[Any], list[Any]]:
    """Both operands batched at one axis: an unmapped one is broadcast to the
    other's (its new dimension sharded over the vmap's explicit mesh axes);
    when both are mapped, x's batch axis moves to y's (JAX's order)."""
    x, y = args
    dx, dy = dims
    if dx == dy:
        return [add_any_p.bind(x, y)], [dx]
    d = dy if dy is not None else dx
    return [add_any_p.bind(match_axis(axis, x, dx, d), match_axis(axis, y, dy, d))], [d]


add_any_p = declare(
    "add_any", lowering=ST.add_any, typing=_add_any_type, impl=_add_any_impl, jvp=linear_jvp(),
    transpose=_add_any_transpose, batch=_add_any_batch,
    sharding=SK.elementwise_rule(SK.section("add_any", SK.same_as(0), SK.keeps)),
    doc="x + y for two values of one type; autodiff's accumulation of tangents.",
    per_device=from_primitive(PD.aligned))


# ============================================================ stop_gradient

def _stop_gradient_jvp(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    (x,) = primals
    out = stop_gradient_p.bind(x)
    return [out], [Zero.from_primal_value(out)]


stop_gradient_p = declare(
    "stop_gradient", lowering=ST.identity,
    typing=lambda x: [x], impl=lambda x: [x], jvp=_stop_gradient_jvp,
    batch=vectorized(), sharding=SK.section("stop_gradient", SK.same_as(0), SK.keeps),
    transpose=not_applicable("its JVP is zero, so it never appears in a linear program"),
    doc="The identity, whose derivative is zero.",
    per_device=from_primitive(PD.aligned))


# ==================================================================== stage

stage_p = declare(
    "stage", lowering=ST.identity,
    typing=lambda x: [x], impl=lambda x: [np.asarray(x)], jvp=linear_jvp(),
    transpose=lambda ct, x: [ct], batch=vectorized(),
    sharding=SK.section("stage", SK.same_as(0), SK.keeps),
    doc="The identity that lifts a value into the current trace (never staged itself).",
    per_device=from_primitive(PD.aligned))

__all__ = [
    "add_any_p", "add_tangents", "stage", "stage_p", "stop_gradient", "stop_gradient_p",
]


# ------------------------------------------------------------ lax wrappers

def _stop(x: Any) -> Any:
    if type(current_trace()) is EvalTrace:
        # Outside every transform the primitive is the identity and JAX
        # hands back what it was given: an Array as itself, a host value as a
        # host value (Python scalars unchanged, NumPy values at their
        # canonical dtype), never moved to the device.
        if isinstance(x, Array):
            return x
        if is_python_scalar(x):
            canonical_value(x)  # out-of-range integers still raise
            return x
        if isinstance(x, (np.ndarray, np.generic)):
            return canonical_value(x)[0]
    return stop_gradient_p.bind(x)


def stop_gradient(x: Any) -> Any:
    """The identity on every leaf of ``x``, with zero derivative under every
    transform (nested differentiation included)."""
    return tree_util.tree_map(_stop, x)


def stage(x: Any, /) -> Any:
    """``x`` lifted into the current trace, as JAX's ``stage``: outside every
    transform an Array (made by the identity primitive); under staging the
    value's tracer, a constant of the program (a scalar stays a literal,
    inlined where it is used); under other transforms ``x`` itself, which
    their primitives lift as they read it. No equation is recorded."""
    trace = current_trace()
    if type(trace) is EvalTrace:
        return x if isinstance(x, Array) else stage_p.bind(x)
    if isinstance(trace, JaxprTrace):
        atom = trace.to_atom(x)
        return JitTracer(trace, atom) if isinstance(atom, Var) else x
    return x
