"""Printed jaxprs: ``str(jax.make_jaxpr(f)(*args))`` for representative programs.

Covers literals, reductions, shape ops, indexing, control of sub-jaxprs (jit inside make_jaxpr,
including the ``let f = {...} in`` header JAX prints for a sub-jaxpr used more than once),
constvars from closed-over NumPy constants, identity outputs and pytrees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from conformance.registry import register_case

F32_3 = np.arange(3, dtype=np.float32)
F32_23 = np.arange(6, dtype=np.float32).reshape(2, 3)
F32_234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
I32_4 = np.array([3, 1, 2, 0], dtype=np.int32)
CONST = np.array([1.5, -2.0, 0.25], dtype=np.float32)

# name -> builder(jax, jnp, lax) returning (function, example args)
Builder = Callable[[Any, Any, Any], tuple[Callable[..., Any], tuple[Any, ...]]]
PROGRAMS: dict[str, Builder] = {}


def program(fn: Builder) -> Builder:
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def elementwise_literals(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.sin(x * 2.0 + 1) / 3 - x ** 2), (F32_3,)


@program
def int_literals(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: (x + 1) * 2 // 3 % 5), (I32_4,)


@program
def mixed_int_float(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x, y: x * y + 0.5), (I32_4, np.float32(2.0))


@program
def sum_mean_axes(jax: Any, jnp: Any, lax: Any) -> Any:
    return (
        lambda x: (jnp.sum(x), jnp.sum(x, axis=1), jnp.mean(x, axis=(0, 2), keepdims=True))
    ), (F32_234,)


@program
def reshape_transpose(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.transpose(x.reshape(4, 6), (1, 0)).reshape(-1)), (F32_234,)


@program
def broadcasting(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x, y: x + y[:, None]), (F32_23, np.ones(2, np.float32))


@program
def basic_slices(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: (x[1], x[:, 1:3], x[..., ::2], x[None, 0, ..., -1])), (F32_234,)


@program
def integer_array_index(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x, i: x[i]), (np.arange(8, dtype=np.float32), I32_4)


@program
def scalar_dynamic_index(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x, i: x[i]), (F32_23, np.int32(1))


@program
def where_select(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.where(x > 1.0, x, 0.0)), (F32_23,)


@program
def matmul(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda a, b: a @ b), (F32_23, F32_23.T.copy())


@program
def einsum(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda a, b: jnp.einsum("ij,jk->ik", a, b)), (F32_23, F32_23.T.copy())


@program
def dot_vectors(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda a, b: jnp.dot(a, b)), (F32_3, F32_3)


@program
def astype(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: (x.astype(jnp.int32), x.astype(jnp.bfloat16), x.astype(bool))), (F32_3,)


@program
def jit_inside_once(jax: Any, jnp: Any, lax: Any) -> Any:
    inner = jax.jit(lambda a: a * 2)
    return (lambda x: inner(x) + 1), (F32_3,)


@program
def jit_inside_twice(jax: Any, jnp: Any, lax: Any) -> Any:
    def double(a: Any) -> Any:
        return a * 2

    inner = jax.jit(double)
    return (lambda x: inner(inner(x)) + 1), (F32_3,)


@program
def jit_nested(jax: Any, jnp: Any, lax: Any) -> Any:
    def inner(a: Any) -> Any:
        return jnp.cos(a)

    def outer(a: Any) -> Any:
        return jax.jit(inner)(a) * jax.jit(inner)(a + 1)

    return jax.jit(outer), (F32_3,)


@program
def closure_numpy_const(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: x * CONST + CONST.sum()), (F32_3,)


@program
def closure_scalar_const(jax: Any, jnp: Any, lax: Any) -> Any:
    c = np.float32(3.0)
    return (lambda x: x - c), (F32_3,)


@program
def returns_input(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x, y: (x, y + 1, x)), (F32_3, I32_4)


@program
def returns_constant(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: (jnp.float32(1.0), 2)), (F32_3,)


@program
def pytree_io(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(tree: Any) -> Any:
        return {"s": tree["a"] + tree["b"][0], "p": (tree["b"][1] * 2, tree["a"])}

    return f, ({"a": F32_3, "b": (F32_3, I32_4)},)


@program
def creation_inside(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: x + jnp.arange(3) + jnp.zeros(3) + jnp.ones((3,), jnp.float32)), (F32_3,)


@program
def cumsum(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.cumsum(x, axis=1)), (F32_23,)


@program
def sort(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.sort(x)), (I32_4,)


@program
def argmax(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: (jnp.argmax(x), jnp.argmax(x, axis=0))), (F32_23,)


@program
def lax_primitives(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        y = lax.pad(x, np.float32(0), ((1, 0, 0), (0, 1, 1)))
        return lax.reduce_max(y, axes=(0,)), lax.dynamic_slice(x, (0, 1), (2, 2))

    return f, (F32_23,)


@program
def weak_scalar_arg(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x, s: x * s), (F32_3, 2.0)


@program
def int_scalar_args(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda a, b: a + b), (3, 4)


@program
def bool_ops(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.logical_and(x > 0, ~(x < 2.0))), (F32_23,)


@program
def max_with_literal(jax: Any, jnp: Any, lax: Any) -> Any:
    return (lambda x: jnp.maximum(x, 0) + jnp.abs(x) - jnp.exp(x)), (F32_3,)


def _make(builder: Builder) -> Callable[[Any, Any, Any], Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        f, args = builder(jax, jnp, lax)
        return str(jax.make_jaxpr(f)(*args))

    return fn


for _name, _builder in PROGRAMS.items():
    register_case(_name, _make(_builder), module=__name__, tags=("jaxpr", "printing"))
