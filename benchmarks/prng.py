"""Uniform floats: spec.random vs jax.random (CPU) vs NumPy's Generator.

Prints one row per size with the best time of each and spec's time as a
ratio to the others. ``--quick`` uses 10**5 floats and one repeat (a smoke
run); the default is 10**7 floats, best of 3.

    .venv/bin/python -m benchmarks.prng [--quick]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from benchmarks.sharding import best_seconds

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def measure(n: int, repeats: int) -> dict[str, float]:
    import jax
    import numpy as np

    import spec

    spec_key, jax_key = spec.random.key(0), jax.random.key(0)
    gen = np.random.default_rng(0)
    return {
        "spec": best_seconds(lambda: np.asarray(spec.random.uniform(spec_key, (n,))), repeats),
        "jax": best_seconds(
            lambda: jax.random.uniform(jax_key, (n,)).block_until_ready(), repeats),
        "numpy": best_seconds(lambda: gen.random(n, dtype=np.float32), repeats),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10**5 floats, one repeat")
    args = parser.parse_args(argv)
    n, repeats = (10 ** 5, 1) if args.quick else (10 ** 7, 3)
    t = measure(n, repeats)
    row = {"n": n, **t, "spec/jax": t["spec"] / t["jax"], "spec/numpy": t["spec"] / t["numpy"]}
    print(f"uniform float32 n={n}: spec {t['spec']:.4f}s  jax {t['jax']:.4f}s  "
          f"numpy {t['numpy']:.4f}s  spec/jax {row['spec/jax']:.1f}x  "
          f"spec/numpy {row['spec/numpy']:.1f}x")
    return [row]


if __name__ == "__main__":
    main()
