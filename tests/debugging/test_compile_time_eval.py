"""ensure_compile_time_eval on spec and on JAX 0.12, live: operations on
concrete values inside the block run while tracing (their values are
printable), and enter the staged program as constants; operations on
tracers are still staged."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import jax

import spec


def _session(lib: Any) -> str:
    jnp = lib.numpy
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        @lib.jit
        def f(x: Any) -> Any:
            with lib.ensure_compile_time_eval():
                y = jnp.sin(3.0)
                z = jnp.arange(3) * 2
                print("during tracing:", y, z)
            return x + y + z.sum()

        print(f(1.0))
        print(lib.make_jaxpr(f)(2.0))

        def g(x: Any) -> Any:
            with lib.ensure_compile_time_eval():
                return x * 2 + jnp.cos(0.0)

        print(lib.make_jaxpr(g)(1.0))
        with lib.ensure_compile_time_eval():
            print(jnp.cos(0.0))
    return out.getvalue()


def test_session_as_jax() -> None:
    assert _session(spec) == _session(jax)
