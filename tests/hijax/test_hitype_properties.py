"""Programs on a user-defined (hi) type equal the same programs written on
the low-level arrays the type lowers to: a per-row int8 quantized array
(the running example of JAX's page on hijax types), built and consumed by
hijax primitives, under jit, vmap (with a mapping spec, against a loop),
grad (its tangent type is a dense float array, its rules
straight-through) and shard_map (a partition spec of the type's design:
quantizing row blocks is quantizing the rows), on random float32 matrices
drawn by hypothesis."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spec
import spec.numpy as snp
from spec.experimental.hijax import (
    HiPspec,
    HiType,
    MappingSpec,
    ShapedArray,
    VJPHiPrimitive,
    register_hitype,
)


@dataclass(frozen=True)
class Quantized:
    qvalue: Any  # int8[*leading, n]
    scale: Any   # float32[*leading]


@dataclass(frozen=True)
class QTy(HiType):
    shape: tuple[int, ...]

    def lo_ty(self) -> list[Any]:
        return [ShapedArray(self.shape, np.dtype("int8")),
                ShapedArray(self.shape[:-1], np.dtype("float32"))]

    def lower_val(self, q: Any) -> list[Any]:
        return [q.qvalue, q.scale]

    def raise_val(self, qvalue: Any, scale: Any) -> Any:
        return Quantized(qvalue, scale)

    def to_tangent_aval(self) -> Any:
        return ShapedArray(self.shape, np.dtype("float32"))

    def dec_rank(self, size: Any, spec_: Any) -> Any:
        return QTy(self.shape[1:])

    def inc_rank(self, size: Any, spec_: Any) -> Any:
        return QTy((size, *self.shape))

    def shard(self, mesh: Any, manual_axes: Any, check_vma: bool, spec_: Any) -> Any:
        qvalue_ty, _ = self.lo_ty()
        return QTy(qvalue_ty.shard(mesh, manual_axes, check_vma, spec_.to_lo()[0]).shape)

    def unshard(self, mesh: Any, check_vma: bool, spec_: Any) -> Any:
        qvalue_ty, _ = self.lo_ty()
        return QTy(qvalue_ty.unshard(mesh, check_vma, spec_.to_lo()[0]).shape)

    def str_short(self, short_dtypes: bool = False, mesh_axis_types: bool = False) -> str:
        return f"q8[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class Leading(MappingSpec):
    pass


@dataclass(frozen=True)
class RowSplit(HiPspec):
    """The quantized array split along its rows: values and scales alike."""
    rows: spec.P

    def to_lo(self) -> Any:
        return (self.rows, self.rows)


register_hitype(Quantized, lambda q: QTy(tuple(q.qvalue.shape)))


class Quantize(VJPHiPrimitive):
    def __init__(self, x_aval: Any) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = QTy(x_aval.shape)
        self.params = {}
        super().__init__()

    def expand(self, x: Any) -> Any:
        scale = snp.max(snp.abs(x), axis=-1) / 127.0
        return Quantized(snp.round(x / scale[..., None]).astype(snp.int8), scale)

    def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
        return self(x), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return (g,)

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        (x,), (d,) = args, dims
        return quantize(snp.moveaxis(x, d, 0)), Leading()


class Dequantize(VJPHiPrimitive):
    def __init__(self, q_aval: Any) -> None:
        self.in_avals = (q_aval,)
        self.out_aval = ShapedArray(q_aval.shape, np.dtype("float32"))
        self.params = {}
        super().__init__()

    def expand(self, q: Any) -> Any:
        return q.qvalue.astype(snp.float32) * q.scale[..., None]

    def vjp_fwd(self, nzs_in: Any, q: Any) -> Any:
        return self(q), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return (g,)

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        (q,), (d,) = args, dims
        return dequantize(q), (None if d is None else 0)


def quantize(x: Any) -> Any:
    return Quantize(spec.typeof(x))(x)


def dequantize(q: Any) -> Any:
    return Dequantize(spec.typeof(q))(q)


def lo_quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same quantization written on the arrays themselves."""
    scale = snp.max(snp.abs(x), axis=-1) / 127.0
    return (np.asarray(snp.round(x / scale[..., None]).astype(snp.int8)), np.asarray(scale))


_values = st.floats(-100, 100, width=32, allow_subnormal=False).filter(lambda v: abs(v) > 1e-3)
matrices = hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=5),
                      elements=_values)
stacks = hnp.arrays(np.float32, hnp.array_shapes(min_dims=3, max_dims=3, max_side=4),
                    elements=_values)


@settings(max_examples=15, deadline=None)
@given(matrices)
def test_jit_of_hi_program_is_the_program_on_its_components(x: np.ndarray) -> None:
    q = spec.jit(quantize)(x)
    want_q, want_scale = lo_quantize(x)
    np.testing.assert_array_equal(np.asarray(q.qvalue), want_q)
    np.testing.assert_array_equal(np.asarray(q.scale), want_scale)
    roundtrip = spec.jit(lambda x: dequantize(quantize(x)))(x)
    np.testing.assert_array_equal(np.asarray(roundtrip),
                                  want_q.astype(np.float32) * want_scale[..., None])
    np.testing.assert_array_equal(np.asarray(spec.jit(dequantize)(q)), np.asarray(roundtrip))


@settings(max_examples=10, deadline=None)
@given(stacks)
def test_vmap_with_a_mapping_spec_is_a_loop(xs: np.ndarray) -> None:
    q = spec.vmap(quantize, out_axes=Leading())(xs)
    assert spec.typeof(q).str_short() == f"q8[{','.join(map(str, xs.shape))}]"
    for i in range(xs.shape[0]):
        want_q, want_scale = lo_quantize(xs[i])
        np.testing.assert_array_equal(np.asarray(q.qvalue)[i], want_q)
        np.testing.assert_array_equal(np.asarray(q.scale)[i], want_scale)
    back = spec.vmap(spec.jit(dequantize), in_axes=Leading(), axis_size=xs.shape[0])(q)
    loop = np.stack([np.asarray(dequantize(quantize(xs[i]))) for i in range(xs.shape[0])])
    np.testing.assert_array_equal(np.asarray(back), loop)


@settings(max_examples=10, deadline=None)
@given(matrices)
def test_grad_uses_the_tangent_type_and_the_rules(x: np.ndarray) -> None:
    # Straight-through rules: d/dx sum(dequantize(quantize(x))**2) is
    # 2 * dequantize(quantize(x)); with respect to a quantized input, the
    # gradient is a dense float array of the tangent type.
    q = quantize(x)
    dense = np.asarray(dequantize(q))
    gx = spec.grad(lambda x: snp.sum(dequantize(quantize(x)) ** 2))(x)
    np.testing.assert_allclose(np.asarray(gx), 2 * dense, rtol=1e-6)
    gq = spec.jit(spec.grad(lambda q: snp.sum(dequantize(q) ** 2)))(q)
    assert spec.typeof(gq) == ShapedArray(x.shape, np.dtype("float32"))
    np.testing.assert_allclose(np.asarray(gq), 2 * dense, rtol=1e-6)


even_rows = hnp.arrays(np.float32, st.tuples(st.sampled_from([2, 4, 6]), st.integers(1, 5)),
                       elements=_values)


@settings(max_examples=10, deadline=None)
@given(even_rows)
def test_shard_map_with_a_hi_partition_spec_splits_the_components(x: np.ndarray) -> None:
    with two_devices():
        mesh = spec.make_mesh((2,), ("i",), axis_types=(spec.sharding.AxisType.Auto,))
        check_row_blocks(mesh, x)


@contextlib.contextmanager
def two_devices() -> Iterator[None]:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        yield
    finally:
        spec.config.update("jax_num_cpu_devices", before)


def check_row_blocks(mesh: Any, x: np.ndarray) -> None:
    rows = RowSplit(spec.P("i"))
    quantize_blocks = spec.jit(spec.shard_map(quantize, mesh=mesh, in_specs=spec.P("i"),
                                              out_specs=rows))
    q = quantize_blocks(x)
    want_q, want_scale = lo_quantize(x)
    assert spec.typeof(q) == QTy(x.shape)
    np.testing.assert_array_equal(np.asarray(q.qvalue), want_q)
    np.testing.assert_array_equal(np.asarray(q.scale), want_scale)
    dequantize_blocks = spec.shard_map(dequantize, mesh=mesh, in_specs=rows,
                                       out_specs=spec.P("i"))
    want = want_q.astype(np.float32) * want_scale[..., None]
    np.testing.assert_array_equal(np.asarray(spec.jit(dequantize_blocks)(q)), want)
    np.testing.assert_array_equal(np.asarray(dequantize_blocks(q)), want)  # eagerly
