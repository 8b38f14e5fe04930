"""Reductions in loop bodies on a mesh: generated per-device code writes a
reduction inline (each device's block reduced by its kernel, then the
all-reduce), and its loops give the interpreter's bits and JAX's values.

The bodies reduce over split and unsplit dimensions (sum, max, min,
argmax, argmin) of a carry laid out over 2 and 4 virtual devices, under
``scan`` and ``while_loop``. Their values are small integers in float32, so
that every sum is exact whatever the order of its additions: real JAX,
run unsharded, is the oracle for the values."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
import spec.numpy as jnp
from spec import lax
from spec._src.api import codegen
from spec._src.core.config import config

P = spec.sharding.PartitionSpec
STEPS = 5


def _step(np_: Any, x: Any) -> tuple[Any, Any]:
    """One iteration on an f32[8,8] of small integers (``np_`` is spec's or
    JAX's numpy): reductions over each dimension and over both, the carry
    kept small by a remainder."""
    over_rows = np_.sum(x, axis=0)          # reduces dimension 0
    over_cols = np_.max(x, axis=1)          # reduces dimension 1
    lowest = np_.min(x)                     # both
    new = np_.mod(x * 5.0 + over_rows[None, :] + over_cols[:, None] - lowest, 17.0)
    ys = (np_.sum(x), np_.min(x, axis=0), np_.argmax(x, axis=1), np_.argmin(x, axis=0))
    return new, ys


def _scanned(lax_: Any, np_: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        return lax_.scan(lambda c, _: _step(np_, c), x, None, length=STEPS)
    return f


def _looped(lax_: Any, np_: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        def body(s: Any) -> Any:
            i, c, total = s
            new, (whole, *_) = _step(np_, c)
            return i + 1, new, total + whole
        return lax_.while_loop(lambda s: s[0] < STEPS, body,
                               (np_.int32(0), x, np_.float32(0)))
    return f


PROGRAMS = {"scan": _scanned, "while": _looped}
# (mesh shape, axis names, the carry's layout)
LAYOUTS = [((2,), ("X",), P("X")), ((4,), ("X",), P(None, "X")),
           ((2, 2), ("X", "Y"), P("X", "Y"))]


@pytest.fixture(scope="module")
def four_virtual() -> Iterator[None]:
    before = config.jax_num_cpu_devices
    config.update("jax_num_cpu_devices", 4)
    try:
        yield
    finally:
        config.update("jax_num_cpu_devices", before)


def _bits(tree: Any) -> list[bytes]:
    return [np.ascontiguousarray(np.asarray(leaf)).tobytes()
            for leaf in spec.tree_util.tree_leaves(tree)]


def _body_sources(jitted: Any, x: Any) -> list[str]:
    """The generated per-device programs of the loop's body."""
    (loop,) = [e for e in jitted.trace(x).jaxpr.eqns if e.primitive.name in ("scan", "while")]
    body = loop.params["jaxpr" if loop.primitive.name == "scan" else "body_jaxpr"]
    return [p.source for *_, p in codegen._DEVICE_PROGRAMS.get(body, []) if p is not None]


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("shape,names,layout", LAYOUTS)
def test_loop_reductions_generated_interpreted_and_jax(four_virtual: None, program: str,
                                                      shape: Any, names: Any,
                                                      layout: Any) -> None:
    values = np.random.default_rng(len(shape) + shape[0]).integers(0, 17, (8, 8))
    values = values.astype(np.float32)
    mesh = spec.make_mesh(shape, names, axis_types=(spec.sharding.AxisType.Explicit,) * len(shape))
    x = spec.device_put(values, spec.sharding.NamedSharding(mesh, layout))
    fun = PROGRAMS[program](lax, jnp)
    with spec.set_mesh(mesh):
        with config._override("spec_jit_codegen", False):
            interpreted = _bits(spec.jit(fun)(x))
        jitted = spec.jit(fun)
        calls = [_bits(jitted(x)) for _ in range(2)]  # the body generated from its 2nd step
        sources = _body_sources(jitted, x)
    assert calls == [interpreted] * 2
    # The body's reductions run inline: a kernel per device, then the all-reduce.
    assert sources and all("_reduce_sum" in s and "_reshard" in s for s in sources)
    expected = PROGRAMS[program](jax.lax, jjnp)(values)
    ours = spec.tree_util.tree_leaves(jitted(x))
    theirs = jax.tree_util.tree_leaves(expected)
    assert [np.asarray(o).dtype for o in ours] == [np.asarray(t).dtype for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t))


def _special_values() -> np.ndarray:
    """Signed zeros, subnormals, one infinity, one NaN; row 0's halves (the
    blocks of a split over 'Y') sum to normal numbers whose sum, the
    all-reduce's, is subnormal: flushed in the held environment, not in the
    one collectives run in."""
    values = np.resize(np.array([0.0, -0.0, 1e-40, -3e-39, 2e-39, 1.5], np.float32), (8, 8))
    values[0] = [1.2e-38, 0, 0, 0, -1.19e-38, 0, 0, 0]
    values[1, 2], values[6, 5] = np.inf, np.nan
    return values


def test_loop_reductions_of_special_values_bit_for_bit(four_virtual: None) -> None:
    """Sums, maxima and minima over split dimensions of signed zeros,
    subnormals, infinities and NaN, in a scan body: the generated loop
    gives the interpreter's bits."""
    mesh = spec.make_mesh((2, 2), ("X", "Y"),
                          axis_types=(spec.sharding.AxisType.Explicit,) * 2)
    x = spec.device_put(_special_values(), spec.sharding.NamedSharding(mesh, P("X", "Y")))

    def f(x: Any) -> Any:
        def body(c: Any, _: Any) -> Any:
            ys = (jnp.sum(c, axis=0), jnp.max(c, axis=0), jnp.min(c), jnp.sum(c, axis=1))
            return c * 0.5 + jnp.sin(c), ys
        return lax.scan(body, x, None, length=3)
    with spec.set_mesh(mesh):
        with config._override("spec_jit_codegen", False):
            interpreted = _bits(spec.jit(f)(x))
        jitted = spec.jit(f)
        assert [_bits(jitted(x)) for _ in range(2)] == [interpreted] * 2
        assert all("_reshard" in s for s in _body_sources(jitted, x))
