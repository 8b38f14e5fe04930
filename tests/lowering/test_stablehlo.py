"""spec's StableHLO text, compiled by the installed jaxlib and run on JAX's
CPU device, computes what spec's own evaluation computes; and for a small
program it is JAX's own lowering text up to SSA names and attributes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax
from jax._src import xla_bridge
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import xla_client
from jax._src.lib.mlir import ir
from jax.extend.core import Primitive

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.core.interpreter import Primitive as SpecPrimitive
from spec._src.core.registry import REGISTRY
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, lowered, parsed, spec_and_compiled


def _compile_and_run(text: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """Compile StableHLO module text with jaxlib's CPU client and run it."""
    backend = xla_bridge.get_backend("cpu")
    device = backend.devices()[0]
    exe = backend.compile_and_load(text, xla_client.DeviceList((device,)),
                                   xla_client.CompileOptions())
    results = exe.execute_sharded([jax.device_put(a, device) for a in args])
    return [np.asarray(r[0]) for r in results.disassemble_into_single_device_arrays()]


def _spec_and_compiled(fn: Callable[..., Any], args: list[np.ndarray]
                       ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    jaxpr = spec.make_jaxpr(fn)(*args)
    text = lower_jaxpr(jaxpr, "f")
    ours = [np.asarray(o) for o in spec.tree_util.tree_leaves(spec.jit(fn)(*args))]
    return ours, _compile_and_run(text, args), text


_rng = np.random.default_rng(0)
X = _rng.integers(-4, 5, (2, 3)).astype(np.float32)
Y = _rng.integers(-4, 5, (2, 3)).astype(np.float32)
I = _rng.integers(-9, 10, (2, 3)).astype(np.int32)
U = _rng.uniform(0.1, 3.0, (4, 5)).astype(np.float32)


def exact_program(x: Any, y: Any, i: Any) -> Any:
    """Ops whose results are exact here (small integers in float32)."""
    s = x * y + 1.0 - (-x)
    m = slax.max(x, y)
    sel = slax.select_n(x > y, x, y)
    cmp = (i <= 3, i == i, x != y)
    f = slax.convert_element_type(i, np.float32)
    b = slax.broadcast_in_dim(x, (4, 2, 3), (1, 2))
    r = slax.reshape(x, (3, 2))
    t = slax.transpose(x, (1, 0))
    red = (slax.reduce_sum_p.bind(x, axes=(1,), out_sharding=None),
           slax.reduce_max_p.bind(y, axes=(0,), out_sharding=None))
    d = slax.dot_general(x, t, (((1,), (0,)), ((), ())))
    bd = slax.dot_general(b, b, (((2,), (2,)), ((0,), (0,))))
    ints = (i * i - i, i & 5, i ^ 3, slax.shift_left(i, np.int32(2)), i // 2, i % 4)
    more = (slax.integer_pow(x, 5), slax.integer_pow(x + 10.0, -2), slax.integer_pow(x, 0),
            slax.square(x), slax.reduce_min_p.bind(x, axes=(0,), out_sharding=None),
            snp.prod(x, axis=1), snp.all(x > 0, axis=1), snp.any(x > 0, axis=0),
            slax.rev(x, (0,)),
            slax.squeeze(slax.broadcast_in_dim(x, (1, 2, 3), (1, 2)), (0,)),
            slax.concatenate([x, y], 1),
            slax.iota(np.int32, 4), slax.clamp(np.float32(-1.0), x, np.float32(1.5)))
    z = slax.complex(x, y)
    pieces = (slax.slice(b, (1, 0, 0), (4, 2, 3), (2, 1, 2)), slax.slice(x, (0, 1), (2, 3)),
              slax.pad(x, np.float32(7.0), ((1, 2, 1), (0, 1, 0))),
              slax.round(x * 0.5), slax.round(x * 0.5, slax.RoundingMethod.TO_NEAREST_EVEN),
              slax.real(z), slax.imag(z), slax.copy_p.bind(x))
    # Unsigned sign (no stablehlo.sign), bitwise reduce_and of integers (from
    # all bits set), a closed-over int64 NumPy array (an int32 constant), a
    # reshape with dimensions (a transpose first).
    u = slax.convert_element_type(i, np.uint8)
    bits = (slax.sign(u), slax.reduce_and(i, (1,)), slax.reduce_and(u, (0,)),
            i + np.arange(3), slax.reshape(x, (3, 2), (1, 0)))
    return s, m, sel, cmp, f, b, r, t, red, d, bd, ints, more, pieces, bits


def transcendental_program(u: Any) -> Any:
    return snp.sin(u), snp.exp(u), snp.tanh(u), snp.log(u), snp.sqrt(u)


@pytest.fixture(scope="module")
def exact() -> tuple[list[np.ndarray], list[np.ndarray], str]:
    return _spec_and_compiled(exact_program, [X, Y, I])


def test_exact_ops_bitwise(exact: tuple[list[np.ndarray], list[np.ndarray], str]) -> None:
    ours, compiled, _ = exact
    assert len(ours) == len(compiled)
    for a, b in zip(ours, compiled):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    return int(np.max(np.abs(ia - ib)))


def test_transcendental_ops_within_two_ulps() -> None:
    """spec's impls of sin/exp/log agree with XLA's CPU kernels to 1 ULP in
    float32, tanh to 2, sqrt exactly; the compiled text is bit for bit what
    ``jax.jit`` of the same function computes."""
    ours, compiled, _ = _spec_and_compiled(transcendental_program, [U])
    for a, b in zip(ours, compiled):
        assert _ulps(a, b) <= 2
    np.testing.assert_array_equal(ours[-1], compiled[-1])
    jitted = jax.jit(lambda u: (jnp.sin(u), jnp.exp(u), jnp.tanh(u), jnp.log(u),
                                jnp.sqrt(u)))(U)
    for b, c in zip(compiled, jitted):
        assert b.tobytes() == np.asarray(c).tobytes()


_MODULE_ATTRS = re.compile(r"^module @\w+( attributes \{[^\n]*\})? \{", re.M)
_RESULT_INFO = re.compile(r" \{jax\.result_info = \"[^\"]*\"\}")


def _canonical(text: str) -> str:
    """The module as jaxlib's MLIR printer prints it (SSA names, constant
    spelling and loc(...) become canonical), without JAX's module and
    result attributes."""
    text = _MODULE_ATTRS.sub("module @jit_f {", _RESULT_INFO.sub("", text))
    with jax_mlir.make_ir_context():
        return str(ir.Module.parse(text))


def _text_program(lax: Any, numpy: Any) -> Callable[..., Any]:
    """One program written against either JAX's or spec's lax and numpy."""
    def fn(x: Any, y: Any, i: Any) -> Any:
        t = lax.transpose(x, (1, 0))
        return (numpy.sin(x) * y + 1.0, lax.select_n(x > y, x, y), i < 3,
                lax.reduce_sum_p.bind(x, axes=(1,), out_sharding=None),
                lax.reduce_max_p.bind(x, axes=(0,), out_sharding=None),
                lax.dot_general(x, t, (((1,), (0,)), ((), ()))),
                lax.convert_element_type(i, np.float32), lax.reshape(x, (3, 2)),
                lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)), lax.integer_pow(x, 5),
                lax.slice(x, (0, 1), (2, 3)), lax.pad(x, np.float32(0), ((1, 0, 1), (0, 2, 0))),
                lax.concatenate([x, y], 0), lax.rev(x, (1,)), lax.iota(np.int32, 3))
    return fn


def test_text_matches_jax_lowering() -> None:
    theirs = jax.jit(_text_program(jlax, jnp)).lower(X, Y, I).as_text()
    ours = lower_jaxpr(spec.make_jaxpr(_text_program(slax, snp))(X, Y, I), "f")
    assert _canonical(ours) == _canonical(theirs)
    # Lowered.as_text() keeps JAX's module attributes and result names.
    lowered = spec.jit(_text_program(slax, snp)).lower(X, Y, I).as_text()
    assert parsed(lowered) == parsed(theirs)


def _nested_program(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    """Nested jits: one jitted function called twice at the same types, a
    lambda, one called inside a loop, one with ``inline=True``."""
    def inner(v: Any) -> Any:
        return numpy.sin(v) * 3.0

    def fn(x: Any, y: Any) -> Any:
        a, b = lib.jit(inner)(x), lib.jit(inner)(y)
        c = lib.jit(lambda v: v + 1.0)(a)
        d = lax.while_loop(lambda k: k[0] < 3, lambda k: (k[0] + 1, lib.jit(numpy.cos)(k[1])),
                           (0, b))[1]
        return a + b + c + d, lib.jit(lambda v: v * 2.0, inline=True)(x)
    return fn


def test_nested_jit_is_a_private_function_as_in_jax() -> None:
    theirs = jax.jit(_nested_program(jax, jlax, jnp)).lower(X, Y).as_text()
    ours = spec.jit(_nested_program(spec, slax, snp)).lower(X, Y).as_text()
    assert _canonical(ours) == _canonical(theirs)
    assert ours.count("func.func private @inner(") == 1 and 'func.call @"<lambda>"(' in ours
    # The call is located at the jit; the function's ops relative to it.
    located = spec.jit(_nested_program(spec, slax, snp)).lower(X, Y).as_text(debug_info=True)
    theirs = jax.jit(_nested_program(jax, jlax, jnp)).lower(X, Y).as_text(debug_info=True)
    for name in ('"jit(fn)/jit(inner)"', '"sin"', '"jit(fn)/while/body/jit(cos)"'):
        assert name in located and name in theirs


def test_primitive_without_lowering_raises_not_implemented() -> None:
    # A primitive built (not declared, so not registered) without a lowering.
    unlowered = SpecPrimitive("unlowered", typing=lambda x: [x], impl=lambda x: [x])
    jaxpr = spec.make_jaxpr(unlowered.bind)(X)
    with pytest.raises(NotImplementedError, match="unlowered"):
        lower_jaxpr(jaxpr, "f")
    # JAX raises the same class for a primitive with no translation rule.
    nolower = Primitive("nolower")
    nolower.def_abstract_eval(lambda x: x)
    nolower.def_impl(lambda x: x)
    with pytest.raises(NotImplementedError, match="nolower"):
        jax.jit(nolower.bind).lower(X)


def test_list_primitives_without_lowering() -> None:
    """Not a failure: prints which registered primitives have no lowering."""
    missing = sorted(n for n, p in REGISTRY.items() if not callable(p.lowering))
    print(f"{len(missing)} of {len(REGISTRY)} primitives have no lowering:", ", ".join(missing))
    assert len(missing) < len(REGISTRY)


def _dot_algorithms(lax: Any) -> Callable[..., Any]:
    def fn(x: Any, y: Any) -> Any:
        h, b = x.astype(np.float16), y.astype(ml_dtypes.bfloat16)
        return ([lax.dot(x, y.T, precision=p) for p in (
            "F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "DEFAULT")]
            + [lax.dot(h, h.T, precision="F16_F16_F16"),
               lax.dot(b.T, b, precision="BF16_BF16_F32", preferred_element_type=np.float32),
               lax.dot(h, y.T.astype(np.float16), precision="F32_F32_F32")])
    return fn


def test_dot_algorithms_lower_as_jax_on_cpu() -> None:
    """A dot algorithm (a preset JAX's CPU backend compiles) casts the
    operands to its types, carries its ``algorithm`` attribute and casts the
    result back: JAX's text; on integer-valued operands (exact products)
    XLA's values are spec's and JAX's bit for bit. Another preset is JAX's
    ValueError at lowering."""
    ours, compiled, text = spec_and_compiled(_dot_algorithms(slax), X, Y)
    assert canonical(text) == canonical(jax.jit(_dot_algorithms(jlax)).lower(X, Y).as_text())
    assert_bitwise(ours, compiled)
    assert_bitwise(compiled, [np.asarray(t) for t in jax.jit(_dot_algorithms(jlax))(X, Y)])
    with pytest.raises(ValueError, match="'TF32_TF32_F32' is not supported by dot_general on CPU"):
        lowered(lambda a, c: slax.dot(a, c.T, precision="TF32_TF32_F32"), X, Y)


_FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
           "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu"]


def _float8_round_trips(lax: Any) -> Callable[..., Any]:
    return lambda a: [lax.convert_element_type(lax.convert_element_type(
        a, getattr(ml_dtypes, n)), np.float32) for n in _FLOAT8]


def test_float8_types_lower_as_jax() -> None:
    """The float8 dtypes are MLIR's f8 element types (``f8E4M3FN``, ...):
    JAX's text (so XLA's conversions are JAX's), and XLA's values spec's
    (spec's NaNs may carry another sign)."""
    x = np.array([0.1, -1.5, 3.0, 448.0, 1e-3], np.float32)
    ours, compiled, text = spec_and_compiled(_float8_round_trips(slax), x)
    assert canonical(text) == canonical(jax.jit(_float8_round_trips(jlax)).lower(x).as_text())
    for a, b in zip(ours, compiled):
        np.testing.assert_array_equal(a, b)
