"""Fuzzing spec against real JAX: ``python -m spec.testing.fuzz``.

Random well-typed programs (``spec.testing.programs``) run in spec and in
JAX in each mode: eager, ``jit``, ``make_jaxpr`` (the printed text must be
the same), ``grad`` (of the sum), ``jvp`` (tangents of ones), ``vmap`` (over
two input sets), ``linearize`` and ``linearize_legacy`` (the primal result,
the linearized map at tangents of ones and the VJP of a cotangent of ones,
with ``jax_use_direct_linearize`` on and off: both paths of reverse mode)
and ``parse`` (JAX's jaxpr read by ``spec.parse_jaxpr``, type-checked and
run by spec; weak types not compared, as the text does not show them). On a
mesh of two virtual devices (axis ``X``, explicit): ``sharded`` (``jit`` of
inputs placed along ``X`` where their first axis divides, the results'
shardings compared too), ``sharded_grad`` (the same for the gradient) and
``shard_map`` (the program per device over the two input sets of ``vmap``,
as a ``shard_map`` along ``X``, and collectives of its results); the command
line gives both libraries four CPU devices, and in a process where JAX
already runs on one these modes are reported as skipped. Each mode compares
shapes, dtypes, weak types and values (float32 to ``--rtol`` of the result's
magnitude, 2e-5 by default: up to fifteen ops compound rounding, and
transcendental functions differ from XLA's in the last bit on some inputs),
and exception classes when a side raises. A mode's first failure is shrunk
by hypothesis to a minimal program and printed as a copy-paste reproduction.
The summary gives programs tried, disagreements (both ran, results differ,
or only JAX raised), internal errors (spec raised an exception class JAX
does not raise) and the programs both rejected with the same class (a grad
through a while loop, a sharding that needs an explicit out_sharding) per
mode; the exit status is 1 when any mode failed.

``--x64`` fuzzes float64 programs (the values, and the float32 and
complex64 ones inside ops, twice as wide) with ``jax_enable_x64`` on in both
libraries, to ``--rtol`` 1e-12 by default.

``--bad-inputs N`` runs the bad-input mode instead (``spec.testing.fuzz_inputs``): N random
calls of the public API with wrong arguments, where spec must raise JAX's exception class.

JAX must be installed (the oracle); spec itself never imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec._src.core.interpreter import check_jaxpr, eval_jaxpr
from spec.testing import Program, fuzz_inputs, programs

# The modes on a mesh of two virtual devices: they run where both libraries have two.
SHARDED_MODES = ("sharded", "sharded_grad", "shard_map")
MODES = ("eager", "jit", "make_jaxpr", "grad", "jvp", "vmap", "linearize", "linearize_legacy",
         "parse", *SHARDED_MODES)


class Disagreement(AssertionError):
    """spec and JAX give different results (or only JAX raised)."""


class InternalError(AssertionError):
    """spec raised where JAX did not, or raised another exception class."""


@dataclasses.dataclass
class Outcome:
    tried: int = 0
    both_raised: int = 0  # programs JAX and spec both reject, with the same class
    failure: str | None = None
    kind: str | None = None


def _libs() -> tuple[Any, Any, Any, Any]:
    # JAX is the oracle, imported when a check runs: importing spec (even
    # this module) never imports JAX.
    import jax
    import jax.numpy as jnp  # (the oracle, as above)
    return spec, snp, jax, jnp


@contextlib.contextmanager
def linearize_path(lib: Any, direct: bool) -> Iterator[None]:
    """``lib``'s reverse mode through direct linearize or through the JVP and partial
    evaluation (``jax_use_direct_linearize``), restored afterwards."""
    before = lib.config.jax_use_direct_linearize
    lib.config.update("jax_use_direct_linearize", direct)
    try:
        yield
    finally:
        lib.config.update("jax_use_direct_linearize", before)


def _linearized(lib: Any, f: Callable[..., Any], xs: list[np.ndarray]) -> Any:
    y, f_lin = lib.linearize(f, *xs)
    _, f_vjp = lib.vjp(f, *xs)
    return y, f_lin(*(np.ones_like(x) for x in xs)), f_vjp(np.ones_like(np.asarray(y)))


@dataclasses.dataclass(frozen=True)
class Sharded:
    """Results and their partition specs, one text per leaf."""
    values: Any
    specs: tuple[str, ...]


def _spec_text(leaf: Any) -> str:
    spec = leaf.sharding.spec
    entries = [*spec, *[None] * (np.ndim(leaf) - len(spec))]
    extra = [f"{k}={sorted(getattr(spec, k))}" for k in ("unreduced", "reduced")
             if getattr(spec, k, None)]
    return f"P{tuple(entries)}" + (f"{{{', '.join(extra)}}}" if extra else "")


def _mesh(lib: Any) -> Any:
    return lib.make_mesh((2,), ("X",), axis_types=(lib.sharding.AxisType.Explicit,))


def _sharded_result(lib: Any, out: Any) -> Sharded:
    return Sharded(out, tuple(_spec_text(leaf) for leaf in lib.tree_util.tree_leaves(out)))


def run_sharded(lib: Any, np_: Any, f: Callable[..., Any], xs: list[np.ndarray], grad: bool
                ) -> Sharded:
    """``jit`` of ``f`` (or of its sum's gradient) on a two-device mesh, each input
    split along ``X`` where its first axis is nonempty and divides in two, replicated
    otherwise. (An empty axis is not split: JAX's reshape sharding rule fails on one
    with an internal IndexError, where spec raises JAX's ShardingTypeError.)"""
    P = lib.sharding.PartitionSpec
    mesh = _mesh(lib)
    with lib.set_mesh(mesh):
        placed = [lib.device_put(x, lib.sharding.NamedSharding(
            mesh, P("X") if x.ndim and x.shape[0] and x.shape[0] % 2 == 0 else P()))
            for x in xs]
        g = lib.grad(lambda *a: np_.sum(f(*a)), argnums=tuple(range(len(xs)))) if grad else f
        return _sharded_result(lib, lib.jit(g)(*placed))


def run_shard_map(lib: Any, f: Callable[..., Any], xs: list[np.ndarray]) -> Sharded:
    """``f`` per device under ``shard_map`` along ``X``, device ``i`` running it on the
    ``i``-th of the two input sets ``vmap`` mode stacks; the per-device results, and
    the collectives of them along ``X``: ``psum``, ``pmax``, ``all_gather``, a
    ``ppermute`` swapping the two devices' results and a tiled ``psum_scatter``
    along a new leading axis of two."""
    P = lib.sharding.PartitionSpec
    lax = lib.lax
    mesh = _mesh(lib)
    split = lib.sharding.NamedSharding(mesh, P("X"))
    stacked = [lib.device_put(np.stack([x, x[::-1] if x.ndim else -x]), split) for x in xs]

    def body(*a: Any) -> Any:
        out = f(*(b[0] for b in a))
        pair = lib.numpy.stack([out, out * 2])
        return (out[None], lax.psum(out, "X"), lax.pmax(out, "X"), lax.all_gather(out, "X")[None],
                lax.ppermute(out, "X", [(0, 1), (1, 0)])[None],
                lax.psum_scatter(pair, "X", tiled=True))
    per_device = lib.shard_map(body, mesh=mesh, in_specs=tuple(P("X") for _ in xs),
                               out_specs=(P("X"), P(), P(), P("X"), P("X"), P("X")))
    return _sharded_result(lib, lib.jit(per_device)(*stacked))


def _run(mode: str, lib: Any, np_: Any, prog: Program, xs: list[np.ndarray]) -> Any:
    def f(*a: Any) -> Any:
        return prog(np_, *a)
    if mode in ("sharded", "sharded_grad"):
        return run_sharded(lib, np_, f, xs, grad=mode == "sharded_grad")
    if mode == "shard_map":
        return run_shard_map(lib, f, xs)
    if mode in ("linearize", "linearize_legacy"):
        with linearize_path(lib, direct=mode == "linearize"):
            return _linearized(lib, f, xs)
    if mode == "eager":
        return f(*(np_.asarray(x) for x in xs))
    if mode == "jit":
        return lib.jit(f)(*xs)
    if mode == "make_jaxpr":
        return str(lib.make_jaxpr(f)(*xs))
    if mode == "grad":
        return lib.grad(lambda *a: np_.sum(f(*a)), argnums=tuple(range(len(xs))))(*xs)
    if mode == "jvp":
        return lib.jvp(f, tuple(xs), tuple(np.ones_like(x) for x in xs))
    if mode == "vmap":
        return lib.vmap(f)(*(np.stack([x, x[::-1] if x.ndim else -x]) for x in xs))
    raise ValueError(f"unknown mode {mode!r}")


def _parse_and_run(spec: Any, jax: Any, jnp: Any, prog: Program, xs: list[np.ndarray]
                   ) -> tuple[Any, Any]:
    def f(*a: Any) -> Any:
        return prog(jnp, *a)
    closed = jax.make_jaxpr(f)(*xs)
    parsed = spec.parse_jaxpr(str(closed), consts=[np.asarray(c) for c in closed.consts])
    check_jaxpr(parsed)
    return eval_jaxpr(parsed, parsed.consts, *xs), jax.jit(f)(*xs)


def _leaves(x: Any, lib: Any) -> list[Any]:
    return list(lib.tree_util.tree_leaves(x))


def _compare(ours: Any, theirs: Any, rtol: float, spec: Any, jax: Any,
             weak_types: bool = True) -> None:
    if isinstance(theirs, str):
        if ours != theirs:
            raise Disagreement(f"jaxpr text differs:\nspec:\n{ours}\nJAX:\n{theirs}")
        return
    a, b = _leaves(ours, spec), _leaves(theirs, jax)
    if len(a) != len(b):
        raise Disagreement(f"{len(a)} results in spec, {len(b)} in JAX")
    for k, (x, y) in enumerate(zip(a, b)):
        xa, ya = np.asarray(x), np.asarray(y)
        if xa.shape != ya.shape or xa.dtype != ya.dtype:
            raise Disagreement(f"result {k}: spec {xa.dtype}{list(xa.shape)}, "
                               f"JAX {ya.dtype}{list(ya.shape)}")
        wx, wy = getattr(x, "weak_type", None), getattr(y, "weak_type", None)
        if weak_types and wx is not None and wy is not None and bool(wx) != bool(wy):
            raise Disagreement(f"result {k}: weak_type {wx} in spec, {wy} in JAX")
        if xa.dtype.kind in "fc":
            # (the magnitude of the finite values: an infinity must match exactly)
            finite = np.abs(ya[np.isfinite(ya)])
            scale = max(1.0, float(np.max(finite, initial=0.0)))
            bad = ~np.isclose(xa, ya, rtol=rtol, atol=rtol * scale, equal_nan=True)
            if bad.any():
                i = tuple(int(j) for j in np.argwhere(bad)[0])
                raise Disagreement(f"result {k}: at {i} spec {xa[i]!r}, JAX {ya[i]!r}")
        elif not np.array_equal(xa, ya):
            raise Disagreement(f"result {k}: spec {xa!r}, JAX {ya!r}")


def check(mode: str, prog: Program, input_seed: int, rtol: float = 2e-5) -> bool:
    """Run ``prog`` in spec and JAX in ``mode``; raise Disagreement or
    InternalError when they differ. True when both raised the same class."""
    spec_, snp_, jax, jnp = _libs()
    xs = prog.inputs(input_seed)
    if mode == "parse":
        try:
            ours, theirs = _parse_and_run(spec_, jax, jnp, prog, xs)
        except Exception as err:  # noqa: BLE001 - reported with its class
            raise InternalError(f"{type(err).__name__}: {err}") from err
        # (jaxpr text never shows weak types: the parser's guess is no result of JAX's)
        _compare(ours, theirs, rtol, spec_, jax, weak_types=False)
        return False
    try:
        theirs = _run(mode, jax, jnp, prog, xs)
    except Exception as err:  # noqa: BLE001 - JAX rejects the program: spec must too
        theirs_err: Exception | None = err
    else:
        theirs_err = None
    try:
        ours = _run(mode, spec_, snp_, prog, xs)
    except Exception as err:  # noqa: BLE001 - compared by class with JAX's
        if theirs_err is None or type(err).__name__ != type(theirs_err).__name__:
            raise InternalError(f"spec raised {type(err).__name__}: {err}; JAX "
                                + ("ran" if theirs_err is None else
                                   f"raised {type(theirs_err).__name__}")) from err
        return True
    if theirs_err is not None:
        raise Disagreement(f"JAX raised {type(theirs_err).__name__}: {theirs_err}; spec ran")
    if isinstance(theirs, Sharded):
        if ours.specs != theirs.specs:
            raise Disagreement(f"result shardings: spec {', '.join(ours.specs)}; "
                               f"JAX {', '.join(theirs.specs)}")
        ours, theirs = ours.values, theirs.values
    _compare(ours, theirs, rtol, spec, jax)
    return False


_CALLS = {
    "eager": "f(*[{np}.asarray(x) for x in xs])",
    "jit": "{lib}.jit(f)(*xs)",
    "make_jaxpr": "{lib}.make_jaxpr(f)(*xs)",
    "grad": "{lib}.grad(lambda *a: {np}.sum(f(*a)), argnums=tuple(range(len(xs))))(*xs)",
    "jvp": "{lib}.jvp(f, tuple(xs), tuple(np.ones_like(x) for x in xs))",
    "vmap": "{lib}.vmap(f)(*[np.stack([x, x[::-1] if x.ndim else -x]) for x in xs])",
    "linearize": "_linearized({lib}, f, xs)",
    "linearize_legacy": "_linearized({lib}, f, xs)",
    "sharded": "run_sharded({lib}, {np}, f, xs, grad=False)",
    "sharded_grad": "run_sharded({lib}, {np}, f, xs, grad=True)",
    "shard_map": "run_shard_map({lib}, f, xs)",
}


def reproduction(mode: str, prog: Program, input_seed: int, message: str) -> str:
    """A script that shows the failure, spec and JAX side by side."""
    shapes = ", ".join(repr(tuple(s)) for s in prog.input_shapes)
    lines = [
        f"# spec.testing.fuzz, mode {mode}: {message.splitlines()[0][:200]}",
        "import numpy as np",
        "import jax, jax.numpy as jnp",
        "import spec, spec.numpy as snp",
        "from spec.testing import values_of",
        f"from spec._src.core.types import ArrayType, {prog.dtype}",
        "",
        prog.source().rstrip("\n"),
        "",
        f"xs = [values_of(ArrayType(s, {prog.dtype}), {input_seed} + i) "
        f"for i, s in enumerate([{shapes}])]",
    ]
    if prog.wide:
        lines[4:4] = ["jax.config.update('jax_enable_x64', True)",
                      "spec.config.update('jax_enable_x64', True)"]
    if mode == "parse":
        lines += ["closed = jax.make_jaxpr(lambda *a: program(jnp, *a))(*xs)",
                  "parsed = spec.parse_jaxpr(str(closed), consts=closed.consts)",
                  "from spec._src.core.interpreter import check_jaxpr, eval_jaxpr",
                  "check_jaxpr(parsed)",
                  "print('spec', eval_jaxpr(parsed, parsed.consts, *xs))",
                  "print('jax ', jax.jit(lambda *a: program(jnp, *a))(*xs))"]
    else:
        if mode in SHARDED_MODES:
            after_imports = lines.index("import spec, spec.numpy as snp") + 1
            lines[after_imports:after_imports] = [
                "jax.config.update('jax_num_cpu_devices', 4)",
                "spec.config.update('jax_num_cpu_devices', 4)",
                "from spec.testing.fuzz import run_sharded, run_shard_map"]
        if mode.startswith("linearize"):
            direct = mode == "linearize"
            lines += ["from spec.testing.fuzz import _linearized",
                      f"spec.config.update('jax_use_direct_linearize', {direct})",
                      f"jax.config.update('jax_use_direct_linearize', {direct})"]
        for lib, np_ in (("spec", "snp"), ("jax", "jnp")):
            lines.append(f"f = lambda *a: program({np_}, *a)")
            lines.append(f"print({lib!r}, {_CALLS[mode].format(lib=lib, np=np_)})")
    return "\n".join(lines) + "\n"


def fuzz_mode(mode: str, examples: int, seed_value: int, max_steps: int, rtol: float,
              ops: Sequence[str] | None = None, dtype: Any = np.float32) -> Outcome:
    """Up to ``examples`` programs of ``dtype`` values in ``mode``; the first
    failure, shrunk. float64 programs need ``jax_enable_x64`` on in both
    libraries (``x64``)."""
    outcome = Outcome()
    last_failure: list[tuple[Program, int, AssertionError]] = []

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              print_blob=False)
    @given(programs(max_steps=max_steps, ops=ops, dtype=np.dtype(dtype)), st.integers(0, 2**16))
    def run(prog: Program, input_seed: int) -> None:
        outcome.tried += 1
        try:
            outcome.both_raised += check(mode, prog, input_seed, rtol)
        except AssertionError as err:
            last_failure.append((prog, input_seed, err))
            raise

    try:
        run()
    except AssertionError:
        prog, input_seed, err = last_failure[-1]
        outcome.kind = "internal error" if isinstance(err, InternalError) else "disagreement"
        said = f"{type(err).__name__}: {err}".splitlines()
        outcome.failure = reproduction(mode, prog, input_seed, str(err)) + "".join(
            f"# {line}\n" for line in said)
    return outcome


def two_devices() -> bool:
    """Give spec and JAX four CPU devices where JAX has not started its backend yet;
    whether both now have at least two."""
    spec_, _, jax, _ = _libs()
    with contextlib.suppress(RuntimeError):  # JAX's backend already started
        jax.config.update("jax_num_cpu_devices", max(4, jax.config.jax_num_cpu_devices))
    if len(jax.devices()) < 2:
        return False
    spec_.config.update("jax_num_cpu_devices", max(4, spec_.config.jax_num_cpu_devices))
    return True


@contextlib.contextmanager
def x64(on: bool) -> Iterator[None]:
    """``jax_enable_x64`` set to ``on`` in spec and JAX for the block."""
    spec_, _, jax, _ = _libs()
    before = (spec_.config.jax_enable_x64, jax.config.jax_enable_x64)
    spec_.config.update("jax_enable_x64", on)
    jax.config.update("jax_enable_x64", on)
    try:
        yield
    finally:
        spec_.config.update("jax_enable_x64", before[0])
        jax.config.update("jax_enable_x64", before[1])


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec.testing.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200, help="programs per mode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=15, help="ops per program, at most")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated")
    parser.add_argument("--rtol", type=float, default=None,
                        help="relative tolerance (2e-5 for float32 programs, 1e-12 for "
                             "float64 ones)")
    parser.add_argument("--x64", action="store_true",
                        help="float64 programs, with jax_enable_x64 on in both libraries")
    parser.add_argument("--ops", default=None,
                        help="comma-separated names of spec.testing.PROGRAM_OPS (default: all)")
    parser.add_argument("--bad-inputs", type=int, default=0, metavar="N",
                        help="instead: N random calls of the public API with bad arguments, "
                             "exception classes compared with JAX's")
    args = parser.parse_args(argv)
    if args.bad_inputs:
        found = fuzz_inputs.campaign(args.bad_inputs, args.seed)
        fuzz_inputs.report(found, out)
        return 1 if found.failures else 0
    failed = 0
    rows: list[tuple[str, Outcome | None]] = []
    modes = args.modes.split(",")
    on_mesh = any(m in SHARDED_MODES for m in modes) and two_devices()
    for mode in modes:
        if mode in SHARDED_MODES and not on_mesh:
            rows.append((mode, None))
            continue
        rtol = args.rtol if args.rtol is not None else (1e-12 if args.x64 else 2e-5)
        with x64(args.x64):
            o = fuzz_mode(mode, args.examples, args.seed, args.max_steps, rtol,
                          None if args.ops is None else args.ops.split(","),
                          np.float64 if args.x64 else np.float32)
        rows.append((mode, o))
        if o.failure is not None:
            failed += 1
            out(o.failure)
    out(f"{'mode':<16} {'programs':>8} {'disagreements':>13} {'internal errors':>15} "
        f"{'both raised':>11}")
    for mode, row in rows:
        if row is None:
            out(f"{mode:<16} skipped: JAX runs on one device in this process")
            continue
        o = row
        out(f"{mode:<16} {o.tried:>8} {int(o.kind == 'disagreement'):>13} "
            f"{int(o.kind == 'internal error'):>15} {o.both_raised:>11}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
