"""Subnormal (denormal) floating-point numbers: flush to zero.

XLA's CPU backend runs floating-point arithmetic with flush-to-zero and
denormals-are-zero set: a subnormal operand of an arithmetic primitive is
read as a zero of the same sign, and a subnormal result is written as a zero
of the same sign. Data movement (reshape, slice, gather, select, ...), sign
manipulation (neg, abs) and conversions between floating types other than
float32 -> float64 leave subnormals alone; a stored array keeps its
subnormal values. (SPEC.md, section "Subnormal numbers".)

NumPy computes with gradual underflow, so arithmetic impls run their NumPy
kernel through ``arithmetic(fn, *operands)``. That has two implementations
with the same meaning:

- explicit (the definition, and the portable path): flush each float
  operand, run the kernel, flush the result;
- hardware: where the C library lets us set the SSE control register
  (glibc on x86-64), run the kernel with its FTZ and DAZ bits set, which is
  exactly the mode XLA uses, at no per-element cost.

A test runs the same programs both ways and requires identical bits. The
exact contraction flushes its float32 operands while widening them to float64
(``widen_flushed``: the copy in the hardware mode, whose denormals-are-zero
also applies to conversions, or an explicit flush first).
Config ``spec_denormals="ieee"`` turns flushing off (NumPy's semantics).

Narrow floats (float16, bfloat16, float8) are computed in float32: bfloat16
subnormals are float32 subnormals and so flush; float16 subnormals are
float32 normals and survive, both exactly as on XLA CPU.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.core.config import config

_TINY = {np.dtype(np.float32): np.float32(np.finfo(np.float32).tiny),
         np.dtype(np.float64): np.float64(np.finfo(np.float64).tiny)}
_COMPLEX_PARTS: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64)}


_VALUES = config._values  # read directly: this is on every arithmetic impl's path


def flushing() -> bool:
    return bool(_VALUES["spec_denormals"] == "flush")


# ------------------------------------------------------------ explicit path

# Arrays of at least this many elements are first checked for subnormals a
# block at a time in kept scratch memory: the check reads the array once and
# allocates nothing, where whole-array temporaries of |x| and a mask cost
# page faults that can exceed the arithmetic of a large kernel.
_BLOCK = 1 << 16
# Bit patterns of the largest subnormal: |x|'s bits minus one are below it
# exactly for subnormal x (zero wraps around to the largest pattern).
_SUBNORMAL_BITS: dict[np.dtype[Any], tuple[np.dtype[Any], int]] = {
    np.dtype(np.float32): (np.dtype(np.uint32), 0x007FFFFF),
    np.dtype(np.float64): (np.dtype(np.uint64), 0x000FFFFFFFFFFFFF)}


class _Block(threading.local):
    """Per-thread scratch for one block of |x| (float32 or float64)."""

    def __init__(self) -> None:
        self.buffer = np.empty(_BLOCK * 8, np.uint8)


_SCRATCH = _Block()


def _flat_view(x: np.ndarray) -> np.ndarray | None:
    """The elements of a contiguous array as a flat view (None otherwise)."""
    if x.flags.c_contiguous:
        return x.reshape(-1)
    if x.flags.f_contiguous:
        return x.T.reshape(-1)
    return None


def _surely_normal(flat: np.ndarray) -> bool:
    """Whether the flat float32/float64 array holds no subnormal, a block at
    a time: |x| into scratch, and where its minimum is below the smallest
    normal (zeros, nan or subnormals) the exact test on the bits."""
    dt = flat.dtype
    tiny = _TINY[dt]
    bits, largest_subnormal = _SUBNORMAL_BITS[dt]
    scratch = _SCRATCH.buffer[:_BLOCK * dt.itemsize].view(dt)
    for start in range(0, flat.size, _BLOCK):
        part = flat[start:start + _BLOCK]
        magnitude = np.abs(part, out=scratch[:part.size])
        if magnitude.min() >= tiny:
            continue
        below = np.subtract(magnitude.view(bits), 1, out=magnitude.view(bits))
        if below.min() < largest_subnormal:
            return False
    return True


def _flush_real(x: np.ndarray, tiny: Any) -> np.ndarray:
    if x.size >= _BLOCK:
        flat = _flat_view(x)
        if flat is not None and _surely_normal(flat):
            return x
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

    Returns ``x`` itself when there is nothing to flush, and for dtypes that
    do not flush (integers, bool, float16, the float8s).
    """
    dt = x.dtype
    tiny = _TINY.get(dt)
    if tiny is not None:
        return _flush_real(x, tiny)
    part = _COMPLEX_PARTS.get(dt)
    if part is not None:
        if x.size >= _BLOCK:
            flat = _flat_view(x)
            if flat is not None and _surely_normal(flat.view(part)):
                return x
        parts = x.real, x.imag  # each access makes a new view
        real = _flush_real(parts[0], _TINY[part])
        imag = _flush_real(parts[1], _TINY[part])
        if real is parts[0] and imag is parts[1]:
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


def _explicit(fn: Callable[..., Any], operands: tuple[Any, ...]) -> Any:
    out = fn(*[flush(x) if isinstance(x, np.ndarray) else x for x in operands])
    return flush(np.asarray(out))


# ------------------------------------------------------------ hardware path

class _FEMode(ctypes.Structure):
    # glibc's femode_t on x86-64: the x87 control word and the SSE MXCSR.
    _fields_ = [("control", ctypes.c_uint16), ("reserved", ctypes.c_uint16),
                ("mxcsr", ctypes.c_uint32)]


_MXCSR_FTZ_DAZ = 0x8040  # bit 15 flush-to-zero, bit 6 denormals-are-zero


class _SSEMode:
    """Switches the calling thread's SSE unit into and out of FTZ+DAZ."""

    def __init__(self, libm: Any) -> None:
        self._set = libm.fesetmode
        self._set.argtypes = [ctypes.c_void_p]
        normal = _FEMode()
        if libm.fegetmode(ctypes.byref(normal)) != 0:
            raise OSError("fegetmode failed")
        normal.mxcsr &= ~_MXCSR_FTZ_DAZ
        flushed = _FEMode(normal.control, normal.reserved, normal.mxcsr | _MXCSR_FTZ_DAZ)
        self._normal, self._flushed = normal, flushed
        self._normal_ref = ctypes.addressof(normal)
        self._flushed_ref = ctypes.addressof(flushed)

    def run(self, fn: Callable[..., Any], operands: tuple[Any, ...]) -> Any:
        self._set(self._flushed_ref)
        try:
            return fn(*operands)
        finally:
            self._set(self._normal_ref)


def _probe_hardware() -> _SSEMode | None:
    """The hardware path, if this platform has it and it behaves as XLA's."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        mode = _SSEMode(ctypes.CDLL(name))
    except (OSError, AttributeError):
        return None
    probe = np.array([1e-40, -1e-40, 1.5], np.float32)
    product = mode.run(np.multiply, (probe, np.float32(1.0)))
    restored = np.multiply(probe, np.float32(1.0))
    if product.tolist() != [0.0, -0.0, 1.5] or restored[0] == 0:
        return None
    return mode


_HARDWARE = _probe_hardware()
_use_hardware = [_HARDWARE is not None]


def _probe_converting_daz() -> bool:
    """Whether a float32 -> float64 copy run in the hardware mode reads
    subnormals as zeros of their sign (the mode's denormals-are-zero applies
    to conversions), contiguous and strided, past any vector width."""
    if _HARDWARE is None:
        return False
    src = np.tile(np.array([1e-40, -1e-40, 1.5, -0.0, 3e-39, -2.5], np.float32), 64)
    want = np.where(np.abs(src) < np.finfo(np.float32).tiny,
                    np.copysign(np.zeros((), np.float32), src), src).astype(np.float64)
    for step in (1, 3):
        dst = np.empty(src[::step].shape, np.float64)
        _HARDWARE.run(np.copyto, (dst, src[::step]))
        if dst.tobytes() != want[::step].tobytes():
            return False
    return True


_CONVERSION_DAZ = _probe_converting_daz()


def widen_flushed(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)`` of float32 ``src`` into float64 ``dst`` with
    each subnormal of ``src`` read as a zero of its sign (denormals-are-zero
    for an arithmetic primitive's operands, at the cost of the copy alone).
    On the hardware path the conversion runs in the flushing mode; otherwise
    ``src`` is flushed first."""
    if _use_hardware[0] and _CONVERSION_DAZ:
        hw = _HARDWARE
        assert hw is not None
        hw._set(hw._flushed_ref)
        try:
            np.copyto(dst, src)
        finally:
            hw._set(hw._normal_ref)
        return
    np.copyto(dst, flush(src))


def use_hardware(enabled: bool) -> None:
    """Choose the hardware path (when available) or the explicit one; tests
    use this to check that both give the same bits."""
    _use_hardware[0] = enabled and _HARDWARE is not None


def hardware_available() -> bool:
    return _HARDWARE is not None


def arithmetic(fn: Callable[..., Any], *operands: Any) -> Any:
    """Run a NumPy float kernel with XLA CPU's subnormal semantics:
    subnormal operands read as zero, subnormal results written as zero.
    Floating-point warnings are silenced (inf and nan are values here)."""
    if not flushing():
        return quietly(fn, *operands)
    if _use_hardware[0] and _ERROR_POLICY is not None:
        # The hot path, in one frame: quiet NumPy, set FTZ+DAZ, run, restore.
        hw = _HARDWARE
        assert hw is not None
        token = _ERROR_POLICY.set(_IGNORE_ALL)
        hw._set(hw._flushed_ref)
        try:
            return fn(*operands)
        finally:
            hw._set(hw._normal_ref)
            _ERROR_POLICY.reset(token)
    if _use_hardware[0]:
        assert _HARDWARE is not None
        return quietly(_HARDWARE.run, fn, operands)
    return quietly(_explicit, fn, operands)


# NumPy's floating-point error policy lives in a context variable; setting it
# to "ignore" directly costs a fraction of entering ``np.errstate``, which
# matters on the per-operation path. Fall back to errstate if NumPy moves it.
try:
    from numpy._core import _ufunc_config as _ufunc_config

    _IGNORE_ALL: Any = getattr(_ufunc_config, "_make_extobj")(all="ignore")
    _ERROR_POLICY: Any = getattr(_ufunc_config, "_extobj_contextvar")
except (ImportError, AttributeError):  # pragma: no cover - other NumPy versions
    _ERROR_POLICY = None


def quietly(fn: Callable[..., Any], *operands: Any) -> Any:
    """``fn(*operands)`` with NumPy's floating-point warnings silenced."""
    if _ERROR_POLICY is None:
        with np.errstate(all="ignore"):
            return fn(*operands)
    token = _ERROR_POLICY.set(_IGNORE_ALL)
    try:
        return fn(*operands)
    finally:
        _ERROR_POLICY.reset(token)
