"""Call primitives: ``jit`` (a staged sub-program)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec.interpreter import Jaxpr, eval_jaxpr_values, pp_eqn_default
from spec.rules._registry import declare, require
from spec.types import ArrayType


def _jit_type(*avals: ArrayType, jaxpr: Jaxpr, **params: Any) -> list[ArrayType]:
    expected = jaxpr.in_avals
    require(len(avals) == len(expected), "jit", "C1",
            f"called with {len(avals)} operands, the jaxpr takes {len(expected)}")
    for i, (got, want) in enumerate(zip(avals, expected)):
        require(got.shape == want.shape and got.dtype == want.dtype, "jit", "C2",
                f"operand {i} has type {got}, the jaxpr expects {want}")
    return jaxpr.out_avals


def _jit_impl(*args: np.ndarray, jaxpr: Jaxpr, **params: Any) -> Sequence[np.ndarray]:
    consts = [_const_value(c) for c in jaxpr.consts]
    return eval_jaxpr_values(jaxpr, consts, args)


def _const_value(c: Any) -> np.ndarray:
    from spec.interpreter import canonical_value
    return canonical_value(c)[0]


def _pp_jit(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    params.pop("inline", None)
    if not any(params.get("donated_invars", ())):
        params.pop("donated_invars", None)
    if not params.get("keep_unused", False):
        params.pop("keep_unused", None)
    inner = params["jaxpr"]
    if id(inner) not in ctx.shared:
        ctx.suggest_same_names(inner.invars, eqn.invars)
        ctx.suggest_same_names(inner.outvars, eqn.outvars)
    # name= first, then the rest sorted: easier to scan, and JAX's order.
    name = params.pop("name")
    ordered = {"name": name, **{k: params[k] for k in sorted(params)}}
    return pp_eqn_default(eqn, ctx, ordered, sort=False)


jit_p = declare("jit", typing=_jit_type, impl=_jit_impl, multiple_results=True, pp_rule=_pp_jit)
