"""``mhlo.frontend_attributes`` on emitted ops: the text edit that tags the
op defining a value with XLA metadata, and the metadata an equation was
bound under. (The walk over a jaxpr calls these; the xla_metadata rules are
in ``metadata``.)"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def quoted(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


KEY = "{mhlo.frontend_attributes = {"


def _defining_line(ctx: Any, name: str) -> int | None:
    base = name.split("#")[0]
    for i in range(len(ctx.lines) - 1, -1, -1):
        head = ctx.lines[i].lstrip()
        if head.startswith(f"{base} = ") or head.startswith(f"{base}:"):
            return i
    return None


def attach(ctx: Any, names: Sequence[str], kvs: Sequence[tuple[str, Any]]) -> None:
    """Tag the single-line ops defining ``names`` with ``kvs``; keys an op
    already carries keep their values. A value with no defining op here (an
    argument, a region's block argument) or defined by an op with a region
    is not tagged."""
    if not kvs:
        return
    for name in dict.fromkeys(names):
        at = _defining_line(ctx, name)
        if at is None:
            continue
        line = ctx.lines[at]
        if KEY in line:
            start = line.index(KEY) + len(KEY)
            end = line.index("}}", start)
            present = {part.split(" = ")[0].strip() for part in line[start:end].split(", ")}
            extra = [f"{k} = {quoted(v)}" for k, v in sorted(kvs) if k not in present]
            if extra:
                ctx.lines[at] = line[:end] + ", " + ", ".join(extra) + line[end:]
            continue
        cut = line.rfind(" : ")
        if cut < 0 or line.rstrip().endswith("{"):
            continue
        entries = ", ".join(f"{k} = {quoted(v)}" for k, v in sorted(kvs))
        ctx.lines[at] = f"{line[:cut]} {KEY}{entries}}}}}{line[cut:]}"


def ambient(eqn: Any) -> tuple[tuple[str, Any], ...]:
    """The metadata of the ``set_xla_metadata`` blocks an equation was
    bound under."""
    info = getattr(eqn, "source_info", None)
    meta = getattr(info, "xla_metadata", None) or ()
    return tuple(dict(meta).items())
