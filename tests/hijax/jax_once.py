"""JAX's side of the hi-type pages, run once per test run.

A program of cells runs on JAX in a subprocess (JAX fixes its device count
at first use), tens of seconds of XLA compilation. Its output is a pure
function of the program and the device count, so it is a prefetched job of
tests/support/twin.py: it runs while earlier tests do, once per session
(pytest-xdist's workers share its result).
"""

from __future__ import annotations

import functools
import json
import sys

from tests.support.twin import ahead, jax_env, run_process, take


def _process(program: str, devices: int) -> list[str]:
    """``program`` (Python printing its outputs as a JSON list on its last
    line) run on JAX."""
    proc = run_process([sys.executable, "-c", program], env=jax_env(devices), timeout=600)
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def declare(module: str, program: str, devices: int) -> None:
    """At ``module``'s import: its tests will ask for ``program``'s output."""
    ahead(module, ("hijax-jax", program, devices),
          functools.partial(_process, program, devices))


@functools.cache
def outputs(program: str, devices: int) -> tuple[str, ...]:
    """JAX's outputs of ``program``: prefetched, another worker's, or run now."""
    return tuple(take(("hijax-jax", program, devices),
                      functools.partial(_process, program, devices)))
