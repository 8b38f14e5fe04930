"""spec against NumPy and JAX, as ratios of times measured side by side in one run.

``python -m benchmarks.run [--quick] [--json out.json] [-k SUBSTRING] [--plot [PNG]]``

Every benchmark is one program written once against a NumPy-like namespace
and run five ways on the same float32 inputs: spec eager, spec jit, plain
NumPy, JAX eager and JAX jit (JAX on CPU). Times are timeit-style: a number
of iterations calibrated to last ``min_time``, repeated, the minimum kept;
the repeats of the five implementations are interleaved so that load from
other work on the machine hits them alike. Absolute times depend on the
machine; the ratios spec/NumPy and spec/JAX are what the benchmarks report.

A function that the library under test does not have (yet) makes its cell
"n/a"; an exception while preparing a cell makes it "error" (listed under the
table). Neither stops the run.
"""

from __future__ import annotations

import os

# JAX fixes its platform at first import; CPU keeps the comparison with NumPy
# and spec (both CPU-only) like for like.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# One BLAS thread (unless told otherwise): spec's contractions run float64
# GEMMs through NumPy's BLAS as NumPy's own run float32 ones, and BLAS
# threads spinning on a machine shared with other work make those rows
# noise (a 64x64 @ 64x1024 product took 19 ms threaded, 2.3 ms not, on the
# loaded 2-core machine). Set before NumPy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

Fn = Callable[..., Any]
Thunk = Callable[[], object]

IMPLS = ("spec eager", "spec jit", "spec interp", "numpy", "jax eager", "jax jit")
# "spec interp": spec jit with config spec_jit_codegen off (the jaxpr
# interpreted equation by equation), timed beside the generated code.


class Missing(Exception):
    """A function a benchmark needs does not exist (yet) in the library under test."""


# ------------------------------------------------------------------ libraries


@dataclass(frozen=True)
class Api:
    """One library's NumPy-like namespace, with its lax for fallbacks."""

    name: str
    np: Any
    lax: Any = None
    mod: Any = None  # the library itself (grad, vmap, make_jaxpr); None for NumPy

    def fn(self, *names: str, lax: str | None = None) -> Fn:
        """The first of ``names`` in the namespace (else ``lax.<lax>``), or Missing."""
        for n in names:
            f = getattr(self.np, n, None)
            if callable(f):
                return f  # type: ignore[no-any-return]
        if lax is not None and self.lax is not None:
            f = getattr(self.lax, lax, None)
            if callable(f):
                return f  # type: ignore[no-any-return]
        wanted = " / ".join([f"{self.name}.{n}" for n in names]
                            + ([f"{self.name}.lax.{lax}"] if lax else []))
        raise Missing(f"no {wanted}")


@dataclass(frozen=True)
class Lib:
    """A library that runs programs: its Api, array constructor and jit."""

    api: Api
    to_array: Callable[[np.ndarray], Any]
    jit: Callable[[Fn], Fn]


def _spec_lib() -> Lib:
    import spec
    import spec.lax
    import spec.numpy
    return Lib(Api("spec.numpy", spec.numpy, spec.lax, spec), spec.numpy.asarray,
               spec.jit)


def _interpreted_jit(f: Fn) -> Fn:
    """spec's jit with the program interpreted rather than generated: the
    flag is set around each call (directly, not through ``config.update``,
    whose epoch bump would add its own cost to every call)."""
    import spec
    jitted = spec.jit(f)
    values = spec.config._values

    def call(*args: Any) -> Any:
        values["spec_jit_codegen"] = False
        try:
            return jitted(*args)
        finally:
            values["spec_jit_codegen"] = True
    return call


def _spec_interp_lib() -> Lib:
    spec = _spec_lib()
    return Lib(spec.api, spec.to_array, _interpreted_jit)


def _jax_lib() -> Lib | str:
    """JAX on CPU, or why it cannot be used (its columns then read n/a)."""
    try:
        import jax
        import jax.numpy
    except ImportError as err:
        return f"jax not importable: {err}"
    return Lib(Api("jax.numpy", jax.numpy, jax.lax, jax), jax.device_put, jax.jit)


NUMPY_API = Api("numpy", np)

# ------------------------------------------------------------------- programs
# A program maps an Api to a function of arrays. Functions are looked up by
# name, not reached through operators, so that a missing one reads "n/a".


def _unary(name: str) -> Callable[[Api], Fn]:
    def make(api: Api) -> Fn:
        return api.fn(name)
    return make


def _binary(name: str) -> Callable[[Api], Fn]:
    return _unary(name)


def _plus_operator(api: Api) -> Fn:
    def f(x: Any, y: Any) -> Any:
        return x + y  # the Array operator: dispatch through __add__ to add
    return f


def _scale(api: Api) -> Fn:
    mul = api.fn("multiply")

    def f(x: Any) -> Any:
        return mul(x, 2.0)  # a weak Python scalar: the result stays float32
    return f


def _chain4(api: Api) -> Fn:
    add, mul, sin = api.fn("add"), api.fn("multiply"), api.fn("sin")

    def f(x: Any, y: Any) -> Any:
        return mul(sin(add(mul(x, y), x)), 0.5)
    return f


def _chain6(api: Api) -> Fn:
    add, mul, sin = api.fn("add"), api.fn("multiply"), api.fn("sin")
    exp, sub = api.fn("exp"), api.fn("subtract")

    def f(x: Any, y: Any) -> Any:
        return sub(mul(exp(sin(add(mul(x, y), x))), 0.5), y)
    return f


def _program20(api: Api) -> Fn:
    add, mul, sin = api.fn("add"), api.fn("multiply"), api.fn("sin")

    def f(x: Any, y: Any) -> Any:
        for _ in range(5):  # 4 ops a round: 20 elementwise ops in all
            x = mul(sin(add(mul(x, y), x)), 0.5)
        return x
    return f


def _matmul(api: Api) -> Fn:
    return api.fn("matmul", "dot", lax="dot")


def _mlp_grad(api: Api, of_jit: bool = False) -> Fn:
    """The gradient of a 3-layer tanh MLP's squared-output loss w.r.t. its
    weights: ``grad`` of the forward pass (``of_jit``: of the jitted forward
    pass, so each call transforms a jit call), or, for NumPy, backprop by
    hand."""
    if api.mod is None:
        return _mlp_backprop_numpy

    def loss(x: Any, w1: Any, w2: Any, w3: Any) -> Any:
        tanh, matmul, sum_ = api.fn("tanh"), api.fn("matmul"), api.fn("sum")
        out = matmul(tanh(matmul(tanh(matmul(x, w1)), w2)), w3)
        return sum_(out * out) * 0.5

    g = api.mod.grad(api.mod.jit(loss) if of_jit else loss, argnums=(1, 2, 3))
    stack = api.fn("stack")
    # One array out (the three gradients stacked), so every column returns
    # the same kind of value; the copy costs all columns alike.
    return lambda *args: stack(g(*args))


def _per_example(api: Api) -> Fn:
    """One example's computation: a tanh layer and a softmax-like normaliser
    on a vector of 64."""
    tanh, exp, sum_, matmul = api.fn("tanh"), api.fn("exp"), api.fn("sum"), api.fn("matmul")

    def f(w: Any, x: Any) -> Any:
        h = tanh(matmul(w, x))
        e = exp(h)
        return e / sum_(e)
    return f


def _vmapped(api: Api, of_jit: bool = False) -> Fn:
    """``vmap`` of the per-example function (``of_jit``: of its jit) over a
    batch of inputs; NumPy does the same arithmetic vectorised by hand."""
    f = _per_example(api)
    if api.mod is None:
        def by_hand(w: Any, xs: Any) -> Any:
            e = np.exp(np.tanh(xs @ w.T))
            return e / e.sum(axis=1, keepdims=True)
        return by_hand
    return api.mod.vmap(api.mod.jit(f) if of_jit else f,  # type: ignore[no-any-return]
                        in_axes=(None, 0))


def _looped(api: Api) -> Fn:
    """The per-example function applied in a Python loop and stacked."""
    f = _per_example(api)
    stack = api.fn("stack")
    return lambda w, xs: stack([f(w, x) for x in xs])


def _chain_program(n_ops: int) -> Callable[[Api], Fn]:
    """A straight-line program of ``n_ops`` elementwise operations."""
    def make(api: Api) -> Fn:
        sin, mul, add = api.fn("sin"), api.fn("multiply"), api.fn("add")

        def f(x: Any) -> Any:
            for k in range(n_ops // 3):
                x = add(mul(sin(x), 0.5), x)
            return x
        return f
    return make


def _tracing(n_ops: int) -> Callable[[Api], Fn]:
    """Staging a program of ``n_ops`` equations (``make_jaxpr``); NumPy has
    nothing to trace. The result is a jaxpr, so its check is skipped."""
    def make(api: Api) -> Fn:
        if api.mod is None:
            raise Missing("numpy has no tracing")
        make_prog = _chain_program(n_ops)

        def stage(x: Any) -> _Staged:
            # A new function each call: JAX caches traces per function object.
            return _Staged(api.mod.make_jaxpr(make_prog(api))(x))
        stage.no_jit = True  # type: ignore[attr-defined]  # tracing is not jitted
        return stage
    return make


class _Staged:
    """A traced jaxpr, waited on like an array (there is nothing to wait for)."""

    def __init__(self, jaxpr: Any) -> None:
        self.jaxpr = jaxpr

    def block_until_ready(self) -> _Staged:
        return self


def _scan_loop(api: Api) -> Fn:
    """``steps`` iterations of a small carry update: ``lax.scan`` (spec and
    JAX), a Python loop for NumPy. Per-iteration overhead dominates."""
    if api.mod is None:
        def loop(c: Any, xs: Any) -> Any:
            for x in xs:
                c = c * np.float32(0.5) + np.sin(x)
            return c
        return loop
    sin = api.fn("sin")

    def body(c: Any, x: Any) -> Any:
        return c * 0.5 + sin(x), None

    return lambda c, xs: api.mod.lax.scan(body, c, xs)[0]


def _mlp_backprop_numpy(x: Any, w1: Any, w2: Any, w3: Any) -> Any:
    h1 = np.tanh(x @ w1)
    h2 = np.tanh(h1 @ w2)
    out = h2 @ w3
    d2 = (out @ w3.T) * (1 - h2 * h2)
    d1 = (d2 @ w2.T) * (1 - h1 * h1)
    return np.stack((x.T @ d1, h1.T @ d2, h2.T @ out))


# --------------------------------------------------------------------- config


@dataclass(frozen=True)
class Sizes:
    small: int  # elements of the dispatch-overhead arrays
    large: int  # elements of the throughput arrays
    matmul: int  # n of the n x n @ n x n product
    mlp: tuple[int, int]  # (batch, width) of the MLP gradient benchmark
    batch: int  # examples of the vmap benchmark
    steps: int  # iterations of the scan benchmark
    program: tuple[int, int]  # equation counts of the tracing/evaluation benchmarks
    min_time: float  # seconds one timed run lasts at least
    repeat: int  # timed runs per implementation; the minimum is kept


FULL = Sizes(small=8, large=2_000_000, matmul=512, mlp=(256, 512), batch=1024,
             program=(1_000, 10_000), steps=10_000, min_time=0.1, repeat=7)
QUICK = Sizes(small=8, large=4096, matmul=16, mlp=(4, 8), batch=8, program=(30, 300),
              steps=20, min_time=0.0005, repeat=1)

Inputs = Callable[[Sizes, np.random.Generator], list[np.ndarray]]


def _vectors(count: int, which: str) -> Inputs:
    def make(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
        n = sizes.small if which == "small" else sizes.large
        return [rng.random(n, dtype=np.float32) for _ in range(count)]
    return make


def _square_matrices(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    n = sizes.matmul
    return [rng.random((n, n), dtype=np.float32) for _ in range(2)]


def _mlp_inputs(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    batch, width = sizes.mlp
    scale = np.float32(1 / np.sqrt(width))
    x = rng.standard_normal((batch, width), dtype=np.float32)
    return [x] + [rng.standard_normal((width, width), dtype=np.float32) * scale
                  for _ in range(3)]


def _batch_inputs(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    w = rng.standard_normal((64, 64), dtype=np.float32) / np.float32(8)
    return [w, rng.standard_normal((sizes.batch, 64), dtype=np.float32)]


def _scan_inputs(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.random(8, dtype=np.float32), rng.random((sizes.steps, 8), dtype=np.float32)]


def _small_matrices(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.random((sizes.small, sizes.small), dtype=np.float32) for _ in range(2)]


def _program_input(sizes: Sizes, rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.random(8, dtype=np.float32)]


@dataclass(frozen=True)
class Bench:
    name: str
    group: str  # dispatch, jit overhead, throughput, autodiff, vmap, control flow, tracing
    modes: tuple[str, ...]  # the spec modes shown, one table row each
    program: Callable[[Api], Fn]
    inputs: Inputs
    # spec's operands laid out over this many virtual devices (one mesh
    # axis, rows split), 0 for one device; the NumPy program runs on the
    # whole arrays, JAX is not measured (its device count is fixed at start).
    devices: int = 0


def _shape(kind: str, sizes: Sizes) -> str:
    if kind == "matmul":
        return f"f32[{sizes.matmul},{sizes.matmul}]"
    return f"f32[{sizes.small if kind == 'small' else sizes.large}]"


def benchmarks(sizes: Sizes) -> list[Bench]:
    s, big, mm = _shape("small", sizes), _shape("large", sizes), _shape("matmul", sizes)
    small1, small2 = _vectors(1, "small"), _vectors(2, "small")
    large1, large2 = _vectors(1, "large"), _vectors(2, "large")
    eager, both = ("eager",), ("eager", "jit")
    return [
        Bench(f"add(x,y) {s}", "dispatch", eager, _binary("add"), small2),
        Bench(f"x + y {s}", "dispatch", eager, _plus_operator, small2),
        Bench(f"sin(x) {s}", "dispatch", eager, _unary("sin"), small1),
        Bench(f"multiply(x,2.0) {s}", "dispatch", eager, _scale, small1),
        Bench(f"program 20 ops {s}", "jit overhead", both, _program20, small2),
        Bench(f"program 20 ops f32[{sizes.small},{sizes.small}] over 2 devices (rows split)",
              "sharded", ("jit",), _program20, _small_matrices, devices=2),
        Bench(f"add {big}", "throughput", eager, _binary("add"), large2),
        Bench(f"mul {big}", "throughput", eager, _binary("multiply"), large2),
        Bench(f"sin {big}", "throughput", eager, _unary("sin"), large1),
        Bench(f"exp {big}", "throughput", eager, _unary("exp"), large1),
        Bench(f"chain mul/add/sin/mul {big}", "throughput", both, _chain4, large2),
        Bench(f"chain +exp/sub (6 ops) {big}", "throughput", both, _chain6, large2),
        Bench(f"matmul {mm}@{mm}", "throughput", eager, _matmul, _square_matrices),
        Bench(f"grad 3-layer MLP batch {sizes.mlp[0]} width {sizes.mlp[1]}", "autodiff", both,
              _mlp_grad, _mlp_inputs),
        Bench(f"grad(jit(loss)) 3-layer MLP batch {sizes.mlp[0]} width {sizes.mlp[1]}",
              "autodiff", eager, functools.partial(_mlp_grad, of_jit=True), _mlp_inputs),
        Bench(f"vmap(f) batch {sizes.batch} (numpy: by hand)", "vmap", both, _vmapped,
              _batch_inputs),
        Bench(f"vmap(jit(f)) batch {sizes.batch} (numpy: by hand)", "vmap", eager,
              functools.partial(_vmapped, of_jit=True), _batch_inputs),
        Bench(f"Python loop of f, batch {sizes.batch}", "vmap", eager, _looped, _batch_inputs),
        Bench(f"scan of {sizes.steps} steps, carry f32[8] (numpy: loop)", "control flow", both,
              _scan_loop, _scan_inputs),
        *(Bench(f"make_jaxpr of {n} equations", "tracing", eager, _tracing(n),
                _program_input) for n in sizes.program),
        *(Bench(f"jit call of {n} equations f32[8]", "tracing", ("jit",), _chain_program(n),
                _program_input) for n in sizes.program),
    ]


# --------------------------------------------------------------------- timing


def _time(thunk: Thunk, number: int) -> float:
    """Seconds for ``number`` calls, with the collector off (as timeit)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            thunk()
        return time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()


def _calibrate(thunk: Thunk, min_time: float) -> int:
    """Iterations that make one timed run last at least ``min_time``."""
    number = 1
    while True:
        elapsed = _time(thunk, number)
        if elapsed >= min_time:
            return number
        guess = int(number * min_time / max(elapsed, 1e-9) * 1.1) + 1
        number = max(number * 2, min(guess, number * 100))


def _measure(thunks: dict[str, Thunk], sizes: Sizes) -> dict[str, float]:
    """Seconds per call of each thunk: the minimum over interleaved repeats."""
    numbers = {k: _calibrate(t, sizes.min_time) for k, t in thunks.items()}
    best = {k: float("inf") for k in thunks}
    for _ in range(sizes.repeat):
        for k, t in thunks.items():
            best[k] = min(best[k], _time(t, numbers[k]) / numbers[k])
    return best


# -------------------------------------------------------------------- running


@dataclass
class Cell:
    """One implementation of one benchmark: a time, or why there is none."""

    seconds: float | None = None
    status: str = "ok"  # "ok", "n/a" or "error"
    detail: str = ""


@dataclass
class Row:
    group: str
    name: str
    mode: str  # the spec mode of this row; spec/jax compares with JAX in the same mode
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def spec(self) -> Cell:
        return self.cells[f"spec {self.mode}"]

    @property
    def jax(self) -> Cell:
        return self.cells[f"jax {self.mode}"]

    def ratio(self, other: Cell) -> float | None:
        if self.spec.seconds is None or other.seconds is None:
            return None
        return self.spec.seconds / other.seconds

    @property
    def target(self) -> str:
        """Whether this row meets its stated target ("" where none is set)."""
        limit = self.numpy_limit
        if limit is not None:
            r = self.ratio(self.cells["numpy"])
        elif self.group == "dispatch" or (self.group == "jit overhead" and self.mode == "eager"):
            # eager per-op overhead: below JAX eager's; one op under 3 us
            r, limit = self.ratio(self.jax), 1.0
            if self.group == "dispatch" and self.spec.seconds is not None \
                    and self.spec.seconds >= 3e-6:
                return "miss"
        else:
            return ""
        if r is None:
            return "n/a"
        return "ok" if r <= limit else "miss"

    @property
    def numpy_limit(self) -> float | None:
        """The largest spec/numpy this row's target allows (None: no such target)."""
        if self.group == "vmap":
            return None if self.name.startswith("Python loop") else 1.3
        if self.group == "throughput":
            # Big arrays: the interpreter should cost nothing next to NumPy.
            return 1.1 if self.name.startswith("matmul") else 1.05
        if self.group == "autodiff":
            return 1.2
        if self.mode == "jit" and (self.group in ("jit overhead", "control flow")
                                   or self.name.startswith("jit call")):
            # small arrays under jit: the generated code against the NumPy calls
            return 1.5
        return None

    def as_json(self) -> dict[str, Any]:
        return {
            "group": self.group, "name": self.name, "mode": self.mode,
            "seconds": {k: c.seconds for k, c in self.cells.items()},
            "status": {k: c.status for k, c in self.cells.items()},
            "detail": {k: c.detail for k, c in self.cells.items() if c.detail},
            "spec_over_numpy": self.ratio(self.cells["numpy"]),
            "spec_over_jax": self.ratio(self.jax),
            "target": self.target,
        }


def _failure(err: BaseException) -> Cell:
    if isinstance(err, Missing):
        return Cell(None, "n/a", str(err))
    text = str(err).splitlines()[0] if str(err) else ""
    return Cell(None, "error", f"{type(err).__name__}: {text}"[:200])


def _check_same(out: Any, ref: np.ndarray) -> None:
    """The implementations must do the same arithmetic: same dtype, close values."""
    got = np.asarray(out)
    if got.dtype != ref.dtype or got.shape != ref.shape:
        raise ValueError(f"result {got.dtype}{list(got.shape)} differs from NumPy's "
                         f"{ref.dtype}{list(ref.shape)}")
    if not np.allclose(got, ref, rtol=1e-3, atol=1e-4):
        raise ValueError("result values differ from NumPy's")


def _prepare(bench: Bench, impl: str, lib: Lib | str | None, arrays: list[np.ndarray],
             ref: np.ndarray | None) -> Thunk | Cell:
    """A zero-argument thunk running the benchmark once (warmed up and checked)."""
    if isinstance(lib, str):
        return Cell(None, "n/a", lib)
    try:
        if lib is None:  # plain NumPy
            f = bench.program(NUMPY_API)
            xs: Sequence[Any] = arrays
            return lambda: f(*xs)
        if bench.devices and not impl.startswith("spec"):
            return Cell(None, "n/a", "JAX's device count is fixed when it starts")
        f = bench.program(lib.api)
        if impl.endswith("jit") or impl.endswith("interp"):
            if getattr(f, "no_jit", False):
                return Cell(None, "n/a", "not a jit program")
            f = lib.jit(f)
        xs = [lib.to_array(a) for a in arrays]
        if bench.devices:
            xs = _spread(xs, bench.devices)
        out = f(*xs).block_until_ready()  # warms up (and compiles, for jit)
        if ref is not None:
            _check_same(out, ref)
    except Exception as err:  # noqa: BLE001 -- any failure becomes a table cell, not a crash
        return _failure(err)
    # The method, not jax.block_until_ready: that one flattens a pytree first,
    # which would add to JAX's per-call time.
    return lambda: f(*xs).block_until_ready()


def _spread(xs: list[Any], devices: int) -> list[Any]:
    """spec arrays laid out over ``devices`` virtual devices, rows split."""
    import spec
    mesh = spec.make_mesh((devices,), ("X",))
    sharding = spec.sharding.NamedSharding(mesh, spec.sharding.PartitionSpec("X"))
    return [spec.device_put(x, sharding) for x in xs]


def run_bench(bench: Bench, sizes: Sizes, spec_lib: Lib, jax_lib: Lib | str,
              interp_lib: Lib | None = None) -> list[Row]:
    if not bench.devices:
        return _run_bench(bench, sizes, spec_lib, jax_lib, interp_lib)
    import spec
    before = spec.config.jax_num_cpu_devices  # (virtual devices for this benchmark only)
    spec.config.update("jax_num_cpu_devices", bench.devices)
    try:
        return _run_bench(bench, sizes, spec_lib, jax_lib, interp_lib)
    finally:
        spec.config.update("jax_num_cpu_devices", before)


def _run_bench(bench: Bench, sizes: Sizes, spec_lib: Lib, jax_lib: Lib | str,
               interp_lib: Lib | None = None) -> list[Row]:
    arrays = bench.inputs(sizes, np.random.default_rng(0))
    try:
        ref: np.ndarray | None = np.asarray(bench.program(NUMPY_API)(*arrays))
    except Exception:  # noqa: BLE001 -- the numpy cell reports it below
        ref = None
    libs: dict[str, Lib | str | None] = {
        "spec eager": spec_lib, "spec jit": spec_lib, "spec interp": interp_lib,
        "numpy": None, "jax eager": jax_lib, "jax jit": jax_lib}
    modes = set(bench.modes) | ({"interp"} if "jit" in bench.modes and interp_lib else set())
    wanted = [i for i in IMPLS if not i.startswith("spec") or i.split()[1] in modes]
    prepared = {i: _prepare(bench, i, libs[i], arrays, ref) for i in wanted}
    thunks = {i: p for i, p in prepared.items() if not isinstance(p, Cell)}
    times = _measure(thunks, sizes)
    cells = {i: (p if isinstance(p, Cell) else Cell(times[i])) for i, p in prepared.items()}
    return [Row(bench.group, bench.name, mode, cells) for mode in bench.modes]


def run(sizes: Sizes, select: str = "",
        progress: Callable[[str], None] | None = None, interpreter: bool = True) -> list[Row]:
    spec_lib, jax_lib = _spec_lib(), _jax_lib()
    interp_lib = _spec_interp_lib() if interpreter else None
    rows: list[Row] = []
    for bench in benchmarks(sizes):
        if select and select not in bench.name:
            continue
        if progress is not None:
            progress(bench.name)
        rows.extend(run_bench(bench, sizes, spec_lib, jax_lib, interp_lib))
    return rows


# ------------------------------------------------------------------- printing


def _fmt_time(cell: Cell) -> str:
    s = cell.seconds
    if s is None:
        return cell.status
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e3:.2f} ms"


def _fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}x"


HEADER = ("group", "benchmark", "spec mode", "spec", "spec interp", "numpy", "jax eager",
          "jax jit", "interp/numpy", "spec/numpy", "spec/jax", "target")


def table_lines(rows: Sequence[Row]) -> list[str]:
    body = [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in [HEADER, *body]) for i in range(len(HEADER))]

    def fmt(line: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) if i < 3 else c.rjust(w)
                          for i, (c, w) in enumerate(zip(line, widths))).rstrip()

    lines = [fmt(HEADER), "-+-".join("-" * w for w in widths)]
    lines += [fmt(line) for line in body]
    notes = sorted({f"{r.name} [{k}]: {c.status}: {c.detail}"
                    for r in rows for k, c in r.cells.items() if c.status != "ok"})
    if notes:
        lines += ["", "not measured:", *[f"  {n}" for n in notes]]
    return lines


def _interp_cells(r: Row) -> tuple[str, str]:
    """The interpreted jit's time and its ratio to NumPy (jit rows only)."""
    cell = r.cells.get("spec interp")
    if r.mode != "jit" or cell is None:
        return "", ""
    numpy = r.cells["numpy"].seconds
    ratio = None if cell.seconds is None or numpy is None else cell.seconds / numpy
    return _fmt_time(cell), _fmt_ratio(ratio)


def _cells(r: Row) -> tuple[str, ...]:
    interp, interp_ratio = _interp_cells(r)
    return (r.group, r.name, r.mode, _fmt_time(r.spec), interp, _fmt_time(r.cells["numpy"]),
            _fmt_time(r.cells["jax eager"]), _fmt_time(r.cells["jax jit"]), interp_ratio,
            _fmt_ratio(r.ratio(r.cells["numpy"])), _fmt_ratio(r.ratio(r.jax)), r.target)


def markdown_lines(rows: Sequence[Row]) -> list[str]:
    """The table as Markdown (for benchmarks/README.md)."""
    lines = ["| " + " | ".join(HEADER) + " |",
             "|" + "|".join(["---"] * 3 + ["---:"] * (len(HEADER) - 3)) + "|"]
    return lines + ["| " + " | ".join(_cells(r)) + " |" for r in rows]


def _loadavg() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def metadata(sizes: Sizes) -> dict[str, Any]:
    try:
        import jax
        jax_version: str | None = jax.__version__
    except ImportError:
        jax_version = None
    return {
        "python": sys.version.split()[0], "numpy": np.__version__, "jax": jax_version,
        "jax_platforms": os.environ.get("JAX_PLATFORMS"), "machine": platform.machine(),
        "processor": platform.processor(), "cpu_count": os.cpu_count(),
        "loadavg": _loadavg(), "sizes": sizes.__dict__,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and iterations: checks the benchmarks run, "
                             "times mean little")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("-k", metavar="SUBSTRING", default="",
                        help="only benchmarks whose name contains SUBSTRING")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="timed runs per implementation (the minimum is kept)")
    parser.add_argument("--min-time", type=float, metavar="SECONDS",
                        help="least duration of one timed run")
    parser.add_argument("--plot", nargs="?", const="benchmarks/benchmarks.png", metavar="PNG",
                        help="also measure cost against program size and write the plot "
                             "(default benchmarks/benchmarks.png; needs matplotlib)")
    parser.add_argument("--no-interpreter", action="store_true",
                        help="skip the 'spec interp' column (jit with spec_jit_codegen off)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.repeat is not None:
        sizes = dataclasses.replace(sizes, repeat=max(1, args.repeat))
    if args.min_time is not None:
        sizes = dataclasses.replace(sizes, min_time=max(0.0, args.min_time))
    meta = metadata(sizes)

    def progress(name: str) -> None:
        print(f"  running {name} ...", file=sys.stderr, flush=True)

    rows = run(sizes, args.k, progress, interpreter=not args.no_interpreter)
    meta["loadavg_after"] = _loadavg()
    print(f"spec vs NumPy {meta['numpy']} vs JAX {meta['jax']} "
          f"(JAX_PLATFORMS={meta['jax_platforms']}), {meta['cpu_count']} CPUs, "
          f"load average before {meta['loadavg']}")
    print("times: min over repeats of the mean per call; spec/jax compares with JAX in the "
          "row's spec mode")
    print("targets: spec/numpy <= 1.5x for small-array jit (programs, equations, scan), "
          "1.05x elementwise and 1.1x matmul throughput, 1.2x grad, 1.3x vmap; eager "
          "dispatch < 3 us and below JAX eager")
    if args.quick:
        print("--quick: tiny sizes and iterations; the times and targets mean nothing")
    print()
    print("\n".join(markdown_lines(rows) if args.markdown else table_lines(rows)))
    result: dict[str, Any] = {"meta": meta, "rows": [r.as_json() for r in rows]}
    if args.plot:
        from benchmarks import plot
        progress("cost against program size")
        points = plot.scaling(plot.QUICK_SCALING_SIZES if args.quick else plot.SCALING_SIZES,
                              repeat=1 if args.quick else 3)
        print()
        print("\n".join(plot.scaling_lines(points)))
        plot.plot(rows, points, args.plot)
        print(f"\nplot written to {args.plot}")
        result["scaling"] = [dataclasses.asdict(p) for p in points]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
