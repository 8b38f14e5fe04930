"""jax.debug's sharding pictures: each program prints with spec and with JAX
(8 CPU devices, in a subprocess) and the printed text must be the same,
character for character. Captured output is not a terminal, so both draw
the boxes with lines (no colors)."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from tests.support.twin import prefetch, run_both

_PRELUDE = """
import contextlib, io
import numpy as np
jax, jnp = IMPL
jax.config.update("jax_num_cpu_devices", 8)
NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
mesh = jax.make_mesh((2, 4), ("x", "y"))
out = {}

def shown(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            fn()
        except Exception as e:
            print(type(e).__name__, e)
    return buf.getvalue()

def placed(shape, spec):
    return jax.device_put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape),
                          NamedSharding(mesh, spec))
"""

CASES = {
    "2-D over both axes": "jax.debug.visualize_array_sharding(placed((8, 4), P('x', 'y')))",
    "2-D axes swapped": "jax.debug.visualize_array_sharding(placed((8, 8), P('y', 'x')))",
    "2-D columns only": "jax.debug.visualize_array_sharding(placed((8, 4), P(None, 'y')))",
    "2-D rows only": "jax.debug.visualize_array_sharding(placed((16, 4), P('x')))",
    "2-D replicated": "jax.debug.visualize_array_sharding(placed((4, 4), P()))",
    "1-D over both axes": "jax.debug.visualize_array_sharding(placed((32,), P(('x', 'y'))))",
    "1-D over one axis": "jax.debug.visualize_array_sharding(placed((8,), P('y')))",
    "one device": "jax.debug.visualize_array_sharding(jnp.arange(4.0))",
    "wide array": "jax.debug.visualize_array_sharding(placed((2, 64), P('x', 'y')))",
    "scale and widths": ("jax.debug.visualize_array_sharding(placed((8, 4), P('x', 'y')), "
                         "scale=0.5, min_width=4, max_width=40)"),
    "visualize_sharding": ("jax.debug.visualize_sharding((8, 8), "
                           "NamedSharding(mesh, P('y', None)))"),
    "rank 3 refused": "jax.debug.visualize_array_sharding(placed((2, 4, 2), P('x')))",
    "rank 0 refused": "jax.debug.visualize_sharding((), NamedSharding(mesh, P()))",
}


PROGRAM = _PRELUDE + "".join(f"out[{case!r}] = shown(lambda: {code})\n"
                              for case, code in CASES.items()) + """
x = placed((8, 4), P('x', 'y'))
seen = []
jax.debug.inspect_array_sharding({'a': x, 'b': [x]}, callback=seen.append)
out['inspected'] = [str(s.spec) for s in seen]
out['inspected same'] = all(s == x.sharding for s in seen)
"""
prefetch(PROGRAM, devices=8)


@functools.cache
def _results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=8)


@pytest.mark.parametrize("case", list(CASES))
def test_picture_is_jaxs(case: str) -> None:
    ours, theirs = _results()
    assert ours[case] == theirs[case]


def test_pictures_are_drawn() -> None:
    """The comparison above is of pictures, not of two empty strings."""
    ours, _ = _results()
    assert "CPU 0,1,2,3,4,5,6,7" in ours["2-D replicated"]
    assert ours["rank 3 refused"].startswith("ValueError")


def test_inspect_array_sharding_calls_back_with_each_leafs_sharding() -> None:
    ours, theirs = _results()
    assert [ours["inspected"], ours["inspected same"]] == [theirs["inspected"],
                                                          theirs["inspected same"]]
    assert ours["inspected same"] is True and len(ours["inspected"]) == 2
