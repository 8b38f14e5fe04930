"""The debug_nans cells of JAX's page docs/new_docs/201/debugging.md run on
spec and on JAX 0.12 in one namespace each; per cell, what it prints (and
the exception it raises) must be equal. In the cell calling ``jax.jit(f)``
JAX prints one notice more (its ``jnp.log`` is itself a jit call: SPEC.md
7a), so there the exception line is compared; in the traceback cell, the
traceback's frames and exception line (JAX adds a note on its filtering of
internal frames)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import spec
import spec.numpy as snp
from tests.support.notebook import run_cell

CELLS = [
    '''
import traceback
jax.config.update("jax_debug_nans", True)

def f(x):
  w = 3 * jnp.square(x)
  return jnp.log(-w)

# The stack trace is very long, so only print a couple of lines.
try:
  f(5.)
except FloatingPointError as e:
  print(traceback.format_exc(limit=2))
''',
    '''
jax.jit(f)(5.)
''',
    '''
with jax.debug_nans(False):
  print(jax.jit(f)(5.))
''',
    '''
jax.config.update("jax_debug_nans", False)  # back off for the rest of this page
''',
]


def _run(lib: Any, np_mod: Any) -> list[str]:
    ns: dict[str, Any] = {"jax": lib, "jnp": np_mod}
    try:
        return [run_cell(c, ns) for c in CELLS]
    finally:
        lib.config.update("jax_debug_nans", False)


ROOT = Path(__file__).resolve().parents[2]

# JAX's side runs in a fresh process: in a process that has run other JAX
# programs, JAX's eager NaN checks depend on what it has compiled before.
_JAX_SIDE = """
import json, jax, jax.numpy as jnp
from tests.debugging.test_debugging_page import _run
print(json.dumps(_run(jax, jnp)))
"""


def _run_jax() -> list[str]:
    done = subprocess.run([sys.executable, "-c", _JAX_SIDE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"})
    return list(json.loads(done.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def outputs() -> tuple[list[str], list[str]]:
    return _run(spec, snp), _run_jax()


@pytest.mark.parametrize("i", range(len(CELLS)))
def test_cell(outputs: tuple[list[str], list[str]], i: int) -> None:
    got, want = outputs[0][i], outputs[1][i]
    if i == 0:
        got, want = _traceback_lines(got), _traceback_lines(want)
        assert got[-1] == "FloatingPointError: invalid value (nan) encountered in log"
    if i == 1:
        got, want = got.splitlines()[-1], want.splitlines()[-1]
        assert got.startswith("raises FloatingPointError: invalid value (nan)")
    assert got == want


def _traceback_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines()
            if ln.startswith(("Traceback", "  File", "FloatingPointError"))]
