"""Integer arithmetic beyond the elementwise family's: ``mulhi``.

``mulhi(x, y)``: for N-bit integers, the upper N bits of the full 2N-bit
product (signed for signed dtypes: the product's floor division by 2**N),
elementwise, with lax's broadcasting of equal-rank operands and scalars.
Constraints as every binary elementwise primitive's (SPEC.md 9.1): integer
dtypes, one dtype, broadcast-compatible shapes. Its derivative is zero (an
integer result); under vmap it broadcasts as the other binary primitives.

The NumPy evaluation widens N <= 32 bits to 64 and shifts; for 64 bits it
forms the 128-bit product from 32-bit halves in unsigned arithmetic
(wrapping), and corrects the signed case by subtracting each operand where
the other is negative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.lax.elementwise import _binary_fn, _zero_deriv, declare_binary
from spec._src.lax.elementwise_kit import INTEGER
from spec._src.lowering import transcendental as LT

_LOW = np.uint64(0xFFFFFFFF)
_HALF = np.uint64(32)


def _high_unsigned64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The upper 64 bits of the 128-bit product of uint64 arrays."""
    a0, a1 = a & _LOW, a >> _HALF
    b0, b1 = b & _LOW, b >> _HALF
    low_low, high_low, low_high = a0 * b0, a1 * b0, a0 * b1
    cross = (low_low >> _HALF) + (high_low & _LOW) + low_high
    return a1 * b1 + (high_low >> _HALF) + (cross >> _HALF)  # type: ignore[no-any-return]


def _mulhi_impl(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    dtype = np.result_type(x, y)
    bits = 8 * dtype.itemsize
    with np.errstate(over="ignore"):
        if bits <= 32:
            wide = np.int64 if dtype.kind == "i" else np.uint64
            product = x.astype(wide) * y.astype(wide)
            return [np.asarray(product >> wide(bits)).astype(dtype)]
        a, b = x.astype(np.uint64), y.astype(np.uint64)
        high = _high_unsigned64(a, b)
        if dtype.kind == "i":
            # Two's complement: the signed high word subtracts each operand where
            # the other is negative.
            high = high - np.where(x < 0, b, np.uint64(0)) - np.where(y < 0, a, np.uint64(0))
        return [np.asarray(high, dtype=np.uint64).view(dtype)]


mulhi_p = declare_binary("mulhi", INTEGER, _mulhi_impl, lowering=LT.chlo("mulhi"),
                         **_zero_deriv("mulhi"))

mulhi: Any = _binary_fn(mulhi_p, "mulhi",
                        "Elementwise upper half of the double-width product of integers.")

__all__ = ["mulhi", "mulhi_p"]
