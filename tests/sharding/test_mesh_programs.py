"""The mesh-program corpus (conformance/mesh_programs.py) against JAX: the
same output types and global values, on 2 and 4 devices (JAX in a
subprocess with that many CPU devices)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp
from conformance.mesh_programs import PROGRAMS, global_values
from tests.support.twin import ahead, jax_env, on_virtual_devices, run_process, take

ROOT = Path(__file__).resolve().parents[2]
_JAX = """
import json, sys
import jax, jax.numpy as jnp
from conformance.mesh_programs import global_values
print(json.dumps(global_values(jax, jnp, int(sys.argv[1]))))
"""


def _jax(n: int) -> dict[str, Any]:
    result: dict[str, Any] = take(("mesh programs", n), lambda: _jax_process(n))
    return result


def _jax_process(n: int) -> dict[str, Any]:
    env = dict(jax_env(n), PYTHONPATH=str(ROOT))
    proc = run_process([sys.executable, "-c", _JAX, str(n)], env=env, timeout=300)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _spec(n: int) -> dict[str, Any]:
    result: dict[str, Any] = on_virtual_devices(n, lambda: global_values(spec, snp, n))
    return result


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
for _n in (2, 4):
    ahead(__name__, ("mesh programs", _n), lambda n=_n: _jax_process(n))


@pytest.fixture(scope="module", params=[2, 4])
def both(request: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return _spec(request.param), _jax(request.param)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_mesh_program_matches_jax(both: tuple[dict[str, Any], dict[str, Any]],
                                  name: str) -> None:
    ours, theirs = both
    assert ours[name]["types"] == theirs[name]["types"]
    for a, b in zip(ours[name]["values"], theirs[name]["values"]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=1e-6)
