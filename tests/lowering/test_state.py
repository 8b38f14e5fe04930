"""Programs with refs lower discharged, as JAX lowers them: a ref is the
value it holds, a ref argument's final contents are an extra result, and
the compiled module computes spec's and JAX's values bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec._src.lax.slicing import dynamic_update_slice_p
from spec._src.lax.state import broadcast_to_p
from tests.lowering.xla_run import bits, compile_and_run, lowered, spec_and_compiled

_X = np.arange(4, dtype=np.float32) - 1.5


def _made_inside(api: Any) -> Callable[..., Any]:
    def fn(x: Any) -> Any:
        r = api.new_ref(x)
        r[...] = r[...] * 2.0
        r[...] += 1.0
        head = r[0:2]
        old = api.freeze(r)
        return old, head, api.jit(lambda y: api.freeze(api.new_ref(y + 1.0)))(x)
    return fn


def test_refs_made_inside_lower_discharged() -> None:
    ours, compiled, text = spec_and_compiled(_made_inside(spec), _X)
    theirs = jax.jit(_made_inside(jax))(_X)
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]
    assert [bits(c) for c in compiled] == [bits(np.asarray(t)) for t in theirs]
    assert "ref" not in text.split("{", 1)[1]


def _writes_argument(r: Any, y: Any) -> Any:
    r[...] = r[...] * y
    return r[1:3] + y


def test_ref_argument_final_contents_are_a_result() -> None:
    y = np.float32(3.0)
    text = lowered(_writes_argument, spec.new_ref(_X.copy()), y)
    assert "tf.aliasing_output = 1 : i32" in text.splitlines()[1]  # as JAX donates it
    result, final = compile_and_run(text, [_X, y])
    ref = spec.new_ref(_X.copy())
    ours = spec.jit(_writes_argument)(ref, y)
    jref = jax.new_ref(_X.copy())
    theirs = jax.jit(_writes_argument)(jref, y)
    assert bits(result) == bits(np.asarray(ours)) == bits(np.asarray(theirs))
    assert bits(final) == bits(np.asarray(spec.freeze(ref))) == bits(np.asarray(jref[...]))


def test_sliced_write_lowers_through_dynamic_update_slice() -> None:
    if not callable(dynamic_update_slice_p.lowering):
        pytest.skip("dynamic_update_slice has no lowering in this checkout")

    def fn(api: Any) -> Callable[..., Any]:
        def f(x: Any) -> Any:
            r = api.new_ref(x)
            r[1:3] = r[0:2] * 2.0
            return api.freeze(r)
        return f
    ours, compiled, _ = spec_and_compiled(fn(spec), _X)
    assert bits(ours[0]) == bits(compiled[0]) == bits(np.asarray(jax.jit(fn(jax))(_X)))


def test_broadcast_to_stretches_trailing_dimensions() -> None:
    x = np.arange(3, dtype=np.int32).reshape(3, 1)
    ours, compiled, _ = spec_and_compiled(lambda v: broadcast_to_p.bind(v, shape=(2, 3, 4)), x)
    assert bits(ours[0]) == bits(compiled[0]) == bits(np.broadcast_to(x, (2, 3, 4)).copy())
