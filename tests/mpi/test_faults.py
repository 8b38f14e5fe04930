"""Fault tolerance on MPI ranks (docs/new_docs/501/fault-tolerance.rst):
live_devices around each training step; ranks die (SIGKILL, os._exit, or
inside a 64 MB all-reduce) and the survivors agree on who failed, raise
ProcessFailureError for that step on every survivor, rebuild the mesh over
the live devices and finish training with the right result.

Runs under ``mpiexec -disable-auto-cleanup`` with each rank behind
spec.mesh_mpi.guard (hydra ends the whole job when a rank dies by a
signal; the guard reports that as an ordinary failing exit)."""

from __future__ import annotations

import numpy as np

from tests.support.mpiexec import launch


def _expected_alpha() -> float:
    """The training, in one process: y = 3x, plain gradient descent on the
    same batches (the global batch does not depend on how many devices
    split it)."""
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((8, 12)).astype(np.float32)
    ys = 3.0 * xs
    alpha = np.float32(0.0)
    for x, y in zip(xs, ys):
        g = np.mean(2 * (alpha * x - y) * x)
        alpha = np.float32(alpha - np.float32(0.1) * g)
    return float(alpha)


def _ok_steps(log: list[list[object]]) -> list[tuple[object, object]]:
    return [(entry[1], tuple(entry[2])) for entry in log if entry[0] == "ok"]  # type: ignore[arg-type]


def test_ranks_killed_mid_training_survivors_finish() -> None:
    # rank 2 is SIGKILLed inside step 2's block, rank 1 calls os._exit(1) in step 5
    ranks, _ = launch(3, "train", "2:2:sigkill,1:5:exit", fault_tolerant=True, survivors=[0],
                      timeout=120, mpi_timeout=20)
    (res,) = ranks
    failures = [e for e in res["log"] if e[0] == "failed"]
    assert [(e[1], e[2]) for e in failures] == [(2, [2]), (5, [1])]
    for e in failures:  # the step's collective saw its peer die
        assert "CollectiveFailedError: rank 0: collective #" in e[3] and "failed" in e[3]
    assert _ok_steps(res["log"]) == [(1, (0, 1, 2)), (2, (0, 1, 2)), (3, (0, 1)), (4, (0, 1)),
                                     (5, (0, 1)), (6, (0,)), (7, (0,)), (8, (0,))]
    np.testing.assert_allclose(res["alpha"], _expected_alpha(), rtol=1e-5)


def test_rank_killed_inside_large_collective() -> None:
    ranks, _ = launch(3, "train", "2:1:collective", fault_tolerant=True, survivors=[0, 1],
                      timeout=120, mpi_timeout=20)
    for r, res in enumerate(ranks):
        failures = [e for e in res["log"] if e[0] == "failed"]
        assert [(e[1], e[2]) for e in failures] == [(1, [2])]  # every survivor agrees
        assert f"rank {r}: collective #" in failures[0][3]
        assert "all_reduce(i;op=sum) of float32[16777216]" in failures[0][3]  # the 64 MB one
        assert "process(es) [2] failed" in failures[0][3]
        assert _ok_steps(res["log"])[1:] == [(s, (0, 1)) for s in range(2, 9)]
        np.testing.assert_allclose(res["alpha"], _expected_alpha(), rtol=1e-5)
    assert ranks[0]["alpha"] == ranks[1]["alpha"]


def test_without_failures_live_devices_is_a_plain_block() -> None:
    ranks, _ = launch(2, "train", "", fault_tolerant=True, timeout=120)
    for res in ranks:
        assert all(e[0] == "ok" for e in res["log"]) and len(res["log"]) == 8
        np.testing.assert_allclose(res["alpha"], _expected_alpha(), rtol=1e-5)


def test_death_of_process_zero_ends_the_job() -> None:
    _, done = launch(3, "train", "0:2:sigkill", fault_tolerant=True, survivors=[],
                     timeout=120, mpi_timeout=20)
    for r in (1, 2):
        assert (f"rank {r}: process 0, the coordinator of live_devices, failed: the job ends"
                in done.stderr)
