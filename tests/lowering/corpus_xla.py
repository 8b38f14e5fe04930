"""The conformance corpus run the other way: each case spec can stage whole
(a program of arrays, no effects, one device) is lowered by spec, compiled
by jaxlib and run on XLA's CPU device; its results must be spec's own
evaluation of the case, floats within the case's ULP bound (at least
``COMPILER_ULPS``: XLA contracts and simplifies arithmetic, SPEC.md 8.7),
everything else bit for bit.

The arrays a case closes over become the module's arguments rather than
constants, so that XLA runs the program instead of folding it at compile
time. ``python -m tests.lowering.corpus_xla`` runs the whole corpus (about
a minute) and prints each case whose run differs."""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import spec
import spec.lax as slax
import spec.numpy as snp
from spec._src.core.interpreter import Jaxpr
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import compile_and_run

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the conformance package

from conformance.compare import compare_values  # noqa: E402
from conformance.registry import Case, load_cases  # noqa: E402

# XLA may fuse a multiply and an add, or drop an addition of zero (SPEC.md 8.7).
COMPILER_ULPS = 2

# What a case comes to: staged and run ("equal"), or why it was not.
NOT_STAGED, NOT_ARRAYS, NOT_ONE_DEVICE = "not staged", "not arrays", "not one device"


def eligible(case: Case) -> bool:
    """Cases that return a result in the default (32-bit) mode."""
    return case.raises is None and not case.x64


def _staged(case: Case) -> tuple[Jaxpr, list[np.ndarray]] | None:
    """The case as a jaxpr whose closed-over arrays are arguments, with
    those arrays; None where spec cannot stage it (Python control flow on
    values, printing, effects, non-array results)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            closed = spec.make_jaxpr(lambda: case.fn(spec, snp, slax))()
    except Exception:  # noqa: BLE001 - any case that does not stage is out of scope
        return None
    if closed.effects or closed.invars:
        return None
    opened = Jaxpr([], list(closed.constvars), list(closed.outvars), list(closed.eqns))
    return opened, [np.asarray(c) for c in closed.consts]


def _evaluated(case: Case) -> list[np.ndarray] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = case.fn(spec, snp, slax)
    leaves = spec.tree_util.tree_leaves(out)
    if not all(hasattr(leaf, "dtype") or isinstance(leaf, (bool, int, float, complex))
               for leaf in leaves):
        return None
    return [np.asarray(leaf) for leaf in leaves]


def run(case: Case) -> str:
    """``"equal"``, a reason the case is out of scope, or how XLA's result
    differs from spec's."""
    staged = _staged(case)
    if staged is None:
        return NOT_STAGED
    jaxpr, args = staged
    ours = _evaluated(case)
    if ours is None:
        return NOT_ARRAYS
    try:
        text = lower_jaxpr(jaxpr, "f")
    except Exception as err:  # noqa: BLE001 - reported as the case's difference
        return f"lowering raised {type(err).__name__}: {err}"
    if "sdy." in text or "mhlo.sharding" in text:
        return NOT_ONE_DEVICE
    theirs = compile_and_run(text, args)
    return _difference(case, ours, theirs, [v.aval for v in jaxpr.outvars]) or "equal"


def _difference(case: Case, ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray],
                avals: Sequence[Any]) -> str | None:
    if len(ours) != len(theirs):
        return f"{len(ours)} results, XLA gave {len(theirs)}"
    for k, (a, b, aval) in enumerate(zip(ours, theirs, avals)):
        a = a.astype(aval.dtype) if a.ndim == 0 else a  # (a Python scalar result)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"result {k}: {a.dtype}{list(a.shape)}, XLA gave {b.dtype}{list(b.shape)}"
        why = compare_values(a, b, max(case.ulp_for(a.dtype.name), COMPILER_ULPS))
        if why is not None:
            return f"result {k}: {why}"
    return None


def main() -> None:
    outcomes: Counter[str] = Counter()
    for case in load_cases():
        if not eligible(case):
            continue
        result = run(case)
        kind = result if result in ("equal", NOT_STAGED, NOT_ARRAYS, NOT_ONE_DEVICE) \
            else "differs"
        outcomes[kind] += 1
        if kind == "differs":
            print(f"{case.id}: {result}")
    print(dict(outcomes))


if __name__ == "__main__":
    main()
