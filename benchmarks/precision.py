"""The cost of the split-operand dot algorithms against a plain float32
matmul (spec/_src/lax/dot_algorithms.py, SPEC.md 9.4 "Precision and dot
algorithms"): the best time of ``lax.dot`` under F32_F32_F32, BF16_BF16_F32,
BF16_BF16_F32_X3, _X6, _X9 and TF32_TF32_F32_X3 (computed as named), one run,
as ratios to F32_F32_F32 and to NumPy's own float32 matmul.

    .venv/bin/python -m benchmarks.precision [--quick]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from benchmarks.sharding import best_seconds
from spec import lax

PRESETS = ["F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6",
           "BF16_BF16_F32_X9", "TF32_TF32_F32_X3"]


def _table(n: int, repeats: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    t_np = best_seconds(lambda: a @ b, repeats)
    times = {p: best_seconds(lambda p=p: np.asarray(lax.dot(a, b, precision=p)), repeats)
             for p in PRESETS}
    rows = []
    print(f"{'preset':18s} {'shape':>12s} {'spec':>10s} {'/F32_F32_F32':>13s} {'/numpy':>8s}")
    for p, t in times.items():
        row = {"preset": p, "shape": (n, n), "spec": t, "numpy": t_np,
               "ratio_f32": t / times["F32_F32_F32"], "ratio_numpy": t / t_np}
        rows.append(row)
        print(f"{p:18s} {str((n, n)):>12s} {t * 1e3:8.2f}ms {row['ratio_f32']:12.2f}x "
              f"{row['ratio_numpy']:7.2f}x")
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="64x64 operands, one repeat")
    args = parser.parse_args(argv)
    n, repeats = (64, 1) if args.quick else (512, 5)
    return _table(n, repeats)


if __name__ == "__main__":
    main()
