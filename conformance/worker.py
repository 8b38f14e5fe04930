"""The side of an out-of-process implementation: ``python -m conformance.worker DIR``.

Started by ``conformance.remote`` in the interpreter under test (another venv, another JAX
release, a fork). ``DIR/request.json`` names the implementation (any name ``impls.load``
understands), the case ids and the per-case time limit. The worker writes ``DIR/ready.json``
once the implementation is imported, then the result of case ``i`` (counting from ``--start``)
as ``DIR/<i>.npz`` (see ``conformance.wire``), and after each file a line on the notification
pipe ``--notify-fd`` so the runner need not poll. Everything else the cases print goes to the
log file the runner gave as stdout and stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from conformance import wire
from conformance.compare import Raised
from conformance.impls import ImplUnavailable, load
from conformance.registry import load_cases_named
from conformance.runner import run_case


def _notify(pipe: TextIO, line: str) -> None:
    pipe.write(line + "\n")
    pipe.flush()


def _describe(impl_name: str, jax: Any) -> dict[str, Any]:
    return {
        "impl": impl_name,
        "version": str(getattr(jax, "__version__", "unknown")),
        "python": sys.version.split()[0],
        "executable": sys.executable,
    }


def serve(directory: Path, start: int, pipe: TextIO) -> int:
    request = json.loads((directory / "request.json").read_text())
    try:
        impl = load(str(request["impl"]))
    except ImplUnavailable as e:
        ready = {"ok": False, "reason": e.reason, "detail": e.detail}
        wire.write_atomically(directory / "ready.json", json.dumps(ready).encode())
        _notify(pipe, "ready")
        return 3
    ids: list[str] = list(request["cases"])
    cases = load_cases_named(ids[start:])
    ready = {"ok": True, "info": _describe(impl.name, impl.jax)}
    wire.write_atomically(directory / "ready.json", json.dumps(ready).encode())
    _notify(pipe, "ready")
    timeout_s = float(request["timeout_s"])
    for i in range(start, len(ids)):
        case = cases.get(ids[i])
        if case is None:
            value: Any = Raised("CaseNotFound", "conformance.worker.CaseNotFound",
                                ("CaseNotFound", "Exception"),
                                f"the worker's corpus has no case {ids[i]!r}")
            time_s = 0.0
        else:
            outcome = run_case(case, impl, timeout_s)
            value, time_s = outcome.value, outcome.time_s
        wire.write_atomically(directory / f"{i}.npz", wire.dumps(value, {"time_s": time_s}))
        _notify(pipe, str(i))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.worker")
    p.add_argument("directory", type=Path)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--notify-fd", type=int, required=True)
    args = p.parse_args(argv)
    with os.fdopen(args.notify_fd, "w") as pipe:
        return serve(args.directory, args.start, pipe)


if __name__ == "__main__":
    sys.exit(main())
