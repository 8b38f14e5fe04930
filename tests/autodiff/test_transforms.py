"""The autodiff machinery and transforms, against real JAX run live.

Functions here use primitives whose rules are in place from the start
(sin, cos, mul, add, sub, neg, jit); the per-family rule tests live in
tests/autodiff/test_<family>.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec.config import config
from spec.test_util import check_grads


def both(fn: Any) -> tuple[Any, Any]:
    return fn(spec, snp), fn(jax, jnp)


def f_sin_x(n: Any) -> Any:
    return lambda x: n.sin(x) * x


def assert_same(ours: Any, theirs: Any) -> None:
    o_leaves = spec.tree_util.tree_leaves(ours)
    t_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        assert np.asarray(o).dtype == np.asarray(t).dtype
        assert np.shape(o) == np.shape(t)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=2e-6, atol=1e-6)
        if hasattr(t, "weak_type"):
            assert o.aval.weak_type == t.weak_type


X3 = np.array([0.3, -1.2, 2.5], np.float32)


# ------------------------------------------------------------ values

@pytest.mark.parametrize("builder", [
    lambda j, n: j.grad(f_sin_x(n))(1.0),
    lambda j, n: j.grad(f_sin_x(n))(np.float32(0.7)),
    lambda j, n: j.grad(j.jit(f_sin_x(n)))(1.0),
    lambda j, n: j.grad(j.grad(f_sin_x(n)))(1.0),
    lambda j, n: j.grad(j.grad(j.grad(f_sin_x(n))))(0.4),
    lambda j, n: j.grad(j.grad(j.jit(f_sin_x(n))))(0.4),
    lambda j, n: j.grad(j.grad(j.grad(j.jit(f_sin_x(n)))))(0.4),
    lambda j, n: j.value_and_grad(lambda x, y: n.sin(x) * y - x, argnums=(0, 1))(0.5, 2.0),
    lambda j, n: j.grad(lambda x, y: (n.cos(x) * y, x), has_aux=True)(0.5, 2.0),
    lambda j, n: j.jvp(f_sin_x(n), (X3,), (np.ones(3, np.float32),)),
    lambda j, n: j.jvp(j.jit(f_sin_x(n)), (X3,), (X3,)),
    lambda j, n: j.vjp(f_sin_x(n), X3)[1](np.ones(3, np.float32)),
    lambda j, n: j.linearize(f_sin_x(n), X3)[1](X3),
    lambda j, n: j.jacfwd(f_sin_x(n))(X3),
    lambda j, n: j.jacrev(f_sin_x(n))(X3),
    lambda j, n: j.jacobian(lambda x, y: (x * y, n.sin(y)), argnums=(0, 1))(X3, X3),
    lambda j, n: j.hessian(lambda x: n.sin(x) * n.cos(x))(0.3),
    lambda j, n: j.grad(lambda x, i: x * n.sin(x), argnums=0)(2.0, 3),
    lambda j, n: j.grad(lambda d: d["a"] * n.sin(d["b"]))({"a": 1.5, "b": 0.5}),
    lambda j, n: j.grad(lambda x: j.lax.stop_gradient(x) * x)(3.0),
    lambda j, n: j.grad(lambda x: j.jit(lambda y: y * x)(n.sin(x)))(0.5),
])
def test_values_match_jax(builder: Any) -> None:
    ours, theirs = both(builder)
    assert_same(ours, theirs)


def test_allow_int_gives_float0() -> None:
    ours = spec.grad(lambda x, i: x * 2.0, argnums=(0, 1), allow_int=True)(2.0, 3)
    theirs = jax.grad(lambda x, i: x * 2.0, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert ours[1].dtype == theirs[1].dtype == spec.float0
    assert np.shape(ours[1]) == np.shape(theirs[1])
    assert float(ours[0]) == float(theirs[0])


def test_jvp_of_int_output_is_float0() -> None:
    f = lambda n: (lambda x: (x * 2.0, 3))  # noqa: E731
    (_, ours), (_, theirs) = both(lambda j, n: j.jvp(f(n), (1.0,), (1.0,)))
    assert ours[1].dtype == theirs[1].dtype == spec.float0


# ---------------------------------------------------------- jaxpr text

@pytest.mark.parametrize("builder", [
    lambda j, n: j.make_jaxpr(j.grad(f_sin_x(n)))(1.0),
    lambda j, n: j.make_jaxpr(j.grad(j.jit(f_sin_x(n))))(1.0),
    lambda j, n: j.make_jaxpr(lambda x, t: j.jvp(f_sin_x(n), (x,), (t,)))(1.0, 2.0),
    lambda j, n: j.make_jaxpr(
        lambda x, t: j.jvp(j.jit(lambda y: n.sin(y) * 2), (x,), (t,)))(1.0, 2.0),
    lambda j, n: j.make_jaxpr(j.linearize(f_sin_x(n), 1.0)[1])(1.0),
    lambda j, n: j.make_jaxpr(j.grad(lambda x: j.lax.stop_gradient(x) * x))(1.0),
    lambda j, n: j.make_jaxpr(lambda x: j.vjp(lambda y: n.sin(y) * 2, x)[1](x))(1.0),
    lambda j, n: j.make_jaxpr(j.grad(lambda x, y: n.sin(x) * y - x, argnums=1))(
        np.float32(1), np.float32(2)),
])
def test_jaxpr_text_matches_jax(builder: Any) -> None:
    ours, theirs = both(builder)
    assert str(ours) == str(theirs)


# ------------------------------------------------------ both linearize paths

def test_legacy_path_gives_identical_grads() -> None:
    f = lambda x, y: snp.sin(x * y) * snp.cos(x) - y  # noqa: E731
    direct = spec.grad(spec.jit(f), argnums=(0, 1))(X3[0], X3[1])
    with config.use_direct_linearize(False):
        legacy = spec.grad(spec.jit(f), argnums=(0, 1))(X3[0], X3[1])
    for a, b in zip(direct, legacy):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_flag_selects_path_and_keys_jit_cache() -> None:
    seen: list[str] = []

    def f(x: Any) -> Any:
        seen.append(type(x).__name__)
        return snp.sin(x)

    spec.grad(f)(1.0)
    with config.use_direct_linearize(False):
        spec.grad(f)(1.0)
    assert seen == ["LinearizeTracer", "JVPTracer"]
    assert config.jax_use_direct_linearize is True
    key_on = config.values_key()
    spec.config.update("jax_use_direct_linearize", False)
    try:
        assert config.values_key() != key_on
    finally:
        spec.config.update("jax_use_direct_linearize", True)


# ------------------------------------------- transformations of a jitted function are cached

def _call_jaxprs(j: Any, transform: Any, x: Any) -> list[Any]:
    """The jaxprs of the jit equations of ``make_jaxpr(transform)(x)``."""
    return [e.params["jaxpr"] for e in j.make_jaxpr(transform)(x).jaxpr.eqns
            if "jaxpr" in e.params]


@pytest.mark.parametrize("name", ["grad", "vmap", "jvp"])
def test_transformed_jit_calls_are_derived_once_as_in_jax(name: str) -> None:
    """grad, vmap and jvp of a jitted function trace it once per input type and
    configuration, and transforming it again gives the very jaxprs of the first time
    (JAX's caches hand back the same objects); another input type or another
    configuration gives new ones."""
    def run(j: Any, n: Any) -> list[Any]:
        traces: list[int] = []

        def f(x: Any) -> Any:
            traces.append(1)
            return n.sum(n.tanh(x) * x)
        jf = j.jit(f)
        transform = {"grad": j.grad(jf), "vmap": j.vmap(jf),
                     "jvp": lambda x: j.jvp(jf, (x,), (x,))}[name]
        x, other = (np.ones((3, 4), np.float32), np.ones((3, 5), np.float32)) \
            if name == "vmap" else (np.ones(4, np.float32), np.ones(5, np.float32))
        first, again = _call_jaxprs(j, transform, x), _call_jaxprs(j, transform, x)
        new_type = _call_jaxprs(j, transform, other)
        j.config.update("jax_numpy_rank_promotion", "raise")
        try:
            new_config = _call_jaxprs(j, transform, x)
        finally:
            j.config.update("jax_numpy_rank_promotion", "allow")
        same = [[a is b for a, b in zip(first, later)] for later in (again, new_type, new_config)]
        return [len(first), len(traces), *same]

    ours, theirs = run(spec, snp), run(jax, jnp)
    assert ours == theirs
    assert ours[2] == [True] * ours[0] and not any(ours[3]) and not any(ours[4])


def test_grad_and_vmap_of_jit_called_again_give_the_same_values() -> None:
    """The second call runs the derived programs of the first (generated code): the
    values stay JAX's."""
    def f(n: Any) -> Any:
        return lambda w, x: n.sum(n.tanh(x @ w) ** 2)
    r = np.random.default_rng(0)
    w, xs = r.standard_normal((4, 3)).astype(np.float32), r.standard_normal((5, 4), np.float32)
    grads = spec.grad(spec.jit(f(snp))), jax.grad(jax.jit(f(jnp)))
    maps = spec.vmap(spec.jit(f(snp)), (None, 0)), jax.vmap(jax.jit(f(jnp)), (None, 0))
    for ours, theirs, args in ((*grads, (w, xs)), (*maps, (w, xs))):
        first, second = ours(*args), ours(*args)
        assert np.asarray(first).tobytes() == np.asarray(second).tobytes()
        np.testing.assert_allclose(np.asarray(second), np.asarray(theirs(*args)), rtol=2e-6,
                                   atol=1e-6)


@pytest.mark.parametrize("raw,expected", [("0", False), ("false", False), ("", False),
                                          ("1", True), ("true", True)])
def test_env_var(raw: str, expected: bool) -> None:
    env = dict(os.environ, JAX_USE_DIRECT_LINEARIZE=raw)
    out = subprocess.run(
        [sys.executable, "-c", "import spec; print(spec.config.jax_use_direct_linearize)"],
        env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == str(expected)


OPS = ["sin", "cos", "mul", "add", "sub", "neg"]


@st.composite
def _programs(draw: Any) -> list[tuple[str, int, int]]:
    steps = draw(st.integers(1, 8))
    prog = []
    for k in range(steps):
        op = draw(st.sampled_from(OPS))
        prog.append((op, draw(st.integers(0, k + 1)), draw(st.integers(0, k + 1))))
    return prog


def _run(prog: list[tuple[str, int, int]], n: Any, x: Any, y: Any) -> Any:
    vals = [x, y]
    for op, i, j in prog:
        a, b = vals[i], vals[j]
        if op in ("sin", "cos"):
            vals.append(getattr(n, op)(a))
        elif op == "neg":
            vals.append(-a)
        else:
            vals.append({"mul": a * b, "add": a + b, "sub": a - b}[op])
    return n.sum(vals[-1] * vals[-2]) if False else (vals[-1] * vals[-2])


@settings(max_examples=25, deadline=None)
@given(_programs(), st.booleans())
def test_random_programs_both_paths_identical(prog: list[tuple[str, int, int]],
                                              jitted: bool) -> None:
    def f(x: Any, y: Any) -> Any:
        return _run(prog, snp, x, y)

    g = spec.jit(f) if jitted else f
    x, y = np.float32(0.7), np.float32(-1.3)
    t = (np.float32(0.5), np.float32(2.0))
    direct = (spec.grad(g, argnums=(0, 1))(x, y), spec.jvp(g, (x, y), t),
              spec.vjp(g, x, y)[1](np.float32(1.5)))
    with config.use_direct_linearize(False):
        legacy = (spec.grad(g, argnums=(0, 1))(x, y), spec.jvp(g, (x, y), t),
                  spec.vjp(g, x, y)[1](np.float32(1.5)))
    for a, b in zip(spec.tree_util.tree_leaves(direct), spec.tree_util.tree_leaves(legacy)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    theirs = jax.grad(lambda x, y: _run(prog, jnp, x, y), argnums=(0, 1))(x, y)
    for a, b in zip(direct[0], theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------ check_grads

def test_check_grads_passes_and_catches_a_wrong_rule() -> None:
    check_grads(lambda x, y: snp.sin(x) * y - snp.cos(y), (X3, X3[::-1].copy()), order=2)
    check_grads(spec.jit(lambda x: snp.sin(x) * x), (X3.astype(np.float64),), order=3)
    wrong = spec.rules.primitive("cos")
    saved = wrong.jvp
    try:
        # Replace cos's JVP by one with the wrong sign: both checks must fail.
        from spec._src.interpreters.ad_util import defjvp
        wrong.jvp = defjvp(lambda g, x, accuracy: spec.lax.mul(g, spec.lax.sin(x))
                           ).for_primitive(wrong)
        with pytest.raises(AssertionError):
            check_grads(snp.cos, (X3,), order=1, modes=("fwd",))
    finally:
        wrong.jvp = saved


# ---------------------------------------------------------------- VJP objects

def _layer(n: Any) -> Any:
    return lambda w, x: n.sin(x * w) * w


W = np.array([0.5, 1.5, -2.0], np.float32)


def test_vjp_object_channels_and_leaves() -> None:
    _, ours = spec.vjp(_layer(snp), W, X3)
    _, theirs = jax.vjp(_layer(jnp), W, X3)
    assert len(spec.tree_util.tree_leaves(ours)) == len(jax.tree_util.tree_leaves(theirs))
    assert len(ours.opaque_residuals) == len(theirs.opaque_residuals)
    # One structured residual per differentiated call: compared on a lax
    # program (JAX's jnp operators are inlined calls, spec's are not).
    def lax_layer(j: Any) -> Any:
        return j.jit(lambda w, x: j.lax.mul(j.lax.sin(j.lax.mul(x, w)), w))
    assert spec.vjp(lax_layer(spec), W, X3)[1].structured_residuals == \
        jax.vjp(lax_layer(jax), W, X3)[1].structured_residuals == [[]]
    for a, b in zip(ours.args_res, theirs.args_res):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_vjp_object_not_needed_args() -> None:
    f = lambda n: (lambda x, z: n.sin(x) * z)  # noqa: E731
    _, ours = spec.vjp(f(snp), X3, np.float32(2))
    _, theirs = jax.vjp(f(jnp), X3, np.float32(2))
    assert [repr(a) for a in ours.args_res][0] == repr(theirs.args_res[0]) == "NotNeeded()"


def test_saveable_args_restore_and_replace() -> None:
    y, ours = spec.vjp(_layer(snp), W, X3, saveable_args=(False, True))
    _, theirs = jax.vjp(_layer(jnp), W, X3, saveable_args=(False, True))
    assert repr(ours.args_res[0]) == repr(theirs.args_res[0]) == "NotSaveable()"
    assert len(spec.tree_util.tree_leaves(ours)) == len(jax.tree_util.tree_leaves(theirs))
    with pytest.raises(ValueError, match=r"args\[0\]"):
        ours(snp.ones_like(y))
    with pytest.raises(ValueError):
        theirs(np.ones(np.shape(y), np.float32))  # not a JAX op on a spec Array
    replaced = ours.replace(args_res=[W, ours.args_res[1]])
    ours.args_res[0] = W
    theirs.args_res[0] = W
    ct = np.ones(3, np.float32)
    assert_same(ours(ct), theirs(ct))
    assert_same(replaced(ct), theirs(ct))


def test_saveable_args_loose_prefix_on_dicts() -> None:
    def g(n: Any) -> Any:
        return lambda d: n.sin(d["bye"]) * d["hi"]
    d = {"hi": X3, "bye": W}
    _, ours = spec.vjp(g(snp), d, saveable_args=((True, False),))
    _, theirs = jax.vjp(g(jnp), d, saveable_args=((True, False),))
    assert sorted(ours.args_res[0]) == sorted(theirs.args_res[0])
    assert {k: repr(v) for k, v in ours.args_res[0].items() if k == "hi"} == \
        {k: repr(v) for k, v in theirs.args_res[0].items() if k == "hi"}
    ours.args_res = [d]
    theirs.args_res = [d]
    assert_same(ours(X3), theirs(X3))


def test_vjp_object_through_jit_and_fwd_and_bwd() -> None:
    def fwd_bwd(j: Any, n: Any) -> Any:
        fwd, bwd = j.fwd_and_bwd(_layer(n), argnums=(0, 1))
        y, res = fwd(W, X3)
        return bwd(res, n.ones_like(y))
    assert_same(*both(fwd_bwd))

    def manual(j: Any, n: Any) -> Any:
        fwd = j.jit(lambda w, x: j.vjp(_layer(n), w, x))
        bwd = j.jit(lambda f_vjp, ct: f_vjp(ct))
        y, res = fwd(W, X3)
        flat, tree = j.tree_util.tree_flatten(res)
        res = j.tree_util.tree_unflatten(tree, flat)
        return bwd(res, n.ones_like(y))
    assert_same(*both(manual))


def test_light_pipeline_from_docs() -> None:
    def run(j: Any, n: Any) -> Any:
        def fwd_light(w: Any, x: Any) -> Any:
            return j.vjp(_layer(n), w, x, saveable_args=(False, True))

        def bwd_light(f_vjp: Any, w: Any, y_bar: Any) -> Any:
            f_vjp.args_res[0] = w
            return f_vjp(y_bar)
        fwd, bwd = j.jit(fwd_light), j.jit(bwd_light)
        y, res = fwd(W, X3)
        return bwd(res, W, n.ones_like(y))
    assert_same(*both(run))


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("call,exc", [
    (lambda j, n: j.grad(lambda x: x * 2)(1), TypeError),
    (lambda j, n: j.grad(lambda x: x * 2)(np.ones(3, np.float32)), TypeError),
    (lambda j, n: j.grad(lambda x: x * 2, argnums=3)(1.0), TypeError),
    (lambda j, n: j.grad(lambda x: x * 2, holomorphic=True)(1.0), TypeError),
    (lambda j, n: j.grad(lambda x: (x * 2).astype(n.int32))(1.0), TypeError),
    (lambda j, n: j.vjp(lambda x: x * 2, X3)[1](np.ones(2, np.float32)), ValueError),
    (lambda j, n: j.vjp(lambda x: x * 2, X3)[1](np.ones(3, np.int32)), ValueError),
    (lambda j, n: j.vjp(lambda x: x * 2, X3)[1]((X3,)), ValueError),
    (lambda j, n: j.jvp(lambda x: x, (1.0,), (np.ones(2, np.float32),)), ValueError),
    (lambda j, n: j.jvp(lambda x: x, (1.0,), (1,)), TypeError),
    (lambda j, n: j.jvp(lambda x: x, 1.0, 1.0), TypeError),
    (lambda j, n: j.jvp(lambda x, y: x, (1.0, 2.0), (1.0,)), TypeError),
])
def test_bad_input_raises_jax_class(call: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        call(jax, jnp)
    with pytest.raises(exc):
        call(spec, snp)


def test_grad_error_names_the_dtype_and_argnums() -> None:
    with pytest.raises(TypeError, match="int32.*allow_int"):
        spec.grad(lambda x: x)(1)
    with pytest.raises(TypeError, match="argnums=3"):
        spec.grad(lambda x: x, argnums=3)(1.0)
    with pytest.raises(TypeError, match=r"shape: \(3,\)"):
        spec.grad(lambda x: x)(np.ones(3, np.float32))


def test_tracer_reprs() -> None:
    def reprs(j: Any) -> list[str]:
        seen: list[str] = []
        j.grad(lambda x: seen.append(repr(x)) or x)(1.0)
        j.jvp(lambda x: seen.append(repr(x)) or x, (1.0,), (1.0,))
        j.vjp(lambda x: seen.append(repr(x)) or x, np.float32([1.0, 2.0]))
        j.linearize(lambda x: seen.append(repr(x)) or x, 1.0)
        return seen
    assert reprs(spec) == reprs(jax)


# ------------------------------------------- random programs (spec.testing)

from spec.testing import PROGRAM_OPS, programs  # noqa: E402

# Reverse mode refuses while loops (in JAX too): the drawn programs leave them out.
DIFFERENTIABLE_OPS = [op for op in PROGRAM_OPS if op != "while_loop"]


@settings(max_examples=30, deadline=None)
@given(programs(max_steps=6, ops=DIFFERENTIABLE_OPS), st.booleans())
def test_generated_programs_both_paths_and_jax(prog: Any, jitted: bool) -> None:
    """For random well-typed programs: grads, jvps and vjps are bitwise equal
    under the direct and the legacy linearize path, and grads equal JAX's."""
    def loss(n: Any) -> Any:
        return lambda *xs: n.sum(prog(n, *xs))

    f = spec.jit(loss(snp)) if jitted else loss(snp)
    xs = prog.inputs(seed=3)
    argnums = tuple(range(len(xs)))
    tangents = tuple(np.ones_like(x) for x in xs)

    def run() -> Any:
        return (spec.grad(f, argnums=argnums)(*xs), spec.jvp(f, tuple(xs), tangents),
                spec.vjp(f, *xs)[1](np.float32(1.0)))

    direct = run()
    with config.use_direct_linearize(False):
        legacy = run()
    for a, b in zip(spec.tree_util.tree_leaves(direct), spec.tree_util.tree_leaves(legacy)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    theirs = jax.grad(loss(jnp), argnums=argnums)(*xs)
    for a, b in zip(direct[0], theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-3,
                                   equal_nan=True)


def test_cotangent_type_mismatch_raises() -> None:
    """The transpose machinery checks each cotangent a rule produces against
    ct_type() of its variable: a rule returning the wrong shape is caught."""
    neg = spec.rules.primitive("neg")
    saved = neg.transpose
    try:
        neg.transpose = lambda ct, x: [snp.zeros((7,), np.float32)]
        with pytest.raises(TypeError, match="cotangent type"):
            spec.grad(lambda x: -x)(1.0)
    finally:
        neg.transpose = saved
    assert spec.grad(lambda x: -x)(1.0) == -1.0


def test_missing_sections_has_no_autodiff_entries() -> None:
    missing = spec.rules.missing_sections()
    assert not [m for m in missing if m[1] in ("jvp", "transpose")]
    for prim in spec.rules.REGISTRY.values():
        assert callable(prim.jvp) or isinstance(prim.jvp, spec._src.core.interpreter.NotApplicable)


@pytest.mark.parametrize("name", ["sin", "exp", "tanh", "log1p", "sqrt"])
def test_narrow_float_reverse_mode(name: str) -> None:
    """bfloat16 (NumPy kind "V", like float0) and float8 values differentiate
    as floats: tangents are not dropped."""
    import ml_dtypes
    for dt in (ml_dtypes.bfloat16, np.float16):
        x = np.array([0.5, 1.5, -2.0], dt)

        def f(n: Any) -> Any:
            return lambda v: getattr(n, name)(n.abs(v) + 0.1).sum()
        ours, theirs = spec.grad(f(snp))(x), jax.grad(f(jnp))(x)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(np.asarray(ours, np.float32),
                                      np.asarray(theirs, np.float32))


@pytest.mark.parametrize("builder", [
    lambda j, n: j.make_jaxpr(j.jacfwd(lambda x: n.sin(x) * x))(X3),
    lambda j, n: j.make_jaxpr(j.jacrev(lambda x: n.sin(x) * x))(X3),
    lambda j, n: j.make_jaxpr(j.hessian(lambda x: n.sin(x).sum()))(X3),
])
def test_jacobian_jaxprs_match_jax(builder: Any) -> None:
    """jacfwd/jacrev are vmaps of jvp/vjp over the standard basis, as in JAX."""
    ours, theirs = both(builder)
    assert str(ours) == str(theirs)
