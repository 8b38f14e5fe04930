"""spec.custom_gradient and spec.closure_convert against JAX's, run live: gradients (plain,
jitted, vmapped) through a function that returns its own VJP, and values, gradients and
hoisted-value counts of closure-converted functions, under and outside transformations."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import spec

X = np.linspace(0.1, 1.0, 4).astype(np.float32)
Y = np.float32(1.5)


def _gradients(lib: Any) -> list[np.ndarray]:
    jnp = lib.numpy

    @lib.custom_gradient
    def f(x: Any, y: Any) -> Any:
        s = jnp.sin(x) * y
        # Deliberately not the true derivative in x, so the custom rule is what is seen.
        return s, lambda g: (g * jnp.cos(x) * y * 2.0, jnp.sum(g * s))

    def loss(x: Any, y: Any) -> Any:
        return jnp.sum(f(x, y) ** 2)

    @lib.custom_derivatives.custom_gradient
    def cube(x: Any) -> Any:
        return x ** 3, lambda g: g * 7.0

    both = lib.grad(loss, argnums=(0, 1))
    return [np.asarray(v) for v in (
        *both(X, Y), *lib.jit(both)(X, Y),
        lib.vmap(lib.grad(lambda x: loss(x, Y)))(np.stack([X, X + 1])),
        lib.grad(cube)(2.0), cube(2.0))]


def test_custom_gradient_matches_jax() -> None:
    ours, theirs = _gradients(spec), _gradients(jax)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _converted(lib: Any) -> list[Any]:
    jnp = lib.numpy

    def outer(a: Any) -> tuple[Any, int]:
        def fn(z: Any) -> Any:
            return jnp.sum(z * a + 3)
        converted, hoisted = lib.closure_convert(fn, X)
        return converted(X, *hoisted), len(hoisted)

    value, count_outside = outer(np.float32(2.0))
    counts_inside: list[int] = []

    def under_grad(a: Any) -> Any:
        out, count = outer(a)
        counts_inside.append(count)
        return out

    gradient = lib.grad(under_grad)(np.float32(2.0))
    return [np.asarray(value), np.asarray(gradient), count_outside, counts_inside]


def test_closure_convert_matches_jax() -> None:
    ours, theirs = _converted(spec), _converted(jax)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    # Only values that can carry a tangent (tracers of inexact type) are hoisted.
    assert ours[2:] == theirs[2:] == [0, [1]]


def test_closure_convert_refuses_a_different_argument_structure() -> None:
    messages = []
    for lib in (spec, jax):
        converted, hoisted = lib.closure_convert(lambda p: p[0] * 2.0, (X, X))
        with pytest.raises(TypeError) as info:
            converted([X, X], *hoisted)
        messages.append(str(info.value).split(". Expected")[0])
    assert messages[0] == messages[1]
