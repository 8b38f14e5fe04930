"""Sharded execution on virtual devices: what does running per device cost?

For 2, 4 and 8 virtual devices (a one-axis mesh 'X'), two training steps run
three ways in one process: spec with sharded inputs (per-device programs and
collectives), spec with the same inputs unsharded, and plain NumPy doing the
same arithmetic by hand. Reported: the ratios sharded/unsharded (the price of
interpreting shardings) and sharded/NumPy, and the collective ledger's bytes
against the least a step must move (one all-reduce of the weight gradients).

    python -m benchmarks.sharding [--quick] [--json FILE]

Never asserted on by tests: tests/benchmarks/test_smoke.py only runs it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import spec
import spec.numpy as snp


@dataclass(frozen=True)
class Sizes:
    batch_per_device: int
    width: int
    layers: int
    microbatches: int
    repeats: int


FULL = Sizes(batch_per_device=64, width=256, layers=3, microbatches=4, repeats=5)
QUICK = Sizes(batch_per_device=4, width=8, layers=2, microbatches=2, repeats=1)


# ------------------------------------------------------------ the programs


def _mlp_loss(ws: Any, x: Any) -> Any:
    h = x
    for w in ws:
        h = snp.tanh(h @ w)
    return snp.sum(h ** 2)


def _dp_step(ws: Any, x: Any) -> Any:
    """Data-parallel step: replicated weights, batch split over X."""
    grads = spec.grad(_mlp_loss)(ws, x)
    return [w - 0.01 * g for w, g in zip(ws, grads)]


def _layer_scan_loss(stacked: Any, x: Any) -> Any:
    final, _ = spec.lax.scan(lambda h, w: (snp.tanh(h @ w), None), x, stacked)
    return snp.sum(final ** 2)


def _capstone_step(stacked: Any, xs: Any, reduced: bool) -> Any:
    """The gradient-accumulation step of the autodiff-and-sharding page."""
    def micro(acc: Any, x_mb: Any) -> tuple[Any, None]:
        return acc + spec.grad(_layer_scan_loss)(stacked, x_mb), None
    acc = snp.zeros_like(stacked)
    if reduced:
        acc = spec.reshard(acc, spec.P(unreduced={"X"}))
    acc, _ = spec.lax.scan(micro, acc, xs)
    if reduced:
        acc = spec.reshard(acc, spec.P())
        stacked = spec.reshard(stacked, spec.P())
    return stacked - 0.01 * acc


def _numpy_backprop(ws: list[np.ndarray], x: np.ndarray) -> list[np.ndarray]:
    """Gradients of sum(tanh(...tanh(x @ w1)...) ** 2) by hand."""
    acts = [x]
    for w in ws:
        acts.append(np.tanh(acts[-1] @ w))
    g = 2 * acts[-1]
    grads: list[np.ndarray] = []
    for w, a_in, a_out in zip(reversed(ws), reversed(acts[:-1]), reversed(acts[1:])):
        g = g * (1 - a_out * a_out)
        grads.append(a_in.T @ g)
        g = g @ w.T
    return grads[::-1]


def _numpy_dp_step(ws: list[np.ndarray], x: np.ndarray) -> list[np.ndarray]:
    return [w - np.float32(0.01) * g for w, g in zip(ws, _numpy_backprop(ws, x))]


def _numpy_capstone(stacked: np.ndarray, xs: np.ndarray) -> np.ndarray:
    acc = np.zeros_like(stacked)
    for x_mb in xs:
        acc += np.stack(_numpy_backprop(list(stacked), x_mb))
    return stacked - np.float32(0.01) * acc


# -------------------------------------------------------------- measuring


def _unsharded(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with no mesh in context: single-buffer arrays throughout."""
    def run() -> Any:
        with spec.set_mesh(None):
            return fn()
    return run


def best_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """The best of ``repeats`` timed calls, after one warm-up call."""
    fn()  # warm: traces and caches
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _row(name: str, n: int, sharded: float, unsharded: float, numpy: float, moved: int,
         minimum: int) -> dict[str, Any]:
    return {"name": name, "devices": n, "sharded": sharded, "unsharded": unsharded,
            "numpy": numpy, "sharded/unsharded": sharded / unsharded,
            "sharded/numpy": sharded / numpy, "ledger bytes": moved,
            "minimum bytes": minimum, "ledger/minimum": moved / minimum if minimum else None}


def _dp_row(n: int, sizes: Sizes, rng: np.random.Generator) -> dict[str, Any]:
    width, batch = sizes.width, sizes.batch_per_device * n
    ws_np = [(rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
             for _ in range(sizes.layers)]
    x_np = rng.standard_normal((batch, width)).astype(np.float32)
    step = spec.jit(_dp_step)
    ws = [spec.device_put(w, spec.P()) for w in ws_np]
    x = spec.device_put(x_np, spec.P("X", None))
    plain_ws, plain_x = [snp.asarray(w) for w in ws_np], snp.asarray(x_np)
    with spec.collectives_log() as log:
        out = step(ws, x)
    np.testing.assert_allclose(np.asarray(out[0]), _numpy_dp_step(ws_np, x_np)[0], rtol=1e-3,
                               atol=1e-5)
    minimum = sum(w.nbytes for w in ws_np)  # one all-reduce of each weight gradient
    return _row("data-parallel MLP step", n,
                best_seconds(lambda: step(ws, x), sizes.repeats),
                best_seconds(_unsharded(lambda: step(plain_ws, plain_x)), sizes.repeats),
                best_seconds(lambda: _numpy_dp_step(ws_np, x_np), sizes.repeats),
                log.nbytes, minimum)


def _capstone_row(n: int, sizes: Sizes, rng: np.random.Generator) -> dict[str, Any]:
    width, batch = sizes.width, sizes.batch_per_device * n
    stacked_np = (rng.standard_normal((sizes.layers, width, width)) / np.sqrt(width)
                  ).astype(np.float32)
    xs_np = rng.standard_normal((sizes.microbatches, batch, width)).astype(np.float32)
    sharded_step = spec.jit(lambda w, x: _capstone_step(w, x, True))
    plain_step = spec.jit(lambda w, x: _capstone_step(w, x, False))
    stacked = spec.device_put(stacked_np, spec.P(reduced={"X"}))
    xs = spec.device_put(xs_np, spec.P(None, "X", None))
    plain_w, plain_x = snp.asarray(stacked_np), snp.asarray(xs_np)
    with spec.collectives_log() as log:
        out = sharded_step(stacked, xs)
    np.testing.assert_allclose(np.asarray(out), _numpy_capstone(stacked_np, xs_np), rtol=1e-3,
                               atol=1e-5)
    return _row("capstone step ({R:X} weights)", n,
                best_seconds(lambda: sharded_step(stacked, xs), sizes.repeats),
                best_seconds(_unsharded(lambda: plain_step(plain_w, plain_x)), sizes.repeats),
                best_seconds(lambda: _numpy_capstone(stacked_np, xs_np), sizes.repeats),
                log.nbytes, stacked_np.nbytes)


def run(sizes: Sizes, device_counts: tuple[int, ...] = (2, 4, 8)) -> list[dict[str, Any]]:
    rows = []
    before = spec.config.jax_num_cpu_devices
    try:
        for n in device_counts:
            spec.config.update("jax_num_cpu_devices", n)
            rng = np.random.default_rng(n)
            with spec.set_mesh(spec.make_mesh((n,), ("X",))):
                rows.append(_dp_row(n, sizes, rng))
                rows.append(_capstone_row(n, sizes, rng))
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    return rows


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| program | devices | spec sharded | spec unsharded | numpy | sharded/unsharded |"
             " sharded/numpy | ledger bytes / minimum |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['devices']} | {r['sharded'] * 1e3:.2f} ms |"
                     f" {r['unsharded'] * 1e3:.2f} ms | {r['numpy'] * 1e3:.2f} ms |"
                     f" {r['sharded/unsharded']:.2f}x | {r['sharded/numpy']:.2f}x |"
                     f" {r['ledger bytes']} / {r['minimum bytes']} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    rows = run(sizes, (2,) if args.quick else (2, 4, 8))
    print("\n".join(markdown(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": sizes.__dict__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
