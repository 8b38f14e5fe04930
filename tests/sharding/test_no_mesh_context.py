"""Explicitly sharded arrays used with no mesh in context (as JAX's
spmd_mnist_classifier_fromscratch example does between epochs), against JAX run live in a
subprocess with four CPU devices (tests/support/twin.py): ``reshard`` of a host value to a
NamedSharding runs on that sharding's devices, and a select between constants made outside
any mesh by a mask of sharded data (the JVP of ``max`` with an ``initial``) types as JAX's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import numpy as np
jax, jnp = IMPL
out = {}
jax.config.update('jax_num_cpu_devices', 4)
P, AxisType = jax.sharding.PartitionSpec, jax.sharding.AxisType
mesh = jax.make_mesh((4,), ("batch",), axis_types=(AxisType.Explicit,))
host = np.arange(24.0, dtype=np.float32).reshape(8, 3) % 5
x = jax.sharding.reshard(host, jax.NamedSharding(mesh, P("batch")))
out["reshard type"] = str(jax.typeof(x))
out["reshard sharding"] = str(x.sharding.spec)
out["reshard shards"] = [np.asarray(s.data).tolist() for s in x.addressable_shards]

def peak(x):
    return jnp.sum(jnp.max(x, axis=1, initial=-np.inf))
g = jax.jit(jax.grad(peak))(x)
out["grad type"] = str(jax.typeof(g))
out["grad"] = np.asarray(g).tolist()
out["grad jaxpr"] = str(jax.make_jaxpr(jax.grad(peak))(x))

def pick(x):
    mask = jnp.max(x, axis=1) > 2.0
    return jax.lax.select(mask, jnp.ones(8), jnp.zeros(8))
out["select value"] = np.asarray(jax.jit(pick)(x)).tolist()
out["select jaxpr"] = str(jax.make_jaxpr(pick)(x))
'''

prefetch(PROGRAM)

KEYS = ["reshard type", "reshard sharding", "reshard shards", "grad type", "grad",
        "grad jaxpr", "select value", "select jaxpr"]


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM)


@pytest.mark.parametrize("key", KEYS)
def test_matches_jax(results: tuple[dict[str, Any], dict[str, Any]], key: str) -> None:
    ours, theirs = results
    assert ours[key] == theirs[key]


def test_sharding_of_no_mesh_compares_with_named_shardings_as_jax() -> None:
    """``typeof(x).sharding`` of an array on no mesh against NamedShardings
    on an empty abstract mesh, both ways round (a comparison that must not
    recurse), as JAX compares them."""
    import jax
    import jax.numpy as jjnp

    import spec
    import spec.numpy as snp

    def compare(lib: Any, np_lib: Any) -> list[bool]:
        typed = lib.typeof(np_lib.ones(3)).sharding
        empty = lib.sharding.AbstractMesh((), ())
        found = []
        for spec_ in (lib.P(), lib.P(None)):
            named = lib.NamedSharding(empty, spec_)
            found += [typed == named, named == typed]
        return found
    assert compare(spec, snp) == compare(jax, jjnp)
