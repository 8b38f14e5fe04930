"""Expected-failure lists: ``conformance/xfail/<impl>.toml``.

Format::

    [[group]]
    reason = "why these cases are known to fail"
    cases = ["numpy_api.unary_*", "jaxpr_text.closure_const"]

Case ids are matched with ``fnmatch`` (case-sensitive).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import tomllib
from collections.abc import Iterable
from pathlib import Path

XFAIL_DIR = Path(__file__).resolve().parent / "xfail"


@dataclasses.dataclass(frozen=True)
class XfailList:
    source: str
    entries: tuple[tuple[str, str], ...]  # (glob pattern, reason)

    def reason_for(self, case_id: str) -> str | None:
        for pattern, reason in self.entries:
            if fnmatch.fnmatchcase(case_id, pattern):
                return reason
        return None

    def unused(self, case_ids: Iterable[str]) -> list[str]:
        """Patterns matching none of ``case_ids`` (stale or misspelt entries)."""
        ids = list(case_ids)
        return [p for p, _ in self.entries if not any(fnmatch.fnmatchcase(i, p) for i in ids)]


def parse(text: str, source: str = "<string>") -> XfailList:
    data = tomllib.loads(text)
    unknown = set(data) - {"group"}
    if unknown:
        raise ValueError(f"{source}: unknown top-level keys {sorted(unknown)}; expected [[group]]")
    groups = data.get("group", [])
    if not isinstance(groups, list):
        raise ValueError(f"{source}: 'group' must be an array of tables ([[group]])")
    entries: list[tuple[str, str]] = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict):
            raise ValueError(f"{source}: group #{i + 1} is not a table")
        reason, cases = g.get("reason"), g.get("cases")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{source}: group #{i + 1} needs a non-empty string 'reason'")
        if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
            raise ValueError(f"{source}: group #{i + 1} needs 'cases', a list of strings")
        extra = set(g) - {"reason", "cases"}
        if extra:
            raise ValueError(f"{source}: group #{i + 1} has unknown keys {sorted(extra)}")
        entries.extend((c, reason) for c in cases)
    return XfailList(source, tuple(entries))


def load(slug: str, directory: Path = XFAIL_DIR) -> XfailList:
    """The xfail list for implementation ``slug``; empty if it has no file."""
    path = directory / f"{slug}.toml"
    if not path.exists():
        return XfailList(str(path), ())
    return parse(path.read_text(encoding="utf-8"), str(path))
