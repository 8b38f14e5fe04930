"""jax_debug_nans / jax_debug_infs on spec and on JAX 0.12, live: the same
programs print the same lines and raise the same FloatingPointError (class
and message), eagerly, under jit (the de-optimized re-run naming the
operation), under grad, vmap, scan and disable_jit."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
import pytest

import spec


@contextlib.contextmanager
def _flag(lib: Any, name: str, value: bool) -> Iterator[None]:
    before = lib.config.read(name) if lib is spec else getattr(lib.config, name)
    lib.config.update(name, value)
    try:
        yield
    finally:
        lib.config.update(name, before)


def _outcome(run: Callable[[], Any]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            value = run()
            print("value", np.round(np.asarray(value, dtype=np.float64), 5).tolist())
        except Exception as e:  # noqa: BLE001 (class and message are compared)
            print(f"raises {type(e).__name__}: {e}")
    return out.getvalue()


def _programs(lib: Any) -> dict[str, Callable[[], Any]]:
    lax, jnp = lib.lax, lib.numpy

    @lib.jit
    def sin_then_log(x: Any) -> Any:
        return lax.log(lax.sin(x)) * 2.0

    @lib.jit
    def nested(x: Any) -> Any:
        return lib.jit(lambda y: lax.log(y))(x) + 1.0

    def prints_then_logs(x: Any) -> Any:
        print("running with", type(x).__name__ in ("JitTracer", "DynamicJaxprTracer"))
        return lax.log(x)

    def scan_log(xs: Any) -> Any:
        return lax.scan(lambda c, y: (c, lax.log(y)), 0.0, xs)[1]

    return {
        "eager_log": lambda: lax.log(-1.0),
        "eager_div": lambda: lax.div(0.0, 0.0),
        "eager_int_ok": lambda: lax.div(jnp.int32(1), jnp.int32(1)),
        "jit_names_log": lambda: sin_then_log(-1.0),
        "jit_nested": lambda: nested(-1.0),
        "jit_reruns_python": lambda: lib.jit(prints_then_logs)(-1.0),
        "jit_nan_literal": lambda: lib.jit(lambda x: x * jnp.nan)(1.0),
        "jit_fine": lambda: sin_then_log(1.0),
        "grad_sqrt": lambda: lib.grad(lax.sqrt)(-1.0),
        "grad_jit_div": lambda: lib.grad(lib.jit(lambda x: lax.div(lax.sin(x), x)))(0.0),
        "vmap_log": lambda: lib.vmap(lax.log)(jnp.array([1.0, -1.0])),
        "eager_scan": lambda: scan_log(jnp.array([1.0, -1.0])),
        "jit_scan": lambda: lib.jit(scan_log)(jnp.array([1.0, -1.0])),
        "disable_jit": lambda: _disabled(lib, lambda: sin_then_log(-1.0)),
        "scoped_off": lambda: _scoped_off(lib, lambda: sin_then_log(-1.0)),
    }


def _disabled(lib: Any, run: Callable[[], Any]) -> Any:
    with lib.disable_jit():
        return run()


def _scoped_off(lib: Any, run: Callable[[], Any]) -> Any:
    with lib.debug_nans(False):
        return run()


CASES = sorted(_programs(spec))


@pytest.mark.parametrize("flag", ["jax_debug_nans", "jax_debug_infs"])
@pytest.mark.parametrize("case", CASES)
def test_same_lines_and_error_as_jax(case: str, flag: str) -> None:
    with _flag(jax, flag, True):
        want = _outcome(_programs(jax)[case])
    with _flag(spec, flag, True):
        got = _outcome(_programs(spec)[case])
    assert got == want


@pytest.mark.parametrize("case", ["jit_names_log", "eager_log"])
def test_infs_name_the_operation(case: str) -> None:
    def log0(lib: Any) -> Callable[[], Any]:
        return {"eager_log": lambda: lib.lax.log(0.0),
                "jit_names_log": lambda: lib.jit(lambda x: lib.lax.log(x) + 1.0)(0.0)}[case]
    with _flag(jax, "jax_debug_infs", True):
        want = _outcome(log0(jax))
    with _flag(spec, "jax_debug_infs", True):
        got = _outcome(log0(spec))
    assert got == want
    assert "invalid value (inf) encountered in log" in got


def test_context_managers_and_config_reads() -> None:
    assert spec.config.jax_debug_nans is False
    with spec.debug_nans(True):
        assert spec.config.jax_debug_nans is True
        with spec.debug_infs(True):
            assert spec.config.jax_debug_infs is True
    assert (spec.config.jax_debug_nans, spec.config.jax_debug_infs) == (False, False)
    assert float(spec.lax.log(-1.0)) != float(spec.lax.log(-1.0))  # NaN, unchecked


def test_env_var_turns_checks_on() -> None:
    code = ("import spec\nprint(spec.config.jax_debug_nans)\n"
            "try:\n    spec.lax.log(-1.0)\nexcept FloatingPointError as e:\n    print(e)\n")
    env = {**os.environ, "JAX_DEBUG_NANS": "True", "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out == "True\ninvalid value (nan) encountered in log\n"


_ON_A_MESH = r"""
import sys
if sys.argv[1] == "jax":
    import jax, jax.numpy as jnp
else:
    import spec as jax, spec.numpy as jnp
jax.config.update("jax_num_cpu_devices", 2)
jax.config.update("jax_debug_nans", True)
P = jax.sharding.PartitionSpec
mesh = jax.make_mesh((2,), ("x",))
x = jax.device_put(jnp.array([0.0, 1.0, 2.0, 3.0]), jax.sharding.NamedSharding(mesh, P("x")))
for run in [lambda: jax.lax.log(x - 1.5), lambda: jnp.log(x - 1.5), lambda: x / 0.0,
            lambda: jax.jit(lambda y: jnp.sum(jnp.log(y - 1.5)))(x),
            lambda: jax.lax.log(x + 1.0)]:
    try:
        print("value", run().tolist())
    except FloatingPointError as e:
        print("raises", e)
"""


def test_arrays_on_a_mesh_are_checked_as_in_jax() -> None:
    def run(lib: str) -> str:
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        return subprocess.run([sys.executable, "-c", _ON_A_MESH, lib], env=env,
                              capture_output=True, text=True, check=True, timeout=120).stdout
    assert run("spec") == run("jax")
