"""``Compiled.as_text()``: the per-device program, whose collectives are
lines carrying the op name of the equation that performs them. Each program
is compiled by spec and by JAX (a subprocess with 8 CPU devices); the
collective lines must agree in opcode, per-device type, op name and (for a
permutation) source-target pairs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import spec
from tests.support.twin import on_virtual_devices, prefetch, run_both

PROGRAM = r'''
import re
jax, jnp = IMPL
jax.config.update('jax_num_cpu_devices', 8)
jax.set_mesh(jax.make_mesh((4, 2), ('x', 'y')))
LINE = re.compile(r'= (\w+\[[\d,]*\])\S* (all-reduce|all-gather|reduce-scatter|all-to-all|'
                  r'collective-permute)\(.*op_name="([^"]*)"')
PAIRS = re.compile(r'source_target_pairs=(\{[{}\d,]*\})')
out = {}
def collectives(name, f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    rows = []
    for line in text.splitlines():
        m = LINE.search(line)
        if m:
            pairs = PAIRS.search(line)
            rows.append([*m.groups(), pairs.group(1) if pairs else None])
    out[name] = rows

x = jax.device_put(jnp.arange(32.).reshape(8, 4), jax.P('x', 'y'))
w = jax.device_put(jnp.ones((4, 4)), jax.P('y', None))
collectives("sum over a sharded dimension", lambda x: jnp.sum(x, axis=0), x)
collectives("contraction to a replicated result",
            lambda x, w: jnp.dot(x, w, out_sharding=jax.P('x', None)), x, w)
sm = lambda f, o: jax.shard_map(f, in_specs=jax.P('x', 'y'), out_specs=o)
collectives("psum", sm(lambda a: jax.lax.psum(a * 2, 'x'), jax.P(None, 'y')), x)
collectives("ppermute", sm(lambda a: jax.lax.ppermute(
    a, 'x', [(i, (i + 1) % 4) for i in range(4)]), jax.P('x', 'y')), x)
collectives("all_gather", jax.shard_map(lambda a: jax.lax.all_gather(a, 'x', tiled=True),
            in_specs=jax.P('x', 'y'), out_specs=jax.P(None, 'y'), check_vma=False), x)
def loop_body(c):
    return c[0] + 1, jax.lax.psum(c[1], 'x') / 4 + jax.lax.axis_index('x')
collectives("psum in a loop", sm(lambda a: jax.lax.while_loop(
    lambda c: c[0] < 3, loop_body, (0, a))[1], jax.P('x', 'y')), x)
'''

CASES = ["sum over a sharded dimension", "contraction to a replicated result", "psum",
         "ppermute", "all_gather", "psum in a loop"]


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=8)


@pytest.mark.parametrize("name", CASES)
def test_collective_lines_match_jax(both: tuple[dict[str, Any], dict[str, Any]],
                                    name: str) -> None:
    ours, theirs = both
    assert theirs[name], "JAX's program has a collective"
    assert ours[name] == theirs[name]


def test_a_program_without_mesh_has_no_collectives() -> None:
    """One device: the module's partitions and no collective line; each
    argument is a parameter named after it."""
    text = spec.jit(lambda a, b: a @ b + 1.0).lower(np.ones((2, 3), np.float32),
                                                    np.ones((3, 4), np.float32)).compile(
                                                    ).as_text()
    assert text.startswith("HloModule jit__lambda, entry_computation_layout="
                           "{(f32[2,3], f32[3,4])->f32[2,4]}, num_partitions=1")
    assert 'parameter(0), metadata={op_name="a"}' in text
    assert not any(op in text for op in ("all-reduce(", "all-gather(", "collective-permute("))


prefetch(PROGRAM, devices=8)


def test_replica_groups_are_the_devices_differing_along_the_axes() -> None:
    """On a (4, 2) mesh, a psum over 'x' groups the devices of each column of
    the mesh's device grid, one over 'y' those of each row."""
    def text(axis: str) -> str:
        spec.set_mesh(spec.make_mesh((4, 2), ("x", "y")))
        x = spec.device_put(np.ones((8, 4), np.float32), spec.P("x", "y"))
        f = spec.shard_map(lambda a: spec.lax.psum(a, axis), in_specs=spec.P("x", "y"),
                           out_specs=spec.P(None if axis == "x" else "x",
                                            "y" if axis == "x" else None))
        return str(spec.jit(f).lower(x).compile().as_text())
    grid = np.arange(8).reshape(4, 2)
    for axis, rows in (("x", grid.T), ("y", grid)):
        groups = "{" + ",".join("{" + ",".join(map(str, r)) + "}" for r in rows) + "}"
        assert f"replica_groups={groups}," in on_virtual_devices(8, lambda: text(axis))
