"""lax.psum_scatter_start (``reduce_scatter_start`` and its future's
``reduce_scatter_done``) inside shard_map, against JAX on four CPU devices,
all of JAX's side in one subprocess: the jaxpr text (the future's type
``AbstractFuture{...}``, also as a shard_map result), jit values over a 2x2
mesh and both axes, JAX's errors for untiled, grad and vmap, and the two
lowered custom calls."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import json
import numpy as np
jax, jnp = IMPL
lax = jax.lax
jax.config.update('jax_num_cpu_devices', 4)
mesh = jax.make_mesh((2, 2), ('x', 'y'))
jax.set_mesh(mesh)
P = jax.P
out = {}
def cell(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        kind = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
        out[name] = "raises " + kind.__name__ + ": " + str(e).split("\n")[0]
a = jax.device_put(jnp.arange(16.).reshape(4, 4), P('x', 'y'))
b = jax.device_put(jnp.arange(32., dtype=jnp.float32).reshape(8, 4) ** 1.5, P('x', 'y'))
sm = lambda f: jax.shard_map(f, in_specs=P('x', 'y'), out_specs=P('x', 'y'))
def start(axis, dim=0):
    return lambda v: lax.psum_scatter_start(v, axis, scatter_dimension=dim, tiled=True).done()
cell("jaxpr", lambda: str(jax.make_jaxpr(sm(start('x')))(a)))
cell("type", lambda: str(jax.make_jaxpr(sm(
    lambda v: lax.psum_scatter_start(v, 'y', tiled=True).done()))(b).eqns[0].params['jaxpr']))
cell("not_done", lambda: str(jax.make_jaxpr(sm(
    lambda v: lax.psum_scatter_start(v, 'x', tiled=True)))(a)))
cell("x0", lambda: np.asarray(jax.jit(sm(start('x')))(a)).tolist())
cell("y1", lambda: np.asarray(jax.jit(sm(start('y', 1)))(b)).tolist())
cell("y0", lambda: np.asarray(jax.jit(sm(start('y')))(b)).tolist())
cell("untiled", lambda: str(jax.make_jaxpr(sm(
    lambda v: lax.psum_scatter_start(v, 'x').done()))(a)))
cell("grad", lambda: float(jax.grad(lambda v: sm(start('x'))(v).sum())(a).sum()))
cell("vmap", lambda: str(jax.vmap(sm(start('x')))(jnp.stack([a, a]))))
cell("lower", lambda: [l.strip() for l in jax.jit(sm(start('x'))).lower(a).as_text()
                       .splitlines() if 'custom_call' in l])
cell("reducer", lambda: [l.strip() for l in jax.jit(sm(start('y', 1))).lower(b).as_text()
                         .splitlines() if 'reducer' in l and 'func' in l])
print(json.dumps(out))
'''
prefetch(PROGRAM)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM)


def _ssa_free(lines: list[str]) -> list[str]:
    """Lowered lines with SSA value names made positional (the numbering of
    values differs between the two emitters)."""
    return [re.sub(r"%[\w#]+", "%v", line) for line in lines]


@pytest.mark.parametrize("cell", ["jaxpr", "type", "not_done", "x0", "y1", "y0", "untiled", "grad",
                                  "vmap", "reducer"])
def test_cell_matches_jax(results: tuple[dict[str, Any], dict[str, Any]], cell: str) -> None:
    ours, jax_out = results
    if cell == "untiled":  # JAX's NotImplementedError has no message
        assert ours[cell].startswith(jax_out[cell])
        return
    assert ours[cell] == jax_out[cell]


def test_lowered_custom_calls_match_jax(results: tuple[dict[str, Any], dict[str, Any]]
                                        ) -> None:
    ours, jax_out = results
    assert len(jax_out["lower"]) == 2
    assert _ssa_free(ours["lower"]) == _ssa_free(jax_out["lower"])


def test_values_are_the_scattered_sums(results: tuple[dict[str, Any], dict[str, Any]]
                                       ) -> None:
    """Not trivially equal: over x, the blocks of rows 0:2 and 2:4 are
    summed and device x=k keeps row k of the sum."""
    ours, _ = results
    a = np.arange(16.).reshape(4, 4)
    assert np.array_equal(np.array(ours["x0"]), a[0:2] + a[2:4])
