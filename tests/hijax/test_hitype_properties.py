"""Programs on a user-defined (hi) type equal the same programs written on
the low-level arrays the type lowers to: a per-row int8 quantized array
(the running example of JAX's page on hijax types), built and consumed by
hijax primitives, under jit, vmap (with a mapping spec, against a loop),
grad (its tangent type is a dense float array, its rules
straight-through), a jitted scan (quantized carries and stacked outputs)
and shard_map (a partition spec of the type's design: quantizing row blocks
is quantizing the rows), on random float32 matrices drawn by hypothesis;
and a pair type whose tangent type is a pair again, whose gradients under
grad and jit are the component arrays' gradients (summed with its
vspace_add, zero by its vspace_zero)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
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
from tests.hijax.pair_type import Front, Leaves, PairTy, get, make_pair


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

    # The tangent (a dense float array) is split along the rows too.
    def to_tangent_spec(self) -> Any:
        return self.rows

    def to_ct_spec(self) -> Any:
        return self.rows


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


def _leading_axis_spec(self: QTy) -> Any:
    return Leading()


QTy.leading_axis_spec = _leading_axis_spec  # type: ignore[method-assign]


@settings(max_examples=10, deadline=None)
@given(stacks)
def test_jitted_scan_over_hi_values_is_the_scan_over_their_components(xs: np.ndarray) -> None:
    # Quantized rows as the carry and as the stacked outputs of a jitted
    # scan; the same loop written on the int8 values and scales.
    qxs = spec.vmap(quantize, out_axes=Leading())(xs)

    def step(q: Any, x: Any) -> Any:
        return quantize(dequantize(q) + x), dequantize(q)

    q0 = quantize(xs[0])
    last, seen = spec.jit(lambda q0, xs: spec.lax.scan(step, q0, xs))(q0, xs)
    want_q, want_scale = lo_quantize(xs[0])
    for i in range(xs.shape[0]):
        np.testing.assert_array_equal(np.asarray(seen)[i],
                                      want_q.astype(np.float32) * want_scale[..., None])
        want_q, want_scale = lo_quantize(want_q.astype(np.float32) * want_scale[..., None]
                                         + xs[i])
    np.testing.assert_array_equal(np.asarray(last.qvalue), want_q)
    np.testing.assert_array_equal(np.asarray(last.scale), want_scale)
    total = spec.jit(lambda qxs: spec.lax.scan(
        lambda t, q: (t + snp.sum(dequantize(q)), None), np.float32(0), qxs,
        length=xs.shape[0]))(qxs)[0]
    rows = [lo_quantize(xs[i]) for i in range(xs.shape[0])]
    want_total = np.float32(0)
    for q, s in rows:
        want_total = want_total + np.sum(q.astype(np.float32) * s[..., None], dtype=np.float32)
    np.testing.assert_allclose(np.asarray(total), want_total, rtol=1e-5)


vectors = hnp.arrays(np.float32, st.integers(1, 5), elements=_values)


@settings(max_examples=10, deadline=None)
@given(vectors, st.data())
def test_gradient_of_a_hi_tangent_type_is_the_gradient_of_its_components(
        a: np.ndarray, data: st.DataObject) -> None:
    # A pair read twice (its cotangents summed by vspace_add) and a pair
    # not read at all (its gradient vspace_zero): the gradients with respect
    # to the components of the same functions on the arrays.
    b = data.draw(hnp.arrays(np.float32, a.shape, elements=_values))

    def on_pair(p: Any, q: Any) -> Any:
        return snp.sum(snp.sin(get(p, 0)) * get(p, 1) + get(p, 0) ** 2)

    def on_arrays(a: Any, b: Any) -> Any:
        return snp.sum(snp.sin(a) * b + a ** 2)

    for grad in (spec.grad, lambda f, **kw: spec.jit(spec.grad(f, **kw))):
        gp, gq = grad(on_pair, argnums=(0, 1))(make_pair(a, b), make_pair(b, a))
        ga, gb = spec.grad(on_arrays, argnums=(0, 1))(a, b)
        assert spec.typeof(gp) == PairTy(spec.typeof(ga), spec.typeof(gb))
        np.testing.assert_array_equal(np.asarray(gp.a), np.asarray(ga))
        np.testing.assert_array_equal(np.asarray(gp.b), np.asarray(gb))
        np.testing.assert_array_equal(np.asarray(gq.a), np.zeros_like(a))
        np.testing.assert_array_equal(np.asarray(gq.b), np.zeros_like(b))


def _dense(q: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return q[0].astype(np.float32) * q[1][..., None]


@settings(max_examples=6, deadline=None)
@given(matrices, st.booleans())
def test_jitted_cond_with_hi_results_is_the_cond_on_the_components(
        x: np.ndarray, p: bool) -> None:
    # (JAX 0.12 fails typing a cond with hi results under jit.)
    r = spec.jit(lambda p, x: spec.lax.cond(p, lambda x: quantize(x * 3), quantize, x))(p, x)
    want_q, want_scale = lo_quantize(x * np.float32(3) if p else x)
    np.testing.assert_array_equal(np.asarray(r.qvalue), want_q)
    np.testing.assert_array_equal(np.asarray(r.scale), want_scale)
    k = int(p) + 1
    r = spec.jit(lambda k, x: spec.lax.switch(
        k, [quantize, lambda x: quantize(-x), lambda x: quantize(x * 3)], x))(k, x)
    want_q, want_scale = lo_quantize([x, -x, x * np.float32(3)][k])
    np.testing.assert_array_equal(np.asarray(r.qvalue), want_q)
    # Straight-through rules: the gradient is the chosen branch's factor.
    loss = lambda x, p: snp.sum(dequantize(spec.lax.cond(  # noqa: E731
        p, lambda x: quantize(x * 3), quantize, x)))
    for g in (spec.grad(spec.jit(loss)), spec.jit(spec.grad(loss))):
        np.testing.assert_array_equal(np.asarray(g(x, p)), np.full(x.shape, 3 if p else 1,
                                                                   np.float32))


@settings(max_examples=6, deadline=None)
@given(stacks)
def test_cond_on_a_hi_carry_inside_a_jitted_scan_is_the_loop(xs: np.ndarray) -> None:
    def step(q: Any, x: Any) -> Any:
        return spec.lax.cond(snp.sum(x) > 0, lambda q: quantize(dequantize(q) + x),
                             lambda q: q, q), None

    last, _ = spec.jit(lambda q0, xs: spec.lax.scan(step, q0, xs))(quantize(xs[0]), xs)
    want = lo_quantize(xs[0])
    for x in xs:
        if np.sum(x) > 0:
            want = lo_quantize(_dense(want) + x)
    np.testing.assert_array_equal(np.asarray(last.qvalue), want[0])
    np.testing.assert_array_equal(np.asarray(last.scale), want[1])


@settings(max_examples=6, deadline=None)
@given(stacks, st.data())
def test_vmap_of_while_and_cond_on_hi_values_is_a_loop(xs: np.ndarray,
                                                       data: st.DataObject) -> None:
    # (JAX 0.12 fails batching either with a mapping spec.)
    n = xs.shape[0]
    qxs = spec.vmap(quantize, out_axes=Leading())(xs)
    preds = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))

    def thrice(q: Any) -> Any:
        return spec.lax.while_loop(lambda c: c[0] < 3, lambda c: (
            c[0] + 1, quantize(dequantize(c[1]) + 1)), (0, q))[1]

    def doubled(p: Any, q: Any) -> Any:
        return spec.lax.cond(p, lambda q: quantize(dequantize(q) * 2), lambda q: q, q)

    def read(p: Any, q: Any) -> Any:
        return spec.lax.cond(p, lambda q: dequantize(q) * 2, dequantize, q)

    got = [spec.vmap(thrice, in_axes=Leading(), out_axes=Leading(), axis_size=n)(qxs),
           spec.jit(spec.vmap(lambda q: doubled(True, q), in_axes=Leading(),
                              out_axes=Leading(), axis_size=n))(qxs)]
    for i in range(n):
        want = lo_quantize(xs[i])
        for _ in range(3):
            want = lo_quantize(_dense(want) + 1)
        np.testing.assert_array_equal(np.asarray(got[0].qvalue)[i], want[0])
        np.testing.assert_array_equal(np.asarray(got[0].scale)[i], want[1])
        np.testing.assert_array_equal(np.asarray(got[1].qvalue)[i],
                                      lo_quantize(_dense(lo_quantize(xs[i])) * 2)[0])
    per_example = spec.vmap(read, in_axes=(0, Leading()))(preds, qxs)
    loop = np.stack([np.asarray(read(preds[i], quantize(xs[i]))) for i in range(n)])
    np.testing.assert_array_equal(np.asarray(per_example), loop)


@settings(max_examples=6, deadline=None)
@given(even_rows)
def test_grad_through_shard_map_of_hi_values_is_the_straight_through_gradient(
        x: np.ndarray) -> None:
    # (JAX 0.12 fails these, its tangents' varying axes disagreeing.)
    with two_devices():
        mesh = spec.make_mesh((2,), ("i",), axis_types=(spec.sharding.AxisType.Auto,))
        rows = RowSplit(spec.P("i"))
        quantize_blocks = spec.shard_map(quantize, mesh=mesh, in_specs=spec.P("i"),
                                         out_specs=rows)
        dequantize_blocks = spec.shard_map(dequantize, mesh=mesh, in_specs=rows,
                                           out_specs=spec.P("i"))
        want = 2 * _dense(lo_quantize(x))
        on_x = spec.grad(lambda x: snp.sum(dequantize(quantize_blocks(x)) ** 2))
        on_q = spec.grad(lambda q: snp.sum(dequantize_blocks(q) ** 2))
        for g, arg in ((on_x, x), (spec.jit(on_x), x), (on_q, quantize(x)),
                       (spec.jit(on_q), quantize(x))):
            np.testing.assert_allclose(np.asarray(g(arg)), want, rtol=1e-6)


@settings(max_examples=6, deadline=None)
@given(stacks, st.data())
def test_vmap_of_a_scan_with_hi_carries_is_a_loop(xs: np.ndarray, data: st.DataObject) -> None:
    # A batched quantized carry keeps its mapping spec; the scanned arrays
    # are batched as usual, a closed-over stack of quantized rows is not.
    # (JAX 0.12 fails batching a scan with hi values.)
    n = xs.shape[0]
    steps = data.draw(hnp.arrays(np.float32, (3, n, *xs.shape[1:]), elements=_values))
    qxs = spec.vmap(quantize, out_axes=Leading())(xs)

    def run(q0: Any, ts: Any) -> Any:
        return spec.lax.scan(lambda c, t: (quantize(dequantize(c) + t), snp.sum(t)), q0, ts)

    last, sums = spec.jit(spec.vmap(run, in_axes=(Leading(), 1), out_axes=(Leading(), 0)))(
        qxs, steps)
    read = spec.vmap(lambda q: spec.lax.scan(
        lambda c, r: (c + snp.sum(dequantize(q) * dequantize(r)), None), np.float32(0), qxs,
        length=n)[0], in_axes=Leading(), axis_size=n)(qxs)
    for i in range(n):
        want = lo_quantize(xs[i])
        for t in steps[:, i]:
            want = lo_quantize(_dense(want) + t)
        np.testing.assert_array_equal(np.asarray(last.qvalue)[i], want[0])
        np.testing.assert_array_equal(np.asarray(last.scale)[i], want[1])
        np.testing.assert_allclose(np.asarray(sums)[i], np.sum(steps[:, i], axis=(1, 2)),
                                   rtol=1e-6)
        loop = spec.lax.scan(lambda c, r: (c + snp.sum(dequantize(quantize(xs[i]))
                                                       * dequantize(r)), None),
                             np.float32(0), qxs, length=n)[0]
        np.testing.assert_allclose(np.asarray(read)[i], np.asarray(loop), rtol=1e-6)


def _same_quantized(got: Any, i: int, want: Any) -> None:
    np.testing.assert_array_equal(np.asarray(got.qvalue)[i], np.asarray(want.qvalue))
    np.testing.assert_array_equal(np.asarray(got.scale)[i], np.asarray(want.scale))


def test_vmap_broadcasts_and_selects_hi_values_by_their_spec() -> None:
    # An unbatched quantized carry that the loop makes batched is broadcast
    # along the spec the body gives it (scan and while_loop); a cond with a
    # batched predicate selects per example between quantized results (a
    # branch's unbatched one broadcast first): the loop over the batch,
    # eagerly and jitted, and straight-through gradients. (JAX 0.12 fails
    # on all of these with internal errors.)
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3) + 1
    steps = np.linspace(-1, 1, 48, dtype=np.float32).reshape(4, 2, 2, 3)
    ps = np.array([True, False, True, False])
    q0, qc = quantize(xs[0]), quantize(xs[1] - 5)
    qxs = spec.vmap(quantize, out_axes=Leading())(xs)

    def scanned(q: Any, s: Any) -> Any:
        return spec.lax.scan(lambda c, r: (quantize(dequantize(c) + r), None), q, s)[0]

    def looped(q: Any, s: Any) -> Any:
        return spec.lax.while_loop(lambda c: c[0] < 2, lambda c: (
            c[0] + 1, quantize(dequantize(c[1]) + snp.asarray(s)[c[0]])), (0, q))[1]

    def chosen(p: Any, q: Any) -> Any:
        return spec.lax.cond(p, lambda q: quantize(dequantize(q) * 2), lambda q: qc, q)

    cases = [(scanned, (None, 0), (q0, steps), lambda i: (q0, steps[i])),
             (looped, (None, 0), (q0, steps), lambda i: (q0, steps[i])),
             (chosen, (0, Leading()), (ps, qxs), lambda i: (ps[i], quantize(xs[i])))]
    for f, in_axes, args, example_i in cases:
        batched = spec.vmap(f, in_axes=in_axes, out_axes=Leading(), axis_size=4)
        for run in (batched, spec.jit(batched)):
            out = run(*args)
            for i in range(4):
                _same_quantized(out, i, f(*example_i(i)))
    g = spec.jit(spec.grad(lambda x: snp.sum(dequantize(spec.vmap(
        lambda p, x: chosen(p, quantize(x)), out_axes=Leading())(ps, x)) * 3)))(xs)
    np.testing.assert_array_equal(np.asarray(g), 6 * ps[:, None, None] * np.ones_like(xs))
    g = spec.grad(lambda x: snp.sum(dequantize(spec.vmap(
        lambda s: scanned(quantize(x), s), out_axes=Leading())(steps))))(xs[0])
    np.testing.assert_array_equal(np.asarray(g), np.full_like(xs[0], 4))


def test_vmap_of_a_while_loop_with_a_batched_predicate_keeps_finished_hi_carries() -> None:
    # Each example runs its own number of steps: a batched quantized carry,
    # an unbatched one that the body changes (batched along the type's
    # leading axis spec) and one the body passes through (left unbatched,
    # as JAX leaves it): the loop over the batch, eagerly and jitted.
    # (JAX 0.12 fails batching the first two.)
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3) + 1
    qxs = spec.vmap(quantize, out_axes=Leading())(xs)
    q0 = quantize(xs[0] - 9)

    def steps(q: Any, n: Any) -> Any:
        def body(c: Any) -> Any:
            k, mine, shared, kept = c
            return (k + 1, quantize(dequantize(mine) * 2 - k),
                    quantize(dequantize(shared) + k), kept)
        return spec.lax.while_loop(lambda c: c[0] < n, body, (0, q, q0, q0))

    batched = spec.vmap(steps, in_axes=(Leading(), 0),
                        out_axes=(0, Leading(), Leading(), None))
    ns = np.array([2, 0, 3, 1])
    for run in (batched, spec.jit(batched)):
        k, mine, shared, kept = run(qxs, ns)
        np.testing.assert_array_equal(np.asarray(k), ns)
        assert spec.typeof(kept) == spec.typeof(q0)
        for i in range(4):
            want = steps(quantize(xs[i]), ns[i])
            _same_quantized(mine, i, want[1])
            _same_quantized(shared, i, want[2])


def test_vmap_refuses_hi_values_it_cannot_select() -> None:
    # A cond whose branches give a hi result batched by no spec has none to
    # select along, nor a while_loop whose hi carry's type has no leading
    # axis spec: NotImplementedError naming the type.
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3) + 1
    q0, q1 = quantize(xs[0]), quantize(xs[1])
    # (branches returning the same value give it unchanged; asked for
    # batched, it is broadcast along the spec)
    same = spec.vmap(lambda p: spec.lax.cond(p, lambda: q0, lambda: q0), out_axes=Leading())(
        np.array([True, False]))
    for i in range(2):
        _same_quantized(same, i, q0)
    pair = make_pair(xs[0, 0], xs[0, 1])
    programs = {
        "while_loop with a batched predicate selects per example between values of type "
        r"Pair{f32[3],f32[3]}, which nothing batches": lambda: spec.vmap(
            lambda n: spec.lax.while_loop(lambda c: c[0] < n, lambda c: (
                c[0] + 1, make_pair(get(c[1], 1), get(c[1], 0))), (0, pair)))(np.arange(4)),
        "values of type q8[2,3] that its branches give batched along no mapping spec":
            lambda: spec.vmap(lambda p: spec.lax.cond(p, lambda: q0, lambda: q1))(
                np.array([True, False])),
    }
    for what, run in programs.items():
        with pytest.raises(NotImplementedError, match=what.replace("[", r"\[")):
            run()


def test_vmap_of_shard_map_keeps_unbatched_hi_values_whole() -> None:
    # An unbatched quantized operand and result keep their partition spec;
    # the batched arrays map as usual: the loop over the batch. (JAX 0.12
    # fails reading the HiPspec as a PartitionSpec.)
    with two_devices():
        mesh = spec.make_mesh((2,), ("i",), axis_types=(spec.sharding.AxisType.Auto,))
        rows = RowSplit(spec.P("i"))
        x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
        ys = np.arange(24, dtype=np.float32).reshape(2, 4, 3) / 7
        scaled = spec.shard_map(lambda q, y: (dequantize(q) * y, q), mesh=mesh,
                                in_specs=(rows, spec.P("i")), out_specs=(spec.P("i"), rows))
        out, q = spec.jit(spec.vmap(scaled, in_axes=(None, 0), out_axes=(0, None)))(
            quantize(x), ys)
        np.testing.assert_array_equal(np.asarray(q.qvalue), lo_quantize(x)[0])
        for i in range(ys.shape[0]):
            np.testing.assert_array_equal(np.asarray(out)[i], _dense(lo_quantize(x)) * ys[i])


def _scan_rows(q: Any, w: Any) -> Any:
    """A scan over quantized rows: a running sum, quantized rows stacked
    (a stacked hi result) and the dense rows stacked."""
    def step(total: Any, r: Any) -> Any:
        dense = dequantize(r)
        return total + snp.sum(dense * w), (quantize(dense * 2), dense)
    return spec.lax.scan(step, np.float32(0), q, length=spec.typeof(q).shape[0])


@settings(max_examples=3, deadline=None)
@given(stacks, st.data())
# (batch size equal to the scan length: the reordering is still a transpose)
@example(np.arange(1, 19, dtype=np.float32).reshape(3, 3, 2), None)
def test_vmap_of_a_scan_over_batched_hi_values_is_a_loop(xs: np.ndarray,
                                                         data: st.DataObject | None) -> None:
    # The batched quantized stack is scanned along its rows, the stacked
    # quantized results come out batched along the mapping spec: the same
    # as the loop over the batch, and as the program on the components.
    # (JAX 0.12 fails batching a scan over hi values.)
    n, length, width = xs.shape
    w = np.linspace(-1, 1, width, dtype=np.float32)
    qxs = spec.vmap(quantize, out_axes=Leading())(xs)
    batched = spec.vmap(lambda q: _scan_rows(q, w), in_axes=Leading(),
                        out_axes=(0, (Leading(), 0)), axis_size=n)
    for run in (batched, spec.jit(batched)):
        totals, (qys, dense) = run(qxs)
        assert spec.typeof(qys) == QTy(xs.shape)
        for i in range(n):
            total, (qy, d) = _scan_rows(quantize(xs[i]), w)
            np.testing.assert_array_equal(np.asarray(qys.qvalue)[i], np.asarray(qy.qvalue))
            np.testing.assert_array_equal(np.asarray(qys.scale)[i], np.asarray(qy.scale))
            np.testing.assert_array_equal(np.asarray(dense)[i], np.asarray(d))
            np.testing.assert_allclose(np.asarray(totals)[i], np.asarray(total), rtol=1e-6)
            rows = _dense(lo_quantize(xs[i]))
            np.testing.assert_array_equal(np.asarray(d), rows)
            want_q, want_s = lo_quantize(rows * 2)
            np.testing.assert_array_equal(np.asarray(qy.qvalue), want_q)
            np.testing.assert_array_equal(np.asarray(qy.scale), want_s)


@settings(max_examples=3, deadline=None)
@given(stacks)
def test_grad_through_vmap_of_a_scan_over_hi_values_is_straight_through(
        xs: np.ndarray) -> None:
    # Per example, quantized rows scanned over: with the straight-through
    # rules the gradient is the weights on every row, as for the program on
    # the arrays (the tangent of the reordered stack is the float array
    # transposed).
    w = np.linspace(-1, 1, xs.shape[2], dtype=np.float32)

    def loss(x: Any) -> Any:
        return snp.sum(spec.vmap(lambda x: _scan_rows(quantize(x), w)[0])(x))

    want = np.broadcast_to(w, xs.shape)
    for grad in (spec.grad(loss), spec.jit(spec.grad(loss))):
        np.testing.assert_allclose(np.asarray(grad(xs)), want, rtol=1e-6)


def test_vmap_of_shard_map_maps_batched_hi_values_by_their_spec() -> None:
    # A batched quantized operand and result of a shard_map: the batch axis
    # is added, unsplit, to each component; the loop over the batch, eagerly
    # and jitted, and the gradient of the straight-through program.
    with two_devices():
        mesh = spec.make_mesh((2,), ("i",), axis_types=(spec.sharding.AxisType.Auto,))
        rows = RowSplit(spec.P("i"))
        xs = np.arange(36, dtype=np.float32).reshape(3, 4, 3) - 5
        f = spec.shard_map(lambda q: (dequantize(q) * 2, quantize(dequantize(q) + 1)),
                           mesh=mesh, in_specs=rows, out_specs=(spec.P("i"), rows))
        batched = spec.vmap(f, in_axes=Leading(), out_axes=(0, Leading()), axis_size=3)
        qxs = spec.vmap(quantize, out_axes=Leading())(xs)
        for run in (batched, spec.jit(batched)):
            out, q = run(qxs)
            for i in range(3):
                want_out, want_q = f(quantize(xs[i]))
                np.testing.assert_array_equal(np.asarray(out)[i], np.asarray(want_out))
                np.testing.assert_array_equal(np.asarray(q.qvalue)[i], np.asarray(want_q.qvalue))
                np.testing.assert_array_equal(np.asarray(q.scale)[i], np.asarray(want_q.scale))
                np.testing.assert_array_equal(np.asarray(want_out),
                                              2 * _dense(lo_quantize(xs[i])))
        g = spec.jit(spec.grad(lambda x: snp.sum(batched(spec.vmap(
            quantize, out_axes=Leading())(x))[0] ** 2)))(xs)
        np.testing.assert_allclose(np.asarray(g), 8 * np.stack(
            [_dense(lo_quantize(x)) for x in xs]), rtol=1e-6)


def test_vmap_of_shard_map_maps_batched_values_of_a_type_with_hi_components() -> None:
    # A pair of a quantized array and its row weights, batched: the batch
    # axis is added, unsplit, to every array the pair lowers to, those of
    # its quantized component included; the loop over the batch, eagerly
    # and jitted, and the program on the arrays.
    with two_devices():
        mesh = spec.make_mesh((2,), ("i",), axis_types=(spec.sharding.AxisType.Auto,))
        rows = Leaves((spec.P("i"), spec.P("i"), spec.P("i")))
        xs = np.arange(36, dtype=np.float32).reshape(3, 4, 3) - 5
        ws = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
        f = spec.shard_map(lambda p: dequantize(get(p, 0)) * get(p, 1)[:, None], mesh=mesh,
                           in_specs=rows, out_specs=spec.P("i"))
        pairs = spec.vmap(lambda q, w: make_pair(q, w), in_axes=(Leading(), 0),
                          out_axes=Front())(spec.vmap(quantize, out_axes=Leading())(xs), ws)
        assert spec.typeof(pairs) == PairTy(QTy((3, 4, 3)), spec.typeof(ws))
        batched = spec.vmap(f, in_axes=Front(), axis_size=3)
        for run in (batched, spec.jit(batched)):
            out = run(pairs)
            for i in range(3):
                want = f(make_pair(quantize(xs[i]), ws[i]))
                np.testing.assert_array_equal(np.asarray(out)[i], np.asarray(want))
                np.testing.assert_array_equal(np.asarray(want),
                                              _dense(lo_quantize(xs[i])) * ws[i][:, None])


class Scaled(VJPHiPrimitive):
    """dequantize(q) * x, recording the batch dims its rule sees."""
    calls: list[Any] = []

    def __init__(self, q_aval: Any, x_aval: Any) -> None:
        self.in_avals = (q_aval, x_aval)
        self.out_aval = x_aval
        self.params = {}
        super().__init__()

    def expand(self, q: Any, x: Any) -> Any:
        return dequantize(q) * x

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        Scaled.calls.append(tuple(dims))
        (q, x), (dq, dx) = args, dims
        assert dq is None
        return Scaled(spec.typeof(q), spec.typeof(snp.moveaxis(x, dx, 0)))(
            q, snp.moveaxis(x, dx, 0)), 0


def test_a_concrete_hi_value_next_to_batched_values_is_unbatched_as_under_jit() -> None:
    # Eagerly, as under jit (where it is an argument), a concrete quantized
    # value next to batched arrays reaches the primitive's batching rule as
    # an unbatched operand; the values are the loop's (JAX 0.12 does the
    # same).
    xs = np.arange(24, dtype=np.float32).reshape(4, 2, 3) + 1
    q = quantize(xs[0] - 7)

    def scaled(q: Any, x: Any) -> Any:
        return Scaled(spec.typeof(q), spec.typeof(x))(q, x)

    loop = np.stack([np.asarray(scaled(q, x)) for x in xs])
    for run in (lambda: spec.vmap(lambda x: scaled(q, x))(xs),
                lambda: spec.jit(lambda q, xs: spec.vmap(lambda x: scaled(q, x))(xs))(q, xs)):
        Scaled.calls.clear()
        np.testing.assert_array_equal(np.asarray(run()), loop)
        assert Scaled.calls == [(None, 0)]
