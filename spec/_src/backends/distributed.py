"""``jax.distributed``: joining the processes of a multi-process run.

spec's processes are MPI ranks (``mpiexec -n N python -m spec prog.py``); they are connected
before the program runs, so ``initialize`` checks its arguments against that world and records
that it was called. Outside MPI, a run is one process: ``initialize`` needs a
``coordinator_address`` (ValueError otherwise, as JAX outside a detected cluster) and at most
one process; more is refused with RuntimeError saying how spec runs several.
"""

from __future__ import annotations

from collections.abc import Sequence

from spec._src.backends import mpi

_state = {"initialized": False}


def _check_ids(num_processes: int | None, process_id: int | None) -> None:
    if num_processes is None or process_id is None:
        return
    if not 0 <= process_id < num_processes:
        raise ValueError("process_id and num_processes must be nonnegative, with process_id "
                         f"< num_processes. Got process_id={process_id}, "
                         f"num_processes={num_processes}.")


def _check_against_mpi(num_processes: int | None, process_id: int | None) -> None:
    if num_processes is not None and num_processes != mpi.size():
        raise ValueError(f"num_processes={num_processes}, but this run has {mpi.size()} MPI "
                         "ranks")
    if process_id is not None and process_id != mpi.rank():
        raise ValueError(f"process_id={process_id}, but this process is MPI rank {mpi.rank()}")


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None, mtls_cert_file: str | None = None,
               mtls_key_file: str | None = None, mtls_ca_file: str | None = None,
               mtls_peer_uri_prefix: str | None = None,
               verify_secure_credentials: bool | None = None) -> None:
    """Join this process to the run (see the module docstring)."""
    if _state["initialized"]:
        raise RuntimeError("distributed.initialize should only be called once.")
    _check_ids(num_processes, process_id)
    if mpi.active():
        _check_against_mpi(num_processes, process_id)
    else:
        if coordinator_address is None:
            raise ValueError("coordinator_address should be defined.")
        if num_processes is not None and num_processes > 1:
            raise RuntimeError(
                f"num_processes={num_processes}: spec runs several processes as MPI ranks "
                "only (mpiexec -n N python -m spec prog.py), and this process is not one")
    _state["initialized"] = True


def is_initialized() -> bool:
    """Whether ``initialize`` has been called (and not shut down since)."""
    return _state["initialized"]


def shutdown() -> None:
    """Forget the ``initialize`` call (a no-op when there was none)."""
    _state["initialized"] = False


__all__ = ["initialize", "is_initialized", "shutdown"]
