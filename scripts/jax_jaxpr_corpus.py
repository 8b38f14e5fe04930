"""JAX's own jaxprs of the conformance corpus, read and run by spec.

For every conformance case that takes no 64-bit mode and expects no exception, JAX stages
the case (``jax.make_jaxpr`` of the case as a function of no arguments); spec parses the
printed text (``spec.parse_jaxpr``, with the constants' values), type-checks it
(``check_jaxpr``) and evaluates it, and the values are compared with JAX's own results of
the case (rtol and atol 1e-5; the corpus' per-case ULP bounds are not applied, so
half-precision transcendental functions may differ by one ULP here). Cases JAX cannot
stage that way (they print, read concrete values, or raise) are counted apart.

    PYTHONPATH=. JAX_PLATFORMS=cpu .venv/bin/python scripts/jax_jaxpr_corpus.py [-v]

Prints the counts per outcome and, with ``-v``, each case that did not agree.
"""

from __future__ import annotations

import collections
import sys
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import spec
from conformance.registry import load_cases
from spec._src.core.interpreter import check_jaxpr, eval_jaxpr


def _agree(got: list[Any], want: list[Any]) -> bool:
    arrays = [np.asarray(w) for w in want]
    if len(got) != len(arrays):
        return False
    for g, w in zip(got, arrays):
        g = np.asarray(g)
        if g.shape != w.shape:  # (dtypes: Python scalars among the results are 64-bit)
            return False
        if g.dtype.kind not in "biufc":
            # ml_dtypes' floats (bfloat16, float8...) compare as float64; keys by their bits
            try:
                g, w = g.astype(np.float64), w.astype(np.float64)
            except (TypeError, ValueError):
                g, w = np.asarray(jax.random.key_data(g)), np.asarray(jax.random.key_data(w))
        if not np.allclose(g.astype(np.complex128), w.astype(np.complex128), rtol=1e-5,
                           atol=1e-5, equal_nan=True):
            return False
    return True


def outcome(case: Any) -> tuple[str, str]:
    """(outcome, detail) of one case."""
    def fn() -> Any:
        return case.fn(jax, jnp, lax)
    try:
        closed = jax.make_jaxpr(fn)()
        want = jax.tree.leaves(fn())
    except Exception as err:  # noqa: BLE001 - counted: JAX cannot stage the case
        return "not staged by JAX", type(err).__name__
    try:
        parsed = spec.parse_jaxpr(str(closed), consts=[np.asarray(c) for c in closed.consts])
    except Exception as err:  # noqa: BLE001 - the finding
        return "parse fails", f"{type(err).__name__}: {err}"
    try:
        check_jaxpr(parsed)
    except Exception as err:  # noqa: BLE001 - the finding
        return "check fails", f"{type(err).__name__}: {err}"
    try:
        got = eval_jaxpr(parsed, parsed.consts)
    except Exception as err:  # noqa: BLE001 - the finding
        return "evaluation fails", f"{type(err).__name__}: {err}"
    return ("values agree", "") if _agree(got, want) else ("values differ", "")


def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    counts: collections.Counter[str] = collections.Counter()
    found: list[tuple[str, str, str]] = []
    for case in load_cases():
        if case.x64 or case.raises:
            counts["skipped (x64 or raising)"] += 1
            continue
        kind, detail = outcome(case)
        counts[kind] += 1
        if kind not in ("values agree", "not staged by JAX"):
            found.append((kind, case.id, detail.splitlines()[0][:160] if detail else ""))
    for kind, n in sorted(counts.items()):
        print(f"{kind:<28} {n}")
    if "-v" in argv:
        for kind, cid, detail in found:
            print(f"{kind}: {cid} {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
