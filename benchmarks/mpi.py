"""The MPI backend against raw mpi4py and against the virtual backend.

    mpiexec -n 2 python -m benchmarks.mpi [--quick] [--json FILE]
    mpiexec -n 4 python -m benchmarks.mpi

1. Each collective through spec's backend (``spec._src.interpreters.spmd.all_reduce`` etc.,
   the calls the per-device programs make, ledger included) against raw
   mpi4py on the same buffers (``Allreduce``, ``Allgather``, ``Sendrecv``),
   at 1 MB and 64 MB per rank, the two timed in alternation; reported as the
   medians over rounds of the slowest rank's seconds per call and of the ratio.
   A reduction combines the blocks in position order (the virtual backend's
   order, for bitwise equal values); over more than 2 ranks a large one is a
   reduce-scatter and an all-gather in that order.
2. The capstone step (examples/capstone.py, reduced weights) on the ranks
   against the same step on as many virtual devices in one process.

Rank 0 prints a table (and writes JSON with --json). Never asserted on by
tests (tests/benchmarks/test_smoke.py runs --quick on 2 ranks).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import spec
from spec._src.interpreters import spmd as S
from spec._src.backends import mpi as mesh_mpi


def _best(fn: Callable[[], Any], repeats: int) -> float:
    mesh_mpi.barrier("bench")
    times = []
    for _ in range(repeats):
        mesh_mpi.barrier("bench")
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    # The slowest rank decides a collective's time: take every rank's best, then the max.
    best = np.array([min(times)])
    return float(np.max(mesh_mpi.allgather_blocks(best, "bench")))


def _interleaved(ours: Callable[[], Any], raw: Callable[[], Any], rounds: int
                 ) -> tuple[float, float, float]:
    """Both implementations timed in alternation, ``rounds`` times each (after
    one warm-up call of each), every call started together on all ranks (a
    barrier) and timed by the wall clock: a collective's time is how long
    its slowest rank waits, which CPU time does not see. Per round the
    slowest rank's time; the medians over rounds of spec's time, raw mpi4py's
    time and their ratio."""
    ours()
    raw()
    times = np.empty((rounds, 2))
    for i in range(rounds):
        for j, fn in enumerate((ours, raw)):
            mesh_mpi.barrier("bench")
            start = time.perf_counter()
            fn()
            times[i, j] = time.perf_counter() - start
    slowest = np.max(np.stack(mesh_mpi.allgather_blocks(times, "bench")), axis=0)
    return (float(np.median(slowest[:, 0])), float(np.median(slowest[:, 1])),
            float(np.median(slowest[:, 0] / slowest[:, 1])))


def collective_rows(nbytes: int, rounds: int) -> list[dict[str, Any]]:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    n, me = comm.Get_size(), comm.Get_rank()
    mesh = spec.make_mesh((n,), ("i",))
    geo = S.geometry(mesh)
    block = np.random.default_rng(me).standard_normal(nbytes // 4).astype(np.float32)
    bufs = geo.place(block)
    out_sum = np.empty_like(block)
    out_all = np.empty(block.size * n, np.float32)
    recv = np.empty_like(block)
    ring = [(k, (k + 1) % n) for k in range(n)]
    right, left = (me + 1) % n, (me - 1) % n
    cases = {
        "all_reduce": (lambda: S.all_reduce(bufs, ("i",), "sum", geo),
                       lambda: comm.Allreduce(block, out_sum, op=MPI.SUM)),
        "all_gather": (lambda: S.all_gather(bufs, ("i",), 0, geo),
                       lambda: comm.Allgather(block, out_all)),
        "ppermute": (lambda: S.ppermute(bufs, ("i",), ring, geo),
                     lambda: comm.Sendrecv(block, dest=right, recvbuf=recv, source=left)),
    }
    rows = []
    for name, (ours, raw) in cases.items():
        t_spec, t_raw, ratio = _interleaved(ours, raw, rounds)
        rows.append({"group": "collective", "what": f"{name} {nbytes >> 20} MB per rank",
                     "ranks": n, "spec": t_spec, "baseline": t_raw,
                     "baseline_name": "raw mpi4py", "ratio": ratio})
    return rows


def capstone_row(repeats: int) -> dict[str, Any]:
    """The capstone step on the ranks; the virtual-backend time comes from a
    single-process run of the same function (see main)."""
    n = spec.device_count()
    t = _best(lambda: _capstone_step(n)(), repeats)
    return {"group": "capstone", "what": "capstone step (reduced weights)", "ranks": n,
            "spec": t}


def _capstone_step(n: int) -> Callable[[], Any]:
    mesh = spec.make_mesh((n,), ("x",))
    jnp = spec.numpy

    def predict(ws: Any, xs: Any) -> Any:
        final, _ = spec.lax.scan(lambda c, w: (jnp.tanh(c @ w), None), xs, ws)
        return final

    @spec.jit
    def step(ws: Any, xs: Any) -> Any:
        def micro(acc: Any, xs_mb: Any) -> Any:
            return acc + spec.grad(lambda w: jnp.sum(predict(w, xs_mb) ** 2))(ws), None
        acc = spec.reshard(jnp.zeros_like(ws), spec.P(unreduced={"x"}))
        acc, _ = spec.lax.scan(micro, acc, xs)
        return spec.reshard(ws, spec.P()) - 0.01 * spec.reshard(acc, spec.P())

    with spec.set_mesh(mesh):
        ws = spec.device_put(np.stack([np.eye(64, dtype=np.float32) / 8] * 3),
                             spec.P(reduced={"x"}))
        xs = spec.device_put(np.ones((5, 16 * n, 64), np.float32), spec.P(None, "x", None))

    def run() -> Any:
        with spec.set_mesh(mesh):
            return step(ws, xs)
    return run


def virtual_capstone(n: int, repeats: int) -> float:
    """The same step on n virtual devices (run in one process)."""
    spec.config.update("jax_num_cpu_devices", n)
    run = _capstone_step(n)
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--virtual-capstone", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    repeats = 2 if args.quick else 7
    if args.virtual_capstone:
        print(json.dumps(virtual_capstone(args.virtual_capstone, repeats)))
        return
    if not mesh_mpi.active():
        raise SystemExit("run under mpiexec with 2 or more ranks")
    sizes = [1 << 20] if args.quick else [1 << 20, 64 << 20]
    rows = [r for nbytes in sizes
            for r in collective_rows(nbytes, 2 if args.quick else 31 if nbytes < 1 << 24 else 9)]
    rows.append(capstone_row(repeats))
    if mesh_mpi.rank() == 0:
        _add_virtual(rows[-1], repeats)
        _print(rows)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


def _add_virtual(row: dict[str, Any], repeats: int) -> None:
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "MPI_", "HYDRA"))}
    env["SPEC_BACKEND"] = "virtual"
    out = subprocess.run([sys.executable, "-m", "benchmarks.mpi", "--virtual-capstone",
                          str(row["ranks"])] + (["--quick"] if repeats == 2 else []),
                         env=env, capture_output=True, text=True, timeout=600, check=True)
    row["baseline"] = float(out.stdout.strip().splitlines()[-1])
    row["baseline_name"] = "virtual devices"
    row["ratio"] = row["spec"] / row["baseline"]


def _print(rows: list[dict[str, Any]]) -> None:
    def fmt(t: float) -> str:
        return f"{t * 1e3:.2f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} us"
    print("| what | ranks | spec | baseline | spec/baseline |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['what']} | {r['ranks']} | {fmt(r['spec'])} | {fmt(r['baseline'])} "
              f"({r['baseline_name']}) | {r['ratio']:.2f}x |")


if __name__ == "__main__":
    main()
