"""Contractions for tests/rules/test_blas_independence.py: run as a script, it evaluates a fixed set
of dot_general / matmul / einsum / conv programs with spec and prints one line per result,
``<name> <sha256 of dtype, shape and bytes>``. The test runs it under several OpenBLAS kernels
(OPENBLAS_CORETYPE) and thread counts (OPENBLAS_NUM_THREADS), with the checkout on PYTHONPATH,
and requires the same lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import ml_dtypes
import numpy as np

import spec
import spec.numpy as jnp
from spec import lax

Case = tuple[str, Callable[[], Any]]


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _conv(x: Any, w: Any, **kw: Any) -> Any:
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW",
                                                                             "NCHW"), **kw)


def float32_cases(r: np.random.Generator) -> Iterator[Case]:
    f32 = np.float32
    v6a, v6b = _data(r, (6,), f32), _data(r, (6,), f32)
    yield "f32 dot 6", lambda: jnp.dot(v6a, v6b)
    a, b = _data(r, (1, 2), f32), _data(r, (2, 1), f32)
    yield "f32 1x2x1", lambda: jnp.matmul(a, b)
    m8a, m8b = _data(r, (8, 8), f32), _data(r, (8, 8), f32)
    yield "f32 8x8", lambda: jnp.asarray(m8a) @ m8b
    ma, mb = _data(r, (64, 300), f32), _data(r, (300, 64), f32)
    yield "f32 64x300x64", lambda: jnp.matmul(ma, mb)
    big_a, big_b = _data(r, (512, 512), f32), _data(r, (512, 512), f32)
    yield "f32 512x512x512", lambda: jnp.matmul(big_a, big_b)
    ba, bb = _data(r, (3, 40, 50), f32), _data(r, (3, 50, 20), f32)
    yield "f32 batched dot_general", lambda: lax.dot_general(ba, bb, (((2,), (1,)), ((0,), (0,))))
    ta, tb = _data(r, (4, 5, 30), f32), _data(r, (30, 5, 6), f32)
    yield "f32 tensordot", lambda: jnp.tensordot(ta, tb, axes=([1, 2], [1, 0]))
    yield "f32 einsum", lambda: jnp.einsum("bij,bjk->bik", ba, bb)
    yield "f32 einsum rows", lambda: jnp.einsum("ij,ij->i", ma, mb.T)
    eye, x = np.eye(300, dtype=f32), _data(r, (300, 70), f32)
    yield "f32 identity (exact zeros)", lambda: jnp.matmul(eye, x)
    c = _data(r, (20, 150), f32)
    cl, cr = np.concatenate([c, c], 1), np.concatenate([c.T, -c.T], 0)
    yield "f32 cancelling to zero", lambda: jnp.matmul(cl, cr)
    scale = np.ldexp(1.0, r.integers(-60, 60, 300)).astype(f32)
    yield "f32 magnitude mix", lambda: jnp.matmul(ma * scale, mb)
    # Products of moderate size from factors that are not: every element takes the exact path.
    yield "f32 scaled factors", lambda: jnp.matmul(ma[:16] * scale, mb[:, :16] / scale[:, None])
    special = ma.copy()
    special[3, 5], special[7, 0], special[9, 9] = np.inf, -np.inf, np.nan
    yield "f32 inf and nan", lambda: jnp.matmul(special, mb)
    bf_a, bf_b = (_data(r, (16, 300), f32).astype(ml_dtypes.bfloat16),
                  _data(r, (300, 12), f32).astype(ml_dtypes.bfloat16))
    yield "bf16 16x300x12", lambda: jnp.matmul(bf_a, bf_b)
    yield "bf16 -> f32", lambda: lax.dot(bf_a, bf_b, preferred_element_type=np.float32)
    h_a, h_b = _data(r, (32, 200), np.float16), _data(r, (200, 16), np.float16)
    yield "f16 32x200x16", lambda: jnp.matmul(h_a, h_b)
    z_a = (_data(r, (20, 300), f32) + 1j * _data(r, (20, 300), f32)).astype(np.complex64)
    z_b = (_data(r, (300, 10), f32) + 1j * _data(r, (300, 10), f32)).astype(np.complex64)
    yield "c64 20x300x10", lambda: jnp.matmul(z_a, z_b)
    i_a = r.integers(-100, 100, (64, 300)).astype(np.int32)
    i_b = r.integers(-100, 100, (300, 64)).astype(np.int32)
    yield "i32 64x300x64", lambda: jnp.matmul(i_a, i_b)
    img, ker = _data(r, (2, 16, 20, 20), f32), _data(r, (8, 16, 5, 5), f32)
    yield "f32 conv", lambda: _conv(img, ker)
    gker = _data(r, (8, 8, 5, 5), f32)
    yield "f32 grouped conv", lambda: _conv(img, gker, feature_group_count=2)


def float64_cases(r: np.random.Generator) -> Iterator[Case]:
    f64 = np.float64
    v6a, v6b = _data(r, (6,), f64), _data(r, (6,), f64)
    yield "f64 dot 6", lambda: lax.dot(v6a, v6b)
    m8a, m8b = _data(r, (8, 8), f64), _data(r, (8, 8), f64)
    yield "f64 8x8", lambda: jnp.matmul(m8a, m8b)
    ma, mb = _data(r, (100, 600), f64), _data(r, (600, 80), f64)
    yield "f64 100x600x80", lambda: jnp.matmul(ma, mb)
    big_a, big_b = _data(r, (256, 512), f64), _data(r, (512, 256), f64)
    yield "f64 256x512x256", lambda: jnp.matmul(big_a, big_b)
    scale = np.ldexp(1.0, r.integers(-500, 500, 600))
    yield "f64 magnitude mix", lambda: jnp.matmul(ma * scale, mb)
    yield "f64 scaled factors", lambda: jnp.matmul(ma[:8] * scale, mb[:, :8] / scale[:, None])
    c = _data(r, (20, 150), f64)
    cl, cr = np.concatenate([c, c], 1), np.concatenate([c.T, -c.T], 0)
    yield "f64 cancelling to zero", lambda: jnp.matmul(cl, cr)
    special = ma.copy()
    special[3, 5], special[7, 0], special[9, 9] = np.inf, -np.inf, np.nan
    yield "f64 inf and nan", lambda: jnp.matmul(special, mb)
    z_a = _data(r, (10, 300), f64) + 1j * _data(r, (10, 300), f64)
    z_b = _data(r, (300, 7), f64) + 1j * _data(r, (300, 7), f64)
    yield "c128 10x300x7", lambda: jnp.matmul(z_a, z_b)
    f_a, f_b = _data(r, (30, 300), np.float32), _data(r, (300, 20), np.float32)
    yield "f32 -> f64", lambda: lax.dot(f_a, f_b, preferred_element_type=np.float64)
    img, ker = _data(r, (1, 12, 16, 16), f64), _data(r, (4, 12, 5, 5), f64)
    yield "f64 conv", lambda: _conv(img, ker)


def digest(value: Any) -> str:
    arr = np.ascontiguousarray(np.asarray(value))
    h = hashlib.sha256(f"{arr.dtype.str} {arr.shape} ".encode())
    h.update(arr.tobytes())
    return h.hexdigest()[:20]


def main() -> None:
    r = np.random.default_rng(20240611)
    for name, fn in float32_cases(r):
        print(name, digest(fn()))
    with spec.enable_x64():
        for name, fn in float64_cases(r):
            print(name, digest(fn()))


if __name__ == "__main__":
    main()
