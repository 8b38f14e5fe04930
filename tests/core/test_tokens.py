"""Tokens (``lax.create_token``, ``lax.after_all``, ``ffi.abstract_token``) against JAX
run live: their types as printed, jaxpr text, jit arguments and results, the lowering's
text, and the errors."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import spec
from spec import lax as slax
from tests.lowering.xla_run import canonical


def test_token_types_print_as_jaxs() -> None:
    ours, theirs = slax.create_token(), jax.lax.create_token()
    for o, t in ((spec.typeof(ours), jax.typeof(theirs)),
                 (spec.ffi.abstract_token, jax.ffi.abstract_token)):
        assert (str(o), repr(o)) == (str(t), repr(t))
    assert spec.typeof(ours) == spec.ffi.abstract_token
    assert type(ours).__name__ == type(theirs).__name__ == "Token"
    assert repr(ours).startswith("<") and "Token object at" in repr(ours)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype == object
    assert spec.tree_util.tree_leaves(ours) == [ours]
    assert str(spec.eval_shape(lambda t: slax.after_all(t, t), ours)) == str(
        jax.eval_shape(lambda t: jax.lax.after_all(t, t), theirs))


@pytest.mark.parametrize("make", [
    lambda lax: (lambda x: lax.create_token(x), (1.0,)),
    lambda lax: (lambda t, u: lax.after_all(t, u), (lax.create_token(), lax.create_token())),
    lambda lax: (lambda t: (lax.after_all(), t), (lax.create_token(),)),
])
def test_jaxprs_and_lowerings_are_jaxs(make: Any) -> None:
    ours, ours_args = make(slax)
    theirs, their_args = make(jax.lax)
    jaxpr = spec.make_jaxpr(ours)(*ours_args)
    assert str(jaxpr) == str(jax.make_jaxpr(theirs)(*their_args))
    assert canonical(spec.jit(ours).lower(*ours_args).as_text()) == canonical(
        jax.jit(theirs).lower(*their_args).as_text())


def test_tokens_pass_through_jit_vmap_and_grad() -> None:
    t = slax.create_token()
    f = spec.jit(lambda d: {"t": slax.after_all(d["t"]), "x": d["x"] + 1})
    out = f({"t": t, "x": 1.0})
    assert type(out["t"]).__name__ == "Token" and float(out["x"]) == 2.0
    assert type(spec.jit(lambda x: (x, slax.create_token()))(1.0)[1]).__name__ == "Token"
    x, u = spec.vmap(lambda x, t: (x * 2, slax.after_all(t)), in_axes=(0, None),
                     out_axes=(0, None))(np.ones(3, np.float32), t)
    assert type(u).__name__ == "Token"
    np.testing.assert_array_equal(np.asarray(x), 2 * np.ones(3))
    grad = lambda lax: lambda x: (lax.after_all(lax.create_token(x)), x * 2)[1]  # noqa: E731
    assert float(spec.grad(grad(slax))(1.0)) == float(jax.grad(grad(jax.lax))(1.0)) == 2.0


def test_errors_match_jax() -> None:
    for ours, theirs in ((slax, jax.lax),):
        with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
            theirs.after_all(1.0)
        with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
            ours.after_all(1.0)
        with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
            spec.make_jaxpr(lambda x: ours.after_all(x))(np.float32(1))
        for op in (lambda lax, t: lax.add(t, t), lambda lax, t: lax.reshape(t, (1,))):
            with pytest.raises(ValueError, match="unexpected type AbstractToken"):
                op(theirs, theirs.create_token())
            with pytest.raises(ValueError, match="unexpected type AbstractToken"):
                op(ours, ours.create_token())
