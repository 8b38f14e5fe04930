"""MPI ranks as devices: the backend used under ``mpiexec``."""

from spec._src.backends.mpi import (
    CollectiveFailedError,
    CollectiveMismatchError,
    CollectiveTimeoutError,
    MPIBackend,
    active,
    agree,
    alive,
    allgather_blocks,
    barrier,
    collectives_run,
    exchange,
    live_processes,
    rank,
    size,
    timeout,
    world,
)

__all__ = [
    "CollectiveFailedError",
    "CollectiveMismatchError",
    "CollectiveTimeoutError",
    "MPIBackend",
    "active",
    "agree",
    "alive",
    "allgather_blocks",
    "barrier",
    "collectives_run",
    "exchange",
    "live_processes",
    "rank",
    "size",
    "timeout",
    "world",
]
