"""Print one hash per (primitive, dtype) of spec's transcendental results on
fixed operands. tests/rules/test_transcendental_determinism.py runs this
under different NPY_DISABLE_CPU_FEATURES / GLIBC_TUNABLES settings; the
lines must be identical."""

from __future__ import annotations

import hashlib

import numpy as np

import spec
from spec import lax as slax

UNARY = ["exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "atan", "asin", "acos",
         "asinh", "acosh", "atanh", "cbrt", "logistic", "sinh", "cosh", "exp2", "erfc",
         "lgamma"]


def operands(dt: type) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    # Scaled by powers of two: np.exp here would itself depend on the CPU.
    wide = np.ldexp(rng.standard_normal(4096), rng.integers(-17, 18, 4096))
    unit = rng.uniform(-1.0, 1.0, 4096)
    return wide.astype(dt), unit.astype(dt)


def digest(x: object) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(x)).tobytes()).hexdigest()[:16]


def main() -> None:
    for dt in (np.float32, np.float64):
        with spec.enable_x64(dt == np.float64):
            wide, unit = operands(dt)
            for name in UNARY:
                arg = unit if name in ("asin", "acos", "atanh") else wide
                arg = np.abs(arg) + dt(1) if name == "acosh" else arg
                print(name, np.dtype(dt).name, digest(getattr(slax, name)(arg)))
            print("pow", np.dtype(dt).name, digest(slax.pow(np.abs(wide), unit * dt(30))))
            print("atan2", np.dtype(dt).name, digest(slax.atan2(wide, unit)))


if __name__ == "__main__":
    main()
