"""Control flow and call lowering (cond as stablehlo.case, while and scan
as stablehlo.while, custom derivatives, checkpoint, autodiff's add_any):
spec's StableHLO, compiled by jaxlib on CPU, computes what spec evaluates
and what JAX computes; the module text of a loop and a cond is JAX's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, compile_and_run, spec_and_compiled

_rng = np.random.default_rng(2)
X = _rng.integers(-4, 5, (4, 3)).astype(np.float32)
N = np.array([3, -1, 7], np.int32)


def _loops(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    """Exact programs (small integers in float32): every value is
    representable, so results are bitwise whatever the op order."""
    def fn(x: Any, n: Any) -> Any:
        w = x[0] * 2.0  # closed over: constants of the bodies

        def step(c: Any, a: Any) -> Any:
            return c + a * w, (c * a, c - w)
        conds = (lax.cond(n[0] > 0, lambda v: v + w, lambda v: v * 2.0, x),
                 *(lax.switch(n[k], [lambda v: v + 1.0, lambda v: v * w, lambda v: -v], x)
                   for k in range(3)))
        loops = (lax.while_loop(lambda c: c[0] < n[0] + 2,
                                lambda c: (c[0] + 1, c[1] * 2.0 + w), (0, x)),
                 lax.fori_loop(0, 3, lambda i, v: v + i, x),
                 lib.vmap(lambda m: lax.while_loop(lambda k: k < m, lambda k: k + 2, 0))(n),
                 lax.scan(step, w, x), lax.scan(step, w, x, reverse=True),
                 lax.scan(lambda c, a: (c + 1.0, None), w, None, length=0))

        def nested(c: Any, a: Any) -> Any:
            inner = lax.while_loop(lambda k: k[0] < 2, lambda k: (k[0] + 1, k[1] + a), (0, c))
            return lax.cond(a[0] > 0, lambda v: v * w, lambda v: v - w, inner[1]), inner[0]
        return conds, loops, lax.scan(nested, w, x)
    return fn


@pytest.fixture(scope="module")
def loops() -> tuple[list[np.ndarray], list[np.ndarray], str]:
    return spec_and_compiled(_loops(spec, slax, snp), *[X, N])


def test_loops_bitwise_against_spec(
        loops: tuple[list[np.ndarray], list[np.ndarray], str]) -> None:
    ours, compiled, text = loops
    assert "stablehlo.case" in text and "stablehlo.while" in text
    assert_bitwise(ours, compiled)


def test_loops_bitwise_against_jax(
        loops: tuple[list[np.ndarray], list[np.ndarray], str]) -> None:
    theirs = jax.tree_util.tree_leaves(jax.jit(_loops(jax, jlax, jnp))(X, N))
    assert_bitwise(loops[1], [np.asarray(t) for t in theirs])


def _derivatives(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    @lib.custom_jvp
    def half_grad(v: Any) -> Any:
        return numpy.sin(v)

    @half_grad.defjvp
    def _half_jvp(p: Any, t: Any) -> Any:
        return half_grad(p[0]), t[0] * 0.5

    @lib.custom_vjp
    def twice(v: Any) -> Any:
        return v * v

    twice.defvjp(lambda v: (v * v, v), lambda r, g: (g * 3.0 * r,))

    def loss(v: Any) -> Any:
        named = lib.ad_checkpoint.checkpoint_name(numpy.cos(v), "c")
        kept = lib.checkpoint(lambda u: numpy.sin(u) * u)(v)
        scanned = lib.checkpoint(lambda u: lax.scan(lambda c, a: (c * a, c), u[0], u)[0])(v)
        return numpy.sum(half_grad(v) + twice(v) + lax.stop_gradient(v) * v + kept + named
                         + numpy.sum(scanned))

    def fn(x: Any) -> Any:
        return lib.value_and_grad(loss)(x), twice(x), half_grad(x)
    return fn


def test_derivatives_against_spec_and_jax() -> None:
    """custom_jvp/custom_vjp calls, remat2 (with its optimization barrier),
    name, stop_gradient, add_any and eval_jaxpr lower; the compiled values
    are spec's within a few ULPs (sin/cos kernels differ by one ULP) and
    JAX's jitted ones bit for bit."""
    u = _rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    jaxpr = spec.make_jaxpr(_derivatives(spec, slax, snp))(u)
    seen = {e.primitive.name for e in _all_eqns(jaxpr)}
    assert {"custom_jvp_call", "custom_vjp_call", "remat2", "name", "add_any",
            "stop_gradient", "eval_jaxpr"} <= seen, seen
    ours, compiled, text = spec_and_compiled(_derivatives(spec, slax, snp), *[u])
    assert "stablehlo.optimization_barrier" in text
    for a, b in zip(ours, compiled):
        np.testing.assert_array_max_ulp(a, b, 4)
    theirs = jax.jit(_derivatives(jax, jlax, jnp))(u)
    assert_bitwise(compiled, [np.asarray(c) for c in jax.tree_util.tree_leaves(theirs)])


def _all_eqns(jaxpr: Any) -> list[Any]:
    out = []
    for e in jaxpr.eqns:
        out.append(e)
        for v in e.params.values():
            for j in (v if isinstance(v, (tuple, list)) else [v]):
                if hasattr(j, "eqns"):
                    out += _all_eqns(j)
    return out


def _text_program(lax: Any) -> Callable[..., Any]:
    def fn(x: Any, n: Any) -> Any:
        w = x[0]  # closed over: the loops carry it as a constant
        return (lax.switch(n[0], [lambda v: v + 1.0, lambda v: v * 2.0], x),
                lax.while_loop(lambda c: c[0] < n[0], lambda c: (c[0] + 1, c[1] * w), (0, x)),
                lax.scan(lambda c, a: (c + a, c * a), x[0], x),
                lax.scan(lambda c, a: (c * w + a, c - a), w, x, reverse=True),
                lax.fori_loop(0, 3, lambda i, v: v + i * w, x))
    return fn


def test_text_matches_jax_lowering() -> None:
    theirs = jax.jit(_text_program(jlax)).lower(X, N).as_text()
    ours = lower_jaxpr(spec.make_jaxpr(_text_program(slax))(X, N), "f")
    assert canonical(ours) == canonical(theirs)


def _unrolled(lax: Any, unroll: int, reverse: bool) -> Callable[..., Any]:
    """A scan with a closed-over constant and two stacked outputs."""
    def fn(c: Any, xs: Any) -> Any:
        w = xs[0] * 2.0
        return lax.scan(lambda k, a: (k * a + w, (k - a, a * w)), c, xs, unroll=unroll,
                        reverse=reverse)
    return fn


@pytest.mark.parametrize("unroll,length,reverse,loops", [
    (2, 4, False, True),  # whole blocks
    (2, 3, True, True),   # one leftover row, leading when reversed
    (0, 2, True, False),   # unroll=0 (as one block and no rest): unrolled entirely
])
def test_unrolled_scan_text_and_values_match_jax(unroll: int, length: int, reverse: bool,
                                                 loops: bool) -> None:
    """The loop over blocks of ``unroll`` rows, each row's body emitted in
    turn, and the leftover rows after it, as JAX's scan implementation
    lowers; compiled, it computes what ``jax.jit`` computes."""
    xs = X[:length]
    ours = spec.jit(_unrolled(slax, unroll, reverse)).lower(X[0], xs).as_text()
    theirs = jax.jit(_unrolled(jlax, unroll, reverse)).lower(X[0], xs).as_text()
    assert canonical(ours) == canonical(theirs)
    assert ("stablehlo.while" in ours) == loops
    compiled = compile_and_run(ours, [X[0], xs])
    assert_bitwise(compiled, [np.asarray(t) for t in jax.tree.leaves(
        jax.jit(_unrolled(jlax, unroll, reverse))(X[0], xs))])


def _batched_branches(m: Any) -> Callable[..., Any]:
    def fn(w: Any, a: Any, b: Any, c: Any, i: Any, x: Any) -> Any:
        return (m.lax.select_n(w, a, b, c), m.lax.select_n(w.astype(np.uint8) % 2, a, b),
                m.lax.select_n(w > 0, a), m.lax.select_n(w[0, 0] > 0, a, b),
                m.lax.select_n(w[0, 1], a, b, c),
                m.vmap(lambda j, y: m.lax.switch(j, [lambda v: v + 1, lambda v: v * 2,
                                                     lambda v: -v], y))(i, x),
                m.vmap(lambda p, y: m.lax.cond(p, lambda v: v * 3, lambda v: v, y))(i > 0, x))
    return fn


def test_integer_select_n_and_batched_branches_lower_as_jax() -> None:
    """select_n under an integer index (what vmap makes of cond and switch)
    is JAX's tree of compares and selects, a rank-0 predicate selects whole
    arrays, clamp's scalar bounds are broadcast: JAX's text, and XLA's
    values spec's and JAX's bit for bit."""
    a, b, c = (np.arange(6, dtype=np.float32).reshape(2, 3) * k for k in (1, 2, 3))
    w = np.array([[0, 1, 2], [2, 1, 0]], np.int32)
    args = (w, a, b, c, np.array([0, 2, 1, 5], np.int32), np.linspace(-1, 1, 4, dtype=np.float32))
    ours, compiled, text = spec_and_compiled(_batched_branches(spec), *args)
    assert canonical(text) == canonical(jax.jit(_batched_branches(jax)).lower(*args).as_text())
    assert_bitwise(ours, compiled)
    assert_bitwise(compiled, [np.asarray(t) for t in jax.jit(_batched_branches(jax))(*args)])


def test_platform_dependent_cond_lowers_as_jax() -> None:
    """A platform-dependent cond (jnp.diagonal of a square matrix) keeps the
    CPU branch, its index mapped through a case of constants: JAX's text,
    and the diagonal when compiled."""
    square = X[:3]
    theirs = jax.jit(jnp.diagonal).lower(square).as_text()
    ours = lower_jaxpr(spec.make_jaxpr(snp.diagonal)(square), "diagonal")
    assert canonical(ours) == canonical(theirs)
    values, compiled, _ = spec_and_compiled(snp.diagonal, square)
    assert_bitwise(values, compiled)
    np.testing.assert_array_equal(compiled[0], np.diag(square))
