"""The ``fft`` primitive: discrete Fourier transforms over the minor axes.

``fft(x, fft_type, fft_lengths)`` transforms the last ``len(fft_lengths)``
axes of x: FFT and IFFT complex to complex (IFFT scaled by 1/N), RFFT real
to the half spectrum (last length n -> n // 2 + 1), IRFFT the half spectrum
back to a real array (NumPy's convention: the outer axes by an inverse
complex transform, then the last by an inverse real one, which reads only
the real part of the DC and, for even n, Nyquist bins).

Impl: NumPy's pocketfft in float64/complex128, the result rounded once to
the result dtype, so a float32 result does not depend on the machine or on
how NumPy would itself round float32 butterflies. XLA's CPU backend (ducc)
computes float32 transforms in float32; the two agree to a tolerance
stated in SPEC.md, not bit for bit.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of, from_primitive
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import linear_jvp
from spec._src.interpreters.batching import AxisData, BatchDim, bdim_at_front
from spec._src.interpreters.spmd import Dist
from spec._src.lax import elementwise as E
from spec._src.lax import sharding_kit as SK
from spec._src.lax.shaping import asarray, convert_element_type
from spec._src.lowering.emitter import LoweringContext, ints, tensor_type


class FftType(enum.IntEnum):
    """Which transform ``fft`` computes; an IntEnum so the jaxpr prints
    ``fft_type=0`` ... ``3`` as JAX does."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_BY_NAME = {"fft": FftType.FFT, "FFT": FftType.FFT, "ifft": FftType.IFFT,
            "IFFT": FftType.IFFT, "rfft": FftType.RFFT, "RFFT": FftType.RFFT,
            "irfft": FftType.IRFFT, "IRFFT": FftType.IRFFT}


def fft_type_of(fft_type: Any) -> FftType:
    """``fft_type`` as an FftType: the enum itself or its name."""
    if isinstance(fft_type, str):
        if fft_type not in _BY_NAME:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
        return _BY_NAME[fft_type]
    if isinstance(fft_type, FftType):
        return fft_type
    raise TypeError(f"Unknown FFT type value '{fft_type}'")


# ---------------------------------------------------------------- typing
# C1 len(fft_lengths) <= rank. RFFT: C2 float32 or float64 operand; C3 the
# minor axes equal fft_lengths; result complex, last axis n // 2 + 1.
# IRFFT: C2 complex operand; C3 the minor axes but the last equal
# fft_lengths[:-1]; result real with minor axes fft_lengths. FFT/IFFT: C2
# complex operand; C3 the minor axes equal fft_lengths; result as the
# operand. All errors are ValueError, with JAX's wording. The weak type and
# the sharding (whole, as JAX keeps the operand's) carry over.

def _fft_type(x: ArrayType, *, fft_type: FftType, fft_lengths: tuple[int, ...]
              ) -> list[ArrayType]:
    k = len(fft_lengths)
    require(k <= x.ndim, "fft", "C1",
            f"FFT input shape {x.shape} must have at least as many input dimensions as "
            f"fft_lengths {fft_lengths}.", ValueError)
    if fft_type == FftType.RFFT:
        require(x.dtype in (T.float32, T.float64), "fft", "C2",
                f"RFFT input must be float32 or float64, got {x.dtype}", ValueError)
        require(x.shape[-k:] == fft_lengths, "fft", "C3",
                f"RFFT input shape {x.shape} minor dimensions must be equal to fft_lengths "
                f"{fft_lengths}", ValueError)
        shape = x.shape[:-k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        dtype = T.complex64 if x.dtype == T.float32 else T.complex128
    elif fft_type == FftType.IRFFT:
        require(T.is_complex(x.dtype), "fft", "C2",
                f"IRFFT input must be complex64 or complex128, got {x.dtype}", ValueError)
        require(x.shape[-k:-1] == fft_lengths[:-1], "fft", "C3",
                f"IRFFT input shape {x.shape} minor dimensions must be equal to all except "
                f"the last fft_length, got fft_lengths={fft_lengths}", ValueError)
        shape = x.shape[:-k] + fft_lengths
        dtype = T.float32 if x.dtype == T.complex64 else T.float64
    else:
        require(T.is_complex(x.dtype), "fft", "C2",
                f"FFT input must be complex64 or complex128, got {x.dtype}", ValueError)
        require(x.shape[-k:] == fft_lengths, "fft", "C3",
                f"FFT input shape {x.shape} minor dimensions must be equal to fft_lengths "
                f"{fft_lengths}", ValueError)
        shape, dtype = x.shape, x.dtype
    return [ArrayType(shape, dtype, x.weak_type)]


# ------------------------------------------------------------------ impl

def _fft_impl(x: np.ndarray, *, fft_type: FftType, fft_lengths: tuple[int, ...]
              ) -> list[np.ndarray]:
    [out_aval] = _fft_type(ArrayType(x.shape, x.dtype), fft_type=fft_type,
                           fft_lengths=fft_lengths)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out: np.ndarray
    if 0 in fft_lengths:
        # A transform over an empty axis sums nothing. JAX's RFFT of one fails when it
        # is lowered (its result type keeps one entry that XLA's result lacks).
        if fft_type == FftType.RFFT:
            raise ValueError(f"RFFT over an empty axis (fft_lengths {fft_lengths}) has no "
                             f"result of shape {out_aval.shape}")
        return [np.zeros(out_aval.shape, out_aval.dtype)]
    if fft_type == FftType.RFFT:
        out = np.fft.rfftn(x.astype(np.float64), s=fft_lengths, axes=axes)
    elif fft_type == FftType.IRFFT:
        out = np.fft.irfftn(x.astype(np.complex128), s=fft_lengths, axes=axes)
    elif fft_type == FftType.IFFT:
        out = np.fft.ifftn(x.astype(np.complex128), s=fft_lengths, axes=axes)
    else:
        out = np.fft.fftn(x.astype(np.complex128), s=fft_lengths, axes=axes)
    return [np.asarray(out).astype(out_aval.dtype)]


# -------------------------------------------------------------- transpose
# fft is linear. The DFT matrix is symmetric, so FFT and IFFT transpose to
# themselves. RFFT transposes to N * IRFFT(conj(ct) / m) and IRFFT to
# conj(m * RFFT(ct) / N), where m is 1 at the DC (and, for even n, Nyquist)
# bin and 2 elsewhere: the bins the half spectrum leaves out (JAX's rules).

def _half_spectrum_mask(like: Any, m: int, n: int, dtype: Any) -> Any:
    """The mask m over the last axis, broadcast to ``like``'s rank."""
    weights = np.full((m,), 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[m - 1] = 1.0
    rank = canonical_aval_of(like).ndim
    return asarray(weights.astype(dtype).reshape((1,) * (rank - 1) + (m,)))


def _fft_transpose(ct: Any, x: Any, *, fft_type: FftType, fft_lengths: tuple[int, ...]
                   ) -> list[Any]:
    n = fft_lengths[-1]
    size = math.prod(fft_lengths)
    if fft_type == FftType.RFFT:
        ct_aval = canonical_aval_of(ct)
        mask = _half_spectrum_mask(ct, ct_aval.shape[-1], n, ct_aval.dtype)
        inverse = fft_p.bind(E.div(E.conj(ct), mask), fft_type=FftType.IRFFT,
                             fft_lengths=fft_lengths)
        return [E.mul(E.const_like(inverse, size), inverse)]
    if fft_type == FftType.IRFFT:
        spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
        s_aval = canonical_aval_of(spectrum)
        mask = _half_spectrum_mask(spectrum, s_aval.shape[-1], n, s_aval.dtype)
        scaled = E.mul(E.const_like(spectrum, 1 / size), spectrum)
        return [E.conj(E.mul(mask, scaled))]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


# --------------------------------------------------------------- batching
# The batch axis moves to the front (a major axis, never a transformed one).

def _fft_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], **params: Any
               ) -> tuple[list[Any], list[BatchDim]]:
    x = bdim_at_front(args[0], dims[0], axis.size, axis.explicit_mesh_axis)
    return [fft_p.bind(x, **params)], [0]


# ------------------------------------------------------ sharding, per device
# The result keeps the operand's partitions (JAX's abstract evaluation keeps
# the operand's sharding); unreduced or reduced operands are not supported
# (NotImplementedError, as JAX). Per device: split only over the major
# (untransformed) axes, each device transforms its own block; otherwise
# the operand is gathered first.

def _fft_ur(x: ArrayType, **params: Any) -> SK.UR:
    if SK.getu(x) or SK.getr(x):
        raise NotImplementedError("fft of an unreduced or reduced operand is not implemented")
    return frozenset(), frozenset(), None


def _major_split_only(args: list[Dist], out_avals: list[ArrayType], *, fft_type: FftType,
                      fft_lengths: tuple[int, ...]) -> bool:
    k = len(fft_lengths)
    for aval in [args[0].aval, *out_avals]:
        if any(tuple(S.parts_of(aval))[aval.ndim - k:]) or S.unreduced_of(aval):
            return False
    return True


# ---------------------------------------------------------------- lowering

def _fft_lowering(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                  out_avals: Sequence[ArrayType], *, fft_type: FftType,
                  fft_lengths: tuple[int, ...]) -> list[str]:
    return [ctx.line(f"stablehlo.fft {operands[0]}, type = {fft_type.name}, "
                     f"length = {ints(fft_lengths)} : ({tensor_type(in_avals[0])}) -> "
                     f"{tensor_type(out_avals[0])}")]


fft_p = declare(
    "fft", typing=_fft_type, impl=_fft_impl, jvp=linear_jvp(), transpose=_fft_transpose,
    batch=_fft_batch, sharding=SK.section("fft", SK.same_as(0), _fft_ur),
    per_device=from_primitive(lambda p: PD.guarded(p, _major_split_only, PD.local(p))),
    lowering=_fft_lowering)


def _inexact(dtype: T.DType) -> T.DType:
    """JAX's ``to_inexact_dtype``: 64-bit integers to float64, other
    integers and bool to float32."""
    if T.is_inexact(dtype):
        return dtype
    return T.float64 if dtype in (T.int64, T.uint64) else T.float32


def _complex(dtype: T.DType) -> T.DType:
    """JAX's ``to_complex_dtype``: complex128 from 64-bit, else complex64."""
    return T.complex128 if _inexact(dtype) in (T.float64, T.complex128) else T.complex64


def fft_bind(x: Any, fft_type: Any, fft_lengths: Sequence[int]) -> Any:
    """JAX's ``lax.fft`` body: the operand converted (RFFT to its inexact
    dtype, else to complex), then the primitive; no lengths leave x as it
    is. A complex RFFT operand is a ValueError."""
    kind = fft_type_of(fft_type)
    dtype = canonical_aval_of(x).dtype
    if kind == FftType.RFFT:
        if T.is_complex(dtype):
            raise ValueError("only real valued inputs supported for rfft")
        x = convert_element_type(x, _inexact(dtype))
    else:
        x = convert_element_type(x, _complex(dtype))
    lengths = tuple(int(n) for n in fft_lengths)
    if not lengths:
        return x
    return fft_p.bind(x, fft_type=kind, fft_lengths=lengths)


__all__ = ["FftType", "fft_p"]
