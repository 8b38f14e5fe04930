"""Subnormal (denormal) floating-point numbers: flush to zero.

XLA's CPU backend runs floating-point arithmetic with flush-to-zero and
denormals-are-zero set: a subnormal operand of an arithmetic primitive is
read as a zero of the same sign, and a subnormal result is written as a zero
of the same sign. Data movement (reshape, slice, gather, sort, select, ...),
sign manipulation (neg, abs) and bit casts leave subnormals alone; a stored
array keeps its subnormal values.

NumPy computes with gradual underflow, so arithmetic impls call
``flush_inputs``/``flush_output`` around the NumPy kernel. The check costs
about one extra pass over the data; config ``spec_denormals="ieee"`` turns
the flushing off (NumPy's semantics, for speed, no longer JAX's).

Narrow floats (float16, bfloat16, float8) are computed in float32: bfloat16
subnormals are float32 subnormals and so flush; float16 subnormals are
float32 normals and survive, both exactly as on XLA CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec.config import config

_TINY = {np.dtype(np.float32): np.float32(np.finfo(np.float32).tiny),
         np.dtype(np.float64): np.float64(np.finfo(np.float64).tiny)}
_COMPLEX_PARTS = {np.dtype(np.complex64): np.dtype(np.float32),
                  np.dtype(np.complex128): np.dtype(np.float64)}


def flushing() -> bool:
    return bool(config.spec_denormals == "flush")


def _flush_real(x: np.ndarray, tiny: Any) -> np.ndarray:
    magnitude = np.abs(x)
    small = magnitude < tiny
    if not small.any():
        return x
    small &= magnitude != 0
    if not small.any():
        return x  # only exact zeros
    return np.where(small, np.copysign(np.zeros((), x.dtype), x), x)


def flush(x: np.ndarray) -> np.ndarray:
    """``x`` with every subnormal replaced by a zero of the same sign.

    Returns ``x`` itself when there is nothing to flush (the common case) and
    for dtypes that do not flush (integers, bool, float16 and the float8s,
    which XLA handles through float32 normals).
    """
    dt = x.dtype
    tiny = _TINY.get(dt)
    if tiny is not None:
        return _flush_real(x, tiny)
    part = _COMPLEX_PARTS.get(dt)
    if part is not None:
        real = _flush_real(x.real, _TINY[part])
        imag = _flush_real(x.imag, _TINY[part])
        if real is x.real and imag is x.imag:
            return x
        out = np.empty_like(x)
        out.real = real
        out.imag = imag
        return out
    return x


def flush_all(xs: tuple[np.ndarray, ...] | list[np.ndarray]) -> list[np.ndarray]:
    """Denormals-are-zero for the operands of an arithmetic primitive."""
    if not flushing():
        return list(xs)
    return [flush(x) for x in xs]


def flush_result(x: np.ndarray) -> np.ndarray:
    """Flush-to-zero for a result of an arithmetic primitive."""
    return flush(x) if flushing() else x
