"""vmap itself: axes specs, sizes, nesting, composition with jit/grad/custom
rules/checkpoint, named-axis collectives and bad input — against real JAX
run live. Per-primitive batching rules are tested in the other files of
tests/vmap/."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from tests.support.pair import class_and_message
from tests.support.text_programs import close_text, same_text

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
Y = np.linspace(-1, 1, 3).astype(np.float32)


def both(fn: Any) -> tuple[Any, Any]:
    return fn(spec, snp), fn(jax, jnp)


def assert_same(ours: Any, theirs: Any) -> None:
    o_leaves = spec.tree_util.tree_leaves(ours)
    t_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        assert np.shape(o) == np.shape(t)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6, atol=1e-6)
        if hasattr(t, "weak_type") and hasattr(o, "aval"):
            assert o.aval.weak_type == t.weak_type


@pytest.mark.parametrize("builder", [
    lambda j, n: j.vmap(lambda a, b: n.sin(a) * b)(X, X),
    lambda j, n: j.vmap(lambda a, b: a + b, in_axes=(0, None))(X, Y),
    lambda j, n: j.vmap(lambda a, b: a + b, in_axes=(1, None))(X, np.ones(2, np.float32)),
    lambda j, n: j.vmap(lambda a: a * 2, in_axes=-1)(X),
    lambda j, n: j.vmap(lambda a: a * 2, out_axes=1)(X),
    lambda j, n: j.vmap(lambda a: a * 2, out_axes=-1)(X),
    lambda j, n: j.vmap(lambda a: 1.0)(X),
    lambda j, n: j.vmap(lambda a: (a, 2.0), out_axes=(0, None))(X),
    lambda j, n: j.vmap(lambda a: a, in_axes=None, axis_size=3)(Y),
    lambda j, n: j.vmap(lambda d: d["a"] * d["b"], in_axes=({"a": 0, "b": None},))(
        {"a": X, "b": Y}),
    lambda j, n: j.vmap(lambda t: t[0] - t[1], in_axes=((0, 1),))((X, X.T)),
    lambda j, n: j.vmap(lambda a, b: a * b, in_axes=[0, 0])(X, X),
    lambda j, n: j.vmap(j.vmap(lambda a: n.cos(a) * 3.0))(X),
    lambda j, n: j.vmap(j.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))(Y, Y),
    lambda j, n: j.vmap(j.jit(lambda a: n.sin(a) + 1.0))(X),
    lambda j, n: j.jit(j.vmap(lambda a: n.sin(a) + 1.0))(X),
    lambda j, n: j.vmap(j.grad(lambda a: n.sin(a) * a))(Y),
    lambda j, n: j.grad(lambda a: j.vmap(lambda v: n.sin(v) * v)(a).sum())(Y),
    lambda j, n: j.vmap(lambda a: j.jvp(n.sin, (a,), (n.ones_like(a),)))(X),
    lambda j, n: j.vmap(j.checkpoint(lambda a: n.sin(n.sin(a))))(X),
    lambda j, n: j.grad(lambda a: j.vmap(j.checkpoint(lambda v: n.sin(v) * v))(a).sum())(Y),
])
def test_values_match_jax(builder: Any) -> None:
    assert_same(*both(builder))


@pytest.mark.parametrize("builder", [
    lambda j, n: j.make_jaxpr(j.vmap(lambda a, b: n.sin(a) + b, in_axes=(1, None)))(
        X, np.ones(2, np.float32)),
    lambda j, n: j.make_jaxpr(j.vmap(lambda a: a * 2, out_axes=1))(X),
    lambda j, n: j.make_jaxpr(j.vmap(lambda a: 1.0))(X),
    lambda j, n: j.make_jaxpr(j.vmap(j.jit(lambda a: n.sin(a) + 1.0)))(X),
    lambda j, n: j.make_jaxpr(j.vmap(lambda a: j.lax.psum(a, "i"), axis_name="i"))(X),
    lambda j, n: j.make_jaxpr(j.vmap(lambda a: j.lax.pmean(a, "i"), axis_name="i"))(X),
    lambda j, n: j.make_jaxpr(j.vmap(lambda a: j.lax.psum(1, "i"), axis_name="i"))(X),
    lambda j, n: j.make_jaxpr(j.vmap(lambda a: j.lax.all_gather(a, "i"), axis_name="i"))(X),
    lambda j, n: j.make_jaxpr(lambda a: j.lax.psum(a, "i"), axis_env=[("i", 3)])(X),
    lambda j, n: j.make_jaxpr(lambda a: j.lax.all_gather(a, "i"), axis_env=[("i", 3)])(X),
    lambda j, n: j.make_jaxpr(lambda a: j.lax.axis_index("i"), axis_env=[("i", 3)])(X),
])
def test_jaxpr_text_matches_jax(builder: Any) -> None:
    ours, theirs = both(builder)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("builder", [
    lambda j, n: j.vmap(lambda a: j.lax.psum(a, "i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: j.lax.pmean(a, "i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: j.lax.pmax(a, "i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: j.lax.pmin(a, "i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: j.lax.all_gather(a, "i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: j.lax.all_gather(a, "i", tiled=True), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: a * j.lax.axis_index("i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: j.lax.psum(1, "i"), axis_name="i")(X),
    lambda j, n: j.vmap(lambda a: a / j.lax.psum(a, "i"), axis_name="i", in_axes=1)(X),
    lambda j, n: j.vmap(j.vmap(lambda a: j.lax.psum(a, "i"), axis_name="j"),
                        axis_name="i")(X),
    lambda j, n: j.vmap(j.vmap(lambda a: j.lax.psum(a, ("i", "j")), axis_name="j"),
                        axis_name="i")(X),
    lambda j, n: j.grad(lambda a: j.vmap(lambda v: j.lax.psum(v, "i") * v,
                                         axis_name="i")(a).sum())(Y),
])
def test_collectives_match_jax(builder: Any) -> None:
    assert_same(*both(builder))


def test_custom_rules_under_vmap() -> None:
    def run(j: Any, n: Any) -> Any:
        @j.custom_jvp
        def f(x: Any) -> Any:
            return n.sin(x)
        f.defjvp(lambda p, t: (f(p[0]), n.cos(p[0]) * t[0] * 10.0))

        @j.custom_vjp
        def g(x: Any, y: Any) -> Any:
            return n.sin(x) * y
        g.defvjp(lambda x, y: (g(x, y), (x, y)),
                 lambda r, ct: (n.cos(r[0]) * r[1] * ct * 10.0, n.sin(r[0]) * ct))
        return (j.vmap(f)(Y), j.vmap(j.grad(f))(Y), j.grad(lambda x: j.vmap(f)(x).sum())(Y),
                j.vmap(g, in_axes=(0, None))(Y, np.float32(2)),
                j.grad(lambda x, y: j.vmap(g, in_axes=(0, None))(x, y).sum(),
                       argnums=(0, 1))(Y, np.float32(2)),
                j.vmap(j.grad(g))(Y, Y))
    ours, theirs = both(run)
    for o, t in zip(spec.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call,exc", [
    (lambda j, n: j.vmap(lambda a, b: a + b)(X, Y), ValueError),
    (lambda j, n: j.vmap(lambda a: a, in_axes=2)(X), ValueError),
    (lambda j, n: j.vmap(lambda a, b: a, in_axes=(0, 0, 0))(X, X), ValueError),
    (lambda j, n: j.vmap(lambda a: a)(1.0), ValueError),
    (lambda j, n: j.vmap(lambda a: a, in_axes=None)(X), ValueError),
    (lambda j, n: j.vmap(lambda a: a * 2, out_axes=None)(X), ValueError),
    (lambda j, n: j.vmap(lambda a: a, in_axes="x")(X), TypeError),
    (lambda j, n: j.vmap(lambda a, b: a + b, axis_size=5)(X, X), ValueError),
    (lambda j, n: j.lax.psum(X, "i"), NameError),
    (lambda j, n: j.vmap(lambda a: j.lax.psum(a, "k"), axis_name="i")(X), NameError),
])
def test_bad_input_raises_jax_class(call: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        call(jax, jnp)
    with pytest.raises(exc):
        call(spec, snp)


def test_inconsistent_sizes_message_names_arguments() -> None:
    with pytest.raises(ValueError, match=r"axis 0 of argument a of type float32\[2,3\]"):
        spec.vmap(lambda a, b: a + b)(X, Y)
    with pytest.raises(ValueError, match="rank should be at least 3"):
        spec.vmap(lambda a: a, in_axes=2)(X)


def test_no_loop_over_the_batch() -> None:
    """A vmapped program stages one equation per primitive, whatever the
    batch size (the batch is an axis, not a Python loop)."""
    small = spec.make_jaxpr(spec.vmap(lambda a: snp.sin(a) * 2.0))(np.ones((2, 3), np.float32))
    large = spec.make_jaxpr(spec.vmap(lambda a: snp.sin(a) * 2.0))(
        np.ones((1000, 3), np.float32))
    assert len(small.eqns) == len(large.eqns) == 2


# -------------------- custom rules and checkpoint under vmap, as program texts

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
    assert same_text(src)[0] == "ok"


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
    close_text(src)


# ------------------------------------------------ all_gather's axis under vmap


@pytest.mark.parametrize("axis,tiled,shape", [
    (1, True, (4, 2)), (2, False, (4, 2)), (3, False, (4, 2)), (-3, False, (4, 2)),
    (-2, True, (4, 2)), (0, True, (4,)), (1, False, (4,)),
    (-1, False, (4, 2)), (-2, False, (4, 2)), (1, False, (4, 2)), (0, True, (4, 2)),
])
def test_all_gather_axis_under_vmap(axis: int, tiled: bool, shape: tuple[int, ...]) -> None:
    same_text(f"out = jax.vmap(lambda a: lax.all_gather(a, 'i', axis={axis}, tiled={tiled}), "
              f"axis_name='i')(jnp.arange({int(np.prod(shape))}.).reshape({shape}))")


# ------------------------------------------------ bad input: messages as JAX's


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
    kind, _ = same_text(src)
    assert kind != "ok"


# ------------------------------ collectives over an unbound axis; tracer reprs


def test_vmap_ppermute_unbound_axis_as_jax() -> None:
    for fn_s, fn_j in [
        (lambda: spec.vmap(lambda x: slax.ppermute(x, "i", [(0, 1)]))(snp.ones(2)),
         lambda: jax.vmap(lambda x: jlax.ppermute(x, "i", [(0, 1)]))(jnp.ones(2))),
        (lambda: spec.jit(lambda x: slax.ppermute(x, "i", [(0, 1)]))(snp.ones(2)),
         lambda: jax.jit(lambda x: jlax.ppermute(x, "i", [(0, 1)]))(jnp.ones(2))),
    ]:
        assert class_and_message(fn_s) == class_and_message(fn_j)


def test_vmap_tracer_repr_as_jax() -> None:
    seen_s: list[str] = []
    seen_j: list[str] = []
    spec.vmap(lambda x: seen_s.append(repr(x)) or x)(snp.ones(2))
    jax.vmap(lambda x: seen_j.append(repr(x)) or x)(jnp.ones(2))
    spec.jacfwd(lambda x: seen_s.append(repr(x)) or x)(snp.ones(2))
    jax.jacfwd(lambda x: seen_j.append(repr(x)) or x)(jnp.ones(2))
    assert seen_s == seen_j
