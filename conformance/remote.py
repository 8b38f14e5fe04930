"""Implementations under test that run in another Python interpreter: ``--impl python:PATH``.

``python:PATH`` runs real JAX as installed for the interpreter ``PATH`` (another venv, another
JAX release, a GPU build); ``python:PATH:NAME`` runs implementation ``NAME`` there (any name
``impls.load`` understands, e.g. ``spec`` or ``mypkg.plugin:impl``). The runner starts
``PATH -m conformance.worker`` in its own process group and exchanges cases and results through
files in a temporary directory (``conformance.worker``, ``conformance.wire``).

Isolation: each case has a deadline (the per-case time limit plus a grace period for the
worker's own in-process limit to fire first). A worker that dies while running a case (a
segfault, ``os.abort``, an exit) or runs past the deadline (a hang in C code that ignores
signals) has its whole process group killed; that case's result is a ``WorkerCrashed`` or
``WorkerTimeout`` exception, reported as an error against the reference, and a fresh worker
continues with the next case. The runner itself never waits without a deadline.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conformance import wire
from conformance.compare import Raised
from conformance.registry import Case

PREFIX = "python:"
REPO_ROOT = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT_S = 120.0  # importing JAX in a cold venv
GRACE_S = 2.0  # beyond the per-case limit, for the worker's own SIGALRM to fire first


@dataclasses.dataclass(frozen=True)
class RemoteImpl:
    """An implementation run by ``python`` in a worker process; ``inner`` is its name there."""

    name: str
    python: str
    inner: str

    @property
    def slug(self) -> str:
        """File-name friendly name, used for ``xfail/<slug>.toml`` (as ``Impl.slug``)."""
        return re.sub(r"[^A-Za-z0-9_-]+", "_", self.name)


@dataclasses.dataclass(frozen=True)
class RemoteRun:
    """What a worker produced: per-case results and timings, and what it said about itself."""

    outcomes: dict[str, tuple[Any, float]]  # case id -> (normalised value, seconds)
    info: dict[str, Any]


class RemoteUnavailable(Exception):
    """The worker could not start or could not import its implementation."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def parse(name: str) -> RemoteImpl:
    """``python:PATH`` or ``python:PATH:NAME``."""
    path, _, inner = name[len(PREFIX):].partition(":")
    if not path:
        raise ValueError(f"{name!r}: expected python:PATH or python:PATH:NAME")
    return RemoteImpl(name, path, inner or "jax")


def _raised(cls: str, message: str) -> Raised:
    return Raised(cls, f"conformance.remote.{cls}", (cls, "Exception"), message)


def _log_tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-400:]


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker and everything it started, then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class _Worker:
    """One worker process, serving cases from ``start`` on; ``next_line`` has a deadline."""

    def __init__(self, impl: RemoteImpl, directory: Path, start: int) -> None:
        read_fd, write_fd = os.pipe()
        self.log = directory / f"worker-{start}.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        # One string-hash seed for every worker: messages that list a set's members (JAX's
        # type-promotion errors) come out in one order, so two runs of one release digest alike.
        env["PYTHONHASHSEED"] = "0"
        with open(self.log, "wb") as log:
            try:
                self.proc = subprocess.Popen(
                    [impl.python, "-m", "conformance.worker", str(directory),
                     "--start", str(start), "--notify-fd", str(write_fd)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    pass_fds=(write_fd,), env=env,
                    start_new_session=True,  # its own process group, killed as a whole
                )
            except OSError as e:
                os.close(read_fd)
                raise RemoteUnavailable(f"cannot start {impl.python!r}: {e}") from e
            finally:
                os.close(write_fd)
        self.pipe = os.fdopen(read_fd, "rb", buffering=0)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.pipe, selectors.EVENT_READ)
        self.pending = b""

    def next_line(self, deadline: float) -> str | None:
        """The next notification; "" once the worker closed the pipe (it exited: the pipe
        closes before the process can be waited for), None when the deadline passed."""
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(timeout=left):
                return None
            chunk = self.pipe.read(4096)
            if not chunk:
                return ""
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode()

    def exit_text(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "stopped responding"
        return _exit_text(code)

    def close(self) -> None:
        if self.pipe.closed:
            return
        _kill_group(self.proc)
        self.selector.close()
        self.pipe.close()


def _start(impl: RemoteImpl, directory: Path, start: int) -> tuple[_Worker, dict[str, Any]]:
    worker = _Worker(impl, directory, start)
    line = worker.next_line(time.monotonic() + STARTUP_TIMEOUT_S)
    ready_path = directory / "ready.json"
    if line != "ready" or not ready_path.exists():
        why = "did not start in time" if line is None else worker.exit_text()
        worker.close()
        raise RemoteUnavailable(
            f"worker {impl.python} {why} before importing {impl.inner}: "
            f"{_log_tail(worker.log)}", worker.log.read_text(errors="replace"))
    ready = json.loads(ready_path.read_text())
    ready_path.unlink()
    if not ready["ok"]:
        worker.close()
        raise RemoteUnavailable(str(ready["reason"]), str(ready.get("detail", "")))
    return worker, dict(ready["info"])


def _serve_from(
    worker: _Worker, directory: Path, ids: Sequence[str], start: int, timeout_s: float,
    outcomes: dict[str, tuple[Any, float]], progress: Callable[[int], None] | None,
) -> int:
    """Collect results from ``start`` on until the worker finishes, dies or hangs; returns the
    index of the first case without a result (after recording the dead or hung one)."""
    limit = timeout_s + GRACE_S if timeout_s > 0 else float("inf")
    for i in range(start, len(ids)):
        began = time.monotonic()
        line = worker.next_line(began + limit)
        result = directory / f"{i}.npz"
        if line == str(i) and result.exists():
            try:
                value, extra = wire.loads(result.read_bytes())
            except Exception as e:  # noqa: BLE001 - a bad file is the case's result
                value, extra = _raised(
                    "WorkerProtocolError", f"unreadable result file: {type(e).__name__}: {e}"
                ), {}
            outcomes[ids[i]] = (value, float(extra.get("time_s", 0.0)))
            result.unlink()
            if progress is not None:
                progress(i + 1)
            continue
        elapsed = time.monotonic() - began
        if line is None:
            worker.close()
            outcomes[ids[i]] = (_raised(
                "WorkerTimeout",
                f"the worker ran past the {limit:g}s deadline and was killed"), elapsed)
        else:
            why = worker.exit_text()
            outcomes[ids[i]] = (_raised(
                "WorkerCrashed",
                f"the worker {why} while running this case: {_log_tail(worker.log)}"), elapsed)
        return i + 1
    return len(ids)


def run_remote(impl: RemoteImpl, cases: Sequence[Case], timeout_s: float,
               progress: Callable[[int], None] | None = None) -> RemoteRun:
    """Run ``cases`` in workers of ``impl``; raises RemoteUnavailable if the first worker
    cannot start. A later worker that cannot start leaves its cases as WorkerCrashed.
    ``progress(n)`` is told the number of cases with a result so far."""
    ids = [c.id for c in cases]
    outcomes: dict[str, tuple[Any, float]] = {}
    info: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        directory = Path(tmp)
        request = {"impl": impl.inner, "cases": ids, "timeout_s": timeout_s}
        (directory / "request.json").write_text(json.dumps(request))
        start = 0
        while start < len(ids):
            try:
                worker, info = _start(impl, directory, start)
            except RemoteUnavailable as e:
                if start == 0:
                    raise
                for case_id in ids[start:]:
                    outcomes[case_id] = (_raised("WorkerCrashed", e.reason), 0.0)
                break
            try:
                start = _serve_from(worker, directory, ids, start, timeout_s, outcomes,
                                    progress)
            finally:
                worker.close()
    return RemoteRun(outcomes, info)
