"""The examples run plainly on virtual devices and under mpiexec on MPI
ranks, and print the same thing both ways (each checks its own results
against JAX-free mathematics or jax.grad of a reference, and asserts)."""

from __future__ import annotations

import pytest

from tests.support.mpiexec import ROOT, run_script

EXAMPLES = ["data_parallel_mlp", "capstone", "shard_map_matmul", "pipeline"]
WHERE = {"virtual": "{n} virtual devices in one process", "mpi": "{n} MPI ranks (one device each)"}


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_same_on_virtual_devices_and_ranks(name: str) -> None:
    n = 2
    script = ROOT / "examples" / f"{name}.py"
    plain = run_script(script, None, env={"JAX_NUM_CPU_DEVICES": str(n)})
    assert plain.returncode == 0, plain.stderr
    ranks = run_script(script, n)
    assert ranks.returncode == 0, ranks.stderr
    assert WHERE["virtual"].format(n=n) in plain.stdout
    assert plain.stdout.replace(WHERE["virtual"].format(n=n), WHERE["mpi"].format(n=n)) \
        == ranks.stdout  # printed once (rank 0), the same numbers and ledger


def test_examples_default_to_four_devices() -> None:
    out = run_script(ROOT / "examples" / "capstone.py", None)
    assert out.returncode == 0, out.stderr
    assert "4 virtual devices" in out.stdout and "1 all-reduce(s) per step" in out.stdout
