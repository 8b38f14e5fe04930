"""Shared helpers for case modules (not itself a case module)."""

from __future__ import annotations

from typing import Any

import ml_dtypes  # noqa: F401 - registers bfloat16/float8 names with np.dtype
import numpy as np

# Every dtype JAX exposes through jnp that the promotion lattice covers.
DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
)

SHORT: dict[str, str] = {
    "bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
    "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2",
}  # fmt: skip


def np_dtype(name: str) -> np.dtype[Any]:
    return np.dtype(name)


def data(shape: tuple[int, ...], dtype: str, seed: int = 0, *, kind: str = "any") -> Any:
    """Deterministic NumPy test data of ``dtype``.

    kind: "any" (mixed signs, moderate magnitude), "pos" (strictly positive), "unit" (in (-1, 1)),
    "small" (small non-negative integers, safe for shifts/powers).
    """
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if kind == "small":
            lo, hi = 0, 8
        elif kind == "pos":
            lo, hi = 1, min(int(info.max), 100)
        else:
            lo, hi = max(int(info.min), -100), min(int(info.max), 100)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    if dt.kind == "c":
        part = np.float32 if dt.itemsize == 8 else np.float64
        re = np.asarray(data(shape, np.dtype(part).name, seed, kind=kind))
        im = np.asarray(data(shape, np.dtype(part).name, seed + 1000, kind=kind))
        return (re + 1j * im).astype(dt)
    if kind == "pos":
        vals = rng.uniform(0.1, 4.0, size=shape)
    elif kind == "unit":
        vals = rng.uniform(-0.95, 0.95, size=shape)
    elif kind == "small":
        vals = rng.integers(0, 4, size=shape).astype(np.float64)
    else:
        vals = rng.uniform(-4.0, 4.0, size=shape)
    return vals.astype(dt)
