"""igamma, igammac, igamma_grad_a (primitives) and random_gamma_grad (a
composite), and random_gamma's JVP built on it, against JAX run live.

The primitives' impls evaluate the composite JAX lowers them to; the loops
agree step for step, and the values differ only through the transcendental
primitives inside (exp, log, lgamma, digamma: within a few ULPs of XLA's),
amplified by exp(a log x - x - lgamma a): a few 1e-6 relative in float32
(and a few ULPs of 1 absolute where igammac = 1 - P cancels)."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec._src.lax.special import igamma_grad_a_p, igamma_p, igammac_p
from tests.support.pair import errors_alike

FUNS = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad"]
RNG = np.random.default_rng(0)
# Both branches (series below x = max(1, a), continued fraction above), and
# the special cases: zeros, negatives, nan, inf.
A = np.concatenate([RNG.gamma(1., 3., 120), [0., -1., np.nan, np.inf, 1., 2., 0.5, 300.]])
X = np.concatenate([RNG.gamma(1., 3., 120), [0., 1., 1., 1., np.inf, 0., -1., 290.]])
RTOL = {"float32": 2e-5, "float64": 1e-12, "float16": 0.0, "bfloat16": 0.0}


def _text_equal(ours: Any, theirs: Any) -> None:
    a, b = str(ours), str(theirs)
    assert a == b, "\n".join(difflib.unified_diff(b.splitlines(), a.splitlines(), lineterm=""))


def _close(ours: Any, theirs: Any, rtol: float) -> None:
    o, t = np.asarray(ours), np.asarray(theirs)
    assert o.dtype == t.dtype and o.shape == t.shape
    # (atol: igammac = 1 - P cancels; its error is a few ULPs of 1.)
    np.testing.assert_allclose(o.astype(np.float64), t.astype(np.float64), rtol=rtol,
                               atol=rtol / 10)


@pytest.mark.parametrize("name", FUNS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_values(name: str, dtype: str) -> None:
    a, x = A.astype(dtype), X.astype(dtype)
    _close(getattr(spec.lax, name)(a, x), getattr(jax.lax, name)(a, x), RTOL[dtype])


def test_values_x64() -> None:
    spec.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    try:
        for name in FUNS:
            _close(getattr(spec.lax, name)(A, X), getattr(jax.lax, name)(A, X), RTOL["float64"])
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("name", FUNS)
def test_jaxpr_text(name: str) -> None:
    # Weak scalars (jnp's promotion converts some loop values) and shaped
    # strong operands (full_like and broadcast_in_dim become equations).
    for args in [(1., 1.), (np.float32([0.5, 3.]), np.float32([2., 1.]))]:
        _text_equal(spec.make_jaxpr(getattr(spec.lax, name))(*args),
                    jax.make_jaxpr(getattr(jax.lax, name))(*args))


Prog = Callable[[Any, Any], Any]
Deriv = Callable[[Any, Any, Any, Any], Any]
V2 = np.float32([0.5, 4.])
DERIVS: list[tuple[str, Deriv]] = [
    ("grad igamma a", lambda j, lax, a, x: j.grad(lax.igamma)(a, x)),
    ("grad igamma x", lambda j, lax, a, x: j.grad(lax.igamma, argnums=1)(a, x)),
    ("grad igammac both", lambda j, lax, a, x: j.grad(lax.igammac, argnums=(0, 1))(a, x)),
    ("jvp igamma", lambda j, lax, a, x: j.jvp(lax.igamma, (a * V2, x * V2), (V2, V2))),
    ("vmap igammac", lambda j, lax, a, x: j.vmap(lax.igammac, (0, None))(a * V2, x)),
    ("jvp random_gamma_grad", lambda j, lax, a, x: j.jvp(lax.random_gamma_grad, (a, x),
                                                          (x, a))),
]


@pytest.mark.parametrize("name, prog", DERIVS, ids=[n for n, _ in DERIVS])
def test_derivatives(name: str, prog: Deriv) -> None:
    a, x = np.float32(1.5), np.float32(2.)
    ours, theirs = prog(spec, spec.lax, a, x), prog(jax, jax.lax, a, x)
    for o, t in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
        _close(o, t, 2e-5)
    _text_equal(spec.make_jaxpr(lambda a, x: prog(spec, spec.lax, a, x))(a, x),
                jax.make_jaxpr(lambda a, x: prog(jax, jax.lax, a, x))(a, x))


def test_igamma_grad_a_has_no_derivative() -> None:
    with pytest.raises(NotImplementedError) as theirs:
        jax.grad(jax.lax.igamma_grad_a)(1., 2.)
    with pytest.raises(NotImplementedError) as ours:
        spec.grad(spec.lax.igamma_grad_a)(1., 2.)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("prim", [igamma_p, igammac_p, igamma_grad_a_p])
def test_typing(prim: Any) -> None:
    assert prim.name in spec.rules.REGISTRY
    out = prim.bind(np.ones(3, np.float32), np.float32(2))
    assert str(spec.typeof(out)) == "float32[3]"
    jax_prim = getattr(jax.lax, prim.name + "_p")
    for args in [(np.ones(2, np.int32), np.ones(2, np.int32)),
                 (np.ones(2, np.float32), np.ones(2, np.float16)),
                 (np.ones(2, np.float32), np.ones(3, np.float32))]:
        ours, _ = errors_alike(lambda: prim.bind(*args), lambda: jax_prim.bind(*args))
        assert f"{prim.name} C" in str(ours)


KEY_GRADS: list[tuple[str, Prog]] = [
    ("gamma", lambda r, a: r.gamma(r.key(0), a)),
    ("gamma 2d", lambda r, a: r.gamma(r.key(3), a.reshape(2, 3))),
    ("loggamma", lambda r, a: r.loggamma(r.key(1), a)),
    ("beta", lambda r, a: r.beta(r.key(2), a, 2.0)),
]
ALPHAS = np.float32([0.01, 0.5, 1.0, 2.5, 10.0, 250.0])


@pytest.mark.parametrize("name, prog", KEY_GRADS, ids=[n for n, _ in KEY_GRADS])
def test_random_gamma_grad_values(name: str, prog: Prog) -> None:
    ours = spec.grad(lambda a: snp.sum(prog(spec.random, a)))(ALPHAS)
    theirs = jax.grad(lambda a: jnp.sum(prog(jax.random, a)))(ALPHAS)
    # The samples agree to a few ULPs; d(sample)/da at them to ~1e-5.
    _close(ours, theirs, 5e-5)


def test_random_gamma_jvp_jaxpr() -> None:
    for r_s, r_j, log in [(spec.random.gamma, jax.random.gamma, False),
                          (spec.random.loggamma, jax.random.loggamma, True)]:
        ks, kj = spec.random.key(0), jax.random.key(0)
        a = np.float32([0.5, 3.0])
        _text_equal(spec.make_jaxpr(lambda a, t: spec.jvp(lambda a: r_s(ks, a), (a,), (t,)))(a, a),
                    jax.make_jaxpr(lambda a, t: jax.jvp(lambda a: r_j(kj, a), (a,), (t,)))(a, a))


def test_no_pending_sections() -> None:
    assert spec.rules.missing_sections() == []
