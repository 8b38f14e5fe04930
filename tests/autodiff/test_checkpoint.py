"""checkpoint / remat, checkpoint_name, policies and saved_residuals, against
real JAX run live (jaxpr text, residual lists, gradient values)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import ad_checkpoint as jadc

import spec
import spec.ad_checkpoint as sadc
import spec.numpy as snp
import spec._src.lax.remat  # registers remat2 and name until spec.rules imports it
from spec._src.core.registry import missing_sections
from tests.support.pair import errors_alike

JP = jadc.checkpoint_policies
jname: Any = jadc.checkpoint_name
SP = sadc.checkpoint_policies


# Each program is written once against a (numpy, ad_checkpoint) pair.
def f_chain(np_: Any, ac: Any) -> Callable[[Any], Any]:
    return lambda x: np_.sin(np_.cos(x)) * x


def f_named(np_: Any, ac: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        y = ac.checkpoint_name(np_.cos(x), "a")
        z = ac.checkpoint_name(np_.sin(y) * x, "b")
        return np_.sin(np_.sin(z) - y).sum()
    return f


def f_nested(np_: Any, ac: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        a = ac.checkpoint(lambda u: np_.sin(u) * u)(x)
        inner = ac.checkpoint(lambda v: np_.sin(np_.sin(v)),
                              policy=ac.checkpoint_policies.everything_saveable)
        return np_.cos(inner(a) * a).sum()
    return f


def policies(ac: Any) -> list[Any]:
    P = ac.checkpoint_policies
    return [None, P.everything_saveable, P.nothing_saveable, P.save_only_these_names("a"),
            P.save_any_names_but_these("a"), P.save_anything_except_these_names("b"),
            P.dots_saveable, P.save_from_both_policies(P.save_only_these_names("a"),
                                                       P.save_only_these_names("b"))]


X3 = np.linspace(0.1, 1.0, 3, dtype=np.float32)


def _bits(x: Any) -> bytes:
    return np.asarray(x).tobytes()


def _residuals(ac: Any, f: Callable[..., Any], *args: Any) -> list[tuple[str, str]]:
    """(type, description before the source location) per saved residual."""
    out = []
    for aval, desc in ac.saved_residuals(f, *args):
        prefix = desc.split(" from /")[0].split(" from unknown")[0]
        out.append((str(aval), prefix))
    return out


# ------------------------------------------------------------- jaxpr text


def test_make_jaxpr_checkpoint_text() -> None:
    x = np.float32(1.5)
    for prog in (f_chain, f_named):
        for i in range(len(policies(sadc))):
            j = jax.make_jaxpr(jax.checkpoint(prog(jnp, jadc), policy=policies(jadc)[i]))(X3)
            s = spec.make_jaxpr(sadc.checkpoint(prog(snp, sadc), policy=policies(sadc)[i]))(X3)
            assert str(s) == str(j)
    assert str(spec.make_jaxpr(sadc.checkpoint(f_chain(snp, sadc)))(x)) == \
        str(jax.make_jaxpr(jax.checkpoint(f_chain(jnp, jadc)))(x))


@pytest.mark.parametrize("i", range(8))
def test_grad_jaxpr_text_per_policy(i: int) -> None:
    for prog in (f_chain, f_named):
        jf = jax.checkpoint(prog(jnp, jadc), policy=policies(jadc)[i])
        sf = sadc.checkpoint(prog(snp, sadc), policy=policies(sadc)[i])
        x = np.float32(1.5) if prog is f_chain else X3
        assert str(spec.make_jaxpr(spec.grad(lambda v, g=sf: g(v).sum()))(x)) == \
            str(jax.make_jaxpr(jax.grad(lambda v, g=jf: g(v).sum()))(x))


def test_jvp_and_linearize_jaxpr_text() -> None:
    x = np.float32(1.5)
    jf, sf = jax.checkpoint(f_chain(jnp, jadc)), sadc.checkpoint(f_chain(snp, sadc))
    assert str(spec.make_jaxpr(lambda a, t: spec.jvp(sf, (a,), (t,)))(x, x)) == \
        str(jax.make_jaxpr(lambda a, t: jax.jvp(jf, (a,), (t,)))(x, x))
    assert str(spec.make_jaxpr(lambda a: spec.linearize(sf, a)[1](a))(x)) == \
        str(jax.make_jaxpr(lambda a: jax.linearize(jf, a)[1](a))(x))


def test_grad_of_grad_jaxpr_text() -> None:
    def f(np_: Any) -> Callable[[Any], Any]:
        return lambda x: np_.sin(np_.sin(x)) * x
    s = spec.make_jaxpr(spec.grad(spec.grad(sadc.checkpoint(f(snp)))))(1.5)
    j = jax.make_jaxpr(jax.grad(jax.grad(jax.checkpoint(f(jnp)))))(1.5)
    assert str(s) == str(j)


def test_closed_over_constant_and_static_argnums_text() -> None:
    c = np.ones(3, np.float32)
    s = spec.make_jaxpr(sadc.checkpoint(lambda x: snp.sin(x) * c))(X3)
    j = jax.make_jaxpr(jax.checkpoint(lambda x: jnp.sin(x) * c))(X3)
    assert str(s) == str(j)

    def scale(np_: Any) -> Callable[..., Any]:
        return lambda x, n: np_.sin(x) * n
    s = spec.make_jaxpr(lambda x: sadc.checkpoint(scale(snp), static_argnums=1)(x, 3))(X3)
    j = jax.make_jaxpr(lambda x: jax.checkpoint(scale(jnp), static_argnums=1)(x, 3))(X3)
    assert str(s) == str(j)
    g_s = spec.grad(lambda x: sadc.checkpoint(scale(snp), static_argnums=(1,))(x, 3.0).sum())
    g_j = jax.grad(lambda x: jax.checkpoint(scale(jnp), static_argnums=(1,))(x, 3.0).sum())
    np.testing.assert_allclose(g_s(X3), g_j(X3), rtol=1e-6)


def test_checkpoint_name_text_and_rules() -> None:
    s = spec.make_jaxpr(lambda x: sadc.checkpoint_name(snp.sin(x), "n"))(X3)
    j = jax.make_jaxpr(lambda x: jname(jnp.sin(x), "n"))(X3)
    assert str(s) == str(j)
    # JVP: primal named, tangent passed through unnamed (as JAX).
    s = spec.make_jaxpr(lambda x, t: spec.jvp(lambda v: sadc.checkpoint_name(v, "n"),
                                              (x,), (t,)))(X3, X3)
    j = jax.make_jaxpr(lambda x, t: jax.jvp(lambda v: jname(v, "n"),
                                            (x,), (t,)))(X3, X3)
    assert str(s) == str(j)
    # Transpose: identity; pytrees are named leaf by leaf.
    (ct,) = spec.linear_transpose(lambda v: sadc.checkpoint_name(v, "n"), X3)(X3 * 2)
    np.testing.assert_array_equal(ct, X3 * 2)
    tree = sadc.checkpoint_name({"a": X3, "b": (X3, X3)}, "t")
    assert sorted(tree) == ["a", "b"] and len(tree["b"]) == 2


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("i", range(8))
def test_grads_equal_jax_and_uncheckpointed(i: int) -> None:
    for prog in (f_named, f_nested):
        plain = spec.grad(prog(snp, sadc))(X3)
        sf = sadc.checkpoint(prog(snp, sadc), policy=policies(sadc)[i])
        got = spec.grad(sf)(X3)
        assert _bits(got) == _bits(plain)
        with spec.config.use_direct_linearize(False):
            assert _bits(spec.grad(sf)(X3)) == _bits(got)
        want = jax.grad(jax.checkpoint(prog(jnp, jadc), policy=policies(jadc)[i]))(X3)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)  # sin/cos: a few ULPs


def test_grad_of_grad_and_vjp_and_pytrees() -> None:
    def f(np_: Any) -> Callable[[Any], Any]:
        return lambda x: np_.sin(np_.sin(x)) * x
    for direct in (True, False):
        with spec.config.use_direct_linearize(direct):
            got = spec.grad(spec.grad(sadc.checkpoint(f(snp))))(1.5)
            assert _bits(got) == _bits(spec.grad(spec.grad(f(snp)))(1.5))
    want = jax.grad(jax.grad(jax.checkpoint(f(jnp))))(1.5)
    np.testing.assert_allclose(got, want, rtol=2e-6)

    def g(np_: Any, ac: Any) -> Callable[..., Any]:
        def body(p: dict[str, Any], x: Any) -> tuple[Any, Any]:
            return np_.sin(p["w"] * x), np_.cos(x) * p["b"]
        inner = ac.checkpoint(body)
        return lambda p, x: inner(p, x)[0].sum() + inner(p, x)[1].sum()
    p = {"w": X3, "b": X3 + 1}
    got_p = spec.grad(g(snp, sadc))(p, X3)
    want_p = jax.grad(g(jnp, jadc))(p, X3)
    for k in p:
        np.testing.assert_allclose(got_p[k], want_p[k], rtol=2e-6)
    out, vjp_fn = spec.vjp(sadc.remat(f_chain(snp, sadc)), X3)
    (ct,) = vjp_fn(np.ones(3, np.float32))
    np.testing.assert_array_equal(out, f_chain(snp, sadc)(X3))
    np.testing.assert_allclose(ct, jax.grad(lambda v: f_chain(jnp, jadc)(v).sum())(X3),
                               rtol=2e-6)
    # jvp through checkpoint is the plain JVP.
    t = np.full(3, 0.5, np.float32)
    assert _bits(spec.jvp(sadc.checkpoint(f_chain(snp, sadc)), (X3,), (t,))[1]) == \
        _bits(spec.jvp(f_chain(snp, sadc), (X3,), (t,))[1])


# ------------------------------------------------------------- residuals


@pytest.mark.parametrize("i", range(8))
def test_saved_residuals_per_policy(i: int) -> None:
    # Nested checkpoints are compared under the default policy only: their
    # calls are split differently from JAX otherwise (see notes/spec_ad_remat.md).
    progs = (f_chain, f_named, f_nested) if i == 0 else (f_chain, f_named)
    for prog in progs:
        sf = sadc.checkpoint(prog(snp, sadc), policy=policies(sadc)[i])
        jf = jax.checkpoint(prog(jnp, jadc), policy=policies(jadc)[i])
        assert _residuals(sadc, sf, X3) == _residuals(jadc, jf, X3)
    # Without checkpoint: the residuals the plain rules save.
    assert _residuals(sadc, f_chain(snp, sadc), X3) == _residuals(jadc, f_chain(jnp, jadc), X3)


def test_saved_residuals_argument_names_and_print() -> None:
    def loss(np_: Any) -> Callable[..., Any]:
        def f(params: list[Any], x: Any, y: Any) -> Any:
            return np_.sum(np_.sin(params[0] * x) * params[1]["a"] - y)
        return f
    args = ([X3, {"a": X3}], X3)
    assert _residuals(sadc, loss(snp), *args, X3) == _residuals(jadc, loss(jnp), *args, X3)
    c = np.ones(3, np.float32)
    assert _residuals(sadc, sadc.checkpoint(lambda x: snp.sin(x) * c), X3) == \
        _residuals(jadc, jax.checkpoint(lambda x: jnp.sin(x) * c), X3)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        sadc.print_saved_residuals(f_chain(snp, sadc), np.float32(2.0))
    lines = buf.getvalue().splitlines()
    assert lines[0] == "f32[] from the argument x"
    assert [ln.split(" from ")[0] for ln in lines] == \
        ["f32[]", "f32[] output of sin", "f32[] output of sin", "f32[] output of cos"]


_DOTS_READY = not any(p in ("dot_general", "tanh") and s in ("jvp", "transpose")
                      for p, s, _ in missing_sections())


@pytest.mark.skipif(not _DOTS_READY, reason="dot_general/tanh autodiff rules not landed yet")
def test_mlp_with_dots_policies() -> None:
    def mlp(np_: Any) -> Callable[..., Any]:
        def f(W1: Any, W2: Any, x: Any) -> Any:
            h = np_.tanh(np_.dot(W1, x))
            return np_.sum(np_.tanh(np_.dot(W2, h)))
        return f
    rng = np.random.default_rng(0)
    W1 = rng.standard_normal((4, 3)).astype(np.float32)
    W2 = rng.standard_normal((2, 4)).astype(np.float32)
    try:  # the rules of other families are being written concurrently
        spec.grad(mlp(snp), argnums=(0, 1))(W1, W2, X3)
    except (NotImplementedError, AttributeError) as err:
        pytest.skip(f"plain grad of the MLP does not run yet: {err}")
    for pol_s, pol_j in [(None, None), (SP.dots_saveable, JP.dots_saveable),
                         (SP.dots_with_no_batch_dims_saveable,
                          JP.dots_with_no_batch_dims_saveable)]:
        sf = sadc.checkpoint(mlp(snp), policy=pol_s)
        jf = jax.checkpoint(mlp(jnp), policy=pol_j)
        assert _residuals(sadc, sf, W1, W2, X3) == _residuals(jadc, jf, W1, W2, X3)
        got = spec.grad(sf, argnums=(0, 1))(W1, W2, X3)
        plain = spec.grad(mlp(snp), argnums=(0, 1))(W1, W2, X3)
        want = jax.grad(jf, argnums=(0, 1))(W1, W2, X3)
        for a, b, c in zip(got, plain, want):
            assert _bits(a) == _bits(b)
            np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------- errors


def test_bad_static_argnums_raise_like_jax() -> None:
    bads: list[Any] = ["a", [1], (5,)]
    for bad in bads:
        errors_alike(lambda: sadc.checkpoint(lambda x, n: x * n, static_argnums=bad)(X3, 2),
                     lambda: jax.checkpoint(lambda x, n: x * n, static_argnums=bad)(X3, 2))


def test_policy_namespace_matches_jax() -> None:
    jax_names = {n for n in vars(JP) if not n.startswith("_")}
    spec_names = {n for n in vars(SP) if not n.startswith("_")}
    assert spec_names == jax_names
