"""Launching spec under mpiexec from a test: a new session per launch, a
hard timeout after which the whole process group is killed, and results
read back from the files the ranks write (pytest never runs inside
mpiexec)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "mpi_worker.py"


def mpiexec() -> str:
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which(
        "mpiexec")
    if found is None:
        pytest.skip("mpiexec is not installed (the `mpi` extra)")
    return found


def launch(n: int, *args: str, timeout: float = 120, mpi_timeout: float = 20,
           script: Path = WORKER, env: dict[str, str] | None = None,
           survivors: list[int] | None = None, fault_tolerant: bool = False
           ) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run ``script OUTDIR *args`` on n ranks; the JSON results of the ranks
    expected to finish (``survivors``, default all; rank order) and the
    launcher's completed process. ``fault_tolerant``: hydra does not kill
    the job when a rank dies."""
    with tempfile.TemporaryDirectory() as outdir:
        flags = ["-disable-auto-cleanup"] if fault_tolerant else []
        guard = ["-m", "spec.mesh_mpi.guard"] if fault_tolerant else []
        cmd = [mpiexec(), *flags, "-n", str(n), sys.executable, *guard, "-m", "mpi4py",
               str(script), outdir, *args]
        done = _run(cmd, dict(env or {}, PYTHONPATH=str(ROOT)), timeout, mpi_timeout)
        results = []
        for r in (range(n) if survivors is None else survivors):
            path = Path(outdir) / f"rank{r}.json"
            if not path.exists():
                raise AssertionError(f"rank {r} wrote no result (exit {done.returncode}):\n"
                                     f"{done.stdout}\n{done.stderr}")
            results.append(json.loads(path.read_text()))
    for r, res in enumerate(results):
        if "crash" in res:
            raise AssertionError(f"rank {r} crashed:\n{res['crash']}")
    return results, done


def run_script(script: Path, n: int | None, timeout: float = 180, mpi_timeout: float = 30,
               env: dict[str, str] | None = None, args: list[str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """``python script args`` (n None) or ``mpiexec -n n python script
    args``, in a new session, killed with its process group after
    ``timeout``."""
    cmd = [sys.executable, str(script), *(args or [])]
    if n is not None:
        cmd = [mpiexec(), "-n", str(n), *cmd]
    return _run(cmd, env or {}, timeout, mpi_timeout)


def _run(cmd: list[str], env: dict[str, str], timeout: float, mpi_timeout: float
         ) -> subprocess.CompletedProcess[str]:
    """``cmd`` in a new session from the repository root; its whole process
    group is killed when it ends or runs past ``timeout`` (no rank left
    behind, never a hang)."""
    full_env = dict(os.environ, SPEC_MPI_TIMEOUT=str(mpi_timeout), **env)
    full_env.pop("SPEC_BACKEND", None)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, start_new_session=True, cwd=str(ROOT))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        raise AssertionError(f"{cmd} ran past {timeout} s:\n{out}\n{err}")
    finally:
        kill_tree(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def descendants(root: int) -> list[int]:
    """Every process below ``root``. hydra starts its proxy and each rank in a session of
    their own, so killing the launcher's process group leaves them running."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # it ended meanwhile
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(root: int) -> None:
    """SIGKILL ``root``'s process group and every process below it."""
    below = descendants(root)
    try:
        os.killpg(root, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
