"""jax.empty_ref and jax.free_ref: jaxprs, compiled values, autodiff, vmap and
errors, each program run on spec and on real JAX in this process."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

import spec
from spec._src.core.interpreter import dce_jaxpr
from tests.support.pair import both, error_of, same


def _write_read_free(j: Any, n: Any) -> Any:
    def f(x: Any) -> Any:
        r = j.empty_ref(j.ShapeDtypeStruct((3,), n.float32))
        r[...] = x
        y = r[...] * 2
        j.free_ref(r)
        return y
    return f


def _accumulate_in_loop(j: Any, n: Any) -> Any:
    def k(x: Any) -> Any:
        r = j.empty_ref(x)  # typed like x: a weak scalar, the ref's type strong

        def body(i: Any, c: Any) -> Any:
            r[...] += c
            return c

        r[...] = x
        j.lax.fori_loop(0, 3, body, x)
        v = r[...]
        j.free_ref(r)
        return v
    return k


def test_jaxprs_and_compiled_values() -> None:
    def prog(j: Any, n: Any) -> Any:
        f, k = _write_read_free(j, n), _accumulate_in_loop(j, n)
        x = n.arange(3.0)
        unread = j.jit(lambda: j.empty_ref(j.ShapeDtypeStruct((4,), n.int32))[...])
        return (str(j.make_jaxpr(f)(x)), np.asarray(j.jit(f)(x)).tolist(),
                str(j.make_jaxpr(k)(2.0)), float(j.jit(k)(2.0)),
                str(j.make_jaxpr(unread)()), np.asarray(unread()).tolist())
    same(prog)


def test_free_ref_is_kept_by_dead_code_elimination() -> None:
    """free_ref has no result, yet it and the ref it frees stay (JAX's DCE rule)."""
    def h(j: Any, x: Any) -> Any:
        r = j.empty_ref(x)
        j.free_ref(r)
        return x

    ours = dce_jaxpr(spec.make_jaxpr(lambda x: h(spec, x))(1.0).jaxpr)
    from jax._src.interpreters import partial_eval as pe  # (JAX's own DCE as the oracle)
    theirs = pe.dce_jaxpr(jax.make_jaxpr(lambda x: h(jax, x))(1.0).jaxpr, [True])[0]
    assert str(ours) == str(theirs)
    assert "free_ref" in str(ours)


def test_autodiff_under_jit() -> None:
    """The tangent of an empty ref is an empty ref of the tangent type."""
    def prog(j: Any, n: Any) -> Any:
        f = _write_read_free(j, n)
        x = n.arange(1.0, 4.0)
        g = j.jit(j.grad(lambda x: (f(x) * x).sum()))(x)
        out, t = j.jit(lambda x: j.jvp(f, (x,), (x * x,)))(x)
        gk = j.jit(j.grad(_accumulate_in_loop(j, n)))(2.0)
        return (np.asarray(g).tolist(), np.asarray(out).tolist(), np.asarray(t).tolist(),
                float(gk), str(j.make_jaxpr(lambda x: j.jvp(f, (x,), (x,)))(x)))
    same(prog)


def test_errors() -> None:
    """Eager evaluation has no rule; a non-JAX type, a returned empty ref and
    a batched write into an unbatched empty ref are refused as in JAX."""
    def eager(j: Any, n: Any) -> Any:
        return j.empty_ref(j.ShapeDtypeStruct((2, 3), n.float32))

    def not_a_type(j: Any, n: Any) -> Any:
        return j.empty_ref("a")

    def vmapped(j: Any, n: Any) -> Any:
        return j.jit(j.vmap(_write_read_free(j, n)))(n.ones((2, 3)))

    for prog in (eager, not_a_type, vmapped):
        ours, theirs = both(lambda j, n: error_of(lambda: prog(j, n)))
        assert type(ours) is type(theirs), (ours, theirs)
        assert str(ours) == str(theirs)

    ours, theirs = both(lambda j, n: error_of(lambda: j.make_jaxpr(lambda: j.empty_ref(3))()))
    assert type(ours) is type(theirs) is ValueError
    assert str(ours).split("\n")[0] == str(theirs).split("\n")[0]


def test_free_ref_eagerly_and_unchecked() -> None:
    """JAX's free_ref evaluates (to nothing) on any operand and stages one
    without checking that it is a ref."""
    def prog(j: Any, n: Any) -> Any:
        return j.free_ref(n.ones(3)), str(j.make_jaxpr(j.free_ref)(1.0))
    same(prog)
