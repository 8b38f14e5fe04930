"""``scaled_dot``: ``(lhs * lhs_scale) @ (rhs * rhs_scale)``, the block-scaled
matrix product of narrow floats (MX formats: float8 values, float8_e8m0fnu
scales).

Each scale covers a block of its operand's contracting dimensions (the
operand's size there an integer multiple, at least 2, of the scale's) and
matches it elsewhere. The product is XLA's composite ``xla.scaled_dot``: each
scale repeated over its blocks, operand and scale cast to bfloat16 and
multiplied, then ``dot_general`` with ``preferred_element_type`` (bfloat16 by
default).

Constraint numbering (cited in errors, SPEC.md; TypeError with JAX's messages):

- C1 the four operands have one rank.
- C2 as many batch dimensions, and as many contracting dimensions, on both sides.
- C3 every batch dimension has one size in all operands.
- C4 contracting dimensions match in size.
- C5 a scale's contracting dimension divides its operand's, by a ratio of at
  least 2; its other dimensions equal the operand's.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import (
    canonical_aval_of,
    eval_jaxpr_values,
    from_primitive,
    not_applicable,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import spmd as S
from spec._src.interpreters.batching import AxisData, BatchDim, bdim_at_front
from spec._src.lax.custom import composite
from spec._src.lax.dot import dot_general
from spec._src.lax.elementwise import mul
from spec._src.lax.shaping import (
    broadcast_in_dim,
    convert_element_type,
    expand_dims,
    full,
    reshape,
)
from spec._src.lowering.transcendental import lower_fun

_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
Dims = tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]]]


# ------------------------------------------------------------------ typing

def _check_scale(side: str, x: ArrayType, scale: ArrayType, contracting: Sequence[int]) -> None:
    for i, size in enumerate(x.shape):
        if i in contracting:
            require(size % scale.shape[i] == 0, "scaled_dot", "C5",
                    f"{side} contracting dim {i} of size {size} must be divisible by its "
                    f"scale's dim size {scale.shape[i]}.")
            ratio = size // scale.shape[i]
            require(ratio >= 2, "scaled_dot", "C5",
                    f"The ratio of {side} contracting dim {i} to its scale's dim size "
                    f"({ratio}) must be at least 2.")
        else:
            require(scale.shape[i] == size, "scaled_dot", "C5",
                    f"{side} dim {i} of size {size} does not match scale dim size "
                    f"{scale.shape[i]}.")


def _scaled_dot_type(lhs: ArrayType, rhs: ArrayType, lhs_scale: ArrayType,
                     rhs_scale: ArrayType, *, dimension_numbers: Dims,
                     preferred_element_type: Any) -> list[ArrayType]:
    (lc, rc), (lb, rb) = dimension_numbers
    ranks = (lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim)
    require(min(ranks) == max(ranks), "scaled_dot", "C1",
            f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} rhs rank: "
            f"{rhs.ndim} lhs_scale rank: {lhs_scale.ndim} rhs_scale rank: {rhs_scale.ndim}.")
    require(len(lb) == len(rb), "scaled_dot", "C2",
            "LHS and RHS must have the same number of batch dimensions, got "
            f"{len(lb)} and {len(rb)}.")
    require(len(lc) == len(rc), "scaled_dot", "C2",
            "LHS and RHS must have the same number of contracting dimensions, got "
            f"{len(lc)} and {len(rc)}.")
    for i, j in zip(lb, rb):
        sizes = {lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}
        require(len(sizes) == 1, "scaled_dot", "C3",
                "All input tensors must have the same batch dimension size for batch dims "
                f"({i}, {j}).")
    for i, j in zip(lc, rc):
        require(lhs.shape[i] == rhs.shape[j], "scaled_dot", "C4",
                f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                f"contracting dim {j} of size {rhs.shape[j]}.")
    _check_scale("LHS", lhs, lhs_scale, lc)
    _check_scale("RHS", rhs, rhs_scale, rc)
    lhs_kept = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rhs_kept = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    shape = tuple([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lhs_kept]
                  + [rhs.shape[d] for d in rhs_kept])
    dtype = T.bfloat16 if preferred_element_type is None else np.dtype(preferred_element_type)
    return [ArrayType(shape, dtype)]


# -------------------------------------------------------- the decomposition

def _repeated(scale: Any, shape: Sequence[int], contracting: Sequence[int]) -> Any:
    """The scale repeated over its blocks: one entry per operand element."""
    for i in contracting:
        have = canonical_aval_of(scale).shape
        if have[i] == shape[i]:
            continue
        # JAX's steps: a unit axis after i, broadcast to the block size, merged into i.
        unit = expand_dims(scale, (i + 1,))
        grown = (*have[:i + 1], shape[i] // have[i], *have[i + 1:])
        spread = broadcast_in_dim(unit, grown, tuple(range(len(grown))))
        scale = reshape(spread, (*have[:i], shape[i], *have[i + 1:]))
    return scale


def _product(lhs: Any, rhs: Any, lhs_scale: Any, rhs_scale: Any, *,
             dimension_numbers: Dims, preferred_element_type: Any) -> Any:
    """XLA's decomposition: scaled operands in bfloat16, then dot_general."""
    (lc, rc), _ = dimension_numbers
    scaled = []
    for x, scale, contracting in ((lhs, lhs_scale, lc), (rhs, rhs_scale, rc)):
        spread = _repeated(scale, canonical_aval_of(x).shape, contracting)
        scaled.append(mul(convert_element_type(x, T.bfloat16),
                          convert_element_type(spread, T.bfloat16)))
    return dot_general(scaled[0], scaled[1], dimension_numbers,
                       preferred_element_type=preferred_element_type)


_as_composite = functools.partial(composite, name="xla.scaled_dot")(_product)


def _scaled_dot_impl(*args: np.ndarray, dimension_numbers: Dims,
                     preferred_element_type: Any) -> list[np.ndarray]:
    def flat(*xs: Any) -> list[Any]:
        return [_product(*xs, dimension_numbers=dimension_numbers,
                         preferred_element_type=preferred_element_type)]
    jaxpr, _ = trace_to_jaxpr(flat, [canonical_aval_of(a) for a in args])
    return [np.asarray(o) for o in eval_jaxpr_values(jaxpr, jaxpr.consts, list(args))]


# ----------------------------------------------------------------- batching

def _scaled_dot_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                      dimension_numbers: Dims, preferred_element_type: Any
                      ) -> tuple[list[Any], list[BatchDim]]:
    """JAX's rule: every operand batched at the front, a new leading batch dimension."""
    moved = [bdim_at_front(x, d, axis.size) for x, d in zip(args, dims)]
    (lc, rc), (lb, rb) = dimension_numbers

    def shifted(ds: Sequence[int]) -> tuple[int, ...]:
        return tuple(d + 1 for d in ds)
    dims_out: Dims = ((shifted(lc), shifted(rc)), ((0, *shifted(lb)), (0, *shifted(rb))))
    return [scaled_dot_p.bind(*moved, dimension_numbers=dims_out,
                              preferred_element_type=preferred_element_type)], [0]


scaled_dot_p = declare(
    "scaled_dot", typing=_scaled_dot_type, impl=_scaled_dot_impl,
    jvp=not_applicable("JAX defines no derivative of scaled_dot"),
    transpose=not_applicable("JAX defines no transpose of scaled_dot"),
    batch=_scaled_dot_batch, sharding=lambda *avals, **params: [None],
    per_device=from_primitive(S.gathered), lowering=lower_fun(_as_composite),
    doc="The block-scaled matrix product of narrow floats")


def _dummy_scale(x: Any, contracting: Sequence[int]) -> Any:
    """Unit scales, one per operand row along the contracting dimensions (JAX's)."""
    shape = [1 if d in contracting else s for d, s in enumerate(canonical_aval_of(x).shape)]
    return convert_element_type(full(shape, 1, T.bfloat16), _E8M0)


def scaled_dot(lhs: Any, rhs: Any, *, lhs_scale: Any = None, rhs_scale: Any = None,
               dimension_numbers: Any = None, preferred_element_type: Any = None) -> Any:
    """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` in ``preferred_element_type``
    (bfloat16 by default); default dimension numbers contract the last lhs
    dimension with rhs's second-to-last, batched over the leading ones."""
    if dimension_numbers is None:
        n = canonical_aval_of(lhs).ndim
        if n in (0, 1):
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lc, rc), _ = dimension_numbers
    if lhs_scale is None:
        lhs_scale = _dummy_scale(lhs, lc)
    if rhs_scale is None:
        rhs_scale = _dummy_scale(rhs, rc)
    dtype = T.to_dtype(T.bfloat16 if preferred_element_type is None else preferred_element_type,
                       "scaled_dot")
    return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dimension_numbers,
                             preferred_element_type=dtype)


# ---------------------------------------------------- scaled_matmul_wrapper
#
# jax.nn.scaled_matmul's primitive: ``(B, M, K)`` and ``(B, N, K)`` operands, their
# ``(B, M, K_a)`` and ``(B, N, K_b)`` scales (each scale entry covers a block of K // K_a
# consecutive contracting elements), result ``(B, M, N)`` in ``preferred_element_type``.
# JAX's abstract evaluation checks nothing (jax.nn.scaled_matmul checks the shapes first);
# without a fused kernel (CPU) every operand is cast to the result type, the scales
# multiplied into their blocks, and the product taken by dot_general.


def _scaled_matmul_type(a: ArrayType, b: ArrayType, a_scale: ArrayType, b_scale: ArrayType,
                        *, preferred_element_type: Any) -> list[ArrayType]:
    return [ArrayType((a.shape[0], a.shape[1], b.shape[1]), np.dtype(preferred_element_type))]


def _dequantized(x: Any, scale: Any, dtype: Any) -> Any:
    """``x`` times its block scales, both cast to ``dtype`` first (float8 and float4 have
    no arithmetic on CPU)."""
    x, scale = convert_element_type(x, dtype), convert_element_type(scale, dtype)
    b, m, k = canonical_aval_of(x).shape
    blocks = canonical_aval_of(scale).shape[2]
    scaled = mul(reshape(x, (b, m, blocks, k // blocks)), reshape(scale, (b, m, blocks, 1)))
    return reshape(scaled, (b, m, k))


def _scaled_matmul_product(a: Any, b: Any, a_scale: Any, b_scale: Any, *,
                           preferred_element_type: Any) -> Any:
    dtype = preferred_element_type
    return dot_general(_dequantized(a, a_scale, dtype), _dequantized(b, b_scale, dtype),
                       (((2,), (2,)), ((0,), (0,))), preferred_element_type=dtype)


def _scaled_matmul_impl(*args: np.ndarray, preferred_element_type: Any) -> list[np.ndarray]:
    def flat(*xs: Any) -> list[Any]:
        return [_scaled_matmul_product(*xs, preferred_element_type=preferred_element_type)]
    jaxpr, _ = trace_to_jaxpr(flat, [canonical_aval_of(a) for a in args])
    return [np.asarray(o) for o in eval_jaxpr_values(jaxpr, jaxpr.consts, list(args))]


def _scaled_matmul_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                         preferred_element_type: Any) -> tuple[list[Any], list[BatchDim]]:
    """JAX's rule: the operands batched alike (else all at the front), the leading
    dimensions merged into one batch of the 3-d primitive, the result split back."""
    if dims[0] is not None and all(d == dims[0] for d in dims):
        out_dim: BatchDim = dims[0]
    else:
        args = [bdim_at_front(x, d, axis.size) for x, d in zip(args, dims)]
        out_dim = 0
    lhs, rhs, lhs_scale, rhs_scale = args
    *batch, m, k = canonical_aval_of(lhs).shape
    n = canonical_aval_of(rhs).shape[-2]
    ks = canonical_aval_of(lhs_scale).shape[-1]
    merged = int(np.prod(batch))
    # (reshaped in JAX's order: lhs, its scales, rhs, its scales)
    lhs, lhs_scale = reshape(lhs, (merged, m, k)), reshape(lhs_scale, (merged, m, ks))
    rhs, rhs_scale = reshape(rhs, (merged, n, k)), reshape(rhs_scale, (merged, n, ks))
    out = scaled_matmul_wrapper_p.bind(lhs, rhs, lhs_scale, rhs_scale,
                                       preferred_element_type=preferred_element_type)
    return [reshape(out, (*batch, m, n))], [out_dim]


scaled_matmul_wrapper_p = declare(
    "scaled_matmul_wrapper", typing=_scaled_matmul_type, impl=_scaled_matmul_impl,
    jvp=not_applicable("JAX defines no derivative of scaled_matmul_wrapper"),
    transpose=not_applicable("JAX defines no transpose of scaled_matmul_wrapper"),
    batch=_scaled_matmul_batch, sharding=lambda *avals, **params: [None],
    per_device=from_primitive(S.gathered), lowering=lower_fun(_scaled_matmul_product),
    doc="jax.nn.scaled_matmul: block-scaled batched matrix product")


__all__ = ["scaled_dot", "scaled_dot_p", "scaled_matmul_wrapper_p"]
