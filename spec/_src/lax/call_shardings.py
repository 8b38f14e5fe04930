"""A ``jit`` call's ``in_shardings`` and ``out_shardings`` params.

``jax.jit(f, in_shardings=..., out_shardings=...)`` stages a call carrying
one entry per operand and per result: the Sharding it is placed by, or
``UNSPECIFIED``. A call staged without any carries neither param (which is
what it prints: JAX leaves out a param whose entries are all unspecified).
A derived call (JVP, primal and tangent calls, transpose, partial
evaluation, vmap, dead-code elimination) takes each entry from the operand
or result it derives from: tangents take their primals', cotangents their
primals' (an operand's cotangent is a result placed as the operand was),
residuals are unspecified; under vmap a sharding gains the batch dimension.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Final

from spec._src.core.sharding import NamedSharding, P

IN: Final = "in_shardings"
OUT: Final = "out_shardings"


class UnspecifiedValue:
    """No sharding given for an operand or result (JAX's ``UNSPECIFIED``)."""

    _instance: UnspecifiedValue | None = None

    def __new__(cls) -> UnspecifiedValue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UnspecifiedValue"

    def __reduce__(self) -> str:
        return "UNSPECIFIED"


UNSPECIFIED: Final = UnspecifiedValue()


def carries(params: dict[str, Any]) -> bool:
    return IN in params or OUT in params


def shardings_of(params: dict[str, Any], n_in: int, n_out: int
                 ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The call's entries per operand and per result (all unspecified for
    a call carrying none)."""
    return (tuple(params.get(IN, (UNSPECIFIED,) * n_in)),
            tuple(params.get(OUT, (UNSPECIFIED,) * n_out)))


def with_shardings(params: dict[str, Any], ins: Sequence[Any], outs: Sequence[Any]
                   ) -> dict[str, Any]:
    """``params`` carrying ``ins`` and ``outs``: both params when any entry
    is specified, neither otherwise."""
    out = {k: v for k, v in params.items() if k not in (IN, OUT)}
    if any(s is not UNSPECIFIED for s in (*ins, *outs)):
        out[IN], out[OUT] = tuple(ins), tuple(outs)
    return out


def kept(entries: Sequence[Any], keep: Sequence[bool]) -> list[Any]:
    return [s for s, k in zip(entries, keep) if k]


def unspecified(n: int) -> list[Any]:
    return [UNSPECIFIED] * n


@dataclasses.dataclass(frozen=True)
class EagerPlacement:
    """How an eagerly evaluated call places its operands (checking where a
    committed one lives) and results, given their entries."""

    operands: Callable[[Sequence[Any], Sequence[Any]], list[Any]]
    results: Callable[[Sequence[Any], Sequence[Any]], list[Any]]


_EAGER: list[EagerPlacement] = []


def register_eager_placement(placement: EagerPlacement) -> None:
    """Installed by the API layer, which places arrays (spec/_src/api/jit_shardings.py)."""
    _EAGER[:] = [placement]


def eager_placement() -> EagerPlacement | None:
    return _EAGER[0] if _EAGER else None


def batched(s: Any, dim: int | None, aval: Any, spmd_name: Any) -> Any:
    """The entry of a value of type ``aval`` batched at ``dim`` (None:
    unbatched; the type has the batch dimension): a sharding laying the value
    out gains the batch dimension, unsplit or split over ``spmd_name``'s mesh
    axes; a replicated one is kept. (The rank is read only for a sharding
    that lays the value out: unspecified entries stand for hi values too.)"""
    if dim is None or s is UNSPECIFIED:
        return s
    if spmd_name is None and s.is_fully_replicated:
        return s
    if not isinstance(s, NamedSharding):
        return s
    ndim: int = aval.ndim
    entry = None if spmd_name is None else (
        spmd_name[0] if len(spmd_name) == 1 else tuple(spmd_name))
    parts = list(s.spec.partitions) + [None] * (ndim - 1 - len(s.spec.partitions))
    parts.insert(dim, entry)
    while parts and parts[-1] is None:
        parts.pop()
    spec = P(*parts, unreduced=s.spec.unreduced, reduced=s.spec.reduced)
    return NamedSharding(s.mesh, spec, memory_kind=s._memory_kind)


__all__ = ["IN", "OUT", "UNSPECIFIED", "EagerPlacement", "UnspecifiedValue", "batched",
           "carries", "eager_placement", "kept", "register_eager_placement", "shardings_of",
           "unspecified", "with_shardings"]
