"""Programs for the jaxpr-parser tests, written once against any JAX-like
namespace: ``fn(jax, jnp, lax)`` returns the function and its arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Program = Callable[[Any, Any, Any], tuple[Callable[..., Any], tuple[Any, ...]]]


def _x(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def elementwise(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any, y: Any) -> Any:
        return (jnp.sin(x) * 2.0 + jnp.exp(-x * y) - jnp.tanh(y) / (1 + x * x)
                + jnp.where(x > y, x, y) + lax.integer_pow(x, 3))
    return f, (_x((3, 4)), _x((3, 4), 1))


def reductions(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return (x.sum(axis=0) + x.max(axis=0) * jnp.mean(x, axis=0)
                + jnp.cumsum(x, axis=0)[-1] + jnp.argmax(x, axis=0).astype(jnp.float32)
                + jnp.sort(x, axis=0)[0])
    return f, (_x((5, 3)),)


def shaping(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        y = jnp.concatenate([x, x[::-1]], axis=0).reshape(4, 6).T
        z = jnp.pad(y, ((1, 0), (0, 2)))[1:, :4]
        return jnp.squeeze(jnp.expand_dims(z, 0), 0) + jnp.broadcast_to(x[0, :1], z.shape)
    return f, (_x((2, 6)),)


def dot_conv(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any, w: Any) -> Any:
        y = lax.conv(x, w, (1, 1), "SAME")
        return jnp.einsum("bchw,bcwk->bhk", y, y) @ jnp.ones((3, 2), jnp.float32)
    return f, (_x((1, 2, 3, 3)), _x((2, 2, 2, 2), 1))


def indexing(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any, i: Any) -> Any:
        g = x[i] + x[:, 1:3].sum()
        s = x.at[i].add(1.0).at[0, 0].set(5.0)
        d = lax.dynamic_slice(x, (i[0], 0), (1, 4))
        return g.sum() + s.sum() + d.sum() + jnp.take(x, i, axis=1).sum()
    return f, (_x((4, 4)), np.array([2, 0], np.int32))


def control_flow(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        def body(c: Any, v: Any) -> Any:
            return c * 0.5 + v, jnp.sin(c)
        c, ys = lax.scan(body, jnp.zeros(4, jnp.float32), x)
        w = lax.cond(c.sum() > 0, lambda a: a + 1, lambda a: a * 2, c)
        k = lax.fori_loop(0, 3, lambda i, a: a * 1.5, w)
        return k.sum() + ys.sum() + jax.jit(lambda a: a @ a.T)(x).sum()
    return f, (_x((3, 4)),)


def while_loop(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1), (0, x))[1]
    return f, (_x((3,)),)


def custom_rules(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.custom_jvp
    def h(x: Any) -> Any:
        return jnp.sin(x)

    @h.defjvp
    def h_jvp(p: Any, t: Any) -> Any:
        return h(p[0]), jnp.cos(p[0]) * t[0]

    @jax.custom_vjp
    def k(x: Any) -> Any:
        return x * 3.0

    k.defvjp(lambda x: (k(x), x), lambda r, g: (g * 3.0,))

    def f(x: Any) -> Any:
        return (h(x) + k(x) + jax.checkpoint(lambda a: jnp.sin(jnp.sin(a)))(x)).sum()
    return f, (_x((3,)),)


def sort_cumulative(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        values, _ = lax.top_k(x, 2)
        return (jnp.sort(x, axis=1) + jnp.argsort(x, axis=0).astype(jnp.float32)
                + lax.cummax(x, axis=1) + lax.cumlogsumexp(x, axis=0)).sum() + values.sum()
    return f, (_x((3, 4)),)


def linalg(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(a: Any) -> Any:
        spd = a @ a.T + 4.0 * jnp.eye(3, dtype=jnp.float32)
        low = jnp.linalg.cholesky(spd)
        return (lax.linalg.triangular_solve(low, a, left_side=True, lower=True).sum()
                + jnp.linalg.eigh(spd)[0].sum())
    return f, (_x((3, 3)),)


def random(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        k1, k2 = jax.random.split(jax.random.key(7))
        return x * jax.random.normal(k1, x.shape) + jax.random.uniform(k2, x.shape)
    return f, (_x((4,)),)


PROGRAMS: dict[str, Program] = {
    "sort_cumulative": sort_cumulative, "linalg": linalg, "random": random,
    "elementwise": elementwise, "reductions": reductions, "shaping": shaping,
    "dot_conv": dot_conv, "indexing": indexing, "control_flow": control_flow,
    "while_loop": while_loop, "custom_rules": custom_rules,
}
# Programs whose gradient JAX takes (reverse mode needs no while loop).
DIFFERENTIABLE = ("elementwise", "reductions", "shaping", "dot_conv", "control_flow",
                  "custom_rules", "sort_cumulative", "linalg", "random")
