"""``jax.debug.breakpoint`` run non-interactively: the debugger reads its
commands from a given stdin and writes to a given stdout; spec's transcript
must be JAX's (run in-process, from the same function, so that the frames'
files and lines are the same)."""

from __future__ import annotations

import io
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import spec
import spec.numpy as snp

LIBS = {"jax": (jax, jnp), "spec": (spec, snp)}


def _session(lib: str, commands: str, how: str) -> str:
    jx, np_ = LIBS[lib]
    out = io.StringIO()

    def f(x):  # the frame the debugger shows
        y = x * 2
        jx.debug.breakpoint(stdin=io.StringIO(commands), stdout=out, num_frames=1)
        return y + 1

    try:
        if how == "eager":
            f(np_.float32(0.5))
        elif how == "jit":
            jx.jit(f)(np_.arange(3.0))
        elif how == "vmap":
            jx.vmap(f)(np_.arange(2.0))
        else:
            jx.grad(f)(1.0)
        jx.effects_barrier()
    except SystemExit as e:  # the commands ran out: the debugger exits, as pdb does
        return out.getvalue() + f"SystemExit({e.code})"
    except Exception as e:  # noqa: BLE001  (under jit the exit is a runtime error)
        return out.getvalue() + type(e).__name__ + ": " + str(e).splitlines()[0]
    return out.getvalue()


COMMANDS = [
    "p x\nc\n",
    "pp y\ncontinue\n",
    "x + 1\nc\n",
    "p undefined_name\nc\n",
    "l\nc\n",
    "w\nc\n",
    "u\nd\nc\n",
    "p x\nc\np x\nc\n",  # vmap: one session per batch element
    "q\n",
]


@pytest.mark.parametrize("how", ["eager", "jit", "vmap", "grad"])
@pytest.mark.parametrize("commands", COMMANDS, ids=range(len(COMMANDS)))
def test_debugger_transcript_is_jaxs(commands: str, how: str) -> None:
    assert _session("spec", commands, how) == _session("jax", commands, how)


def test_token_is_returned_unchanged() -> None:
    def run(lib: str) -> Any:
        jx, np_ = LIBS[lib]
        out = io.StringIO()
        tok = jx.jit(lambda x: jx.debug.breakpoint(
            token=x, stdin=io.StringIO("p 1\nc\n"), stdout=out))(np_.arange(3.0))
        return out.getvalue(), [float(v) for v in tok]
    assert run("spec") == run("jax")


def test_ordered_and_token_are_exclusive() -> None:
    with pytest.raises(ValueError, match="mutually exclusive") as ours:
        spec.debug.breakpoint(ordered=True, token=spec.numpy.ones(2))
    with pytest.raises(ValueError) as theirs:
        jax.debug.breakpoint(ordered=True, token=jnp.ones(2))
    assert str(ours.value) == str(theirs.value)
