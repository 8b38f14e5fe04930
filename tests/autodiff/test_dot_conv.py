"""JVP and transpose rules of dot_general and conv_general_dilated (both
bilinear), over hypothesis-drawn dimension numbers, strides, paddings,
dilations and group counts.

Checked against mathematics (finite differences and the dot-product test,
``spec.test_util.check_grads``) and against real JAX run live: cotangent
values and types, and the jaxpr text of the differentiated functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec import lax as slax
from spec.config import config
from spec._src.core.registry import missing_sections
from spec.test_util import check_grads

SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

Side = tuple[Any, Any, Any]  # (api module, numpy module, lax module)
SPEC: Side = (spec, snp, slax)
JAX: Side = (jax, jnp, jax.lax)


def needs(*prims: str) -> None:
    """Skip when a rule of another family that the check goes through has
    not landed yet."""
    pending = {n for n, s, _ in missing_sections() if s in ("jvp", "transpose")}
    missing = sorted(set(prims) & pending)
    if missing:
        pytest.skip(f"needs the AD rules of {missing} (another family)")


def on_both(make: Callable[[Side], Any]) -> tuple[Any, Any]:
    return make(SPEC), make(JAX)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return np.asarray(v).astype(dtype)


def assert_same(ours: Any, theirs: Any, rtol: float = 1e-5) -> None:
    """Leafwise: shape, dtype, weak type, and values up to rounding (the
    contractions may sum in another order than XLA)."""
    o_leaves = spec.tree_util.tree_leaves(ours)
    t_leaves = jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        oa, ta = np.asarray(o), np.asarray(t)
        assert oa.dtype == ta.dtype and oa.shape == ta.shape, (oa.dtype, ta.dtype,
                                                                 oa.shape, ta.shape)
        assert o.aval.weak_type == t.weak_type
        wide = np.complex128 if oa.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(oa.astype(wide), ta.astype(wide), rtol=rtol, atol=rtol)


def vjp_matches(f: Callable[[Side], Callable[..., Any]], args: tuple[np.ndarray, ...],
                rtol: float = 1e-5, jaxpr: bool = True) -> None:
    """spec's jvp and vjp of ``f`` equal JAX's (values and types); the vjp's
    jaxpr prints as JAX's."""
    rng = np.random.default_rng(0)
    ts = tuple(_random(rng, a.shape, a.dtype) for a in args)
    assert_same(spec.jvp(f(SPEC), args, ts), jax.jvp(f(JAX), args, ts), rtol)
    out = jax.eval_shape(f(JAX), *args)
    ct = _random(rng, out.shape, out.dtype)
    ours = spec.vjp(f(SPEC), *args)[1](ct)
    theirs = jax.vjp(f(JAX), *args)[1](ct)
    assert_same(ours, theirs, rtol)
    if jaxpr:
        texts = on_both(lambda s: str(s[0].make_jaxpr(
            lambda *a: s[0].vjp(f(s), *a[:-1])[1](a[-1]))(*args, ct)))
        assert texts[0] == texts[1]


def paths_identical(f: Callable[..., Any], *args: Any) -> None:
    """The direct and the legacy linearize give bitwise-identical grads."""
    argnums = tuple(range(len(args)))
    direct = spec.grad(lambda *a: f(*a).sum(), argnums=argnums)(*args)
    with config.use_direct_linearize(False):
        legacy = spec.grad(lambda *a: f(*a).sum(), argnums=argnums)(*args)
    for a, b in zip(direct, legacy):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_no_pending_ad_sections() -> None:
    pending = [(n, s) for n, s, _ in missing_sections()
               if n in ("dot_general", "conv_general_dilated") and s in ("jvp", "transpose")]
    assert pending == []


# ============================================================ dot_general

@st.composite
def dot_problems(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...], Any]:
    """Operand shapes and dimension numbers: batch, contracting and free
    axes in random positions of each operand (ranks up to 4, sides 0..3)."""
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nl, nr = draw(st.integers(0, 4 - nb - nc)), draw(st.integers(0, 4 - nb - nc))
    side = st.integers(0, 3)
    bs = [draw(side) for _ in range(nb)]
    cs = [draw(side) for _ in range(nc)]
    ls = [draw(side) for _ in range(nl)]
    rs = [draw(side) for _ in range(nr)]

    def place(free: list[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        kinds = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + \
                [("f", i) for i in range(len(free))]
        order = draw(st.permutations(kinds))
        sizes = {"b": bs, "c": cs, "f": free}
        shape = tuple(sizes[k][i] for k, i in order)
        batch = tuple(order.index(("b", i)) for i in range(nb))
        contract = tuple(order.index(("c", i)) for i in range(nc))
        return shape, batch, contract

    lshape, lb, lc = place(ls)
    rshape, rb, rc = place(rs)
    # The contracting pairs may be listed in any order (the same on both sides).
    pairing = draw(st.permutations(range(nc)))
    lc = tuple(lc[i] for i in pairing)
    rc = tuple(rc[i] for i in pairing)
    return lshape, rshape, ((lc, rc), (lb, rb))


@SETTINGS
@given(problem=dot_problems(), dtype=st.sampled_from([np.float32, np.complex64]))
def test_dot_general(problem: Any, dtype: Any) -> None:
    lshape, rshape, dims = problem
    rng = np.random.default_rng(1)
    x, y = _random(rng, lshape, dtype), _random(rng, rshape, dtype)

    def f(side: Side) -> Callable[..., Any]:
        return lambda a, b: side[2].dot_general(a, b, dims)

    # spec.test_util's dot-product test leaves out JAX's conjugations, so it
    # only holds for real maps; complex reverse mode is compared with JAX.
    check_grads(f(SPEC), (x, y), order=2,
                modes=("fwd", "rev") if dtype == np.float32 else ("fwd",))
    vjp_matches(f, (x, y))
    if dtype == np.float32:
        paths_identical(f(SPEC), x, y)


@pytest.mark.parametrize("dtypes", [
    (ml_dtypes.bfloat16, np.float32), (ml_dtypes.bfloat16, None),
    (np.float16, np.float32), (np.float32, np.float32), (np.float32, None), (np.float16, None)])
def test_dot_general_preferred_element_type(dtypes: tuple[Any, Any]) -> None:
    operand, pet = dtypes
    rng = np.random.default_rng(2)
    x, y = _random(rng, (2, 3, 4), operand), _random(rng, (2, 4, 5), operand)
    dims = (((2,), (1,)), ((0,), (0,)))

    def f(side: Side) -> Callable[..., Any]:
        return lambda a, b: side[2].dot_general(a, b, dims, preferred_element_type=pet)

    # The cotangents come back in the operand dtype (converted, as in JAX).
    vjp_matches(f, (x, y), rtol=1e-5 if operand == np.float32 else 2e-2)


def test_dot_general_weak_cotangents() -> None:
    # Weak-typed Python scalars stay weak through the transposes.
    ours, theirs = on_both(lambda s: s[0].grad(
        lambda a, b: s[2].dot_general(a, b, (((), ()), ((), ()))), argnums=(0, 1))(2.0, 3.0))
    assert_same(ours, theirs)


def test_dot_general_transpose_is_linear_transpose() -> None:
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((4, 2)).astype(np.float32)
    ct = np.ones((3, 2), np.float32)
    ours, theirs = on_both(lambda s: s[0].linear_transpose(lambda a: s[1].dot(a, w), x)(ct))
    assert_same(ours, theirs)
    ours, theirs = on_both(lambda s: s[0].linear_transpose(lambda b: s[1].dot(x, b), w)(ct))
    assert_same(ours, theirs)


def test_dot_general_integer_operand() -> None:
    # An integer operand has no tangent: only the float side is differentiated.
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)

    def f(side: Side) -> Callable[..., Any]:
        return lambda a: side[2].dot_general(i, a, (((1,), (0,)), ((), ())),
                                             preferred_element_type=np.float32)

    vjp_matches(f, (x,))


# ==================================================== conv_general_dilated

@st.composite
def conv_problems(draw: Any) -> dict[str, Any]:
    """A valid convolution with 1 or 2 spatial axes, random axis layouts,
    strides, paddings (negative too), dilations and one group count."""
    nsp = draw(st.integers(1, 2))
    groups = draw(st.sampled_from(["none", "feature", "batch"]))
    g = 1 if groups == "none" else draw(st.integers(2, 3))
    nb, cin, cout = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    batch = nb * g if groups == "batch" else nb
    feats = cin * g if groups == "feature" else cin
    kernel_in = cin
    kernel_out = cout * g
    strides = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    lhs_dil = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    rhs_dil = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    window = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    spatial, padding = [], []
    for k, s, ld, rd in zip(window, strides, lhs_dil, rhs_dil):
        n = draw(st.integers(1, 5))
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        dilated_in = 1 + ld * (n - 1)
        dilated_k = 1 + rd * (k - 1)
        # At least one output position.
        if dilated_in + lo + hi < dilated_k:
            hi = dilated_k - dilated_in - lo
        spatial.append(n)
        padding.append((lo, hi))
    rank = nsp + 2
    specs = [tuple(draw(st.permutations(range(rank)))) for _ in range(3)]
    canon_l = (batch, feats, *spatial)
    canon_r = (kernel_out, kernel_in, *window)
    lshape, rshape = [0] * rank, [0] * rank
    for ax, d in zip(specs[0], canon_l):
        lshape[ax] = d
    for ax, d in zip(specs[1], canon_r):
        rshape[ax] = d
    return {"lshape": tuple(lshape), "rshape": tuple(rshape), "window_strides": strides,
                "padding": tuple(padding), "lhs_dilation": lhs_dil, "rhs_dilation": rhs_dil,
                "specs": specs, "feature_group_count": g if groups == "feature" else 1,
                "batch_group_count": g if groups == "batch" else 1}


def _conv(p: dict[str, Any], pet: Any = None) -> Callable[[Side], Callable[..., Any]]:
    def make(side: Side) -> Callable[..., Any]:
        lax = side[2]
        dn = lax.ConvDimensionNumbers(*p["specs"])
        return lambda a, b: lax.conv_general_dilated(
            a, b, p["window_strides"], p["padding"], p["lhs_dilation"], p["rhs_dilation"], dn,
            feature_group_count=p["feature_group_count"],
            batch_group_count=p["batch_group_count"], preferred_element_type=pet)
    return make


@SETTINGS
@given(p=conv_problems())
def test_conv_general_dilated(p: dict[str, Any]) -> None:
    rng = np.random.default_rng(6)
    x = _random(rng, p["lshape"], np.float32)
    k = _random(rng, p["rshape"], np.float32)
    check_grads(_conv(p)(SPEC), (x, k), order=1)
    vjp_matches(_conv(p), (x, k), rtol=2e-5)


def _canonical_problem(lshape: tuple[int, ...], rshape: tuple[int, ...],
                       strides: tuple[int, ...], padding: tuple[tuple[int, int], ...],
                       lhs_dilation: tuple[int, ...], rhs_dilation: tuple[int, ...],
                       feature_group_count: int = 1) -> dict[str, Any]:
    """A convolution in the canonical (N, C, spatial) / (O, I, spatial) layout."""
    iota = tuple(range(len(lshape)))
    return {"lshape": lshape, "rshape": rshape, "window_strides": strides, "padding": padding,
            "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
            "specs": [iota, iota, iota], "feature_group_count": feature_group_count,
            "batch_group_count": 1}


def test_conv_second_order_and_paths() -> None:
    p = _canonical_problem((2, 4, 5, 4), (6, 2, 2, 3), (2, 1), ((1, 0), (-1, 2)), (1, 2),
                           (2, 1), feature_group_count=2)
    rng = np.random.default_rng(7)
    x, k = _random(rng, p["lshape"], np.float32), _random(rng, p["rshape"], np.float32)
    check_grads(_conv(p)(SPEC), (x, k), order=2)
    paths_identical(_conv(p)(SPEC), x, k)


@pytest.mark.parametrize("dtypes", [(ml_dtypes.bfloat16, np.float32),
                                    (np.float16, np.float32), (np.float32, np.float64)])
def test_conv_preferred_element_type(dtypes: tuple[Any, Any], x64: None) -> None:
    operand, pet = dtypes
    p = _canonical_problem((2, 3, 6), (4, 3, 3), (2,), ((1, 1),), (1,), (1,))
    rng = np.random.default_rng(8)
    x, k = _random(rng, p["lshape"], operand), _random(rng, p["rshape"], operand)
    # The cotangents come back in the operand dtype (converted, as in JAX).
    vjp_matches(_conv(p, pet), (x, k), rtol=1e-5 if operand == np.float32 else 2e-2)


def test_conv_complex() -> None:
    p = _canonical_problem((1, 2, 5), (3, 2, 2), (1,), ((0, 1),), (2,), (1,))
    rng = np.random.default_rng(9)
    x, k = _random(rng, p["lshape"], np.complex64), _random(rng, p["rshape"], np.complex64)
    check_grads(_conv(p)(SPEC), (x, k), order=1, modes=("fwd",))
    vjp_matches(_conv(p), (x, k))


def test_conv_empty_output_cotangent() -> None:
    # A zero-size output: the kernel's cotangent is a zero (JAX returns a
    # symbolic zero instead of forming a degenerate convolution).
    p = _canonical_problem((0, 2, 4), (3, 2, 2), (1,), ((0, 0),), (1,), (1,))
    x = np.zeros(p["lshape"], np.float32)
    k = np.ones(p["rshape"], np.float32)
    vjp_matches(_conv(p), (x, k))


# ============================================== jaxpr text of grad(f)

X = np.random.default_rng(10).standard_normal((2, 3)).astype(np.float32)
W = np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32)
IMG = np.random.default_rng(12).standard_normal((2, 3, 5, 5)).astype(np.float32)
KER = np.random.default_rng(13).standard_normal((4, 3, 3, 3)).astype(np.float32)
IMG_NHWC = np.random.default_rng(14).standard_normal((2, 5, 6, 4)).astype(np.float32)
KER_HWIO = np.random.default_rng(15).standard_normal((3, 2, 2, 6)).astype(np.float32)

GRAD_CASES: dict[str, tuple[Callable[[Side], Callable[..., Any]], tuple[Any, ...],
                            tuple[str, ...]]] = {
    "matmul_tanh": (lambda s: lambda x, w: s[1].sum(s[1].tanh(x @ w)), (X, W), ("tanh",)),
    "matmul_sin": (lambda s: lambda x, w: s[1].sum(s[1].sin(x @ w)), (X, W), ()),
    "einsum_batch": (lambda s: lambda x, w: s[2].dot_general(
        x[None], w[None], (((2,), (1,)), ((0,), (0,)))).sum(), (X, W), ()),
    "conv_same": (lambda s: lambda x, k: s[1].sum(s[2].conv(x, k, (1, 1), "SAME")),
                  (IMG, KER), ()),
    "conv_strided_dilated": (lambda s: lambda x, k: s[1].sum(s[2].conv_general_dilated(
        x, k, (2, 1), ((1, 0), (0, 2)), (1, 2), (2, 1))), (IMG, KER), ()),
    "conv_nhwc_groups": (lambda s: lambda x, k: s[1].sum(s[2].conv_general_dilated(
        x, k, (1, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2)), (IMG_NHWC, KER_HWIO), ()),
    "conv_batch_groups": (lambda s: lambda x, k: s[1].sum(s[2].conv_general_dilated(
        x, k, (1, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        batch_group_count=2)), (IMG_NHWC, KER_HWIO[:, :, :, :4].repeat(2, axis=2)), ()),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_grad_jaxpr_text(case: str) -> None:
    make, args, deps = GRAD_CASES[case]
    needs(*deps)
    ours, theirs = on_both(lambda s: str(s[0].make_jaxpr(
        s[0].grad(make(s), argnums=(0, 1)))(*args)))
    assert ours == theirs


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_grad_values_and_paths(case: str) -> None:
    make, args, deps = GRAD_CASES[case]
    needs(*deps)
    ours, theirs = on_both(lambda s: s[0].grad(make(s), argnums=(0, 1))(*args))
    assert_same(ours, theirs, rtol=2e-5)
    direct = ours
    with config.use_direct_linearize(False):
        legacy = spec.grad(make(SPEC), argnums=(0, 1))(*args)
    for a, b in zip(direct, legacy):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_jvp_jaxpr_text() -> None:
    def make(side: Side) -> Callable[..., Any]:
        f = GRAD_CASES["conv_nhwc_groups"][0](side)
        return lambda x, k, tx, tk: side[0].jvp(f, (x, k), (tx, tk))
    ours, theirs = on_both(lambda s: str(s[0].make_jaxpr(make(s))(
        IMG_NHWC, KER_HWIO, IMG_NHWC, KER_HWIO)))
    assert ours == theirs
