"""Conformance of `spec` against real JAX: one test per case in conformance/cases.

JAX (on CPU) runs each case live to produce the expected result; `spec` must reproduce it. `spec`
is imported lazily, so a broken `spec` shows up as failing tests, not as a collection error.
Expected failures come from conformance/xfail/spec.toml (strict: a passing xfail fails).
Set CONFORMANCE_IMPL to test another implementation (see conformance/impls.py).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # before anything imports jax
pytest.importorskip("jax")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for the conformance package

from conformance import xfail  # noqa: E402
from conformance.impls import Impl, ImplUnavailable, load  # noqa: E402
from conformance.registry import Case, load_cases  # noqa: E402
from conformance.runner import PASS, judge, reference_problem, run_case  # noqa: E402

IMPL_NAME = os.environ.get("CONFORMANCE_IMPL", "spec")
REFERENCE = load("jax")
CASES = load_cases()
XFAILS = xfail.load(Impl(IMPL_NAME, None, None, None).slug)


@functools.cache
def _impl() -> Impl | ImplUnavailable:
    try:
        return load(IMPL_NAME)
    except ImplUnavailable as e:
        return e


def _param(c: Case) -> object:
    reason = XFAILS.reason_for(c.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason is not None else []
    return pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(case: Case) -> None:
    expected = run_case(case, REFERENCE)
    problem = reference_problem(case, expected)
    if problem is not None:
        pytest.fail(f"broken case (reference jax): {problem}", pytrace=False)
    impl = _impl()
    if isinstance(impl, ImplUnavailable):
        pytest.fail(f"{impl}\n{impl.detail}", pytrace=False)
    actual = run_case(case, impl)
    status, reason = judge(case, expected, actual)
    if status != PASS:
        pytest.fail(f"{status}: {reason}", pytrace=False)
