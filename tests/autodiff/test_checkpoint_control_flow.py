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
from tests.support.text_programs import close_text


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


# ------------------------------------ values of grad and jvp, as program texts


@pytest.mark.parametrize("src", [
    "h = jax.checkpoint(lambda v: lax.scan(lambda c, a: (jnp.sin(c) * a, c), v, "
    "jnp.arange(3.))[0])\nout = jax.grad(h)(0.5)",
    "h = jax.checkpoint(lambda v: lax.cond(v > 0, jnp.sin, jnp.cos, v))\n"
    "out = (jax.grad(h)(0.5), jax.grad(h)(-0.5))",
    "h = jax.checkpoint(lambda v: lax.while_loop(lambda c: c[0] < 3, "
    "lambda c: (c[0] + 1, jnp.sin(c[1])), (0, v))[1])\nout = jax.jvp(h, (0.5,), (1.0,))",
])
def test_checkpoint_control_flow_values(src: str) -> None:
    close_text(src)
