"""Implementations under test in another interpreter (``--impl python:PATH``): results through
files, per-case deadlines, crash isolation, and ``python -m conformance diff``.

The second interpreter is this venv's own Python running real JAX, checked against spec as the
reference; the broken implementations of ``fake_impls`` crash and hang on chosen cases."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for the conformance package

from conformance import diff, remote, wire  # noqa: E402
from conformance.compare import Raised, compare, normalize  # noqa: E402
from conformance.registry import contraction  # noqa: E402
from conformance.runner import main  # noqa: E402

SLICE = ["numpy_api.unary_sin_float32", "numpy_api.unary_cos_float32",
         "numpy_api.unary_exp_float32"]


# JAX's message lists the two dtypes of a set, in the order of the string hashes.
SET_MESSAGE_CASE = "promotion.row_float8_e5m2_x64"


def _run(tmp: Path, name: str, impl: str, *extra: str, cases: list[str] = SLICE
         ) -> tuple[int, dict[str, Any]]:
    path = tmp / f"{name}.json"
    argv = ["--reference", "spec", "--impl", impl, "--json", str(path), *extra]
    for case_id in cases:
        argv += ["-k", case_id]
    rc = main(argv)
    return rc, json.loads(path.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The slice run on JAX in a second interpreter, and on the broken implementation."""
    tmp = tmp_path_factory.mktemp("remote")
    grace = remote.GRACE_S
    remote.GRACE_S = 0.3  # the hanging case blocks the worker's own alarm; keep the wait short
    try:
        good = _run(tmp, "good", f"python:{sys.executable}")
        bad = _run(tmp, "bad", f"python:{sys.executable}:tests.conformance.fake_impls:broken",
                   "--timeout", "2")
    finally:
        remote.GRACE_S = grace
    yield {"tmp": tmp, "good": good, "bad": bad}


def _statuses(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    (impl,) = report["impls"]
    return {c["id"]: (c["results"][impl]["status"], c["results"][impl]["reason"])
            for c in report["cases"]}


def test_jax_in_another_interpreter_matches_spec(runs: dict[str, Any]) -> None:
    rc, report = runs["good"]
    assert rc == 0, report
    assert {s for s, _ in _statuses(report).values()} == {"pass"}
    (info,) = report["info"].values()
    assert info["impl"] == "jax"
    assert info["version"] == importlib.metadata.version("jax")


def test_crash_and_hang_are_reported_errors_and_the_run_continues(runs: dict[str, Any]) -> None:
    rc, report = runs["bad"]
    assert rc == 1
    status = _statuses(report)
    assert status["numpy_api.unary_sin_float32"][0] == "error"
    assert "WorkerCrashed" in status["numpy_api.unary_sin_float32"][1]
    assert "SIGABRT" in status["numpy_api.unary_sin_float32"][1]
    assert status["numpy_api.unary_cos_float32"][0] == "error"
    assert "WorkerTimeout" in status["numpy_api.unary_cos_float32"][1]
    # The case after the hang runs in a fresh worker and still passes.
    assert status["numpy_api.unary_exp_float32"] == ("pass", "")


def test_diff_lists_the_newly_failing_cases(
    runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = runs["tmp"]
    assert main(["diff", str(tmp / "good.json"), str(tmp / "bad.json")]) == 1
    out = capsys.readouterr().out
    assert "newly failing (2):" in out
    assert "numpy_api.unary_sin_float32: pass -> error" in out
    assert "unary_exp_float32" not in out
    assert main(["diff", str(tmp / "bad.json"), str(tmp / "good.json")]) == 0
    assert "newly passing (2):" in capsys.readouterr().out


def test_two_runs_of_one_release_have_the_same_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = []
    for seed in ("1", "2"):  # hash seeds under which JAX's message orders differ
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        rc, report = _run(tmp_path, f"seed{seed}", f"python:{sys.executable}",
                          cases=[SET_MESSAGE_CASE])
        assert rc == 0, report
        reports.append(report)
    changes, lines = diff.compare_reports(*reports, f"python:{sys.executable}",
                                          f"python:{sys.executable}")
    assert not changes.value_changed, lines


def test_unstartable_interpreter_is_unavailable(tmp_path: Path) -> None:
    rc, report = _run(tmp_path, "false", "python:/bin/false")
    assert rc == 1
    assert "python:/bin/false" in report["unavailable"]
    assert "exited with status 1" in report["unavailable"]["python:/bin/false"]


def test_diff_of_reason_and_value_changes() -> None:
    def report(status: str, reason: str, digest: str) -> dict[str, Any]:
        result = {"status": status, "reason": reason, "digest": digest}
        return {"impls": ["x"], "cases": [{"id": "m.c", "reference_digest": "r",
                                           "results": {"x": result}}]}

    changes, lines = diff.compare_reports(report("FAIL", "a", "1"), report("FAIL", "b", "2"),
                                          "x", "x")
    assert changes.reason_changed == ["m.c"] and "was: a" in "\n".join(lines)
    changes, _ = diff.compare_reports(report("pass", "", "1"), report("pass", "", "2"), "x", "x")
    assert changes.value_changed == ["m.c"] and not changes.newly_failing
    with pytest.raises(ValueError, match="--a and --b"):
        diff.pick_impls({"impls": ["x", "y"]}, {"impls": ["z", "w"]}, None, None)


def test_wire_round_trip_keeps_every_leaf_bit_for_bit() -> None:
    value = normalize({
        "bf16": np.array([1.5, -0.0, np.nan], ml_dtypes.bfloat16),
        "i4": np.array([[-8, 7]], ml_dtypes.int4),
        "scalars": (1, -0.0, 2j, True, "text", None, np.dtype(np.float16)),
        "c": contraction(np.ones((2,), np.float32), np.full((2,), 3.0), 3),
        "err": Raised.of(TypeError("bad axis")),
        "empty": np.zeros((0, 3), np.int8),
    })
    back, extra = wire.loads(wire.dumps(value, {"time_s": 0.5}))
    assert extra == {"time_s": 0.5}
    assert compare(value, back) is None
    assert wire.digest(back) == wire.digest(value)
    # Digests tell -0.0 from 0.0.
    zeros = [normalize(np.array([z], np.float32)) for z in (0.0, -0.0)]
    assert wire.digest(zeros[0]) != wire.digest(zeros[1])


def test_remote_names() -> None:
    assert remote.parse("python:/v/bin/python") == remote.RemoteImpl(
        "python:/v/bin/python", "/v/bin/python", "jax")
    plugin = remote.parse("python:/v/bin/python:pkg.mod:impl")
    assert (plugin.python, plugin.inner) == ("/v/bin/python", "pkg.mod:impl")
    assert plugin.slug == "python_v_bin_python_pkg_mod_impl"
    with pytest.raises(ValueError, match="python:PATH"):
        remote.parse("python:")
