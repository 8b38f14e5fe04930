"""reduce_window_sum/max/min and lax.reduce_window: values, jaxprs, JVPs,
grads and errors twinned with JAX run live; vmap against a loop; the sum's
transpose by the dot-product test; derivatives by finite differences in
float64; the lowering compiled by jaxlib against spec's evaluation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
from spec import lax as slax
from tests.lowering.xla_run import assert_bitwise, canonical, compile_and_run, lowered
from tests.support.pair import errors_alike
from tests.support.twin import prefetch, run_jax, run_spec

_rng = np.random.default_rng(20)
# Small integers: many ties inside windows, so the grads' tie-breaking shows.
TIES = _rng.integers(-3, 4, (4, 6)).astype(np.float32)
# Distinct values: no ties, so every window's extremum is unique.
DISTINCT = _rng.permutation(24).reshape(4, 6).astype(np.float32) - 11.5
TANGENT = _rng.normal(size=(4, 6)).astype(np.float32)

# (window_dimensions, window_strides, padding, base_dilation, window_dilation)
CASES = [
    ((2, 3), (1, 2), "SAME", None, None),
    ((2, 2), (1, 1), "VALID", None, None),
    ((3, 2), (2, 3), "SAME_LOWER", None, None),
    ((2, 3), (1, 2), "VALID", (1, 2), (2, 1)),
    ((2, 2), (2, 1), ((1, 0), (-1, 2)), (2, 1), None),
    ((3, 2), (1, 1), ((2, 2), (1, 1)), None, None),
    ((5, 1), (1, 1), "VALID", None, None),  # longer than the axis: an empty result
]
KINDS = [("add", 0.0), ("max", -np.inf), ("min", np.inf)]


def _fn(lax: Any, kind: str, init: Any, case: tuple[Any, ...]) -> Callable[[Any], Any]:
    w, s, p, b, r = case
    return lambda x: lax.reduce_window(x, init, getattr(lax, kind), w, s, p, b, r)


def _jax_grad_defined(kind: str, case: tuple[Any, ...]) -> bool:
    """JAX's max/min VJP refuses window dilation and negative padding."""
    w, s, p, b, r = case
    negative = not isinstance(p, str) and any(v < 0 for pair in p for v in pair)
    return kind == "add" or (r is None and not negative)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind,init", KINDS)
def test_values_and_jaxpr_match_jax(kind: str, init: float, case: tuple[Any, ...]) -> None:
    # int32 (wrapping sums, integer extremes as init) on a few cases only: JAX's
    # compilations are this file's main cost.
    for x in (TIES, TIES.astype(np.int32))[:2 if case in CASES[:3] else 1]:
        i = init if x.dtype == np.float32 else (0 if kind == "add" else
                                                int(np.iinfo(np.int32).min if kind == "max"
                                                    else np.iinfo(np.int32).max))
        ours, theirs = _fn(slax, kind, i, case), _fn(jlax, kind, i, case)
        a, e = np.asarray(ours(x)), np.asarray(theirs(x))
        assert a.dtype == e.dtype and a.shape == e.shape
        assert a.tobytes() == e.tobytes()
        assert str(spec.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind,init", KINDS)
def test_grads_match_jax_with_ties(kind: str, init: float, case: tuple[Any, ...]) -> None:
    if not _jax_grad_defined(kind, case):
        pytest.skip("JAX has no VJP for this max/min configuration")
    loss = lambda lax: (lambda x: (_fn(lax, kind, init, case)(x) ** 2).sum())  # noqa: E731
    ours = np.asarray(spec.grad(loss(slax))(TIES))
    theirs = np.asarray(jax.grad(loss(jlax))(TIES))
    assert ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("case", [c for c in CASES if _jax_grad_defined("max", c)])
@pytest.mark.parametrize("kind,init", KINDS[1:])
def test_grads_match_jax_with_nans(kind: str, init: float, case: tuple[Any, ...]) -> None:
    """XLA's select-and-scatter takes a NaN when it reaches one and gives it up
    for the next element; spec's gradient picks the same elements."""
    x = TIES.copy()
    x[0, 1] = x[1, 0] = x[1, 1] = x[2, 5] = x[3, 3] = np.nan
    loss = lambda lax: (lambda v: _fn(lax, kind, init, case)(v).sum())  # noqa: E731
    ours = np.asarray(spec.grad(loss(slax))(x))
    theirs = np.asarray(jax.grad(loss(jlax))(x))
    assert ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind,init", KINDS)
def test_jvp_matches_jax_without_ties(kind: str, init: float, case: tuple[Any, ...]) -> None:
    _, ours = spec.jvp(_fn(slax, kind, init, case), (DISTINCT,), (TANGENT,))
    _, theirs = jax.jvp(_fn(jlax, kind, init, case), (DISTINCT,), (TANGENT,))
    if kind == "add":  # XLA sums a window with a padded minor axis in its own order
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6, atol=1e-6)
    else:  # the extremum's tangent itself, bit for bit
        assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
@pytest.mark.parametrize("padding", [((0, 0), (0, 0), (0, 0)), ((1, 0), (2, 1), (0, 0)),
                                     ((0, 0), (0, 0), (-1, 0))])
def test_float_sums_round_as_xla(dtype: Any, padding: Any) -> None:
    """Values spanning six decades: the sum's bits show the order of the additions,
    row-major from the init value, as XLA's unless the minor axis is padded."""
    x = (_rng.normal(size=(4, 5, 6)) * 1e3 ** _rng.integers(-1, 2, (4, 5, 6))).astype(dtype)
    f = lambda lax: (lambda v: lax.reduce_window(  # noqa: E731
        v, np.asarray(0, dtype), lax.add, (2, 3, 2), (1, 2, 1), padding))
    assert np.asarray(f(slax)(x)).tobytes() == np.asarray(f(jlax)(x)).tobytes()


def test_sum_jaxpr_of_grad_matches_jax() -> None:
    case = CASES[4]
    loss = lambda lax: (lambda x: _fn(lax, "add", 0.0, case)(x).sum())  # noqa: E731
    assert str(spec.make_jaxpr(spec.grad(loss(slax)))(TIES)) == \
        str(jax.make_jaxpr(jax.grad(loss(jlax)))(TIES))


@pytest.mark.parametrize("kind,init", KINDS)
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_matches_a_loop(kind: str, init: float, axis: int) -> None:
    f = _fn(slax, kind, init, CASES[3])
    batch = np.stack([TIES, DISTINCT, TIES * 2], axis)
    mapped = np.asarray(spec.vmap(f, axis)(batch))
    looped = np.stack([np.asarray(f(np.take(batch, i, axis))) for i in range(3)])
    assert mapped.tobytes() == looped.tobytes()


@pytest.mark.parametrize("case", CASES)
def test_sum_transpose_dot_product(x64: None, case: tuple[Any, ...]) -> None:
    f = _fn(slax, "add", 0.0, case)
    x = _rng.normal(size=(4, 6))
    fx, vjp = spec.vjp(f, x)
    y = _rng.normal(size=np.shape(fx))
    (xt,) = vjp(y)
    lhs, rhs = float(np.vdot(np.asarray(fx), y)), float(np.vdot(x, np.asarray(xt)))
    assert abs(lhs - rhs) <= 1e-12 * max(1.0, abs(lhs))


@pytest.mark.parametrize("case", CASES[:4])  # finite results: no all-padding windows
@pytest.mark.parametrize("kind,init", KINDS)
def test_grad_matches_finite_differences(x64: None, kind: str, init: float,
                                         case: tuple[Any, ...]) -> None:
    if not _jax_grad_defined(kind, case):
        pytest.skip("JAX has no VJP for this max/min configuration")
    x = DISTINCT.astype(np.float64)  # distinct values: max/min differentiable here
    weights = _rng.normal(size=np.shape(_fn(slax, kind, init, case)(x)))
    loss = lambda v: (_fn(slax, kind, init, case)(v) * weights).sum()  # noqa: E731
    g = np.asarray(spec.grad(loss)(x))
    d = _rng.normal(size=x.shape)
    eps = 1e-6
    fd = (float(loss(x + eps * d)) - float(loss(x - eps * d))) / (2 * eps)
    assert abs(fd - float(np.vdot(g, d))) <= 1e-6 * max(1.0, abs(fd))


def test_weak_type_and_shape_tuple_match_jax() -> None:
    f = lambda lax: (lambda x: lax.reduce_window(x, 0.0, lax.add, (), ()))  # noqa: E731
    ours, theirs = spec.eval_shape(f(slax), 2.0), jax.eval_shape(f(jlax), 2.0)
    assert ours.weak_type == theirs.weak_type and ours.dtype == theirs.dtype
    for args in [((4, 6), (2, 3), (1, 2), ((0, 0), (1, 1))),
                 ((5, 7), (2, 2), (2, 3), ((1, -1), (0, 2)), (2, 1), (1, 3))]:
        assert slax.reduce_window_shape_tuple(*args) == jlax.reduce_window_shape_tuple(*args)


@pytest.mark.parametrize("kind,init,window,strides,x", [
    ("add", 0.0, (2,), (1, 1), TIES),          # too few window dimensions
    ("add", 0.0, (2, 2), (1,), TIES),          # strides of the wrong length
    ("max", -np.inf, (2, 0), (1, 1), TIES),     # an empty window
    ("max", -np.inf, (2, 2), (1, 0), TIES),     # a zero stride
    ("add", False, (2, 2), (1, 1), TIES > 0),   # a bool sum
])
def test_errors_match_jax(kind: str, init: Any, window: Any, strides: Any, x: Any) -> None:
    f = lambda lax: (lambda v: lax.reduce_window(  # noqa: E731
        v, init, getattr(lax, kind), window, strides, ((0, 0),) * len(window)))
    ours, theirs = errors_alike(lambda: f(slax)(x), lambda: f(jlax)(x))
    assert str(theirs).split("\n")[0] in str(ours)


def _argmax_pair(lax: Any) -> Callable[[Any, Any], Any]:
    """A variadic computation: the larger key and its index (ties: the first)."""
    def pick(a: Any, b: Any) -> Any:
        which = lax.ge(a[0], b[0])
        return lax.select(which, a[0], b[0]), lax.select(which, a[1], b[1])
    return pick


GENERAL = [  # (name, program), each of a float32 [4, 6] operand
    ("mul", lambda lax, x: lax.reduce_window(x, 1.0, lax.mul, (2, 3), (1, 2), "SAME")),
    ("add from 1", lambda lax, x: lax.reduce_window(x, np.float32(1), lax.add, (2, 2))),
    ("argmax", lambda lax, x: lax.reduce_window(
        (x, lax.convert_element_type(x * 0 + 1, np.int32).cumsum(1)),
        (np.float32(-np.inf), np.int32(-1)), _argmax_pair(lax), (3, 2), (2, 1),
        ((1, 0), (-1, 2)), (2, 1), (1, 2))),
    ("xor", lambda lax, x: lax.reduce_window(
        lax.convert_element_type(x, np.int32), np.int32(5), lax.bitwise_xor, (2, 3), (1, 1),
        "VALID", None, (2, 1))),
    # The init value is added once per window, not again for each padded or
    # base-dilation position (XLA CPU passes over those).
    ("add from 1, padded", lambda lax, x: lax.reduce_window(
        x, np.float32(1), lax.add, (2, 3), (1, 2), ((1, 1), (2, 0)), (2, 1))),
]


@pytest.mark.parametrize("name,program", GENERAL, ids=[g[0] for g in GENERAL])
def test_general_computation_matches_jax(name: str, program: Any) -> None:
    ours, theirs = (lambda x: program(slax, x)), (lambda x: program(jlax, x))
    for a, e in zip(spec.tree_util.tree_leaves(ours(TIES)),
                    jax.tree_util.tree_leaves(theirs(TIES))):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        assert np.asarray(a).tobytes() == np.asarray(e).tobytes()
    assert str(spec.make_jaxpr(ours)(TIES)) == str(jax.make_jaxpr(theirs)(TIES))


def _general_jvp(lib: Any, lax: Any) -> Callable[[Any, Any], Any]:
    return lambda x, t: lib.jvp(lambda v: GENERAL[0][1](lax, v), (x,), (t,))


def test_general_jvp_jaxpr_matches_jax() -> None:
    assert str(spec.make_jaxpr(_general_jvp(spec, slax))(DISTINCT, TANGENT)) == \
        str(jax.make_jaxpr(_general_jvp(jax, jlax))(DISTINCT, TANGENT))


def test_general_jvp_matches_finite_differences(x64: None) -> None:
    x, t = DISTINCT.astype(np.float64) / 8, TANGENT.astype(np.float64)
    _, ours = _general_jvp(spec, slax)(x, t)
    f = lambda v: np.asarray(GENERAL[0][1](slax, v))  # noqa: E731
    eps = 1e-6
    fd = (f(x + eps * t) - f(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(ours), fd, rtol=1e-6, atol=1e-8)


def test_general_vmap_matches_a_loop() -> None:
    f = lambda x: GENERAL[2][1](slax, x)  # noqa: E731
    batch = np.stack([TIES, DISTINCT, TIES * 2], 1)
    mapped = spec.vmap(f, 1)(batch)
    for i in range(3):
        for m, one in zip(mapped, f(batch[:, i])):
            assert np.asarray(m)[i].tobytes() == np.asarray(one).tobytes()


@pytest.mark.parametrize("init,computation", [
    (np.int32(1), "mul"),                       # the init value's dtype differs
    (np.ones(2, np.float32), "mul"),            # a non-scalar init value
    ((1.0, 2.0), "mul"),                        # trees differ
])
def test_general_errors_match_jax(init: Any, computation: str) -> None:
    f = lambda lax: lax.reduce_window(TIES, init, getattr(lax, computation), (2, 2))  # noqa: E731
    ours, theirs = errors_alike(lambda: f(slax), lambda: f(jlax))
    assert str(theirs).split("\n")[0] in str(ours)


def _pool_vjp(lax: Any, kind: str) -> Callable[[Any, Any], Any]:
    """The VJP of a strided, padded max/min pooling: select_and_scatter_add."""
    def vjp(x: Any, ct: Any) -> Any:
        pool = lambda v: lax.reduce_window(v, -np.inf if kind == "max" else np.inf,  # noqa: E731
                                           getattr(lax, kind), (2, 3), (2, 1), "SAME")
        return (spec if lax is slax else jax).vjp(pool, x)[1](ct)[0]
    return vjp


@pytest.mark.parametrize("kind", ["max", "min"])
def test_select_and_scatter_add_is_the_transpose_of_select_and_gather_add(
        x64: None, kind: str) -> None:
    """The dot-product test between the pooling's JVP (select_and_gather_add)
    and its VJP (select_and_scatter_add), on values with ties."""
    x = TIES.astype(np.float64)
    pool = lambda v: slax.reduce_window(v, -np.inf if kind == "max" else np.inf,  # noqa: E731
                                        getattr(slax, kind), (2, 3), (2, 1), "SAME")
    t = _rng.normal(size=x.shape)
    _, jt = spec.jvp(pool, (x,), (t,))
    ct = _rng.normal(size=np.shape(jt))
    vt = _pool_vjp(slax, kind)(x, ct)
    lhs, rhs = float(np.vdot(np.asarray(jt), ct)), float(np.vdot(t, np.asarray(vt)))
    assert abs(lhs - rhs) <= 1e-12 * max(1.0, abs(lhs))


def test_pooling_vjp_vmap_matches_a_loop_and_jax() -> None:
    batch = np.stack([TIES, DISTINCT, TIES * 2])
    cts = _rng.normal(size=(3, 2, 6)).astype(np.float32)
    mapped = np.asarray(spec.vmap(_pool_vjp(slax, "max"))(batch, cts))
    looped = np.stack([np.asarray(_pool_vjp(slax, "max")(b, c)) for b, c in zip(batch, cts)])
    assert mapped.tobytes() == looped.tobytes()
    assert mapped.tobytes() == np.asarray(jax.vmap(_pool_vjp(jlax, "max"))(batch, cts)).tobytes()


def _lowering_program(lax: Any) -> Callable[[Any], Any]:
    """Every monoid on five cases, the general computations, and max/min
    pooling's JVP and VJP (select_and_gather_add, select_and_scatter_add)."""
    def fn(x: Any) -> Any:
        pools = tuple(_fn(lax, kind, init, case)(x) for kind, init in KINDS
                      for case in CASES[:5])
        general = tuple(GENERAL[k][1](lax, x) for k in (0, 2))
        grads = (_pool_vjp(lax, "max")(x, x[::2] + 1),)
        lib = spec if lax is slax else jax
        jvps = (lib.jvp(_fn(lax, "min", np.inf, CASES[0]), (x,), (x * 2,))[1],)
        return pools + general + grads + jvps
    return fn


def test_lowering_compiles_to_spec_values_and_jax_text() -> None:
    text = lowered(_lowering_program(slax), TIES)
    ours = [np.asarray(o) for o in spec.tree_util.tree_leaves(
        spec.jit(_lowering_program(slax))(TIES))]
    assert_bitwise(ours, compile_and_run(text, [TIES]))
    theirs = jax.jit(_lowering_program(jlax)).lower(TIES).as_text()
    assert canonical(text) == canonical(theirs)


SHARDING_PROGRAM = r'''
import json
import numpy as np
jax, jnp = IMPL
mesh = jax.make_mesh((2, 2), ("X", "Y"), axis_types=(jax.sharding.AxisType.Explicit,) * 2)
out = {}
x = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
for layout in [("X",), (None, "Y"), ("X", "Y"), (("X", "Y"),)]:
    xs = jax.device_put(x, jax.NamedSharding(mesh, jax.P(*layout)))
    for name, args in [("trivial rows", ((1, 2), (1, 2), "VALID")),
                       ("even", ((2, 2), (2, 2), "VALID")),
                       ("uneven", ((2, 3), (1, 1), "VALID")),
                       ("same", ((2, 3), (1, 2), "SAME"))]:
        for op, init in [(jax.lax.add, 0.0), (jax.lax.max, -np.inf)]:
            key = f"{layout} {name} {op.__name__}"
            try:
                r = jax.jit(lambda v: jax.lax.reduce_window(v, init, op, *args))(xs)
                out[key] = str(jax.typeof(r))
            except Exception as e:
                out[key] = "raises " + type(e).__name__
print(json.dumps(out))
'''


def test_sharding_rule_matches_jax(four_devices: None) -> None:
    theirs, ours = run_jax(SHARDING_PROGRAM), run_spec(SHARDING_PROGRAM)
    assert any("@X" in v for v in theirs.values())
    assert any(v.startswith("raises") for v in theirs.values())
    assert ours == theirs


prefetch(SHARDING_PROGRAM)


@pytest.mark.parametrize("layout", [("X",), (None, "Y"), ("X", "Y")])
def test_sharded_operands_give_the_unsharded_values(four_devices: None,
                                                    layout: tuple[Any, ...]) -> None:
    """Per device: a local reduction over split axes with trivial windows,
    the gathered program otherwise; the values are those of one device."""
    mesh = spec.make_mesh((2, 2), ("X", "Y"),
                          axis_types=(spec.sharding.AxisType.Explicit,) * 2)
    x = np.arange(4 * 8, dtype=np.float32).reshape(4, 8) % 7
    xs = spec.device_put(x, spec.NamedSharding(mesh, spec.P(*layout)))
    for kind, init in KINDS:
        f = lambda v: slax.reduce_window(v, init, getattr(slax, kind),  # noqa: E731
                                         (1, 2), (1, 2), "VALID")
        assert np.asarray(spec.jit(f)(xs)).tobytes() == np.asarray(f(x)).tobytes()


def test_select_and_scatter_matches_jax() -> None:
    """The general primitive (select_and_scatter_add lowers through it):
    padding never selected, duplicates combined in window order."""
    from jax._src.lax.windowed_reductions import _select_and_scatter
    from spec._src.lax.windows import select_and_scatter
    source = _rng.normal(size=(3, 3)).astype(np.float32)
    args = ((2, 3), (2, 2), ((1, 1), (1, 0)))
    ours = select_and_scatter(TIES, slax.ge, *args, source, np.float32(-5), slax.max)
    theirs = _select_and_scatter(TIES, jlax.ge, *args, source, np.float32(-5), jlax.max)
    assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()
    f = lambda lax, sas: (lambda x: sas(x, lax.le, *args, source, np.float32(0),  # noqa: E731
                                        lax.add))
    assert str(spec.make_jaxpr(f(slax, select_and_scatter))(TIES)) == \
        str(jax.make_jaxpr(f(jlax, _select_and_scatter))(TIES))
