"""Conformance of `spec` against real JAX: one test per case in conformance/cases.

JAX (on CPU) runs each case live to produce the expected result; `spec` must reproduce it. `spec`
is imported lazily, so a broken `spec` shows up as failing tests, not as a collection error.
Expected failures come from conformance/xfail/spec.toml (strict: a passing xfail fails).
Set CONFORMANCE_IMPL to test another implementation (see conformance/impls.py), also one in
another interpreter (``python:PATH``: the selected cases run there together, at the first
test).
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
from conformance import remote  # noqa: E402
from conformance.impls import Impl, ImplUnavailable, load  # noqa: E402
from conformance.registry import Case, load_cases  # noqa: E402
from conformance.runner import (  # noqa: E402
    PASS,
    AnyImpl,
    Outcome,
    judge,
    load_impl,
    reference_problem,
    run_case,
)

IMPL_NAME = os.environ.get("CONFORMANCE_IMPL", "spec")
REFERENCE = load("jax")
CASES = load_cases()
XFAILS = xfail.load(Impl(IMPL_NAME, None, None, None).slug)


@functools.cache
def _impl() -> AnyImpl | ImplUnavailable:
    try:
        return load_impl(IMPL_NAME)
    except ImplUnavailable as e:
        return e


@pytest.fixture(scope="session")
def remote_outcomes(request: pytest.FixtureRequest) -> dict[str, Outcome] | ImplUnavailable:
    """For an implementation in another interpreter: the outcomes of every case this session
    selected, from one run of its workers."""
    impl = _impl()
    if not isinstance(impl, remote.RemoteImpl):
        return {}
    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "module", None) is sys.modules[__name__]
                and hasattr(item, "callspec") and "case" in item.callspec.params]
    try:
        done = remote.run_remote(impl, selected, 60.0)
    except remote.RemoteUnavailable as e:
        return ImplUnavailable(impl.name, e.reason, e.detail)
    return {k: Outcome(v, t) for k, (v, t) in done.outcomes.items()}


def _param(c: Case) -> object:
    reason = XFAILS.reason_for(c.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason is not None else []
    return pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance(
    case: Case, remote_outcomes: dict[str, Outcome] | ImplUnavailable
) -> None:
    expected = run_case(case, REFERENCE)
    problem = reference_problem(case, expected)
    if problem is not None:
        pytest.fail(f"broken case (reference jax): {problem}", pytrace=False)
    impl = _impl()
    if isinstance(impl, ImplUnavailable):
        pytest.fail(f"{impl}\n{impl.detail}", pytrace=False)
    if isinstance(impl, remote.RemoteImpl):
        if isinstance(remote_outcomes, ImplUnavailable):
            pytest.fail(f"{remote_outcomes}\n{remote_outcomes.detail}", pytrace=False)
        actual = remote_outcomes[case.id]
    else:
        actual = run_case(case, impl)
    status, reason = judge(case, expected, actual)
    if status != PASS:
        pytest.fail(f"{status}: {reason}", pytrace=False)
