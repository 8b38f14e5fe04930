"""Hypothesis-drawn shardings of each primitive family, compared with JAX
live (a long-lived 4-device JAX subprocess, tests/support/jax_server.py):
result types (shardings included), values (computed per device by spec) and
error classes must agree. The hand-picked grids of tests/sharding/test_rules_*.py
cover the named cases; these draw shapes, layouts and parameters freely."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
from tests.support.jax_server import JaxServer

ENTRIES: list[Any] = [None, None, "X", "Y", ("X", "Y"), ("Y", "X")]
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

PRELUDE = r'''
import numpy as np
jax, jnp = IMPL
lax = jax.lax
mesh = jax.make_mesh((2, 2), ("X", "Y"))
jax.set_mesh(mesh)  # as the docs recommend (eager grad needs it in JAX)
out = {}
def put(v, s):
    return jax.device_put(v, jax.NamedSharding(mesh, jax.P(*s)))
def record(name, fn):
    try:
        r = fn()
        out[name] = [str(jax.typeof(r)), np.asarray(r).round(4).tolist()]
    except Exception as e:
        kind = next(c for c in type(e).__mro__
                    if c.__module__ == "builtins" or c.__name__ == "ShardingTypeError")
        out[name] = "raises " + kind.__name__
'''


@pytest.fixture(scope="module")
def server() -> Iterator[JaxServer]:
    s = JaxServer(devices=4)
    try:
        yield s
    finally:
        s.close()


def _same(server: JaxServer, body: str) -> None:
    program = PRELUDE + body
    # JAX computes its side in the server while spec computes here; its
    # reply is read even when spec's side raises (the next case must not
    # read it).
    server.send(program)
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        scope: dict[str, Any] = {}
        exec(compile(program.replace("IMPL", "__import__('spec'), __import__('spec.numpy')"
                                     ".numpy"), "<case>", "exec"), scope)
        ours = json.loads(json.dumps(scope["out"]))
    finally:
        spec.set_mesh(None)
        spec.config.update("jax_num_cpu_devices", before)
        theirs = server.receive()
    assert ours == theirs, body


# ------------------------------------------------------------ strategies


@st.composite
def shapes(draw: Any, rank: int | None = None) -> tuple[int, ...]:
    r = draw(st.integers(1, 3)) if rank is None else rank
    return tuple(draw(st.sampled_from([1, 2, 3, 4, 8])) for _ in range(r))


@st.composite
def specs(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A placement for ``shape``: no mesh axis twice, each split dim
    divisible (results of other sizes are left to the rules)."""
    used: set[str] = set()
    out = []
    for d in shape:
        e = draw(st.sampled_from(ENTRIES))
        names = set() if e is None else {e} if isinstance(e, str) else set(e)
        if names & used or d % (2 ** len(names)):
            e, names = None, set()
        used |= names
        out.append(e)
    return tuple(out)


def _value(shape: tuple[int, ...], seed: int) -> str:
    n = int(np.prod(shape))
    return f"(np.arange({n}, dtype=np.float32).reshape({shape}) * {seed % 7 + 1} % 11 - 5) / 4"


# ----------------------------------------------------------------- tests


@given(shapes(), st.data(), st.sampled_from(["add", "mul", "max", "sub", "atan2"]))
@SETTINGS
def test_binary_elementwise(server: JaxServer, shape: tuple[int, ...], data: Any,
                            op: str) -> None:
    other = tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    sa, sb = data.draw(specs(shape)), data.draw(specs(other))
    _same(server, f"record('r', lambda: lax.{op}(put({_value(shape, 1)}, {sa!r}), "
                  f"put({_value(other, 2)}, {sb!r})))\n"
                  f"record('s', lambda: put({_value(shape, 1)}, {sa!r}) * 2.0)\n")


@given(shapes(), st.data(), st.sampled_from(["sum", "max", "min", "prod", "argmax"]))
@SETTINGS
def test_reductions(server: JaxServer, shape: tuple[int, ...], data: Any, op: str) -> None:
    s = data.draw(specs(shape))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    call = (f"jnp.argmax(x, axis={axes[0]})" if op == "argmax"
            else f"jnp.{op}(x, axis={axes})")
    body = f"x = put({_value(shape, 3)}, {s!r})\nrecord('r', lambda: {call})\n"
    if op == "sum":
        kept = [e for i, e in enumerate(s) if i not in axes]
        body += f"record('o', lambda: jnp.sum(x, axis={axes}, out_sharding=jax.P(*{kept!r})))\n"
    _same(server, body)


@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([2, 4, 8]), st.sampled_from([1, 4, 8]),
       st.data())
@SETTINGS
def test_dot(server: JaxServer, m: int, k: int, n: int, data: Any) -> None:
    sa, sb = data.draw(specs((m, k))), data.draw(specs((k, n)))
    out_spec = data.draw(specs((m, n)))
    body = (f"a = put({_value((m, k), 4)}, {sa!r})\nb = put({_value((k, n), 5)}, {sb!r})\n"
            "record('r', lambda: a @ b)\n"
            f"record('o', lambda: jnp.dot(a, b, out_sharding=jax.P(*{out_spec!r})))\n"
            "record('j', lambda: jax.jit(lambda u, v: jnp.einsum('ij,jk->ik', u, v, "
            f"out_sharding=jax.P(*{out_spec!r})))(a, b))\n")
    _same(server, body)


@given(shapes(), st.data())
@SETTINGS
def test_structural(server: JaxServer, shape: tuple[int, ...], data: Any) -> None:
    s = data.draw(specs(shape))
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    n = int(np.prod(shape))
    new = data.draw(st.sampled_from([(n,), (1, n), shape[::-1], (*shape, 1)]))
    body = (f"x = put({_value(shape, 6)}, {s!r})\n"
            f"record('t', lambda: jnp.transpose(x, {perm}))\n"
            f"record('r', lambda: x.reshape({new}))\n"
            f"record('b', lambda: jnp.broadcast_to(x, (2, *{shape})))\n"
            "record('c', lambda: jnp.concatenate([x, x], axis=-1))\n"
            "record('v', lambda: jnp.flip(x, axis=0))\n"
            "record('g', lambda: jax.grad(lambda v: jnp.sum(jnp.sin(v) * v))(x))\n")
    _same(server, body)


@given(shapes(), st.data())
@SETTINGS
def test_scans_sorts_and_indexing(server: JaxServer, shape: tuple[int, ...], data: Any) -> None:
    s = data.draw(specs(shape))
    axis = data.draw(st.integers(0, len(shape) - 1))
    idx = data.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=3))
    body = (f"x = put({_value(shape, 7)}, {s!r})\n"
            f"record('cumsum', lambda: jnp.cumsum(x, axis={axis}))\n"
            f"record('sort', lambda: jnp.sort(x, axis={axis}))\n"
            f"record('take', lambda: x[np.array({idx}, np.int32)])\n"
            f"record('convert', lambda: x.astype(jnp.int32))\n"
            f"record('pad', lambda: jnp.pad(x, [(1, 0)] + [(0, 0)] * {len(shape) - 1}))\n")
    _same(server, body)


def test_the_server_answers_like_jax(server: JaxServer) -> None:
    """The comparison has teeth: a wrong expectation is caught."""
    theirs = server.run(PRELUDE + "record('r', lambda: put(np.ones((4, 4), np.float32), "
                                  "('X', None)) + 1)\n")
    assert theirs == {"r": ["float32[4@X,4]", [[2.0] * 4] * 4]}
