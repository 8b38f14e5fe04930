"""A token given to jnp functions, against JAX run live: JAX's TypeError of
its operand check, naming the class the check sees (the token itself for the
functions that check outside their own jit, a jit tracer inside it), and the
TypeError of ``jnp.asarray``/``jnp.array`` for a value NumPy holds as an
object."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import pytest

import spec
import spec.numpy as sjnp

CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add": lambda jx, jnp, t: jnp.add(t, 1),
    "add second": lambda jx, jnp, t: jnp.add(1, t),
    "sin": lambda jx, jnp, t: jnp.sin(t),
    "sum": lambda jx, jnp, t: jnp.sum(t),
    "where": lambda jx, jnp, t: jnp.where(True, t, 0),
    "reshape": lambda jx, jnp, t: jnp.reshape(t, (1,)),
    "zeros_like": lambda jx, jnp, t: jnp.zeros_like(t),
    "concatenate": lambda jx, jnp, t: jnp.concatenate([t, t]),
    "asarray": lambda jx, jnp, t: jnp.asarray(t),
    "array": lambda jx, jnp, t: jnp.array(t),
    "add in jit": lambda jx, jnp, t: jx.jit(lambda u: jnp.add(u, 1))(t),
    "sin in jit": lambda jx, jnp, t: jx.jit(jnp.sin)(t),
}


def _outcome(jx: Any, jnp: Any, case: str) -> Any:
    try:
        CASES[case](jx, jnp, jx.lax.create_token())
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        return (type(e).__name__, re.sub(r" at 0x[0-9a-f]+", " at 0x", str(e)))
    return "no error"


@pytest.mark.parametrize("case", list(CASES))
def test_token_operand_as_jax(case: str) -> None:
    expected = _outcome(jax, jjnp, case)
    assert expected[0] == "TypeError"
    assert _outcome(spec, sjnp, case) == expected
