"""Token primitives: ``create_token`` and ``after_all``.

``create_token(*operands)`` makes a new token (the wrapper ignores its
operands and binds none, as JAX's); ``after_all(*tokens)`` is a token
that comes after all of its operands (none: a fresh token). Constraint
numbering (cited in error messages, see SPEC.md, section 9): C1 (after_all)
every operand is a token.

Tokens carry no data: the impls return a token's buffer; the JVP of either
is a token with a symbolic zero tangent (the float0 tangent type of a
token); under vmap a token is never batched (one token orders the effects
of all the batch's members). Both lower to their StableHLO ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.interpreter import canonical_aval_of, from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.tokens import abstract_token, is_token_type, token_value
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import Zero
from spec._src.interpreters.batching import AxisData
from spec._src.lowering.emitter import LoweringContext
from spec._src.lowering.effects import TOKEN as TOKEN_TEXT


def _create_token_type(*operands: ArrayType) -> list[ArrayType]:
    return [abstract_token]


def _after_all_type(*operands: ArrayType) -> list[ArrayType]:
    require(all(is_token_type(a) for a in operands), "after_all", "C1",
            "Arguments to after_all must be tokens")
    return [abstract_token]


def _impl(*operands: np.ndarray) -> list[np.ndarray]:
    return [token_value()]


def _sharding(*operands: ArrayType) -> list[Any]:
    return [None]


def _jvp_of(prim_name: str) -> Any:
    def rule(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
        out = _PRIMS[prim_name].bind(*primals)
        return [out], [Zero(abstract_token.tangent_type())]
    return rule


def _batch_of(prim_name: str) -> Any:
    def rule(axis: AxisData, args: list[Any], dims: list[Any]) -> tuple[Any, Any]:
        return [_PRIMS[prim_name].bind(*args)], [None]
    return rule


def _create_token_lowering(ctx: LoweringContext, operands: Sequence[str],
                           in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]
                           ) -> list[str]:
    return [ctx.line(f"stablehlo.create_token : {TOKEN_TEXT}")]


def _after_all_lowering(ctx: LoweringContext, operands: Sequence[str],
                        in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]
                        ) -> list[str]:
    return [ctx.line(f"stablehlo.after_all {', '.join(operands)} : {TOKEN_TEXT}")]


_PRIMS: dict[str, Any] = {}
_NOT_LINEAR = "a token is no vector: nothing is transposed"

create_token_p = declare(
    "create_token", typing=_create_token_type, impl=_impl, sharding=_sharding,
    jvp=_jvp_of("create_token"), transpose=not_applicable(_NOT_LINEAR),
    batch=_batch_of("create_token"), lowering=_create_token_lowering,
    per_device=from_primitive(PD.local), doc="A new token.")

after_all_p = declare(
    "after_all", typing=_after_all_type, impl=_impl, sharding=_sharding,
    jvp=_jvp_of("after_all"), transpose=not_applicable(_NOT_LINEAR), accepts_refs=True,
    batch=_batch_of("after_all"), lowering=_after_all_lowering,
    per_device=from_primitive(PD.local), doc="A token after all of its operand tokens.")

_PRIMS.update(create_token=create_token_p, after_all=after_all_p)


def create_token(*operands: Any) -> Any:
    """A new token; the operands are ignored (JAX keeps them for compatibility)
    and not bound."""
    return create_token_p.bind()


def after_all(*operands: Any) -> Any:
    """A token that comes after every operand token."""
    for x in operands:
        if not is_token_type(canonical_aval_of(x)):
            raise TypeError("Arguments to after_all must be tokens")
    return after_all_p.bind(*operands)


__all__ = ["after_all", "after_all_p", "create_token", "create_token_p"]
