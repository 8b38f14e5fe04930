"""The benchmarks still run: quick sizes, a few iterations. Never asserts on timings."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import spec

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # ``benchmarks`` is a top-level folder, not an installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import run as bench  # noqa: E402


def test_quick_run_prints_and_writes_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    assert {r["group"] for r in rows} == {"dispatch", "jit overhead", "throughput", "autodiff",
                                         "vmap", "control flow", "tracing", "sharded"}
    assert len(rows) == sum(len(b.modes) for b in bench.benchmarks(bench.QUICK))
    for r in rows:
        assert r["name"] in printed
        assert set(r["seconds"]) >= {"numpy", "jax eager", "jax jit", f"spec {r['mode']}"}
    # add/mul/sin are in the core: their rows must hold a measurement, not n/a or an error.
    add = next(r for r in rows if r["name"].startswith("add(x,y)"))
    assert add["status"]["spec eager"] == "ok", add["detail"]
    assert add["seconds"]["spec eager"] is not None
    program = [r for r in rows if r["group"] == "jit overhead"]
    assert {r["mode"] for r in program} == {"eager", "jit"}
    assert all(r["status"]["spec jit"] == "ok" for r in program), program
    (sharded,) = [r for r in rows if r["group"] == "sharded"]
    assert sharded["status"]["spec jit"] == sharded["status"]["spec interp"] == "ok", sharded


def test_missing_function_is_na_not_a_crash() -> None:
    empty = bench.Lib(bench.Api("empty", types.SimpleNamespace()), np.asarray, lambda f: f)
    b = next(b for b in bench.benchmarks(bench.QUICK) if b.name.startswith("sin("))
    (row,) = bench.run_bench(b, bench.QUICK, empty, "jax skipped in this test")
    assert row.spec.status == "n/a" and "empty.sin" in row.spec.detail
    assert row.cells["jax eager"].status == "n/a"
    assert row.cells["numpy"].status == "ok"
    assert row.ratio(row.cells["numpy"]) is None and row.target == "n/a"
    assert "n/a" in "\n".join(bench.table_lines([row]))


def test_failure_in_a_cell_is_reported_as_error() -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("boom")
    lib = bench.Lib(bench.Api("broken", types.SimpleNamespace(sin=broken)), np.asarray,
                    lambda f: f)
    b = next(b for b in bench.benchmarks(bench.QUICK) if b.name.startswith("sin("))
    (row,) = bench.run_bench(b, bench.QUICK, lib, "jax skipped in this test")
    assert row.spec.status == "error" and "RuntimeError: boom" in row.spec.detail


def test_wrong_arithmetic_is_caught() -> None:
    """A library that computes in another dtype is not compared as if it were the same work."""
    lib = bench.Lib(bench.Api("f64", types.SimpleNamespace(sin=lambda x: np.sin(x.astype(
        np.float64)).view(_Ready))), np.asarray, lambda f: f)
    b = next(b for b in bench.benchmarks(bench.QUICK) if b.name.startswith("sin("))
    (row,) = bench.run_bench(b, bench.QUICK, lib, "jax skipped in this test")
    assert row.spec.status == "error" and "differs from NumPy" in row.spec.detail


class _Ready(np.ndarray):
    def block_until_ready(self) -> _Ready:
        return self


def test_sharding_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import sharding
    out = tmp_path / "sharding.json"
    assert sharding.main(["--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {r["name"] for r in rows} == {"data-parallel MLP step",
                                        "capstone step ({R:X} weights)"}
    # Each step moves exactly one all-reduce of its weight gradients.
    assert all(r["ledger bytes"] == r["minimum bytes"] for r in rows)
    assert "sharded/unsharded" in capsys.readouterr().out


def test_collectives_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import collectives
    out = tmp_path / "collectives.json"
    assert collectives.main(["--quick", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {r["collective"] for r in rows} == {"psum", "all_gather", "psum_scatter",
                                              "all_to_all", "ppermute"}
    assert "spec/numpy" in capsys.readouterr().out


def test_mpi_benchmark_quick_on_two_ranks(tmp_path: Path) -> None:
    from tests.support.mpiexec import run_script
    out = tmp_path / "mpi.json"
    done = run_script(ROOT / "benchmarks" / "mpi.py", 2, timeout=300,
                      env={"PYTHONPATH": str(ROOT)}, args=["--quick", "--json", str(out)])
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())
    assert [r["what"] for r in rows] == ["all_reduce 1 MB per rank", "all_gather 1 MB per rank",
                                         "ppermute 1 MB per rank",
                                         "capstone step (reduced weights)"]
    assert all(r["spec"] > 0 and r["baseline"] > 0 for r in rows)


def test_prng_benchmark_quick() -> None:
    from benchmarks import prng
    rows = prng.main(["--quick"])
    assert rows and all(set(r) >= {"spec", "jax", "numpy"} for r in rows), rows


def test_transcendental_benchmark_quick() -> None:
    from benchmarks import transcendental
    rows = transcendental.main(["--quick"])
    assert {r["kernel"] for r in rows} >= {"exp", "sin", "power"}
    assert all(r["spec"] > 0 and r["numpy"] > 0 for r in rows)
    assert spec.config.spec_transcendentals == "numpy"  # restored for the other tests


def test_precision_benchmark_quick() -> None:
    from benchmarks import precision
    rows = precision.main(["--quick"])
    assert [r["preset"] for r in rows] == precision.PRESETS
    assert all(r["spec"] > 0 and r["numpy"] > 0 for r in rows)
