"""Debug locations: with ``debug_info`` every op spec emits is located at
its equation's name stack (``jit(f)/while/body/mul``,
``transpose(jvp())/...``, ``named_scope`` names) and user source line, as
``jax.jit(f).lower(x).as_text(debug_info=True)`` locates it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax as jlax
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr

_NAME = re.compile(r'loc\("([^"]*)"')
_FILE = re.compile(r'"([^"]+\.py)":(\d+):(\d+)')


def _ops(op: Any) -> list[Any]:
    out = [op]
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out += _ops(inner.operation)
    return out


def _locations(text: str) -> list[tuple[str, str, tuple[str, ...] | None]]:
    """(op, op_name, innermost user line) for every op in the module."""
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        rows = []
        main = next(op for op in module.body.operations
                    if str(op.attributes["sym_name"]) == "\"main\"")
        # The ops of @main (private functions are named relative to their call).
        for op in _ops(main.operation)[1:]:
            if op.name.startswith("func."):
                continue
            loc = str(op.location)
            name = _NAME.search(loc)
            where = _FILE.search(loc)
            rows.append((op.name, name.group(1) if name else "",
                         where.groups() if where else None))
        return rows


def _program(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        with lib.named_scope("outer"):
            y = numpy.sin(x) * 2.0
        z = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, y))[1]
        w = lax.cond(z[0, 0] > 0, lambda v: v + 1.0, lambda v: v - 1.0, z)
        g = lib.grad(lambda v: numpy.sum(numpy.cos(v) * v))(w)
        c = lib.checkpoint(lambda v: numpy.sin(v) * 3.0)(g)
        return lax.scan(lambda k, a: (k + a, k * a), c[0], c)
    return f


X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)


def test_op_names_and_lines_match_jax() -> None:
    theirs = _locations(jax.jit(_program(jax, jlax, jnp)).lower(X).as_text(debug_info=True))
    jaxpr = spec.make_jaxpr(_program(spec, slax, snp))(X)
    ours = _locations(lower_jaxpr(jaxpr, "f", debug_info=True))
    named = [(op, name) for op, name, _ in ours]
    assert named == [(op, name) for op, name, _ in theirs]
    assert "jit(f)/while/body/mul" in {n for _, n in named}
    assert any(n.startswith("jit(f)/transpose(jvp())/") for _, n in named)
    # Each op with a user line in JAX's location is at that line (and column).
    lines = [(op, where) for op, _, where in ours if where]
    assert lines and lines == [(op, where) for op, _, where in theirs
                               if where and (op, where) in lines]


def test_without_debug_info_no_locations() -> None:
    text = lower_jaxpr(spec.make_jaxpr(_program(spec, slax, snp))(X), "f")
    assert "loc(" not in text


def test_arguments_are_located_at_their_names() -> None:
    """``x['a']``, ``y[0]``: the leaf names JAX gives the arguments."""
    v = np.ones(2, np.float32)

    def f(lib: Any) -> Callable[..., Any]:
        return lambda x, y: x["a"] * y[0] + y[1]
    theirs = jax.jit(f(jax)).lower({"a": v}, (v, v)).as_text(debug_info=True)
    ours = spec.jit(f(spec)).lower({"a": v}, (v, v)).as_text(debug_info=True)
    header = [line for line in ours.splitlines() if "func.func public" in line][0]
    for name in ("x['a']", "y[0]", "y[1]"):
        assert f'loc("{name}")' in header and f'loc("{name}")' in theirs


def test_lowered_as_text_is_the_stablehlo_module() -> None:
    """``Lowered.as_text()`` (dialect None or "stablehlo") is the module
    ``lower_jaxpr`` emits, named after the function as JAX names it."""
    def step(x: Any) -> Any:
        return slax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    lowered = spec.jit(step).lower(X)
    text = lowered.as_text()
    assert text == lowered.as_text("stablehlo") == lower_jaxpr(
        spec.make_jaxpr(step)(X), "step", result_names=["result[0]", "result[1]"])
    attributes = "attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {"
    assert text.startswith(f"module @jit_step {attributes}") and "stablehlo.while" in text
    assert spec.jit(lambda x: x).lower(X).as_text().startswith(
        f"module @jit__lambda {attributes}")
    assert "loc(\"jit(step)/while/body/mul\"" in lowered.as_text(debug_info=True)
