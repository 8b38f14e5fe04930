"""Autodiff API details, each compared with real JAX run live: jit wrappers
of differentiated functions, tracer reprs, config flag values, VJP objects,
Jacobian dtype checks, linear_transpose and stop_gradient on integers and
host values, check_grads, jacfwd of bool outputs, custom_vjp shape
mismatches and grad's allow_int."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.test_util  # noqa: F401  (jax.test_util.check_grads)
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec.test_util import check_grads, check_jvp, check_vjp
from tests.support.pair import class_and_message, error_of

LIBS = {"spec": (spec, snp), "jax": (jax, jnp)}


def both(prog: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    return prog(spec, snp), prog(jax, jnp)


def assert_same(ours: Any, theirs: Any, rtol: float = 2e-6) -> None:
    a, b = spec.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a) == len(b), (ours, theirs)
    for x, y in zip(a, b):
        xv, yv = np.asarray(x), np.asarray(y)
        assert xv.dtype == yv.dtype and xv.shape == yv.shape, (ours, theirs)
        np.testing.assert_allclose(xv, yv, rtol=rtol, atol=1e-7)
        assert bool(getattr(x, "weak_type", False)) == bool(getattr(y, "weak_type", False))


def same_error(prog: Callable[[Any, Any], Any]) -> tuple[BaseException, BaseException]:
    ours = error_of(lambda: prog(spec, snp))
    theirs = error_of(lambda: prog(jax, jnp))
    assert type(ours).__name__ == type(theirs).__name__, (ours, theirs)
    return ours, theirs


def same_message(prog: Callable[[Any, Any], Any]) -> None:
    ours, theirs = same_error(prog)
    assert str(ours) == str(theirs).split("\n--------------------")[0]


# ------------------------------------------ 1. jit of wrappers of jitted fns


def _deco(g: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(g)
    def wrapped(x: Any) -> Any:
        return 2.0 * g(x)
    return wrapped


WRAPPED: dict[str, Callable[[Any, Any], Any]] = {
    "jit(grad(jit f))": lambda j, n: j.jit(j.grad(j.jit(n.sin)))(0.5),
    "jit(value_and_grad(jit f))": lambda j, n: j.jit(j.value_and_grad(j.jit(n.sin)))(0.5),
    "jit(grad(grad(jit f)))": lambda j, n: j.jit(j.grad(j.grad(j.jit(n.sin))))(0.5),
    "jit(wraps(jit f))": lambda j, n: j.jit(_deco(j.jit(n.sin)))(0.5),
    "jit(grad(wraps(jit f)))": lambda j, n: j.jit(j.grad(_deco(j.jit(n.cos))))(0.5),
    "jit(vmap(jit f))": lambda j, n: j.jit(j.vmap(j.jit(n.cos)))(np.float32([0.5, 1.0])),
    "jit(vmap(grad(jit f)))": lambda j, n: j.jit(j.vmap(j.grad(j.jit(n.sin))))(
        np.float32([0.5, 1.0])),
    "jit(jvp of jit f)": lambda j, n: j.jit(
        lambda x: j.jvp(j.jit(n.sin), (x,), (2.0 * x,)))(0.5),
    "jit(jit(grad(jit f)))": lambda j, n: j.jit(j.jit(j.grad(j.jit(n.sin))))(0.5),
    "jit(jacrev(jit f))": lambda j, n: j.jit(j.jacrev(j.jit(n.sin)))(np.float32([0.5, 1.0])),
    "jit(grad(jit f two args))": lambda j, n: j.jit(j.grad(j.jit(lambda x, y: n.sin(x) * y),
                                                          argnums=(0, 1)))(0.5, 2.0),
}


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_jit_of_wrapper_of_jitted_matches_jax(name: str) -> None:
    ours, theirs = both(WRAPPED[name])
    assert_same(ours, theirs, rtol=1e-6)


def test_jit_keeps_its_own_function_when_wrapping_a_wrapper() -> None:
    inner = spec.jit(snp.sin)
    g = spec.grad(inner)
    outer = spec.jit(g)
    assert outer._fun is g and outer.__wrapped__ is g
    assert outer.__name__ == "sin"


# ------------------------------------------------------------ 2. tracer reprs


def _seen(j: Any, n: Any, transform: str) -> list[str]:
    seen: list[str] = []

    def f(x: Any) -> Any:
        seen.append(repr(x))
        seen.append(str(x))
        return n.sin(x)

    x = np.float32(1.5)
    xs = np.float32([1.0, 2.0])
    runs: dict[str, Callable[[], Any]] = {
        "grad": lambda: j.grad(f)(x),
        "value_and_grad": lambda: j.value_and_grad(f)(x),
        "vjp": lambda: j.vjp(f, xs),
        "linearize": lambda: j.linearize(f, xs),
        "jacrev": lambda: j.jacrev(f)(xs),
        "jvp": lambda: j.jvp(f, (xs,), (xs,)),
        "grad(grad)": lambda: j.grad(j.grad(f))(x),
        "jit(grad)": lambda: j.jit(j.grad(f))(x),
        "grad(jit)": lambda: j.grad(j.jit(f))(x),
        "grad f16": lambda: j.grad(f)(np.float16(1.0)),
    }
    runs[transform]()
    return seen


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "vjp", "linearize", "jacrev",
                                       "jvp", "grad(grad)", "jit(grad)", "grad(jit)",
                                       "grad f16"])
def test_tracer_repr_matches_jax(transform: str) -> None:
    ours, theirs = both(lambda j, n: _seen(j, n, transform))
    assert ours == theirs


# ------------------------------------------------------------- 3. config flag


@pytest.mark.parametrize("value", [0, None, "false", "0", 1, 0.0, [], "true", True, False])
def test_bool_flags_store_what_jax_stores(value: Any) -> None:
    for name in ("jax_use_direct_linearize", "jax_enable_checks"):
        old_j, old_s = getattr(jax.config, name), getattr(spec.config, name)
        try:
            jax.config.update(name, value)
            spec.config.update(name, value)
            assert getattr(spec.config, name) is getattr(jax.config, name)
        finally:
            jax.config.update(name, old_j)
            spec.config.update(name, old_s)


def test_falsy_flag_value_selects_the_legacy_path() -> None:
    seen: list[str] = []

    def f(x: Any) -> Any:
        seen.append(type(x).__name__)
        return snp.sin(x)

    spec.config.update("jax_use_direct_linearize", 0)
    try:
        spec.grad(f)(1.0)
    finally:
        spec.config.update("jax_use_direct_linearize", True)
    spec.grad(f)(1.0)
    assert seen == ["JVPTracer", "LinearizeTracer"]


# -------------------------------------------------------------- 4. VJP objects

W = np.ones((3, 3), np.float32) * 0.1
X = np.ones((2, 3), np.float32)


def _layer(lax: Any) -> Callable[[Any, Any], Any]:
    return lambda w, x: lax.tanh(lax.dot(x, w))


def _structured_progs(j: Any) -> dict[str, Callable[[Any, Any], Any]]:
    lax = j.lax
    layer = _layer(lax)

    @j.custom_vjp
    def cv(w: Any, x: Any) -> Any:
        return layer(w, x)
    cv.defvjp(lambda w, x: (layer(w, x), (w, x)), lambda r, ct: (r[1].T @ ct, ct @ r[0].T))
    return {
        "plain": layer,
        "jit": j.jit(layer),
        "jit(jit)": j.jit(j.jit(layer)),
        "two jits": lambda w, x: j.jit(layer)(w, j.jit(layer)(w, x)),
        "jit inline": j.jit(layer, inline=True),
        "checkpoint": j.checkpoint(layer),
        "scan": lambda w, x: lax.scan(lambda c, _: (layer(w, c), None), x, None, length=2)[0],
        "scan of jit": lambda w, x: lax.scan(lambda c, _: (j.jit(layer)(w, c), None), x, None,
                                             length=2)[0],
        "cond": lambda w, x: lax.cond(True, layer, lambda w, x: x, w, x),
        "jit of cond of jit": j.jit(lambda w, x: lax.cond(True, j.jit(layer),
                                                         lambda w, x: x, w, x)),
        "custom_vjp": cv,
        "jit of floor": j.jit(lambda w, x: j.jit(layer)(lax.floor(w), x)),
        "jit of constant": lambda w, x: lax.add(j.jit(lambda a: lax.mul(a, a))(X), x),
    }


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "legacy"])
@pytest.mark.parametrize("name", sorted(_structured_progs(jax)))
def test_structured_residuals_match_jax(name: str, direct: bool) -> None:
    theirs = jax.vjp(_structured_progs(jax)[name], W, X)[1].structured_residuals
    with spec.config.use_direct_linearize(direct):
        ours = spec.vjp(_structured_progs(spec)[name], W, X)[1].structured_residuals
    assert ours == theirs


def _saved_layer(w: Any, x: Any) -> Any:
    return w * x


def test_not_saveable_message_matches_jax() -> None:
    a, b = np.ones(3, np.float32), np.ones(3, np.float32)

    def prog(j: Any, n: Any) -> Any:
        _, fv = j.vjp(_saved_layer, a, {"k": b}["k"], saveable_args=(True, False))
        return fv(a)
    same_message(prog)

    def nested(j: Any, n: Any) -> Any:
        _, fv = j.vjp(lambda p, q: p * q["k"], a, {"k": b}, saveable_args=False)
        return fv(a)
    same_message(nested)

    def through_jit(j: Any, n: Any) -> Any:
        _, fv = j.vjp(j.jit(_saved_layer), a, b, saveable_args=(True, False))
        return fv(a)
    same_message(through_jit)

    def partial_fn(j: Any, n: Any) -> Any:
        _, fv = j.vjp(functools.partial(_saved_layer), a, b, saveable_args=(False, True))
        return fv(a)
    same_message(partial_fn)


def test_not_saveable_restored_gives_jax_values() -> None:
    a, b = np.float32([1.0, 2.0]), np.float32([3.0, 4.0])

    def prog(j: Any, n: Any) -> Any:
        _, fv = j.vjp(_saved_layer, a, b, saveable_args=False)
        return fv.replace(args_res=[a, b])(a)
    assert_same(*both(prog))


def test_sentinel_treedefs_print_as_jax() -> None:
    def prog(j: Any, n: Any) -> str:
        _, fv = j.vjp(lambda p, q: n.sin(p) + q, 1.0, 2.0, saveable_args=(False, True))
        return str(j.tree_util.tree_structure(fv.args_res))
    ours, theirs = both(prog)
    assert ours == theirs
    assert "NotNeeded[()]" in ours


@pytest.mark.parametrize("saveable", [(True,), (True, True, True), ((True, True), True), "x",
                                      (1, True), 1, None, (None, True), (True, (True,)),
                                      np.bool_(True), {"a": True}])
def test_bad_saveable_args_raise_as_jax(saveable: Any) -> None:
    same_message(lambda j, n: j.vjp(lambda p, q: p * q, 1.0, 2.0, saveable_args=saveable))


def test_saveable_args_dict_keys_and_prefixes_match_jax() -> None:
    same_message(lambda j, n: j.vjp(lambda p, q: p * q["k"], 1.0, {"k": 2.0},
                                    saveable_args=(True, {"z": True})))

    def ok(j: Any, n: Any) -> Any:
        a, b = np.float32([1.0]), np.float32([2.0])
        _, fv = j.vjp(lambda p, q: p * q["k"], a, {"k": b}, saveable_args=(True, {"k": False}))
        return [type(e).__name__ if type(e).__name__ in ("NotSaveable", "NotNeeded") else "arr"
                for e in j.tree_util.tree_leaves(
            fv.args_res, is_leaf=lambda e: type(e).__name__ in ("NotSaveable", "NotNeeded"))]
    ours, theirs = both(ok)
    assert ours == theirs


@pytest.mark.parametrize("argnums,n_args", [(2, 1), ((0, 3), 2), (-3, 2)])
def test_fwd_and_bwd_argnums_out_of_range_as_jax(argnums: Any, n_args: int) -> None:
    def prog(j: Any, n: Any) -> Any:
        fwd, _ = j.fwd_and_bwd(lambda *xs: xs[0], argnums=argnums)
        return fwd(*[1.0] * n_args)
    same_message(prog)


@pytest.mark.parametrize("jitted", [True, False])
@pytest.mark.parametrize("argnums", [0, (0, 1), -1])
def test_fwd_and_bwd_has_aux_as_jax(jitted: bool, argnums: Any) -> None:
    def prog(j: Any, n: Any) -> Any:
        fwd, bwd = j.fwd_and_bwd(lambda x, y: (n.sin(x) * y, x + 1.0), argnums=argnums,
                                 has_aux=True, jitted=jitted)
        out, f_vjp, aux = fwd(np.float32(2.0), np.float32(3.0))
        return out, aux, bwd(f_vjp, np.float32(1.0))
    assert_same(*both(prog))


def test_fwd_and_bwd_jitted_false_gives_plain_functions() -> None:
    fwd, bwd = spec.fwd_and_bwd(lambda x: x * x, argnums=0, jitted=False)
    jfwd, jbwd = jax.fwd_and_bwd(lambda x: x * x, argnums=0, jitted=False)
    assert type(fwd).__name__ == type(jfwd).__name__ == "function"
    out, f_vjp = fwd(np.float32(3.0))
    jout, jf_vjp = jfwd(np.float32(3.0))
    assert_same((out, bwd(f_vjp, np.float32(1.0))), (jout, jbwd(jf_vjp, np.float32(1.0))))


# ------------------------------------------------- 5. Jacobian dtype checks

C = np.complex64(1 + 2j)
R = np.float32(1.5)
I32 = np.int32(2)

DTYPE_ERRORS: dict[str, Callable[[Any, Any], Any]] = {
    "jacfwd complex in": lambda j, n: j.jacfwd(lambda x: x * 2)(C),
    "jacfwd complex in real out": lambda j, n: j.jacfwd(n.real)(C),
    "jacfwd int in": lambda j, n: j.jacfwd(lambda x: x * 1.0)(I32),
    "jacfwd int in tree": lambda j, n: j.jacfwd(lambda x, y: x * 2, argnums=(0, 1))(R, I32),
    "jacfwd holomorphic real out": lambda j, n: j.jacfwd(n.real, holomorphic=True)(C),
    "jacfwd holomorphic real in": lambda j, n: j.jacfwd(lambda x: x, holomorphic=True)(R),
    "jacrev complex out": lambda j, n: j.jacrev(lambda x: x * 2)(C),
    "jacrev real to complex": lambda j, n: j.jacrev(lambda x: x * (1 + 1j))(R),
    "jacrev int out": lambda j, n: j.jacrev(lambda x: x.astype(n.int32))(R),
    "jacrev holomorphic real out": lambda j, n: j.jacrev(n.real, holomorphic=True)(C),
    "grad int out": lambda j, n: j.grad(lambda x: x.astype(n.int32))(R),
    "grad bool out": lambda j, n: j.grad(lambda x: x > 0)(R),
    "grad complex out": lambda j, n: j.grad(lambda x: x * 1j)(R),
    "value_and_grad int out": lambda j, n: j.value_and_grad(lambda x: x.astype(n.int32))(R),
    "hessian complex in": lambda j, n: j.hessian(lambda x: x * x)(C),
}


@pytest.mark.parametrize("name", sorted(DTYPE_ERRORS))
def test_dtype_errors_match_jax(name: str) -> None:
    same_message(DTYPE_ERRORS[name])


@pytest.mark.parametrize("prog", [
    lambda j, n: j.jacfwd(lambda x: x * x, holomorphic=True)(C),
    lambda j, n: j.jacrev(lambda x: x * x, holomorphic=True)(C),
    lambda j, n: j.jacfwd(lambda x: n.int32(1) + 0 * x.astype(n.int32))(R),
    lambda j, n: j.jacfwd(lambda x: 1 + 0 * x.astype(n.int32))(np.ones(2, np.float32)),
])
def test_jacobians_that_jax_accepts(prog: Callable[[Any, Any], Any]) -> None:
    ours, theirs = both(prog)
    assert_same(ours, theirs)
    assert str(spec.typeof(ours)) == str(jax.typeof(theirs))


# ------------------------------------- 6. linear_transpose and stop_gradient

LINEAR: dict[str, Callable[[Any, Any], Any]] = {
    "int identity": lambda j, n: j.linear_transpose(lambda x: x, 1)(np.int32(1)),
    "int identity py": lambda j, n: j.linear_transpose(lambda x: x, 1)(1),
    "int scale": lambda j, n: j.linear_transpose(lambda x: x * 2, np.int32(1))(np.int32(3)),
    "int array": lambda j, n: j.linear_transpose(lambda x: x + x, np.ones(2, np.int32))(
        np.ones(2, np.int32)),
    "int8 cancel": lambda j, n: j.linear_transpose(lambda x: -x + x, np.ones(3, np.int8))(
        np.ones(3, np.int8)),
    "int unused": lambda j, n: j.linear_transpose(lambda x, y: x * 3, np.int32(1),
                                                  np.int32(2))(np.int32(3)),
    "float mixed": lambda j, n: j.linear_transpose(lambda x, y: x + 2 * y, n.ones(2),
                                                   n.float32(1))(np.ones(2, np.float32)),
    "float np in": lambda j, n: j.linear_transpose(lambda x, y: x + 2 * y,
                                                   np.ones(2, np.float32),
                                                   np.float32(1))(np.ones(2, np.float32)),
    "float identity": lambda j, n: j.linear_transpose(lambda x: x, 1.0)(1.0),
}


def _kind(x: Any) -> str:
    """Device array, host NumPy value or Python scalar."""
    if isinstance(x, (spec.Array, jax.Array)):
        return "array"
    if isinstance(x, (np.ndarray, np.generic)):
        return "numpy"
    return type(x).__mro__[-2].__name__  # int/float (JAX's TypedInt is an int)


def test_linear_transpose_keeps_identities_of_its_inputs_as_jax() -> None:
    """An identity broadcast_in_dim of the input is transposed (a reduce_sum
    over no axes); one of a closed-over value is forwarded, as in JAX."""
    x = np.arange(3.0, dtype=np.float32)

    def jaxpr(j: Any) -> str:
        def g(w: Any) -> Any:
            def f(v: Any) -> Any:
                c = j.lax.broadcast_in_dim(v * 2, (3,), (0,))
                return (j.lax.broadcast_in_dim(c, (3,), (0,)) * j.lax.broadcast_in_dim(
                    w, (3,), (0,)) + j.lax.broadcast_in_dim(v, (3,), (0,)))
            return j.linear_transpose(f, w)(w)
        return str(j.make_jaxpr(g)(x))
    assert jaxpr(spec) == jaxpr(jax)


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_transpose_matches_jax(name: str) -> None:
    ours, theirs = both(LINEAR[name])
    o, t = spec.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert [str(spec.typeof(x)) for x in o] == [str(jax.typeof(x)) for x in t]
    assert [_kind(x) for x in o] == [_kind(x) for x in t]
    for x, y in zip(o, t):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_linear_transpose_mixed_int_float_raises_as_jax() -> None:
    same_message(lambda j, n: j.linear_transpose(lambda x: x.astype(n.float32),
                                                 np.int32(1))(np.float32(1)))
    same_message(lambda j, n: j.linear_transpose(lambda x: x, True)(True))


@pytest.mark.parametrize("value", [3, 3.0, True, 1j, np.float64(2.0), np.ones(2),
                                   np.ones(2, np.int64), np.int32(2), np.ones(2, np.float32),
                                   (1, 2.0, np.int8(3))])
def test_stop_gradient_of_host_values_as_jax(value: Any) -> None:
    ours, theirs = spec.lax.stop_gradient(value), jax.lax.stop_gradient(value)
    o, t = spec.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert [str(spec.typeof(x)) for x in o] == [str(jax.typeof(x)) for x in t]
    assert [_kind(x) for x in o] == [_kind(x) for x in t]


def test_stop_gradient_keeps_arrays_and_stops_gradients() -> None:
    x = snp.ones(2)
    assert spec.lax.stop_gradient(x) is x
    ours, theirs = both(lambda j, n: j.grad(lambda v: v * j.lax.stop_gradient(v))(3.0))
    assert_same(ours, theirs)
    ours, theirs = both(lambda j, n: j.jit(j.lax.stop_gradient)(np.int32(3)))
    assert_same(ours, theirs)


# ---------------------------------------------------------------- 7. check_grads


def _custom_sin(j: Any, n: Any, wrong: bool) -> Any:
    @j.custom_vjp
    def f(x: Any) -> Any:
        return n.sin(x)
    f.defvjp(lambda x: (n.sin(x), x),
             lambda x, ct: ((n.sin(x) if wrong else n.cos(x)) * ct,))
    return f


@pytest.mark.parametrize("modes", [("rev",), "rev", ("rev", "bogus")])
def test_check_grads_rev_only_for_custom_vjp_as_jax(modes: Any) -> None:
    x = (np.float32(0.3),)
    jax.test_util.check_grads(_custom_sin(jax, jnp, False), x, 1, modes=modes)
    check_grads(_custom_sin(spec, snp, False), x, 1, modes=modes)


def test_check_grads_catches_a_wrong_bwd_rule_as_jax() -> None:
    x = (np.float32(0.3),)
    with pytest.raises(AssertionError):
        jax.test_util.check_grads(_custom_sin(jax, jnp, True), x, 1, modes=("rev",))
    with pytest.raises(AssertionError):
        check_grads(_custom_sin(spec, snp, True), x, 1, modes=("rev",))


def test_check_grads_ignores_unknown_modes_as_jax() -> None:
    jax.test_util.check_grads(jnp.sin, (np.float32(0.3),), 2, modes=("nope",))
    check_grads(snp.sin, (np.float32(0.3),), 2, modes=("nope",))
    check_grads(snp.sin, (np.float32(0.3),), 2, modes=("fwd", "rev", "lin"))


def test_check_jvp_and_vjp_take_err_msg() -> None:
    f = _custom_sin(spec, snp, True)
    with pytest.raises(AssertionError, match="my-context"):
        check_vjp(f, lambda *xs: spec.vjp(f, *xs), (np.float32(0.3),), err_msg="my-context")

    def bad_jvp(p: Any, t: Any) -> Any:
        return snp.sin(p[0]), 2.0 * t[0]
    with pytest.raises(AssertionError, match="my-context"):
        check_jvp(snp.sin, bad_jvp, (np.float32(0.3),), err_msg="my-context")
    check_jvp(snp.sin, lambda p, t: spec.jvp(snp.sin, p, t), (np.float32(0.3),), err_msg="x")


# -------------- jacfwd of bool outputs, custom_vjp shape mismatches, allow_int


def test_jacfwd_of_bool_output_raises_as_jax() -> None:
    got = class_and_message(lambda: spec.jacfwd(lambda x: x > 0)(1.0))
    want = class_and_message(lambda: jax.jacfwd(lambda x: x > 0)(1.0))
    assert got == want
    # An integer output still gives zeros (JAX's too).
    f_s = spec.jacfwd(lambda x: (x > 0).astype(snp.int32))(1.0)
    f_j = jax.jacfwd(lambda x: (x > 0).astype(jnp.int32))(1.0)
    assert int(f_s) == int(f_j) and str(f_s.dtype) == str(f_j.dtype)


def test_custom_vjp_bwd_mismatch_message_names_what_differs() -> None:
    def make(jx: Any, np_: Any) -> Any:
        @jx.custom_vjp
        def g(x: Any) -> Any:
            return x * 2
        g.defvjp(lambda x: (x * 2, None), lambda r, ct: (np_.ones(3),))
        return g
    cls_s, msg_s = class_and_message(lambda: spec.grad(make(spec, snp))(1.0))
    cls_j, msg_j = class_and_message(lambda: jax.grad(make(jax, jnp))(1.0))
    assert cls_s is cls_j is ValueError
    assert msg_s.endswith(", so the shapes do not match")
    assert msg_j.endswith(", so the shapes do not match")


def test_grad_allow_int_passes_integer_untraced() -> None:
    kinds: list[bool] = []

    def f(tracer_type: type, x: Any, n: Any) -> Any:
        kinds.append(isinstance(n, tracer_type))
        return x * n
    from jax.core import Tracer as JTracer
    from spec._src.core.interpreter import Tracer as STracer
    g_s = spec.grad(lambda x, n: f(STracer, x, n), argnums=(0, 1), allow_int=True)(1.0, 3)
    g_j = jax.grad(lambda x, n: f(JTracer, x, n), argnums=(0, 1), allow_int=True)(1.0, 3)
    assert kinds == [False, False]
    assert float(g_s[0]) == float(g_j[0])
    assert np.asarray(g_s[1]).dtype == np.asarray(g_j[1]).dtype
