"""``remat_opt``, the forward pass of a custom_vjp function with ``optimize_remat=True``,
against real JAX run live in this process: jaxpr text (the fwd staged as one equation, its
residual that is an argument passed through; under checkpoint, dead-code elimination
turning it into an ``eval_jaxpr`` of the function or a fwd that keeps only the residuals;
its JVP and batching), values and gradients, vmap against a loop, and the errors of
higher-order differentiation; the lowering compiled by XLA."""

from __future__ import annotations

from typing import Any

import jax
import jax.custom_derivatives  # noqa: F401 (the module the programs reach as j.custom_derivatives)
import numpy as np
import pytest

import spec
import spec.custom_derivatives
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled
from tests.support.pair import both, class_and_message, same

X, Y = np.float32(0.5), np.float32(2.0)
XS = np.linspace(-1, 2, 4, dtype=np.float32)
YS = np.linspace(0.5, 1.5, 4, dtype=np.float32)


def _sin_times(j: Any, jnp: Any, fwd_calls_f: bool) -> Any:
    """``sin(x) * y`` whose fwd keeps ``cos(x)`` (computed) and ``y`` (an argument) as
    residuals; its fwd either calls the function or computes the output itself."""
    @j.custom_vjp
    def f(x: Any, y: Any) -> Any:
        return jnp.sin(x) * y

    def fwd(x: Any, y: Any) -> Any:
        out = f(x, y) if fwd_calls_f else jnp.sin(x) * y
        return out, (jnp.cos(x), y)

    def bwd(res: Any, g: Any) -> Any:
        c, y = res
        return c * g * y, jnp.sqrt(1 - c * c) * g

    f.defvjp(fwd, bwd, optimize_remat=True)
    return f


def _text(fn: Any) -> str:
    return same(lambda j, jnp: str(fn(j, jnp)))


@pytest.mark.parametrize("fwd_calls_f", [True, False])
def test_jaxpr_text_matches_jax(fwd_calls_f: bool) -> None:
    def f(j: Any, jnp: Any) -> Any:
        return _sin_times(j, jnp, fwd_calls_f)

    text = _text(lambda j, jnp: j.make_jaxpr(j.grad(f(j, jnp)))(X, Y))
    assert "remat_opt[" in text and "num_res=1" in text
    _text(lambda j, jnp: j.make_jaxpr(lambda x, y: j.vjp(f(j, jnp), x, y))(X, Y))
    _text(lambda j, jnp: j.make_jaxpr(j.jit(lambda x, y: j.vjp(f(j, jnp), x, y)[0]))(X, Y))
    # checkpoint: the primal pass runs the function, the backward pass a pruned fwd
    text = _text(lambda j, jnp: j.make_jaxpr(j.grad(j.checkpoint(f(j, jnp))))(X, Y))
    assert "eval_jaxpr[" in text and "remat_opt[" in text


def test_jvp_and_batched_jaxpr_text_match_jax() -> None:
    def fwd_value(j: Any, jnp: Any) -> Any:
        f = _sin_times(j, jnp, False)
        return lambda x: j.jvp(lambda x: j.vjp(f, x, Y)[0], (x,), (x,))

    _text(lambda j, jnp: j.make_jaxpr(fwd_value(j, jnp))(X))
    _text(lambda j, jnp: j.make_jaxpr(j.vmap(fwd_value(j, jnp)))(XS))
    _text(lambda j, jnp: j.make_jaxpr(
        j.vmap(lambda x, y: j.vjp(_sin_times(j, jnp, True), x, y)[0]))(XS, YS))
    # the batched equation's dead-code elimination traces the batched function
    _text(lambda j, jnp: j.make_jaxpr(j.grad(j.checkpoint(
        lambda x, y: jnp.sum(j.vmap(_sin_times(j, jnp, True))(x, y)))))(XS, YS))


def _close(ours: Any, theirs: Any) -> None:
    for o, t in zip(spec.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=2e-6)


@pytest.mark.parametrize("fwd_calls_f", [True, False])
def test_values_and_grads_match_jax(fwd_calls_f: bool) -> None:
    def run(j: Any, jnp: Any) -> Any:
        f = _sin_times(j, jnp, fwd_calls_f)
        grad = j.grad(f, argnums=(0, 1))
        return (f(X, Y), grad(X, Y), j.jit(grad)(X, Y), j.grad(j.checkpoint(f), (0, 1))(X, Y),
                j.vjp(f, X, Y)[1](np.float32(3)))

    _close(*both(run))


def test_grads_are_the_rule_and_the_derivative() -> None:
    f = _sin_times(spec, spec.numpy, False)
    dx, dy = spec.grad(f, argnums=(0, 1))(np.float64(X), np.float64(Y))
    np.testing.assert_allclose([float(dx), float(dy)],
                               [np.cos(0.5) * 2.0, np.sin(0.5)], rtol=1e-6)


def test_forward_mode_through_the_fwd_matches_jax() -> None:
    def run(j: Any, jnp: Any) -> Any:
        f = _sin_times(j, jnp, False)
        return j.jvp(lambda x: j.vjp(f, x, Y)[0], (X,), (np.float32(1.5),))

    _close(*both(run))


def test_vmap_matches_a_loop() -> None:
    f = _sin_times(spec, spec.numpy, False)
    grad = spec.grad(f, argnums=(0, 1))
    batched = spec.vmap(grad)(XS, YS)
    looped = [grad(x, y) for x, y in zip(XS, YS)]
    for k in range(2):
        np.testing.assert_allclose(np.asarray(batched[k]),
                                   np.array([float(g[k]) for g in looped]), rtol=1e-6)
    fwd_outs = spec.vmap(lambda x: spec.vjp(f, x, Y)[0], (0,))(XS)
    np.testing.assert_allclose(np.asarray(fwd_outs), [float(f(x, Y)) for x in XS], rtol=1e-6)


def test_higher_order_errors_match_jax() -> None:
    def grad_of_grad(j: Any, jnp: Any) -> Any:
        f = _sin_times(j, jnp, False)
        return class_and_message(lambda: j.grad(lambda x: j.grad(f)(x, Y))(X))

    same(grad_of_grad)


def test_exported_from_custom_derivatives() -> None:
    assert spec.custom_derivatives.remat_opt_p.name == jax.custom_derivatives.remat_opt_p.name


def test_lowering_compiles_and_matches_jax() -> None:
    f = _sin_times(spec, spec.numpy, True)
    ours, compiled, text = spec_and_compiled(spec.grad(f, argnums=(0, 1)), X, Y)
    assert_bitwise(ours, compiled)
    f_jax = _sin_times(jax, jax.numpy, True)
    theirs = jax.jit(jax.grad(f_jax, argnums=(0, 1))).lower(X, Y).as_text()
    assert canonical(text) == canonical(theirs)
