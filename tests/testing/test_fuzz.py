"""``python -m spec.testing.fuzz``: a small fixed-seed slice runs clean
against JAX in every mode, and a wrong implementation is caught, shrunk to
a minimal program and printed as a reproduction that runs."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec.testing import Program, fuzz

jax = pytest.importorskip("jax")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# In this process JAX runs on one device: the modes on a mesh run in a fresh one.
ONE_DEVICE_MODES = [m for m in fuzz.MODES if m not in fuzz.SHARDED_MODES]


def test_fixed_seed_slice_finds_no_disagreement() -> None:
    lines: list[str] = []
    status = fuzz.main(["--examples", "1", "--seed", "0", "--max-steps", "5",
                        "--modes", ",".join(ONE_DEVICE_MODES)], out=lines.append)
    assert status == 0, "\n".join(lines)
    assert lines[0].split() == ["mode", "programs", "disagreements", "internal", "errors",
                                "both", "raised"]
    assert [ln.split()[0] for ln in lines[1:]] == ONE_DEVICE_MODES


def test_fixed_seed_slice_on_a_mesh_finds_no_disagreement() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spec.testing.fuzz", "--examples", "1", "--seed", "0",
         "--max-steps", "4", "--modes", ",".join(fuzz.SHARDED_MODES)],
        capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu"))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [ln.split()[:4] for ln in done.stdout.splitlines()[-len(fuzz.SHARDED_MODES):]]
    assert rows == [[m, "1", "0", "0"] for m in fuzz.SHARDED_MODES], done.stdout


def test_float64_slice_finds_no_disagreement() -> None:
    lines: list[str] = []
    status = fuzz.main(["--x64", "--examples", "2", "--seed", "0", "--max-steps", "5",
                        "--modes", "eager,jit,grad,vmap"], out=lines.append)
    assert status == 0, "\n".join(lines)
    assert [ln.split()[:4] for ln in lines[1:]] == [
        [m, "2", "0", "0"] for m in ("eager", "jit", "grad", "vmap")]
    assert not jax.config.jax_enable_x64 and not spec.config.jax_enable_x64


def test_float64_programs_catch_float32_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = Program([(5,)], [("sin", (0,)), ("round_int", (1,))], dtype=np.dtype(np.float64))
    assert "astype(jnp.float64)" in prog.source()
    with fuzz.x64(True):
        assert prog.inputs(0)[0].dtype == np.float64
        fuzz.check("eager", prog, 0, rtol=1e-12)
        monkeypatch.setattr(snp, "sin", lambda x: snp.asarray(
            np.sin(np.asarray(x, np.float32)), np.float64))  # sin to float32 precision
        with pytest.raises(fuzz.Disagreement):
            fuzz.check("eager", Program([(5,)], [("sin", (0,))], np.dtype(np.float64)), 0,
                       rtol=1e-12)


def test_a_wrong_op_is_caught_shrunk_and_reproduced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snp, "tanh", lambda x: snp.sin(x))  # a deliberately wrong tanh
    # (make_jaxpr: no XLA compilation per shrinking step)
    outcome = fuzz.fuzz_mode("make_jaxpr", examples=60, seed_value=1, max_steps=4, rtol=2e-5,
                             ops=("sin", "cos", "tanh", "abs", "sum0", "transpose", "add",
                                  "multiply"))
    assert outcome.kind == "disagreement" and outcome.failure is not None
    # Shrunk to the one op that is wrong.
    assert "jnp.tanh(v0)" in outcome.failure
    assert outcome.failure.count("    v") == 1, outcome.failure
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(outcome.failure, "<reproduction>", "exec"), {})  # noqa: S102
    spec_line, jax_line = printed.getvalue().splitlines()[:2]
    assert spec_line.startswith("spec") and jax_line.startswith("jax")


def test_check_classifies_spec_raising_where_jax_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(x: Any) -> Any:
        raise RuntimeError("broken")
    monkeypatch.setattr(snp, "cos", broken)
    prog = Program([(3,)], [("cos", (0,))])
    with pytest.raises(fuzz.InternalError, match="spec raised RuntimeError"):
        fuzz.check("eager", prog, 0)
    fuzz.check("eager", Program([(3,)], [("sin", (0,))]), 0)


def test_program_source_runs_as_the_program() -> None:
    prog = Program([(2, 3), (3,)], [("sin", (0,)), ("transpose", (2,)), ("dot", (3, 2)),
                                     ("where_pos", (1, 1)), ("max_keep", (0,)),
                                     ("ref_accumulate", (6,)), ("scan0", (7,))])
    scope: dict[str, Any] = {}
    exec(prog.source(), scope)  # noqa: S102
    xs = prog.inputs(3)
    np.testing.assert_array_equal(np.asarray(scope["program"](snp, *xs)),
                                  np.asarray(prog(snp, *xs)))


def test_bad_input_slice_raises_as_jax_does() -> None:
    lines: list[str] = []
    status = fuzz.main(["--bad-inputs", "25", "--seed", "1"], out=lines.append)
    assert status == 0, "\n".join(lines)
    assert lines[-1].startswith("bad-input calls: 25 tried")


def test_bad_input_judge_catches_an_accepted_bad_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from spec import lax as slax
    from spec.testing import fuzz_inputs

    snippet = "jnp.sum(jnp.ones(3), axis=1.0)"
    theirs = fuzz_inputs.run(snippet, jax, jax.numpy, jax.lax)
    monkeypatch.setattr(snp, "sum", lambda x, axis=None: snp.ones(()))  # ignores its axis
    ours = fuzz_inputs.run(snippet, None, snp, slax)
    why = fuzz_inputs.judge(ours, theirs)
    assert why is not None and why.startswith("JAX raises TypeError") and "spec returns" in why


def _moved(x: np.ndarray, ulps: int) -> np.ndarray:
    """Each finite element of ``x`` moved ``ulps`` steps away from zero, by its bits."""
    out = np.array(x)
    floats = out.view(out.real.dtype) if np.iscomplexobj(out) else out
    bits = floats.view(f"u{floats.dtype.itemsize}")
    bits[np.isfinite(floats.astype(np.float64))] += np.asarray(ulps, bits.dtype)
    return out


def test_bad_input_values_agree_to_one_ulp_and_nans_where_jax_has_them() -> None:
    import ml_dtypes

    from spec.testing import fuzz_inputs

    for dtype in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64):
        x = np.asarray([3.0, -3.0, 0.0, np.nan], dtype)
        assert fuzz_inputs._same_values(x, _moved(x, 1)) is None
        assert fuzz_inputs._same_values(x, _moved(x, 2)) is not None
        assert fuzz_inputs._same_values(x, np.where(np.isnan(x), 1.0, x).astype(dtype)) \
            is not None
    assert fuzz_inputs._same_values(np.float32(0.0), np.float32(-0.0)) is None


def test_bad_input_disagreements_count_only_when_a_fresh_interpreter_repeats_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from spec.testing import fuzz_inputs

    monkeypatch.setattr(fuzz_inputs, "judge", lambda ours, theirs: "differs")
    monkeypatch.setattr(fuzz_inputs, "judge_in_fresh_process", lambda snippet: None)
    found = fuzz_inputs.campaign(3, 0)
    assert (found.tried, found.history_dependent, found.failures) == (3, 3, [])
    monkeypatch.setattr(fuzz_inputs, "judge_in_fresh_process", lambda snippet: "again")
    found = fuzz_inputs.campaign(3, 0)
    assert found.history_dependent == 0 and [w for _, w in found.failures] == ["again"] * 3


# Convolutions, linear algebra, Fourier transforms and other dtypes inside a program: three
# chains that hold every such op once, against JAX: the staged text, jit's values, JAX's
# jaxpr run by spec, and (the linear algebra, whose rules are the most involved) the JVP
# and VJP of linearize.
FAMILY_CHAINS = {
    "linalg": ["conv2d_same", "solve_tril", "qr_spd", "cholesky_spd", "eigvalsh_spd"],
    "fft": ["fft2_real", "fft_re_im", "rfft_irfft0", "conv1d_strided", "f16_mul"],
    "dtypes": ["bool_mask", "bf16_clip", "int_divmod"],
}
FAMILY_CASES = [(c, m) for c in FAMILY_CHAINS for m in ("make_jaxpr", "jit", "parse")] + [
    ("linalg", "linearize")]


@pytest.mark.parametrize("chain,mode", FAMILY_CASES)
def test_op_families_agree_with_jax(chain: str, mode: str) -> None:
    ops = FAMILY_CHAINS[chain]
    prog = Program([(3, 4)], [(op, (k,)) for k, op in enumerate(ops)])
    assert fuzz.check(mode, prog, 5) is False  # (True: both rejected it)
