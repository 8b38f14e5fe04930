"""checkpoint around control flow under autodiff: the jaxpr text of grad /
jvp / linearize equals real JAX's (policy-aware partial evaluation of scan,
cond and while inside a checkpoint), and the values agree."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax


def _programs(jx: Any, np_: Any, lax: Any) -> dict[str, Callable[..., Any]]:
    cp = jx.checkpoint_policies
    w = np_.array([[1., 2.], [3., 4.]]) * 0.1

    def body(c: Any, a: Any) -> Any:
        return np_.sin(w @ c) * a, np_.cos(c).sum()

    return {
        "scan": jx.checkpoint(lambda v: lax.scan(
            lambda c, a: (np_.sin(c) * a, c), v, np_.arange(3.))[0]),
        "cond": jx.checkpoint(lambda v: lax.cond(
            v > 0, lambda a: np_.sin(a), lambda a: np_.cos(a), v)),
        "scan_all": jx.checkpoint(
            lambda v: lax.scan(body, v, np_.arange(3.))[1].sum(),
            policy=cp.everything_saveable),
        "cond_dots": jx.checkpoint(lambda v: lax.cond(
            v.sum() > 0, lambda a: np_.sin(w @ a), lambda a: np_.cos(a) * 2., v).sum(),
            policy=cp.dots_saveable),
        "inner_scan": lambda v: lax.scan(lambda c, a: (jx.checkpoint(
            lambda c: np_.sin(c) * a)(c), None), v, np_.arange(3.))[0].sum(),
    }


def _fwd_programs(jx: Any, np_: Any, lax: Any) -> dict[str, Callable[..., Any]]:
    w = np_.array([[1., 2.], [3., 4.]]) * 0.1
    return {
        "fori": jx.checkpoint(lambda v: lax.fori_loop(0, 3, lambda i, c: np_.sin(c) * 2., v)),
        "while": jx.checkpoint(lambda v: lax.while_loop(
            lambda c: c < 3., lambda c: c + np_.sin(c) + 1., v)),
        "fori_dot": jx.checkpoint(lambda v: lax.fori_loop(
            0, 3, lambda i, c: np_.sin(w @ c), v).sum()),
    }


def _arg(name: str) -> np.ndarray:
    vec = name in ("scan_all", "cond_dots", "inner_scan", "fori_dot")
    return np.array([0.3, -0.7], np.float32) if vec else np.float32(0.5)


GRAD = ["scan", "cond", "scan_all", "cond_dots", "inner_scan"]
FWD = ["fori", "while", "fori_dot"]


@pytest.mark.parametrize("name", GRAD)
def test_grad_of_checkpoint_text_and_value(name: str) -> None:
    f_s = _programs(spec, snp, slax)[name]
    f_j = _programs(jax, jnp, jlax)[name]
    x = _arg(name)
    assert str(spec.make_jaxpr(spec.grad(f_s))(x)) == str(jax.make_jaxpr(jax.grad(f_j))(x))
    np.testing.assert_allclose(np.asarray(spec.grad(f_s)(x)), np.asarray(jax.grad(f_j)(x)),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", FWD)
def test_jvp_and_linearize_of_checkpointed_loop_text(name: str) -> None:
    f_s = _fwd_programs(spec, snp, slax)[name]
    f_j = _fwd_programs(jax, jnp, jlax)[name]
    x = _arg(name)
    jvp_s = spec.make_jaxpr(lambda x, t: spec.jvp(f_s, (x,), (t,)))(x, x)
    jvp_j = jax.make_jaxpr(lambda x, t: jax.jvp(f_j, (x,), (t,)))(x, x)
    assert str(jvp_s) == str(jvp_j)
    lin_s = spec.make_jaxpr(lambda x: spec.linearize(f_s, x)[1](x))(x)
    lin_j = jax.make_jaxpr(lambda x: jax.linearize(f_j, x)[1](x))(x)
    assert str(lin_s) == str(lin_j)
    t_s = spec.linearize(f_s, x)[1](x)
    t_j = jax.linearize(f_j, x)[1](x)
    np.testing.assert_allclose(np.asarray(t_s), np.asarray(t_j), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", GRAD)
def test_grad_of_checkpoint_legacy_linearize_same_values(name: str) -> None:
    f_s = _programs(spec, snp, slax)[name]
    x = _arg(name)
    g = np.asarray(spec.grad(f_s)(x))
    with spec.config.use_direct_linearize(False):
        g2 = np.asarray(spec.grad(f_s)(x))
    np.testing.assert_allclose(g, g2, rtol=1e-6)


# ------------------------------------------------ small differences (issue 3/4)


def _raised(fn: Callable[[], Any]) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e), str(e)
    raise AssertionError("no exception")


def test_jacfwd_of_bool_output_raises_as_jax() -> None:
    got = _raised(lambda: spec.jacfwd(lambda x: x > 0)(1.0))
    want = _raised(lambda: jax.jacfwd(lambda x: x > 0)(1.0))
    assert got == want
    # An integer output still gives zeros (JAX's too).
    f_s = spec.jacfwd(lambda x: (x > 0).astype(snp.int32))(1.0)
    f_j = jax.jacfwd(lambda x: (x > 0).astype(jnp.int32))(1.0)
    assert int(f_s) == int(f_j) and str(f_s.dtype) == str(f_j.dtype)


def test_custom_vjp_bwd_mismatch_message_names_what_differs() -> None:
    def make(jx: Any, np_: Any) -> Any:
        @jx.custom_vjp
        def g(x: Any) -> Any:
            return x * 2
        g.defvjp(lambda x: (x * 2, None), lambda r, ct: (np_.ones(3),))
        return g
    cls_s, msg_s = _raised(lambda: spec.grad(make(spec, snp))(1.0))
    cls_j, msg_j = _raised(lambda: jax.grad(make(jax, jnp))(1.0))
    assert cls_s is cls_j is ValueError
    assert msg_s.endswith(", so the shapes do not match")
    assert msg_j.endswith(", so the shapes do not match")


def test_vmap_ppermute_unbound_axis_as_jax() -> None:
    for fn_s, fn_j in [
        (lambda: spec.vmap(lambda x: slax.ppermute(x, "i", [(0, 1)]))(snp.ones(2)),
         lambda: jax.vmap(lambda x: jlax.ppermute(x, "i", [(0, 1)]))(jnp.ones(2))),
        (lambda: spec.jit(lambda x: slax.ppermute(x, "i", [(0, 1)]))(snp.ones(2)),
         lambda: jax.jit(lambda x: jlax.ppermute(x, "i", [(0, 1)]))(jnp.ones(2))),
    ]:
        assert _raised(fn_s) == _raised(fn_j)


def test_vmap_tracer_repr_as_jax() -> None:
    seen_s: list[str] = []
    seen_j: list[str] = []
    spec.vmap(lambda x: seen_s.append(repr(x)) or x)(snp.ones(2))
    jax.vmap(lambda x: seen_j.append(repr(x)) or x)(jnp.ones(2))
    spec.jacfwd(lambda x: seen_s.append(repr(x)) or x)(snp.ones(2))
    jax.jacfwd(lambda x: seen_j.append(repr(x)) or x)(jnp.ones(2))
    assert seen_s == seen_j


def test_grad_allow_int_passes_integer_untraced() -> None:
    kinds: list[bool] = []

    def f(tracer_type: type, x: Any, n: Any) -> Any:
        kinds.append(isinstance(n, tracer_type))
        return x * n
    from jax.core import Tracer as JTracer
    from spec._src.core.interpreter import Tracer as STracer
    g_s = spec.grad(lambda x, n: f(STracer, x, n), argnums=(0, 1), allow_int=True)(1.0, 3)
    g_j = jax.grad(lambda x, n: f(JTracer, x, n), argnums=(0, 1), allow_int=True)(1.0, 3)
    assert kinds == [False, False]
    assert float(g_s[0]) == float(g_j[0])
    assert np.asarray(g_s[1]).dtype == np.asarray(g_j[1]).dtype
