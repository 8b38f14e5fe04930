"""Program texts run on spec and on real JAX in this process: ``jax``,
``jnp`` and ``lax`` are the library's modules (``np`` is NumPy), and the
program sets ``out``; what each prints, or raises, is compared."""

from __future__ import annotations

import importlib
import textwrap
from typing import Any

import jax
import numpy as np

import spec
import spec.numpy


def run_text(src: str, lib: str) -> tuple[str, str]:
    """Run ``src`` with ``jax``/``jnp``/``lax`` bound to ``lib``'s modules;
    returns ("ok", str(out)) or (exception class name, message)."""
    env: dict[str, Any] = {
        "jax": importlib.import_module(lib),
        "jnp": importlib.import_module(lib + ".numpy"),
        "lax": importlib.import_module(lib + ".lax"),
        "np": np,
    }
    try:
        exec(textwrap.dedent(src), env)
    except Exception as e:  # the class and message are what is compared
        return type(e).__name__, str(e)
    return "ok", str(env["out"])


def same_text(src: str) -> tuple[str, str]:
    """``run_text`` gives the same on spec and on JAX; that result."""
    ours, theirs = run_text(src, "spec"), run_text(src, "jax")
    assert ours == theirs, f"\nspec: {ours}\njax:  {theirs}"
    return ours


def close_text(src: str) -> None:
    """Values of ``src`` (a tree of arrays ``out``) agree within float32 ULPs."""
    outs = []
    for lib in (spec, jax):
        env: dict[str, Any] = {"jax": lib, "jnp": lib.numpy, "lax": lib.lax, "np": np}
        exec(textwrap.dedent(src), env)
        outs.append([np.asarray(x) for x in jax.tree_util.tree_leaves(env["out"])])
    assert len(outs[0]) == len(outs[1])
    for a, b in zip(*outs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
