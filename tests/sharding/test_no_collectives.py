"""jax.sharding.no_collectives against JAX (four CPU devices, one JAX
process): the setting's value semantics, and ForbiddenCollectiveError with
JAX's message from collectives over a forbidden axis and from explicit-mode
sharding rules (a lost, moved or consumed-unreduced axis), traced and
eager, jit cache included."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.twin import NAME_AND_MESSAGE, cell_program, prefetch, run_both

PROGRAM = cell_program(NAME_AND_MESSAGE) + r'''
nc = jax.sharding.no_collectives
mesh = jax.make_mesh((2, 2), ('x', 'y'))
jax.set_mesh(mesh)
P = jax.P
a = jax.device_put(jnp.arange(16.).reshape(4, 4), P('x', 'y'))
left = jax.device_put(jnp.arange(16.).reshape(4, 4) / 7, P(None, 'x'))
right = jax.device_put(jnp.arange(16.).reshape(4, 4) / 5, P('x', None))
sm = lambda f, o=P('x', 'y'): jax.shard_map(f, in_specs=P('x', 'y'), out_specs=o)

cell("default", lambda: print(nc.value))
cell("a string", lambda: nc('x'))
cell("a list", lambda: nc(['x']))
def nested():
    with nc({'x'}):
        print(nc.value)
        with nc(frozenset({'x', 'y'})):
            print(sorted(nc.value))
        print(nc.value)
    print(nc.value)
cell("nested", nested)

def forbidden(name, fn, axes=frozenset({'x'})):
    def run():
        with nc(axes):
            return fn()
    cell(name, run)

forbidden("psum", lambda: sm(lambda b: lax.psum(b, 'x'))(a))
forbidden("psum other axis", lambda: sm(lambda b: lax.psum(b, 'y'))(a))
forbidden("pmax two axes", lambda: sm(lambda b: lax.pmax(b, ('y', 'x')))(a))
forbidden("pmean", lambda: sm(lambda b: lax.pmean(b, 'x'))(a))
forbidden("all_gather", lambda: sm(lambda b: lax.all_gather(b, 'x'), o=P(None, 'x', 'y'))(a))
forbidden("psum_scatter", lambda: sm(lambda b: lax.psum_scatter(b, 'x', tiled=True))(a))
forbidden("all_to_all", lambda: sm(lambda b: lax.all_to_all(b, 'x', 0, 1, tiled=True))(a))
forbidden("ppermute", lambda: sm(lambda b: lax.ppermute(b, 'x', [(0, 1), (1, 0)]))(a))
forbidden("ragged_all_to_all jaxpr", lambda: print(jax.make_jaxpr(sm(
    lambda b: lax.ragged_all_to_all(b, b, *(jnp.zeros(2, jnp.int32),) * 4, axis_name='x')))(a)))
forbidden("axis_index", lambda: sm(lambda b: b + lax.axis_index('x'))(a))
c = jax.device_put(jnp.arange(16.).reshape(4, 4), P(None, 'y'))
forbidden("pcast varying", lambda: jax.shard_map(
    lambda b: lax.pcast(b, 'x', to='varying'), in_specs=P(None, 'y'), out_specs=P('x', 'y'))(c))
forbidden("psum under jit", lambda: jax.jit(sm(lambda b: lax.psum(b, 'x')))(a))
forbidden("psum jaxpr", lambda: print(jax.make_jaxpr(sm(lambda b: lax.psum(b, 'x')))(a)))
forbidden("sum over the split axis", lambda: jnp.sum(a, axis=0))
forbidden("sum over the other axis", lambda: jnp.sum(a, axis=1))
forbidden("max over both", lambda: jnp.max(a), frozenset({'y'}))
forbidden("sum under jit", lambda: jax.jit(lambda v: jnp.sum(v, axis=0))(a))
forbidden("reshard gathers", lambda: jax.reshard(a, P()))
forbidden("reshard keeps the axis", lambda: jax.reshard(a, P('x', None)))
forbidden("reshard moves the axis", lambda: jax.reshard(a, P('y', 'x')))
forbidden("elementwise", lambda: a * 2 + jnp.sin(a))
forbidden("transpose", lambda: a.T)
forbidden("broadcast_in_dim moves", lambda: lax.broadcast_in_dim(
    a, (4, 4, 2), (0, 1), out_sharding=P(None, 'x', None)))
forbidden("broadcast_in_dim keeps", lambda: lax.broadcast_in_dim(
    a, (4, 4, 2), (0, 1), out_sharding=P('x', 'y', None)))
partial = lambda: jnp.matmul(left, right, out_sharding=P(None, None, unreduced={'x'}))
forbidden("matmul kept unreduced", lambda: print(jax.typeof(partial())))
forbidden("unreduced summed by reshard", lambda: jax.reshard(partial(), P()))
forbidden("matmul gathered", lambda: jnp.matmul(left, right, out_sharding=P()))
forbidden("matmul moves a free axis", lambda: jnp.matmul(a, jnp.ones((4, 4)),
                                                        out_sharding=P(None, 'x')))
forbidden("matmul keeps a free axis", lambda: jnp.matmul(a, jnp.ones((4, 4)),
                                                        out_sharding=P('x', None)))
forbidden("sum requested unreduced", lambda: print(jax.typeof(
    lax.reduce_sum(a, (0,), out_sharding=P('y', unreduced={'x'})))))
forbidden("sum requested whole", lambda: lax.reduce_sum(a, (0,), out_sharding=P('y')))
cube = jax.device_put(jnp.ones((4, 4, 4)), P('x', 'y', None))
forbidden("sum moves a kept axis", lambda: lax.reduce_sum(cube, (0,), out_sharding=P(None, 'y')),
          frozenset({'y'}))
f = jax.jit(lambda v: jnp.sum(v, axis=0))
cell("jit traced without", lambda: f(a))
forbidden("jit called again within", lambda: f(a))
cell("jit called again after", lambda: f(a))
'''

prefetch(PROGRAM)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM)


NAMES = re.findall(r'^(?:cell|forbidden)\("([^"]+)"', PROGRAM, re.MULTILINE)


@pytest.mark.parametrize("name", NAMES)
def test_cell_prints_what_jax_prints(results: tuple[dict[str, Any], dict[str, Any]],
                                     name: str) -> None:
    ours, theirs = results
    assert ours[name] == theirs[name]


def test_the_setting_forbids_something(results: tuple[dict[str, Any], dict[str, Any]]
                                       ) -> None:
    ours, _ = results
    raised = [n for n in NAMES if "raises ForbiddenCollectiveError" in ours[n]]
    assert len(raised) >= 10
