"""The benchmark plot (``python -m benchmarks.run --plot [PNG]``): per benchmark,
spec / NumPy / JAX eager / JAX jit side by side, and the cost of a straight-line
program against its size (tracing, code generation, evaluation generated and
interpreted, NumPy), so that linear growth is visible.

matplotlib (the ``dev`` extra) is imported only here, only when plotting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SCALING_SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SCALING_SIZES = (30, 100)


@dataclass(frozen=True)
class Scaling:
    """Seconds for one program of ``equations`` equations, each the best of
    its repeats."""

    equations: int
    tracing: float
    generation: float
    generated: float
    interpreted: float
    numpy: float


def _best(thunk: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        thunk()
        best = min(best, time.perf_counter() - start)
    return best


def _chain(mod: Any, n_ops: int) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        for _ in range(n_ops // 3):
            x = mod.add(mod.multiply(mod.sin(x), 0.5), x)
        return x
    return f


def scaling(sizes: Sequence[int], repeat: int = 3) -> list[Scaling]:
    """Tracing (``make_jaxpr``), generating the code of the traced program,
    and one call of it generated, interpreted and as plain NumPy."""
    import spec
    import spec.numpy as jnp
    from spec._src.api import codegen

    x_np = np.linspace(0, 1, 8, dtype=np.float32)
    x = jnp.asarray(x_np)
    out = []
    for n in sizes:
        reps = repeat if n <= 10_000 else 1
        f = _chain(jnp, n)
        jaxpr = spec.make_jaxpr(f)(x)
        tracing = _best(lambda: spec.make_jaxpr(_chain(jnp, n))(x), reps)
        live = codegen.live_program(jaxpr)
        generation = _best(lambda: codegen.write(live), reps)
        jitted = spec.jit(f)
        jitted(x)
        generated = _best(lambda: jitted(x), reps)
        values = spec.config._values
        values["spec_jit_codegen"] = False
        try:
            jitted(x)
            interpreted = _best(lambda: jitted(x), reps)
        finally:
            values["spec_jit_codegen"] = True
        numpy_f = _chain(np, n)
        with np.errstate(all="ignore"):
            numpy = _best(lambda: numpy_f(x_np), reps)
        out.append(Scaling(n, tracing, generation, generated, interpreted, numpy))
    return out


def scaling_lines(points: Sequence[Scaling]) -> list[str]:
    head = "| equations | tracing | generation | call, generated | call, interpreted | numpy |"
    lines = [head, "|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        cells = [p.tracing, p.generation, p.generated, p.interpreted, p.numpy]
        lines.append(f"| {p.equations} | " + " | ".join(_fmt(c) for c in cells) + " |")
    return lines


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


COLUMNS = (("spec", "spec"), ("spec interp", "spec jit, interpreted"), ("numpy", "NumPy"),
           ("jax eager", "JAX eager"), ("jax jit", "JAX jit"))


def plot(rows: Sequence[Any], points: Sequence[Scaling], path: str) -> None:
    """Write the PNG: benchmark times side by side (log scale) and the
    program-size sweep (log-log)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bars, sweep) = plt.subplots(2, 1, figsize=(14, 13),
                                      gridspec_kw={"height_ratios": [3, 2]})
    labels = [f"{r.name} [{r.mode}]" for r in rows]
    width = 0.8 / len(COLUMNS)
    for k, (key, label) in enumerate(COLUMNS):
        heights = []
        for r in rows:
            cell = r.spec if key == "spec" else r.cells.get(key)
            ok = cell is not None and cell.seconds is not None
            heights.append(cell.seconds if ok and (key != "spec interp" or r.mode == "jit")
                           else np.nan)
        positions = np.arange(len(rows)) + (k - (len(COLUMNS) - 1) / 2) * width
        bars.barh(positions, heights, height=width, label=label)
    bars.set_yticks(np.arange(len(rows)), labels, fontsize=7)
    bars.invert_yaxis()
    bars.set_xscale("log")
    bars.set_xlabel("seconds per call (log scale)")
    bars.set_title("spec against NumPy and JAX, measured side by side in one run")
    bars.legend(fontsize=8)
    sizes = [p.equations for p in points]
    for attr, label in (("tracing", "tracing (make_jaxpr)"), ("generation", "code generation"),
                        ("generated", "call, generated code"),
                        ("interpreted", "call, interpreted"), ("numpy", "NumPy")):
        sweep.plot(sizes, [getattr(p, attr) for p in points], marker="o", label=label)
    sweep.set_xscale("log")
    sweep.set_yscale("log")
    sweep.set_xlabel("equations in a straight-line program on f32[8]")
    sweep.set_ylabel("seconds")
    sweep.set_title("cost against program size")
    sweep.grid(True, which="both", alpha=0.3)
    sweep.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
