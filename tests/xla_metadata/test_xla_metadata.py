"""``jax.experimental.xla_metadata`` on spec and on JAX 0.12.0.1, live: the
same programs (one definition, built with either library) print the same
jaxprs under jit, vmap, grad, vjp, jvp and linearize; the metadata spec
says each equation's operation carries (``frontend_attributes``) is what
JAX's lowered text shows as ``mhlo.frontend_attributes`` on the
corresponding operation; values are JAX's; bad arguments raise JAX's
exception class and message; the context manager re-traces jitted
functions per distinct metadata, as JAX does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.experimental.xla_metadata as jax_xm
import numpy as np
import pytest

import spec
import spec.experimental.xla_metadata as spec_xm
from spec._src.interpreters import ad
from spec._src.lax.xla_metadata import frontend_attributes
from tests.xla_metadata.lowered import assert_same_attributes
from tests.support.pair import class_and_message

LIBS = {"jax": (jax, jax_xm), "spec": (spec, spec_xm)}
Build = Callable[[Any, Any], Callable[..., Any]]


def _both(build: Build) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return build(jax, jax_xm), build(spec, spec_xm)


def _same_jaxpr(build: Build, transform: Callable[[Any], Callable[..., Any]] | None,
                *args: Any) -> Any:
    """The spec jaxpr of ``transform(f)``, after checking it prints as JAX's."""
    f_jax, f_spec = _both(build)
    t_jax = f_jax if transform is None else transform(jax)(f_jax)
    t_spec = f_spec if transform is None else transform(spec)(f_spec)
    expected = str(jax.make_jaxpr(t_jax)(*args))
    got = spec.make_jaxpr(t_spec)(*args)
    assert str(got) == expected
    return got


def _same_attributes(build: Build, transform: Callable[[Any], Callable[..., Any]] | None,
                     *args: Any) -> None:
    """The jaxprs print alike, and each equation's attributes are JAX's."""
    got = _same_jaxpr(build, transform, *args)
    f_jax = build(jax, jax_xm)
    t_jax = f_jax if transform is None else transform(jax)(f_jax)
    assert assert_same_attributes(got, jax.jit(t_jax).lower(*args).as_text()) > 0


# ------------------------------------------------------------------ programs

def _block(lib: Any, xm: Any) -> Callable[..., Any]:
    jnp = lib.numpy

    @xm.xla_metadata_call(tag="my_block", group=3, on=True, scale=0.5)
    def block(x: Any) -> Any:
        return jnp.sin(x) * jnp.cos(x)

    return lambda x: block(x) + 1.0


def _two_outputs(lib: Any, xm: Any) -> Callable[..., Any]:
    jnp = lib.numpy

    @xm.xla_metadata_call(tag="pair")
    def pair(x: Any, y: Any) -> Any:
        return {"s": jnp.sin(x) * y, "c": jnp.cos(y)}

    def f(x: Any, y: Any) -> Any:
        out = pair(x, y)
        return out["s"] * out["c"]

    return f


def _call2(ad_metadata: Any) -> Build:
    def build(lib: Any, xm: Any) -> Callable[..., Any]:
        return xm.xla_metadata_call2(lambda x: lib.numpy.sin(x) * x, {"tag": "x"},
                                     ad_metadata=ad_metadata)
    return build


def _context(lib: Any, xm: Any) -> Callable[..., Any]:
    jnp = lib.numpy
    inner = lib.jit(lambda x: jnp.exp(x))

    def h(x: Any) -> Any:
        with xm.set_xla_metadata(a=1, b="x"):
            y = jnp.sin(x) * x
            with xm.set_xla_metadata(b=None, c=False):
                z = inner(y)
        return -(y + z)

    return h


def _value_tag(lib: Any, xm: Any) -> Callable[..., Any]:
    jnp = lib.numpy

    def g(x: Any) -> Any:
        y = jnp.sin(x)
        z = jnp.cos(x)
        with xm.set_xla_metadata(k="ctx"):
            w = xm.set_xla_metadata(xm.set_xla_metadata(y * z, breakpoint=True), k="v", n=2)
        return xm.set_xla_metadata(-w, k="outer")

    return g


def _nested(lib: Any, xm: Any) -> Callable[..., Any]:
    jnp = lib.numpy

    @xm.xla_metadata_call(level="inner")
    def inner(x: Any) -> Any:
        return jnp.exp(x)

    @xm.xla_metadata_call(level="outer", extra="e")
    def outer(x: Any) -> Any:
        return inner(x) * x

    def f(x: Any) -> Any:
        with xm.set_xla_metadata(level="ctx", ambient=1):
            return outer(x)

    return f


# ------------------------------------------------------------------- jaxprs

GRAD = lambda lib: lib.grad  # noqa: E731
VMAP = lambda lib: lib.vmap  # noqa: E731


def _jvp(lib: Any) -> Callable[[Any], Any]:
    return lambda f: lambda x: lib.jvp(f, (x,), (x * 2.0,))


def _vjp(lib: Any) -> Callable[[Any], Any]:
    def t(f: Any) -> Any:
        def run(x: Any) -> Any:
            out, pullback = lib.vjp(f, x)
            return out, pullback(out)
        return run
    return t


def _linearize(lib: Any) -> Callable[[Any], Any]:
    return lambda f: lambda x: lib.linearize(f, x)[1](x)


@pytest.mark.parametrize("transform", [None, GRAD, VMAP, _jvp, _vjp, _linearize],
                         ids=["plain", "grad", "vmap", "jvp", "vjp", "linearize"])
def test_call_jaxprs_and_attributes(transform: Any) -> None:
    x = np.float32(0.7) if transform is not VMAP else np.arange(3, dtype=np.float32)
    _same_attributes(_block, transform, x)


@pytest.mark.parametrize("ad_metadata", ["same", "drop", {"tag": "y", "stage": 2}],
                         ids=["same", "drop", "retag"])
@pytest.mark.parametrize("transform", [GRAD, _vjp, _linearize, _jvp],
                         ids=["grad", "vjp", "linearize", "jvp"])
def test_call2_ad_metadata(ad_metadata: Any, transform: Any) -> None:
    _same_attributes(_call2(ad_metadata), transform, np.float32(1.3))


def test_call_pytrees_and_two_arguments() -> None:
    x, y = np.float32(0.5), np.float32(2.0)
    _same_jaxpr(_two_outputs, None, x, y)
    _same_attributes(_two_outputs, lambda lib: lambda f: lib.grad(f, argnums=(0, 1)), x, y)


def test_grad_of_vmap_and_vmap_of_grad() -> None:
    xs = np.linspace(0.0, 1.0, 4, dtype=np.float32)

    def grad_of_vmap(lib: Any) -> Callable[[Any], Any]:
        return lambda f: lib.grad(lambda x: lib.numpy.sum(lib.vmap(f)(x)))

    _same_attributes(_call2({"tag": "y"}), grad_of_vmap, xs)
    # (the lowering broadcasts the unbatched scalar residuals: jaxprs only)
    _same_jaxpr(_call2("drop"), lambda lib: lambda f: lib.vmap(lib.grad(f)), xs)


def test_nested_calls_and_context() -> None:
    _same_attributes(_nested, None, np.float32(0.3))
    _same_attributes(_nested, GRAD, np.float32(0.3))


def test_context_manager_tags_every_equation() -> None:
    _same_attributes(_context, None, np.float32(0.4))
    _same_attributes(_context, GRAD, np.float32(0.4))
    _same_attributes(_context, VMAP, np.arange(3, dtype=np.float32))


def test_value_tags() -> None:
    _same_attributes(_value_tag, None, np.float32(0.4))
    # the backward pass is not tagged
    _same_attributes(_value_tag, GRAD, np.float32(0.4))
    _same_attributes(_value_tag, VMAP, np.arange(3, dtype=np.float32))


def test_must_fuse_call_and_fuse_limit() -> None:
    def build(lib: Any, xm: Any) -> Callable[..., Any]:
        jnp = lib.numpy

        def f(x: Any) -> Any:
            y = xm.must_fuse_call("1")(lambda v: jnp.sum(v * v))(x)
            with xm.fuse_limit():
                z = jnp.exp(x)
            return y, z

        return f

    _same_attributes(build, None, np.arange(4, dtype=np.float32))


def test_decorator_form_of_the_context_manager() -> None:
    def build(lib: Any, xm: Any) -> Callable[..., Any]:
        @xm.set_xla_metadata(deco="yes")
        def f(x: Any) -> Any:
            return lib.numpy.sin(x)

        return lambda x: f(x) * 2.0

    _same_attributes(build, None, np.float32(0.5))
    # attribute access goes through to the function (a jitted one's lower)
    for lib, xm in LIBS.values():
        tagged = xm.set_xla_metadata(deco="yes")(lib.jit(lambda x: x + 1.0))
        assert tagged.__name__ == "<lambda>"
        assert hasattr(tagged.lower(1.0), "as_text")


# ------------------------------------------------------------------- values

@pytest.mark.parametrize("build", [_block, _context, _value_tag, _nested, _call2("drop")])
def test_values_match_jax(build: Build) -> None:
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    f_jax, f_spec = _both(build)
    # eager, jitted, and the derivative per element (transcendentals within
    # a few ULPs of XLA's)
    for run in (lambda lib, f: f, lambda lib, f: lib.jit(f),
                lambda lib, f: lib.vmap(lib.grad(f))):
        np.testing.assert_allclose(np.asarray(run(spec, f_spec)(x)),
                                   np.asarray(run(jax, f_jax)(x)), rtol=1e-6, atol=1e-7)


# -------------------------------------------------------------- cache keys

def test_context_is_part_of_the_jit_cache_key() -> None:
    counts = {}
    for name, (lib, xm) in LIBS.items():
        traces = []

        @lib.jit
        def f(x: Any) -> Any:
            traces.append(1)
            return x * 2.0

        f(1.0)
        with xm.set_xla_metadata(k="a"):
            f(1.0)
            f(1.0)
        with xm.set_xla_metadata(k="b"):
            f(1.0)
        with xm.set_xla_metadata(k="a"):
            f(1.0)
        with xm.set_xla_metadata():  # no metadata: the plain entry
            f(1.0)
        f(1.0)
        with xm.set_xla_metadata(k=None):  # an empty metadata: another entry
            f(1.0)
        with xm.set_xla_metadata(k="a"), xm.set_xla_metadata(k=None):
            f(1.0)
        counts[name] = len(traces)
    assert counts["spec"] == counts["jax"] == 4


def test_call_does_not_retrace_enclosing_jit() -> None:
    for lib, xm in LIBS.values():
        traces = []

        @lib.jit
        def f(x: Any) -> Any:
            traces.append(1)
            return xm.xla_metadata_call(tag="t")(lib.numpy.sin)(x)

        f(1.0)
        f(2.0)
        assert len(traces) == 1


# ------------------------------------------------------------------- errors

def _error(fn: Callable[[Any], Any]) -> dict[str, tuple[type, str]]:
    out = {}
    for name, (_, xm) in LIBS.items():
        out[name] = class_and_message(lambda: fn(xm))
    return out


@pytest.mark.parametrize("call", [
    lambda xm: xm.xla_metadata_call(tag=[1])(lambda x: x),
    lambda xm: xm.xla_metadata_call(lambda x: x, tag=None),
    lambda xm: xm.xla_metadata_call2(lambda x: x, {"t": "x"}, ad_metadata="keep"),
    lambda xm: xm.xla_metadata_call2(lambda x: x, {"t": "x"}, ad_metadata={"t": (1,)}),
    lambda xm: xm.xla_metadata_call2(lambda x: x, [("t", "x")]),
    lambda xm: xm.xla_metadata_call2(3, {"t": "x"}),
], ids=["list-value", "none-value", "bad-ad", "bad-ad-value", "not-a-dict", "not-callable"])
def test_bad_arguments_raise_as_jax(call: Callable[[Any], Any]) -> None:
    errors = _error(call)
    assert errors["spec"] == errors["jax"]


def test_call2_as_decorator_with_dict_first() -> None:
    for lib, xm in LIBS.values():
        @xm.xla_metadata_call2({"scheduling_group": "l3"},
                               ad_metadata={"scheduling_group": "l3_bwd"})
        def layer(x: Any) -> Any:
            return lib.numpy.sin(x) * lib.numpy.cos(x)

        assert float(layer(0.5)) == pytest.approx(np.sin(0.5) * np.cos(0.5), rel=1e-6)


def test_public_names_are_jax_s() -> None:
    public = {n for n in dir(jax_xm) if not n.startswith("_")} - {"annotations", "contextlib"}
    assert public <= set(dir(spec_xm))


def test_nested_calls_return_each_residual_once() -> None:
    """jit shares the call rules: a residual that is a primal output of an
    inner call is returned once, as JAX prints it."""
    def build(lib: Any, xm: Any) -> Callable[..., Any]:
        inner = lib.jit(lambda x: lib.numpy.exp(x))
        return lib.jit(lambda x: inner(x) * x)

    _same_jaxpr(build, GRAD, np.float32(0.3))
    _same_jaxpr(build, lambda lib: lambda f: lib.vmap(lib.grad(f)), np.ones(2, np.float32))


def test_calls_on_user_defined_types() -> None:
    """A call whose operands or results are hi-typed runs on their
    components: the same values as the program without the call."""
    from tests.hijax.test_hitype_properties import dequantize, quantize

    x = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
    tagged_q = spec_xm.xla_metadata_call(tag="q")(quantize)
    tagged_d = spec_xm.xla_metadata_call(tag="d")(dequantize)
    want = np.asarray(spec.jit(lambda x: dequantize(quantize(x)))(x))
    np.testing.assert_array_equal(np.asarray(tagged_d(tagged_q(x))), want)
    np.testing.assert_array_equal(np.asarray(spec.jit(lambda x: tagged_d(tagged_q(x)))(x)), want)
    eqns = spec.make_jaxpr(lambda x: tagged_d(tagged_q(x)))(x).jaxpr.eqns
    assert [dict(e.params["xla_metadata"]) for e in eqns] == [{"tag": "q"}, {"tag": "d"}]


def test_a_body_s_jvp_is_traced_per_ambient_metadata() -> None:
    """Deriving a body's JVP again in another metadata block tags the JVP's
    equations with that block, exactly as deriving it from a fresh copy of
    the body does (a cache must not show)."""
    def body() -> Any:
        return spec.make_jaxpr(lambda x: spec.numpy.sin(x) * x)(1.0).jaxpr

    once = body()
    for tag in ["1", "2"]:
        with spec_xm.set_xla_metadata(k=tag):
            again = frontend_attributes(ad.jvp_jaxpr(once, [True])[0])
            fresh = frontend_attributes(ad.jvp_jaxpr(body(), [True])[0])
        assert again == fresh and {"k": tag} in fresh
