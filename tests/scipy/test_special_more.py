"""spec.scipy.special's Dawson, Fresnel, hypergeometric, Owen's T and
sine/cosine integral functions against jax.scipy.special run live: values
(float32 and float64, within the tolerances SPEC.md §20 states), dtypes and
weak types, derivatives, errors; derivatives also against float64 finite
differences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.scipy.special as J
import numpy as np
import pytest

import spec
import spec.scipy.special as S
from tests.support.pair import errors_alike


def _operands(dt: Any) -> dict[str, tuple[np.ndarray, ...]]:
    """Operands per function covering each branch and the special values."""
    rng = np.random.default_rng(3)

    def u(lo: float, hi: float, *extra: float, n: int = 40) -> np.ndarray:
        return np.concatenate([rng.uniform(lo, hi, n), extra]).astype(dt)

    n = 24
    hyp2f1_a = u(-3, 3, -2, -3, 0, 1, 1, 2, 0.5, np.nan, 1, 2, n=n)
    hyp2f1_b = u(-3, 3, 1.5, 0.5, 1, 0, 2, 1, 0.5, 1, 0.5, 2, n=n)
    near_one = rng.uniform(0.1, 3, (2, n))
    return {
        "dawsn": (u(-20, 20, 0, -0.0, 3.25, 6.25, 1e5, np.inf, -np.inf, np.nan),),
        "fresnel": (u(-20, 20, 0, -0.0, 1.6, 40000, 1e6, np.inf, -np.inf, np.nan),),
        "hyp1f1": (u(0.1, 5, 0, 0, 2, 1, n=n) .repeat(2)[:2 * n + 8],
                   u(0.1, 5, 0, 1, 2, 0, n=n).repeat(2)[:2 * n + 8],
                   np.concatenate([rng.uniform(-10, 10, n), rng.uniform(100, 150, n),
                                   [1, 2, 3, 4] * 2]).astype(dt)),
        "hyp2f1": (np.concatenate([hyp2f1_a, near_one[0]]).astype(dt),
                   np.concatenate([hyp2f1_b, near_one[1]]).astype(dt),
                   np.concatenate([u(0.5, 5, 2.5, -1, 3, 0, 2, 1.5, -2, 1, 2.5, 4, n=n),
                                   near_one.sum(0) + rng.integers(-2, 3, n)]).astype(dt),
                   np.concatenate([u(-0.9, 0.99, 0.5, 0.3, 0, 0.5, 1, 1, 0.2, 0.1, 1, 1.5,
                                     n=n), rng.uniform(0.9, 0.99, n)]).astype(dt)),
        "owens_t": (u(-5, 5, 0, 1, 0.3, np.nan, 2, 0.2), u(-5, 5, 0.5, 1, -1, 1, np.nan, 4)),
        "sici": (u(-20, 20, 0, -0.0, 4, 8, 1e10, np.inf, -np.inf, np.nan, 3.99, -2e9),),
    }


# Relative tolerances to JAX's values (float32, float64). spec evaluates
# JAX's formulas in IEEE order, XLA's CPU compiler may contract or reorder
# them (a few ulp per step), and the series of hyp1f1/hyp2f1 at negative x
# cancel: their float32 tolerance allows for that amplification.
_TOLERANCE = {"dawsn": (1e-6, 1e-14), "fresnel": (1e-6, 1e-14), "hyp1f1": (1e-5, 1e-13),
              "hyp2f1": (1e-5, 1e-13), "owens_t": (5e-6, 1e-13), "sici": (1e-6, 1e-13)}
# Ci is a sum of terms of order 1 that cancel at its zeros: an absolute
# tolerance of a few float32 ulp of 1 there.
_ATOL = {"sici": (1e-6, 1e-15)}
_NAMES = sorted(_TOLERANCE)


def _outputs(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in (value if isinstance(value, tuple) else (value,))]


def _close(ours: Any, theirs: Any, rtol: float, name: str = "", atol: float = 1e-30) -> None:
    for a, b in zip(_outputs(ours), _outputs(theirs), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(b))
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b))
        finite = np.isfinite(b)
        np.testing.assert_allclose(a[finite], b[finite], rtol=rtol, atol=atol, err_msg=name)


def test_values_float32() -> None:
    cases = _operands(np.float32)
    for name in _NAMES:
        _close(getattr(S, name)(*cases[name]), getattr(J, name)(*cases[name]),
               _TOLERANCE[name][0], name, _ATOL.get(name, (1e-30, 1e-30))[0])


def test_values_float64(x64: None) -> None:
    cases = _operands(np.float64)
    for name in _NAMES:
        _close(getattr(S, name)(*cases[name]), getattr(J, name)(*cases[name]),
               _TOLERANCE[name][1], name, _ATOL.get(name, (1e-30, 1e-30))[1])


_ARITY = {"hyp1f1": 3, "hyp2f1": 4, "owens_t": 2}


@pytest.mark.parametrize("arg", [2, 2.0, True, np.int32(2), np.float16(0.5)])
def test_dtypes_and_weak_types(arg: Any) -> None:
    for name in _NAMES:
        args = (arg,) * _ARITY.get(name, 1)
        theirs = jax.tree_util.tree_leaves(jax.eval_shape(getattr(J, name), *args))
        ours = spec.tree_util.tree_leaves(spec.eval_shape(getattr(S, name), *args))
        assert [(o.dtype, o.weak_type) for o in ours] == \
            [(t.dtype, t.weak_type) for t in theirs], name


@pytest.mark.parametrize("name, call", [
    ("dawsn", lambda f: f(1j)), ("hyp1f1", lambda f: f(1.0, 1j, 0.5)),
    ("sici", lambda f: f(1j)), ("fresnel", lambda f: f(1j)),
    ("fresnel", lambda f: f(np.int8(1).astype(np.dtype("float8_e4m3fn")))),
])
def test_errors_match_jax(name: str, call: Callable[[Any], Any]) -> None:
    ours, theirs = errors_alike(lambda: call(getattr(S, name)), lambda: call(getattr(J, name)))
    assert str(ours) == str(theirs)


# (hyp2f1's JAX derivatives are left out: compiling them costs JAX ~10 s;
# its rules are checked against finite differences.)
_GRAD_CASES: list[tuple[str, tuple[float, ...], bool]] = [
    ("dawsn", (1.3,), True), ("dawsn", (7.0,), True), ("hyp1f1", (1.5, 2.5, 0.7), True),
    ("hyp2f1", (1.5, 0.5, 2.5, 0.7), False), ("hyp2f1", (0.5, 1.5, 3.0, -0.4), False),
    ("owens_t", (0.7, 1.5), True), ("owens_t", (1.2, 0.4), True),
]


def test_grads_match_jax_and_finite_differences(x64: None) -> None:
    # JAX keeps owens_t's float64 weight table as the float32 buffer it made
    # before x64 was switched on (and then fails): start from empty caches.
    jax.clear_caches()
    h = 1e-6
    for name, args, against_jax in _GRAD_CASES:
        argnums = tuple(range(len(args)))
        grads = spec.grad(getattr(S, name), argnums=argnums)(*args)
        if against_jax:
            # One jit of JAX's gradient (eagerly, each primitive of it compiles on its own).
            theirs = jax.jit(jax.grad(getattr(J, name), argnums=argnums))(*args)
            np.testing.assert_allclose(np.array(grads, dtype=float),
                                       np.array(theirs, dtype=float), rtol=1e-9, err_msg=name)
        # Every central difference in one call: row 2k is args + h e_k,
        # row 2k + 1 is args - h e_k.
        steps = np.repeat(np.eye(len(args)), 2, axis=0) * np.tile([h, -h], len(args))[:, None]
        points = np.array(args) + steps
        values = np.asarray(getattr(S, name)(*points.T))
        fd = (values[0::2] - values[1::2]) / (2 * h)
        np.testing.assert_allclose(np.array(grads, dtype=float), fd, rtol=1e-6, atol=1e-9,
                                   err_msg=name)


def test_pair_derivatives_match_jax_and_finite_differences(x64: None) -> None:
    h = 1e-6
    for name in ("fresnel", "sici"):
        for x in (0.8, 2.3, 5.5, -9.0):
            ours = [float(v) for v in spec.jacfwd(getattr(S, name))(x)]
            theirs = [float(v) for v in jax.jacfwd(getattr(J, name))(x)]
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, err_msg=name)
            fd = [(float(p) - float(q)) / (2 * h)
                  for p, q in zip(getattr(S, name)(x + h), getattr(S, name)(x - h))]
            np.testing.assert_allclose(ours, fd, rtol=1e-6, err_msg=name)


def test_hypergeometric_vmap_is_a_loop() -> None:
    a, b, x = (np.linspace(0.3, 2.0, 6, dtype=np.float32) + i for i in range(3))
    batched = np.asarray(spec.vmap(S.hyp1f1)(a, b, x))
    looped = np.array([np.asarray(S.hyp1f1(*v)) for v in zip(a, b, x)])
    np.testing.assert_array_equal(batched, looped)
    grid = S.hyp2f1(a[:, None], b[None, :], 4.0, 0.3)
    assert grid.shape == (6, 6)
    np.testing.assert_array_equal(np.asarray(grid)[2], np.asarray(S.hyp2f1(a[2], b, 4.0, 0.3)))


def _harmonic_operands(dt: Any) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(5)
    n = np.array([0, 1, 2, 3, 4, 5, 5, 3, 2, 4, 1])
    m = np.array([0, 1, -2, 3, -1, 2, -5, 0, 1, 4, -1])
    theta = np.concatenate([rng.uniform(0, np.pi, 10), [0.0]]).astype(dt)
    phi = rng.uniform(0, 2 * np.pi, 11).astype(dt)
    return n, m, theta, phi


# One JAX compilation per case (each costs JAX seconds): float32 with
# n_max = max(n); float64 with n clipped to n_max = 3 and a scalar theta (one
# point, broadcast against n and m).
@pytest.mark.parametrize("dt, atol", [(np.float32, 2e-6), (np.float64, 1e-14)])
def test_sph_harm_y_values(dt: Any, atol: float, request: pytest.FixtureRequest) -> None:
    n, m, theta, phi = _harmonic_operands(dt)
    kwargs: dict[str, Any] = {}
    if dt == np.float64:
        request.getfixturevalue("x64")
        theta, kwargs = dt(0.3), {"n_max": 3}
    ours = np.asarray(S.sph_harm_y(n, m, theta, phi, **kwargs))
    theirs = np.asarray(J.sph_harm_y(n, m, theta, phi, **kwargs))
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=atol)


def test_sph_harm_y_is_orthonormal(x64: None) -> None:
    """sum over a Gauss-Legendre x uniform grid of Y_n^m conj(Y_n'^m') is
    the identity (degree <= 3, exact for this quadrature)."""
    nodes, weights = np.polynomial.legendre.leggauss(8)
    phis = np.arange(16) * (2 * np.pi / 16)
    theta, phi = (g.ravel() for g in np.meshgrid(np.arccos(nodes), phis, indexing="ij"))
    w = np.repeat(weights, 16) * (2 * np.pi / 16)
    modes = [(n, m) for n in range(4) for m in range(-n, n + 1)]
    values = np.stack([np.asarray(S.sph_harm_y(np.full(theta.size, n), np.full(theta.size, m),
                                               theta, phi, n_max=3)) for n, m in modes])
    gram = (values * w) @ values.conj().T
    np.testing.assert_allclose(gram, np.eye(len(modes)), atol=1e-12)


def test_sph_harm_y_errors_match_jax() -> None:
    n, m, theta, phi = _harmonic_operands(np.float32)
    with pytest.raises(NotImplementedError) as theirs:
        J.sph_harm_y(n, m, theta, phi, diff_n=1)
    with pytest.raises(NotImplementedError) as ours:
        S.sph_harm_y(n, m, theta, phi, diff_n=1)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(J.sph_harm_y)(n, m, theta, phi)
    with pytest.raises(spec.errors.ConcretizationTypeError, match="n_max"):
        spec.jit(S.sph_harm_y)(n, m, theta, phi)


@pytest.mark.parametrize("dt, rtol", [(np.complex64, 1e-6), (np.complex128, 1e-14)])
def test_wofz_and_complex_erfcx_values(dt: Any, rtol: float,
                                       request: pytest.FixtureRequest) -> None:
    if dt == np.complex128:
        request.getfixturevalue("x64")
    rng = np.random.default_rng(9)
    z = np.concatenate([rng.uniform(-6, 6, 40) + 1j * rng.uniform(-6, 6, 40),
                        [0, 1j, -1j, 2.5, -2.5]]).astype(dt)
    for name in ("wofz", "erfcx"):
        ours, theirs = np.asarray(getattr(S, name)(z)), np.asarray(getattr(J, name)(z))
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=rtol, err_msg=name)


@pytest.mark.parametrize("arg", [2, 2.0, True, np.int32(2), np.float16(0.5), 1j,
                                 np.float32(1)])
def test_wofz_dtypes_and_weak_types(arg: Any) -> None:
    theirs = jax.eval_shape(J.wofz, arg)
    ours = spec.eval_shape(S.wofz, arg)
    assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)


def test_wofz_derivative_matches_jax_and_finite_differences(x64: None) -> None:
    z, h = np.complex128(0.3 + 0.4j), 1e-6
    ours = spec.jvp(S.wofz, (z,), (np.complex128(1),))
    theirs = jax.jvp(J.wofz, (z,), (np.complex128(1),))
    np.testing.assert_allclose(complex(ours[1]), complex(theirs[1]), rtol=1e-12)
    fd = (complex(S.wofz(z + h)) - complex(S.wofz(z - h))) / (2 * h)
    np.testing.assert_allclose(complex(ours[1]), fd, rtol=1e-8)


def test_owens_t_jaxpr_is_jaxs() -> None:
    x = np.full((3,), 0.5, np.float32)
    assert str(spec.make_jaxpr(S.owens_t)(x, x)) == str(jax.make_jaxpr(J.owens_t)(x, x))
