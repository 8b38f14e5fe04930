"""pmap on shard_map: one twin program (JAX in a subprocess with 4 CPU
devices, spec here) whose cells print values, dtypes and jaxprs of mapped
collectives, in_axes/out_axes/static arguments, pytrees, grads and errors;
each cell must agree. Also the grad of a shard_map with check_vma=False,
whose residuals vary over the manual axes untracked."""

from __future__ import annotations

import pytest

from tests.support.twin import BUILTIN_CLASS, cell_program, prefetch, run_both

PROGRAM = cell_program(BUILTIN_CLASS, setup='from functools import partial\n') + r'''
normalize = jax.pmap(lambda x: x / jax.lax.psum(x, 'i'), axis_name='i')
cell('psum', lambda: normalize(jnp.arange(4.)))
axes = jax.pmap(lambda x, y, s: (x * y * s, jax.lax.pmean(x, 'b')), axis_name='b',
                in_axes=(1, None), static_broadcasted_argnums=2, out_axes=(0, None))
cell('axes', lambda: axes(np.arange(8.).reshape(2, 4), 3., 2))
cell('tree', lambda: jax.pmap(lambda d: {'s': d['a'].sum(), 'i': d['b'] + 1})(
    {'a': np.ones((2, 3), np.float32), 'b': np.arange(2)}))
cell('grad', lambda: jax.grad(lambda x: jax.pmap(lambda v: jnp.sin(v) * v)(x).sum())(
    np.arange(3.)))
cell('index', lambda: jax.pmap(lambda x: x + jax.lax.axis_index('k'), axis_name='k')(
    np.zeros(3, np.int32)))
cell('no_mapped', lambda: jax.pmap(lambda x: x, in_axes=None)(np.zeros(2)))
mesh = jax.sharding.Mesh(jax.devices()[:3], ('i',))
sm = jax.shard_map(lambda v: jax.lax.squeeze(v, (0,)) ** 2 * jnp.sin(v), mesh=mesh,
                   in_specs=jax.P('i'), out_specs=jax.P('i'), check_vma=False)
cell('unchecked_grad', lambda: jax.grad(lambda x: sm(x).sum())(np.arange(3.)))
'''

prefetch(PROGRAM)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, str], dict[str, str]]:
    return run_both(PROGRAM)


CELLS = ["psum", "axes", "tree", "grad", "index", "no_mapped", "unchecked_grad"]


@pytest.mark.parametrize("name", CELLS)
def test_cell_matches_jax(results: tuple[dict[str, str], dict[str, str]], name: str) -> None:
    ours, theirs = results
    assert ours[name] == theirs[name]
