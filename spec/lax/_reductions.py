"""lax wrappers for reductions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec.rules.reductions import reduce_sum_p

__all__ = ["reduce_sum"]


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    return reduce_sum_p.bind(operand, axes=tuple(int(a) for a in axes), out_sharding=out_sharding)
