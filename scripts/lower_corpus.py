"""Run the conformance corpus through spec's lowering and XLA.

Each case that returns arrays is staged as a zero-argument ``spec.jit`` (its
inputs become constants), lowered to StableHLO by spec, compiled and run by
the installed jaxlib on one CPU device, and XLA's results are compared with
spec's eager ones (bit for bit for integers and booleans; floats within a
relative 1e-5, NaNs equal). Prints a tally and every case whose module has
no lowering, that XLA rejects, or whose results differ. Cases that declare an
exception, need x64, or do not trace under jit are skipped. A difference
whose XLA results are JAX's jit's bit for bit is counted apart ("differ as
jax.jit": XLA's fusion and constant folding, which JAX's jit shows too).

Usage: PYTHONPATH=$PWD .venv/bin/python scripts/lower_corpus.py [SECONDS]
(SECONDS: stop starting new cases after this long; default 1200.)
"""

from __future__ import annotations

import collections
import os
import signal
import sys
import time
import warnings
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.getcwd())

import jax  # noqa: E402
import numpy as np  # noqa: E402

import spec  # noqa: E402
import spec.numpy as snp  # noqa: E402
from conformance.registry import load_cases  # noqa: E402
from spec import lax as slax  # noqa: E402
from tests.lowering.xla_run import compile_and_run  # noqa: E402


class _CaseTimeout(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _CaseTimeout()


def _agree(ours: np.ndarray, theirs: np.ndarray) -> bool:
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        return False
    if ours.dtype.kind in "biu":
        return bool(np.array_equal(ours, theirs))
    a, b = ours.astype(np.complex128), theirs.astype(np.complex128)  # bfloat16 and kin too
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))


def _run(case: Any) -> tuple[str, str]:
    """(outcome, detail) of one case."""
    try:
        values = spec.tree_util.tree_leaves(case.fn(spec, snp, slax))
        if not values or any(np.asarray(x).dtype == object for x in values):
            return "not arrays", ""
        # What the jit returns: a Python or NumPy scalar result is an array
        # of the default dtype (int32, float32 with x64 off).
        leaves = [np.asarray(snp.asarray(x)) for x in values]
        text = spec.jit(lambda: case.fn(spec, snp, slax)).lower().as_text()
    except NotImplementedError as e:
        return "no lowering", str(e).splitlines()[0][:120]
    except Exception:  # noqa: BLE001 - a case that does not stage is skipped
        return "not staged", ""
    try:
        out = compile_and_run(text, [])
    except Exception as e:  # noqa: BLE001 - XLA's verdict is the result
        return "XLA rejects", (str(e).splitlines() or [type(e).__name__])[0][:160]
    ok = len(out) == len(leaves) and all(_agree(a, b) for a, b in zip(leaves, out))
    if ok:
        return "agree", ""
    return ("differ as jax.jit", "") if _as_jax_jit(case, out) else ("differ", "")


def _as_jax_jit(case: Any, out: list[np.ndarray]) -> bool:
    """Whether XLA's results of spec's module are JAX's jit's, bit for bit
    (then XLA's compilation, not the lowering, departs from evaluation:
    its fusions and constant folding)."""
    try:
        theirs = jax.tree_util.tree_leaves(
            jax.jit(lambda: case.fn(jax, jax.numpy, jax.lax))())
    except Exception:  # noqa: BLE001 - no verdict from JAX
        return False
    return len(theirs) == len(out) and all(
        np.asarray(t).dtype == o.dtype and np.asarray(t).shape == o.shape
        and np.asarray(t).tobytes() == o.tobytes() for t, o in zip(theirs, out))


def main() -> None:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 1200.0
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    tally: collections.Counter[str] = collections.Counter()
    notes = []
    start = time.time()
    for case in load_cases():
        if case.raises is not None or case.x64 or time.time() - start > budget:
            continue
        signal.alarm(30)
        try:
            outcome, detail = _run(case)
        except _CaseTimeout:
            outcome, detail = "timeout", ""
        finally:
            signal.alarm(0)
        tally[outcome] += 1
        if outcome in ("no lowering", "XLA rejects", "differ", "differ as jax.jit", "timeout"):
            notes.append(f"{case.id}: {outcome} {detail}".rstrip())
    print(dict(tally))
    print("\n".join(notes))


if __name__ == "__main__":
    main()
