"""Errors about traced values say what JAX's say, compared whole against JAX
run live: the traced function's name and source location, what it was traced
for, and which arguments the value depends on (by name and key path)."""

from __future__ import annotations

import re
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
    "vmap bool": lambda jx, jnp: jx.vmap(lambda x: branch_on_sum(jnp.sin(x), x))(jnp.ones(3)),
    "vmap bool of argument": lambda jx, jnp: jx.vmap(cond_branch)(jnp.ones(3)),
    "vmap int": lambda jx, jnp: jx.vmap(lambda x: to_int(x * 2))(jnp.ones(3)),
    "vmap item": lambda jx, jnp: jx.vmap(lambda x: item_of(jnp.cos(x), 0))(jnp.ones(3)),
    "jit bool of vector": lambda jx, jnp: jx.jit(cond_branch)(jnp.ones(3)),
    "jit bool of empty": lambda jx, jnp: jx.jit(cond_branch)(jnp.ones(0)),
    "jit int of vector": lambda jx, jnp: jx.jit(to_int)(jnp.ones(2)),
    "jit float of matrix": lambda jx, jnp: jx.jit(to_float)(jnp.ones((2, 2))),
    "jit index of vector": lambda jx, jnp: jx.jit(as_range)(jnp.ones(2, int)),
    "jit index of float": lambda jx, jnp: jx.jit(as_range)(1.0),
}


def _message(jx: Any, jnp: Any, case: str) -> tuple[str, str]:
    try:
        CASES[case](jx, jnp)
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        # A vmap tracer's message names its object id: the same, not equal.
        return type(e).__name__, re.sub(r"object id \d+", "object id N", str(e))
    return "no error", ""


@pytest.mark.parametrize("case", list(CASES))
def test_tracer_error_as_jax(case: str) -> None:
    theirs = _message(jax, jjnp, case)
    assert theirs[0] != "no error"
    assert _message(spec, sjnp, case) == theirs


def _concrete_conversions(jx: Any) -> list[Any]:
    """Under eager autodiff a tracer's value is known: Python conversions of
    it work (``float`` excepted, in JAX as here)."""
    def results(f: Callable[[Any], Any]) -> Any:
        try:
            return float(jx.grad(f)(2.0))
        except Exception as e:  # noqa: BLE001 (the class is compared)
            return type(e).__name__
    return [results(lambda x: x * int(x)), results(lambda x: x * [1.0, 2.0, 3.0][x.astype(int)]),
            results(lambda x: x * 2 if x > 0 else -x), results(lambda x: x * float(x)),
            results(lambda x: x * range(5)[x.astype(int)])]


def test_concrete_conversions_as_jax() -> None:
    assert _concrete_conversions(spec) == _concrete_conversions(jax)
