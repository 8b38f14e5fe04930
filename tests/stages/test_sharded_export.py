"""``jax.export`` of programs over a 2x2 mesh: the exported shardings
(``in_shardings_jax``/``out_shardings_jax`` over the export's abstract mesh
or a given one, None where the program leaves a placement open), the HLO
sharding fields, the device count, the types and the module, and a call on
arguments placed by the exported shardings. One program runs on spec here
and on JAX in a subprocess with 4 CPU devices (tests/support/twin.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lowering.xla_run import parsed
from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import numpy as np
jax, jnp = IMPL
jax.config.update('jax_num_cpu_devices', 4)
export = __import__(jax.__name__ + '.export', fromlist=['export'])
P, NS, AT = jax.sharding.PartitionSpec, jax.sharding.NamedSharding, jax.sharding.AxisType
F32 = np.float32
out = {}
def attempt(call):
    try:
        return repr(call())
    except Exception as err:
        return [type(err).__name__, str(err)]
def fields(name, e, mesh):
    other = jax.make_mesh((4,), ("z",), axis_types=(AT.Auto,))
    out[name] = {"nr_devices": e.nr_devices, "in_hlo": repr(e.in_shardings_hlo),
                 "out_hlo": repr(e.out_shardings_hlo), "kept": list(e.module_kept_var_idx),
                 "in": attempt(e.in_shardings_jax),
                 "out": attempt(lambda: e.out_shardings_jax(None)),
                 "in_mesh": attempt(lambda: e.in_shardings_jax(mesh)),
                 "out_mesh": attempt(lambda: e.out_shardings_jax(mesh)),
                 "other_mesh": attempt(lambda: e.in_shardings_jax(other)),
                 "avals": repr((e.in_avals, e.out_avals)), "module": e.mlir_module()}
explicit = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AT.Explicit,) * 2)
auto = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AT.Auto,) * 2)
with jax.set_mesh(explicit):
    a = jax.ShapeDtypeStruct((4, 8), F32, sharding=P("x", "y"))
    b = jax.ShapeDtypeStruct((8,), F32, sharding=P())
    e = export.export(jax.jit(lambda a, b: (a + a, b - b, (a + b).T)))(a, b)
    fields("explicit", e, explicit)
    args = [jax.device_put(np.arange(n, dtype=F32).reshape(s), p)
            for n, s, p in zip((32, 8), ((4, 8), (8,)), e.in_shardings_jax(explicit))]
    out["explicit_call"] = [[np.asarray(r).tolist(), repr(r.sharding)] for r in e.call(*args)]
    fields("explicit_unplaced", export.export(jax.jit(lambda a, u, c: a + c))(
        a, np.ones(3, F32), np.ones(8, F32)), explicit)
fields("auto_jit_shardings", export.export(jax.jit(
    lambda a: a + a, in_shardings=NS(auto, P("x")), out_shardings=NS(auto, P(None, "y"))))(
    jax.ShapeDtypeStruct((4, 8), F32)), auto)
placed = jax.device_put(np.ones((4, 8), F32), NS(auto, P("x", "y")))
fields("auto_placed", export.export(jax.jit(lambda a, c: (a + a, c)))(placed, np.ones(2, F32)),
       auto)
one = jax.device_put(np.ones(3, F32), jax.devices()[0])
fields("one_device", export.export(jax.jit(lambda a, c: a * c))(one, np.ones(3, F32)), auto)
'''

CASES = ["explicit", "explicit_unplaced", "auto_jit_shardings", "auto_placed", "one_device"]

prefetch(PROGRAM, devices=4)


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=4)


@pytest.mark.parametrize("name", CASES)
def test_exported_shardings_are_jax_s(both: tuple[dict[str, Any], dict[str, Any]],
                                      name: str) -> None:
    ours, theirs = ({k: v for k, v in side[name].items() if k != "module"} for side in both)
    assert ours == theirs


@pytest.mark.parametrize("name", [c for c in CASES if c != "explicit_unplaced"])
def test_exported_module_is_jax_s(both: tuple[dict[str, Any], dict[str, Any]],
                                  name: str) -> None:
    """The module with its shardings (printed without locations, which name
    the frames of the program's text). The programs have no constants:
    JAX's export moves a module's constants to the top of its function,
    which spec's module does not. (An argument left unplaced under an
    Explicit mesh is typed without a mesh in spec, so its broadcast lacks
    the replicated ``sdy.sharding_constraint`` JAX writes: not compared.)"""
    ours, theirs = (side[name]["module"] for side in both)
    assert parsed(ours) == parsed(theirs)


def test_call_on_arguments_placed_by_the_exported_shardings(
        both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, theirs = both
    assert ours["explicit_call"] == theirs["explicit_call"]
