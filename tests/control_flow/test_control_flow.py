"""cond / switch / while_loop / fori_loop: values, transformations, jaxpr
text and errors, each against real JAX run live."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as scf
from spec.test_util import check_grads
from tests.support.pair import errors_alike
from tests.support.text_programs import same_text

# A "program" is built from (api, numpy, lax-control-flow) so that one
# definition runs in spec and in JAX.
SPEC = (spec, snp, scf)
JAX = (jax, jnp, jax.lax)
Maker = Callable[[Any, Any, Any], Callable[..., Any]]


def _close(a: Any, b: Any) -> None:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-6)


def both(mk: Maker, *args: Any) -> None:
    _close(mk(*SPEC)(*args), mk(*JAX)(*args))


def same_jaxpr(mk: Maker, *args: Any) -> None:
    assert str(spec.make_jaxpr(mk(*SPEC))(*args)) == str(jax.make_jaxpr(mk(*JAX))(*args))


def cond_f(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    return lambda p, x: lx.cond(p, lambda x: n.sin(x) * x, n.cos, x)


def switch_f(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    return lambda i, x: lx.switch(i, [n.sin, n.cos, lambda x: x * x], x)


def while_f(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    return lambda x: lx.while_loop(lambda c: c[0] < 5,
                                  lambda c: (c[0] + 1, n.sin(c[1]) * 1.5), (0, x))[1]


def while_v(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    return lambda x: lx.while_loop(lambda c: c < 3.0, lambda c: c * 1.5 + 0.1, x)


def fori_f(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    return lambda k, x: lx.fori_loop(0, k, lambda i, c: c * 1.1 + i, x)


XS = np.linspace(0.1, 1.0, 4).astype(np.float32)
PS = np.array([True, False, True, False])


@pytest.mark.parametrize("p", [True, False, 1, 0.0])
def test_cond_values(p: Any) -> None:
    both(cond_f, p, 0.7)
    both(lambda j, n, lx: j.jit(cond_f(j, n, lx)), p, XS)


@pytest.mark.parametrize("i", [-3, 0, 1, 2, 9])
def test_switch_values(i: int) -> None:
    both(switch_f, i, XS)
    both(lambda j, n, lx: j.jit(switch_f(j, n, lx)), i, 0.5)


def test_cond_pytrees_consts_and_forwarding() -> None:
    c = np.arange(3.0, dtype=np.float32)

    def mk(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
        return lambda p, x: lx.cond(p, lambda t: (t[0], t[1] + c), lambda t: (t[0], t[1] * 2.0),
                                   (x, x))
    both(mk, True, np.ones(3, np.float32))
    both(mk, False, np.ones(3, np.float32))
    same_jaxpr(mk, True, np.ones(3, np.float32))


def test_while_and_fori_values() -> None:
    both(while_f, 0.3)
    both(lambda j, n, lx: j.jit(while_f(j, n, lx)), 0.3)
    both(while_v, np.float32(0.2))
    both(lambda j, n, lx: j.jit(fori_f(j, n, lx)), 4, XS)
    both(fori_f, 4, XS)
    both(fori_f, 0, XS)
    if hasattr(spec.lax, "scan"):  # static bounds run as a scan, as in JAX
        both(lambda j, n, lx: j.grad(lambda x: fori_f(j, n, lx)(3, x)), np.float32(0.5))
        same_jaxpr(lambda j, n, lx: lambda x: fori_f(j, n, lx)(3, x), np.float32(0.5))


def test_weak_loop_counter_stays_weak_in_fori_loop_and_indexing() -> None:
    """A while loop's Python-int counter is weakly typed: a fori_loop up to it counts with a
    weak counter, and an index built from it is normalised weak, then made strong, as in JAX.
    A tuple of traced values as the update stacks as jnp.asarray stacks it."""
    def mk(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
        def body(c: Any) -> Any:
            k, x = c
            x = lx.fori_loop(0, k, lambda i, y: y.at[i].add(1.0), x)
            x = x.at[:2].set((x[k], x[0]))  # traced entries of a tuple stack
            return k + 1, x.at[k + 1].set(x[k])
        return lambda x: lx.while_loop(lambda c: c[0] < 2, body, (0, x))[1]
    same_jaxpr(mk, XS)
    both(mk, XS)


def test_nested_control_flow() -> None:
    def mk(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
        def f(p: Any, x: Any) -> Any:
            def inner(y: Any) -> Any:
                return lx.while_loop(lambda c: c < 2.0, lambda c: c + y, y)
            return lx.cond(p, inner, lambda y: lx.cond(y > 0.5, n.sin, n.cos, y), x)
        return f
    for p in (True, False):
        both(mk, p, 0.7)
        both(lambda j, n, lx: j.jit(mk(j, n, lx)), p, 0.3)
    same_jaxpr(mk, True, 0.7)


@pytest.mark.parametrize("p", [True, False])
def test_cond_grad_jvp(p: bool) -> None:
    both(lambda j, n, lx: j.grad(cond_f(j, n, lx), argnums=1), p, 0.7)
    both(lambda j, n, lx: j.jit(j.grad(cond_f(j, n, lx), argnums=1)), p, 0.7)
    both(lambda j, n, lx: lambda x, t: j.jvp(lambda x: cond_f(j, n, lx)(p, x), (x,), (t,)),
         0.7, 2.0)
    both(lambda j, n, lx: j.grad(switch_f(j, n, lx), argnums=1), 2, 0.5)
    with spec.config.use_direct_linearize(False):
        both(lambda j, n, lx: j.grad(cond_f(j, n, lx), argnums=1), p, 0.7)
        both(lambda j, n, lx: j.grad(switch_f(j, n, lx), argnums=1), 0, 0.5)
    check_grads(lambda x: cond_f(*SPEC)(p, x), (np.float32(0.7),), order=2)
    check_grads(lambda x: switch_f(*SPEC)(1, x), (np.float32(0.7),), order=1)


def test_while_forward_mode() -> None:
    both(lambda j, n, lx: lambda x, t: j.jvp(while_f(j, n, lx), (x,), (t,)), 0.3, 1.0)
    both(lambda j, n, lx: lambda x, t: j.linearize(while_f(j, n, lx), x)[1](t), 0.3, 1.0)
    both(lambda j, n, lx: lambda x, t: j.jvp(j.vmap(while_v(j, n, lx)), (x,), (t,)), XS, XS)
    both(lambda j, n, lx: j.vmap(lambda x, t: j.jvp(while_v(j, n, lx), (x,), (t,))), XS, XS)
    check_grads(while_f(*SPEC), (np.float32(0.3),), order=1, modes=("fwd",))


def test_while_reverse_mode_raises() -> None:
    for mode in (True, False):
        with spec.config.use_direct_linearize(mode), \
                pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
            spec.grad(while_f(*SPEC))(0.3)
    with pytest.raises(ValueError):
        jax.grad(while_f(*JAX))(0.3)


def test_vmap() -> None:
    both(lambda j, n, lx: j.vmap(cond_f(j, n, lx)), PS, XS)
    both(lambda j, n, lx: j.vmap(cond_f(j, n, lx), in_axes=(None, 0)), True, XS)
    both(lambda j, n, lx: j.vmap(switch_f(j, n, lx)), np.array([0, 1, 2, 5], np.int32), XS)
    both(lambda j, n, lx: j.vmap(while_v(j, n, lx)), XS)
    both(lambda j, n, lx: j.vmap(fori_f(j, n, lx)), np.arange(4, dtype=np.int32), XS)
    both(lambda j, n, lx: j.vmap(fori_f(j, n, lx), in_axes=(None, 0)), 3, XS)
    both(lambda j, n, lx: j.vmap(j.grad(cond_f(j, n, lx), argnums=1)), PS, XS)
    both(lambda j, n, lx: j.grad(lambda p, x: j.vmap(cond_f(j, n, lx))(p, x).sum(), argnums=1),
         PS, XS)
    both(lambda j, n, lx: j.vmap(j.vmap(cond_f(j, n, lx))), PS.reshape(2, 2), XS.reshape(2, 2))
    both(lambda j, n, lx: j.vmap(j.vmap(while_v(j, n, lx))), XS.reshape(2, 2))


def test_jaxpr_text() -> None:
    same_jaxpr(lambda j, n, lx: lambda p, x: lx.cond(p, n.sin, n.cos, x), True, 1.0)
    same_jaxpr(switch_f, 1, 1.0)
    same_jaxpr(while_f, 1.0)
    same_jaxpr(lambda j, n, lx: lambda x: lx.while_loop(lambda c: c < x, lambda c: c * 2.0 + c,
                                                      1.0), 10.0)
    same_jaxpr(lambda j, n, lx: j.jit(fori_f(j, n, lx)), 3, 1.0)
    same_jaxpr(lambda j, n, lx: lambda p, x, t: j.jvp(lambda x: cond_f(j, n, lx)(p, x), (x,),
                                                     (t,)), True, 0.7, 2.0)
    same_jaxpr(lambda j, n, lx: lambda x, t: j.jvp(while_f(j, n, lx), (x,), (t,)), 0.3, 1.0)
    same_jaxpr(lambda j, n, lx: j.vmap(cond_f(j, n, lx)), PS, XS)
    same_jaxpr(lambda j, n, lx: j.vmap(cond_f(j, n, lx), in_axes=(None, 0)), True, XS)
    same_jaxpr(lambda j, n, lx: j.vmap(while_v(j, n, lx)), XS)


def _raises_like(mk: Maker, *args: Any, match: str) -> None:
    ours, _ = errors_alike(lambda: mk(*SPEC)(*args), lambda: mk(*JAX)(*args))
    assert re.search("(?s)" + match, str(ours)), (match, str(ours))


def test_errors() -> None:
    _raises_like(lambda j, n, lx: lambda x: lx.cond(True, lambda x: x,
                                                  lambda x: x.astype(n.int32), x), 1.0,
                 match="cond branches must have equal output types.*int32")
    _raises_like(lambda j, n, lx: lambda x: lx.cond(True, lambda x: x, lambda x: (x, x), x), 1.0,
                 match="cond branch outputs must have the same pytree structure")
    _raises_like(lambda j, n, lx: lambda x: lx.cond(np.array([True, False]), lambda x: x,
                                                  lambda x: x, x), 1.0,
                 match="Pred must be a scalar")
    _raises_like(lambda j, n, lx: lambda x: lx.cond(None, lambda x: x, lambda x: x, x), 1.0,
                 match="cond predicate is None")
    _raises_like(lambda j, n, lx: lambda x: lx.switch(1.0, [lambda x: x, lambda x: x], x), 1.0,
                 match="Index type must be an integer")
    _raises_like(lambda j, n, lx: lambda x: lx.switch(1, [], x), 1.0,
                 match="Empty branch sequence")
    _raises_like(lambda j, n, lx: lambda x: lx.switch(1, [lambda x: x, lambda x: n.ones(2)], x),
                 np.float32(1.0), match="branch 0 has type float32.*shapes do not match")
    _raises_like(lambda j, n, lx: lambda x: lx.while_loop(lambda c: c < 3, lambda c: n.ones(2), x),
                 0.0, match="carry input and carry output must have equal types")
    _raises_like(lambda j, n, lx: lambda x: lx.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1].astype(n.int32)), (0, x)),
        np.float32(0), match=r"c\[1\] has type float32\[\].*int32\[\]")
    _raises_like(lambda j, n, lx: lambda x: lx.while_loop(lambda c: c < 3, lambda c: (c, c), x),
                 0, match="same pytree structure")
    _raises_like(lambda j, n, lx: lambda x: lx.while_loop(lambda c: n.array([True, True]),
                                                        lambda c: c + 1, x), 0,
                 match="cond_fun must return a boolean scalar")
    _raises_like(lambda j, n, lx: lambda x: lx.fori_loop(0, 3.0, lambda i, c: c, x), 1.0,
                 match="must have equal types")


def test_weak_carry_promotion() -> None:
    both(lambda j, n, lx: lambda: lx.while_loop(lambda c: c < 3,
                                              lambda c: (c + 1).astype(n.float32), 0))
    both(lambda j, n, lx: lambda: lx.while_loop(lambda c: c < 3,
                                              lambda c: (c + 1).astype(n.float16), 0.0))


def test_primitive_typing_and_sections() -> None:
    from spec.rules import missing_sections
    from spec._src.lax.control_flow import cond_p
    assert not [m for m in missing_sections() if m[0] in ("cond", "while")
                and m[1] != "sharding"]
    jaxpr = spec.make_jaxpr(cond_f(*SPEC))(True, 1.0)
    branches = jaxpr.eqns[1].params["branches"]
    with pytest.raises(TypeError, match="cond C2"):
        cond_p.bind(np.float32(0), np.float32(1), branches=branches)
    with pytest.raises(TypeError, match="cond C3"):
        cond_p.bind(np.int32(0), np.int32(1), branches=branches)


# ------------------------------------------- residuals of cond under autodiff

_C3 = np.arange(3.0, dtype=np.float32)

# (name, maker, args): cond/switch programs whose branches leave residuals
# in one branch only, in both, forward their operands, close over constants,
# or nest.
AD_CONDS: list[tuple[str, Maker, tuple[Any, ...]]] = [
    ("both", lambda j, n, lx: lambda x: lx.cond(x > 0, n.sin, n.cos, x), (1.0,)),
    ("one", lambda j, n, lx: lambda x: lx.cond(x > 0, lambda x: n.sin(x) * x,
                                             lambda x: x * 2.0, x), (1.0,)),
    ("forward", lambda j, n, lx: lambda x: lx.cond(x > 0, lambda x: x * x, n.sin, x), (-1.0,)),
    ("consts", lambda j, n, lx: lambda x: lx.cond(x[0] > 0, lambda x: (n.sin(x) * _C3).sum(),
                                                lambda x: (x * x).sum(), x),
     (np.ones(3, np.float32),)),
    ("switch", lambda j, n, lx: lambda x: lx.switch(
        2, [n.sin, n.cos, lambda x: x * x, lambda x: x * 3.0], x), (0.5,)),
    ("nested", lambda j, n, lx: lambda x: lx.cond(
        x > 0, lambda y: lx.cond(y > 1, n.sin, lambda z: z * z, y), n.cos, x), (0.5,)),
    ("two_ops", lambda j, n, lx: lambda x, y: lx.cond(
        x > y, lambda a, b: a * b + n.exp(b), lambda a, b: n.sin(a) * 2.0, x, y),
     (0.5, np.float32(0.2))),
    ("int_residual", lambda j, n, lx: lambda x: lx.cond(
        x.sum() > 0, lambda x: x[n.argmax(x)] * x, lambda x: x, x).sum(),
     (np.arange(3.0, dtype=np.float32),)),
]

AD_MODES: dict[str, Callable[[Any, Callable[..., Any]], Callable[..., Any]]] = {
    "grad": lambda j, f: j.grad(lambda *a: f(*a).sum()),
    "linearize": lambda j, f: lambda *a: j.linearize(f, *a)[1](*a),
    "jvp": lambda j, f: lambda *a: j.jvp(f, a, a),
}


def _jax_paths(direct: bool) -> Any:
    from jax._src import config as jax_config
    return jax_config.use_direct_linearize(direct)


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("mode", list(AD_MODES))
@pytest.mark.parametrize("name,mk,args", AD_CONDS, ids=[c[0] for c in AD_CONDS])
def test_cond_autodiff_jaxpr_text(name: str, mk: Maker, args: tuple[Any, ...], mode: str,
                                  direct: bool) -> None:
    """Residual slots a branch does not fill hold ``empty2``; residuals that
    are a known operand reach the tangent cond directly."""
    wrap = AD_MODES[mode]
    with _jax_paths(direct):
        want = str(jax.make_jaxpr(wrap(jax, mk(*JAX)))(*args))
        want_val = wrap(jax, mk(*JAX))(*args)
    with spec.config.use_direct_linearize(direct):
        got = str(spec.make_jaxpr(wrap(spec, mk(*SPEC)))(*args))
        got_val = wrap(spec, mk(*SPEC))(*args)
    assert got == want
    _close(got_val, want_val)
    if mode == "grad" and name in ("one", "consts", "switch"):
        assert "empty2[dtype=float32 memory_space=MemorySpace.Device]" in got


def test_cond_vjp_and_linearize_paths_agree() -> None:
    for _, mk, args in AD_CONDS:
        f = mk(*SPEC)
        outs = []
        for direct in (True, False):
            with spec.config.use_direct_linearize(direct):
                y, f_vjp = spec.vjp(f, *args)
                _, f_jvp = spec.linearize(f, *args)
                outs.append((y, f_vjp(y), f_jvp(*args)))
        for a, b in zip(jax.tree_util.tree_leaves(outs[0]), jax.tree_util.tree_leaves(outs[1])):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        y, j_vjp = jax.vjp(mk(*JAX), *args)
        _close(outs[0][1], j_vjp(y))


def test_empty2_primitive() -> None:
    from spec.rules import missing_sections
    from spec._src.lax.control_flow import MemorySpace, empty2_p
    assert not [m for m in missing_sections() if m[0] == "empty2" and m[1] != "sharding"]
    x = empty2_p.bind(dtype=np.dtype(np.int32), memory_space=MemorySpace.Device)
    assert str(spec.typeof(x)) == "int32[]" and not x.aval.weak_type
    with pytest.raises(TypeError, match="empty2 C1"):
        empty2_p.bind(dtype="nope", memory_space=MemorySpace.Device)
    with pytest.raises(TypeError, match="empty2 C2"):
        empty2_p.bind(dtype=np.dtype(np.float32), memory_space="device")
    jaxpr = spec.make_jaxpr(lambda: empty2_p.bind(dtype=np.dtype(np.float32),
                                                  memory_space=MemorySpace.Device))()
    assert "empty2[dtype=float32 memory_space=MemorySpace.Device] " in str(jaxpr)


# --------------------------------------------- while under legacy linearize

WHILES: list[tuple[str, Maker, tuple[Any, ...]]] = [
    ("counter", while_f, (0.3,)),
    ("value", while_v, (np.float32(0.2),)),
    ("closure", lambda j, n, lx: lambda x, y: lx.while_loop(
        lambda c: c[0] < 3.0, lambda c: (c[0] * 1.5 + 0.1, c[1] * n.cos(c[0]) + y), (x, y)),
     (0.2, 0.5)),
]


@pytest.mark.parametrize("name,mk,args", WHILES, ids=[w[0] for w in WHILES])
def test_while_legacy_linearize(name: str, mk: Maker, args: tuple[Any, ...]) -> None:
    """The legacy path keeps the primal loop known (a loop over the primal
    carries alone), and the tangent side reruns the JVP loop."""
    lin = AD_MODES["linearize"]
    with _jax_paths(False):
        want = str(jax.make_jaxpr(lin(jax, mk(*JAX)))(*args))
    with spec.config.use_direct_linearize(False):
        got = str(spec.make_jaxpr(lin(spec, mk(*SPEC)))(*args))
        y_legacy, f_legacy = spec.linearize(mk(*SPEC), *args)
        t_legacy = f_legacy(*args)
        linear_text = str(spec.make_jaxpr(f_legacy)(*args))
    assert got == want
    # The linear function holds the tangent loop only: the primal loop ran
    # on the known side.
    assert linear_text.count("while[") == 1
    y_direct, f_direct = spec.linearize(mk(*SPEC), *args)
    t_direct = f_direct(*args)
    for a, b in zip(jax.tree_util.tree_leaves((y_legacy, t_legacy)),
                    jax.tree_util.tree_leaves((y_direct, t_direct))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    y_jax, f_jax = jax.linearize(mk(*JAX), *args)
    _close((y_legacy, t_legacy), (y_jax, f_jax(*args)))


# ------------ linear_transpose of cond, switch and scan: jaxpr text and values


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
    assert same_text(src)[0] == "ok"


# -------------------- carry and branch mismatches: TypeError messages as JAX's


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
    kind, _ = same_text(src)
    assert kind == "TypeError"


def test_while_cond_fun_weak_message() -> None:
    kind, msg = same_text("out = lax.while_loop(lambda c: c, lambda c: c, 0.)")
    assert "ShapedArray(float32[], weak_type=True)" in msg and "~" not in msg


def _platform_program(lib: Any, np_: Any) -> Callable[[Any], Any]:
    return lambda x: lib.lax.platform_dependent(x, cpu=np_.sin, tpu=np_.sin, default=np_.cos)


def test_platform_dependent_stages_a_cond_on_platform_index_as_jax() -> None:
    """Branches given for several platforms once, the default last; staged
    as a cond on platform_index (also differentiated and batched); the CPU
    branch runs; without a CPU branch or a default, JAX's error."""
    x, xs = np.float32(0.5), np.array([0.5, 1.0, 2.0], np.float32)
    ours, theirs = _platform_program(spec, snp), _platform_program(jax, jnp)
    same: Callable[[Any], Any] = lambda f: f  # noqa: E731
    for mine, jaxs, arg in [(same, same, x), (spec.grad, jax.grad, x),
                            (spec.vmap, jax.vmap, xs)]:
        text = str(jax.make_jaxpr(jaxs(theirs))(arg))
        assert str(spec.make_jaxpr(mine(ours))(arg)) == text
        assert str(spec.parse_jaxpr(text)) == text  # branches hoisted and written out
    np.testing.assert_allclose(np.asarray(spec.jit(ours)(x)), np.sin(x), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="platform_index.*not found for platform cpu"):
        spec.jit(lambda v: spec.lax.platform_dependent(v, tpu=snp.sin))(x)


# ------------------------------------------- branch jaxprs shared between conds


def _twice_same(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        y = lx.cond(n.sum(x) > 0, n.sin, n.cos, x)
        return lx.cond(n.sum(y) > 0, n.sin, n.cos, y)
    return f


def _one_branch_both_ways(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    def br(x: Any) -> Any:
        return x * 2.0
    return lambda x: lx.cond(n.sum(x) > 0, br, br, x)


def _weak_then_strong(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        a = lx.cond(x > 0, n.sin, n.cos, 1.0)
        return lx.cond(x > 0, n.sin, n.cos, x) + a
    return f


def _switch_and_cond(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    def f(i: Any, x: Any) -> Any:
        a = lx.switch(i, [n.sin, n.cos], x)
        b = lx.switch(i, [n.sin, n.cos], a)
        return lx.cond(i > 0, n.sin, n.cos, b)
    return f


def _inner_jit(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    inner = j.jit(lambda x: lx.cond(x > 0, n.sin, n.cos, x))
    return lambda x: lx.cond(x > 1, n.sin, n.cos, inner(x))


@pytest.mark.parametrize("mk,args", [
    (_twice_same, (np.float32(1.0),)), (_one_branch_both_ways, (np.ones(3, np.float32),)),
    (_weak_then_strong, (np.float32(0.5),)), (_switch_and_cond, (np.int32(1), np.float32(2.0))),
    (_inner_jit, (np.float32(0.5),))], ids=["twice", "both_ways", "weak", "switch", "jit"])
def test_conds_of_the_same_functions_share_branch_jaxprs(mk: Maker, args: Any) -> None:
    """JAX traces a branch function once per operand types and context, so
    conds of the same functions print their branches once (``let``)."""
    same_jaxpr(mk, *args)


def _below_five(c: Any) -> Any:
    return c[0] < 5


def _count_and_double(c: Any) -> Any:
    return c[0] + 1, c[1], c[2] * 2.0  # c[1] unchanged and unread: a body constant


def _loops_of_the_same_functions(j: Any, n: Any, lx: Any) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        a = lx.while_loop(_below_five, _count_and_double, (0, x, x))
        b = lx.while_loop(_below_five, _count_and_double, (1, x, a[2]))
        stop = lx.convert_element_type(x[0], np.int32)
        c = lx.fori_loop(0, stop, lambda i, v: v * 2.0, b[2])
        return lx.fori_loop(1, stop, lambda i, v: v + 1.0, c)
    return f


def test_loops_of_the_same_functions_share_their_jaxprs() -> None:
    """A while loop's predicate and body are traced once per carry types, as
    JAX's traces are: loops of the same functions print them once (``let``),
    fori_loop's predicate (one function for every fori_loop) included."""
    same_jaxpr(_loops_of_the_same_functions, np.ones(3, np.float32))
