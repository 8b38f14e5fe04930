"""Compiler options against JAX: the registry of XLA's option names (every name accepted, and
refused with XLA's message for a value of the wrong type), the value rules of each field type,
effort levels, the top-level-only rule, and the controlling-xla page's option cells.

JAX caches compilations by the options' values, and equal values of different types (True,
1, 1.0) share an entry; the probes below use a new lowering whenever a probe's options equal
an earlier one's, so that each JAX answer is its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
import spec.numpy as sjnp
from spec._src.core.xla_debug_options import ENUMS, OPTIONS

Outcome = tuple[str, str]
_CHECKS = ("INVALID_ARGUMENT: No such compile option", "INVALID_ARGUMENT: While setting option")


def _outcome(run: Callable[[], Any]) -> Outcome:
    """("ok", "") or the exception's class name and message. A JAX compile
    that passed the options' checks and then failed in XLA itself (an option
    that makes XLA read a missing file, say) counts as accepted: spec has
    no compiler behind the checks."""
    try:
        run()
    except Exception as e:  # noqa: BLE001 - the exception is the result compared
        message = str(e)
        if type(e).__name__ == "JaxRuntimeError" and not message.startswith(_CHECKS):
            return ("ok", "")
        return (type(e).__name__, message)
    return ("ok", "")


class _JaxProber:
    """Compiles one lowered JAX program with many option sets, lowering
    again when a set equals (==) one compiled before."""

    def __init__(self) -> None:
        self._fresh()

    def _fresh(self) -> None:
        self._lowered = jax.jit(lambda x: x * 2.0 + 1.0).lower(1.5)
        self._seen: list[dict[str, Any]] = []

    def __call__(self, options: dict[str, Any]) -> Outcome:
        with np.errstate(all="ignore"):
            repeated = any(options == s for s in self._seen)
        if repeated:
            self._fresh()
        self._seen.append(options)
        return _outcome(lambda: self._lowered.compile(compiler_options=options))


_SPEC_LOWERED = spec.jit(lambda x: x * 2.0 + 1.0).lower(1.5)


def _spec(options: dict[str, Any]) -> Outcome:
    return _outcome(lambda: _SPEC_LOWERED.compile(compiler_options=options))


@pytest.fixture(scope="module")
def prober() -> _JaxProber:
    return _JaxProber()


# A value of each field type that XLA takes, as the type's own Python type and as a string.
_GOOD = {"bool": False, "int32": 1, "int64": 1, "float": 0.5, "string": "", "enum": 0}
_GOOD_TEXT = {"bool": "False", "int32": " 2", "int64": "-3", "float": "1e3", "string": "",
              "enum": "0"}
# A value of another type, refused by each field type.
_BAD = {"bool": 1.5, "int32": "x", "int64": 1.5, "float": 1, "string": 1, "enum": "NOT_A_NAME",
        "message": 1}


def test_registry_is_xla_debug_options() -> None:
    assert len(OPTIONS) > 300
    assert {k for k, _, _ in OPTIONS.values()} <= {"bool", "int32", "int64", "float", "string",
                                                   "enum", "message"}
    assert all(e in ENUMS for _, _, e in OPTIONS.values() if e is not None)


@pytest.mark.parametrize("table", [_GOOD, _GOOD_TEXT])
def test_every_name_accepted(prober: _JaxProber, table: dict[str, Any]) -> None:
    """One compile with every option of the registry set: JAX applies them
    all before compiling, so a success means each name and value is taken."""
    options = {n: ("" if rep else table[k]) for n, (k, rep, _) in OPTIONS.items()
               if k != "message" or rep}
    assert prober(options) == ("ok", "")
    assert _spec(options) == ("ok", "")


def test_every_name_refuses_a_value_of_another_type(prober: _JaxProber) -> None:
    for name, (kind, _, _) in OPTIONS.items():
        options = {name: _BAD[kind]}
        expected = prober(options)
        assert expected[0] == "JaxRuntimeError", (name, expected)
        assert _spec(options) == expected, name


def test_every_enum_value_name(prober: _JaxProber) -> None:
    """Each enum field takes each of its value names (one compile per
    position in the enums)."""
    enums = {n: ENUMS[e] for n, (k, _, e) in OPTIONS.items() if k == "enum" and e}
    for i in range(max(len(v) for v in enums.values())):
        options = {n: names[i] for n, names in enums.items() if i < len(names)}
        assert prober(options) == _spec(options) == ("ok", ""), i


_FIELDS = {"bool": "xla_hlo_pass_fix_detect_cycles", "int32": "xla_gpu_autotune_level",
           "int64": "xla_gpu_autotune_max_solutions", "float": "xla_gpu_autotune_gemm_rtol",
           "string": "xla_cpu_max_isa", "enum": "xla_cpu_scheduler_type",
           "repeated enum": "xla_gpu_disable_async_collectives",
           "repeated string": "xla_disable_hlo_passes",
           "message": "xla_gpu_experimental_thunk_buffer_debug_filter",
           "repeated message": "xla_backend_extra_options"}
_VALUES: tuple[Any, ...] = (
    True, False, 0, 1, 2, -1, 2 ** 31, 2 ** 40, 2 ** 70, 1.5, 0.5, 1.0, 0.0, -2.5, float("nan"),
    float("inf"), 1e39, "true", "false", "True", "False", "1", "0", "+7", "-0", "1.5", " 1",
    "1 ", "0x10", "1e3", "inf", "nan", "-.5", "abc", "", "CPU_SCHEDULER_TYPE_DEFAULT",
    "cpu_scheduler_type_default", "ALLREDUCE", "ALLREDUCE,ALLGATHER", "ALLREDUCE,", ",",
    np.int32(2), np.int64(-4), np.float32(0.5), np.bool_(True), np.uint8(3))


@pytest.mark.parametrize("kind", list(_FIELDS))
def test_values_by_field_type(prober: _JaxProber, kind: str) -> None:
    name = _FIELDS[kind]
    for value in _VALUES:
        options = {name: value}
        assert _spec(options) == prober(options), (kind, repr(value))


@pytest.mark.parametrize("value", [None, b"x", 1j, [1], {"a": 1}])
def test_values_of_no_option_type(value: Any) -> None:
    """Values that are no str/bool/int/float: the binding refuses them
    (TypeError), unhashable ones are refused as part of the cache key
    (ValueError), as in JAX."""
    def jax_run() -> Any:
        return jax.jit(lambda x: x + 4.0, compiler_options={"xla_cpu_max_isa": value})(1.0)

    def spec_run() -> Any:
        return spec.jit(lambda x: x + 4.0, compiler_options={"xla_cpu_max_isa": value})(1.0)
    assert _outcome(spec_run)[0] == _outcome(jax_run)[0]


def test_option_names_are_strings() -> None:
    def run(ns: Any) -> Outcome:
        return _outcome(lambda: ns.jit(lambda x: x + 5.0, compiler_options={1: 2})(1.0))
    assert run(spec)[0] == run(jax)[0] == "TypeError"


_LEVELS: tuple[Any, ...] = ("O0", "O1", "O2", "O3", "UNKNOWN", 0, 9, 39, 39.0, False, "O4", "o3",
                            3, None, 1.5, True, "")


@pytest.mark.parametrize("name", ["optimization_level", "memory_fitting_level"])
def test_effort_levels(prober: _JaxProber, name: str) -> None:
    for level in _LEVELS:
        assert _spec({name: level}) == prober({name: level}), repr(level)
    for member in jax.CompilerEffortLevel:
        assert _spec({name: spec.CompilerEffortLevel[member.name]}) == prober({name: member})


def test_compiler_effort_level_members() -> None:
    assert [(m.name, m.value) for m in spec.CompilerEffortLevel] == [
        (m.name, m.value) for m in jax.CompilerEffortLevel]
    assert spec.CompilerEffortLevel("O2") is spec.CompilerEffortLevel.O2


def test_first_refused_option_is_reported(prober: _JaxProber) -> None:
    for options in ({"zzz": 1, "aaa": 2}, {"xla_cpu_enable_fast_math": 1.5, "aaa": 2},
                    {"aaa": 2, "optimization_level": "O9"},
                    {"exec_time_optimization_effort": 0.5},
                    {"memory_fitting_effort": 0.5}):
        assert _spec(options) == prober(options), options


def test_errors_come_at_compile_time() -> None:
    """Lowering succeeds; each call compiles and raises again."""
    for ns in (jax, spec):
        g = ns.jit(lambda x: x - 1.0, compiler_options={"not_a_real_flag": 1})
        g.lower(1.0)
        for _ in range(2):
            with pytest.raises(ns.errors.JaxRuntimeError,
                               match=r"^INVALID_ARGUMENT: No such compile option: "
                                     r"'not_a_real_flag'"):
                g(1.0)


def _nested(ns: Any, numpy: Any) -> list[Outcome]:
    inner = ns.jit(lambda x: x * 3.0, compiler_options={"not_a_real_flag": 1})
    good = ns.jit(lambda x: x * 3.0, compiler_options={"xla_cpu_enable_fast_math": False})
    return [_outcome(lambda: ns.jit(lambda x: inner(x) + 1.0)(1.0)),
            _outcome(lambda: ns.jit(lambda x: good(x) + 1.0)(1.0)),
            _outcome(lambda: ns.make_jaxpr(lambda x: ns.grad(good)(x))(1.0)),
            _outcome(lambda: inner(2.0)),
            _outcome(lambda: ns.grad(inner)(2.0)),
            _outcome(lambda: ns.vmap(inner)(numpy.ones(3))),
            _outcome(lambda: ns.grad(good)(2.0)),
            _outcome(lambda: good.trace(2.0))]


def test_only_the_top_level_jit_takes_options() -> None:
    """A jit with options staged into another program is refused when
    traced (ValueError naming it and its call site); called eagerly, under
    grad or vmap, it is a top-level compilation."""
    assert _nested(spec, sjnp) == _nested(jax, jjnp)


def test_options_change_no_values() -> None:
    x = np.linspace(-3, 3, 7, dtype=np.float32)

    def f(ns: Any, numpy: Any, opts: dict[str, Any] | None) -> Any:
        return np.asarray(ns.jit(lambda v: numpy.sqrt(v ** 2) * 3.0 + 1.0,
                                 compiler_options=opts)(x))
    opts = {"xla_cpu_enable_fast_math": True, "optimization_level": "O0"}
    plain = f(spec, sjnp, None)
    np.testing.assert_array_equal(f(spec, sjnp, opts), plain)
    np.testing.assert_array_equal(plain, f(jax, jjnp, None))


def test_compiled_keeps_its_options() -> None:
    lowered = spec.jit(lambda x: x + 1.0, compiler_options={"xla_cpu_enable_fast_math": True,
                                                            "optimization_level": "O3"}
                       ).lower(1.0)
    compiled = lowered.compile(compiler_options={"xla_embed_ir_in_executable": True,
                                                 "xla_cpu_enable_fast_math": False})
    assert compiled.compiler_options == {"xla_cpu_enable_fast_math": False,
                                         "optimization_level": spec.CompilerEffortLevel.O3,
                                         "xla_embed_ir_in_executable": True}
    text = compiled.as_text()
    assert text.splitlines()[0] == ("# compiler_options: xla_cpu_enable_fast_math=False, "
                                    "optimization_level=O3, xla_embed_ir_in_executable=True")
    assert text.split("\n", 1)[1] == lowered.compile().as_text().split("\n", 1)[1]
    assert float(compiled(2.0)) == 3.0


def _page_cells(ns: Any, numpy: Any) -> list[Any]:
    """The controlling-xla page's compiler-option cells."""
    def f(x: Any) -> Any:
        return numpy.sqrt(x ** 2) + 1.

    f_opt = ns.jit(f, compiler_options={
        "xla_embed_ir_in_executable": True,
        "xla_gpu_auto_spmd_partitioning_memory_budget_ratio": 0.5,
    })
    out = [float(f_opt(1.0))]
    g = ns.jit(f, compiler_options={"optimization_level": ns.CompilerEffortLevel.O3})
    out.append(float(g(2.0)))
    out.append(_outcome(lambda: ns.jit(f, compiler_options={"not_a_real_flag": 1})(1.0)))
    compiled = ns.jit(f).lower(1.0).compile(
        compiler_options={"xla_embed_ir_in_executable": True})
    out.append(float(compiled(-3.0)))
    return out


def test_controlling_xla_page_cells() -> None:
    assert _page_cells(spec, sjnp) == _page_cells(jax, jjnp)


# ------------------------------------------------------------------ XLA_FLAGS

_PROGRAM = """
import os, sys
import {mod} as jx
print(float(jx.jit(lambda x: x + 1.0)(1.0)))
os.environ["XLA_FLAGS"] = "--not_a_real_flag=1"
print(float(jx.jit(lambda x: x + 2.0)(1.0)))
"""


def _run(mod: str, flags: str | None) -> tuple[int, str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    if flags is not None:
        env["XLA_FLAGS"] = flags
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root
    r = subprocess.run([sys.executable, "-c", _PROGRAM.format(mod=mod)], env=env,
                       capture_output=True, text=True, timeout=120, cwd=root)
    # XLA's fatal log line carries a prefix (time, thread, source file) before its message.
    # (the flag list XLA prints after a value it cannot read is left out)
    messages = [line.split("] ", 1)[-1] for line in r.stderr.splitlines()
                if ("XLA_FLAGS" in line or "Couldn't interpret" in line
                    or "Flag parsing failed" in line or line.startswith("usage:"))
                and not line.startswith("\t")]
    return r.returncode, r.stdout.strip(), messages


@pytest.mark.parametrize("flags", [
    "--xla_cpu_enable_fast_math=true --xla_partitioning_algorithm=PARTITIONING_ALGORITHM_NOOP",
    "--foo --xla_cpu_enable_fast_math --xla_detailed_logging=1 --bar=2",
    # a rejected enum value does not stop the parse: the int's message follows
    "--xla_step_marker_location=bogus --xla_cpu_enable_fast_math=TRUE "
    "--xla_gpu_autotune_level=x",
    # an enum value alone: XLA's fatal check without a message of the flag's own
    "--xla_partitioning_algorithm=partitioning_algorithm_noop",
    # flags that are no DebugOptions field and are missing from XLA's printed list
    "--xla_gpu_enable_cudnn_fmha=false --xla_gpu_enable_triton_gemm_int4=3"])
def test_xla_flags_read_at_start(flags: str | None) -> None:
    """XLA_FLAGS is read once, at the first compilation: an unknown flag or
    a value a flag cannot read ends the process (status 1) with XLA's
    message; setting it after that changes nothing."""
    assert _run("spec", flags) == _run("jax", flags)
