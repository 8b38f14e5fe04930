"""vmap and control flow: jaxpr text, values and error messages that an
audit found differing from JAX 0.12 — each program run under spec and real
JAX live, its printed result (or exception class and message) compared."""

from __future__ import annotations

import importlib
import textwrap
from typing import Any

import numpy as np
import pytest


def _run(src: str, lib: str) -> tuple[str, str]:
    """Run ``src`` with ``jax``/``jnp``/``lax`` bound to ``lib``'s modules;
    returns ("ok", str(out)) or (exception class name, message)."""
    env: dict[str, Any] = {
        "jax": importlib.import_module(lib),
        "jnp": importlib.import_module(lib + ".numpy"),
        "lax": importlib.import_module(lib + ".lax"),
        "np": np,
    }
    try:
        exec(textwrap.dedent(src), env)
    except Exception as e:  # the class and message are what is compared
        return type(e).__name__, str(e)
    return "ok", str(env["out"])


def _same(src: str) -> tuple[str, str]:
    ours, theirs = _run(src, "spec"), _run(src, "jax")
    assert ours == theirs, f"\nspec: {ours}\njax:  {theirs}"
    return ours


CUSTOM_JVP = """
@jax.custom_jvp
def g(a):
    return jnp.sin(a)
g.defjvp(lambda p, t: (g(p[0]), jnp.cos(p[0]) * t[0]))
"""

CUSTOM_VJP = """
@jax.custom_vjp
def f(a, b):
    return jnp.sin(a) * b
f.defvjp(lambda a, b: (f(a, b), (a, b)),
         lambda r, c: (c * jnp.cos(r[0]) * r[1], jnp.sum(c * jnp.sin(r[0]))))
"""

REMAT = "h = jax.checkpoint(lambda a: jnp.sin(a) * 2)\n"


# ------------------------------------------------ 1. custom rules, checkpoint


@pytest.mark.parametrize("src", [
    CUSTOM_JVP + "out = jax.make_jaxpr(jax.vmap(g))(jnp.ones((2, 3)))",
    CUSTOM_JVP + "out = jax.make_jaxpr(jax.vmap(g, in_axes=1))(jnp.ones((2, 3)))",
    CUSTOM_JVP + "out = jax.make_jaxpr(jax.vmap(jax.vmap(g, in_axes=1), in_axes=1))"
                 "(jnp.ones((2, 3, 4)))",
    CUSTOM_JVP + "out = jax.make_jaxpr(jax.grad(lambda x: jax.vmap(g, in_axes=1)(x).sum()))"
                 "(jnp.ones((2, 3)))",
    CUSTOM_VJP + "out = jax.make_jaxpr(jax.vmap(f, in_axes=(1, None)))(jnp.ones((2, 3)), 2.0)",
    CUSTOM_VJP + "out = jax.make_jaxpr(jax.grad(lambda x: jax.vmap(f, in_axes=(1, None))"
                 "(x, 2.0).sum()))(jnp.ones((2, 3)))",
    CUSTOM_VJP + "out = jax.make_jaxpr(jax.vmap(jax.grad(lambda x, y: f(x, y).sum(), "
                 "argnums=(0, 1)), in_axes=(1, None)))(jnp.ones((2, 3)), 2.0)",
    REMAT + "out = jax.make_jaxpr(jax.vmap(h, in_axes=1, out_axes=1))(jnp.ones((2, 3)))",
    REMAT + "out = jax.make_jaxpr(jax.vmap(h, in_axes=1))(jnp.ones((2, 3)))",
    REMAT + "out = jax.make_jaxpr(jax.grad(lambda x: jax.vmap(h, in_axes=1)(x).sum()))"
            "(jnp.ones((2, 3)))",
])
def test_custom_and_remat_vmap_jaxpr(src: str) -> None:
    assert _same(src)[0] == "ok"


def _close(src: str) -> None:
    """Values of ``src`` (a tree of arrays ``out``) agree within float32 ULPs."""
    import jax
    import spec
    outs = []
    for lib in (spec, jax):
        env: dict[str, Any] = {"jax": lib, "jnp": lib.numpy, "lax": lib.lax, "np": np}
        exec(textwrap.dedent(src), env)
        outs.append([np.asarray(x) for x in jax.tree_util.tree_leaves(env["out"])])
    assert len(outs[0]) == len(outs[1])
    for a, b in zip(*outs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("src", [
    CUSTOM_JVP + "out = jax.grad(lambda x: jax.vmap(g, in_axes=1)(x).sum())"
                 "(jnp.arange(6.).reshape(2, 3))",
    CUSTOM_JVP + "out = jax.vmap(jax.grad(lambda x: g(x).sum()), in_axes=1, out_axes=1)"
                 "(jnp.arange(6.).reshape(2, 3))",
    CUSTOM_VJP + "out = jax.grad(lambda x, y: jax.vmap(f, in_axes=(1, None))(x, y).sum(), "
                 "argnums=(0, 1))(jnp.arange(6.).reshape(2, 3), 2.0)",
    CUSTOM_VJP + "out = jax.vmap(jax.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1)), "
                 "in_axes=(1, None))(jnp.arange(6.).reshape(2, 3), 2.0)",
    REMAT + "out = jax.vmap(jax.grad(lambda x: h(x).sum()), in_axes=1, out_axes=1)"
            "(jnp.arange(6.).reshape(2, 3))",
])
def test_custom_and_remat_vmap_values(src: str) -> None:
    _close(src)


# ------------------------------------------------------ 2. lax.map batch_size


@pytest.mark.parametrize("src", [
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=2))(jnp.ones((5, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=2))(jnp.ones((4, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=7))(jnp.ones((4, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(jnp.sin, x, batch_size=0))(jnp.ones((4, 2)))",
    "out = jax.make_jaxpr(lambda x: lax.map(lambda a: (jnp.sin(a[0]), a[1]), x, "
    "batch_size=2))((jnp.ones((5, 2)), jnp.ones(5)))",
    "out = lax.map(lambda a: a * 2, jnp.arange(7.), batch_size=3)",
])
def test_map_batch_size(src: str) -> None:
    assert _same(src)[0] == "ok"


# ------------------------------------------- 3. control flow in checkpoint


@pytest.mark.parametrize("src", [
    "h = jax.checkpoint(lambda v: lax.scan(lambda c, a: (jnp.sin(c) * a, c), v, "
    "jnp.arange(3.))[0])\nout = jax.grad(h)(0.5)",
    "h = jax.checkpoint(lambda v: lax.cond(v > 0, jnp.sin, jnp.cos, v))\n"
    "out = (jax.grad(h)(0.5), jax.grad(h)(-0.5))",
    "h = jax.checkpoint(lambda v: lax.while_loop(lambda c: c[0] < 3, "
    "lambda c: (c[0] + 1, jnp.sin(c[1])), (0, v))[1])\nout = jax.jvp(h, (0.5,), (1.0,))",
])
def test_checkpoint_control_flow_values(src: str) -> None:
    _close(src)


# ------------------------------------------------ 4. linear_transpose


@pytest.mark.parametrize("src", [
    "x = jnp.arange(6.).reshape(2, 3)\n"
    "fc = lambda v: lax.cond(True, lambda a: a * 2., lambda a: -a, v)\n"
    "out = jax.make_jaxpr(lambda c: jax.linear_transpose(fc, x)(c))(jnp.ones((2, 3)))",
    "x = jnp.arange(6.).reshape(2, 3)\n"
    "fc = lambda v: lax.switch(2, [lambda a: a * 2., lambda a: -a, lambda a: a], v)\n"
    "out = jax.make_jaxpr(lambda c: jax.linear_transpose(fc, x)(c))(jnp.ones((2, 3)))",
    "x = jnp.arange(6.).reshape(2, 3)\n"
    "ft = lambda v: lax.scan(lambda c, a: (c * 2. + a, c * 3.), jnp.zeros(3), v)\n"
    "out = jax.make_jaxpr(lambda c: jax.linear_transpose(ft, x)(c))"
    "((jnp.ones(3), jnp.ones((2, 3))))",
    "x = jnp.arange(6.).reshape(2, 3)\n"
    "ft = lambda v: lax.scan(lambda c, a: (c * 2. + a, c * 3.), jnp.zeros(3), v)\n"
    "out = jax.linear_transpose(ft, x)((jnp.ones(3), jnp.ones((2, 3))))",
    "x = jnp.arange(6.).reshape(2, 3)\n"
    "fc = lambda v: lax.cond(True, lambda a: a * 2., lambda a: -a, v)\n"
    "out = jax.linear_transpose(fc, x)(jnp.ones((2, 3)))",
])
def test_linear_transpose_control_flow(src: str) -> None:
    assert _same(src)[0] == "ok"


# ------------------------------------------------ 5. all_gather axis bounds


@pytest.mark.parametrize("axis,tiled,shape", [
    (1, True, (4, 2)), (2, False, (4, 2)), (3, False, (4, 2)), (-3, False, (4, 2)),
    (-2, True, (4, 2)), (0, True, (4,)), (1, False, (4,)),
    (-1, False, (4, 2)), (-2, False, (4, 2)), (1, False, (4, 2)), (0, True, (4, 2)),
])
def test_all_gather_axis_under_vmap(axis: int, tiled: bool, shape: tuple[int, ...]) -> None:
    _same(f"out = jax.vmap(lambda a: lax.all_gather(a, 'i', axis={axis}, tiled={tiled}), "
          f"axis_name='i')(jnp.arange({int(np.prod(shape))}.).reshape({shape}))")


# ------------------------------------- 6, 7. carry and branch messages


@pytest.mark.parametrize("src", [
    "out = lax.scan(lambda c, x: (c.astype(jnp.int32), x), 1.0, jnp.arange(3.))",
    "out = lax.scan(lambda c, x: (jnp.ones(2), x), jnp.ones(3), jnp.arange(3.))",
    "out = lax.scan(lambda c, x: ((c[0].astype(int), jnp.ones(2), jnp.ones(3, int)), x), "
    "(1.0, 2.0, 3.0), jnp.ones(3))",
    "out = lax.fori_loop(0, 3, lambda i, c: c.astype(jnp.float32), jnp.int32(0))",
    "out = lax.fori_loop(0, jnp.int32(3), lambda i, c: jnp.ones(2, int), 1.0)",
    "out = lax.while_loop(lambda c: c[0] > 0, lambda c: (c[0], c[1].astype(int)), (0., 1.))",
    # pytree structure
    "out = lax.scan(lambda c, x: ((c, c), x), jnp.ones(3), jnp.arange(3.))",
    "out = lax.scan(lambda c, x: ([c[0]], x), (1.0,), jnp.ones(3))",
    "out = lax.scan(lambda c, x: ((c[0], (c[1], c[1])), x), (1.0, 2.0), jnp.ones(3))",
    "out = lax.scan(lambda c, x: ((c[0], 1, 2), x), (1.0, 2.0), jnp.ones(3))",
    "out = lax.scan(lambda *a: ((a[0], a[0]), a[1]), 1.0, jnp.ones(2))",
    "out = lax.while_loop(lambda c: True, lambda c: (c, c), 1.0)",
    "out = lax.while_loop(lambda c: c['a'] < 1, lambda c: {'a': c['a'], 'c': 1.0}, "
    "{'a': 1.0, 'b': 2.0})",
    "out = lax.fori_loop(0, 3, lambda i, c: (c, c), 1.0)",
    "out = lax.fori_loop(0, jnp.int32(3), lambda i, c: (c, c), 1.0)",
    "out = lax.cond(True, lambda: (1.0, 1.0), lambda: 1.0)",
    "out = lax.cond(True, lambda: (1.0, 1.0), lambda: (1.0,))",
    "out = lax.cond(True, lambda: (1.0, [1.0]), lambda: (1.0, (1.0,)))",
    "out = lax.cond(True, lambda: {'a': 1.0}, lambda: {'b': 1.0})",
    "out = lax.switch(1, [lambda: (1.0, 1.0), lambda: 1.0, lambda: [1.0]])",
    "out = lax.cond(True, lambda: (jnp.ones(2), 1., 2, 3), "
    "lambda: (jnp.ones(3, int), 1, 2., 3.))",
    "out = lax.while_loop(lambda c: c, lambda c: c, 0.)",
])
def test_control_flow_messages(src: str) -> None:
    kind, _ = _same(src)
    assert kind == "TypeError"


# ----------------------------------------------------- 8. vmap bad input


@pytest.mark.parametrize("src", [
    "out = jax.vmap(lambda x: x, out_axes=2)(jnp.ones((3, 4)))",
    "out = jax.vmap(lambda x: x, out_axes=-3)(jnp.ones((3, 4)))",
    "out = jax.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(jnp.ones(3))",
    "out = jax.vmap(lambda x: (x, x), out_axes=[0, 0])(jnp.ones(3))",
    "out = jax.vmap(lambda x: x, out_axes={'a': 0})(jnp.ones(3))",
    "out = jax.vmap(lambda x: x, in_axes=({'a': 0},))({'b': jnp.ones(3)})",
    "out = jax.vmap(lambda x: x, in_axes=({'a': 0, 'c': 1},))({'b': jnp.ones(3)})",
    "out = jax.vmap(lambda: 1.0)()",
    "out = jax.vmap(lambda x: 1.0)(None)",
    "out = jax.vmap(lambda x: x, in_axes=(0.5,))(jnp.ones(3))",
    "out = jax.vmap(lambda x: x, out_axes=0.5)(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.psum(x, 'j'), axis_name='i')(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.pmax(x, 'j'), axis_name='i')(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.pmean(x, ('i', 'j')), axis_name='i')(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.axis_index('j'), axis_name='i')(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.all_gather(x, 'j'), axis_name='i')(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.axis_size('j'), axis_name='i')(jnp.ones(3))",
    "out = jax.vmap(lambda x: lax.while_loop(lambda c: c + x, lambda c: c, 0.))(jnp.ones(3))",
    "out = jax.vmap(lambda x, y: x)(jnp.ones(3), y='a')",
    "out = jax.vmap(lambda x, y: x)(jnp.ones(3), y=jnp.ones(4))",
    "out = jax.vmap(1)",
])
def test_vmap_messages(src: str) -> None:
    kind, _ = _same(src)
    assert kind != "ok"


def test_while_cond_fun_weak_message() -> None:
    kind, msg = _same("out = lax.while_loop(lambda c: c, lambda c: c, 0.)")
    assert "ShapedArray(float32[], weak_type=True)" in msg and "~" not in msg
