# mypy: allow-untyped-defs, allow-untyped-calls
# (the programs below are user code, written once for JAX and for spec)
"""custom_jvp / custom_vjp: values, jaxprs and errors compared with real JAX.

Each program is written once against a namespace ``L`` (``L.jax``, ``L.jnp``,
``L.custom_jvp``, ...) and run with real JAX and with spec; the results
(values, dtypes, jaxpr text, exception classes and messages) must agree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
import spec._src.lax.custom  # registers the primitives
from spec._src.api import custom_derivatives as scd
from tests.support.pair import error_of

JAX = SimpleNamespace(jax=jax, jnp=jnp, custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp,
                      SymbolicZero=jax.custom_derivatives.SymbolicZero,
                      CustomVJPPrimal=jax.custom_derivatives.CustomVJPPrimal,
                      zero_from_primal=jax.custom_derivatives.zero_from_primal,
                      direct=jax.config.jax_use_direct_linearize)
SPEC = SimpleNamespace(jax=spec, jnp=snp, custom_jvp=scd.custom_jvp, custom_vjp=scd.custom_vjp,
                       SymbolicZero=scd.SymbolicZero, CustomVJPPrimal=scd.CustomVJPPrimal,
                       zero_from_primal=scd.zero_from_primal)

Program = Callable[[SimpleNamespace], Any]


def _leaves(x: Any) -> list[Any]:
    return jax.tree_util.tree_leaves(x)


def assert_same_values(ours: Any, theirs: Any, rtol: float = 2e-6) -> None:
    a, b = spec.tree_util.tree_leaves(ours), _leaves(theirs)
    assert len(a) == len(b), (ours, theirs)
    for x, y in zip(a, b):
        xv, yv = np.asarray(x), np.asarray(y)
        assert xv.dtype == yv.dtype, (ours, theirs)
        assert xv.shape == yv.shape, (ours, theirs)
        np.testing.assert_allclose(xv, yv, rtol=rtol, atol=1e-7)
        # Weak types are compared on both linearize paths, zeros included.
        assert bool(getattr(x, "weak_type", False)) == bool(getattr(y, "weak_type", False))


def both(prog: Program) -> tuple[Any, Any]:
    return prog(SPEC), prog(JAX)


def check(prog: Program, rtol: float = 2e-6) -> None:
    ours, theirs = both(prog)
    assert_same_values(ours, theirs, rtol)


def check_text(prog: Program) -> None:
    ours, theirs = both(prog)
    assert str(ours) == str(theirs), f"spec:\n{ours}\njax:\n{theirs}"


def check_raises(prog: Program, exact_message: bool = True) -> None:
    ours = error_of(lambda: prog(SPEC))
    theirs = error_of(lambda: prog(JAX))
    assert isinstance(ours, type(theirs).__mro__[1]) or type(ours).__name__ == \
        type(theirs).__name__, (ours, theirs)
    for base in (TypeError, ValueError, AttributeError):
        assert isinstance(ours, base) == isinstance(theirs, base), (ours, theirs)
    if exact_message:
        assert str(ours).split("\nSee ")[0] == str(theirs).split("\n----")[0].split(
            "\nSee ")[0], f"spec: {ours}\njax: {theirs}"


@pytest.fixture(params=[True, False], ids=["direct", "legacy"])
def linearize_path(request: pytest.FixtureRequest) -> Iterator[bool]:
    jax.config.update("jax_use_direct_linearize", request.param)
    try:
        with spec.config.use_direct_linearize(request.param):
            yield request.param
    finally:
        jax.config.update("jax_use_direct_linearize", True)


# ------------------------------------------------------------------ programs


def sin_times(L: SimpleNamespace) -> Any:
    @L.custom_jvp
    def f(x, y):
        return L.jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        return f(x, y), L.jnp.cos(x) * x_dot * y + L.jnp.sin(x) * y_dot

    return f


def sin_times_vjp(L: SimpleNamespace) -> Any:
    @L.custom_vjp
    def g(x, y):
        return L.jnp.sin(x) * y

    def g_fwd(x, y):
        return g(x, y), (L.jnp.cos(x), L.jnp.sin(x), y)

    def g_bwd(res, ct):
        cos_x, sin_x, y = res
        return (cos_x * ct * y, sin_x * ct)

    g.defvjp(g_fwd, g_bwd)
    return g


def log1pexp(L: SimpleNamespace) -> Any:
    @L.custom_jvp
    def log1pexp(x):
        return L.jnp.log(1. + L.jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = log1pexp(x)
        return ans, (1 - 1 / (1 + L.jnp.exp(x))) * x_dot

    return log1pexp


def f_on_rplus(L: SimpleNamespace) -> Any:
    @L.custom_vjp
    def f(x):
        return x / (1 + L.jnp.sqrt(x))

    f.defvjp(lambda x: (f(x), x),
             lambda x, g: (((L.jnp.sqrt(x) + 2) / (2 * (L.jnp.sqrt(x) + 1) ** 2)) * g,))
    return f


def clip_gradient(L: SimpleNamespace) -> Any:
    @L.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def fwd(lo, hi, x):
        return x, (lo, hi)

    def bwd(res, g):
        lo, hi = res
        return (None, None, L.jnp.clip(g, lo, hi))

    clip_gradient.defvjp(fwd, bwd)
    return clip_gradient


def safe_norm(L: SimpleNamespace) -> Any:
    @L.custom_jvp
    def norm(x):
        return L.jnp.sqrt(L.jnp.sum(x * x))

    @norm.defjvp
    def norm_jvp(primals, tangents):
        x, = primals
        t, = tangents
        ans = norm(x)
        safe = L.jnp.where(ans == 0, 1.0, ans)
        return ans, L.jnp.where(ans == 0, 0.0, L.jnp.sum(x * t) / safe)

    return norm


# --------------------------------------------------------------- the docs


def test_sin_times_values() -> None:
    check(lambda L: sin_times(L)(2., 3.))
    check(lambda L: L.jax.grad(sin_times(L), (0, 1))(2., 3.))
    check(lambda L: L.jax.jvp(sin_times(L), (2., 3.), (1., 0.5)))
    check(lambda L: L.jax.value_and_grad(sin_times(L))(np.float32(1.0), np.float32(2.0)))
    check(lambda L: L.jax.grad(sin_times_vjp(L), (0, 1))(2., 3.))
    check(lambda L: L.jax.value_and_grad(sin_times_vjp(L))(np.float32(1.0), np.float32(2.0)))
    check(lambda L: L.jax.vjp(sin_times_vjp(L), 2., 3.)[1](1.0))


def test_log1pexp_stable_gradient(linearize_path: bool) -> None:
    check(lambda L: L.jax.grad(log1pexp(L))(100.))
    check(lambda L: L.jax.jit(log1pexp(L))(3.))
    check(lambda L: L.jax.jit(L.jax.grad(log1pexp(L)))(3.))
    check(lambda L: L.jax.grad(L.jax.grad(log1pexp(L)))(2.))
    check(lambda L: L.jax.jvp(log1pexp(L), (3.,), (1.,)))
    # without the rule the gradient is nan: the rule is what runs
    assert np.isnan(np.asarray(spec.grad(lambda x: snp.log(1. + snp.exp(x)))(100.)))


def test_f_on_rplus_convention(linearize_path: bool) -> None:
    check(lambda L: L.jax.grad(f_on_rplus(L))(0.))
    check(lambda L: L.jax.grad(f_on_rplus(L))(4.))
    check(lambda L: L.jax.jit(L.jax.grad(f_on_rplus(L)))(4.))


def test_clip_gradient_none_cotangents(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace) -> Any:
        clip = clip_gradient(L)

        def clip_sin(x):
            return L.jnp.sin(clip(-0.75, 0.75, x))

        t = L.jnp.linspace(0., 10., 7)
        return [L.jax.grad(clip_sin)(x) for x in t] + [clip_sin(t)]

    check(prog)
    check(lambda L: L.jax.grad(lambda lo, x: clip_gradient(L)(lo, 0.5, x) * 3., (0, 1))(
        -0.5, 2.))


def test_safe_norm(linearize_path: bool) -> None:
    x = np.array([3., 4.], np.float32)
    check(lambda L: L.jax.grad(safe_norm(L))(x))
    check(lambda L: L.jax.grad(safe_norm(L))(np.zeros(2, np.float32)))
    check(lambda L: L.jax.jit(L.jax.grad(safe_norm(L)))(x))
    check(lambda L: L.jax.jvp(safe_norm(L), (x,), (np.ones(2, np.float32),)))


# ------------------------------------------------------- transformations


def test_grad_of_grad_custom_jvp(linearize_path: bool) -> None:
    check(lambda L: L.jax.grad(L.jax.grad(sin_times(L)))(2., 3.))
    check(lambda L: L.jax.grad(L.jax.grad(sin_times(L), 1), 0)(2., 3.))
    check(lambda L: L.jax.jit(L.jax.grad(L.jax.grad(sin_times(L))))(0.5, 3.))
    check(lambda L: L.jax.hessian(lambda x: sin_times(L)(x, 2.) ** 2)(0.7))


def test_jit_inside_and_outside(linearize_path: bool) -> None:
    def inside(L: SimpleNamespace) -> Any:
        f, g = sin_times(L), sin_times_vjp(L)

        @L.jax.jit
        def h(x, y):
            return f(x, y) * g(y, x)

        return L.jax.grad(h, (0, 1))(1.5, 0.5)

    check(inside)
    check(lambda L: L.jax.grad(L.jax.jit(L.jax.jit(sin_times_vjp(L))))(2., 3.))
    check(lambda L: L.jax.jit(L.jax.grad(sin_times_vjp(L)))(2., 3.))
    check(lambda L: L.jax.jit(sin_times_vjp(L))(2., 3.))


def test_linearize_paths_bitwise_equal() -> None:
    for make in (sin_times, sin_times_vjp):
        f = make(SPEC)
        with spec.config.use_direct_linearize(True):
            direct = spec.grad(f, (0, 1))(np.float32(0.3), np.float32(1.7))
        with spec.config.use_direct_linearize(False):
            legacy = spec.grad(f, (0, 1))(np.float32(0.3), np.float32(1.7))
        for a, b in zip(direct, legacy):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_linearize_and_vjp_apis(linearize_path: bool) -> None:
    check(lambda L: L.jax.linearize(sin_times(L), 2., 3.)[1](1., 1.))
    check(lambda L: L.jax.vjp(sin_times(L), 2., 3.)[1](1.))
    check(lambda L: L.jax.vjp(clip_gradient(L), 0., 1., 2.)[1](5.))


def test_pytrees_in_and_out(linearize_path: bool) -> None:
    def prog_jvp(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def f(d):
            return {"s": d["a"] * d["b"], "t": (d["a"],)}

        @f.defjvp
        def f_jvp(p, t):
            (d,), (dt,) = p, t
            return f(d), {"s": dt["a"] * d["b"] + d["a"] * dt["b"], "t": (2 * dt["a"],)}

        return L.jax.grad(lambda d: f(d)["s"] + f(d)["t"][0])({"a": 2., "b": 5.})

    def prog_vjp(L: SimpleNamespace) -> Any:
        @L.custom_vjp
        def f(x, d):
            return [x * d["k"], d["k"]]

        f.defvjp(lambda x, d: (f(x, d), (x, d["k"])),
                 lambda r, ct: (ct[0] * r[1], {"k": ct[0] * r[0] + ct[1] * 10.}))
        return L.jax.grad(lambda x, d: sum(f(x, d)), (0, 1))(2., {"k": 3.})

    check(prog_jvp)
    check(prog_vjp)


def test_defjvps_and_kwargs(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def f(x, y=2.0):
            return L.jnp.sin(x) * y

        f.defjvps(lambda x_dot, ans, x, y: L.jnp.cos(x) * x_dot * y,
                  lambda y_dot, ans, x, y: L.jnp.sin(x) * y_dot)
        return (L.jax.grad(f, (0, 1))(1., 2.), L.jax.grad(lambda x: f(x))(1.),
                L.jax.grad(lambda x: f(x, y=3.))(1.), L.jax.jvp(f, (1., 2.), (1., 1.)))

    check(prog)

    def with_none(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def f(x, y):
            return x * y

        f.defjvps(None, lambda y_dot, ans, x, y: x * y_dot)
        return L.jax.grad(f, (0, 1))(3., 4.)

    check(with_none)


def test_custom_jvp_linear_rule_transposes(linearize_path: bool) -> None:
    """A rule that applies the function to tangents: transposing it
    transposes the function's body."""

    def prog(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def double(x):
            return 2. * x

        double.defjvp(lambda p, t: (double(p[0]), double(t[0])))
        return L.jax.grad(lambda x: double(double(x)) * x)(3.)

    check(prog)


def test_closure_over_jit_tracer(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace, vjp: bool) -> Any:
        def make(y):
            if vjp:
                @L.custom_vjp
                def fv(x):
                    return L.jnp.sin(x) * y

                fv.defvjp(lambda x: (fv(x), x), lambda x, g: (L.jnp.cos(x) * g * y,))
                return fv

            @L.custom_jvp
            def f(x):
                return L.jnp.sin(x) * y

            f.defjvp(lambda p, t: (f(p[0]), L.jnp.cos(p[0]) * t[0] * y))
            return f

        def outer(x: Any, y: Any) -> Any:
            return make(y)(x)

        return (L.jax.jit(L.jax.grad(outer))(2., 3.), L.jax.jit(outer)(2., 3.),
                str(L.jax.make_jaxpr(outer)(2., 3.)), str(L.jax.make_jaxpr(
                    L.jax.grad(outer))(2., 3.)))

    for vjp in (False, True):
        ours, theirs = prog(SPEC, vjp), prog(JAX, vjp)
        assert_same_values(ours[:2], theirs[:2])
        assert ours[2:] == theirs[2:]


def test_closure_over_concrete_array() -> None:
    def prog(L: SimpleNamespace) -> Any:
        c = L.jnp.arange(3.)

        @L.custom_jvp
        def f(x):
            return L.jnp.sin(x) * c

        f.defjvp(lambda p, t: (f(p[0]), L.jnp.cos(p[0]) * t[0] * c))
        return f

    check_text(lambda L: L.jax.make_jaxpr(prog(L))(np.ones(3, np.float32)))
    check(lambda L: L.jax.jacfwd(prog(L))(np.ones(3, np.float32)))


# ---------------------------------------------------------------- nondiff


def test_nondiff_argnums_function_argument(linearize_path: bool) -> None:
    def jvp_prog(L: SimpleNamespace) -> Any:
        @functools.partial(L.custom_jvp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)

        @app.defjvp
        def app_jvp(f, primals, tangents):
            x, = primals
            x_dot, = tangents
            return f(x), 2. * x_dot

        return L.jax.grad(lambda x: app(L.jnp.sin, x))(1.), L.jax.jit(
            lambda x: app(L.jnp.sin, x))(1.)

    def vjp_prog(L: SimpleNamespace) -> Any:
        @functools.partial(L.custom_vjp, nondiff_argnums=(0,))
        def app(f, x):
            return f(x)

        app.defvjp(lambda f, x: (f(x), x), lambda f, x, g: (g * f(x),))
        return L.jax.grad(lambda x: app(L.jnp.cos, x))(1.)

    check(jvp_prog)
    check(vjp_prog)


def test_nondiff_argnums_array_and_argnames(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace) -> Any:
        @functools.partial(L.custom_jvp, nondiff_argnames=("n",))
        def g(n, x):
            return x * n

        @g.defjvp
        def g_jvp(n, p, t):
            return g(n, p[0]), t[0] * n

        return (L.jax.grad(g, 1)(2.0, 3.0), L.jax.grad(g, 0)(2.0, 3.0),
                L.jax.jit(L.jax.grad(g, 1))(2.0, 3.0))

    check(prog)
    check_text(lambda L: L.jax.make_jaxpr(prog_g(L))(2.0, 3.0))
    check_text(lambda L: L.jax.make_jaxpr(L.jax.grad(prog_g(L), 1))(2.0, 3.0))


def prog_g(L: SimpleNamespace) -> Any:
    @functools.partial(L.custom_jvp, nondiff_argnums=(0,))
    def g(n, x):
        return x * n

    @g.defjvp
    def g_jvp(n, p, t):
        return g(n, p[0]), t[0] * n

    return g


def test_custom_vjp_nondiff_tracer_rejected() -> None:
    def prog(L: SimpleNamespace) -> Any:
        @functools.partial(L.custom_vjp, nondiff_argnums=(0,))
        def f(n, x):
            return x * n

        f.defvjp(lambda n, x: (f(n, x), None), lambda n, r, g: (g * n,))
        return L.jax.jit(f)(2., 3.)

    check_raises(prog)


# ---------------------------------------------------------- symbolic zeros


def test_custom_jvp_symbolic_zeros(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace) -> Any:
        seen: list[Any] = []

        @L.custom_jvp
        def f(x, y):
            return x * y

        @functools.partial(f.defjvp, symbolic_zeros=True)
        def f_jvp(primals, tangents):
            x, y = primals
            xd, yd = tangents
            seen.append((type(xd) is L.SymbolicZero, type(yd) is L.SymbolicZero))
            out = f(x, y)
            t = L.zero_from_primal(out, symbolic_zeros=True)
            if type(xd) is not L.SymbolicZero:
                t = xd * y
            if type(yd) is not L.SymbolicZero:
                t = x * yd if type(t) is L.SymbolicZero else t + x * yd
            return out, t

        vals = (L.jax.grad(f)(2., 3.), L.jax.grad(f, 1)(2., 3.),
                L.jax.jvp(lambda x: f(x, 3.), (2.,), (1.,)), L.jax.jvp(f, (2., 3.), (1., 1.)))
        return vals, seen

    (ours, seen_ours), (theirs, seen_theirs) = both(prog)
    assert_same_values(ours, theirs)
    assert seen_ours == seen_theirs


def test_custom_jvp_symbolic_zero_output(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def f(x):
            return L.jnp.floor(x) * 2., x * 3.

        @functools.partial(f.defjvp, symbolic_zeros=True)
        def f_jvp(p, t):
            out = f(p[0])
            return out, (L.SymbolicZero.from_primal_value(out[0]), 3. * t[0])

        return L.jax.grad(lambda x: f(x)[0] + f(x)[1])(1.5), L.jax.jvp(f, (1.5,), (1.,))

    check(prog)


def test_custom_vjp_symbolic_zeros(linearize_path: bool) -> None:
    def prog(L: SimpleNamespace) -> Any:
        seen: list[Any] = []

        @L.custom_vjp
        def f(x, y):
            return x * y, x + y

        def fwd(x, y):
            seen.append((type(x).__name__, x.perturbed, y.perturbed))
            return f(x.value, y.value), (x.value, y.value)

        def bwd(res, cts):
            x, y = res
            c0, c1 = cts
            seen.append(("bwd", type(c0) is L.SymbolicZero, type(c1) is L.SymbolicZero))
            c0 = 0. if type(c0) is L.SymbolicZero else c0
            c1 = 0. if type(c1) is L.SymbolicZero else c1
            return c0 * y + c1, c0 * x + c1

        f.defvjp(fwd, bwd, symbolic_zeros=True)
        return (L.jax.grad(lambda x: f(x, 3.)[0])(2.),
                L.jax.grad(lambda x, y: f(x, y)[1], (0, 1))(2., 3.)), seen

    (ours, seen_ours), (theirs, seen_theirs) = both(prog)
    assert_same_values(ours, theirs)
    assert seen_ours == seen_theirs


def test_optimize_remat_accepted() -> None:
    def prog(L: SimpleNamespace) -> Any:
        @L.custom_vjp
        def f(x):
            return L.jnp.sin(x)

        f.defvjp(lambda x: (f(x), L.jnp.cos(x)), lambda c, g: (c * g,), optimize_remat=True)
        return L.jax.grad(f)(0.5)

    check(prog)


# ------------------------------------------------------------------ jaxprs


def test_jaxpr_text_custom_jvp() -> None:
    check_text(lambda L: L.jax.make_jaxpr(sin_times(L))(2., 3.))
    check_text(lambda L: L.jax.make_jaxpr(L.jax.grad(sin_times(L)))(2., 3.))
    check_text(lambda L: L.jax.make_jaxpr(
        lambda x, t: L.jax.jvp(sin_times(L), (x, 3.), (t, 0.)))(2., 1.))
    check_text(lambda L: L.jax.make_jaxpr(L.jax.jit(sin_times(L)))(2., 3.))
    check_text(lambda L: L.jax.make_jaxpr(log1pexp(L))(np.ones(3, np.float32)))


def test_jaxpr_text_custom_vjp() -> None:
    check_text(lambda L: L.jax.make_jaxpr(sin_times_vjp(L))(2., 3.))
    check_text(lambda L: L.jax.make_jaxpr(L.jax.grad(sin_times_vjp(L)))(2., 3.))
    check_text(lambda L: L.jax.make_jaxpr(
        lambda x: L.jax.vjp(sin_times_vjp(L), x, 3.)[1](1.0))(2.))
    check_text(lambda L: L.jax.make_jaxpr(L.jax.grad(f_on_rplus(L)))(4.))


def test_jaxpr_text_defjvps() -> None:
    def h(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def h(x):
            return 2 * x

        h.defjvps(lambda t, ans, x: 2 * t)
        return h

    check_text(lambda L: L.jax.make_jaxpr(lambda x, t: L.jax.jvp(h(L), (x,), (t,)))(1., 1.))
    check_text(lambda L: L.jax.make_jaxpr(L.jax.grad(h(L)))(1.))


# ------------------------------------------------------------------ errors


def test_jvp_of_custom_vjp_raises() -> None:
    check_raises(lambda L: L.jax.jvp(sin_times_vjp(L), (2., 3.), (1., 0.)))
    check_raises(lambda L: L.jax.jvp(L.jax.jit(sin_times_vjp(L)), (2., 3.), (1., 0.)))
    check_raises(lambda L: L.jax.jacfwd(sin_times_vjp(L))(2., 3.))


def test_no_rule_defined() -> None:
    check_raises(lambda L: L.jax.jit(L.custom_jvp(lambda x: x))(1.), exact_message=False)
    check_raises(lambda L: L.jax.jit(L.custom_vjp(lambda x: x))(1.), exact_message=False)

    def named(L: SimpleNamespace) -> Any:
        def fn(x):
            return x
        return L.custom_jvp(fn)(1.)

    check_raises(named)


def jvp_rule_returning(out: Callable[[SimpleNamespace, Any, Any], Any]) -> Program:
    def prog(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def f(x):
            return L.jnp.sin(x)

        @f.defjvp
        def f_jvp(p, t):
            return out(L, p[0], t[0])

        # under jit JAX traces f before running the rule and so checks the
        # rule's primal output against f's (spec always does)
        return L.jax.jvp(L.jax.jit(f), (np.float32(1.),), (np.float32(1.),))

    return prog


def test_jvp_rule_output_checks() -> None:
    # tangent of the wrong shape / dtype
    check_raises(jvp_rule_returning(lambda L, x, t: (L.jnp.sin(x), L.jnp.ones(3))))
    check_raises(jvp_rule_returning(
        lambda L, x, t: (L.jnp.sin(x), t.astype(L.jnp.int32))))
    # primal of the wrong shape
    check_raises(jvp_rule_returning(lambda L, x, t: (L.jnp.ones(2), t)))
    # not a pair
    check_raises(jvp_rule_returning(lambda L, x, t: L.jnp.sin(x)), exact_message=False)
    # primal/tangent tree mismatch
    check_raises(jvp_rule_returning(lambda L, x, t: (L.jnp.sin(x), (t, t))))
    # primal tree differs from the function's
    check_raises(jvp_rule_returning(lambda L, x, t: ((x, x), (t, t))))


def test_jvp_rule_output_checks_multiple() -> None:
    def prog(L: SimpleNamespace) -> Any:
        @L.custom_jvp
        def f(x):
            return x, 2 * x

        f.defjvp(lambda p, t: (f(p[0]), (t[0], L.jnp.ones(2))))
        return L.jax.jvp(f, (np.float32(1.),), (np.float32(1.),))

    check_raises(prog)


def vjp_with_bwd(bwd: Callable[[SimpleNamespace, Any, Any], Any]) -> Program:
    def prog(L: SimpleNamespace) -> Any:
        @L.custom_vjp
        def f(x, y):
            return x * y

        f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: bwd(L, r, g))
        return L.jax.grad(f)(np.float32(2.), np.float32(3.))

    return prog


def test_bwd_output_checks() -> None:
    # wrong number of cotangents
    check_raises(vjp_with_bwd(lambda L, r, g: (g * r[1],)))
    # not a tuple
    check_raises(vjp_with_bwd(lambda L, r, g: g * r[1]))
    # wrong shape: ValueError (the message cites the source line: compare the class)
    check_raises(vjp_with_bwd(lambda L, r, g: (L.jnp.ones(3), g)), exact_message=False)
    # a list of the right length is accepted
    check(vjp_with_bwd(lambda L, r, g: [g * r[1], None]))


def test_fwd_output_checks() -> None:
    def prog(fwd: Callable[[SimpleNamespace, Any], Any]) -> Program:
        def run(L: SimpleNamespace) -> Any:
            @L.custom_vjp
            def f(x):
                return L.jnp.sin(x)

            f.defvjp(lambda x: fwd(L, x), lambda r, g: (g,))
            # under jit JAX traces the function before running fwd, so it checks
            # fwd's output against it (spec always does)
            return L.jax.grad(L.jax.jit(f))(np.float32(2.))

        return run

    check_raises(prog(lambda L, x: L.jnp.sin(x)), exact_message=False)
    check_raises(prog(lambda L, x: (L.jnp.ones(3), None)))
    check_raises(prog(lambda L, x: ((x, x), None)))


def test_differentiating_closed_over_value_rejected() -> None:
    def prog(L: SimpleNamespace) -> Any:
        def outer(y):
            @L.custom_jvp
            def f(x):
                return L.jnp.sin(x) * y

            f.defjvp(lambda p, t: (f(p[0]), L.jnp.cos(p[0]) * t[0] * y))
            return f(2.0)

        return L.jax.jvp(outer, (3.,), (1.,))

    check_raises(prog, exact_message=False)


def test_primitive_params_and_registry() -> None:
    from spec._src.core.registry import REGISTRY

    f = sin_times(SPEC)
    eqn = spec.make_jaxpr(f)(2., 3.).eqns[0]
    assert sorted(eqn.params) == sorted(
        jax.make_jaxpr(sin_times(JAX))(2., 3.).eqns[0].params)
    g = sin_times_vjp(SPEC)
    eqn = spec.make_jaxpr(g)(2., 3.).eqns[0]
    assert sorted(eqn.params) == sorted(
        jax.make_jaxpr(sin_times_vjp(JAX))(2., 3.).eqns[0].params)
    for name in ("custom_jvp_call", "custom_vjp_call", "custom_lin"):
        assert name in REGISTRY
