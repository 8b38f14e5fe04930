"""Effects and callbacks: what ``jax.debug.print``, ``jax.debug.callback``,
``jax.pure_callback`` and ``io_callback`` print and return under jit, vmap,
grad and control flow; effects on jaxprs; dead-code elimination of pure
callbacks; and the errors of callbacks that cannot be transformed."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from importlib import import_module
from typing import Any

import numpy as np

from conformance.registry import capture, case


def _printed(jax: Any, fn: Callable[[], Any]) -> list[Any]:
    """What ``fn`` prints (effects flushed) and what it returns."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn()
        jax.effects_barrier()
    return [buf.getvalue(), out]


def _io_callback(jax: Any) -> Any:
    return import_module(jax.__name__ + ".experimental").io_callback


@case(tags=("callbacks",))
def debug_print_under_transformations(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        jax.debug.print("x={x}", x=x)
        return x * 2

    return [_printed(jax, lambda: jax.jit(f)(jnp.arange(3.))),
            _printed(jax, lambda: jax.vmap(f)(jnp.arange(3.))),
            _printed(jax, lambda: jax.grad(lambda x: f(x) ** 2)(3.)),
            _printed(jax, lambda: lax.scan(lambda c, x: (f(c) + x, None), 0., jnp.arange(3.))[0]),
            _printed(jax, lambda: lax.cond(True, f, lambda y: y, 1.)),
            _printed(jax, lambda: lax.while_loop(lambda c: c < 3, lambda c: f(c) // 2 + 1, 0))]


@case(tags=("callbacks",))
def ordered_prints_keep_program_order(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def f(x: Any, y: Any) -> Any:
        jax.debug.print("x {}", x, ordered=True)
        jax.debug.print("y {}", y, ordered=True)
        return x + y
    return _printed(jax, lambda: f(1, 2))


@case(tags=("callbacks", "jaxpr"))
def effects_of_jaxprs(jax: Any, jnp: Any, lax: Any) -> Any:
    io_callback = _io_callback(jax)
    f32 = jax.ShapeDtypeStruct((), jnp.float32)

    def f(x: Any) -> Any:
        jax.debug.print("{}", x)
        io_callback(lambda v: v, f32, x, ordered=True)
        return jax.pure_callback(lambda v: v, f32, x)

    def effects(g: Any) -> Any:
        j = jax.make_jaxpr(g)(1.)
        return [sorted(map(str, j.effects)), [sorted(map(str, e.effects)) for e in j.eqns]]
    return [effects(f), effects(jax.jit(f)),
            effects(lambda x: lax.cond(x > 0, f, lambda y: y, x))]


@case(tags=("callbacks",))
def pure_callback_vmap_methods_and_dce(jax: Any, jnp: Any, lax: Any) -> Any:
    def host(x: Any, y: Any) -> Any:
        print("shapes", np.shape(x), np.shape(y))
        return np.asarray(x) * 2

    def batched(method: str) -> Any:
        return _printed(jax, lambda: jax.vmap(lambda x, y: jax.pure_callback(
            host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method),
            in_axes=(0, None))(jnp.arange(3.), jnp.ones(2)))

    def loud(v: Any) -> Any:
        print("ran")
        return v
    f32 = jax.ShapeDtypeStruct((), jnp.float32)
    return [batched(m) for m in ("sequential", "expand_dims", "broadcast_all",
                                 "legacy_vectorized")] + [
        _printed(jax, lambda: jax.jit(lambda x: (jax.pure_callback(loud, f32, x), x + 1)[1])(1.)),
        _printed(jax, lambda: jax.jit(lambda x: (_io_callback(jax)(loud, f32, x), x)[1])(1.))]


@case(tags=("callbacks", "errors"))
def callback_errors(jax: Any, jnp: Any, lax: Any) -> Any:
    io_callback = _io_callback(jax)
    f32 = jax.ShapeDtypeStruct((), jnp.float32)
    return [capture(lambda: jax.grad(lambda x: jax.pure_callback(np.sin, f32, x))(1.)),
            capture(lambda: jax.grad(lambda x: io_callback(np.sin, f32, x))(1.)),
            capture(lambda: jax.vmap(lambda x: io_callback(
                lambda v: v, f32, x, ordered=True))(jnp.arange(2.))),
            capture(lambda: jax.vmap(lambda x: jax.pure_callback(np.sin, f32, x))(
                jnp.arange(2.))),
            capture(lambda: jax.pure_callback(np.sin, f32, 1., vmap_method="loop")),
            capture(lambda: jax.debug.print("a", 1))]
