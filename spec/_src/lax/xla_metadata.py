"""XLA metadata primitives: ``xla_metadata_call`` and ``xla_metadata_value``.

XLA metadata is string key/value pairs that the lowering attaches to
operations as ``frontend_attributes``; they never change what is computed.
An equation gets metadata three ways, and ``frontend_attributes`` says what
its operation carries:

- the ambient metadata of ``set_xla_metadata`` blocks, recorded in the
  equation's source (``SourceInfo.xla_metadata``) when it is bound, and
  inherited by the equations transformations derive from it;
- ``xla_metadata_call[jaxpr, xla_metadata, ad_metadata]``, a call of a
  sub-program whose call operation carries ``xla_metadata``. Its rules are
  jit's (``CallRules``): the JVP, primal, batched and partially evaluated
  calls keep the params; the tangent call of linearize and the transposed
  call carry ``ad_metadata`` instead (``'same'``: ``xla_metadata`` again;
  ``()``: nothing) and have ``ad_metadata='same'``;
- ``xla_metadata_value[xla_metadata_kvs]``, the identity on one array, which
  tags the operation producing its operand. It is linear; its transpose is
  the identity, so the backward pass is not tagged.

Typing of ``xla_metadata_call`` (TypeError):

- C1: as many operands as the jaxpr has inputs;
- C2: operand ``i`` has the type of the jaxpr's input ``i`` (shape and dtype; a
  user-defined type: equal).

``xla_metadata_value`` has the type of its operand.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core.hitypes import raise_values
from spec._src.core.interpreter import (
    VMA_FROM_TYPING,
    Eqn,
    Jaxpr,
    Literal,
    dce_of_call,
    from_primitive,
    sharding_of_call,
)
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import hi_lowering
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import linear_jvp, linear_transpose
from spec._src.interpreters.batching import vectorized
from spec._src.lax.calls import CallRules, call_effects, call_impl
from spec._src.lowering import metadata as LM

__all__ = ["attribute_text", "canonical_metadata", "frontend_attributes",
           "xla_metadata_call_p", "xla_metadata_value_p"]

# The metadata params: (key, text) pairs sorted by key.
MetadataKVs = tuple[tuple[str, str], ...]


def attribute_text(value: Any) -> str:
    """A metadata value as the attribute string: bools as ``true``/``false``,
    anything else as ``str`` gives it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def canonical_metadata(metadata: dict[str, Any], what: str) -> MetadataKVs:
    """``metadata`` as sorted (key, text) pairs; values must be str, bool,
    int or float (TypeError naming the key otherwise)."""
    for key, value in metadata.items():
        if not isinstance(value, (str, bool, int, float)):
            raise TypeError(f"{what} metadata values must be str, bool, int, or float, "
                            f"got {type(value)} for key {key!r}")
    return tuple(sorted((key, attribute_text(value)) for key, value in metadata.items()))


# ========================================================= xla_metadata_call

def _call_type(*avals: ArrayType, jaxpr: Jaxpr, **params: Any) -> list[ArrayType]:
    expected = jaxpr.in_avals
    require(len(avals) == len(expected), "xla_metadata_call", "C1",
            f"called with {len(avals)} operands, the jaxpr takes {len(expected)}")
    for i, (got, want) in enumerate(zip(avals, expected)):
        same = got.shape == want.shape and got.dtype == want.dtype \
            if isinstance(got, ArrayType) and isinstance(want, ArrayType) else got == want
        require(same, "xla_metadata_call", "C2",
                f"operand {i} has type {got}, the jaxpr expects {want}")
    return jaxpr.out_avals


def _derived_params(params: dict[str, Any], jaxpr: Jaxpr, by_autodiff: bool
                    ) -> dict[str, Any]:
    """A derived call keeps the metadata, except the tangent and transposed
    calls, which carry ``ad_metadata`` (resolved) and pass it on as is."""
    if not by_autodiff:
        return {**params, "jaxpr": jaxpr}
    ad_metadata = params["ad_metadata"]
    metadata = params["xla_metadata"] if ad_metadata == "same" else ad_metadata
    return {"jaxpr": jaxpr, "xla_metadata": metadata, "ad_metadata": "same"}


_RULES = CallRules("xla_metadata_call", _derived_params)


def _call_to_lojax(*args: Any, jaxpr: Jaxpr, **params: Any) -> list[Any]:
    """A call with hi-typed operands or results: the call of its lowered
    body on the operands' components, its results rebuilt."""
    lowered, los = hi_lowering.lower_call(args, jaxpr)
    outs = xla_metadata_call_p.bind(*los, jaxpr=lowered, **params)
    return raise_values(jaxpr.out_avals, outs)


xla_metadata_call_p = declare(
    "xla_metadata_call", lowering=LM.call_rule,
    typing=_call_type, impl=call_impl, multiple_results=True,
    jvp=_RULES.jvp, transpose=_RULES.transpose, batch=_RULES.batch,
    sharding=sharding_of_call("jaxpr"),
    linearize=_RULES.linearize, partial_eval=_RULES.partial_eval, dce=dce_of_call("jaxpr"),
    transpose_accumulates=True,  # the call's body adds into gradient refs
    accepts_refs=True, effects_rule=call_effects, discharge=_RULES.discharge,
    per_device=from_primitive(PD.call_program("jaxpr")), vma_rule=VMA_FROM_TYPING,
    to_lojax=_call_to_lojax)


# ======================================================== xla_metadata_value

def _value_type(x: ArrayType, **params: Any) -> list[ArrayType]:
    return [x]


def _value_impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    return [x]


def _value_sharding(x: ArrayType, **params: Any) -> list[Any]:
    return [x.sharding]


def _value_transpose(ct: Any, x: Any, **params: Any) -> Any:
    return ct  # the backward pass is not tagged


xla_metadata_value_p = declare(
    "xla_metadata_value", lowering=LM.value_rule,
    typing=_value_type, impl=_value_impl, jvp=linear_jvp(),
    transpose=linear_transpose(_value_transpose), batch=vectorized(),
    sharding=_value_sharding, per_device=from_primitive(PD.aligned))


# ================================================== what the lowering attaches

def _own_metadata(eqn: Eqn) -> dict[str, str]:
    """The ambient metadata the equation was bound under; the lowering tags
    an operation through its results, so an equation without any gets none."""
    info = eqn.source_info
    if info is None or not eqn.outvars:
        return {}
    return dict(info.xla_metadata)


def frontend_attributes(jaxpr: Any) -> list[dict[str, str]]:
    """For each equation of ``jaxpr`` (a jaxpr or a closed jaxpr), the
    ``frontend_attributes`` of the operation producing its results, as the
    lowering attaches them:

    1. the ambient metadata the equation was bound under;
    2. an ``xla_metadata_call``'s ``xla_metadata``, whose keys win over (1);
    3. for each later ``xla_metadata_value`` whose operand the equation
       produced (directly or through other ``xla_metadata_value``s), its
       ``xla_metadata_kvs`` and then its own ambient metadata, the keys
       already present winning.

    An ``xla_metadata_value`` lowers to no operation of its own: ``{}``.
    A value tag on an input or a literal tags no equation. Equations of
    sub-jaxprs are read by calling this on the sub-jaxpr.
    """
    body: Jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    attributes: list[dict[str, str]] = []
    producer: dict[int, int] = {}
    for i, eqn in enumerate(body.eqns):
        own = _own_metadata(eqn)
        if eqn.primitive is xla_metadata_call_p:
            own = {**own, **dict(eqn.params["xla_metadata"])}
        if eqn.primitive is xla_metadata_value_p:
            attributes.append({})
            operand = eqn.invars[0]
            source = None if isinstance(operand, Literal) else producer.get(id(operand))
            if source is not None:
                tagged = {k: attribute_text(v) for k, v in eqn.params["xla_metadata_kvs"]}
                attributes[source] = {**_own_metadata(eqn), **tagged, **attributes[source]}
                producer[id(eqn.outvars[0])] = source  # its result is the operand's value
            continue
        attributes.append(own)
        for v in eqn.outvars:
            producer[id(v)] = i
    return attributes
