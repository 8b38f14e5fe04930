"""The interpreter: tracing, jit, make_jaxpr text, check_jaxpr, tracer errors."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as slax
from spec.errors import (
    ConcretizationTypeError,
    JaxprTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from spec._src.core.interpreter import Eqn, Var, check_jaxpr


def both(fn: Any) -> tuple[str, str]:
    """Run a program builder on (spec, spec.numpy) and (jax, jax.numpy)."""
    return fn(spec, snp), fn(jax, jnp)


X = np.arange(12, dtype=np.float32).reshape(3, 4)


def _prog(j: Any, n: Any) -> Any:
    def f(x: Any, y: Any) -> Any:
        z = n.sin(x) * 2.0
        return z + y, z * z
    return f


@pytest.mark.parametrize("builder", [
    lambda j, n: str(j.make_jaxpr(_prog(j, n))(X, 1.0)),
    lambda j, n: str(j.make_jaxpr(j.jit(_prog(j, n)))(X, 1.0)),
    lambda j, n: str(j.make_jaxpr(lambda x: j.jit(_prog(j, n))(x * 2, 3.0)[0]
                                  + j.jit(_prog(j, n))(x, 1.0)[0])(X)),
    lambda j, n: str(j.make_jaxpr(lambda x: x + np.arange(3.0))(np.ones(3, np.float32))),
    lambda j, n: str(j.make_jaxpr(lambda x: j.jit(lambda y: x + y)(x))(1.0)),
    lambda j, n: str(j.make_jaxpr(lambda x: j.jit(lambda y: y * np.arange(3.0))(x))(1.0)),
    lambda j, n: str(j.make_jaxpr(lambda x: (n.sin(x), x)[1])(1.0)),
    lambda j, n: str(j.make_jaxpr(lambda x: 1.0)(1.0)),
    lambda j, n: str(j.make_jaxpr(lambda x: (x, n.add(x, 1)))(1)),
    lambda j, n: str(j.make_jaxpr(lambda x: x * 1e-7 + np.float32(0.1))(1.0)),
    lambda j, n: str(j.make_jaxpr(lambda d: d["a"] * d["b"])({"a": 1.0, "b": X})),
])
def test_jaxpr_text_matches_jax(builder: Any) -> None:
    ours, theirs = both(builder)
    assert ours == theirs


def test_shared_jaxpr_names_are_unique() -> None:
    def prog(j: Any, n: Any) -> str:
        f = j.jit(lambda x: x * 2.0)
        g = j.jit(lambda x: x + 1.0)
        return str(j.make_jaxpr(lambda x: g(g(f(f(x)))))(1.0))
    ours, theirs = both(prog)
    assert ours == theirs


def test_long_lines_break_like_jax() -> None:
    def prog(j: Any, n: Any) -> str:
        def f(a: Any, b: Any, c: Any, d: Any, e: Any, g: Any, h: Any, i: Any) -> Any:
            return a + b + c + d + e + g + h + i
        args = [np.ones((2, 3, 4, 5), np.float32)] * 8
        return str(j.make_jaxpr(j.jit(f))(*args))
    ours, theirs = both(prog)
    assert ours == theirs


def test_jit_values_and_cache() -> None:
    calls = []

    def f(x: Any, y: Any) -> Any:
        calls.append(1)
        return snp.sin(x) * y

    g = spec.jit(f)
    a = g(X, 2.0)
    b = g(X + 1, 3.0)
    assert len(calls) == 1  # same types: one trace
    np.testing.assert_allclose(np.asarray(a), np.sin(X) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b), np.sin(X + 1) * 3, rtol=1e-6)
    g(X.astype(np.int32), 2.0)
    assert len(calls) == 2  # a new dtype retraces


def test_jit_statics() -> None:
    def f(x: Any, n: int, *, mode: str) -> Any:
        return x * float(n) if mode == "mul" else x + float(n)

    g = spec.jit(f, static_argnums=1, static_argnames="mode")
    h = jax.jit(f, static_argnums=1, static_argnames="mode")
    assert float(g(2.0, 3, mode="mul")) == float(h(2.0, 3, mode="mul")) == 6.0
    assert float(g(2.0, 3, mode="add")) == float(h(2.0, 3, mode="add")) == 5.0
    for jitted in (g, h):
        with pytest.raises(ValueError):
            jitted(2.0, [1], mode="mul")


def test_jit_weak_type_preserved() -> None:
    out = spec.jit(lambda x: x * 2)(3.0)
    ref = jax.jit(lambda x: x * 2)(3.0)
    assert repr(out) == repr(ref)


def test_jit_trace_and_lower() -> None:
    g = spec.jit(lambda x: x * 2.0)
    traced = g.trace(1.0)
    assert str(traced.jaxpr) == str(jax.jit(lambda x: x * 2.0).trace(1.0).jaxpr)
    assert repr(traced.out_info) == repr(jax.jit(lambda x: x * 2.0).trace(1.0).out_info)
    compiled = g.lower(1.0).compile()
    assert float(compiled(4.0)) == 8.0


@pytest.mark.parametrize("fn, jax_cls, spec_cls", [
    (lambda x: bool(x), jax.errors.TracerBoolConversionError, TracerBoolConversionError),
    (lambda x: int(x), jax.errors.ConcretizationTypeError, ConcretizationTypeError),
    (lambda x: float(x), jax.errors.ConcretizationTypeError, ConcretizationTypeError),
    (lambda x: np.asarray(x), jax.errors.TracerArrayConversionError, TracerArrayConversionError),
    (lambda x: [0, 1][x], jax.errors.TracerIntegerConversionError, TracerIntegerConversionError),
])
def test_concretization_errors(fn: Any, jax_cls: type, spec_cls: type) -> None:
    with pytest.raises(jax_cls):
        jax.jit(fn)(1)
    with pytest.raises(spec_cls):
        spec.jit(fn)(1)
    assert [c.__name__ for c in spec_cls.__mro__] == [c.__name__ for c in jax_cls.__mro__]


def test_leaked_tracer() -> None:
    leaked: list[Any] = []
    spec.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(UnexpectedTracerError):
        snp.sin(leaked[0])
    with pytest.raises(UnexpectedTracerError):
        spec.make_jaxpr(lambda y: y + leaked[0])(1.0)


def test_check_jaxpr_accepts_traced_and_rejects_broken() -> None:
    jaxpr = spec.make_jaxpr(spec.jit(_prog(spec, snp)))(X, 1.0)
    check_jaxpr(jaxpr)
    eqn = jaxpr.eqns[0]
    wrong = Var(spec._src.core.types.ArrayType((7,), np.dtype(np.float32)))
    broken = spec._src.core.interpreter.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars,
                                    [Eqn(eqn.invars, [wrong, *eqn.outvars[1:]], eqn.primitive,
                                         eqn.params)])
    with pytest.raises(JaxprTypeError):
        check_jaxpr(broken)
    unbound = spec._src.core.interpreter.Jaxpr([], [], [Var(wrong.aval)], [])
    with pytest.raises(JaxprTypeError):
        check_jaxpr(unbound)


def test_lax_binary_typing_matches_jax() -> None:
    cases = [(np.ones(2, np.float32), 2.0), (np.ones(2, np.float32), 2),
             (np.ones(2, np.float16), 2.0), (np.ones(2, np.float32), np.ones(3, np.float32)),
             (np.ones((2, 3), np.float32), np.ones((1, 3), np.float32)),
             (np.ones((2, 3), np.float32), np.ones((3,), np.float32))]
    for a, b in cases:
        try:
            want = jax.lax.add(a, b)
        except TypeError:
            with pytest.raises(TypeError):
                slax.add(a, b)
            continue
        got = slax.add(a, b)
        assert repr(got) == repr(want)


def test_array_repr_matches_jax() -> None:
    values = [np.arange(6.0, dtype=np.float32).reshape(2, 3), np.array([1, 2], np.int8),
              np.array([True, False]), np.zeros((0, 3), np.float32),
              np.arange(100, dtype=np.float32)]
    for v in values:
        assert repr(snp.asarray(v)) == repr(jnp.asarray(v))
    assert repr(snp.asarray(2.0)) == repr(jnp.asarray(2.0))
    assert repr(snp.asarray(3)) == repr(jnp.asarray(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_constant_read_twice_is_one_constvar(dtype: Any) -> None:
    """A closed-over NumPy array used twice is captured once (JAX keys
    constants by object), also when x64 canonicalisation converts it."""
    c = np.arange(3.0).astype(dtype)
    x = np.ones(3, np.float32)
    ours = str(spec.make_jaxpr(lambda v: v * c + v * c)(x))
    theirs = str(jax.make_jaxpr(lambda v: v * c + v * c)(x))
    assert ours == theirs
    c[0] = 5.0  # evaluation never reuses a conversion: the array may change
    np.testing.assert_array_equal(np.asarray(snp.ones(3) * c), [5.0, 1.0, 2.0])
