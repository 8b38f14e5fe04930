"""Structural lowering rules (slicing, gather/scatter, sort, windowed and
variadic reductions, lax.reduce with a general computation): spec's StableHLO,
compiled by jaxlib on CPU, computes bit for bit what spec evaluates and what JAX
computes for the same program; and the text of a few is JAX's own lowering up to
SSA names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled

_rng = np.random.default_rng(1)
X = _rng.integers(-4, 5, (3, 4)).astype(np.float32)
X[0, 1], X[1, 2], X[2, 0] = np.nan, -0.0, 0.0
I = _rng.integers(-9, 10, (3, 4)).astype(np.int32)
# Gather/scatter indices, some out of bounds (and negative) for the modes.
IDX = np.array([[0], [2], [5], [-1], [1]], np.int32)
UPD = _rng.integers(-3, 4, (5, 4)).astype(np.float32)
K = np.array([1, 2], np.int32)


def _gathers(lax: Any, x: Any, idx: Any, upd: Any) -> tuple[Any, ...]:
    g = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                   start_index_map=(0,))
    s = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                    scatter_dims_to_operand_dims=(0,))
    modes = [lax.GatherScatterMode.CLIP, lax.GatherScatterMode.FILL_OR_DROP]
    outs = [lax.gather(x, idx, g, (1, 4), mode=m) for m in modes]
    outs.append(lax.gather(x, idx, g, (1, 4), mode="fill", fill_value=-7.0))
    for op in (lax.scatter, lax.scatter_add, lax.scatter_sub, lax.scatter_mul,
               lax.scatter_min, lax.scatter_max):
        outs += [op(x, idx, upd, s, mode=m) for m in modes]
    # A 2-D window with a batching dimension.
    gb = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                    start_index_map=(1,), operand_batching_dims=(0,),
                                    start_indices_batching_dims=(0,))
    outs.append(lax.gather(x, idx[:3] % 3, gb, (1, 2), mode=modes[0]))
    # Scatter with a batching dimension: row b of the operand takes update b.
    sb = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(1,),
                                     scatter_dims_to_operand_dims=(1,),
                                     operand_batching_dims=(0,),
                                     scatter_indices_batching_dims=(0,))
    outs += [lax.scatter_add(x, idx[:3], upd[:3, 0], sb, mode=m) for m in modes]
    return tuple(outs)


def _program(lax: Any, numpy: Any) -> Callable[..., Any]:
    def fn(x: Any, i: Any, idx: Any, upd: Any, k: Any) -> Any:
        pieces = (lax.dynamic_slice(x, (k[0], k[1]), (2, 2)),
                  lax.dynamic_slice(x, (k[1], k[1] + 5), (2, 3)),
                  lax.dynamic_update_slice(x, x[:1, :2] * 2, (k[1], k[0])),
                  *lax.split(x, (1, 3), axis=1), numpy.stack([x, x * 2], axis=1),
                  numpy.tile(i, (2, 1, 3)), *numpy.unstack(i, axis=1),
                  lax.bitcast_convert_type(x, np.int32), lax.reduce_precision(x * 1.3, 3, 2))
        reductions = (lax.reduce_xor_p.bind(i, axes=(0,)),
                      numpy.argmax(x, axis=1), numpy.argmin(x, axis=0),
                      numpy.argmax(i, axis=0), numpy.argmin(i, axis=1),
                      lax.cumsum(x, axis=1), lax.cumprod(i, axis=0, reverse=True),
                      lax.cummax(x, axis=0), lax.cummin(i, axis=1, reverse=True),
                      *lax.reduce((i, i), (np.int32(2 ** 31 - 1), np.int32(0)),
                                  lambda p, q: (lax.min(p[0], q[0]), p[1] + q[1]), (1,)),
                      *numpy.minmax(i, axis=0))
        sorts = (*lax.sort((x, i), dimension=1, num_keys=1),
                 *lax.sort((i, x), dimension=0, num_keys=2),
                 *lax.top_k(i, 2), *lax.top_k(x[:, :3] * 0 + i[:, :3], 1),
                 *lax.sort((lax.complex(x, x[::-1]), i), dimension=1, num_keys=1))
        return pieces, reductions, sorts, _gathers(lax, x, idx, upd)
    return fn


ARGS = [X, I, IDX, UPD, K]


@pytest.fixture(scope="module")
def structural() -> tuple[list[np.ndarray], list[np.ndarray], str]:
    return spec_and_compiled(_program(slax, snp), *ARGS)


def test_structural_ops_bitwise_against_spec(
        structural: tuple[list[np.ndarray], list[np.ndarray], str]) -> None:
    ours, compiled, _ = structural
    assert_bitwise(ours, compiled)


def test_structural_ops_bitwise_against_jax(
        structural: tuple[list[np.ndarray], list[np.ndarray], str]) -> None:
    _, compiled, _ = structural
    theirs = jax.tree_util.tree_leaves(jax.jit(_program(jlax, jnp))(*ARGS))
    assert_bitwise(compiled, [np.asarray(t) for t in theirs])


def test_cumlogsumexp_within_two_ulps() -> None:
    u = _rng.uniform(-3, 3, (3, 5)).astype(np.float32)
    u[1, 2] = -np.inf
    ours, compiled, _ = spec_and_compiled(lambda v: slax.cumlogsumexp(v, axis=1), *[u])
    theirs = np.asarray(jax.jit(lambda v: jlax.cumlogsumexp(v, axis=1))(u))
    np.testing.assert_array_max_ulp(ours[0], compiled[0], 2)
    assert compiled[0].tobytes() == theirs.tobytes()


def _text_program(lax: Any, numpy: Any) -> Callable[..., Any]:
    point = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
                                       start_index_map=(0, 1))
    at = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1),
                                     scatter_dims_to_operand_dims=(0, 1))

    def fn(x: Any, i: Any, k: Any) -> Any:
        square = x[:, :3]
        return (lax.transpose(square, (1, 0)), lax.reshape(square, (3, 3)),
                lax.bitcast_convert_type(square, np.float32), *lax.top_k(square, 2),
                lax.gather(x, k, point, (1, 1), mode="fill"),
                lax.scatter_add(x, k, np.float32(2), at, mode="clip"),
                lax.dynamic_slice(x, (k[0], k[1]), (2, 2)),
                lax.dynamic_update_slice(x, x[:1, :2], (k[1], k[0])),
                *lax.split(x, (1, 3), axis=1), numpy.argmax(x, axis=1),
                lax.cumsum(x, axis=1), lax.cummax(i, axis=0, reverse=True),
                *lax.sort((x, i), dimension=1, num_keys=1), *lax.top_k(x, 2),
                lax.bitcast_convert_type(x, np.int32), lax.reduce_precision(x, 5, 10),
                x.at[k].add(1.0), x[k], x.at[k].get(mode="fill", fill_value=-1.0),
                x.at[k].mul(3.0, mode="clip"), *numpy.minmax(x, axis=1),
                *lax.reduce((i, x), (np.int32(0), np.float32(0)),
                            lambda p, q: (p[0] * q[0], p[1] + q[1]), (0,)))
    return fn


def test_text_matches_jax_lowering() -> None:
    args = [X, I, K]
    theirs = jax.jit(_text_program(jlax, jnp)).lower(*args).as_text()
    ours = lower_jaxpr(spec.make_jaxpr(_text_program(slax, snp))(*args), "f")
    assert canonical(ours) == canonical(theirs)


LHS = _rng.integers(-3, 4, (2, 4, 5, 6)).astype(np.float32)
RHS = _rng.integers(-3, 4, (6, 2, 2, 3)).astype(np.float32)


def _convs(lax: Any) -> Callable[..., Any]:
    def fn(lhs: Any, rhs: Any) -> Any:
        nhwc, hwio = lhs[:, :2].transpose(0, 2, 3, 1), rhs[:4].transpose(2, 3, 1, 0)
        return (lax.conv_general_dilated(lhs, rhs, (1, 2), ((1, 0), (0, 1)), lhs_dilation=(2, 1),
                                         rhs_dilation=(1, 2), feature_group_count=2),
                lax.conv_general_dilated(nhwc, hwio, (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         batch_group_count=2, precision=lax.Precision.HIGHEST))
    return fn


def test_convolutions_bitwise_and_text() -> None:
    """Small integers in float32 (exact sums): spec's evaluation, the
    compiled lowering and JAX agree bit for bit; the text is JAX's."""
    ours, compiled, text = spec_and_compiled(_convs(slax), *[LHS, RHS])
    assert_bitwise(ours, compiled)
    assert_bitwise(compiled, [np.asarray(t) for t in jax.jit(_convs(jlax))(LHS, RHS)])
    assert canonical(text) == canonical(jax.jit(_convs(jlax)).lower(LHS, RHS).as_text())


def _narrow_float_orders(lax: Any, numpy: Any) -> Callable[..., Any]:
    def fn(a: Any) -> Any:
        return (numpy.max(a, 0), numpy.min(a, 1), numpy.argmax(a, 0), numpy.argmin(a, 1),
                numpy.sort(a, 1), lax.cummax(a, 1), a.at[np.array([0, 5])].get(mode="fill"))
    return fn


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_narrow_float_orders_lower_as_jax(dtype: str) -> None:
    """ml_dtypes floats compare as floats (NaNs first in argmax, total
    order in sort), and a max's identity is -inf, or the lowest finite value
    for a type without infinities; a gather fills with NaN."""
    import ml_dtypes
    x = np.array([[1.5, -2.0, np.nan, 0.0], [-0.0, 3.0, -1.0, 2.0]],
                 np.float32).astype(getattr(ml_dtypes, dtype))
    theirs = jax.jit(_narrow_float_orders(jlax, jnp)).lower(x).as_text()
    ours = spec.jit(_narrow_float_orders(slax, snp)).lower(x).as_text()
    assert canonical(ours) == canonical(theirs)
