"""Running cases on implementations, judging them against the reference, and reporting."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from conformance import diff, remote, wire
from conformance import xfail as xfail_mod
from conformance.compare import Norm, Raised, compare, find_other, normalize
from conformance.impls import Impl, ImplUnavailable, load
from conformance.registry import Case, load_cases

PASS, FAIL, ERROR, XFAIL, XPASS = "pass", "FAIL", "error", "xfail", "XPASS"
BAD_STATUSES = frozenset({FAIL, ERROR, XPASS})
DEFAULT_TIMEOUT_S = 60.0

# Exceptions that, raised by the reference in a case that did not declare them, almost certainly
# mean the case itself is broken rather than that JAX rejects the program.
_CASE_BUG_EXCEPTIONS = frozenset(
    {
        "NameError",
        "AttributeError",
        "ImportError",
        "SyntaxError",
        "AssertionError",
        "RecursionError",
        "NotImplementedError",
        "CaseTimeout",
        "WorkerCrashed",
        "WorkerTimeout",
        "WorkerProtocolError",
        "CaseNotFound",
    }
)


class CaseTimeout(Exception):
    """A case ran past the per-case time limit."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    value: Norm  # a top-level Raised means the case raised
    time_s: float


@dataclasses.dataclass(frozen=True)
class Result:
    status: str
    reason: str
    time_s: float
    digest: str = ""  # fingerprint of the implementation's result (``wire.digest``)


AnyImpl = Impl | remote.RemoteImpl


def load_impl(name: str) -> AnyImpl:
    """``impls.load``, plus ``python:PATH[:NAME]`` for an implementation in another interpreter
    (started only when the run needs it; see ``conformance.remote``)."""
    if name.startswith(remote.PREFIX):
        try:
            return remote.parse(name)
        except ValueError as e:
            raise ImplUnavailable(name, str(e)) from e
    return load(name)


# -- running ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    # SIGALRM only works on the main thread of Unix processes; elsewhere run without a limit.
    usable = (
        seconds > 0
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"case exceeded the {seconds:g}s time limit")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def x64_mode(impl: Impl, enabled: bool) -> Iterator[None]:
    """Run with ``jax_enable_x64`` set to ``enabled``, restoring the previous value afterwards.

    Cases without ``x64=True`` force it off too, so an environment with x64 enabled globally
    cannot change their meaning.
    """
    config = impl.config
    previous = bool(getattr(config, "jax_enable_x64", False))
    if previous == enabled:
        yield
        return
    config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        config.update("jax_enable_x64", previous)


def run_case(case: Case, impl: Impl, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Run one case on one implementation; exceptions become a ``Raised`` outcome."""
    start = time.perf_counter()
    value: Norm
    try:
        with warnings.catch_warnings():
            # Warnings (e.g. x64 truncation) are not part of what is compared.
            warnings.simplefilter("ignore")
            with _deadline(timeout_s), x64_mode(impl, case.x64):
                # Normalise inside the x64 context so lazy arrays materialise under it.
                value = normalize(case.fn(impl.jax, impl.jnp, impl.lax))
    except Exception as e:  # noqa: BLE001 - the exception is the case's result
        value = Raised.of(e)
    return Outcome(value, time.perf_counter() - start)


# -- judging ------------------------------------------------------------------------------------


def reference_problem(case: Case, outcome: Outcome) -> str | None:
    """Why the reference's outcome cannot serve as the expected result (a broken case), or None."""
    value = outcome.value
    if case.raises is not None:
        declared = " or ".join(case.raises)
        if not isinstance(value, Raised):
            return f"case declares raises={declared} but the reference returned a result"
        if not any(value.matches(n) for n in case.raises):
            return f"case declares raises={declared} but the reference raised {value.describe()}"
        return None
    if isinstance(value, Raised):
        if any(n in _CASE_BUG_EXCEPTIONS for n in value.class_names):
            return (
                f"reference raised {value.describe()} (declare raises={value.name} "
                "if this is intended)"
            )
        return None
    other = find_other(value)
    if other is not None:
        return f"reference returned an unsupported result type {other.type_name}"
    return None


def judge(case: Case, expected: Outcome, actual: Outcome) -> tuple[str, str]:
    """(status, reason) of ``actual`` against the reference, before applying xfails."""
    exp, act = expected.value, actual.value
    if isinstance(act, Raised) and not isinstance(exp, Raised):
        return ERROR, f"raised {act.describe()}"
    try:
        why = compare(exp, act, case.ulp_for)
    except Exception as e:  # noqa: BLE001 - a harness bug must not abort the whole run
        return ERROR, f"harness error while comparing: {type(e).__name__}: {e}"
    return (PASS, "") if why is None else (FAIL, why)


def apply_xfail(status: str, reason: str, xfail_reason: str | None) -> tuple[str, str]:
    if xfail_reason is None:
        return status, reason
    if status == PASS:
        return XPASS, f"expected to fail ({xfail_reason}) but passed; remove the xfail entry"
    return XFAIL, f"{xfail_reason} [{status}: {reason}]"


# -- whole runs ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    case: Case
    reference_time_s: float
    reference_error: str | None
    results: dict[str, Result]
    reference_digest: str = ""


@dataclasses.dataclass
class Report:
    reference: str
    impls: list[str]
    rows: list[Row]
    unavailable: dict[str, str]
    unused_xfails: dict[str, list[str]]
    info: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def counts(self, impl: str) -> dict[str, int]:
        out = {s: 0 for s in (PASS, FAIL, ERROR, XFAIL, XPASS)}
        for r in self.rows:
            out[r.results[impl].status] += 1
        return out

    @property
    def reference_errors(self) -> list[Row]:
        return [r for r in self.rows if r.reference_error is not None]

    @property
    def ok(self) -> bool:
        if self.reference_errors:
            return False
        return all(
            r.results[i].status not in BAD_STATUSES for r in self.rows for i in self.impls
        )


class _Outcomes:
    """Where each implementation's outcomes come from: run in this process case by case, or
    all at once in worker processes before the table is built (out-of-process ones)."""

    def __init__(self, cases: Sequence[Case], timeout_s: float,
                 progress: TextIO | None) -> None:
        self.cases, self.timeout_s, self.progress = cases, timeout_s, progress
        self.remote: dict[str, dict[str, Outcome]] = {}
        self.info: dict[str, dict[str, Any]] = {}

    def prepare(self, impl: remote.RemoteImpl) -> None:
        """Run every case in ``impl``'s workers; raises ImplUnavailable if none starts."""
        out, n = self.progress, len(self.cases)

        def report(done: int) -> None:
            if out is not None:
                out.write(f"\r[{done}/{n}] in {impl.python}"[:80].ljust(80))
                out.flush()

        try:
            done = remote.run_remote(impl, self.cases, self.timeout_s,
                                     report if out is not None else None)
        except remote.RemoteUnavailable as e:
            raise ImplUnavailable(impl.name, e.reason, e.detail) from e
        self.remote[impl.name] = {k: Outcome(v, t) for k, (v, t) in done.outcomes.items()}
        self.info[impl.name] = done.info

    def get(self, case: Case, impl: AnyImpl) -> Outcome:
        if isinstance(impl, remote.RemoteImpl):
            return self.remote[impl.name][case.id]
        return run_case(case, impl, self.timeout_s)


def run(
    cases: Sequence[Case],
    reference: AnyImpl,
    impls: Sequence[AnyImpl | ImplUnavailable],
    xfails: dict[str, xfail_mod.XfailList],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: TextIO | None = None,
) -> Report:
    """Run ``cases`` on the reference and every implementation. Raises ImplUnavailable if an
    out-of-process reference cannot start; an implementation under test that cannot start is
    reported as unavailable."""
    source = _Outcomes(cases, timeout_s, progress)
    if isinstance(reference, remote.RemoteImpl):
        source.prepare(reference)
    loaded: list[AnyImpl | ImplUnavailable] = []
    for impl in impls:
        if isinstance(impl, remote.RemoteImpl):
            try:
                source.prepare(impl)
            except ImplUnavailable as e:
                impl = e
        loaded.append(impl)
    impls = loaded
    names = [i.name for i in impls]
    unavailable = {i.name: i.reason for i in impls if isinstance(i, ImplUnavailable)}
    rows: list[Row] = []
    for n, case in enumerate(cases):
        if progress is not None:
            progress.write(f"\r[{n + 1}/{len(cases)}] {case.id[:60]:<60}")
            progress.flush()
        expected = source.get(case, reference)
        ref_err = reference_problem(case, expected)
        results: dict[str, Result] = {}
        for impl in impls:
            xf = xfails.get(impl.name)
            xf_reason = xf.reason_for(case.id) if xf is not None else None
            digest = ""
            if isinstance(impl, ImplUnavailable):
                status, reason, t = ERROR, f"implementation unavailable: {impl.reason}", 0.0
            elif ref_err is not None:
                status, reason, t = ERROR, f"no reference result: {ref_err}", 0.0
            else:
                actual = source.get(case, impl)
                status, reason = judge(case, expected, actual)
                t = actual.time_s
                digest = wire.digest(actual.value)
            status, reason = apply_xfail(status, reason, xf_reason)
            results[impl.name] = Result(status, reason, t, digest)
        rows.append(Row(case, expected.time_s, ref_err, results, wire.digest(expected.value)))
    if progress is not None:
        progress.write("\r" + " " * 80 + "\r")
    ids = [c.id for c in cases]
    unused = {name: xf.unused(ids) for name, xf in xfails.items() if xf.unused(ids)}
    return Report(reference.name, names, rows, unavailable, unused, source.info)


# -- output -------------------------------------------------------------------------------------


def summary_line(report: Report, impl: str) -> str:
    c = report.counts(impl)
    return (
        f"{impl}: {c[PASS]} passed, {c[FAIL]} failed, {c[ERROR]} errors, "
        f"{c[XFAIL]} xfailed, {c[XPASS]} xpassed"
    )


def format_report(report: Report, only_problems: bool = False) -> str:
    lines: list[str] = []
    width = max([len(r.case.id) for r in report.rows] + [4])
    cols = [max(len(n), 6) for n in report.impls]
    header = "case".ljust(width) + "  " + "  ".join(
        n.ljust(w) for n, w in zip(report.impls, cols, strict=True)
    )
    lines += [header, "-" * len(header)]
    for row in report.rows:
        statuses = [row.results[n].status for n in report.impls]
        if only_problems and all(s == PASS for s in statuses) and row.reference_error is None:
            continue
        lines.append(
            row.case.id.ljust(width)
            + "  "
            + "  ".join(s.ljust(w) for s, w in zip(statuses, cols, strict=True)).rstrip()
        )
    lines.append("")
    for name, reason in report.unavailable.items():
        lines.append(f"implementation {name} unavailable: {reason}")
    for row in report.reference_errors:
        lines.append(
            f"reference {report.reference} {row.case.id}: BROKEN CASE: {row.reference_error}"
        )
    for name in report.impls:
        problems = [
            (row.case.id, row.results[name])
            for row in report.rows
            if row.results[name].status in BAD_STATUSES
        ]
        if name in report.unavailable:
            continue  # one line above says it all
        for case_id, res in problems:
            lines.append(f"{name} {case_id}: {res.status}: {res.reason}")
    for name, patterns in report.unused_xfails.items():
        lines.append(f"note: xfail patterns for {name} matching no selected case: {patterns}")
    if lines[-1] != "":
        lines.append("")
    lines.extend(summary_line(report, n) for n in report.impls)
    if report.reference_errors:
        lines.append(f"reference {report.reference}: {len(report.reference_errors)} broken cases")
    return "\n".join(lines)


def report_json(report: Report) -> dict[str, Any]:
    return {
        "reference": report.reference,
        "impls": report.impls,
        "unavailable": report.unavailable,
        "info": report.info,
        "ok": report.ok,
        "summary": {n: report.counts(n) for n in report.impls},
        "cases": [
            {
                "id": row.case.id,
                "tags": sorted(row.case.tags),
                "x64": row.case.x64,
                "reference_time_s": round(row.reference_time_s, 6),
                "reference_error": row.reference_error,
                "reference_digest": row.reference_digest,
                "results": {
                    n: {"status": r.status, "reason": r.reason, "time_s": round(r.time_s, 6),
                        "digest": r.digest}
                    for n, r in row.results.items()
                },
            }
            for row in report.rows
        ],
    }


# -- command line -------------------------------------------------------------------------------


def select(cases: Sequence[Case], keywords: Sequence[str], tags: Sequence[str]) -> list[Case]:
    """Cases whose id contains any keyword (if given) and that carry any tag (if given)."""
    out = list(cases)
    if keywords:
        out = [c for c in out if any(k in c.id for k in keywords)]
    if tags:
        out = [c for c in out if c.tags & set(tags)]
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Compare implementations of JAX against a reference, case by case.",
    )
    p.add_argument("--impl", action="append", default=None,
                   help="implementation to test (repeatable; default: spec); "
                        "python:PATH[:NAME] runs it in the interpreter PATH")
    p.add_argument("--reference", default="jax", help="implementation giving expected results")
    p.add_argument("-k", dest="keywords", action="append", default=[],
                   help="only cases whose id contains this substring (repeatable: any)")
    p.add_argument("--tags", action="append", default=[],
                   help="only cases with one of these tags (repeatable or comma-separated)")
    p.add_argument("--json", dest="json_path", type=Path, help="write a JSON report here")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help="per-case time limit in seconds (0: none)")
    p.add_argument("--xfail-dir", type=Path, default=xfail_mod.XFAIL_DIR)
    p.add_argument("-q", "--problems-only", action="store_true",
                   help="table rows only for cases that did not pass everywhere")
    p.add_argument("--list", action="store_true", help="list selected case ids and exit")
    return p


def _reference_unavailable(e: ImplUnavailable) -> int:
    print(f"reference {e}", file=sys.stderr)
    print(e.detail, file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["diff"]:
        return diff.main(argv[1:])
    args = _parser().parse_args(argv)
    tags = [t for item in args.tags for t in item.split(",") if t]
    cases = select(load_cases(), args.keywords, tags)
    if args.list:
        for c in cases:
            print(c.id)
        return 0
    if not cases:
        print("no cases selected", file=sys.stderr)
        return 2
    try:
        reference = load_impl(args.reference)
    except ImplUnavailable as e:
        return _reference_unavailable(e)
    impls: list[AnyImpl | ImplUnavailable] = []
    for name in args.impl or ["spec"]:
        try:
            impls.append(load_impl(name))
        except ImplUnavailable as e:
            impls.append(e)
    xfails = {}
    for impl in impls:
        slug = impl.slug if not isinstance(impl, ImplUnavailable) else Impl(
            impl.name, None, None, None).slug
        xfails[impl.name] = xfail_mod.load(slug, args.xfail_dir)
    progress = sys.stderr if sys.stderr.isatty() else None
    try:
        report = run(cases, reference, impls, xfails, args.timeout, progress)
    except ImplUnavailable as e:
        return _reference_unavailable(e)
    print(format_report(report, args.problems_only))
    if args.json_path is not None:
        args.json_path.write_text(json.dumps(report_json(report), indent=1) + "\n")
    return 0 if report.ok else 1
