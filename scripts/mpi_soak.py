"""Soak test of spec's MPI ranks: launch the example programs again and again on 2 and 4
ranks, SIGKILL a random rank at a random moment in some of the launches, and check that no
launch hangs.

    .venv/bin/python scripts/mpi_soak.py [--launches 100] [--budget 1800] [--json FILE]

Each launch runs ``mpiexec -disable-auto-cleanup -n N python -m spec.mesh_mpi.guard
examples/NAME.py``, so the launcher does not end the job for the survivors when a rank is
killed: they must notice the dead peer themselves and exit (spec's collectives wait with
deadlines, ``SPEC_MPI_TIMEOUT``). A launch that outlives its hard timeout is a hang; the
launcher and every process below it are killed. Outcomes:

- ``ok``: no rank was killed and the program exited with status 0;
- ``killed, exited``: a rank was killed and every process ended by itself before the hard
  timeout (with a failing status, or 0 where the kill came after the work was done);
- ``failed``: no rank was killed, yet the program failed (a bug, or a machine too loaded for
  the deadlines);
- ``hang``: the hard timeout fired.

The exit status is 1 when any launch hung or failed, else 0. The total run time is bounded
by ``--budget`` (launches not started by then are skipped and reported as such).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.mpiexec import descendants, kill_tree  # noqa: E402
EXAMPLES = ["data_parallel_mlp", "capstone", "shard_map_matmul", "pipeline"]
OUTCOMES = ("ok", "killed, exited", "failed", "hang")


@dataclass
class Launch:
    example: str
    ranks: int
    kill_after_s: float | None
    outcome: str
    seconds: float
    status: int | None
    stderr_tail: str


def _mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def _rank_pids(launcher: int, script: str) -> list[int]:
    """The rank processes of a launch: the Python processes below it running script."""
    ranks = []
    for pid in descendants(launcher):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if script.encode() in cmdline and b"spec.mesh_mpi.guard" not in cmdline \
                and not any(b"hydra" in c for c in cmdline):
            ranks.append(pid)
    return ranks


def _kill_one_rank(proc: subprocess.Popen[bytes], script: str, rng: random.Random) -> bool:
    """Whether a rank was killed (none is left to kill once the ranks have finished)."""
    pids = _rank_pids(proc.pid, script)
    if not pids:
        return False
    try:
        os.kill(rng.choice(pids), signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False  # it had just finished


def run_launch(example: str, ranks: int, kill_after_s: float | None, hard_timeout_s: float,
               mpi_timeout_s: float, rng: random.Random) -> Launch:
    script = str(ROOT / "examples" / f"{example}.py")
    cmd = [_mpiexec(), "-disable-auto-cleanup", "-n", str(ranks), sys.executable, "-m",
           "spec.mesh_mpi.guard", script]
    env = dict(os.environ, SPEC_MPI_TIMEOUT=str(mpi_timeout_s),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.monotonic()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                            start_new_session=True, cwd=str(ROOT))
    status: int | None = None
    killed = False
    try:
        if kill_after_s is not None:
            try:
                status = proc.wait(timeout=kill_after_s)
            except subprocess.TimeoutExpired:
                killed = _kill_one_rank(proc, script, rng)
        if status is None:
            status = proc.wait(timeout=max(0.0, hard_timeout_s - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        status = None
    finally:
        kill_tree(proc.pid)
        proc.wait()
    seconds = time.monotonic() - start
    if status is None:
        outcome = "hang"
    elif killed:
        outcome = "killed, exited"
    else:
        outcome = "ok" if status == 0 else "failed"
    err.seek(0)
    stderr_tail = err.read()[-2000:].decode(errors="replace") if outcome != "ok" else ""
    err.close()
    return Launch(example, ranks, kill_after_s if killed else None, outcome,
                  round(seconds, 2), status, stderr_tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=100)
    parser.add_argument("--ranks", default="2,4", help="comma-separated rank counts")
    parser.add_argument("--kill-fraction", type=float, default=0.5,
                        help="the fraction of launches in which one rank is SIGKILLed")
    parser.add_argument("--hard-timeout", type=float, default=120.0,
                        help="seconds after which a launch counts as hung")
    parser.add_argument("--mpi-timeout", type=float, default=20.0,
                        help="SPEC_MPI_TIMEOUT for the ranks")
    parser.add_argument("--budget", type=float, default=1800.0,
                        help="seconds for the whole soak")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    rank_counts = [int(n) for n in args.ranks.split(",")]
    start = time.monotonic()
    launches: list[Launch] = []
    for i in range(args.launches):
        if time.monotonic() - start + args.hard_timeout > args.budget:
            break
        kill = rng.uniform(0.3, 10.0) if rng.random() < args.kill_fraction else None
        launch = run_launch(rng.choice(EXAMPLES), rng.choice(rank_counts), kill,
                            args.hard_timeout, args.mpi_timeout, rng)
        launches.append(launch)
        shown = "-" if launch.kill_after_s is None else f"{launch.kill_after_s:.1f}s"
        print(f"{i + 1:4d} {launch.example:18s} n={launch.ranks} kill={shown:6s} "
              f"{launch.outcome:15s} "
              f"{launch.seconds:6.1f} s", flush=True)
    counts = {o: sum(1 for x in launches if x.outcome == o) for o in OUTCOMES}
    summary = {"launches": len(launches), "skipped": args.launches - len(launches),
               "seconds": round(time.monotonic() - start, 1),
               "longest_s": max((x.seconds for x in launches), default=0.0), **counts}
    print(json.dumps(summary))
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary,
                                         "launches": [asdict(x) for x in launches]}, indent=1))
    return 1 if counts["hang"] or counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
