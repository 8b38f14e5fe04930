"""Generated code and the interpreter are one semantics: hypothesis-drawn
programs (elementwise math, integer arithmetic, reductions, shaping, dots,
scan, while/fori_loop, cond/switch, nested jit, and their gradients) give
the very same bits under jit whether the call runs its generated Python
code (``spec_jit_codegen`` True) or interprets its jaxpr (False), with
subnormal, signed-zero, infinite and NaN operands, in each floating-point
strategy (hardware flush-to-zero, explicit flushing, IEEE)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as jnp
from spec import lax
from spec._src.api import codegen
from spec._src.core import denormals
from spec._src.core.config import config
from spec._src.core.interpreter import eval_jaxpr

SHAPE = (3, 4)
Op = Callable[[Any, Any], Any]


def _scan_rows(x: Any, y: Any) -> Any:
    def body(c: Any, row: Any) -> Any:
        return c * 0.5 + jnp.sin(row), c * row
    carry, ys = lax.scan(body, y[0], x)
    return ys + carry


def _fori(x: Any, y: Any) -> Any:
    return lax.fori_loop(0, 3, lambda i, v: v * 0.75 + y * i.astype(np.float32), x)


def _while(x: Any, y: Any) -> Any:
    def cond(s: Any) -> Any:
        return s[0] < 4

    def body(s: Any) -> Any:
        return s[0] + 1, jnp.tanh(s[1]) + y
    return lax.while_loop(cond, body, (jnp.int32(0), x))[1]


def _cond(x: Any, y: Any) -> Any:
    return lax.cond(jnp.sum(x) > jnp.sum(y), lambda a, b: a * b - a, lambda a, b: a / (b + 3.0),
                    x, y)


def _switch(x: Any, y: Any) -> Any:
    index = jnp.nan_to_num(jnp.sum(x), nan=0.0, posinf=5.0, neginf=-5.0).astype(np.int32)
    return lax.switch(index, [jnp.sin, jnp.cos, lambda a: a * y], x)


def _integers(x: Any, y: Any) -> Any:
    a = jnp.nan_to_num(x * 100.0).astype(np.int32)
    b = jnp.nan_to_num(y * 7.0).astype(np.int32)
    return (a * b + a - b).astype(np.float32)


def _nested_jit(x: Any, y: Any) -> Any:
    return spec.jit(lambda a, b: jnp.exp(a) * b + 1.0)(x, y)


OPS: list[tuple[str, Op]] = [
    ("add", lambda x, y: x + y), ("sub", lambda x, y: x - y), ("mul", lambda x, y: x * y),
    ("div", lambda x, y: x / y), ("max", jnp.maximum), ("min", jnp.minimum),
    ("where", lambda x, y: jnp.where(x < y, x, y)), ("le", lambda x, y: jnp.where(x <= y, 1.0, y)),
    ("sin", lambda x, y: jnp.sin(x)), ("cos", lambda x, y: jnp.cos(y)),
    ("exp", lambda x, y: jnp.exp(x)), ("log", lambda x, y: jnp.log(jnp.abs(x))),
    ("tanh", lambda x, y: jnp.tanh(x)), ("sqrt", lambda x, y: jnp.sqrt(jnp.abs(y))),
    ("neg", lambda x, y: -x), ("abs", lambda x, y: jnp.abs(x)), ("scale", lambda x, y: x * 1e-39),
    ("sum", lambda x, y: x + jnp.sum(y, axis=0, keepdims=True)),
    ("reshape", lambda x, y: x.reshape(4, 3).T.reshape(SHAPE) + y),
    ("concat", lambda x, y: jnp.concatenate([x, y])[1:4]),
    ("dot", lambda x, y: (x @ y.T) @ x), ("integers", _integers),
    ("scan", _scan_rows), ("fori", _fori), ("while", _while), ("cond", _cond),
    ("switch", _switch), ("jit", _nested_jit),
]

SPECIAL = [0.0, -0.0, 1e-40, -3e-39, np.inf, -np.inf, np.nan, 1.5, -2.25, 3e38]


def _program(steps: list[tuple[int, int, int]]) -> Callable[[Any, Any], Any]:
    """A program over a pool of values: each step applies an op to two
    earlier values; the result is the last two values."""
    def f(x: Any, y: Any) -> Any:
        pool = [x, y]
        for op, i, j in steps:
            pool.append(OPS[op][1](pool[i % len(pool)], pool[j % len(pool)]))
        return pool[-1], pool[-2]
    return f


def _bits(tree: Any) -> list[bytes]:
    return [np.ascontiguousarray(np.asarray(leaf)).tobytes()
            for leaf in spec.tree_util.tree_leaves(tree)]


def _both(fun: Callable[..., Any], *args: Any) -> tuple[list[bytes], list[bytes]]:
    generated = _bits(spec.jit(fun)(*args))
    with config._override("spec_jit_codegen", False):
        interpreted = _bits(spec.jit(fun)(*args))
    return generated, interpreted


# (reverse mode does not differentiate a while loop)
DIFFERENTIABLE = [k for k, (name, _) in enumerate(OPS) if name != "while"]


def _steps(ops: list[int]) -> Any:
    return st.lists(st.tuples(st.sampled_from(ops), st.integers(0, 9), st.integers(0, 9)),
                    min_size=1, max_size=5)


def _array(draw: Any) -> np.ndarray:
    values = draw(st.lists(st.one_of(st.sampled_from(SPECIAL),
                                     st.floats(-10, 10, width=32)),
                           min_size=12, max_size=12))
    return np.asarray(values, np.float32).reshape(SHAPE)


@st.composite
def programs(draw: Any, ops: list[int] | None = None
             ) -> tuple[list[tuple[int, int, int]], np.ndarray, np.ndarray]:
    return draw(_steps(list(range(len(OPS))) if ops is None else ops)), _array(draw), \
        _array(draw)


@pytest.fixture(params=["hardware", "explicit", "ieee"])
def fp_strategy(request: Any) -> Iterator[str]:
    """The floating-point strategies a generated program may be written for
    (set for the whole test: every drawn example runs under it)."""
    if request.param == "hardware" and not denormals.hardware_available():
        pytest.skip("no hardware flush-to-zero switch on this platform")
    if request.param == "explicit":
        denormals.use_hardware(False)
    try:
        if request.param == "ieee":
            with config._override("spec_denormals", "ieee"):
                yield request.param
        else:
            yield request.param
    finally:
        denormals.use_hardware(True)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_values_bit_for_bit(fp_strategy: str, drawn: Any) -> None:
    steps, x, y = drawn
    generated, interpreted = _both(_program(steps), jnp.asarray(x), jnp.asarray(y))
    assert generated == interpreted


@settings(max_examples=10, deadline=None)
@given(programs(DIFFERENTIABLE))
def test_gradients_bit_for_bit(drawn: Any) -> None:
    steps, x, y = drawn
    f = _program(steps)

    def loss(a: Any, b: Any) -> Any:
        first, second = f(a, b)
        return jnp.sum(first * 0.5 + second)
    generated, interpreted = _both(spec.grad(loss, argnums=(0, 1)), jnp.asarray(x),
                                   jnp.asarray(y))
    assert generated == interpreted


# ------------------------------------------------------- sharded programs
#
# On a mesh a jaxpr runs its per-device programs; a jaxpr evaluated there is
# generated from its second evaluation on, so each program runs three times
# with codegen on (interpreted, generated, remembered) and once with it off.

P = spec.sharding.PartitionSpec
SHARDED_SHAPE = (4, 4)
_LAYOUT_PRESERVING = [k for k, (name, _) in enumerate(OPS)
                      if name not in ("reshape", "concat", "dot", "scan")]


def _same_layout(x: Any) -> Any:
    return spec.typeof(x).sharding.spec


SHARDED_OPS: list[tuple[str, Op]] = [OPS[k] for k in _LAYOUT_PRESERVING] + [
    ("all_reduce", lambda x, y: x * jnp.max(y, axis=0) + jnp.sum(y)),
    ("dot", lambda x, y: jnp.matmul(x, y.T, out_sharding=_same_layout(x))),
    ("reshard", lambda x, y: spec.reshard(spec.reshard(x, P()) * 0.5, _same_layout(y)) + y),
    # (a scan's xs are replicated along the scanned dimension)
    ("scan", lambda x, y: spec.reshard(_scan_rows(spec.reshard(x, P()), spec.reshard(y, P())),
                                       _same_layout(y))),
]

BLOCK_OPS: list[tuple[str, Op]] = [OPS[k] for k in _LAYOUT_PRESERVING] + [
    ("dot", OPS[[n for n, _ in OPS].index("dot")][1]),
    ("psum", lambda x, y: lax.psum(x, "X") * y),
    ("pmax", lambda x, y: lax.pmax(x, "X") - y),
    ("all_gather", lambda x, y: lax.all_gather(x, "X", axis=0, tiled=True)[1:3] + y),
    ("ppermute", lambda x, y: lax.ppermute(x, "X", [(0, 1), (1, 0)]) * y),
    ("axis_index", lambda x, y: x + lax.axis_index("X").astype(np.float32)),
]


def _pool_program(ops: list[tuple[str, Op]], steps: list[tuple[int, int, int]]
                  ) -> Callable[[Any, Any], Any]:
    def f(x: Any, y: Any) -> Any:
        pool = [x, y]
        for op, i, j in steps:
            pool.append(ops[op % len(ops)][1](pool[i % len(pool)], pool[j % len(pool)]))
        return pool[-1], pool[-2]
    return f


@pytest.fixture(scope="module")
def two_devices() -> Iterator[Any]:
    before = config.jax_num_cpu_devices
    config.update("jax_num_cpu_devices", 2)
    try:
        yield spec.make_mesh((2,), ("X",)), spec.make_mesh(
            (2,), ("X",), axis_types=(spec.sharding.AxisType.Auto,))
    finally:
        config.update("jax_num_cpu_devices", before)


def _sharded_array(draw: Any) -> np.ndarray:
    values = draw(st.lists(st.one_of(st.sampled_from(SPECIAL), st.floats(-10, 10, width=32)),
                           min_size=16, max_size=16))
    return np.asarray(values, np.float32).reshape(SHARDED_SHAPE)


def _generated_calls(fun: Callable[..., Any], *args: Any) -> None:
    """The second call of ``jit(fun)`` runs generated per-device code (and a
    third, on sharded operands, the call's remembered program); every call
    gives the interpreter's bits."""
    with config._override("spec_jit_codegen", False):
        interpreted = _bits(spec.jit(fun)(*args))
    written = codegen.DEVICE_WRITES[0]
    jitted = spec.jit(fun)
    calls = [_bits(jitted(*args)) for _ in range(3)]
    assert codegen.DEVICE_WRITES[0] > written  # a per-device program was generated
    assert calls == [interpreted] * 3


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(SHARDED_OPS) - 1), st.integers(0, 9),
                          st.integers(0, 9)), min_size=1, max_size=4),
       st.sampled_from([P("X"), P(None, "X"), P()]), st.data())
def test_sharded_program_bit_for_bit(two_devices: Any, steps: Any, layout: Any,
                                     data: Any) -> None:
    """Explicit-sharding jit on a 2-device virtual mesh: drawn programs
    (elementwise, control flow, all-reduces, reshards, a dot with an output
    sharding) on operands laid out alike."""
    mesh, _ = two_devices
    sharding = spec.sharding.NamedSharding(mesh, layout)
    x = spec.device_put(_sharded_array(data.draw), sharding)
    y = spec.device_put(_sharded_array(data.draw), sharding)
    with spec.set_mesh(mesh):
        _generated_calls(_pool_program(SHARDED_OPS, steps), x, y)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(BLOCK_OPS) - 1), st.integers(0, 9),
                          st.integers(0, 9)), min_size=1, max_size=4), st.booleans(),
       st.data())
def test_shard_map_body_bit_for_bit(two_devices: Any, steps: Any, placed: bool,
                                    data: Any) -> None:
    """shard_map bodies (elementwise, control flow, psum, pmax, all_gather,
    ppermute, axis_index on each device's block) under jit, on operands laid
    out over an Explicit mesh (a sharded jit call) or unplaced, with an Auto
    mesh (a jit call on one device whose shard_map runs per device)."""
    explicit, auto = two_devices
    mesh = explicit if placed else auto
    body = _pool_program(BLOCK_OPS, steps)
    mapped = spec.shard_map(body, mesh=mesh, in_specs=(P("X"), P("X")),
                            out_specs=(P("X"), P("X")))
    x, y = _sharded_array(data.draw), _sharded_array(data.draw)
    if placed:
        sharding = spec.sharding.NamedSharding(mesh, P("X"))
        x, y = spec.device_put(x, sharding), spec.device_put(y, sharding)
    _generated_calls(mapped, jnp.asarray(x), jnp.asarray(y))


def _values_and_gradients_agree(drawn: Any) -> None:
    """The drawn program's values, and its gradients where it has no while
    loop, are the interpreter's bits."""
    steps, x, y = drawn
    f = _program(steps)
    generated, interpreted = _both(f, jnp.asarray(x), jnp.asarray(y))
    assert generated == interpreted
    if all(OPS[op][0] != "while" for op, _, _ in steps):
        def loss(a: Any, b: Any) -> Any:
            first, second = f(a, b)
            return jnp.sum(first * 0.5 + second)
        generated, interpreted = _both(spec.grad(loss, argnums=(0, 1)), jnp.asarray(x),
                                       jnp.asarray(y))
        assert generated == interpreted


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_results_written_over_dead_operands_bit_for_bit(monkeypatch: pytest.MonkeyPatch,
                                                        drawn: Any) -> None:
    """With every size eligible, kernels write their results over dead
    operands (``out=``) wherever the generator allows it; the bits agree
    with the interpreter's, for values and gradients."""
    monkeypatch.setattr(codegen, "IN_PLACE_MIN_BYTES", 0)
    _values_and_gradients_agree(drawn)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_programs_cut_into_parts_bit_for_bit(monkeypatch: pytest.MonkeyPatch,
                                             drawn: Any) -> None:
    """A program cut into functions after nearly every equation (the values
    alive at each cut carried to the next part, dead operands still written
    over) gives the interpreter's bits, for values and gradients."""
    monkeypatch.setattr(codegen, "_PART_LINES", 2)
    monkeypatch.setattr(codegen, "IN_PLACE_MIN_BYTES", 0)
    _values_and_gradients_agree(drawn)


@settings(max_examples=10, deadline=None)
@given(programs(DIFFERENTIABLE))
def test_jit_equation_evaluated_eagerly_bit_for_bit(drawn: Any) -> None:
    """A ``jit`` equation evaluated eagerly (here: a staged gradient whose
    jaxpr is evaluated twice, the second time by the generated program)
    gives the interpreter's bits."""
    steps, x, y = drawn
    f = _program(steps)

    def loss(a: Any, b: Any) -> Any:
        first, second = f(a, b)
        return jnp.sum(first * 0.5 + second)
    closed = spec.make_jaxpr(lambda a, b: spec.jit(spec.grad(loss, argnums=(0, 1)))(a, b))(x, y)
    (call,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "jit"]

    def run() -> list[bytes]:
        return _bits(eval_jaxpr(closed.jaxpr, closed.consts, jnp.asarray(x), jnp.asarray(y)))
    with config._override("spec_jit_codegen", False):
        interpreted = run()
    first_call, second_call = run(), run()
    assert codegen.live_program(call.params["jaxpr"]) in codegen._PROGRAMS  # it was generated
    assert first_call == interpreted and second_call == interpreted


def test_jit_in_eager_shard_map_body_bit_for_bit(two_devices: Any) -> None:
    """A jit call inside an eager shard_map body runs per device; its second
    call there runs generated code, with the interpreter's bits."""
    _, auto = two_devices
    inner = spec.jit(lambda b: lax.psum(jnp.sin(b), "X") * b + lax.axis_index("X"))

    def run() -> list[bytes]:
        mapped = spec.shard_map(lambda b: inner(inner(b) * 0.5), mesh=auto, in_specs=P("X"),
                                out_specs=P("X"))
        return _bits(mapped(jnp.asarray(np.linspace(-3, 3, 16, dtype=np.float32)
                                        .reshape(SHARDED_SHAPE))))
    with config._override("spec_jit_codegen", False):
        interpreted = run()
    written = codegen.DEVICE_WRITES[0]
    assert run() == interpreted
    assert codegen.DEVICE_WRITES[0] > written
