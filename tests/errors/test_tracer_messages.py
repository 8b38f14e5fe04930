"""Errors about traced values say what JAX's say, compared whole against JAX
run live: the traced function's name and source location, what it was traced
for, and which arguments the value depends on (by name and key path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import pytest

import spec
import spec.numpy as sjnp


def branch_on_sum(x: Any, y: Any) -> Any:
    if x + y > 0:
        return x
    return y


def branch_on_three(x: Any, y: Any, z: Any) -> Any:
    if x + y + z > 0:
        return x
    return y


def to_int(x: Any) -> Any:
    return int(x)


def to_float(x: Any) -> Any:
    return float(x)


def as_range(n: Any) -> Any:
    return list(range(n))


def item_of(x: Any, n: Any) -> Any:
    return x.item()


def from_dict(d: Any) -> Any:
    if d["a"] > 0:
        return d["b"]
    return d["a"]


def star_args(x: Any, *rest: Any) -> Any:
    if rest[1] > 0:
        return x
    return x


def scan_body(c: Any, x: Any) -> Any:
    if x > 0:
        return c, x
    return c, x


def cond_branch(a: Any) -> Any:
    if a > 0:
        return a
    return a


def while_cond(v: Any) -> Any:
    return bool(v < 3)


CASES: dict[str, Callable[[Any, Any], Any]] = {
    "jit bool two args": lambda jx, jnp: jx.jit(branch_on_sum)(1.0, 2.0),
    "jit bool three args": lambda jx, jnp: jx.jit(branch_on_three)(1.0, 2.0, 3.0),
    "jit int": lambda jx, jnp: jx.jit(to_int)(1.0),
    "jit float": lambda jx, jnp: jx.jit(to_float)(1.0),
    "jit index": lambda jx, jnp: jx.jit(as_range)(3),
    "jit item": lambda jx, jnp: jx.jit(item_of)(1.0, 2),
    "jit dict": lambda jx, jnp: jx.jit(from_dict)({"a": 1.0, "b": 2.0}),
    "jit varargs": lambda jx, jnp: jx.jit(star_args)(1.0, 2.0, 3.0),
    "jit array": lambda jx, jnp: jx.jit(branch_on_sum)(jnp.ones(()), jnp.ones(())),
    "scan body": lambda jx, jnp: jx.lax.scan(scan_body, 0.0, jnp.ones(3)),
    "cond branch": lambda jx, jnp: jx.lax.cond(True, cond_branch, cond_branch, 1.0),
    "while cond": lambda jx, jnp: jx.lax.while_loop(while_cond, lambda v: v + 1, 0),
    "grad float": lambda jx, jnp: jx.grad(lambda x: to_float(x) if x > 0 else x)(1.0),
}


def _message(jx: Any, jnp: Any, case: str) -> tuple[str, str]:
    try:
        CASES[case](jx, jnp)
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        return type(e).__name__, str(e)
    return "no error", ""


@pytest.mark.parametrize("case", list(CASES))
def test_tracer_error_as_jax(case: str) -> None:
    theirs = _message(jax, jjnp, case)
    assert theirs[0] != "no error"
    assert _message(spec, sjnp, case) == theirs
