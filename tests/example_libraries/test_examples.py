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
    # Four CPU devices, for spmd_mnist_classifier_fromscratch's mesh; the other programs
    # run on the first, as on one.
    env = dict(twin.jax_env(4), PYTHONPATH=str(WORKTREE))
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
        if key == "sampled":  # Bernoulli draws
            np.testing.assert_array_equal(ours[key], theirs[key])
        elif isinstance(ours[key], (str, int)) or key == "shardings":  # text and counts
            assert ours[key] == theirs[key], key
        elif key == "accuracy":
            # Counted from argmaxes, so exact unless a float tie flips, then divided by
            # the count: XLA multiplies by the reciprocal of a constant divisor (one ulp off
            # a correctly rounded division, which spec does).
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6)
        elif key == "params":
            assert len(ours[key]) == len(theirs[key])
            for a, b in zip(ours[key], theirs[key]):
                assert a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_allclose(ours[key], theirs[key], rtol=rtol)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_example_program_gives_jax_numbers(jax_results: dict[str, Any], name: str,
                                           four_devices: None) -> None:
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


@pytest.mark.parametrize("name", ["mnist_classifier", "spmd_mnist_classifier_fromscratch"])
def test_program_run_by_python_m_spec_prints_jax_numbers(jax_results: dict[str, Any],
                                                         tmp_path: pathlib.Path,
                                                         name: str) -> None:
    program = tmp_path / "run_example.py"
    program.write_text(RUNNER)
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), JAX_PLATFORMS="cpu",
               JAX_NUM_CPU_DEVICES="4")
    done = subprocess.run([sys.executable, "-m", "spec", str(program), name],
                          cwd=WORKTREE, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.splitlines()[-1])
    theirs = _jax_result(jax_results, name)
    np.testing.assert_allclose(printed["loss"], theirs["loss"], rtol=2e-4)
