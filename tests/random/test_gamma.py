"""Gamma and the samplers built on it (loggamma, beta, dirichlet, chisquare,
t, f, generalized_normal), and pareto, weibull_min, geometric, against JAX run
live: values, jaxpr text, vmap, errors. ``random_gamma``'s impl runs JAX's
vmapped rejection loop, so the accept/reject decisions agree; the normals it
draws pass through XLA's fused multiply-add in ``_uniform`` (SPEC.md section
16), so float samples agree to a few ULPs rather than bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec._src.lax.prng import random_gamma_p
from tests.support.pair import error_of

Prog = Callable[[Any, Any], Any]
RTOL = 2e-5


def _vmap(r: Any) -> Any:
    return spec.vmap if r is spec.random else jax.vmap


def _jit(r: Any) -> Any:
    return spec.jit if r is spec.random else jax.jit


def same(prog: Prog, exact: bool = False) -> None:
    ours = prog(spec.random, snp)
    theirs = prog(jax.random, jnp)
    assert str(spec.typeof(ours)) == str(jax.typeof(theirs))
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    if exact or a.dtype.kind != "f":
        assert a.tobytes() == b.tobytes(), (a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=RTOL,
                                   atol=1e-30)


ALPHAS = np.array([0.01, 0.1, 0.5, 0.999, 1.0, 1.5, 3.0, 10.0, 250.0], np.float32)


@pytest.mark.parametrize("seed", [0, 42])
def test_gamma_values(seed: int) -> None:
    same(lambda r, np_: r.gamma(r.key(seed), ALPHAS))
    same(lambda r, np_: r.gamma(r.key(seed), 2.0, (40,)))
    same(lambda r, np_: r.gamma(r.key(seed), ALPHAS, (3, 9)))
    same(lambda r, np_: r.loggamma(r.key(seed), ALPHAS, (2, 9)))
    same(lambda r, np_: r.gamma(r.PRNGKey(seed), 0.3, (6,)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gamma_narrow_floats(dtype: str) -> None:
    same(lambda r, np_: r.gamma(r.key(2), 1.5, (8,), dtype))


def test_gamma_many_parameters_one_rejection_path() -> None:
    # Hundreds of independent rejection loops: one flipped decision would
    # give an unrelated sample (far outside the tolerance).
    alphas = np.linspace(0.05, 20, 300).astype(np.float32)
    same(lambda r, np_: r.gamma(r.key(11), alphas))


def test_gamma_x64() -> None:
    spec.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        same(lambda r, np_: r.gamma(r.key(4), np.array([0.2, 2.0, 30.0]), (2, 3)))
        same(lambda r, np_: r.beta(r.key(4), 0.5, 2.0, (5,)))
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("seed", [7])
def test_derived_samplers(seed: int) -> None:
    same(lambda r, np_: r.beta(r.key(seed), 2.0, 3.0, (20,)))
    same(lambda r, np_: r.dirichlet(r.key(seed), np.float32([1., 2., 3.]), (5,)))
    same(lambda r, np_: r.chisquare(r.key(seed), 3.0, (20,)))
    same(lambda r, np_: r.t(r.key(seed), np.float32([1., 5., 30.])))
    same(lambda r, np_: r.f(r.key(seed), 3.0, 7.0, (20,)))
    same(lambda r, np_: r.generalized_normal(r.key(seed), 1.5, (20,)))
    same(lambda r, np_: r.pareto(r.key(seed), 3.0, (20,)))
    same(lambda r, np_: r.weibull_min(r.key(seed), 2.0, 1.5, (20,)))
    same(lambda r, np_: r.geometric(r.key(seed), np.float32([0.01, 0.5, 0.99]), dtype="int8"))


def test_exact_cases() -> None:
    # Samplers whose every float step is exact in both.
    same(lambda r, np_: r.geometric(r.key(3), 0.25, (30,)), exact=True)
    same(lambda r, np_: r.gamma(r.key(0), 0.5), exact=True)


def test_vmap_and_jit() -> None:
    keys = lambda r: r.split(r.key(0), 4)  # noqa: E731
    alphas = np.float32([0.5, 1, 2, 4])
    same(lambda r, np_: _vmap(r)(lambda k, a: r.gamma(k, a, (3,)))(keys(r), alphas))
    same(lambda r, np_: _vmap(r)(lambda k: r.beta(k, 2.0, 2.0, (2,)))(keys(r)))
    same(lambda r, np_: _vmap(r)(lambda a: r.gamma(r.key(1), a))(alphas))
    same(lambda r, np_: _jit(r)(lambda k: r.t(k, 3.0, (5,)))(r.key(7)))


def test_vmap_matches_loop() -> None:
    keys = spec.random.split(spec.random.key(5), 3)
    alphas = np.float32([[0.3, 3.0], [1.0, 9.0], [0.05, 2.0]])
    batched = np.asarray(spec.vmap(lambda k, a: spec.random.gamma(k, a))(keys, alphas))
    for i in range(3):
        one = np.asarray(spec.random.gamma(keys[i], alphas[i]))
        assert batched[i].tobytes() == one.tobytes()


JAXPRS: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
    ("gamma", lambda r, np_, k: r.gamma(k, 2.0, (3,))),
    ("gamma array", lambda r, np_, k: r.gamma(k, np.float32([0.5, 2.0]))),
    ("loggamma", lambda r, np_, k: r.loggamma(k, np.float32([0.5, 2.0]), (2, 2))),
    ("beta", lambda r, np_, k: r.beta(k, 2.0, 3.0, (2,))),
    ("dirichlet", lambda r, np_, k: r.dirichlet(k, np.float32([1., 2., 3.]), (2,))),
    ("chisquare", lambda r, np_, k: r.chisquare(k, 3.0, (2,))),
    ("t", lambda r, np_, k: r.t(k, 5.0, (2,))),
    ("f", lambda r, np_, k: r.f(k, 3.0, 7.0, (2,))),
    ("generalized_normal", lambda r, np_, k: r.generalized_normal(k, 1.5, (2,))),
    ("pareto", lambda r, np_, k: r.pareto(k, 3.0, (2,))),
    ("weibull_min", lambda r, np_, k: r.weibull_min(k, 2.0, 1.5, (2,))),
    ("geometric", lambda r, np_, k: r.geometric(k, 0.3, (2,))),
    ("laplace", lambda r, np_, k: r.laplace(k, (2,))),
    ("vmap gamma", lambda r, np_, k: _vmap(r)(lambda kk: r.gamma(kk, 2.0, (2,)))(r.split(k, 3))),
]


@pytest.mark.parametrize("name, prog", JAXPRS, ids=[n for n, _ in JAXPRS])
def test_jaxpr_text(name: str, prog: Callable[[Any, Any, Any], Any]) -> None:
    ours = spec.make_jaxpr(lambda k: prog(spec.random, snp, k))(spec.random.key(0))
    theirs = jax.make_jaxpr(lambda k: prog(jax.random, jnp, k))(jax.random.key(0))
    assert str(ours) == str(theirs)


ERRORS: list[tuple[str, Prog]] = [
    ("gamma int dtype", lambda r, np_: r.gamma(r.key(0), 1.0, dtype=np.int32)),
    ("gamma method", lambda r, np_: r.gamma(r.key(0), 1.0, method="nope")),
    ("gamma shape", lambda r, np_: r.gamma(r.key(0), np.ones(3, np.float32), (2,))),
    ("gamma batched key", lambda r, np_: r.gamma(r.split(r.key(0)), 1.0)),
    ("loggamma dtype", lambda r, np_: r.loggamma(r.key(0), 1.0, dtype=np.int32)),
    ("beta method", lambda r, np_: r.beta(r.key(0), 1.0, 1.0, method="x")),
    ("beta shapes", lambda r, np_: r.beta(r.key(0), np.ones(2), np.ones(3))),
    ("dirichlet scalar", lambda r, np_: r.dirichlet(r.key(0), 1.0)),
    ("dirichlet shape", lambda r, np_: r.dirichlet(r.key(0), np.ones((2, 3)), (4,))),
    ("chisquare unsafe", lambda r, np_: r.chisquare(r.key(0), np.float32(3), dtype=np.float16)),
    ("t dtype", lambda r, np_: r.t(r.key(0), 3.0, dtype=np.int32)),
    ("f unsafe", lambda r, np_: r.f(r.key(0), np.float32(1), 2.0, dtype=np.float16)),
    ("pareto unsafe", lambda r, np_: r.pareto(r.key(0), np.float32(2), dtype=np.float16)),
    ("geometric float dtype", lambda r, np_: r.geometric(r.key(0), 0.5, dtype=np.float32)),
    ("geometric shape", lambda r, np_: r.geometric(r.key(0), np.ones(3) / 2, (4,))),
    ("weibull dtype", lambda r, np_: r.weibull_min(r.key(0), 1., 1., dtype=np.int32)),
]


@pytest.mark.parametrize("name, prog", ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_as_jax(name: str, prog: Prog) -> None:
    theirs = error_of(lambda: prog(jax.random, jnp))
    ours = error_of(lambda: prog(spec.random, snp))
    # (jax.dtypes.TypePromotionError and spec's are both ValueErrors.)
    kind = next(c for c in type(theirs).__mro__ if c.__module__ == "builtins")
    assert isinstance(ours, kind), (ours, theirs)
    assert type(ours).__name__ == type(theirs).__name__
    assert str(ours) == str(theirs)


def test_random_gamma_typing() -> None:
    k = spec.random.key(0)
    with pytest.raises(TypeError, match="random_gamma C1"):
        random_gamma_p.bind(np.zeros(2, np.uint32), np.ones(2, np.float32), log_space=False)
    with pytest.raises(TypeError, match="random_gamma C2"):
        random_gamma_p.bind(k, np.ones(2, np.int32), log_space=False)
    with pytest.raises(TypeError, match="random_gamma C3"):
        random_gamma_p.bind(spec.random.split(k, 3), np.ones(2, np.float32), log_space=False)
    out = random_gamma_p.bind(spec.random.split(k, 2), np.ones((2, 3), np.float32),
                              log_space=True)
    assert str(spec.typeof(out)) == "float32[2,3]"
