"""Eager plans (``interpreter.EagerPlan``) are one semantics with the jnp
functions they stand for. Hypothesis draws calls of inline jnp functions
on operands of drawn kinds (strong and weak arrays of several dtypes and
ranks, Python scalars including -0.0 and ints); each call is followed by
one on other operands of the same kinds (other values, other arrays), which
the first call's plan may answer. Every call gives what the function run
afresh (``__wrapped__``: no plan) gives: the same bits, dtype and weak
type, or the same exception."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import spec.numpy as jnp
from spec._src.core import types as T
from spec._src.numpy import util
from spec._src.numpy.util import python_scalar_operand

BINARY: list[Callable[..., Any]] = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum,
                                    jnp.true_divide, jnp.logical_and, jnp.less]
UNARY: list[Callable[..., Any]] = [jnp.sin, jnp.negative, jnp.sqrt, jnp.floor]
VALUES = [0.0, -0.0, 1.5, -2.0, 1e-40, np.inf, np.nan, 3.0]
# An operand kind: an array (dtype, shape), a weak float32 array, or a
# Python scalar of a type.
KINDS: list[tuple[str, Any, tuple[int, ...]]] = [
    ("array", np.float32, ()), ("array", np.float32, (3,)), ("array", np.int32, (3,)),
    ("array", np.bool_, ()), ("weak", np.float32, ()), ("scalar", float, ()),
    ("scalar", int, ()), ("scalar", bool, ())]


def _operand(kind: tuple[str, Any, tuple[int, ...]], value: float) -> Any:
    tag, dtype, shape = kind
    if tag == "scalar":
        return dtype(value) if np.isfinite(value) or dtype is float else 7
    if tag == "weak":
        return python_scalar_operand(value, T.float32, True)
    if dtype is not np.float32 and not np.isfinite(value):
        value = 7.0
    return jnp.asarray(np.full(shape, value).astype(dtype))


def _unplanned(fn: Any) -> Any:
    """The function without its eager plan (a ufunc's: its jnp function's)."""
    plain = fn._call if isinstance(fn, jnp.ufunc) else fn
    return plain.__wrapped__


def _outcome(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        out = fn(*args)
    except Exception as err:  # the same exception class and message
        return type(err), str(err)
    return out.dtype, out.aval.weak_type, out.shape, np.asarray(out).tobytes()


CALL = st.tuples(st.integers(0, len(BINARY) + len(UNARY) - 1), st.sampled_from(KINDS),
                 st.sampled_from(KINDS), st.booleans(),
                 st.lists(st.sampled_from(VALUES), min_size=4, max_size=4))


@settings(max_examples=25, deadline=None)
@given(st.lists(CALL, min_size=1, max_size=6))
def test_planned_calls_are_fresh_calls(calls: list[Any]) -> None:
    for which, kx, ky, twice, (a, b, c, d) in calls:
        if twice:  # one operand as both, then two: the plan must not take them for one
            ky = kx
        x1, y1, x2, y2 = _operand(kx, a), _operand(ky, b), _operand(kx, c), _operand(ky, d)
        if twice:
            y1 = x1
        if which < len(BINARY):
            fn, calls_made = BINARY[which], [(x1, y1), (x2, y2)]
        else:
            fn, calls_made = UNARY[which - len(BINARY)], [(x1,), (x2,)]
        for args in calls_made:
            assert _outcome(fn, *args) == _outcome(_unplanned(fn), *args)


def test_calls_alternating_between_operand_types_keep_their_plans(monkeypatch: Any) -> None:
    """A loop alternating ``x * y`` and ``z * 0.5`` (two operand types of one
    function) is answered by plans after its first round: no recorded
    evaluation (typing, dispatch and plan making) per call."""
    x = jnp.asarray(np.arange(4, dtype=np.float32))
    y = jnp.asarray(np.full(4, 3.0, np.float32))
    z = jnp.asarray(np.ones((2, 2), np.float32))
    recorded: list[Any] = []
    original = util.run_recorded

    def counting(fn: Any, args: Any) -> Any:
        recorded.append(args)
        return original(fn, args)
    monkeypatch.setattr(util, "run_recorded", counting)
    rounds = [(jnp.multiply(x, y), jnp.multiply(z, 0.5), jnp.multiply(x, 2)) for _ in range(3)]
    assert len(recorded) <= 3  # the first round at most
    for xy, z_half, x2 in rounds:
        assert np.asarray(xy).tolist() == [0.0, 3.0, 6.0, 9.0] and xy.dtype == np.float32
        assert np.asarray(z_half).tolist() == [[0.5, 0.5], [0.5, 0.5]] and z_half.shape == (2, 2)
        assert np.asarray(x2).tolist() == [0.0, 2.0, 4.0, 6.0] and x2.dtype == np.float32
