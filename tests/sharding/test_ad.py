"""Autodiff with shardings in types (SPEC.md sections 12.1, 12.5, 14): cotangent
types are a function of primal types. The programs below run in real JAX in a
subprocess with 2 CPU devices (JAX fixes its device count at first use) and in
spec in-process; types, printed jaxprs and values must agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import spec
from spec._src.interpreters.ad import _check_cotangent
from spec.sharding import NamedSharding, P
from spec._src.core.types import ArrayType

# One program, run by both: `jax`/`jnp` are JAX's or spec's. It fills `out`
# with printed forms (str) and values (nested lists).
PROGRAM = r"""
jax.set_mesh(jax.make_mesh((2,), ('X',)))
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('X', None))
w = jax.device_put(jnp.arange(4 * 2.).reshape(4, 2) / 10., jax.P(None, None))

def loss(w, x):
    return jnp.sum((x @ w) ** 2)

# The docs page's first example (docs/new_docs/301/sharding-ad.md).
dw, dx = jax.grad(loss, argnums=(0, 1))(w, x)
out['types'] = [f"{jax.typeof(w)} -> {jax.typeof(dw)}", f"{jax.typeof(x)} -> {jax.typeof(dx)}"]
out['jaxpr_grad'] = str(jax.jit(jax.grad(loss)).trace(w, x).jaxpr)
out['jaxpr_both'] = str(jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(w, x))
out['dw'] = np.asarray(dw).tolist()
out['dx'] = np.asarray(dx).tolist()

# A zero cotangent of a sharded argument keeps its sharding.
def ignores_x(w, x):
    return jnp.sum(w * w)
dz = jax.grad(ignores_x, argnums=1)(w, x)
out['zero_type'] = str(jax.typeof(dz))
out['zero_value'] = np.asarray(dz).tolist()

# A partial reduction: its transpose broadcasts back to the operand's sharding.
def rows(x, w):
    return jnp.sum(jnp.sum(x, axis=1) * jnp.sum(x @ w, axis=1))
out['jaxpr_rows'] = str(jax.make_jaxpr(jax.grad(rows))(x, w))
g = jax.grad(rows)(x, w)
out['rows_type'] = str(jax.typeof(g))
out['rows_value'] = np.asarray(g).tolist()

# vjp with a sharded output cotangent.
y, f_vjp = jax.vjp(lambda x: 3.0 * x, x)
(ct,) = f_vjp(y)
out['vjp_type'] = str(jax.typeof(ct))
out['vjp_value'] = np.asarray(ct).tolist()
"""

_JAX_DRIVER = r"""
import json, sys
import numpy as np
import jax, jax.numpy as jnp
out = {}
exec(sys.stdin.read())
print(json.dumps(out))
"""


@pytest.fixture
def two_devices() -> Iterator[None]:
    """Two virtual CPU devices and no mesh left set afterwards."""
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    restore = spec.set_mesh(None)  # remembers the mesh set before the test
    try:
        yield
    finally:
        restore.__exit__(None, None, None)
        spec.config.update("jax_num_cpu_devices", before)


def _run_jax() -> dict[str, Any]:
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", _JAX_DRIVER], input=PROGRAM, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _run_spec() -> dict[str, Any]:
    import spec.numpy as jnp
    out: dict[str, Any] = {}
    exec(PROGRAM, {"jax": spec, "jnp": jnp, "np": np, "out": out})
    return out


@pytest.fixture(scope="module")
def jax_out() -> dict[str, Any]:
    return _run_jax()


@pytest.mark.parametrize("key", ["types", "jaxpr_grad", "jaxpr_both", "zero_type",
                                 "jaxpr_rows", "rows_type", "vjp_type"])
def test_printed_forms_match_jax(two_devices: None, jax_out: dict[str, Any], key: str) -> None:
    assert _run_spec()[key] == jax_out[key]


@pytest.mark.parametrize("key", ["dw", "dx", "zero_value", "rows_value", "vjp_value"])
def test_values_match_jax(two_devices: None, jax_out: dict[str, Any], key: str) -> None:
    np.testing.assert_allclose(np.asarray(_run_spec()[key]), np.asarray(jax_out[key]),
                               rtol=1e-6)


def _mesh_sharding(spec_: P) -> NamedSharding:
    return NamedSharding(spec.make_mesh((2,), ("X",)).abstract_mesh, spec_)


def test_ct_type_maps_shardings(two_devices: None) -> None:
    sharded = ArrayType((8, 4), np.dtype("float32"), sharding=_mesh_sharding(P("X", None)))
    assert sharded.ct_type().sharding == sharded.sharding
    replicated = ArrayType((4,), np.dtype("float32"), sharding=_mesh_sharding(P(None)))
    assert replicated.ct_type().sharding == replicated.sharding
    # Integer primal: float0 cotangent, same layout.
    ints = ArrayType((8,), np.dtype("int32"), sharding=_mesh_sharding(P("X")))
    assert ints.ct_type().sharding == ints.sharding
    # Unreduced and reduced swap (the cotangent of a replicated-by-reduction value is a sum).
    red = ArrayType((2,), np.dtype("float32"), sharding=_mesh_sharding(P(None, reduced={"X"})))
    ct_spec = red.ct_type().sharding.spec
    assert ct_spec.unreduced == frozenset({"X"}) and not ct_spec.reduced
    unred = ArrayType((2,), np.dtype("float32"),
                      sharding=_mesh_sharding(P(None, unreduced={"X"})))
    ct_spec = unred.ct_type().sharding.spec
    assert ct_spec.reduced == frozenset({"X"}) and not ct_spec.unreduced


def test_cotangent_with_wrong_sharding_is_a_type_error(two_devices: None) -> None:
    spec.set_mesh(spec.make_mesh((2,), ("X",)))
    x = spec.device_put(np.zeros((8, 4), np.float32), P("X", None))
    replicated = spec.device_put(np.zeros((8, 4), np.float32), P(None, None))
    # Right sharding: accepted; replicated and unsharded count as one layout.
    _check_cotangent(spec.typeof(x), x)
    _check_cotangent(spec.typeof(replicated), np.zeros((8, 4), np.float32))
    with pytest.raises(TypeError, match=r"float32\[8@X,4\]"):
        _check_cotangent(spec.typeof(x), replicated)
    with pytest.raises(TypeError, match="cotangent type"):
        _check_cotangent(spec.typeof(replicated), x)
