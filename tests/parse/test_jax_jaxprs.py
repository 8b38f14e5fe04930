"""The oracle direction: the jaxprs real JAX prints (``jax.make_jaxpr`` of
programs, with jit calls inside, and of their grad and vmap; sharded programs and shard_map on
four devices) parse, pass spec's check_jaxpr (JAX's transformations make
programs well typed by spec's rules) and evaluate in spec to JAX's values.

Values agree to rtol 2e-6 / atol 2e-6 in float32 (1e-5 for the random
programs, whose chains of up to eight ops compound rounding): the programs
use transcendental functions, whose last bit spec does not promise to match
on every input."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import spec
from spec._src.api.jaxpr_parser import JaxprConstsError
from spec._src.core.interpreter import check_jaxpr, eval_jaxpr
from spec.testing import Program, programs
from tests.parse.programs import DIFFERENTIABLE, PROGRAMS
from tests.support import twin

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax


def _variants(name: str, f: Callable[..., Any], args: tuple[Any, ...]
              ) -> Iterator[tuple[str, Callable[..., Any], tuple[Any, ...]]]:
    # (no jit variant: JAX's jit equations are in the programs already)
    yield "plain", f, args
    if name in DIFFERENTIABLE:
        yield "grad", jax.grad(lambda *a: jnp.sum(f(*a))), args
    yield "vmap", jax.vmap(f), tuple(np.stack([a, a]) for a in args)


CASES = [(name, variant) for name, prog in PROGRAMS.items()
         for variant, _, _ in _variants(name, *prog(jax, jnp, lax))]


def _assert_runs_as_in_jax(text: str, consts: list[Any], args: tuple[Any, ...],
                           want: list[Any], rtol: float = 2e-6) -> None:
    parsed = spec.parse_jaxpr(text, consts=consts)
    check_jaxpr(parsed)
    got = eval_jaxpr(parsed, parsed.consts, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name,variant", CASES)
def test_jax_jaxpr_parses_checks_and_runs(name: str, variant: str) -> None:
    f, args = PROGRAMS[name](jax, jnp, lax)
    _, g, a = next(v for v in _variants(name, f, args) if v[0] == variant)
    closed = jax.make_jaxpr(g)(*a)
    want = jax.tree.leaves(jax.jit(g)(*a))  # (one compile, not one per op)
    _assert_runs_as_in_jax(str(closed), [np.asarray(c) for c in closed.consts], a, want)


def test_jax_jaxpr_of_narrow_dtypes_parses_checks_and_runs() -> None:
    """float8, float4 and 2-4 bit integer dtypes, by the names JAX prints."""
    import ml_dtypes
    names = [n for n in ("float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "int4", "uint2")
             if hasattr(jnp, n) and hasattr(ml_dtypes, n)]

    def f(x: Any) -> Any:
        return [(x.astype(getattr(jnp, n)) * 2).astype(jnp.float32) for n in names]
    x = np.asarray([0.5, -1.25, 3.0, 0.0], np.float32)
    closed = jax.make_jaxpr(f)(x)
    want = jax.tree.leaves(jax.jit(f)(x))
    _assert_runs_as_in_jax(str(closed), [], (x,), want, rtol=0)


# JAX on four devices runs in a subprocess (its device count is fixed at
# first use); it prints each program's jaxpr and its values.
SHARDED = """
import json
import numpy as np
jax, jnp = IMPL
from jax.sharding import PartitionSpec as P, AxisType
mesh = jax.make_mesh((2, 2), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
x = np.arange(16.0, dtype=np.float32).reshape(4, 4) / 8
y = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
out = {"x": x.tolist(), "y": y.tolist(), "programs": []}
def record(name, f, *args):
    closed = jax.make_jaxpr(f)(*args)
    values = [np.asarray(v).tolist() for v in jax.tree.leaves(f(*args))]
    out["programs"].append([name, str(closed), values])
with jax.set_mesh(mesh):
    xs = jax.device_put(x, P("X", None))
    ys = jax.device_put(y, P(None, "Y"))
    f = lambda x, y: jnp.sin(x @ y).sum(axis=0)
    record("explicit", f, xs, ys)
    record("explicit_grad", jax.grad(lambda x, y: f(x, y).sum()), xs, ys)
    record("reshard", lambda x: jax.reshard(x * 2, P("Y", None)), xs)
    g = jax.shard_map(lambda a: jax.lax.psum(a * 2, "X"), in_specs=P("X"), out_specs=P())
    record("shard_map", g, jax.device_put(x[0], P("X")))
    h = jax.shard_map(lambda a: jnp.cos(a) * jax.lax.axis_index("X"), in_specs=P("X", None),
                      out_specs=P("X", None))
    record("shard_map_grad", jax.grad(lambda a: h(a).sum()), xs)
    def collectives(a):
        g = jax.lax.all_gather(a, "X", tiled=True)
        p = jax.lax.ppermute(a, "X", perm=[(0, 1), (1, 0)])
        s = jax.lax.psum_scatter(g, "X", tiled=True)
        return (p + s) * jax.lax.pmax(a.sum(), "X")
    c = jax.shard_map(collectives, in_specs=P("X"), out_specs=P("X"))
    record("collectives", c, jax.device_put(x[:, 0], P("X")))
    record("collectives_vmap", jax.vmap(c, in_axes=1, out_axes=1), xs)
    placed = jax.jit(lambda a, b: jnp.sin(a) * b, in_shardings=(P("X", None), None),
                     out_shardings=P("X", None))
    record("jit_shardings", jax.grad(lambda a, b: placed(a, b).sum()), xs, xs)
    pinned = jax.NamedSharding(mesh, P(None, "Y"), memory_kind="pinned_host")
    record("device_put", lambda x: (jnp.sum(jax.device_put(x * 2, pinned) * 3, axis=0),
                                    jax.device_put(x[:, 0], jax.memory.Space.Device)), xs)
"""
twin.prefetch(SHARDED)


@functools.cache
def _sharded_run() -> dict[str, Any]:
    return twin.run_jax(SHARDED)


SHARDED_ARGS = {"explicit": ("x", "y"), "explicit_grad": ("x", "y"), "reshard": ("x",),
                "shard_map": ("x0",), "shard_map_grad": ("x",), "collectives": ("xcol",),
                "collectives_vmap": ("x",), "device_put": ("x",), "jit_shardings": ("x", "x")}
SHARDED_SPECS = {"x": ("X", None), "y": (None, "Y"), "x0": ("X",), "xcol": ("X",)}


@pytest.mark.parametrize("name", list(SHARDED_ARGS))
def test_sharded_jax_jaxpr_parses_checks_and_runs(name: str, four_devices: None) -> None:
    from spec.sharding import AxisType, PartitionSpec as P
    result = _sharded_run()
    text, values = next((t, v) for n, t, v in result["programs"] if n == name)
    x = np.asarray(result["x"], np.float32)
    host = {"x": x, "y": np.asarray(result["y"], np.float32), "x0": x[0], "xcol": x[:, 0]}
    mesh = spec.make_mesh((2, 2), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
    try:
        with spec.set_mesh(mesh):
            args = tuple(spec.device_put(host[a], P(*SHARDED_SPECS[a]))
                         for a in SHARDED_ARGS[name])
            _assert_runs_as_in_jax(text, [], args, [np.asarray(v, np.float32) for v in values])
            if name == "jit_shardings":  # the calls' shardings print back as JAX's text
                assert str(spec.parse_jaxpr(text)) == text
    finally:
        spec.set_mesh(None)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_steps=8), st.integers(0, 2**16))
# Found by hypothesis: JAX's grad jaxpr of an unread sort prints a nested
# jaxpr whose two outputs are both ``_`` (two different results).
@example(Program([(0,)], [("sort0", (0,)), ("sin", (0,))]), 0)
# JAX refuses the gradient of a while_loop: the plain and batched programs are compared.
@example(Program([(3,)], [("while_loop", (0,))]), 0)
def test_fuzzed_jax_jaxprs_parse_check_and_run(prog: Program, seed: int) -> None:
    """Random well-typed programs (spec.testing.programs), as JAX stages them
    plain, differentiated and batched."""
    xs = prog.inputs(seed)

    def f(*a: Any) -> Any:
        return prog(jnp, *a)
    for g, args in [(f, xs), (jax.grad(lambda *a: jnp.sum(f(*a))), xs),
                    (jax.vmap(f), [np.stack([x, x]) for x in xs])]:
        try:
            closed = jax.make_jaxpr(g)(*args)
        except ValueError as err:
            if "Reverse-mode differentiation does not work" in str(err):
                continue  # a drawn while_loop: JAX stages no gradient to compare with
            raise
        want = jax.tree.leaves(jax.jit(g)(*args))
        _assert_runs_as_in_jax(str(closed), [np.asarray(c) for c in closed.consts],
                               tuple(args), want, rtol=1e-5)


def test_jax_hijax_primitives_parse_and_run_to_jax_bits() -> None:
    """JAX's text of jnp's hijax primitives (SearchSorted, Nonzero, Ldexp,
    Frexp) parses, prints as JAX printed it and runs to JAX's bits."""
    x = np.array([[0.5, -3.0, 0.0], [7.25, 1e-3, -0.0]], np.float32)

    def f(a: Any, q: Any) -> Any:
        m, e = jnp.frexp(q)
        return (jnp.searchsorted(a[0], q, side="right"),
                jnp.nonzero(q, size=5, fill_value=1), jnp.ldexp(m, e + 1))

    def g(a: Any, q: Any) -> Any:
        return f(a, q), jax.vmap(f, in_axes=(None, 1))(a, q)

    args = (np.sort(x, axis=1), x)
    closed = jax.make_jaxpr(g)(*args)
    parsed = spec.parse_jaxpr(str(closed))
    assert str(parsed) == str(closed)
    check_jaxpr(parsed)
    want = jax.tree.leaves(jax.jit(g)(*args))  # (one compile)
    got = eval_jaxpr(parsed, parsed.consts, *args)
    assert [np.asarray(v).tobytes() for v in got] == [np.asarray(v).tobytes() for v in want]


def test_jax_jaxpr_with_constants_of_a_nested_jit_is_refused_naming_them() -> None:
    """JAX prints a nested jit's captured constants as constvars of the
    inner jaxpr, without values: parse_jaxpr names them (the text JAX printed)
    in a ValueError; the outer jaxpr's constants are still taken as given."""
    c = np.arange(10, dtype=np.int32)
    text = str(jax.make_jaxpr(lambda x: jax.jit(lambda y: y + c)(x))(np.int32(1)))
    inner = text.split("jaxpr={ lambda ", 1)[1].split(";", 1)[0]
    assert inner.endswith(":i32[10]")  # JAX's form: one constvar, no value
    with pytest.raises(JaxprConstsError, match=f"line 4: .* constvars {re.escape(inner)} whose"):
        spec.parse_jaxpr(text)
    assert issubclass(JaxprConstsError, ValueError)

    def outer(x: Any) -> Any:
        return jax.jit(lambda y: y * 2)(x) + c
    closed = jax.make_jaxpr(outer)(np.int32(1))
    assert closed.consts
    _assert_runs_as_in_jax(str(closed), [np.asarray(k) for k in closed.consts],
                           (np.int32(1),), [outer(np.int32(1))])


def test_long_jax_jaxpr_with_variables_named_like_literals() -> None:
    """A program of 9,300 equations: JAX names its variables ``in``, ``if``,
    ``inf`` and ``nan`` on the way, and ``inf:f32[]`` begins an equation
    (a binder) as well as ending one (a literal operand). JAX's text parses,
    prints back unchanged, checks, and runs to JAX's value; spec's own
    jaxpr of the program is the same text."""
    def f(np_: Any) -> Callable[[Any], Any]:
        def chain(x: Any) -> Any:
            for _ in range(3100):
                x = np_.minimum(x * 1.0001 + 1.0, np_.inf)
            return x
        return chain
    x = np.float32(1.0)
    text = str(jax.make_jaxpr(f(jnp))(x))
    binders = re.findall(r"^ +([a-z]+):f32\[\] =", text, re.MULTILINE)
    assert {"in", "if", "inf", "nan"} <= set(binders)
    assert re.search(r"^ +inf:f32\[\] = min [a-z]+ inf:f32\[\]$", text, re.MULTILINE)
    parsed = spec.parse_jaxpr(text)
    assert str(parsed) == text
    check_jaxpr(parsed)
    (got,) = eval_jaxpr(parsed, parsed.consts, x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(f(jnp)(x)))  # eager JAX
    assert str(spec.make_jaxpr(f(spec.numpy))(x)) == text
