"""Run the conformance corpus through spec's lowering and XLA.

Each case that returns arrays is staged as a zero-argument ``spec.jit`` (its
inputs become constants), lowered to StableHLO by spec, compiled and run by
the installed jaxlib on one CPU device, and XLA's results are compared with
spec's eager ones (bit for bit for integers and booleans; floats within a
relative 1e-5, NaNs equal). Prints a tally and every case whose module has
no lowering, that XLA rejects, or whose results differ. Cases that declare an
exception, need x64, or do not trace under jit are skipped.

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
        leaves = [np.asarray(x) for x in spec.tree_util.tree_leaves(case.fn(spec, snp, slax))]
        if not leaves or any(x.dtype == object for x in leaves):
            return "not arrays", ""
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
    return ("agree", "") if ok else ("differ", "")


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
        if outcome in ("no lowering", "XLA rejects", "differ", "timeout"):
            notes.append(f"{case.id}: {outcome} {detail}".rstrip())
    print(dict(tally))
    print("\n".join(notes))


if __name__ == "__main__":
    main()
