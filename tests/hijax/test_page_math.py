"""Hijax primitives against mathematics, where JAX 0.12.0.1 cannot be the
oracle: the page's ``batch_dim_rule`` cells (vmap against a Python loop),
the derived and batched rules (derivatives against closed forms computed in
float64 NumPy, and against finite differences in float64), both linearize
paths."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import spec as jax
import spec.numpy as jnp
from spec.experimental.hijax import (
    VJPHiPrimitive,
    linearize_from_jvp,
    vjp_from_jvp,
    vjp_from_lin,
)


@pytest.fixture(params=[True, False], ids=["direct", "legacy"])
def linearize_path(request: Any) -> Iterator[None]:
    with jax.config.use_direct_linearize(request.param):
        yield


class Log1pExp(VJPHiPrimitive):
    def __init__(self, x_aval: Any) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = x_aval
        self.params = {}
        super().__init__()

    def expand(self, x: Any) -> Any:
        return jnp.log(1. + jnp.exp(x))

    def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
        return self(x), x

    def vjp_bwd_retval(self, x: Any, g: Any) -> Any:
        return ((1 - 1 / (1 + jnp.exp(x))) * g,)

    def jvp(self, primals: Any, tangents: Any) -> Any:
        (x,), (x_dot,) = primals, tangents
        return self(x), (1 - 1 / (1 + jnp.exp(x))) * x_dot

    def batch_dim_rule(self, axis_data: Any, in_dims: Any) -> Any:
        return in_dims[0]


def log1pexp(x: Any) -> Any:
    return Log1pExp(jax.typeof(x))(x)


class Mul(VJPHiPrimitive):
    def __init__(self, x_aval: Any, y_aval: Any) -> None:
        self.in_avals = (x_aval, y_aval)
        self.out_aval = x_aval
        self.params = {}
        super().__init__()

    def expand(self, x: Any, y: Any) -> Any:
        return x * y

    def vjp_fwd(self, nzs_in: Any, x: Any, y: Any) -> Any:
        return self(x, y), (x, y)

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        x, y = res
        return (g * y, x * g)

    def jvp(self, primals: Any, tangents: Any) -> Any:
        (x, y), (xd, yd) = primals, tangents
        t = [x * yd if type(yd).__name__ != "Zero" else None,
             xd * y if type(xd).__name__ != "Zero" else None]
        live = [v for v in t if v is not None]
        return self(x, y), live[0] if len(live) == 1 else live[0] + live[1]

    def batch_dim_rule(self, axis_data: Any, in_dims: Any) -> Any:
        x_dim, y_dim = in_dims
        return y_dim if x_dim is None else x_dim


def mul(x: Any, y: Any) -> Any:
    return Mul(jax.typeof(x), jax.typeof(y))(x, y)


class ClipGradient(VJPHiPrimitive):
    def __init__(self, lo_aval: Any, hi_aval: Any, x_aval: Any) -> None:
        self.in_avals = (lo_aval, hi_aval, x_aval)
        self.out_aval = x_aval
        self.params = {}
        super().__init__()

    def expand(self, lo: Any, hi: Any, x: Any) -> Any:
        return x

    def vjp_fwd(self, nzs_in: Any, lo: Any, hi: Any, x: Any) -> Any:
        return self(lo, hi, x), (lo, hi)

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    def batch_dim_rule(self, axis_data: Any, in_dims: Any) -> Any:
        return in_dims[2]


def clip_sin(x: Any) -> Any:
    x = ClipGradient(jax.typeof(-0.75), jax.typeof(0.75), jax.typeof(x))(-0.75, 0.75, x)
    return jnp.sin(x)


def _loop(f: Callable[..., Any], *columns: Any) -> np.ndarray:
    return np.stack([np.asarray(f(*xs)) for xs in zip(*columns)])


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def test_log1pexp_cell_vmap_of_jit_of_grad_is_the_loop_and_the_sigmoid() -> None:
    xs = jnp.arange(3.)
    got = np.asarray(jax.vmap(jax.jit(jax.grad(log1pexp)))(xs))
    np.testing.assert_array_equal(got, _loop(jax.grad(log1pexp), xs))
    np.testing.assert_allclose(got, _sigmoid64(np.arange(3.)), rtol=1e-6)


def test_log1pexp_stable_gradient(linearize_path: None) -> None:
    assert float(jax.grad(log1pexp)(100.)) == 1.0
    np.testing.assert_allclose(float(jax.grad(log1pexp)(3.)), _sigmoid64(3.), rtol=1e-6)


def test_mulv_cells_are_the_loop() -> None:
    x = jnp.arange(3.)
    y = jnp.arange(3.) + 1.
    np.testing.assert_array_equal(np.asarray(jax.vmap(mul)(x, y)), _loop(mul, x, y))
    np.testing.assert_array_equal(np.asarray(jax.vmap(mul, in_axes=(0, None))(x, 2.)),
                                  _loop(lambda a: mul(a, 2.), x))
    np.testing.assert_array_equal(np.asarray(jax.vmap(jax.grad(mul))(x, y)),
                                  _loop(jax.grad(mul), x, y))


def test_clip_gradient_cell_is_the_loop_and_clips() -> None:
    t = jnp.linspace(0, 10, 50)
    got = np.asarray(jax.vmap(jax.grad(clip_sin))(t))
    np.testing.assert_array_equal(got, _loop(jax.grad(clip_sin), t))
    np.testing.assert_allclose(got, np.clip(np.cos(np.asarray(t, np.float64)), -.75, .75),
                               atol=1e-6)


def test_grad_of_vmap_runs_the_batched_reverse_rules(linearize_path: None) -> None:
    """The batched primitive (VmapOf) differentiates through the vmapped
    vjp_fwd and vjp_bwd_retval: d/dx sum(x * y) = y, d/dy = x."""
    x = jnp.arange(4.)
    y = jnp.arange(4.) * 2. + 1.
    gx, gy = jax.grad(lambda a, b: jnp.sum(jax.vmap(mul)(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(np.asarray(gx), np.asarray(y))
    np.testing.assert_array_equal(np.asarray(gy), np.asarray(x))
    # An unbatched operand's cotangent is summed over the batch.
    g2 = jax.grad(lambda b: jnp.sum(jax.vmap(mul, in_axes=(0, None))(x, b)))(3.)
    assert float(g2) == float(np.sum(np.asarray(x)))


def test_jvp_of_vmap_runs_the_batched_jvp_rule() -> None:
    x = jnp.arange(4.)
    y = jnp.arange(4.) + 1.
    _, t = jax.jvp(jax.vmap(mul), (x, y), (jnp.ones(4), jnp.zeros(4)))
    np.testing.assert_array_equal(np.asarray(t), np.asarray(y))


class Cube(VJPHiPrimitive):
    """x**3 with only a jvp rule; the others derived."""

    def __init__(self, x_aval: Any) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = x_aval
        self.params = {}
        super().__init__()

    def expand(self, x: Any) -> Any:
        return x * x * x

    def jvp(self, primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return self(x), 3. * x * x * t


class CubeLin(Cube):
    lin, linearized = linearize_from_jvp
    vjp_fwd, vjp_bwd_retval = vjp_from_lin


class CubeJvp(Cube):
    vjp_fwd, vjp_bwd_retval = vjp_from_jvp


def _fd64(f: Callable[[float], float], x: float, h: float = 1e-6) -> float:
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("cls", [CubeLin, CubeJvp])
def test_derived_reverse_rules_match_finite_differences(cls: type, linearize_path: None
                                                        ) -> None:
    with jax.enable_x64(True):
        def f(x: Any) -> Any:
            return cls(jax.typeof(x))(x)
        x0 = 1.3
        expected = _fd64(lambda v: v ** 3, x0)
        np.testing.assert_allclose(float(jax.grad(f)(x0)), expected, rtol=1e-8)
        np.testing.assert_allclose(float(jax.grad(jax.grad(f))(x0)), 6 * x0, rtol=1e-8)
        _, f_lin = jax.linearize(f, x0) if cls is CubeLin else (None, None)
        if f_lin is not None:
            np.testing.assert_allclose(float(f_lin(1.)), 3 * x0 ** 2, rtol=1e-12)


def test_derived_rules_agree_with_each_other() -> None:
    x = jnp.linspace(-2., 2., 7)

    def total(cls: type) -> Any:
        return jax.grad(lambda v: jnp.sum(cls(jax.typeof(v))(v)))(x)

    np.testing.assert_allclose(np.asarray(total(CubeLin)), np.asarray(total(CubeJvp)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(total(CubeLin)), 3 * np.asarray(x) ** 2, rtol=1e-6)


def test_hijax_grad_equals_grad_of_its_expand(linearize_path: None) -> None:
    """The custom rule of Mul is the exact derivative: grad through it equals
    grad of the same program without the primitive."""
    def through(x: Any, y: Any) -> Any:
        return jnp.sum(jnp.sin(mul(x, y)) * x)

    def plain(x: Any, y: Any) -> Any:
        return jnp.sum(jnp.sin(x * y) * x)

    x = jnp.linspace(0., 1., 5)
    y = jnp.linspace(1., 2., 5)
    for a, b in zip(jax.grad(through, (0, 1))(x, y), jax.grad(plain, (0, 1))(x, y)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
