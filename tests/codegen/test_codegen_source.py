"""What a jit call runs: the generated source (``lower().as_text("python")``),
its floating-point environment switches, the interpreter switch, and user
code (callbacks) seeing the environment it would see interpreted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as jnp
from spec import lax
from spec._src.api import codegen
from spec._src.core import denormals
from spec._src.core.config import config

X = jnp.asarray(np.linspace(-1, 1, 8, dtype=np.float32))
Y = jnp.asarray(np.linspace(2, 3, 8, dtype=np.float32))


def _program20(x: Any, y: Any) -> Any:
    for _ in range(5):
        x = jnp.multiply(jnp.sin(jnp.add(jnp.multiply(x, y), x)), 0.5)
    return x


def _text(f: Any, *args: Any) -> str:
    return str(spec.jit(f).lower(*args).as_text("python"))


def test_straight_line_program_switches_the_environment_once() -> None:
    text = _text(_program20, X, Y)
    compile(text, "<generated>", "exec")  # it is Python
    assert text.startswith("def program(")
    lines = [line.strip() for line in text.splitlines()]
    # 20 kernel statements, one per equation, no impl calls
    kernels = [line for line in lines if "= _multiply" in line or "= _add" in line
               or "= _sin" in line]
    assert len(kernels) == 20
    if denormals.hardware_available():
        assert lines.count("_fesetmode(_FLUSHED)") == 1
    # intermediates go after their last use
    assert any(line.startswith("del ") for line in lines)


def test_loops_and_branches_are_python_control_flow() -> None:
    def f(c: Any, xs: Any) -> Any:
        c = lax.scan(lambda c, x: (c * 0.5 + jnp.sin(x), None), c, xs)[0]
        c = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2.0), (0, c))[1]
        return lax.cond(c[0] > 0, jnp.sin, jnp.cos, c)
    xs = jnp.ones((5, 8), np.float32)
    text = _text(f, X, xs)
    assert "for i" in text and "while True:" in text and "if branch" in text
    if denormals.hardware_available():
        # the scan body is pure arithmetic: the environment is entered before its loop
        lines = text.splitlines()
        loop = next(k for k, line in enumerate(lines) if line.strip().startswith("for "))
        body = lines[loop + 1:loop + 8]
        assert not any("_fesetmode" in line for line in body)


def test_config_switch_interprets(monkeypatch: pytest.MonkeyPatch) -> None:
    f = spec.jit(_program20)
    expected = np.asarray(f(X, Y))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the generator ran with spec_jit_codegen off")
    monkeypatch.setattr(codegen, "generated", refuse)
    with config._override("spec_jit_codegen", False):
        got = np.asarray(spec.jit(lambda x, y: _program20(x, y))(X, Y))
    assert got.tobytes() == expected.tobytes()
    with spec.disable_jit():
        eager = np.asarray(spec.jit(lambda x, y: _program20(x, y))(X, Y))
    np.testing.assert_allclose(eager, expected, rtol=1e-6)


def test_callbacks_see_the_ieee_environment() -> None:
    """A callback between arithmetic kernels runs in IEEE mode with NumPy's
    error policy, as it does when the jaxpr is interpreted."""
    seen: list[Any] = []

    def callback(v: np.ndarray) -> np.ndarray:
        tiny = np.float32(1e-39) * np.float32(1.0)  # a subnormal product
        seen.append((float(tiny), np.geterr()["divide"]))
        return np.asarray(v)

    def f(x: Any, y: Any) -> Any:
        z = x * y + 1.0
        z = spec.pure_callback(callback, spec.ShapeDtypeStruct(z.shape, z.dtype), z)
        return z * y
    generated = np.asarray(spec.jit(f)(X, Y))
    with config._override("spec_jit_codegen", False):
        interpreted = np.asarray(spec.jit(f)(X, Y))
    assert generated.tobytes() == interpreted.tobytes()
    assert seen[0] == seen[1] and seen[0][0] != 0.0


def test_error_restores_the_environment() -> None:
    """A call that raises midway (here a callback between arithmetic runs)
    leaves IEEE mode and NumPy's error policy as they were."""
    policy = np.geterr()

    def fail(v: np.ndarray) -> np.ndarray:
        raise RuntimeError("callback failed")

    def f(x: Any) -> Any:
        z = jnp.sin(x * 2.0)
        z = spec.pure_callback(fail, spec.ShapeDtypeStruct(z.shape, z.dtype), z)
        return z * x
    with pytest.raises(Exception, match="callback failed"):
        spec.jit(f)(X)
    assert np.geterr() == policy
    assert float(np.float32(1e-39) * np.float32(1.0)) != 0.0


def test_repeated_calls_run_once_each() -> None:
    """A repeated call answered from the last call's entry runs its program
    once, also when the function returns nothing."""
    calls: list[int] = []

    def f(x: Any) -> None:
        spec.debug.callback(lambda v: calls.append(1), x * 2.0)
    jitted = spec.jit(f)
    for _ in range(3):
        assert jitted(X) is None
    assert len(calls) == 3


def test_sharded_program_source_is_what_runs_per_device() -> None:
    """A jit call on a mesh runs its per-device program; ``as_text("python")``
    is that program: elementwise work and the sum's local part one kernel
    call per device, the all-reduce one call."""
    before = config.jax_num_cpu_devices
    config.update("jax_num_cpu_devices", 2)
    try:
        mesh = spec.make_mesh((2,), ("X",))
        sharding = spec.sharding.NamedSharding(mesh, spec.sharding.PartitionSpec("X"))
        x = spec.device_put(np.arange(16, dtype=np.float32).reshape(8, 2), sharding)

        def f(a: Any) -> Any:
            return jnp.sin(a) * a + jnp.sum(a)
        jitted = spec.jit(f)
        jitted(x), jitted(x)  # the second call runs the generated program
        text = str(jitted.lower(x).as_text("python"))
        (program,) = [p for *_, p in codegen._DEVICE_PROGRAMS[jitted.trace(x).jaxpr]]
        assert program is not None and program.source == text
        lines = [line.strip() for line in text.splitlines()]
        assert text.startswith("def device_program(")
        assert sum(line.startswith("v") and "= _sin" in line for line in lines) == 2
        # the sum: its kernel on each device's block, then the all-reduce
        assert sum(line.startswith("p") and "_reduce_sum" in line for line in lines) == 2
        assert sum("= _reshard" in line for line in lines) == 1
    finally:
        config.update("jax_num_cpu_devices", before)


def test_long_program_is_cut_into_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long program is written as functions of at most about
    ``_PART_LINES`` lines each (Python compiles a function whole: its cost
    grows with the longest function), called in turn, each taking what
    the rest reads: the program's arguments and the values alive at the
    cut, never a value deleted before it."""
    monkeypatch.setattr(codegen, "_PART_LINES", 12)
    text = _text(_program20, X, Y)
    functions = text.split("\ndef ")
    assert functions[0].startswith("def program(a1, a2):")
    parts = functions[1:]
    assert len(parts) >= 3
    for k, part in enumerate(parts, 1):
        assert part.startswith(f"program_part{k}(")
        assert len(part.splitlines()) <= 12 + 12  # its statements, the cut's, the environment's
    assert "carried = program_part2(carried)" in functions[0]
    # each later part starts from the list the previous one returned, then empties it
    assert all("= carried; carried.clear()" in part for part in parts[1:])
    with config._override("spec_jit_codegen", False):
        interpreted = np.asarray(spec.jit(_program20)(X, Y))
    assert np.asarray(spec.jit(_program20)(X, Y)).tobytes() == interpreted.tobytes()
