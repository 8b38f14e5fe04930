"""JAX's side of the hi-type pages, run once per test run.

A program of cells runs on JAX in a subprocess (JAX fixes its device count
at first use), tens of seconds of XLA compilation. Its output is a pure
function of the program and the device count, so the workers of one
pytest-xdist run share it: the first worker to ask runs the subprocess,
under a file lock, and leaves the output in a file named by the run's id;
the other waits for the lock and reads it. The job is also declared for
the background prefetch (tests/support/twin.py), so it runs while earlier
tests do.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from tests.support.twin import ahead, jax_env, run_process, take

def _process(program: str, devices: int) -> list[str]:
    """``program`` (Python printing its outputs as a JSON list on its last
    line) run on JAX."""
    proc = run_process([sys.executable, "-c", program], env=jax_env(devices), timeout=600)
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def _shared(program: str, devices: int) -> list[str]:
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:  # (one process: nobody to share with)
        return _process(program, devices)
    digest = hashlib.sha256(f"{devices}\n{program}".encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"spec-hijax-jax-{run_id}-{digest}.json"
    lock_path = path.with_suffix(".lock")
    atexit.register(_remove, path, lock_path)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if path.exists():
                return list(json.loads(path.read_text()))
            out = _process(program, devices)
            part = path.with_suffix(".part")
            part.write_text(json.dumps(out))
            part.replace(path)
            return out
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _remove(*paths: Path) -> None:
    # (a worker still to read the file then runs the program itself)
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


def declare(module: str, program: str, devices: int) -> None:
    """At ``module``'s import: its tests will ask for ``program``'s output."""
    ahead(module, ("hijax-jax", program, devices),
          functools.partial(_shared, program, devices))


@functools.cache
def outputs(program: str, devices: int) -> tuple[str, ...]:
    """JAX's outputs of ``program``: prefetched, another worker's, or run now."""
    return tuple(take(("hijax-jax", program, devices),
                      functools.partial(_shared, program, devices)))
