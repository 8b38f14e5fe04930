"""Each collective inside shard_map on 2, 4 and 8 virtual devices, at 4 KB,
1 MB and 64 MB per device, against plain NumPy doing the same data movement
(the same buffers summed, concatenated or exchanged with no interpreter).

    python -m benchmarks.collectives [--quick] [--json FILE]

Reported: seconds per call of the jitted shard_map and of the NumPy version,
and their ratio. Never asserted on by tests (tests/benchmarks/test_smoke.py
only runs the quick sizes).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np

import spec
from benchmarks.sharding import best_seconds

FULL_BYTES = (4 << 10, 1 << 20, 64 << 20)
QUICK_BYTES = (4 << 10,)


def _programs(n: int) -> dict[str, tuple[Callable[[Any], Any], Callable[[list[np.ndarray]], Any],
                                         spec.P]]:
    """name -> (body inside shard_map, the same movement in NumPy over the
    per-device buffers, out_specs)."""
    ring = [(k, (k + 1) % n) for k in range(n)]
    return {
        "psum": (lambda b: spec.lax.psum(b, "i"),
                 lambda bufs: [np.sum(bufs, axis=0)] * n, spec.P()),
        "all_gather": (lambda b: spec.lax.all_gather(b, "i", tiled=True),
                       lambda bufs: [np.concatenate(bufs)] * n, spec.P()),
        "psum_scatter": (lambda b: spec.lax.psum_scatter(b, "i", tiled=True),
                         lambda bufs: np.split(np.sum(bufs, axis=0), n), spec.P("i")),
        "all_to_all": (lambda b: spec.lax.all_to_all(b, "i", 0, 0, tiled=True),
                       lambda bufs: [np.concatenate([np.split(b, n)[k] for b in bufs])
                                     for k in range(n)], spec.P("i")),
        # A transfer between devices is a copy (NumPy's baseline copies).
        "ppermute": (lambda b: spec.lax.ppermute(b, "i", ring),
                     lambda bufs: [bufs[(k - 1) % n].copy() for k in range(n)], spec.P("i")),
    }


def _rows_for(n: int, nbytes: int, repeats: int) -> list[dict[str, Any]]:
    per_device = max(nbytes // 4 // n * n, n)  # float32, divisible by n
    whole = np.random.default_rng(0).standard_normal(per_device * n).astype(np.float32)
    x = spec.device_put(whole, spec.P("i"))
    bufs = np.split(whole, n)
    rows = []
    for name, (body, numpy_fn, out_spec) in _programs(n).items():
        f = spec.jit(spec.shard_map(body, in_specs=spec.P("i"), out_specs=out_spec,
                                    check_vma=False))
        moved = numpy_fn(bufs)  # the same movement must give the same data
        want = moved[0] if out_spec == spec.P() else np.concatenate(moved)
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-5)
        t_spec = best_seconds(lambda: f(x), repeats)
        t_np = best_seconds(lambda: numpy_fn(bufs), repeats)
        rows.append({"collective": name, "devices": n, "bytes": nbytes, "spec": t_spec,
                     "numpy": t_np, "ratio": t_spec / t_np})
    return rows


def run(sizes: tuple[int, ...], device_counts: tuple[int, ...], repeats: int
        ) -> list[dict[str, Any]]:
    rows = []
    before = spec.config.jax_num_cpu_devices
    try:
        for n in device_counts:
            spec.config.update("jax_num_cpu_devices", n)
            with spec.set_mesh(spec.make_mesh((n,), ("i",))):
                for nbytes in sizes:
                    rows.extend(_rows_for(n, nbytes, repeats))
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    return rows


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KB"


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| collective | devices | per device | spec | numpy | spec/numpy |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['collective']} | {r['devices']} | {_size(r['bytes'])} |"
                     f" {r['spec'] * 1e3:.3f} ms | {r['numpy'] * 1e3:.3f} ms |"
                     f" {r['ratio']:.2f}x |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 KB on 2 devices, one repeat")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    rows = (run(QUICK_BYTES, (2,), 1) if args.quick
            else run(FULL_BYTES, (2, 4, 8), 3))
    print("\n".join(markdown(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
