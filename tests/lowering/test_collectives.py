"""Sharded programs (shard_map with collectives, explicit sharding,
sharding constraints) lowered by spec, compiled by jaxlib for 2, 4 and 8
CPU devices and run: the results are spec's own and ``jax.jit``'s, bit for
bit; a small shard_map's module text is JAX's. JAX fixes its device count
when first used, so the programs run in one subprocess with 8 devices
(tests/lowering/sharded_worker.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec._src.lowering.sharding import dims_text
from spec.sharding import PartitionSpec as P
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled

_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(_ROOT), JAX_PLATFORMS="cpu",
               JAX_NUM_CPU_DEVICES="8")
    run = subprocess.run([sys.executable, "-m", "tests.lowering.sharded_worker"], cwd=_ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("name", ["collectives_2x2", "ring_8", "explicit_2x4",
                                  "auto_constraint_4", "unreduced_2x2", "partial_manual_2x2",
                                  "psum_text_2"])
def test_compiled_sharded_program_is_bitwise_spec_and_jax(results: dict[str, Any],
                                                          name: str) -> None:
    r = results[name]
    assert "error" not in r, r.get("error")
    assert r["spec_equal"] and all(r["spec_equal"]), r["spec_equal"]
    assert all(r["jax_equal"]), r["jax_equal"]


@pytest.mark.parametrize("name", ["psum_text_2", "unreduced_2x2", "explicit_2x4"])
def test_shard_map_text_matches_jax(results: dict[str, Any], name: str) -> None:
    assert results[name]["text_equal"], (results[name]["text"], results[name]["jax_text"])


@pytest.mark.parametrize("name", ["auto_placed_8", "psum_text_2", "unreduced_2x2",
                                  "explicit_2x4", "gspmd_4"])
def test_lowered_module_is_jax_with_its_attributes(results: dict[str, Any], name: str) -> None:
    """``Lowered.as_text()`` with ``mhlo.num_partitions``/``num_replicas``,
    ``jax.result_info`` and argument shardings as JAX writes them."""
    r = results[name]
    assert "error" not in r, r.get("error")
    assert r["full_text_equal"], (r["full_text"], r["jax_full_text"])


def test_collectives_are_emitted_inside_manual_computation(results: dict[str, Any]) -> None:
    text = results["collectives_2x2"]["text"]
    for op in ("sdy.manual_computation", '"stablehlo.all_reduce"', '"stablehlo.all_gather"',
               '"stablehlo.reduce_scatter"', '"stablehlo.all_to_all"',
               '"stablehlo.collective_permute"', "stablehlo.partition_id"):
        assert op in text, op
    assert 'sdy.mesh @mesh = <["x"=2, "y"=2]>' in text


def test_partition_spec_text() -> None:
    assert dims_text(P("x", None, ("y", "z")), 3) == '[{"x"}, {}, {"y", "z"}]'
    assert dims_text(P(None), 2, open_dims=[1]) == "[{}, {?}]"


def _vmapped_collectives(m: Any) -> Any:
    return lambda a: m.vmap(lambda v: (v / m.lax.psum(v, "i"), m.lax.pmax(v, "i"),
                                       m.lax.pmin(v, "i")), axis_name="i")(a)


def test_collectives_over_a_vmapped_axis_are_reductions() -> None:
    """Under vmap a collective's axis is positional: it lowers to the
    reduction (``stablehlo.reduce``), as JAX lowers it; XLA's values are
    spec's."""
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    ours, compiled, text = spec_and_compiled(_vmapped_collectives(spec), x)
    assert canonical(text) == canonical(jax.jit(_vmapped_collectives(jax)).lower(x).as_text())
    assert_bitwise(ours, compiled)


def test_gspmd_text_of_a_shard_map_is_refused(four_devices: None) -> None:
    """A shard_map's manual computation has no GSPMD form here: lowering it
    with the Shardy partitioner off is NotImplementedError naming the op."""
    auto = spec.sharding.AxisType.Auto
    mesh = spec.make_mesh((2, 2), ("x", "y"), axis_types=(auto, auto))
    f = spec.jit(spec.shard_map(lambda b: spec.lax.psum(b, "x"), mesh=mesh,
                                in_specs=P("x", "y"), out_specs=P(None, "y")))
    x = np.ones((4, 8), np.float32)
    assert "sdy.manual_computation" in f.lower(x).as_text()
    spec.config.update("jax_use_shardy_partitioner", False)
    try:
        with pytest.raises(NotImplementedError, match="sdy.manual_computation"):
            f.lower(x).as_text()
    finally:
        spec.config.update("jax_use_shardy_partitioner", True)
