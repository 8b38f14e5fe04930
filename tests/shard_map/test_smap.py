"""``jax.smap``: one program run on JAX (a subprocess with 4 CPU devices) and on spec; what
each cell prints (types, jaxprs, values, error classes and messages) must agree."""

from __future__ import annotations

from typing import Any

import pytest

from tests.shard_map.test_shard_map import PRELUDE
from tests.support.twin import prefetch, run_both

SMAP = PRELUDE + r'''
Explicit, Auto = jax.sharding.AxisType.Explicit, jax.sharding.AxisType.Auto
jax.set_mesh(jax.make_mesh((4,), ('x',), (Explicit,)))
xs = jax.device_put(jnp.arange(8.).reshape(4, 2), jax.P('x'))
f = jax.smap(lambda a, b: (a * 2 + b, jax.lax.psum(a, 'x')), in_axes=(0, None),
             out_axes=(0, None), axis_name='x')
cell("axes", lambda: print(*(jax.typeof(v) for v in f(xs, 1.0)), np.asarray(f(xs, 1.0)[1])))
cell("jaxpr", lambda: print(jax.make_jaxpr(f)(xs, 1.0)))
cell("inferred", lambda: jax.smap(lambda a: a * 3, out_axes=0, axis_name='x')(xs))
cell("decorator", lambda: jax.smap(in_axes=1, out_axes=1, axis_name='x')(
    lambda a: jnp.sum(a, 1, keepdims=True))(jax.reshard(xs.T, jax.P(None, 'x'))))
jax.set_mesh(jax.make_mesh((4,), ('x',), (Auto,)))
x = jnp.arange(8.).reshape(4, 2)
cell("auto", lambda: jax.smap(lambda a: a * 2, in_axes=0, out_axes=0, axis_name='x')(x))
cell("auto needs in_axes", lambda: jax.smap(lambda a: a, out_axes=0, axis_name='x')(x))
cell("list in_axes", lambda: jax.smap(lambda a: a, in_axes=[0], out_axes=0, axis_name='x'))
cell("tuple axis_name", lambda: jax.smap(lambda a: a, out_axes=0, axis_name=('x',)))
cell("float out_axes", lambda: jax.smap(lambda a: a, out_axes=0.5, axis_name='x'))
'''


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(SMAP)


@pytest.mark.parametrize("name", ["axes", "jaxpr", "inferred", "decorator", "auto",
                                  "auto needs in_axes", "list in_axes", "tuple axis_name",
                                  "float out_axes"])
def test_cell_prints_what_jax_prints(results: tuple[dict[str, Any], dict[str, Any]],
                                     name: str) -> None:
    ours, theirs = results
    assert ours[name] == theirs[name]


prefetch(SMAP)
