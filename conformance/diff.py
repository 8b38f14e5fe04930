"""``python -m conformance diff a.json b.json``: what changed between two ``--json`` reports.

Typical use: the same corpus against the same reference, once with each of two releases of an
implementation (``--impl python:venv-a/bin/python`` and ``--impl python:venv-b/bin/python``).
Lists the cases that newly fail, newly pass, changed status or reason, and those whose result
changed although they still pass (their result digests differ: a value moved within a ULP
tolerance, another message of the same exception class). Exit status 1 iff some case newly fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GOOD = frozenset({"pass", "xfail"})

Report = dict[str, Any]


@dataclasses.dataclass
class Changes:
    newly_failing: list[str] = dataclasses.field(default_factory=list)
    newly_passing: list[str] = dataclasses.field(default_factory=list)
    status_changed: list[str] = dataclasses.field(default_factory=list)
    reason_changed: list[str] = dataclasses.field(default_factory=list)
    value_changed: list[str] = dataclasses.field(default_factory=list)
    reference_changed: list[str] = dataclasses.field(default_factory=list)
    only_a: list[str] = dataclasses.field(default_factory=list)
    only_b: list[str] = dataclasses.field(default_factory=list)


def pick_impls(a: Report, b: Report, name_a: str | None, name_b: str | None) -> tuple[str, str]:
    """The implementation of each report to compare: given, shared by name, or the only one."""
    impls_a, impls_b = list(a["impls"]), list(b["impls"])
    if name_a is None and name_b is None:
        common = [n for n in impls_a if n in impls_b]
        if len(common) == 1:
            return common[0], common[0]
        if len(impls_a) == 1 and len(impls_b) == 1:
            return impls_a[0], impls_b[0]
        raise ValueError(
            f"cannot tell which implementations to compare ({impls_a} vs {impls_b}); "
            "name them with --a and --b")
    name_a = name_a or name_b
    name_b = name_b or name_a
    for name, impls, which in ((name_a, impls_a, "first"), (name_b, impls_b, "second")):
        if name not in impls:
            raise ValueError(f"the {which} report has no implementation {name!r}: {impls}")
    assert name_a is not None and name_b is not None
    return name_a, name_b


def _line(case_id: str, old: dict[str, Any], new: dict[str, Any]) -> str:
    text = f"  {case_id}: {old['status']} -> {new['status']}"
    if new["status"] not in GOOD and new["reason"]:
        text += f": {new['reason']}"
    return text


def compare_reports(a: Report, b: Report, impl_a: str, impl_b: str) -> tuple[Changes, list[str]]:
    """The changes between the reports, and one printable line per changed case."""
    rows_a = {c["id"]: c for c in a["cases"]}
    rows_b = {c["id"]: c for c in b["cases"]}
    changes = Changes()
    lines: dict[str, list[str]] = {f.name: [] for f in dataclasses.fields(Changes)}

    def add(kind: str, case_id: str, text: str) -> None:
        getattr(changes, kind).append(case_id)
        lines[kind].append(text)

    for case_id, row_a in rows_a.items():
        row_b = rows_b.get(case_id)
        if row_b is None:
            add("only_a", case_id, f"  {case_id}")
            continue
        old, new = row_a["results"][impl_a], row_b["results"][impl_b]
        if row_a.get("reference_digest") != row_b.get("reference_digest"):
            add("reference_changed", case_id, f"  {case_id}")
        good_a, good_b = old["status"] in GOOD, new["status"] in GOOD
        if good_a and not good_b:
            add("newly_failing", case_id, _line(case_id, old, new))
        elif good_b and not good_a:
            add("newly_passing", case_id, _line(case_id, old, new))
        elif old["status"] != new["status"]:
            add("status_changed", case_id, _line(case_id, old, new))
        elif old["reason"] != new["reason"]:
            add("reason_changed", case_id,
                f"  {case_id}: {new['status']}: was: {old['reason']}\n"
                f"  {' ' * len(case_id)}  now: {new['reason']}")
        elif old.get("digest") != new.get("digest"):
            add("value_changed", case_id, f"  {case_id}: {new['status']}, result differs")
    for case_id in rows_b:
        if case_id not in rows_a:
            add("only_b", case_id, f"  {case_id}")
    titles = {
        "newly_failing": "newly failing", "newly_passing": "newly passing",
        "status_changed": "status changed", "reason_changed": "reason changed",
        "value_changed": "result changed, status unchanged",
        "reference_changed": "reference result changed (not like for like)",
        "only_a": "only in the first report", "only_b": "only in the second report",
    }
    out: list[str] = []
    for kind, title in titles.items():
        if lines[kind]:
            out.append(f"{title} ({len(lines[kind])}):")
            out.extend(lines[kind])
    return changes, out


def _describe(report: Report, impl: str) -> str:
    info = report.get("info", {}).get(impl)
    extra = f" ({info['impl']} {info['version']}, Python {info['python']})" if info else ""
    counts = report["summary"][impl]
    return (f"{impl}{extra} vs reference {report['reference']}: "
            f"{counts['pass']} passed, {counts['FAIL']} failed, {counts['error']} errors")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m conformance diff",
        description="Show what changed between two --json reports of python -m conformance.")
    p.add_argument("a", type=Path, help="the earlier report")
    p.add_argument("b", type=Path, help="the later report")
    p.add_argument("--a", dest="impl_a", help="implementation of the first report to compare")
    p.add_argument("--b", dest="impl_b", help="implementation of the second report to compare")
    args = p.parse_args(argv)
    try:
        a, b = (json.loads(path.read_text()) for path in (args.a, args.b))
        impl_a, impl_b = pick_impls(a, b, args.impl_a, args.impl_b)
    except (OSError, ValueError, KeyError) as e:
        print(f"conformance diff: {e}", file=sys.stderr)
        return 2
    changes, lines = compare_reports(a, b, impl_a, impl_b)
    print(f"a: {_describe(a, impl_a)}")
    print(f"b: {_describe(b, impl_b)}")
    print("\n".join(lines) if lines else "no changes")
    return 1 if changes.newly_failing else 0


if __name__ == "__main__":
    sys.exit(main())
