# The implementation under test arrives as `jax: Any`, so `@jax.checkpoint` is an untyped
# decorator by design.
# mypy: disable-error-code="untyped-decorator"
"""Structured control flow: lax.scan, lax.map, lax.associative_scan, lax.cond, lax.switch,
lax.while_loop and lax.fori_loop, alone and under jit, grad, vmap and their compositions
(scan over layers with checkpoint), values, jaxpr text and errors.

Sources (jax-ml/jax docs): new_docs/101 (control flow and logical operators), the lax.scan /
lax.cond / lax.while_loop API pages. Real JAX supplies every expected result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.registry import case

X4 = np.array([0.3, -0.7, 1.1, 2.5], dtype=np.float32)
X5 = np.array([1.0, 2.0, -0.5, 0.25, 3.0], dtype=np.float32)
A34 = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0) / 4.0
W334 = (np.arange(36, dtype=np.float32).reshape(3, 3, 4)[:, :, :3] - 7.0) / 20.0
H3 = np.array([0.5, -0.25, 1.0], dtype=np.float32)


def _cumsum_body(c: Any, x: Any) -> Any:
    c = c + x
    return c, c * 2.0


# -- lax.scan --------------------------------------------------------------------------------------


@case
def scan_cumsum(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.scan(_cumsum_body, np.float32(0.0), X5)


@case
def scan_reverse(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.scan(_cumsum_body, np.float32(0.0), X5, reverse=True)


@case
def scan_length_no_xs(jax: Any, jnp: Any, lax: Any) -> Any:
    def body(c: Any, _: Any) -> Any:
        return c * 2.0 + 1.0, c
    return lax.scan(body, np.float32(1.0), None, length=4)


@case
def scan_pytree_carry_and_xs(jax: Any, jnp: Any, lax: Any) -> Any:
    def body(c: Any, x: Any) -> Any:
        s, p = c
        return (s + x["a"], p * x["b"]), {"sum": s, "prod": p}
    xs = {"a": A34, "b": A34 + 2.0}
    return lax.scan(body, (np.zeros(4, np.float32), np.ones(4, np.float32)), xs)


@case
def scan_closed_over_constant(jax: Any, jnp: Any, lax: Any) -> Any:
    w = A34[0]
    def body(c: Any, x: Any) -> Any:
        return c * w + x, jnp.sum(c)
    return lax.scan(body, np.ones(4, np.float32), A34)


@case
def scan_nested(jax: Any, jnp: Any, lax: Any) -> Any:
    def outer(c: Any, row: Any) -> Any:
        inner_c, ys = lax.scan(lambda a, x: (a + x, a * x), c, row)
        return inner_c, ys
    return lax.scan(outer, np.float32(0.0), A34)


@case
def scan_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda xs: lax.scan(_cumsum_body, np.float32(0.0), xs))(X5)


@case(ulp=4)
def scan_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(c0: Any, xs: Any) -> Any:
        c, ys = lax.scan(lambda c, x: (jnp.sin(c) * x, c * x), c0, xs)
        return c + jnp.sum(ys)
    return jax.grad(f, argnums=(0, 1))(np.float32(0.5), X5)


@case
def scan_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda xs: lax.scan(_cumsum_body, np.float32(0.0), xs))(A34)


@case
def scan_vmap_batched_carry_only(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda c: lax.scan(_cumsum_body, c, X5), in_axes=0)
    return f(H3)


@case(ulp=4)
def scan_vmap_of_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(c0: Any) -> Any:
        c, _ = lax.scan(lambda c, x: (jnp.sin(c * x) + 0.5 * c, None), c0, X5)
        return c
    return jax.vmap(jax.grad(f))(H3)


@case(ulp=4)
def scan_grad_of_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(xs: Any) -> Any:
        cs, _ = jax.vmap(
            lambda x: lax.scan(lambda c, v: (c * v + 1.0, None), np.float32(1.0), x))(xs)
        return jnp.sum(cs)
    return jax.grad(f)(A34)


@case(ulp=8)
def scan_over_layers_checkpoint(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.checkpoint
    def layer(h: Any, w: Any) -> Any:
        return jnp.tanh(w @ h), None

    def loss(ws: Any, h: Any) -> Any:
        out, _ = lax.scan(layer, h, ws)
        return jnp.sum(out**2)
    return jax.value_and_grad(loss, argnums=(0, 1))(W334, H3)


@case
def scan_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(lambda xs: lax.scan(_cumsum_body, np.float32(0.0), xs))(X5))


@case
def scan_grad_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(xs: Any) -> Any:
        c, _ = lax.scan(lambda c, x: (c * x, None), np.float32(1.0), xs)
        return c
    return str(jax.make_jaxpr(jax.grad(f))(X5))


@case
def scan_vmap_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda xs: lax.scan(_cumsum_body, np.float32(0.0), xs))
    return str(jax.make_jaxpr(f)(A34))


@case(raises=TypeError)
def scan_error_carry_type_mismatch(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.scan(lambda c, x: (c + x, x), np.int32(0), X5)


@case(raises=TypeError)
def scan_error_carry_shape_mismatch(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.scan(lambda c, x: (jnp.stack([c, x]), x), np.float32(0.0), X5)


@case(raises=ValueError)
def scan_error_length_mismatch(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.scan(lambda c, x: (c, x), np.float32(0.0), X5, length=3)


# -- lax.map / lax.associative_scan ---------------------------------------------------------------


@case(ulp=4)
def map_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.map(lambda r: jnp.sum(jnp.exp(r)), A34)


@case
def map_batch_size(jax: Any, jnp: Any, lax: Any) -> Any:
    xs = np.arange(10, dtype=np.float32).reshape(5, 2)
    return lax.map(lambda r: r * r + 1.0, xs, batch_size=2)


@case
def map_pytree(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.map(lambda p: p[0] * p[1], (A34, A34 - 1.0))


@case
def associative_scan_cumsum(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.associative_scan(jnp.add, X5), lax.associative_scan(jnp.add, X5, reverse=True)


@case
def associative_scan_max_axis(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.associative_scan(jnp.maximum, A34, axis=1)


@case
def associative_scan_pytree(jax: Any, jnp: Any, lax: Any) -> Any:
    # linear recurrence h_t = a_t h_{t-1} + b_t as a pair operator
    def op(x: Any, y: Any) -> Any:
        return (x[0] * y[0], y[0] * x[1] + y[1])
    return lax.associative_scan(op, (X5 * 0.5, X5 + 1.0))


# -- lax.cond / lax.switch ------------------------------------------------------------------------


@case
def cond_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(p: Any, x: Any) -> Any:
        return lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x)
    return f(True, X4), f(False, X4)


@case
def cond_pytree_operands(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(p: Any) -> Any:
        return lax.cond(p, lambda a, b: (a + b, a), lambda a, b: (a - b, b), X4, X4 * 3.0)
    return f(np.int32(1)), f(np.int32(0))


@case(ulp=4)
def cond_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(lambda x: lax.cond(jnp.sum(x) > 0, jnp.sin, jnp.cos, x))
    return f(X4), f(-X4 - 2.0)


@case(ulp=4)
def cond_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return lax.cond(x > 0, lambda v: jnp.sin(v) * v, lambda v: v**3, x)
    return jax.grad(f)(np.float32(0.7)), jax.grad(f)(np.float32(-0.7))


@case
def cond_vmap_batched_predicate(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda x: lax.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x))
    return f(X4)


@case(ulp=4)
def cond_vmap_of_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    g = jax.grad(lambda x: lax.cond(x > 0, jnp.sin, lambda v: v * v, x))
    return jax.vmap(g)(X4)


@case
def cond_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return lax.cond(x[0] > 0, lambda v: v * 2.0, lambda v: v + 1.0, x)
    return str(jax.make_jaxpr(f)(X4))


@case(raises=TypeError)
def cond_error_branch_mismatch(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.cond(True, lambda v: v, lambda v: v.astype(jnp.int32), X4)


@case
def switch_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    branches = [lambda v: v + 1.0, lambda v: v * v, lambda v: -v]
    return [lax.switch(i, branches, X4) for i in (-1, 0, 1, 2, 5)]


@case
def switch_vmap_batched_index(jax: Any, jnp: Any, lax: Any) -> Any:
    branches = [lambda v: v + 1.0, lambda v: v * v, lambda v: -v]
    return jax.vmap(lambda i, x: lax.switch(i, branches, x))(np.array([0, 2, 1, 0], np.int32), X4)


@case
def switch_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    branches = [lambda v: v * 3.0, lambda v: v * v]
    return jax.grad(lambda x: lax.switch(1, branches, x))(np.float32(1.5))


# -- lax.while_loop / lax.fori_loop ---------------------------------------------------------------


@case
def while_loop_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5),
                          (0, np.float32(1.0)))


@case
def while_loop_vmap_batched_predicate(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x))
    return f(np.array([1.0, 3.0, 0.5, 11.0], np.float32))


@case
def while_loop_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + c[0]),
                                         (0, 0)))
    return f(7)


@case
def while_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 2.0, x)
    return str(jax.make_jaxpr(f)(X5))


@case(raises=ValueError)
def while_loop_grad_error(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x))(1.0)


@case(raises=TypeError)
def while_loop_error_carry_mismatch(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.while_loop(lambda v: v < 10, lambda v: v.astype(jnp.float32), np.int32(1))


@case
def fori_loop_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.fori_loop(0, 5, lambda i, c: c + i * X4, np.zeros(4, np.float32))


@case(ulp=4)
def fori_loop_grad_static_bounds(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * x, x))(np.float32(0.8))


@case
def fori_loop_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: lax.fori_loop(0, 4, lambda i, c: (c + x) * 0.5 - i, x))(X4)
