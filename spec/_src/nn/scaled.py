"""jax.nn's block-scaled products: ``scaled_matmul``, ``scaled_dot_general`` and
``get_scaled_dot_general_config``.

``scaled_matmul`` checks the shapes of its ``(B, M, K)``/``(B, N, K)`` operands and their
block scales and stages the ``scaled_matmul_wrapper`` primitive inside a ``jit`` named
``_scaled_matmul``, as JAX does. ``scaled_dot_general`` brings each operand to ``(B, M, K)``
(batch, kept, contracting dimensions), quantizes it in blocks along K by its
``BlockScaleConfig`` (``mxfp8``/``mxfp4``: float8_e8m0fnu power-of-two scales rounded up;
``nvfp4``: float8_e4m3fn scales under a float32 global scale), multiplies through
``scaled_matmul_wrapper`` and puts the result in ``dot_general``'s order. Its gradient is
JAX's custom VJP: the transposed products quantized by the gradient config (plain for
nvfp4), zeroed where nvfp4 clipped the input.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.api.custom_derivatives import custom_vjp
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.barrier import optimization_barrier
from spec._src.lax.dot import dot_general
from spec._src.lax.scaled_dot import scaled_matmul_wrapper_p
from spec._src.lax.shaping import bitcast_convert_type, transpose
from spec._src.numpy.creation import array, ones
from spec._src.numpy.indexing import where
from spec._src.numpy.linalg import matmul
from spec._src.numpy.math import abs as jnp_abs
from spec._src.numpy.math import clip, logical_and
from spec._src.numpy.reductions import max as jnp_max
from spec._src.numpy.shape import expand_dims, permute_dims, reshape, squeeze
from spec._src.numpy.util import _jit

_F32 = np.dtype(np.float32)
# The configs hold the scalar types, as JAX's do.
_E8M0 = ml_dtypes.float8_e8m0fnu
_E4M3 = ml_dtypes.float8_e4m3fn
_E2M1 = ml_dtypes.float4_e2m1fn


@dataclass(slots=True)
class BlockScaleConfig:
    """How one operand is quantized: ``block_size`` contracting elements share a scale
    of ``scale_type``; values are cast to ``data_type``."""

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


# ---------------------------------------------------------------- scaled_matmul


def _scaled_matmul_body(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                        preferred_element_type: Any = _F32) -> Any:
    return scaled_matmul_wrapper_p.bind(lhs, rhs, lhs_scales, rhs_scales,
                                        preferred_element_type=preferred_element_type)


_scaled_matmul = _jit("_scaled_matmul", _scaled_matmul_body, ("preferred_element_type",))


def _check_matmul_shapes(a: Any, b: Any, a_scales: Any, b_scales: Any) -> None:
    shapes = [tuple(canonical_aval_of(x).shape) for x in (a, b, a_scales, b_scales)]
    if not all(len(s) == 3 for s in shapes):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    (ba, m, ka), (bb, n, kb), (bas, mas, kas), (bbs, nbs, kbs) = shapes
    if ka != kb or ba != bb:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {shapes[0]} and {shapes[1]}")
    if kas != kbs or bas != bbs:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {shapes[2]} and {shapes[3]}")
    if mas != m or nbs != n:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {shapes[0]}, b: {shapes[1]}, a_scales: "
                         f"{shapes[2]}, b_scales: {shapes[3]}")


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
    """``einsum('BMK,BNK->BMN', lhs * repeat(lhs_scales), rhs * repeat(rhs_scales))``, each
    scale repeated over its block of K (``K // K_scale`` elements)."""
    _check_matmul_shapes(lhs, rhs, lhs_scales, rhs_scales)
    dtype = _user_dtype(preferred_element_type, "scaled_matmul")
    return _scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=dtype)


def _largest(dtype: Any, like: Any = _F32) -> Any:
    """The largest finite value of a narrow float type, as a scalar of type ``like``."""
    info = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]  # (knows the float8s)
    return np.asarray(info.max).astype(like)


def _user_dtype(dtype: Any, fun: str) -> np.dtype[Any]:
    """A dtype argument as JAX checks it: NumPy's TypeError for what is no dtype."""
    np.dtype(dtype)
    return T.to_dtype(dtype, fun)


# ------------------------------------------------------------------- configs


def get_scaled_dot_general_config(mode: str, global_scale: Any = None) -> BlockScaleConfig:
    """The quantization of one operand of scaled_dot_general in ``mode``."""
    if mode == "nvfp4":
        scale = ones((1,), dtype=_F32) if global_scale is None else global_scale
        return BlockScaleConfig("nvfp4", 16, _E2M1, _E4M3, scale, False)
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, _E4M3, _E8M0, None, False)
    if mode == "mxfp4":
        if global_scale is not None:
            raise ValueError("mxfp4 does not use a global_scale; its E8M0 block scales cover "
                             "the whole range.")
        return BlockScaleConfig("mxfp4", 32, _E2M1, _E8M0, None, False)
    raise ValueError(f"Unsupported mode: {mode}")


# ---------------------------------------------------------------- quantizing


def _to_3d(x: Any, contracting: Sequence[int], batch: Sequence[int]) -> Any:
    """``x`` transposed to (batch, kept, contracting) and reshaped to ``(B, M, K)``."""
    shape = canonical_aval_of(x).shape
    kept = [d for d in range(len(shape)) if d not in contracting and d not in batch]
    b_dims = [d for d in range(len(shape)) if d in batch]
    c_dims = [d for d in range(len(shape)) if d in contracting]
    sizes = [int(np.prod([shape[d] for d in ds], dtype=int)) for ds in (b_dims, kept, c_dims)]
    return reshape(permute_dims(x, tuple(b_dims + kept + c_dims)), tuple(sizes))


def _dot_shape(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
               lhs_dn: tuple[Sequence[int], Sequence[int]],
               rhs_dn: tuple[Sequence[int], Sequence[int]]) -> tuple[int, ...]:
    (lc, lb), (rc, rb) = lhs_dn, rhs_dn
    return tuple([d for i, d in enumerate(lhs_shape) if i in lb]
                 + [d for i, d in enumerate(lhs_shape) if i not in lc and i not in lb]
                 + [d for i, d in enumerate(rhs_shape) if i not in rc and i not in rb])


def _e8m0_rounded_up(x: Any) -> Any:
    """The power-of-two exponent byte at or above ``x`` (E8M0's encoding): the float32
    exponent, plus one when mantissa bits are set (not at the top exponent; a subnormal
    up to half the smallest normal rounds down to zero)."""
    bits = bitcast_convert_type(x.astype(_F32), np.uint32)
    exp = bits >> 23
    mant = bits & 0x7FFFFF
    up = logical_and(logical_and(mant > 0, exp != 0xFE),
                     ~logical_and(exp == 0, mant <= 0x400000))
    return where(up, exp + 1, exp).astype(np.uint8)


def _e8m0_value(x: Any, dtype: Any) -> Any:
    """The scale an E8M0 byte stands for, in ``dtype`` (zero as the smallest normal)."""
    value = bitcast_convert_type(x.astype(np.uint32) << 23, _F32)
    tiny = 2.0 ** -15 if np.dtype(dtype) == np.float16 else 2.0 ** -127
    return where(value == 0, array(tiny, _F32), value).astype(dtype)


def _quantize(x: Any, config: BlockScaleConfig) -> Any:
    shape = tuple(canonical_aval_of(x).shape)
    block = config.block_size
    if not (shape[-1] >= block and shape[-1] % block == 0):
        raise AssertionError(f"the contracting size {shape[-1]} is not a multiple of the "
                             f"block size {block}")
    x = reshape(x, shape[:-1] + (shape[-1] // block, block))
    top = _largest(config.data_type)

    def block_scales(values: Any) -> Any:
        # The ratio in float32 whatever the input dtype, as JAX computes it.
        amax = jnp_max(jnp_abs(values), axis=-1, keepdims=True)
        return amax.astype(_F32) / top

    if config.mode in ("mxfp8", "mxfp4"):
        scales_q = _e8m0_rounded_up(block_scales(x))
        scaled = x.astype(_F32) / _e8m0_value(scales_q, _F32)
    elif config.mode == "nvfp4":
        scale_top = _largest(config.scale_type, canonical_aval_of(x).dtype)
        x = x / config.global_scale
        scales_q = clip(block_scales(x), 0, scale_top)
        scales_q = optimization_barrier(scales_q.astype(config.scale_type))
        scaled = x / scales_q.astype(_F32)
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    x_q = reshape(clip(scaled, -top, top).astype(config.data_type),
                  shape)
    scales_shape = tuple(canonical_aval_of(scales_q).shape[:-1])
    scales_q = bitcast_convert_type(reshape(scales_q, scales_shape), config.scale_type)
    # A barrier keeps XLA from folding the casts to narrow floats away.
    return optimization_barrier((x_q, scales_q))


def _wrapper(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any, dtype: Any) -> Any:
    """jax's scaled_matmul_wrapper: the jitted primitive, no shape checks."""
    return _scaled_matmul(lhs, rhs, lhs_scales, rhs_scales,
                          preferred_element_type=_user_dtype(dtype, "scaled_matmul_wrapper"))


Dims = tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]


def _scaled_dot(lhs: Any, rhs: Any, dimension_numbers: Dims, preferred_element_type: Any,
                configs: Sequence[BlockScaleConfig]) -> Any:
    dtype = _user_dtype(preferred_element_type, "scaled_dot_impl")
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_3d, rhs_3d = _to_3d(lhs, lc, lb), _to_3d(rhs, rc, rb)
    lhs_q, lhs_s = _quantize(lhs_3d, configs[0])
    rhs_q, rhs_s = _quantize(rhs_3d, configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = _wrapper(lhs_q, rhs_q, lhs_s, rhs_s, _F32 if nvfp4 else dtype)
    if nvfp4:
        out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(dtype)
    shape = _dot_shape(canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape,
                       (lc, lb), (rc, rb))
    return reshape(out, shape)


# ------------------------------------------------------------------ gradient


def _remaining(n: int, *taken: Sequence[int]) -> list[int]:
    return [d for d in range(n) if not any(d in t for t in taken)]


def _transpose_lhs(g: Any, x: Any, y: Any, dimension_numbers: Dims, dtype: Any,
                   configs: Sequence[BlockScaleConfig], swap_ans: bool = False) -> Any:
    """The cotangent of ``x`` in ``scaled_dot(x, y)``: the product of ``g`` and ``y`` over
    ``y``'s kept dimensions, quantized (not under nvfp4), in ``x``'s dimension order."""
    (xc, yc), (xb, yb) = dimension_numbers
    x_ndim, y_ndim = canonical_aval_of(x).ndim, canonical_aval_of(y).ndim
    x_kept, y_kept = _remaining(x_ndim, xc, xb), _remaining(y_ndim, yc, yb)
    nb = len(xb)
    ans_batch = list(range(nb))
    if swap_ans:
        ans_y = list(range(nb, nb + len(y_kept)))
    else:
        ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    x_contract_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = tuple(int(a) for a in np.argsort(list(xb) + x_kept + x_contract_by_y))
    y_3d, g_3d = _to_3d(y, y_kept, yb), _to_3d(g, ans_y, ans_batch)
    if configs[0].mode != "nvfp4":
        g_q, g_s = _quantize(g_3d, configs[0])
        y_q, y_s = _quantize(y_3d, configs[1])
        out = _wrapper(g_q, y_q, g_s, y_s, dtype)
    else:
        out = matmul(g_3d, permute_dims(y_3d, (0, 2, 1)), preferred_element_type=dtype)
    shape = _dot_shape(canonical_aval_of(g).shape, canonical_aval_of(y).shape,
                       (ans_y, ans_batch), (y_kept, yb))
    return transpose(reshape(out, shape), out_axes)


def _scaled_dot_general_fn(lhs: Any, rhs: Any, dimension_numbers: Dims,
                           preferred_element_type: Any,
                           configs: Sequence[BlockScaleConfig]) -> Any:
    return _scaled_dot(lhs, rhs, dimension_numbers, preferred_element_type, configs)


def _scaled_dot_fwd(lhs: Any, rhs: Any, dimension_numbers: Dims, preferred_element_type: Any,
                    configs: Sequence[BlockScaleConfig]) -> tuple[Any, Any]:
    out = _scaled_dot(lhs, rhs, dimension_numbers, preferred_element_type, configs)
    return out, (lhs, rhs)


def _scaled_dot_bwd(dimension_numbers: Dims, preferred_element_type: Any,
                    configs: Sequence[BlockScaleConfig], res: Any, g: Any) -> tuple[Any, Any]:
    lhs, rhs = res
    (xc, yc), (xb, yb) = dimension_numbers
    grad_lhs = _transpose_lhs(g, lhs, rhs, dimension_numbers, preferred_element_type,
                              [configs[2], configs[1]])
    grad_rhs = _transpose_lhs(g, rhs, lhs, ((yc, xc), (yb, xb)), preferred_element_type,
                              [configs[2], configs[0]], swap_ans=True)
    if configs[2].mode == "nvfp4":
        # Straight-through, except where the forward quantization clipped the input.
        dtype = canonical_aval_of(lhs).dtype
        top = _largest(configs[0].data_type, dtype)
        scale_top = _largest(configs[0].scale_type, dtype)
        grad_lhs = where(jnp_abs(lhs) <= configs[0].global_scale * top * scale_top,
                         grad_lhs, 0)
        grad_rhs = where(jnp_abs(rhs) <= configs[1].global_scale * top * scale_top,
                         grad_rhs, 0)
    return grad_lhs, grad_rhs


_scaled_dot_general_fn.__name__ = "scaled_dot_general_fn"
_scaled_dot_fwd.__name__ = "scaled_dot_fwd"
_scaled_dot_bwd.__name__ = "scaled_dot_bwd"
_scaled_dot_vjp = custom_vjp(_scaled_dot_general_fn, nondiff_argnums=(2, 3, 4))
_scaled_dot_vjp.defvjp(_scaled_dot_fwd, _scaled_dot_bwd)


def _as_tuples(dimension_numbers: Any) -> Dims:
    (lc, rc), (lb, rb) = dimension_numbers
    return (tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))


def _cudnn_scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                              preferred_element_type: Any,
                              configs: Sequence[BlockScaleConfig]) -> Any:
    """A batch dimension added at the end of an operand without one (and squeezed from
    the result), then the custom-VJP product."""
    if T.to_dtype(preferred_element_type, "scaled_dot_general") not in (
            np.dtype(np.float32), T.bfloat16, np.dtype(np.float16)):
        raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                        "{preferred_element_type}")  # (JAX's message, unformatted)
    dn = _as_tuples(dimension_numbers)
    (lc, rc), (lb, rb) = dn
    if lb == ():
        lhs, lb = expand_dims(lhs, canonical_aval_of(lhs).ndim), (canonical_aval_of(lhs).ndim,)
    if rb == ():
        rhs, rb = expand_dims(rhs, canonical_aval_of(rhs).ndim), (canonical_aval_of(rhs).ndim,)
    batched: Dims = ((lc, rc), (lb, rb))
    out = _scaled_dot_vjp(lhs, rhs, batched, preferred_element_type, list(configs))
    return squeeze(out, axis=0) if batched != dn else out


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                       preferred_element_type: Any = np.float32,
                       configs: list[BlockScaleConfig] | None = None,
                       implementation: Any = None) -> Any:
    """``dot_general`` of ``lhs`` and ``rhs`` quantized in blocks by ``configs`` (lhs, rhs,
    gradient); without configs, plain ``lax.dot_general``."""
    if implementation is not None:
        warnings.warn("Backend selector, now ignored. The system chooses the backend "
                      "automatically.", DeprecationWarning, stacklevel=2)
    if configs is None:
        return dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
    return _cudnn_scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type,
                                     configs)


__all__ = ["get_scaled_dot_general_config", "scaled_dot_general", "scaled_matmul"]
