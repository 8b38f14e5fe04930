"""Shared set-up of the examples: under ``mpiexec -n N`` spec's devices are
the N ranks; run plainly, four virtual devices stand in for them."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import spec as jax
from spec._src.backends import multihost_utils


def devices(default: int = 4) -> int:
    """How many devices the example runs on: the ranks, or (one process)
    JAX_NUM_CPU_DEVICES virtual ones, 4 by default."""
    if jax.process_count() == 1:
        jax.config.update("jax_num_cpu_devices",
                          int(os.environ.get("JAX_NUM_CPU_DEVICES", default)))
    return jax.device_count()


def say(*args: Any) -> None:
    """Print once (on process 0), not once per rank."""
    if jax.process_index() == 0:
        print(*args, flush=True)


def where() -> str:
    n = jax.device_count()
    if jax.process_count() > 1:
        return f"{n} MPI ranks (one device each)"
    return f"{n} virtual devices in one process"


def global_value(x: Any) -> np.ndarray:
    """The whole value of a global array, in every process (fetched from the
    others when they hold parts of it)."""
    if x.is_fully_addressable:
        return np.asarray(x)
    return np.asarray(multihost_utils.process_allgather(x))
