"""jnp's functional routines (apply_along_axis, apply_over_axes, fromfunction,
piecewise), put/place, roots/polyfit, input/output, the ufunc methods
(jnp.add.reduce, jnp.frompyfunc(...).accumulate, ...) and lax.reduce with its
variadic primitive (and jnp.minmax on it), against JAX run live: values,
dtypes and, where spec stages JAX's equations, the jaxpr text."""

from __future__ import annotations

import io
import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.pair import error_of

_rng = np.random.default_rng(3)
X3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
XS = np.arange(-4, 5, dtype=np.int32)
M6 = (np.arange(6, dtype=np.float32) * 7 % 5 - 2).reshape(2, 3)
MASK = np.array([[True, False, True], [False, True, True]])
XF = np.linspace(-1, 1, 7).astype(np.float32)
YF = (XF ** 3 - 2 * XF + 0.5).astype(np.float32)
I34 = _rng.integers(-9, 10, (3, 4)).astype(np.int32)
F34 = _rng.integers(-4, 5, (3, 4)).astype(np.float32)

Case = tuple[Callable[[Any, Any], Callable[..., Any]], tuple[Any, ...]]


def _affine_sum(lax: Any) -> Callable[..., Any]:
    # Associative but not recognised as a monoid: binds the general reduce.
    return lambda p, q: p + q


def _pair(lax: Any) -> Callable[..., Any]:
    return lambda p, q: (lax.min(p[0], q[0]), p[1] + q[1])


# Name -> (builder(numpy module, jax-like module), arguments). Every row's
# jaxpr is JAX's; ROUNDED rows compare values to a tolerance (LAPACK's
# eigenvalues and least squares are not spec's algorithms).
CASES: dict[str, Case] = {
    "apply_along_axis": (lambda n, j: lambda a: n.apply_along_axis(
        lambda v: (v * v).sum(), 1, a), (X3,)),
    "apply_along_axis_args": (lambda n, j: lambda a: n.apply_along_axis(
        lambda v, k: v[:2] * k, 0, a, 3), (X3,)),
    "apply_over_axes": (lambda n, j: lambda a: n.apply_over_axes(n.sum, a, [0, 2]), (X3,)),
    "fromfunction": (lambda n, j: lambda: n.fromfunction(lambda i, k: i * 10 + k, (2, 3),
                                                         dtype=int), ()),
    "fromfunction_tuple": (lambda n, j: lambda: n.fromfunction(lambda i, k: (i + k, i * k),
                                                               (2, 3)), ()),
    "piecewise": (lambda n, j: lambda a: n.piecewise(a, [a < 0, a > 0],
                                                     [lambda v: -v, lambda v: v * 2]), (XS,)),
    "piecewise_default": (lambda n, j: lambda a: n.piecewise(a, [a < 0],
                                                             [-1, lambda v: v + 1]), (XS,)),
    "place": (lambda n, j: lambda a, m: n.place(a, m, n.array([10., 20.]), inplace=False),
              (M6, MASK)),
    "put_clip": (lambda n, j: lambda a, i: n.put(a, i, 5., mode="clip", inplace=False),
                 (M6, np.array([0, 4, 9], np.int32))),
    "put_wrap": (lambda n, j: lambda a, i, v: n.put(a, i, v, mode="wrap", inplace=False),
                 (M6, np.array([-1, 4, 9], np.int32), np.arange(4, dtype=np.float32))),
    "put_drop": (lambda n, j: lambda a, i, v: n.put(a, i, v, inplace=False),
                 (M6, np.array([0, 4, 9], np.int32), np.array([7., 8.], np.float32))),
    "roll_traced_shift": (lambda n, j: lambda a, s: n.roll(a, s, axis=1),
                          (M6, np.int32(-4))),
    "roots_nan_for_leading_zeros": (lambda n, j: lambda p: n.roots(p, strip_zeros=False),
                                    (np.array([0, 0, 1., -3., 2.], np.float32),)),
    "polyfit_full": (lambda n, j: lambda a, b: n.polyfit(a, b, 2, full=True), (XF, YF)),
    "polyfit_weighted_cov": (lambda n, j: lambda a, b: n.polyfit(a, b, 2, w=a * a + 1,
                                                                 cov=True), (XF, YF)),
    "polyfit_2d_weighted_unscaled_cov": (lambda n, j: lambda a, b: n.polyfit(
        a, n.stack([b, a], 1), 3, w=a + 2, cov="unscaled"), (XF, YF)),
    "reduce_general": (lambda n, j: lambda a: j.lax.reduce(a, np.float32(0), _affine_sum(j.lax),
                                                           (0,)), (F34,)),
    "reduce_variadic": (lambda n, j: lambda i, a: j.lax.reduce(
        (i, a), (np.int32(2 ** 31 - 1), np.float32(0)), _pair(j.lax), (1,)), (I34, F34)),
    "reduce_monoid_max": (lambda n, j: lambda a: j.lax.reduce(a, -np.inf, j.lax.max, (0, 1)),
                          (F34,)),
    "reduce_monoid_or": (lambda n, j: lambda i: j.lax.reduce(i, 0, j.lax.bitwise_or, (1,)),
                         (I34,)),
    "reduce_grad": (lambda n, j: j.grad(lambda a: j.lax.reduce(
        a, np.float32(1), lambda p, q: p * q, (1,)).sum()), (F34 / 4,)),
    "reduce_vmap": (lambda n, j: j.vmap(lambda i, a: j.lax.reduce(
        (i, a), (np.int32(2 ** 31 - 1), np.float32(0)), _pair(j.lax), (0,)), in_axes=(1, 1)),
        (I34, F34)),
    "minmax": (lambda n, j: n.minmax, (F34,)),
    "minmax_axis_keepdims": (lambda n, j: lambda a: n.minmax(a, axis=1, keepdims=True),
                             (I34,)),
    "minmax_initial_where": (lambda n, j: lambda a: n.minmax(a, axis=0, initial=(0., 1.),
                                                             where=a > -1), (F34,)),
    "minmax_grad": (lambda n, j: j.grad(lambda a: n.minmax(a, axis=0)[1].sum()), (F34,)),
    # ufuncs: a method given by JAX (add.reduce is sum), and the loops of the others.
    "ufunc_call": (lambda n, j: lambda a: (n.add(a, a), n.negative(a)), (F34,)),
    "ufunc_reduce_given": (lambda n, j: lambda a, i: (
        n.add.reduce(a, axis=None, keepdims=True), n.maximum.reduce(a, axis=1),
        n.bitwise_xor.reduce(i, axis=1), n.logical_or.reduce(i), n.logaddexp2.reduce(a)),
        (F34, I34)),
    "ufunc_reduce_loop": (lambda n, j: lambda a: n.subtract.reduce(a, axis=0, initial=1.,
                                                                   where=a > -2), (F34,)),
    "ufunc_accumulate": (lambda n, j: lambda a: (n.multiply.accumulate(a, axis=1),
                                                 n.subtract.accumulate(a)), (F34,)),
    "ufunc_at": (lambda n, j: lambda a, i: (n.add.at(a, i, 1., inplace=False),
                                            n.maximum.at(a, (i, i), 2.5, inplace=False)),
                 (F34, np.array([0, 1, 0], np.int32))),
    "ufunc_reduceat_outer": (lambda n, j: lambda a: (
        n.add.reduceat(a, np.array([0, 2]), axis=1), n.multiply.outer(a, a[0])), (F34,)),
    "frompyfunc": (lambda n, j: lambda a: (
        n.frompyfunc(operator.add, nin=2, nout=1, identity=0).reduce(a),
        n.frompyfunc(operator.mul, nin=2, nout=1).accumulate(a, axis=1)), (F34,)),
}
ROUNDED = {"roots_nan_for_leading_zeros", "polyfit_full", "polyfit_weighted_cov",
           "polyfit_2d_weighted_unscaled_cov"}
JAXPR_DIFFERS: set[str] = set()


@pytest.fixture(scope="module")
def jax_values() -> dict[str, list[np.ndarray]]:
    """Every case's JAX values from one compiled program (one compilation
    instead of one per case)."""
    def every_case() -> dict[str, Any]:
        return {name: build(jnp, jax)(*args) for name, (build, args) in CASES.items()}
    outs = jax.jit(every_case)()
    return {name: [np.asarray(v) for v in jax.tree_util.tree_leaves(out)]
            for name, out in outs.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_dtypes_and_jaxpr_as_jax(name: str,
                                        jax_values: dict[str, list[np.ndarray]]) -> None:
    build, args = CASES[name]
    theirs = jax_values[name]
    ours = jax.tree_util.tree_leaves(build(snp, spec)(*args))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        o, t = np.asarray(o), np.asarray(t)
        assert o.dtype == t.dtype and o.shape == t.shape
        if name in ROUNDED:
            np.testing.assert_allclose(o, t, rtol=2e-4, atol=2e-4)
        else:
            np.testing.assert_array_equal(o, t)
    if name not in JAXPR_DIFFERS:
        assert str(spec.make_jaxpr(build(snp, spec))(*args)) == \
            str(jax.make_jaxpr(build(jnp, jax))(*args))


def test_roots_strip_leading_zeros() -> None:
    p = np.array([0, 1., -3., 2.], np.float32)
    ours, theirs = np.asarray(snp.roots(p)), np.asarray(jnp.roots(p))
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.sort_complex(ours), np.sort_complex(theirs), atol=1e-4)
    assert snp.roots(np.array([5.], np.float32)).shape == (0,)
    with pytest.raises(spec.errors.ConcretizationTypeError):
        spec.jit(snp.roots)(np.array([1., 2.], np.float32))


ERRORS: dict[str, Callable[[Any, Any], Callable[[], Any]]] = {
    "put_inplace": lambda n, j: lambda: n.put(n.zeros(3), n.array([0]), 1.),
    "put_raise_mode": lambda n, j: lambda: n.put(n.zeros(3), n.array([0]), 1., mode="raise",
                                                 inplace=False),
    "put_bad_mode": lambda n, j: lambda: n.put(n.zeros(3), n.array([0]), 1., mode="nope",
                                               inplace=False),
    "place_inplace": lambda n, j: lambda: n.place(n.zeros(3), n.ones(3, bool), 1.),
    "place_size": lambda n, j: lambda: n.place(n.zeros(3), n.ones(2, bool), 1.,
                                               inplace=False),
    "place_no_values": lambda n, j: lambda: n.place(n.zeros(3), n.ones(3, bool), n.zeros(0),
                                                    inplace=False),
    "piecewise_lengths": lambda n, j: lambda: n.piecewise(n.arange(3), [n.arange(3) > 0],
                                                          [1, 2, 3]),
    "apply_over_axes_rank": lambda n, j: lambda: n.apply_over_axes(lambda a, k: a.sum(),
                                                                   n.ones((2, 2)), [0]),
    "polyfit_deg": lambda n, j: lambda: n.polyfit(n.ones(3), n.ones(3), -1),
    "polyfit_x_rank": lambda n, j: lambda: n.polyfit(n.ones((3, 1)), n.ones(3), 1),
    "roots_rank": lambda n, j: lambda: n.roots(n.ones((2, 2))),
    "fromfile": lambda n, j: lambda: n.fromfile("x"),
    "fromiter": lambda n, j: lambda: n.fromiter(iter([1])),
    "minmax_where_without_initial": lambda n, j: lambda: n.minmax(n.ones(3),
                                                                  where=n.ones(3, bool)),
    "minmax_empty": lambda n, j: lambda: n.minmax(n.ones((0, 2)), axis=0),
    "reduce_tree_mismatch": lambda n, j: lambda: j.lax.reduce((n.ones(2), n.ones(2)), 0.,
                                                              _affine_sum(j.lax), (0,)),
    "reduce_nonscalar_init": lambda n, j: lambda: j.lax.reduce(n.ones(2), n.zeros(2),
                                                               _affine_sum(j.lax), (0,)),
    "reduce_init_dtype": lambda n, j: lambda: j.lax.reduce(n.ones(2), np.int32(0),
                                                           _affine_sum(j.lax), (0,)),
    "reduce_vmap_init": lambda n, j: lambda: j.vmap(lambda v: j.lax.reduce(
        n.ones(2), v, _affine_sum(j.lax), (0,)))(n.ones(3)),
    "ufunc_at_inplace": lambda n, j: lambda: n.add.at(n.ones(3), 0, 1.),
    "ufunc_unary_reduce": lambda n, j: lambda: n.negative.reduce(n.ones(3)),
    "ufunc_empty_without_identity": lambda n, j: lambda: n.subtract.reduce(n.ones(0)),
    "ufunc_where_without_identity": lambda n, j: lambda: n.maximum.reduce(
        n.ones(3), where=n.ones(3, bool)),
    "ufunc_out": lambda n, j: lambda: n.add(n.ones(2), n.ones(2), out=1),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_jaxs_classes(name: str) -> None:
    assert type(error_of(ERRORS[name](snp, spec))) is type(error_of(ERRORS[name](jnp, jax)))


def test_reduce_vmap_equals_a_loop_and_grad_a_finite_difference() -> None:
    """The general reduce's batching against a Python loop, and its JVP
    (JAX's tree) against central differences."""
    def prod_rows(a: Any) -> Any:
        return spec.lax.reduce(a, np.float32(1), lambda p, q: p * q, (0,))
    a = _rng.uniform(0.5, 1.5, (3, 5, 2)).astype(np.float32)
    batched = np.asarray(spec.vmap(prod_rows, in_axes=2)(a))
    looped = np.stack([np.asarray(prod_rows(a[:, :, k])) for k in range(2)])
    np.testing.assert_array_equal(batched, looped)
    g = np.asarray(spec.grad(lambda v: prod_rows(v).sum())(a))
    e, eps = np.zeros_like(a, np.float64), 1e-3
    e[1, 2, 0] = eps
    # The product is linear in each factor: the central difference is exact up to rounding.
    lo, hi = (float(np.asarray(prod_rows((a + s * e).astype(np.float32))).sum())
              for s in (-1, 1))
    np.testing.assert_allclose(g[1, 2, 0], (hi - lo) / (2 * eps), rtol=1e-3)


def test_save_load_round_trip_and_dlpack() -> None:
    for value in (np.array([2, 4, 6], np.float32), np.array([1.5, -2.0], jnp.bfloat16)):
        ours, theirs = io.BytesIO(), io.BytesIO()
        snp.save(ours, snp.asarray(value))
        jnp.save(theirs, jnp.asarray(value))
        assert ours.getvalue() == theirs.getvalue()
        ours.seek(0)
        loaded = snp.load(ours)
        assert isinstance(loaded, spec.Array) and loaded.dtype == value.dtype
        np.testing.assert_array_equal(np.asarray(loaded), value)
    got = snp.from_dlpack(np.arange(3.0))
    assert isinstance(got, spec.Array)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jnp.from_dlpack(np.arange(3.0))))


def test_ufunc_objects_are_jaxs() -> None:
    """The same fourteen ufuncs, with JAX's names, arities and identities;
    hashable and equal by value, as static jit arguments must be."""
    ours = {n for n in dir(snp) if isinstance(getattr(snp, n), snp.ufunc)}
    assert ours == {n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc)}
    for name in ours:
        u, v = getattr(snp, name), getattr(jnp, name)
        assert (repr(u), u.nin, u.nout, u.nargs) == (repr(v), v.nin, v.nout, v.nargs)
        assert u.identity == v.identity
    made = snp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
    assert made == snp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
    assert hash(made) == hash(snp.frompyfunc(operator.add, nin=2, nout=1, identity=0))


def test_reduce_on_a_mesh_keeps_kept_dims_split() -> None:
    """The general reduce of operands split over both dimensions: each result
    keeps the kept dimension's split (the sharding rule, as JAX's deletes the
    reduced dimension's entry) and has the unsharded program's values."""
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        with spec.set_mesh(spec.make_mesh((2, 2), ("X", "Y"))):
            i = spec.device_put(I34[:2], spec.P("X", "Y"))
            f = spec.device_put(F34[:2], spec.P("X", "Y"))
            lo, total = spec.jit(lambda a, b: spec.lax.reduce(
                (a, b), (np.int32(2 ** 31 - 1), np.float32(0)), _pair(spec.lax), (0,)))(i, f)
            assert str(spec.typeof(lo)) == "int32[4@Y]"
            assert str(spec.typeof(total)) == "float32[4@Y]"
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    want = spec.lax.reduce((I34[:2], F34[:2]), (np.int32(2 ** 31 - 1), np.float32(0)),
                           _pair(spec.lax), (0,))
    np.testing.assert_array_equal(np.asarray(lo), np.asarray(want[0]))
    np.testing.assert_array_equal(np.asarray(total), np.asarray(want[1]))
