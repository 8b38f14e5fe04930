"""``__jax_array__`` (JEP 28661) as JAX 0.12 treats it, against JAX run live:
converted where an array is asked for by name (``jnp.asarray``, ``jnp.array``,
the non-jitted shape functions, ``.at[].set``, array operators), refused with
JAX's ValueError where JAX takes the object's type as an operand (jitted jnp
functions, lax, jit/grad/vmap arguments, ``device_put``, ``typeof``, indexing)."""

from __future__ import annotations

import re

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
import spec.numpy as sjnp


def _wrapper(jnp: Any) -> Callable[[Any], Any]:
    class Wrapped:
        def __init__(self, v: Any) -> None:
            self.v = v

        def __jax_array__(self) -> Any:
            return jnp.asarray(self.v)
    return Wrapped


V = np.arange(3.0, dtype=np.float32)

CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "asarray": lambda jx, jnp, W: jnp.asarray(W(V)),
    "array": lambda jx, jnp, W: jnp.array(W(V)),
    "array list": lambda jx, jnp, W: jnp.array([W(V), W(V)]),
    "stack": lambda jx, jnp, W: jnp.stack([W(V), W(V)]),
    "concatenate": lambda jx, jnp, W: jnp.concatenate([W(V), W(V)]),
    "at set": lambda jx, jnp, W: jnp.zeros(3).at[0].set(W(np.float32(5))),
    "at set slice": lambda jx, jnp, W: jnp.zeros(3).at[:].set(W(V)),
    "array + w": lambda jx, jnp, W: jnp.ones(3) + W(V),
    "w + array": lambda jx, jnp, W: W(V) + jnp.ones(3),
    "matmul": lambda jx, jnp, W: jnp.ones(3) @ W(V),
    "reshape": lambda jx, jnp, W: jnp.reshape(W(V), (3, 1)),
    "expand_dims": lambda jx, jnp, W: jnp.expand_dims(W(V), 0),
    "astype": lambda jx, jnp, W: jnp.astype(W(V), jnp.int32),
    "zeros_like": lambda jx, jnp, W: jnp.zeros_like(W(V)),
    "shape": lambda jx, jnp, W: jnp.shape(W(V)),
    "ndim": lambda jx, jnp, W: jnp.ndim(W(V)),
    "isscalar": lambda jx, jnp, W: jnp.isscalar(W(V)),
    "jit closure": lambda jx, jnp, W: jx.jit(lambda: jnp.asarray(W(V)) * 2)(),
    "add": lambda jx, jnp, W: jnp.add(W(V), 1.0),
    "sin": lambda jx, jnp, W: jnp.sin(W(V)),
    "sum": lambda jx, jnp, W: jnp.sum(W(V)),
    "mean": lambda jx, jnp, W: jnp.mean(W(V)),
    "where": lambda jx, jnp, W: jnp.where(True, W(V), 0.0),
    "dot": lambda jx, jnp, W: jnp.dot(W(V), W(V)),
    "lax add": lambda jx, jnp, W: jx.lax.add(W(V), jnp.ones(3)),
    "jit argument": lambda jx, jnp, W: jx.jit(lambda a: a * 2)(W(V)),
    "grad argument": lambda jx, jnp, W: jx.grad(lambda a: (a * a).sum())(W(V)),
    "vmap argument": lambda jx, jnp, W: jx.vmap(lambda a: a * 2)(W(V)),
    "cond operand": lambda jx, jnp, W: jx.lax.cond(True, lambda a: a, lambda a: a, W(V)),
    "eval_shape": lambda jx, jnp, W: jx.eval_shape(lambda a: a, W(V)),
    "make_jaxpr": lambda jx, jnp, W: str(jx.make_jaxpr(lambda a: a)(W(V))),
    "device_put": lambda jx, jnp, W: jx.device_put(W(V)),
    "typeof": lambda jx, jnp, W: jx.typeof(W(V)),
    "index": lambda jx, jnp, W: jnp.arange(5)[W(np.int32(1))],
    "result_type": lambda jx, jnp, W: jnp.result_type(W(V)),
    "result_type mixed": lambda jx, jnp, W: jnp.result_type(np.float32(1), W(V)),
    "dtypes.result_type": lambda jx, jnp, W: jx.dtypes.result_type(W(np.int8(3))),
}


def _outcome(jx: Any, jnp: Any, case: str) -> Any:
    try:
        r = CASES[case](jx, jnp, _wrapper(jnp))
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        # (an object's repr in a message: its address differs between the runs)
        return (type(e).__name__, re.sub(r" at 0x[0-9a-f]+", " at 0x", str(e)))
    if isinstance(r, (tuple, int, bool, str)):
        return r
    return (str(r.dtype), np.asarray(r).tolist())


@pytest.mark.parametrize("case", list(CASES))
def test_jax_array_as_jax(case: str) -> None:
    assert _outcome(spec, sjnp, case) == _outcome(jax, jjnp, case)


def test_both_directions_are_covered() -> None:
    """Some cases convert and some refuse in JAX (the table is not one-sided)."""
    outcomes = [_outcome(jax, jjnp, c) for c in CASES]
    refused = [o for o in outcomes if isinstance(o, tuple) and o[0] == "ValueError"]
    assert refused and len(refused) < len(outcomes)
