"""scan / map / associative_scan: values, autodiff, batching and jaxpr text
against real JAX, run live."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
import spec.numpy as jnp
from spec._src.api import checkpoint as ad_checkpoint
from spec._src.core import config
from spec._src.api.lax_map import map as smap
from spec._src.lax.loops import associative_scan, scan
from spec.test_util import check_grads
from tests.support.pair import errors_alike
from tests.support.text_programs import same_text

jlax = jax.lax

# Each case: a body builder taking (lax-like module with scan, numpy module).


def _close(a: Any, b: Any, tol: float = 1e-5) -> None:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x, y)
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


def case_basic(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        return sc(lambda c, x: (c * 0.9 + np_.sin(x), c * x), c, xs)
    return f


def case_carry_only(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        return sc(lambda c, _: (np_.cos(c) * xs[0], None), c, None, length=4)[0]
    return f


def case_xs_only(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        return sc(lambda k, x: (k, np_.exp(x) * c), (), xs)[1]
    return f


def case_reverse(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        return sc(lambda c, x: (c + x * c, c), c, xs, reverse=True)
    return f


def case_pytree(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        def body(carry: Any, x: Any) -> Any:
            a, b = carry["a"], carry["b"]
            return {"a": a * x["u"], "b": b + np_.sin(a)}, (a * b, [x["v"] * 2.0])
        return sc(body, {"a": c, "b": c * 2.0}, {"u": xs, "v": xs * 3.0})
    return f


def case_consts(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        w = np_.sin(xs)  # closed over: a constant operand of the scan
        return sc(lambda k, x: (np_.tanh(k * w + x), k.sum() * x), c * np_.ones(3),
                  xs)
    return f


def case_nested(sc: Callable[..., Any], np_: Any) -> Callable[..., Any]:
    def f(c: Any, xs: Any) -> Any:
        def outer(k: Any, x: Any) -> Any:
            inner = sc(lambda j, y: (j * y + x, j), k, xs)
            return inner[0], inner[1].sum()
        return sc(outer, c, xs)
    return f


CASES = [case_basic, case_carry_only, case_xs_only, case_reverse, case_pytree, case_consts,
         case_nested]
C0, XS = 0.7, np.array([0.3, -1.2, 0.5], np.float32)


def _pair(case: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return case(scan, jnp), case(jlax.scan, jjnp)


def _scalar(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda c, xs: sum((leaf ** 2).sum() for leaf in
                             (spec.tree_util.tree_leaves(f(c, xs))))


def _jscalar(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda c, xs: sum((leaf ** 2).sum() for leaf in jax.tree_util.tree_leaves(f(c, xs)))


@pytest.mark.parametrize("case", CASES)
def test_values_eager_jit(case: Callable[..., Any]) -> None:
    f, g = _pair(case)
    want = g(C0, XS)
    _close(f(C0, XS), want)
    _close(spec.jit(f)(C0, XS), want)


@pytest.mark.parametrize("case", CASES)
def test_grad_jvp(case: Callable[..., Any]) -> None:
    f, g = _pair(case)
    want = jax.grad(_jscalar(g), (0, 1))(C0, XS)
    _close(spec.grad(_scalar(f), (0, 1))(C0, XS), want, 1e-4)
    with config.use_direct_linearize(False):
        _close(spec.grad(_scalar(f), (0, 1))(C0, XS), want, 1e-4)
    t = np.float32(0.5), np.linspace(-1, 1, 3).astype(np.float32)
    _close(spec.jvp(f, (C0, XS), t), jax.jvp(g, (C0, XS), t), 1e-4)


@pytest.mark.parametrize("case", CASES)
def test_vmap(case: Callable[..., Any]) -> None:
    f, g = _pair(case)
    cs = np.array([0.1, 0.7], np.float32)
    xss = np.stack([XS, XS[::-1]])
    _close(spec.vmap(f)(cs, xss), jax.vmap(g)(cs, xss))
    _close(spec.vmap(f, (0, None))(cs, XS), jax.vmap(g, (0, None))(cs, XS))
    _close(spec.vmap(f, (None, 0))(C0, xss), jax.vmap(g, (None, 0))(C0, xss))
    _close(spec.vmap(spec.grad(_scalar(f)))(cs, xss),
           jax.vmap(jax.grad(_jscalar(g)))(cs, xss), 1e-4)


@pytest.mark.parametrize("case", [case_basic, case_reverse, case_consts, case_pytree])
def test_check_grads(case: Callable[..., Any]) -> None:
    f = case(scan, jnp)
    check_grads(f, (np.float32(C0), XS), order=2, modes=("fwd", "rev"), atol=2e-2,
                rtol=2e-2)


def test_checkpoint_layers_mlp() -> None:
    rng = np.random.default_rng(0)
    ws = rng.normal(size=(4, 5, 5)).astype(np.float32) * 0.5
    x0 = rng.normal(size=(5,)).astype(np.float32)

    def make(sc: Callable[..., Any], np_: Any, ckpt: Callable[..., Any]) -> Callable[..., Any]:
        @ckpt
        def layer(h: Any, w: Any) -> Any:
            return np_.tanh(w @ h), (h ** 2).sum()

        def loss(ws: Any, x: Any) -> Any:
            h, aux = sc(layer, x, ws)
            return (h ** 2).sum() + aux.sum()
        return loss

    f = make(scan, jnp, ad_checkpoint.checkpoint)
    g = make(jlax.scan, jjnp, jax.checkpoint)
    want = jax.grad(g, (0, 1))(ws, x0)
    _close(spec.grad(f, (0, 1))(ws, x0), want, 1e-4)
    _close(spec.jit(spec.grad(f, (0, 1)))(ws, x0), want, 1e-4)
    with config.use_direct_linearize(False):
        _close(spec.grad(f, (0, 1))(ws, x0), want, 1e-4)


def test_map() -> None:
    xs = np.arange(10, dtype=np.float32).reshape(5, 2)
    for bs in (None, 0, 2, 5, 7):
        _close(smap(lambda x: jnp.sin(x) * 2.0, xs, batch_size=bs),
               jlax.map(lambda x: jjnp.sin(x) * 2.0, xs, batch_size=bs))
    _close(smap(lambda t: (t[0] + t[1], t[0]), (xs, xs)),
           jlax.map(lambda t: (t[0] + t[1], t[0]), (xs, xs)))


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_associative_scan(n: int) -> None:
    x = np.linspace(0.5, 1.5, n * 3).astype(np.float32).reshape(n, 3)
    for rev in (False, True):
        _close(associative_scan(jnp.add, x, reverse=rev),
               jlax.associative_scan(jjnp.add, x, reverse=rev))
        _close(associative_scan(jnp.multiply, x, reverse=rev, axis=0),
               jlax.associative_scan(jjnp.multiply, x, reverse=rev, axis=0))
    _close(associative_scan(jnp.maximum, x.T, axis=1), jlax.associative_scan(jjnp.maximum,
                                                                              x.T, axis=1))
    b = (x > 1.0)
    _close(associative_scan(jnp.logical_or, b), jlax.associative_scan(jjnp.logical_or, b))
    _close(spec.grad(lambda x: associative_scan(jnp.multiply, x).sum())(x),
           jax.grad(lambda x: jlax.associative_scan(jjnp.multiply, x).sum())(x), 1e-4)


def _text(f: Callable[..., Any], g: Callable[..., Any], *args: Any) -> tuple[str, str]:
    return str(spec.make_jaxpr(f)(*args)), str(jax.make_jaxpr(g)(*args))


def test_jaxpr_text() -> None:
    f = lambda c, xs: scan(lambda c, x: (c + x, c * x), c, xs)  # noqa: E731
    g = lambda c, xs: jlax.scan(lambda c, x: (c + x, c * x), c, xs)  # noqa: E731
    a, b = _text(f, g, 0.0, np.arange(3.0, dtype=np.float32))
    assert a == b
    # closed-over constant, carry forwarded unchanged, ys forwarded from xs
    w = np.ones(3, np.float32)
    f2 = lambda c, k, xs: scan(lambda ck, x: ((ck[0] * w + x, ck[1]), x), (c, k), xs)  # noqa
    g2 = lambda c, k, xs: jlax.scan(lambda ck, x: ((ck[0] * w + x, ck[1]), x), (c, k), xs)  # noqa
    a, b = _text(f2, g2, w, w, np.ones((2, 3), np.float32))
    assert a == b
    # forward mode and vmap
    a, b = _text(lambda c, xs: spec.jvp(f, (c, xs), (c, xs)),
                 lambda c, xs: jax.jvp(g, (c, xs), (c, xs)), 1.0, np.arange(3.0, dtype=np.float32))
    assert a == b
    a, b = _text(spec.vmap(f, (0, None)), jax.vmap(g, (0, None)), np.ones(2, np.float32),
                 np.arange(3.0, dtype=np.float32))
    assert a == b


def test_grad_jaxpr_text_strong_carry() -> None:
    # With a strongly typed carry the reverse-mode program equals JAX's.
    f = lambda c, xs: scan(lambda c, x: (c + x, c * x), c, xs)[1].sum()  # noqa: E731
    g = lambda c, xs: jlax.scan(lambda c, x: (c + x, c * x), c, xs)[1].sum()  # noqa: E731
    a, b = _text(spec.grad(f), jax.grad(g), np.float32(1.0), np.arange(3.0, dtype=np.float32))
    assert a == b


def _raises_like(f: Callable[[], Any], g: Callable[[], Any], same: bool = False) -> str:
    """spec's ``f`` raises the class JAX's ``g`` raises (and, with ``same``,
    the same message); returns spec's message."""
    got, want = errors_alike(f, g)
    if same:
        assert str(got) == str(want)
    return str(got)


def test_errors() -> None:
    xs = np.ones(3, np.float32)
    msg = _raises_like(lambda: scan(lambda c, x: ((c, c), x), 0.0, xs),
                       lambda: jlax.scan(lambda c, x: ((c, c), x), 0.0, xs), same=True)
    assert "must have the same pytree structure" in msg
    msg = _raises_like(lambda: scan(lambda c, x: (x.astype(np.int32), x), np.float32(0), xs),
                       lambda: jlax.scan(lambda c, x: (x.astype(np.int32), x), np.float32(0),
                                         xs), same=True)
    # JAX's messages show long dtype names.
    assert "must have equal types" in msg and "float32[]" in msg and "int32[]" in msg
    _raises_like(lambda: scan(lambda c, x: (np.ones(2, np.float32), x), np.ones(3, np.float32),
                              xs),
                 lambda: jlax.scan(lambda c, x: (np.ones(2, np.float32), x),
                                   np.ones(3, np.float32), xs), same=True)
    _raises_like(lambda: scan(lambda c, x: (c, x), 0.0, xs, length=4),
                 lambda: jlax.scan(lambda c, x: (c, x), 0.0, xs, length=4))
    _raises_like(lambda: scan(lambda c, x: (c, x), 0.0, (xs, np.ones(2))),
                 lambda: jlax.scan(lambda c, x: (c, x), 0.0, (xs, np.ones(2))))
    _raises_like(lambda: scan(lambda c, x: (c, x), 0.0, None),
                 lambda: jlax.scan(lambda c, x: (c, x), 0.0, None))
    _raises_like(lambda: scan(lambda c, x: c, 0.0, xs),
                 lambda: jlax.scan(lambda c, x: c, 0.0, xs))
    bad: Any = 3
    _raises_like(lambda: scan(bad, 0.0, xs), lambda: jlax.scan(bad, 0.0, xs))


def test_weak_init_promoted() -> None:
    xs = np.ones(3, np.float32)
    zero: Any = 0
    r: Any = scan(lambda c, x: (c + x, c), zero, xs)
    w: Any = jlax.scan(lambda c, x: (c + x, c), zero, xs)
    _close(r, w)
    assert r[0].aval.weak_type == w[0].weak_type


def test_no_missing_sections() -> None:
    from spec.rules import missing_sections
    assert not [m for m in missing_sections() if m[0] == "scan" and m[1] != "sharding"]


W3 = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4], [0.0, 0.2, 0.6]], np.float32)
S3 = np.arange(3.0, dtype=np.float32)


def _grad_programs(sc: Callable[..., Any], np_: Any, ck: Callable[..., Any]
                   ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Representative scans whose reverse-mode jaxpr text must equal JAX's."""
    one, half = np.float32(1.0), np.float32(0.5)

    def rnn(w: Any, h0: Any, xs: Any) -> Any:
        h, hs = sc(lambda h, x: (np_.tanh(w @ h + x), h), h0, xs)
        return (hs ** 2).sum() + h.sum()

    def tree(c: Any, w: Any, xs: Any) -> Any:
        def body(k: Any, x: Any) -> Any:
            return {"a": k["a"] * w + x, "b": k["b"] + np_.sin(k["a"])}, (k["a"] * k["b"], [x * w])
        out = sc(body, {"a": c, "b": c * 2.0}, xs)
        return out[0]["b"] + out[1][0].sum() + out[1][1][0].sum()

    @ck
    def layer(h: Any, w: Any) -> Any:
        return np_.tanh(w @ h), (h ** 2).sum()

    def layers(ws: Any, x: Any) -> Any:
        h, aux = sc(layer, x, ws)
        return (h ** 2).sum() + aux.sum()

    ws = np.arange(36, dtype=np.float32).reshape(4, 3, 3) / 40.0
    return {
        "invariant": (lambda c, w, xs: sc(lambda c, x: (c * w + x, c), c, xs)[1].sum(),
                      (one, half, S3)),
        "hoisted": (lambda c, w, xs: sc(lambda c, x: (c * np_.sin(w) * np_.cos(w) + x, c),
                                        c, xs)[1].sum(), (one, half, S3)),
        "rnn": (rnn, (W3, np.ones(3, np.float32), np.ones((4, 3), np.float32))),
        "weak_init": (lambda xs: sc(lambda c, x: (c + x * x, c), 0., xs)[0], (S3,)),
        "reverse": (lambda c, w, xs: sc(lambda c, x: (np_.sin(c) * w + x, c * x), c, xs,
                                        reverse=True)[1].sum(), (one, half, S3)),
        "pytree": (tree, (one, half, S3)),
        "checkpoint_layers": (layers, (ws, np.ones(3, np.float32))),
    }


GRAD_PROGRAMS = list(_grad_programs(scan, jnp, ad_checkpoint.checkpoint))


@pytest.mark.parametrize("name", GRAD_PROGRAMS)
def test_grad_jaxpr_text_matches_jax(name: str) -> None:
    f, args = _grad_programs(scan, jnp, ad_checkpoint.checkpoint)[name]
    g, _ = _grad_programs(jlax.scan, jjnp, jax.checkpoint)[name]
    argnums = tuple(range(len(args)))
    a, b = _text(spec.grad(f, argnums), jax.grad(g, argnums), *args)
    assert a == b
    # Values: equal to JAX's, and bitwise equal on the two linearize paths.
    want = jax.grad(g, argnums)(*args)
    got = spec.grad(f, argnums)(*args)
    _close(got, want, 1e-5)
    with config.use_direct_linearize(False):
        legacy = spec.grad(f, argnums)(*args)
    for x, y in zip(got, legacy):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # The vjp's and linearize's tangent programs also run to JAX's values.
    t = tuple(np.ones_like(np.asarray(x)) for x in args)
    _close(spec.linearize(f, *args)[1](*t), jax.linearize(g, *args)[1](*t), 1e-5)
    _close(spec.vjp(f, *args)[1](np.float32(1.0)), jax.vjp(g, *args)[1](np.float32(1.0)), 1e-5)


def test_grad_loop_invariant_residuals_hoisted() -> None:
    # sin(w)/cos(w) are computed once outside the loop, not stacked per step.
    f, args = _grad_programs(scan, jnp, ad_checkpoint.checkpoint)["hoisted"]
    eqns = spec.make_jaxpr(spec.grad(f, (0, 1, 2)))(*args).eqns
    assert [e.primitive.name for e in eqns[:4]] == ["sin", "cos", "cos", "sin"]
    first_scan = next(e for e in eqns if e.primitive.name == "scan")
    assert all(v.aval.shape == () for v in first_scan.invars[:2])


def test_grad_jaxpr_text_weak_carry_known_gap() -> None:
    # Known difference: with a weak initial carry multiplied in the body,
    # spec's transposed body has one extra convert_element_type[weak_type=True].
    def make(sc: Callable[..., Any]) -> Callable[..., Any]:
        return lambda xs: sc(lambda c, x: (c * x + 1.0, c), 0., xs)[1].sum()
    a, b = _text(spec.grad(make(scan)), jax.grad(make(jlax.scan)), S3)
    assert a.count("weak_type=True") == b.count("weak_type=True") + 1
    _close(spec.grad(make(scan))(S3), jax.grad(make(jlax.scan))(S3))


# ----------------------------------------- lax.map with batch_size: jaxpr text


@pytest.mark.parametrize("src", [
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=2))(jnp.ones((5, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=2))(jnp.ones((4, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=7))(jnp.ones((4, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=0))(jnp.ones((4, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(lambda a: (jnp.sin(a[0]), a[1]), x, "
    "batch_size=2))((jnp.ones((5, 2)), jnp.ones(5)))",
    "out = lax.map(lambda a: a * 2, jnp.arange(7.), batch_size=3)",
])
def test_map_batch_size(src: str) -> None:
    assert same_text(src)[0] == "ok"
