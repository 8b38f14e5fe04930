"""The logic of JAX's ``examples/`` programs (tests/example_libraries/programs.py) run on spec
and on real JAX prints the same numbers and ends with the same parameters; and run unchanged
under ``python -m spec``, where ``import jax`` is spec, it prints what real JAX computes."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import spec
from tests.example_libraries.programs import PROGRAMS, from_json
from tests.support import twin

WORKTREE = pathlib.Path(__file__).resolve().parents[2]

# Real JAX runs every program in one subprocess, ahead of the tests (tests/support/twin.py):
# its side is seconds of XLA compilation, spec's a fraction of one.
JAX_SIDE = """
import json, jax
from tests.example_libraries.programs import PROGRAMS, to_json
print(json.dumps({name: to_json(program(jax)) for name, program in PROGRAMS.items()}))
"""


def _run_jax_side() -> dict[str, Any]:
    env = dict(twin.jax_env(1), PYTHONPATH=str(WORKTREE))
    done = twin.run_process([sys.executable, "-c", JAX_SIDE], env=env, timeout=600)
    return {name: from_json(result)
            for name, result in json.loads(done.stdout.splitlines()[-1]).items()}


_KEY = ("example_libraries programs", JAX_SIDE)
twin.ahead(__name__, _KEY, _run_jax_side)


@pytest.fixture(scope="module")
def jax_results() -> dict[str, Any]:
    results: dict[str, Any] = twin.take(_KEY, _run_jax_side)
    return results


def _jax_result(results: dict[str, Any], name: str) -> Any:
    return results[name]


def _compare(ours: Any, theirs: Any, rtol: float) -> None:
    assert ours.keys() == theirs.keys()
    for key in ours:
        if key == "accuracy" or key == "sampled":
            # Counted from argmaxes and Bernoulli draws: exact unless a float tie flips.
            np.testing.assert_array_equal(ours[key], theirs[key])
        elif key == "params":
            assert len(ours[key]) == len(theirs[key])
            for a, b in zip(ours[key], theirs[key]):
                assert a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=rtol)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_example_program_gives_jax_numbers(jax_results: dict[str, Any], name: str) -> None:
    # Few steps of float32 training from equal (or ulp-near) initial parameters.
    _compare(PROGRAMS[name](spec), _jax_result(jax_results, name), rtol=2e-4)



RUNNER = '''
import json, sys
import jax
from jax.example_libraries import optimizers, stax
assert jax.__name__ == "spec" and optimizers.__name__.startswith("spec.")
assert stax.__name__ == "spec.example_libraries.stax"
from tests.example_libraries.programs import PROGRAMS
result = PROGRAMS[sys.argv[1]](jax)
print(json.dumps({k: v for k, v in result.items() if k != "params"}))
'''


def test_program_run_by_python_m_spec_prints_jax_numbers(jax_results: dict[str, Any],
                                                         tmp_path: pathlib.Path) -> None:
    program = tmp_path / "run_example.py"
    program.write_text(RUNNER)
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-m", "spec", str(program), "mnist_classifier"],
                          cwd=WORKTREE, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.splitlines()[-1])
    theirs = _jax_result(jax_results, "mnist_classifier")
    np.testing.assert_allclose(printed["loss"], theirs["loss"], rtol=2e-4)
