"""``jax.custom_batching`` against JAX run live: custom_vmap's rule under vmap (what it is
called with, what comes out), its JVP and the vmap of its JVP (JAX's jvp-of-rule), jit, the
jaxprs, sequential_vmap, and the errors (no rule; reverse mode)."""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import spec
import spec.numpy as snp


def _program(lib: Any, np_: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"rule": []}

    @lib.custom_batching.custom_vmap
    def f(x: Any, y: Any) -> Any:
        return np_.sin(x) * y

    @f.def_vmap
    def rule(n: int, batched: list[bool], x: Any, y: Any) -> tuple[Any, bool]:
        out["rule"].append((n, *batched))
        return np_.cos(x) * y, batched[0] or batched[1]

    x = np.linspace(0, 1, 3, dtype=np.float32)
    out["call"] = f(x[0], 2.0)
    out["vmap"] = lib.vmap(f)(x, x)
    out["vmap one"] = lib.vmap(f, in_axes=(0, None))(x, 2.0)
    out["jvp"] = lib.jvp(f, (x[1], 2.0), (1.0, 0.5))
    out["vmap jvp"] = lib.vmap(lambda a, t: lib.jvp(lambda z: f(z, 2.0), (a,), (t,)))(x, x)
    out["jit vmap"] = lib.jit(lib.vmap(f))(x, x)
    out["jaxpr"] = str(lib.make_jaxpr(f)(1.0, 2.0))
    seq = lib.custom_batching.sequential_vmap(lambda a: a.sum() + 1)
    m = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    out["sequential"] = lib.vmap(seq)(m)
    out["sequential jaxpr"] = str(lib.make_jaxpr(lib.vmap(seq))(m))
    try:
        lib.custom_batching.custom_vmap(lambda a: a)(1.0)
    except AttributeError as e:
        out["no rule"] = str(e)
    try:
        lib.grad(lambda a: f(a, 2.0))(1.0)
    except ValueError as e:
        out["grad"] = str(e)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, str):
        return re.sub(r"0x[0-9a-fA-FX]+", "0x", v)  # a function's address
    if isinstance(v, (list, tuple)) and v and not hasattr(v[0], "shape"):
        return v
    return jax.tree.map(lambda a: np.asarray(a), v)


def test_custom_vmap_matches_jax() -> None:
    ours, theirs = _program(spec, snp), _program(jax, jnp)
    assert ours.keys() == theirs.keys()
    for key in theirs:
        o, t = _plain(ours[key]), _plain(theirs[key])
        if isinstance(t, (str, list)) and key != "jvp" and key != "vmap jvp":
            assert o == t, key
        else:
            for a, b in zip(jax.tree.leaves(o), jax.tree.leaves(t)):
                assert a.dtype == b.dtype, key
                np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=key)
