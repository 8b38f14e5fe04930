# mypy: allow-untyped-defs, allow-untyped-calls
# (the programs below are user code, written once for JAX and for spec)
"""When JAX calls the Python code of ``custom_jvp`` / ``custom_vjp``
functions: each program appends to a log from inside the function and its
rules (the callable's name and whether it received a tracer) and is run with
real JAX and with spec; the logs (order and count) and the values must agree.

Eager differentiation runs the rules on concrete values and never the
function (a rule may branch on its primal in Python); staging traces each
callable once; vmap without differentiation runs the function.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import SimpleNamespace
from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec._src.core.interpreter import Tracer as SpecTracer

JAX = SimpleNamespace(jax=jax, jnp=jax.numpy, is_tracer=lambda x: isinstance(x, jax.core.Tracer),
                      SymbolicZero=jax.custom_derivatives.SymbolicZero)
SPEC = SimpleNamespace(jax=spec, jnp=spec.numpy, is_tracer=lambda x: isinstance(x, SpecTracer),
                       SymbolicZero=spec.custom_derivatives.SymbolicZero)

X = np.float32(0.5)
XS = np.array([0.5, -1.0, 2.0], np.float32)
Log = list[tuple[Any, ...]]


def sin_jvp(L: SimpleNamespace, log: Log) -> Any:
    """sin with a JVP rule that branches on its primal when it is concrete."""
    jnp = L.jnp

    @L.jax.custom_jvp
    def f(x):
        log.append(("f", L.is_tracer(x)))
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        log.append(("f_jvp", L.is_tracer(x)))
        sign = 1.0 if L.is_tracer(x) or x > 0 else -1.0
        return jnp.sin(x), sign * jnp.cos(x) * t

    return f


def sin_vjp(L: SimpleNamespace, log: Log) -> Any:
    jnp = L.jnp

    @L.jax.custom_vjp
    def f(x):
        log.append(("f", L.is_tracer(x)))
        return jnp.sin(x)

    def f_fwd(x):
        log.append(("f_fwd", L.is_tracer(x)))
        return jnp.sin(x), jnp.cos(x)

    def f_bwd(res, g):
        log.append(("f_bwd", L.is_tracer(res)))
        return (res * g,)

    f.defvjp(f_fwd, f_bwd)
    return f


def _twice(g: Callable[..., Any], *args: Any) -> Any:
    return g(*args), g(*args)


def _vjp_twice(L: SimpleNamespace, log: Log, f: Any) -> Any:
    y, pullback = L.jax.vjp(f, X)
    log.append(("after vjp",))
    return y, pullback(np.float32(1.0)), pullback(np.float32(2.0))


def _linearized(L: SimpleNamespace, log: Log, f: Any) -> Any:
    y, f_lin = L.jax.linearize(f, X)
    log.append(("after linearize",))
    return y, f_lin(np.float32(3.0)), f_lin(np.float32(1.0))


def rule_calls_function(L: SimpleNamespace, log: Log) -> Any:
    """exp whose rule calls the function on its primal (the docs' pattern)."""
    jnp = L.jnp

    @L.jax.custom_jvp
    def f(x):
        log.append(("f", L.is_tracer(x)))
        return jnp.exp(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        log.append(("f_jvp", L.is_tracer(x)))
        y = f(x)
        return y, y * t

    return (L.jax.grad(f)(X), L.jax.jit(L.jax.grad(f))(X), L.jax.grad(L.jax.grad(f))(X),
            L.jax.vmap(L.jax.grad(f))(XS))


def nested(L: SimpleNamespace, log: Log) -> Any:
    """A custom_jvp function whose body and rule use another one."""
    inner = sin_jvp(L, log)

    @L.jax.custom_jvp
    def g(x):
        log.append(("g", L.is_tracer(x)))
        return inner(x) * 2

    @g.defjvp
    def g_jvp(p, t):
        log.append(("g_jvp", L.is_tracer(p[0])))
        return g(p[0]), L.jax.grad(inner)(p[0]) * 2 * t[0]

    return L.jax.grad(g)(X), g(X), L.jax.jit(L.jax.grad(g))(X), L.jax.vmap(g)(XS)


def jvp_nondiff(L: SimpleNamespace, log: Log) -> Any:
    @partial(L.jax.custom_jvp, nondiff_argnums=(0,))
    def app(h, x):
        log.append(("app", L.is_tracer(x)))
        return h(x)

    @app.defjvp
    def app_jvp(h, primals, tangents):
        log.append(("app_jvp", L.is_tracer(primals[0])))
        return h(primals[0]), 2.0 * tangents[0]

    def use(x):
        return app(L.jnp.sin, x)

    return L.jax.grad(use)(X), L.jax.jit(L.jax.grad(use))(X), L.jax.vmap(use)(XS)


def _kind(L: SimpleNamespace, t: Any) -> str:
    return "zero" if isinstance(t, L.SymbolicZero) else "value"


def jvp_symbolic(L: SimpleNamespace, log: Log) -> Any:
    @L.jax.custom_jvp
    def f(x, y):
        log.append(("f", L.is_tracer(x)))
        return x * y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        log.append(("f_jvp", _kind(L, tx), _kind(L, ty)))
        tx = 0.0 if isinstance(tx, L.SymbolicZero) else tx * y
        ty = 0.0 if isinstance(ty, L.SymbolicZero) else ty * x
        return x * y, tx + ty

    f.defjvp(f_jvp, symbolic_zeros=True)
    y = np.float32(3.0)
    return L.jax.grad(f)(X, y), L.jax.grad(f, 1)(X, y), L.jax.jit(L.jax.grad(f))(X, y)


def jvp_defjvps(L: SimpleNamespace, log: Log) -> Any:
    jnp = L.jnp

    @L.jax.custom_jvp
    def f(x, y):
        log.append(("f", L.is_tracer(x)))
        return jnp.sin(x) * y

    def d0(xd, ans, x, y):
        log.append(("d0", L.is_tracer(x)))
        return jnp.cos(x) * xd * y

    def d1(yd, ans, x, y):
        log.append(("d1", L.is_tracer(x)))
        return jnp.sin(x) * yd

    f.defjvps(d0, d1)
    y = np.float32(2.0)
    return L.jax.grad(f)(X, y), L.jax.grad(f, (0, 1))(X, y)


def log1pexp(L: SimpleNamespace, log: Log) -> Any:
    """The docs' numerically stable log(1 + e^x)."""
    jnp = L.jnp

    @L.jax.custom_jvp
    def f(x):
        log.append(("f", L.is_tracer(x)))
        return jnp.log(1.0 + jnp.exp(x))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        log.append(("f_jvp", L.is_tracer(x)))
        return f(x), (1 - 1 / (1 + jnp.exp(x))) * t

    big = np.float32(100.0)
    return (L.jax.grad(f)(big), L.jax.jit(L.jax.grad(f))(big),
            L.jax.vmap(L.jax.grad(f))(XS * 100))


def vjp_nondiff(L: SimpleNamespace, log: Log) -> Any:
    jnp = L.jnp

    @partial(L.jax.custom_vjp, nondiff_argnums=(0,))
    def clip(lo, x):
        log.append(("clip", L.is_tracer(x)))
        return jnp.maximum(x, lo)

    def clip_fwd(lo, x):
        log.append(("clip_fwd", L.is_tracer(x)))
        return clip(lo, x), x

    def clip_bwd(lo, x, g):
        log.append(("clip_bwd", L.is_tracer(x)))
        return (g * (x > lo),)

    clip.defvjp(clip_fwd, clip_bwd)
    return (L.jax.grad(lambda x: clip(0.0, x))(X),
            L.jax.jit(L.jax.grad(lambda x: clip(1.0, x)))(X),
            L.jax.vmap(L.jax.grad(lambda x: clip(0.0, x)))(XS))


def vjp_symbolic(L: SimpleNamespace, log: Log) -> Any:
    @L.jax.custom_vjp
    def f(x, y):
        log.append(("f", L.is_tracer(x)))
        return x * y

    def f_fwd(x, y):
        log.append(("f_fwd", x.perturbed, y.perturbed))
        return x.value * y.value, (x.value, y.value)

    def f_bwd(res, g):
        log.append(("f_bwd", _kind(L, g)))
        return g * res[1], g * res[0]

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    y = np.float32(3.0)
    return L.jax.grad(f)(X, y), L.jax.grad(f, 1)(X, y), L.jax.jit(L.jax.grad(f, 1))(X, y)


def vjp_python_control(L: SimpleNamespace, log: Log) -> Any:
    """fwd branches on its concrete primal; bwd gets the concrete residual."""
    jnp = L.jnp

    @L.jax.custom_vjp
    def f(x):
        log.append(("f", L.is_tracer(x)))
        return jnp.abs(x)

    def f_fwd(x):
        log.append(("f_fwd", L.is_tracer(x)))
        return jnp.abs(x), (1.0 if x > 0 else -1.0)

    def f_bwd(sign, g):
        log.append(("f_bwd", L.is_tracer(sign), float(sign)))
        return (sign * g,)

    f.defvjp(f_fwd, f_bwd)
    return L.jax.grad(f)(np.float32(-2.0)), L.jax.value_and_grad(f)(np.float32(3.0))


def clip_gradient(L: SimpleNamespace, log: Log) -> Any:
    """The docs' gradient clipping, a custom_vjp identity."""
    jnp = L.jnp

    @L.jax.custom_vjp
    def clip(lo, hi, x):
        log.append(("clip", L.is_tracer(x)))
        return x

    def clip_fwd(lo, hi, x):
        log.append(("clip_fwd", L.is_tracer(x)))
        return x, (lo, hi)

    def clip_bwd(res, g):
        # (Not whether g is a tracer: under jit(grad), JAX's seed cotangent is
        # a tracer of the jit, spec's a host scalar.)
        log.append(("clip_bwd",))
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip.defvjp(clip_fwd, clip_bwd)

    def loss(x):
        return clip(-0.75, 0.75, jnp.sin(x) * 3)

    return L.jax.grad(loss)(X), L.jax.vmap(L.jax.grad(loss))(XS), L.jax.jit(L.jax.grad(loss))(X)


def vjp_inside_jvp(L: SimpleNamespace, log: Log) -> Any:
    inner = sin_vjp(L, log)
    jnp = L.jnp

    @L.jax.custom_jvp
    def g(x):
        log.append(("g", L.is_tracer(x)))
        return inner(x)

    @g.defjvp
    def g_jvp(p, t):
        log.append(("g_jvp", L.is_tracer(p[0])))
        return inner(p[0]), jnp.cos(p[0]) * t[0]

    return L.jax.grad(g)(X), L.jax.grad(lambda x: inner(g(x)))(X)


def _forward_of_vjp(L: SimpleNamespace, log: Log) -> Any:
    try:
        L.jax.jvp(sin_vjp(L, log), (X,), (np.float32(1.0),))
    except TypeError as e:
        return str(e)
    return None


PROGRAMS: dict[str, Callable[[SimpleNamespace, Log], Any]] = {
    "jvp eager": lambda L, log: sin_jvp(L, log)(X),
    "jvp grad": lambda L, log: L.jax.grad(sin_jvp(L, log))(np.float32(-0.5)),
    "jvp jvp": lambda L, log: L.jax.jvp(sin_jvp(L, log), (X,), (np.float32(2.0),)),
    "jvp vjp": lambda L, log: _vjp_twice(L, log, sin_jvp(L, log)),
    "jvp linearize": lambda L, log: _linearized(L, log, sin_jvp(L, log)),
    "jvp value_and_grad": lambda L, log: L.jax.value_and_grad(sin_jvp(L, log))(X),
    "jvp jit": lambda L, log: _twice(L.jax.jit(sin_jvp(L, log)), X),
    "jvp jit(grad)": lambda L, log: _twice(L.jax.jit(L.jax.grad(sin_jvp(L, log))), X),
    "jvp grad(jit)": lambda L, log: _twice(L.jax.grad(L.jax.jit(sin_jvp(L, log))), X),
    "jvp make_jaxpr(grad)": lambda L, log: str(L.jax.make_jaxpr(
        L.jax.grad(sin_jvp(L, log)))(X)),
    "jvp vmap": lambda L, log: L.jax.vmap(sin_jvp(L, log))(XS),
    "jvp jit(vmap)": lambda L, log: L.jax.jit(L.jax.vmap(sin_jvp(L, log)))(XS),
    "jvp vmap(grad)": lambda L, log: L.jax.vmap(L.jax.grad(sin_jvp(L, log)))(XS),
    "jvp grad(vmap)": lambda L, log: L.jax.grad(
        lambda x: L.jax.vmap(sin_jvp(L, log))(x).sum())(XS),
    "jvp grad(grad)": lambda L, log: L.jax.grad(L.jax.grad(sin_jvp(L, log)))(X),
    "jvp jacfwd": lambda L, log: L.jax.jacfwd(lambda x: sin_jvp(L, log)(x[0]) * x)(XS),
    "jvp jacrev": lambda L, log: L.jax.jacrev(lambda x: sin_jvp(L, log)(x[1]) * x)(XS),
    "jvp other argument": lambda L, log: L.jax.grad(
        lambda x, y: sin_jvp(L, log)(y) * x)(X, np.float32(2.0)),
    "jvp rule calls function": rule_calls_function,
    "jvp nested": nested,
    "jvp nondiff_argnums": jvp_nondiff,
    "jvp symbolic_zeros": jvp_symbolic,
    "jvp defjvps": jvp_defjvps,
    "jvp log1pexp": log1pexp,
    "jvp make_jaxpr(vmap)": lambda L, log: str(L.jax.make_jaxpr(
        L.jax.vmap(sin_jvp(L, log)))(XS)),
    "jvp make_jaxpr(grad(vmap))": lambda L, log: str(L.jax.make_jaxpr(L.jax.grad(
        lambda x: L.jax.vmap(sin_jvp(L, log))(x).sum()))(XS)),
    "jvp grad(checkpoint)": lambda L, log: L.jax.grad(L.jax.checkpoint(sin_jvp(L, log)))(X),
    "jvp grad(scan)": lambda L, log: L.jax.grad(lambda x: L.jax.lax.scan(
        lambda c, _: (sin_jvp(L, log)(c), None), x, None, length=3)[0])(X),
    "jvp grad(cond)": lambda L, log: L.jax.grad(lambda x: L.jax.lax.cond(
        x > 0, sin_jvp(L, log), L.jnp.cos, x))(X),
    "jvp jit(linearize)": lambda L, log: L.jax.jit(
        lambda x: L.jax.linearize(sin_jvp(L, log), x)[1](x))(X),
    "jvp jvp(while_loop)": lambda L, log: L.jax.jvp(lambda x: L.jax.lax.while_loop(
        lambda c: c[1] < 3, lambda c: (sin_jvp(L, log)(c[0]), c[1] + 1), (x, 0))[0],
        (X,), (np.float32(1.0),)),
    "jvp hessian": lambda L, log: L.jax.hessian(sin_jvp(L, log))(X),
    "jvp grad(jit(vmap))": lambda L, log: L.jax.grad(
        lambda x: L.jax.jit(L.jax.vmap(sin_jvp(L, log)))(x).sum())(XS),
    "vjp eager": lambda L, log: sin_vjp(L, log)(X),
    "vjp grad(fori_loop)": lambda L, log: L.jax.grad(lambda x: L.jax.lax.fori_loop(
        0, 3, lambda i, c: sin_vjp(L, log)(c), x))(X),
    "vjp make_jaxpr(vmap(grad))": lambda L, log: str(L.jax.make_jaxpr(
        L.jax.vmap(L.jax.grad(sin_vjp(L, log))))(XS)),
    "vjp grad(checkpoint)": lambda L, log: L.jax.grad(L.jax.checkpoint(sin_vjp(L, log)))(X),
    "vjp grad(scan)": lambda L, log: L.jax.grad(lambda x: L.jax.lax.scan(
        lambda c, _: (sin_vjp(L, log)(c), None), x, None, length=3)[0])(X),
    "vjp grad": lambda L, log: L.jax.grad(sin_vjp(L, log))(X),
    "vjp vjp": lambda L, log: _vjp_twice(L, log, sin_vjp(L, log)),
    "vjp value_and_grad": lambda L, log: L.jax.value_and_grad(sin_vjp(L, log))(X),
    "vjp jit": lambda L, log: _twice(L.jax.jit(sin_vjp(L, log)), X),
    "vjp jit(grad)": lambda L, log: _twice(L.jax.jit(L.jax.grad(sin_vjp(L, log))), X),
    "vjp grad(jit)": lambda L, log: _twice(L.jax.grad(L.jax.jit(sin_vjp(L, log))), X),
    "vjp vmap": lambda L, log: L.jax.vmap(sin_vjp(L, log))(XS),
    "vjp vmap(grad)": lambda L, log: L.jax.vmap(L.jax.grad(sin_vjp(L, log)))(XS),
    "vjp grad(vmap)": lambda L, log: L.jax.grad(
        lambda x: L.jax.vmap(sin_vjp(L, log))(x).sum())(XS),
    "vjp jacrev": lambda L, log: L.jax.jacrev(sin_vjp(L, log))(XS),
    "vjp forward mode fails": _forward_of_vjp,
    "vjp nondiff_argnums": vjp_nondiff,
    "vjp symbolic_zeros": vjp_symbolic,
    "vjp python control flow": vjp_python_control,
    "vjp clip_gradient": clip_gradient,
    "vjp inside jvp": vjp_inside_jvp,
}


def _values(x: Any) -> Any:
    if isinstance(x, str):
        return x
    return np.asarray(x)


def _run(L: SimpleNamespace, name: str) -> tuple[Log, list[Any]]:
    log: Log = []
    out = PROGRAMS[name](L, log)
    return log, [_values(v) for v in L.jax.tree_util.tree_leaves(out)]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_call_log_and_values_match_jax(name: str) -> None:
    theirs_log, theirs = _run(JAX, name)
    ours_log, ours = _run(SPEC, name)
    assert ours_log == theirs_log
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(b, str):
            if "{" in b:  # a jaxpr: compared as text
                assert a == b, f"spec:\n{a}\njax:\n{b}"
            else:
                assert a == b
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)
