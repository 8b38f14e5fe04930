"""spec's machine-independent transcendental kernels against NumPy's
CPU-dispatched ones (spec/_src/lax/elementwise_math.py, SPEC.md 8.1).

One row per kernel and dtype: the best time of NumPy's ufunc and of spec's
kernel on the same operand, and their ratio, for a large array
(``[512, 512]``) and a small one (``[8]``). ``--quick``: 64x64, one repeat.

    .venv/bin/python -m benchmarks.transcendental [--quick]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from benchmarks.sharding import best_seconds
from spec._src.core.config import config
from spec._src.lax import elementwise_math as M

UNARY = ["exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "arctan", "arcsin",
         "arcsinh", "cbrt"]


def _operand(name: str, shape: tuple[int, ...], dt: Any) -> np.ndarray:
    x = np.random.default_rng(0).uniform(-5.0, 5.0, shape)
    if name in ("log", "log1p"):
        x = np.abs(x) + 0.1
    if name == "arcsin":
        x = x / 5.0
    return x.astype(dt)


def _row(name: str, shape: tuple[int, ...], dt: Any, repeats: int) -> dict[str, Any]:
    if name == "power":
        x, y = _operand("log", shape, dt), _operand("exp", shape, dt)
        t_np = best_seconds(lambda: np.power(x, y), repeats)
        t_spec = best_seconds(lambda: M.power(x, y), repeats)
    else:
        x = _operand(name, shape, dt)
        fn_np, fn_spec = getattr(np, name), getattr(M, name)
        t_np = best_seconds(lambda: fn_np(x), repeats)
        t_spec = best_seconds(lambda: fn_spec(x), repeats)
    return {"kernel": name, "dtype": np.dtype(dt).name, "shape": shape, "numpy": t_np,
            "spec": t_spec, "spec/numpy": t_spec / t_np}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="64x64 operands, one repeat")
    args = parser.parse_args(argv)
    big, repeats = ((64, 64), 1) if args.quick else ((512, 512), 7)
    before = config.spec_transcendentals
    config.update("spec_transcendentals", "exact")  # time the kernels, not NumPy's ufuncs
    try:
        return _table(big, repeats)
    finally:
        config.update("spec_transcendentals", before)


def _table(big: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    rows = []
    print(f"{'kernel':8s} {'dtype':8s} {'shape':>10s} {'numpy':>10s} {'spec':>10s} spec/numpy")
    for dt in (np.float32, np.float64):
        for name in [*UNARY, "power"]:
            for shape in (big, (8,)):
                row = _row(name, shape, dt, repeats)
                rows.append(row)
                print(f"{name:8s} {row['dtype']:8s} {str(shape):>10s} "
                      f"{row['numpy'] * 1e3:8.3f}ms {row['spec'] * 1e3:8.3f}ms "
                      f"{row['spec/numpy']:8.1f}x")
    return rows


if __name__ == "__main__":
    main()
