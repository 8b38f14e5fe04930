"""Elementwise primitives: unary math, binary arithmetic, comparisons, bitwise.

Typing (all): C1 each operand's dtype is in the primitive's accepted class;
C2 n-ary operands share one dtype; C3 shapes broadcast (rank-0 stretches, else
equal ranks and per-axis equal sizes up to 1). The result is weak iff every
operand is weak.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec.interpreter import pp_hiding
from spec.rules._elementwise_kit import INEXACT, NUMBER, lifted, nary_type
from spec.rules._registry import declare
from spec.types import ArrayType


def _hide_none(*names: str) -> Any:
    return pp_hiding(when=lambda k, v: k in names and v is None)


def _binary_type(name: str, accepted: Any) -> Any:
    def typing(x: ArrayType, y: ArrayType, **params: Any) -> list[ArrayType]:
        return nary_type(name, [x, y], accepted)
    return typing


def _unary_type(name: str, accepted: Any) -> Any:
    def typing(x: ArrayType, **params: Any) -> list[ArrayType]:
        return nary_type(name, [x], accepted)
    return typing


add_p = declare("add", typing=_binary_type("add", NUMBER), impl=lifted(np.add))
mul_p = declare("mul", typing=_binary_type("mul", NUMBER), impl=lifted(np.multiply),
                pp_rule=_hide_none("out_dtype"))
sin_p = declare("sin", typing=_unary_type("sin", INEXACT), impl=lifted(np.sin),
                pp_rule=_hide_none("accuracy"))
