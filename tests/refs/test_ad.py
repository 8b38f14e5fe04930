"""Autodiff with refs: docs/new_docs/301/refs.md and 101/state.md.

Every case runs on JAX 0.12 and on spec in the same test: values, the final
contents of refs, printed jaxprs and exception classes and messages must
agree. A property test checks gradients of ref programs against central
finite differences in float64 (mathematics), and the dot-product test of
the ref primitives' transposes lives in tests/autodiff/test_transpose_rules.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp

Build = Callable[[Any, Any], Any]


def both(build: Build) -> tuple[Any, Any]:
    """``build(jax, jnp)`` and ``build(spec, spec.numpy)``."""
    return build(jax, jnp), build(spec, snp)


def outcome(thunk: Callable[[], Any]) -> Any:
    """A thunk's result, or its exception as (class name, message) with this
    file's path elided (messages name the differentiated function's file)."""
    try:
        return thunk()
    except Exception as err:  # noqa: BLE001 (the class is what is compared)
        return type(err).__name__, str(err).replace(__file__, "F")


def close(a: Any, b: Any, rtol: float = 2e-6) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-6)


# -------------------------------------------------- pure functions using refs


def _pure2(j: Any, jn: Any) -> Any:
    @j.jit
    def pure2(x: Any) -> Any:
        ref = j.new_ref(x)
        ref[...] = ref[...] + ref[...]
        return ref[...]
    return pure2


def test_grad_of_a_jitted_function_using_a_ref() -> None:
    def build(j: Any, jn: Any) -> Any:
        pure2 = _pure2(j, jn)
        return (j.grad(pure2)(3.0), str(j.make_jaxpr(j.grad(pure2))(3.0)),
                str(j.make_jaxpr(lambda x: j.jvp(pure2, (x,), (x,)))(3.0)))
    jr, sr = both(build)
    assert float(jr[0]) == float(sr[0]) == 2.0
    assert jr[1] == sr[1]
    assert jr[2] == sr[2]


def test_grad_through_a_ref_written_with_a_differentiated_value() -> None:
    def build(j: Any, jn: Any) -> Any:
        def g(x: Any) -> Any:
            x_ref = j.new_ref(0.)
            x_ref[...] = jn.sin(x)
            return x_ref[...]

        def normalize(x: Any) -> Any:
            acc = j.new_ref(0.0)
            acc[...] = jn.sum(x)
            return x / acc[...]
        return (j.grad(g)(1.0), str(j.make_jaxpr(j.grad(g))(1.0)),
                j.grad(lambda x: (normalize(x) * x).sum())(jn.arange(1.0, 4.0)))
    jr, sr = both(build)
    close(jr[0], sr[0])
    assert jr[1] == sr[1]
    close(jr[2], sr[2], rtol=1e-5)


def test_grad_of_indexed_reads_writes_and_add_updates() -> None:
    def build(j: Any, jn: Any) -> Any:
        def k(x: Any) -> Any:
            r = j.new_ref(jn.zeros(4))
            r[1] = x
            r[2:4] += x * jn.ones(2)
            r[jn.array([0, 0])] += x
            return (r[...] * jn.arange(4.)).sum() + j.freeze(r)[0]

        def setslice(x: Any) -> Any:
            r = j.new_ref(jn.ones(3))
            r[:] = r[...] * x
            return r[...].sum()
        return (j.grad(k)(2.), str(j.make_jaxpr(j.grad(k))(2.)), j.grad(setslice)(2.),
                str(j.make_jaxpr(j.grad(setslice))(2.)))
    jr, sr = both(build)
    assert float(jr[0]) == float(sr[0])
    assert jr[1] == sr[1]
    assert float(jr[2]) == float(sr[2])
    assert jr[3] == sr[3]


def test_jvp_and_linearize_with_refs() -> None:
    def build(j: Any, jn: Any) -> Any:
        def h(r: Any, x: Any) -> Any:
            r[...] = r[...] * x
            return r[...] + x
        r, t = j.new_ref(3.), j.new_ref(1.)
        out = j.jvp(h, (r, 2.), (t, 1.))
        lin = j.linearize(lambda x: h(j.new_ref(3.), x), 2.)[1](1.)
        return out, r[...], t[...], lin
    jr, sr = both(build)
    for a, b in zip(jax.tree.leaves(jr), spec.tree_util.tree_leaves(sr)):
        assert float(a) == float(b)


# ------------------------------------------------------------ plumbing refs


def test_plumbing_refs_and_the_error_for_differentiated_writes() -> None:
    def build(j: Any, jn: Any) -> Any:
        def err6(x: Any, some_plumbing_ref: Any) -> Any:
            y = x + x
            some_plumbing_ref[...] += y
            return y

        def foo(x: Any, some_plumbing_ref: Any) -> Any:
            y = x + x
            some_plumbing_ref[...] += j.lax.stop_gradient(y)
            return y
        r = j.new_ref(0.)
        return (outcome(lambda: j.grad(err6)(1., j.new_ref(0.))), j.grad(foo)(1., r), r[...],
                outcome(lambda: j.grad(lambda r: r[...] ** 2)(j.new_ref(1.))))
    jr, sr = both(build)
    assert jr[0] == sr[0] and jr[0][0] == "Exception"
    assert float(jr[1]) == float(sr[1]) and float(jr[2]) == float(sr[2])
    assert jr[3] == sr[3] and jr[3][0] == "TypeError"


def test_custom_vjp_stashing_gradients_into_a_plumbing_ref() -> None:
    def build(j: Any, jn: Any) -> Any:
        @j.custom_vjp
        def stash_grads(grads_ref: Any, x: Any) -> Any:
            return x

        def stash_grads_fwd(grads_ref: Any, x: Any) -> Any:
            return x, grads_ref

        def stash_grads_bwd(grads_ref: Any, g: Any) -> Any:
            grads_ref[...] = g
            return None, g
        stash_grads.defvjp(stash_grads_fwd, stash_grads_bwd)

        def f(x: Any, grads_ref: Any) -> Any:
            return jn.sin(stash_grads(grads_ref, x))
        grads_ref = j.new_ref(0.)
        g = j.grad(f)(1., grads_ref)
        return g, grads_ref[...], str(j.make_jaxpr(j.grad(f))(1., grads_ref))
    jr, sr = both(build)
    close(jr[0], sr[0])
    close(jr[1], sr[1])
    close(sr[1], np.cos(np.float32(1.0)))
    assert jr[2] == sr[2]


# ---------------------------------------------- gradients of ref arguments


def _f(x_ref: Any) -> Any:
    return x_ref[...] ** 2


def test_vjp_with_respect_to_a_ref_accumulates_into_the_bound_ref() -> None:
    def build(j: Any, jn: Any) -> Any:
        _, f_vjp = j.vjp(_f, j.new_ref(2.))
        unbound = outcome(lambda: f_vjp(1.0))
        grad_ref = j.new_ref(100.)
        returned = f_vjp.with_refs(grad_ref)(1.0)
        return unbound, repr(returned), grad_ref[...]
    jr, sr = both(build)
    assert jr[0] == sr[0] and jr[0][0] == "ValueError"
    assert jr[1] == sr[1] == "(GradRef(),)"
    assert float(jr[2]) == float(sr[2]) == 104.0


def test_vjp_differentiates_in_place_updates_of_a_ref_argument() -> None:
    def build(j: Any, jn: Any) -> Any:
        def g(x_ref: Any) -> Any:
            x_ref[...] = jn.sin(x_ref[...])
            return x_ref[...] ** 2
        x_ref = j.new_ref(2.)
        _, g_vjp = j.vjp(g, x_ref)
        g_grad_ref = j.new_ref(0.)
        g_vjp.with_refs(g_grad_ref)(1.0)
        text = str(j.make_jaxpr(lambda: g_vjp.with_refs(g_grad_ref)(1.0))())
        return x_ref[...], g_grad_ref[...], text
    jr, sr = both(build)
    close(jr[0], sr[0])
    close(jr[1], sr[1])  # within ULPs: XLA's sin(2.0) differs from NumPy's by 1 ULP
    close(sr[1], 2 * np.sin(2.0) * np.cos(2.0), rtol=1e-6)
    assert jr[2] == sr[2]


def test_gradient_refs_for_value_arguments() -> None:
    def build(j: Any, jn: Any) -> Any:
        grad_ref = j.new_ref(0.)
        _, sin_vjp = j.vjp(jn.sin, 1.0)
        returned = sin_vjp.with_refs(grad_ref)(1.0)

        @j.jit
        def take(x: Any, i: Any) -> Any:
            return x[i]
        acc = j.new_ref(jn.zeros(10))
        for i in [3, 5, 3]:
            _, take_vjp = j.vjp(take, jn.arange(10.), i)
            take_vjp.with_refs(acc, j.ad.GradValue())(1.0)
        return repr(returned), grad_ref[...], acc[...]
    jr, sr = both(build)
    assert jr[0] == sr[0] == "(GradRef(),)"
    close(jr[1], sr[1])
    np.testing.assert_array_equal(np.asarray(jr[2]), np.asarray(sr[2]))
    np.testing.assert_array_equal(np.asarray(sr[2]), [0, 0, 0, 2, 0, 1, 0, 0, 0, 0])


def test_gradient_refs_are_updated_only_where_slices_read() -> None:
    """The backward pass adds into a bound gradient ref in place at the slice
    read (``b[c:c+1] += j``), with no dense cotangent (docs' take_vjp_jaxpr)."""
    def build(j: Any, jn: Any) -> Any:
        @j.jit
        def take(x: Any, i: Any) -> Any:
            return x[i]
        x = jn.arange(10.)
        grad_ref = j.new_ref(jn.zeros(10))

        def take_vjp_jaxpr() -> None:
            _, take_vjp = j.vjp(take, x, 3)
            take_vjp.with_refs(grad_ref, j.ad.GradValue())(1.0)

        def static_slices(x: Any) -> Any:
            return (x[2:5] * 2.).sum() + x[7]

        def slices_vjp() -> None:
            _, f_vjp = j.vjp(static_slices, x)
            f_vjp.with_refs(grad_ref)(1.0)
        slices_vjp()
        return (str(j.make_jaxpr(take_vjp_jaxpr)()), str(j.make_jaxpr(slices_vjp)()),
                grad_ref[...], repr(take(x, 3)))
    jr, sr = both(build)
    assert jr[0] == sr[0]
    assert "b[c:c+1] += j" in sr[0]
    assert jr[1] == sr[1]
    np.testing.assert_array_equal(np.asarray(jr[2]), np.asarray(sr[2]))
    np.testing.assert_array_equal(np.asarray(sr[2]), [0, 0, 2, 2, 2, 0, 0, 1, 0, 0])


def test_dont_want_skips_the_unwanted_gradient() -> None:
    def build(j: Any, jn: Any) -> Any:
        W, x = jn.ones((4, 4)), jn.ones(4)
        _, f_vjp = j.vjp(lambda W, x: W @ x, W, x)
        W_bar, x_bar = f_vjp.with_refs(j.ad.GradValue(), j.ad.DontWant())(jn.ones(4))
        both_text = str(j.make_jaxpr(lambda: f_vjp(jn.ones(4)))())
        only_W = str(j.make_jaxpr(
            lambda: f_vjp.with_refs(j.ad.GradValue(), j.ad.DontWant())(jn.ones(4)))())
        ref_arg = j.vjp(_f, j.new_ref(2.))[1].with_refs(j.ad.DontWant())(1.0)
        return W_bar, repr(x_bar), both_text, only_W, repr(ref_arg)
    jr, sr = both(build)
    np.testing.assert_array_equal(np.asarray(jr[0]), np.asarray(sr[0]))
    assert jr[1] == sr[1] == "DidntWant()"
    # (the order of the two constants of the plain backward pass differs: not refs)
    assert jr[2].count("dot_general") == sr[2].count("dot_general") == 2
    assert jr[3] == sr[3] and sr[3].count("dot_general") == 1
    assert jr[4] == sr[4] == "(DidntWant(),)"


def test_with_refs_bad_entries() -> None:
    def build(j: Any, jn: Any) -> Any:
        _, v = j.vjp(lambda x: x * 2, jn.arange(3.))
        _, r = j.vjp(_f, j.new_ref(2.))
        g = j.new_ref(jn.ones(3))
        return (outcome(lambda: v.with_refs(g, g)),
                outcome(lambda: r.with_refs(j.ad.GradValue())),
                outcome(lambda: r.with_refs(j.new_ref(jn.zeros(2)))))
    jr, sr = both(build)
    assert jr == sr
    assert all(e[0] == "ValueError" for e in sr)


# ------------------------------------------------- finite differences (math)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 5), ops=st.lists(st.sampled_from(["get", "set", "add", "swap"]),
                                         min_size=1, max_size=5),
       seed=st.integers(0, 2**16))
def test_gradients_of_ref_programs_match_finite_differences(
        n: int, ops: list[str], seed: int, x64: None) -> None:
    """grad of a program that reads, writes, add-updates and swaps slices of
    a ref equals central differences of the same program, in float64."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal(n)
    starts = rng.integers(0, n - 1, size=len(ops))

    def f(x: Any) -> Any:
        r = spec.new_ref(snp.zeros(n))
        r[...] = snp.sin(x)
        total = 0.0
        for op, s in zip(ops, starts):
            part = slice(int(s), int(s) + 2)
            if op == "get":
                total = total + snp.sum(r[part] ** 2)
            elif op == "set":
                r[part] = snp.cos(r[part]) * x[:2]
            elif op == "add":
                spec.ref.addupdate(r, part, r[part] * x[1:3] if n > 2 else r[part])
            else:
                total = total + snp.sum(spec.ref.swap(r, part, x[:2] ** 2))
        return total + snp.sum(spec.freeze(r) * x)

    g = np.asarray(spec.grad(f)(snp.asarray(x0)))
    eps = 1e-6
    fd = np.array([(float(f(snp.asarray(x0 + eps * e))) - float(f(snp.asarray(x0 - eps * e))))
                   / (2 * eps) for e in np.eye(n)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_grad_through_a_jit_that_closes_over_a_ref() -> None:
    """The jit takes the ref (and, transposed, its cotangent ref) as an operand."""
    def build(j: Any, jn: Any) -> Any:
        def f(x: Any) -> Any:
            r = j.new_ref(x)

            @j.jit
            def inner(y: Any) -> Any:
                r[...] = r[...] * y
                return r[...] + 1.
            return inner(x) * r[...]
        return j.grad(f)(3.), str(j.make_jaxpr(j.grad(f))(3.))
    jr, sr = both(build)
    assert float(jr[0]) == float(sr[0]) == 114.0
    assert jr[1] == sr[1]


def test_dynamic_slice_writes_discharge_as_they_run() -> None:
    """The transposed take (an add-update at a dynamic slice of a gradient
    ref) discharged to a pure program gives what running it in place gives,
    for starts in and out of range (clamped as XLA's dynamic slices)."""
    from spec._src.core.interpreter import eval_jaxpr

    @spec.jit
    def take(x: Any, i: Any) -> Any:
        return x[i]

    def backward(g: Any, i: Any) -> None:
        _, take_vjp = spec.vjp(lambda x: take(x, i), snp.arange(5.))
        take_vjp.with_refs(g)(2.0)

    for i in (0, 3, 4, -2):
        jaxpr = spec.make_jaxpr(backward)(spec.new_ref(snp.zeros(5)), i)
        pure, consts = spec.discharge_state(jaxpr)
        (d_fin,) = eval_jaxpr(pure, consts, np.zeros(5, np.float32), np.int32(i))
        g = spec.new_ref(snp.zeros(5))
        backward(g, i)
        expected = np.zeros(5, np.float32)
        expected[i] = 2.0
        np.testing.assert_array_equal(np.asarray(d_fin), expected)
        np.testing.assert_array_equal(np.asarray(g[...]), expected)
