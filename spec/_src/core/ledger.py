"""The collective ledger (SPEC.md section 14.4): every collective a device
backend actually executes is recorded in the logs that are open.

``with spec.collectives_log() as log:`` opens one; ``log.count("all_reduce")``
and ``log.nbytes`` read it. Free layout changes (slicing a replicated array,
casting to reduced, zero-filling for unreduced) record nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute")


@dataclasses.dataclass(frozen=True)
class Collective:
    """One executed collective: its kind, the mesh axes it runs over, and the
    bytes of each participating device's input buffer."""

    kind: str
    axes: tuple[str, ...]
    nbytes: int

    def __repr__(self) -> str:
        return f"{self.kind}({', '.join(map(str, self.axes))}; {self.nbytes} B)"


class CollectivesLog:
    def __init__(self) -> None:
        self.entries: list[Collective] = []

    def count(self, kind: str | None = None) -> int:
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown collective kind {kind!r}; expected one of {KINDS}")
        return sum(1 for e in self.entries if kind is None or e.kind == kind)

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Collective]:
        return iter(self.entries)

    def __repr__(self) -> str:
        return f"CollectivesLog({self.entries})"


class _Open(threading.local):
    def __init__(self) -> None:
        self.logs: list[CollectivesLog] = []


_open = _Open()


@contextlib.contextmanager
def collectives_log() -> Iterator[CollectivesLog]:
    """Record the collectives executed inside the block (nested logs all
    record)."""
    log = CollectivesLog()
    _open.logs.append(log)
    try:
        yield log
    finally:
        _open.logs.remove(log)


@contextlib.contextmanager
def separate_log() -> Iterator[CollectivesLog]:
    """Like ``collectives_log``, but the block's collectives are recorded in
    its log only, not in the logs open around it (a run that only looks at
    which collectives a program would perform)."""
    log = CollectivesLog()
    saved, _open.logs = _open.logs, [log]
    try:
        yield log
    finally:
        _open.logs = saved


def record(kind: str, axes: tuple[str, ...], nbytes: int) -> None:
    assert kind in KINDS, kind
    if _open.logs:
        entry = Collective(kind, tuple(axes), int(nbytes))
        for log in _open.logs:
            log.entries.append(entry)


__all__ = ["Collective", "CollectivesLog", "collectives_log", "record", "separate_log"]
