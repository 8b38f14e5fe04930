"""spec.scipy.special against jax.scipy.special run live: values (within
the relative tolerances SPEC.md states), dtypes, weak types, jaxprs, errors
and derivatives; the new lax primitives against mathematics (vmap vs a
loop, finite differences, their lowering against JAX's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import jax.scipy.special as J
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.scipy.special as S
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.test_stablehlo import _canonical, _compile_and_run
from tests.support.pair import errors_alike


def _cases(dt: Any) -> dict[str, tuple[Any, ...]]:
    """Operands per function, in dtype ``dt``, covering each branch and the
    special values."""
    rng = np.random.default_rng(1)

    def u(lo: float, hi: float, *extra: float) -> np.ndarray:
        return np.concatenate([rng.uniform(lo, hi, 48), extra]).astype(dt)

    pos, real, unit = u(0.05, 30), u(-20, 20, 0, -0.0, -3, np.nan), u(0.001, 0.999, 0, 1, 2)
    n_int = np.arange(51) % 5
    return {
        "gammaln": (real,), "gammasgn": (real,), "loggamma": (real,), "gamma": (u(-5, 20),),
        "digamma": (real,), "betaln": (u(0.05, 30), u(0.05, 300)),
        "beta": (u(0.1, 10), u(-3.5, 10)),
        "betainc": (u(0.05, 30, 0, 1, 1), u(0.05, 30, 1, 0, np.inf), u(0, 1, 0.5, 0.5, 0.5)),
        "factorial": (u(-2, 20),), "comb": (u(0, 30), u(0, 15)),
        "gammainc": (pos, pos[::-1]), "gammaincc": (pos, pos[::-1]),
        "erf": (u(-5, 5),), "erfc": (u(-5, 10),), "erfinv": (u(-0.999, 0.999, 1, -1),),
        "erfcinv": (u(1e-6, 1.999, 0, 2, 3),), "erfcx": (u(-5, 30, 1e5, -30, np.inf),),
        "ndtr": (u(-10, 10),),
        "ndtri": (u(0.001, 0.999, 1e-30, 1e-10, 0.5, 0, 1, 1.5),),
        "log_ndtr": (u(-50, 10, -1e3, 30),), "logit": (unit,), "expit": (real,),
        "xlogy": (u(-20, 20, 0, 0), u(0.05, 30, 0, np.nan)),
        "xlog1py": (real, u(-1, 30, 0, 1, 2, 3)),
        "entr": (u(-1, 5, 0),), "boxcox": (pos, u(-2, 2)), "boxcox1p": (u(-0.9, 5), u(-2, 2)),
        "kl_div": (u(0.05, 30, 0, 0, -1, 1), u(0.05, 30, 0, 1, 1, np.inf)),
        "rel_entr": (u(0.05, 30, 0, 0, -1, 1), u(0.05, 30, 0, 1, 1, np.inf)),
        "zeta": (u(1.1, 10, 1, 0.5, 2), u(0.1, 10, 1, 1, -2)), "i0e": (real,), "i1e": (real,),
        "i0": (u(-10, 10),), "i1": (u(-10, 10),),
        "polygamma": (n_int, u(0.05, 30, 1, -1, 0)), "expi": (u(-30, 60, 0, -0.5),),
        "exp1": (u(0.01, 50, 0, -1),), "expn": (n_int, u(0.01, 20, 0, 0, 1)),
        "spence": (u(0, 10, 0, 1, 0.5, 2, -1),), "poch": (u(0.5, 5, 1, 2, 3), u(-0.4, 4, 0, 0, 0)),
        "multigammaln": (u(3, 20), 3),
    }


# Relative tolerances to JAX's values (float32, float64): exact where spec
# evaluates JAX's own composite of the same primitives; otherwise the
# documented accuracy of spec's composite against XLA's.
_TOLERANCE = {"betainc": (1e-4, 1e-12), "gammainc": (2e-5, 1e-12), "gammaincc": (2e-5, 1e-12),
              "ndtri": (5e-6, 1e-13), "erfcinv": (5e-6, 1e-13), "kl_div": (5e-6, 1e-13),
              "expi": (5e-6, 1e-12), "exp1": (5e-6, 1e-12), "expn": (5e-6, 1e-12),
              "poch": (5e-6, 1e-13), "beta": (5e-6, 1e-13), "betaln": (5e-6, 1e-13),
              "comb": (5e-6, 1e-13), "factorial": (5e-6, 1e-13), "gamma": (5e-6, 1e-13)}
_DEFAULT_TOLERANCE = (2e-6, 1e-13)


def _close(ours: Any, theirs: Any, rtol: float) -> None:
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.isposinf(a), np.isposinf(b))
    np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b))
    finite = np.isfinite(b)
    np.testing.assert_allclose(a[finite], b[finite], rtol=rtol, atol=1e-30)


# (exp1 is expn(1, x), which is tested.)
_NAMES = sorted(set(_cases(np.float32)) - {"exp1"})


@pytest.mark.parametrize("name", _NAMES)
def test_values_float32(name: str) -> None:
    args = _cases(np.float32)[name]
    _close(getattr(S, name)(*args), getattr(J, name)(*args),
           _TOLERANCE.get(name, _DEFAULT_TOLERANCE)[0])


# Functions whose float64 values are spec's own kernels or composites (the
# others bind primitives tested elsewhere or follow JAX's formula).
_FLOAT64_NAMES = ["betainc", "erfcinv", "erfcx", "i0e", "i1e", "ndtri", "spence", "zeta"]


def test_values_float64(x64: None) -> None:
    cases = _cases(np.float64)
    for name in _FLOAT64_NAMES:
        args = cases[name]
        _close(getattr(S, name)(*args), getattr(J, name)(*args),
               _TOLERANCE.get(name, _DEFAULT_TOLERANCE)[1])


def test_bessel_jn_and_bernoulli() -> None:
    z = np.linspace(5, 20, 7, dtype=np.float32)
    _close(S.bessel_jn(z, v=3), J.bessel_jn(z, v=3), 1e-4)
    _close(S.bernoulli(12), J.bernoulli(12), 1e-6)
    _close(S.bernoulli(1), J.bernoulli(1), 0)


def test_softmax_family_is_jax_nn() -> None:
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.array([1.0, -1.0, 2.0], np.float32)
    _close(S.logsumexp(x, axis=1, b=b), J.logsumexp(x, axis=1, b=b), 1e-6)
    for ours, theirs in zip(S.logsumexp(x, b=b, return_sign=True),
                            J.logsumexp(x, b=b, return_sign=True)):
        _close(ours, theirs, 1e-6)
    _close(S.softmax(x, axis=0), J.softmax(x, axis=0), 1e-6)
    _close(S.log_softmax(x), J.log_softmax(x), 1e-6)


# Functions whose jaxprs are JAX's equation for equation.
_SAME_JAXPR = ["beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "digamma", "entr",
               "erf", "erfc",
               "erfinv", "expit", "factorial", "gamma", "gammainc", "gammaincc", "gammaln",
               "gammasgn", "i0", "i0e", "i1e", "logit", "loggamma", "log_ndtr", "ndtr", "poch",
               "xlog1py", "xlogy", "zeta"]
_ARITY = {"beta": 2, "betaln": 2, "betainc": 3, "boxcox": 2, "boxcox1p": 2, "comb": 2,
          "gammainc": 2, "gammaincc": 2,
          "poch": 2, "xlog1py": 2, "xlogy": 2, "zeta": 2}


def test_jaxprs_match_jax() -> None:
    x = np.full((3,), 0.5, np.float32)
    for name in _SAME_JAXPR:
        args = (x,) * _ARITY.get(name, 1)
        theirs = str(jax.make_jaxpr(getattr(J, name))(*args))
        assert str(spec.make_jaxpr(getattr(S, name))(*args)) == theirs, name


@pytest.mark.parametrize("arg", [2, 2.0, True, np.int32(2), np.float16(0.5)])
def test_dtypes_and_weak_types(arg: Any) -> None:
    for name in ["gammaln", "digamma", "erf", "expit", "logit", "entr", "i0e", "i1", "gamma",
                 "gammasgn", "expi", "spence" if isinstance(arg, float) else "erfinv"]:
        theirs = jax.eval_shape(getattr(J, name), arg)
        ours = spec.eval_shape(getattr(S, name), arg)
        assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type), name


@pytest.mark.parametrize("name, call", [
    ("gammasgn", lambda f: f(1j)), ("beta", lambda f: f(1j, 1.0)),
    ("entr", lambda f: f(1j)), ("kl_div", lambda f: f(1j, 1.0)),
    ("polygamma", lambda f: f(1.0, 2.0)), ("ndtr", lambda f: f(np.int32(1))),
    ("ndtri", lambda f: f(np.float16(0.5))), ("spence", lambda f: f(1)),
    ("log_ndtr", lambda f: f(1.0, series_order=-1)),
    ("log_ndtr", lambda f: f(1.0, series_order=31)),
    ("log_ndtr", lambda f: f(1.0, series_order=2.0)),
    ("factorial", lambda f: f(3.0, exact=True)), ("zeta", lambda f: f(2.0)),
    ("bernoulli", lambda f: f(-1)), ("expn", lambda f: f(1, 1j)),
])
def test_errors_match_jax(name: str, call: Callable[[Any], Any]) -> None:
    ours, theirs = errors_alike(lambda: call(getattr(S, name)), lambda: call(getattr(J, name)))
    assert str(ours) == str(theirs)


# Derivatives, float64: JAX's custom rules at their special points, and
# plain autodiff elsewhere.
_GRAD_CASES: list[tuple[str, tuple[Any, ...], tuple[int, ...]]] = [
    ("xlogy", (0.0, 0.0), (0, 1)), ("entr", (0.0,), (0,)), ("log_ndtr", (-30.0,), (0,)),
    ("ndtri", (0.01,), (0,)), ("erfcx", (2.5,), (0,)), ("zeta", (3.0, 2.0), (0, 1)),
    ("kl_div", (0.0, 0.7), (0, 1)), ("expi", (-1.5,), (0,)), ("i1", (0.0,), (0,)),
    ("betainc", (2.0, 3.0, 0.4), (2,)),
]


def test_grads_match_jax(x64: None) -> None:
    for name, args, argnums in _GRAD_CASES:
        # One jit of JAX's gradient (eagerly, each primitive of it compiles on its own).
        theirs = jax.jit(jax.grad(getattr(J, name), argnums=argnums))(*args)
        ours = spec.grad(getattr(S, name), argnums=argnums)(*args)
        np.testing.assert_allclose(np.asarray(ours, dtype=float),
                                   np.asarray(theirs, dtype=float), rtol=1e-9, err_msg=name)


def test_betainc_derivative_in_a_or_b_raises_as_jax(x64: None) -> None:
    for argnums in (0, 1):
        with pytest.raises(ValueError) as theirs:
            jax.grad(J.betainc, argnums)(2.0, 3.0, 0.4)
        with pytest.raises(ValueError) as ours:
            spec.grad(S.betainc, argnums)(2.0, 3.0, 0.4)
        assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------- the new primitives

_PRIMITIVES: dict[str, tuple[Callable[..., Any], int]] = {
    "zeta": (slax.zeta, 2), "bessel_i0e": (slax.bessel_i0e, 1),
    "bessel_i1e": (slax.bessel_i1e, 1), "betainc": (slax.betainc, 3)}


def _operands(arity: int, dt: Any = np.float64, shape: tuple[int, ...] = (4, 3)
              ) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    lows = {1: [-4.0], 2: [1.5, 0.5], 3: [0.5, 0.5, 0.05]}[arity]
    highs = {1: [4.0], 2: [6.0, 4.0], 3: [5.0, 5.0, 0.95]}[arity]
    return [rng.uniform(lo, hi, shape).astype(dt) for lo, hi in zip(lows, highs)]


@pytest.mark.parametrize("name", sorted(_PRIMITIVES))
def test_primitive_vmap_is_a_loop(name: str) -> None:
    fn, arity = _PRIMITIVES[name]
    args = _operands(arity, np.float32)
    batched = np.asarray(spec.vmap(fn, in_axes=(1,) + (0,) * (arity - 1))(
        args[0].T, *args[1:]))
    looped = np.stack([np.asarray(fn(args[0][i], *(a[i] for a in args[1:])))
                       for i in range(args[0].shape[0])])
    np.testing.assert_array_equal(batched, looped)


def test_primitive_derivatives_match_finite_differences(x64: None) -> None:
    h = 1e-6
    cases = [(slax.bessel_i0e, (1.3,), 0), (slax.bessel_i0e, (-0.4,), 0),
             (slax.bessel_i1e, (2.2,), 0), (slax.betainc, (2.0, 3.0, 0.35), 2)]
    for fn, args, k in cases:
        up = list(args)
        down = list(args)
        up[k] += h
        down[k] -= h
        fd = (float(fn(*up)) - float(fn(*down))) / (2 * h)
        np.testing.assert_allclose(float(spec.grad(fn, argnums=k)(*args)), fd, rtol=1e-7)


def test_primitive_jaxprs_and_errors_match_jax() -> None:
    x = np.full((2,), 1.5, np.float32)
    for ours, theirs, arity in [(slax.zeta, jlax.zeta, 2), (slax.bessel_i0e, jlax.bessel_i0e, 1),
                                (slax.bessel_i1e, jlax.bessel_i1e, 1),
                                (slax.betainc, jlax.betainc, 3)]:
        assert str(spec.make_jaxpr(ours)(*(x,) * arity)) == \
            str(jax.make_jaxpr(theirs)(*(x,) * arity))
        with pytest.raises(TypeError):
            theirs(*(np.int32(1),) * arity)
        with pytest.raises(TypeError, match="C1"):
            ours(*(np.int32(1),) * arity)
    with pytest.raises(NotImplementedError):
        jax.jvp(jlax.zeta, (1.5, 1.5), (1.0, 1.0))
    with pytest.raises(NotImplementedError):
        spec.jvp(slax.zeta, (1.5, 1.5), (1.0, 1.0))


def test_zeta_and_bessel_i1e_lower_as_jax() -> None:
    x = np.array([1.5, 2.5, 4.0], np.float32)
    q = np.array([0.5, 1.0, 3.0], np.float32)
    for ours, theirs, args in [(slax.zeta, jlax.zeta, [x, q]),
                               (slax.bessel_i1e, jlax.bessel_i1e, [x])]:
        text = lower_jaxpr(spec.make_jaxpr(ours)(*args), "f")
        jax_text = jax.jit(theirs).lower(*args).as_text()
        assert _canonical(text) == _canonical(jax_text.replace("@jit_zeta", "@jit_f")
                                              .replace("@jit_bessel_i1e", "@jit_f"))
        compiled = _compile_and_run(text, args)[0]
        np.testing.assert_allclose(np.asarray(ours(*args)), compiled, rtol=1e-6)


def test_import_jax_scipy_and_fft_under_the_alias() -> None:
    import subprocess
    import sys
    code = ("import spec; spec.install_as_jax(); import jax.scipy.special as s; "
            "from jax.scipy.special import logsumexp; from jax.scipy.stats import norm; "
            "import jax.numpy as jnp; import jax.numpy.fft as f; from jax import lax; "
            "print(s.__name__, f.__name__, norm.__name__, float(logsumexp(jnp.zeros(4))), "
            "lax.FftType.RFFT.name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:3] == ["spec.scipy.special", "spec.numpy.fft", "spec.scipy.stats.norm"]
    assert float(out[3]) == float(jjnp.log(4.0))
    assert out[4] == "RFFT"


def test_igamma_composites_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The igamma-family composites the impl stages (one per name, shapes and
    dtype) are kept up to a bound, the oldest going first; values stay
    JAX's."""
    from spec._src.lax import special as spec_special
    monkeypatch.setattr(spec_special, "_PROGRAMS", {})
    monkeypatch.setattr(spec_special, "_PROGRAMS_KEPT", 2)
    for n in (2, 3, 4):
        a = np.linspace(0.5, 3.0, n, dtype=np.float32)
        x = np.linspace(0.2, 4.0, n, dtype=np.float32)
        np.testing.assert_allclose(np.asarray(slax.igamma(a, x)), np.asarray(jlax.igamma(a, x)),
                                   rtol=2e-6)
        assert len(spec_special._PROGRAMS) <= 2
