"""conv_general_dilated and its lax wrappers, checked live against real JAX."""

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
from spec import lax as slax
from spec._src.core import denormals as _denormals
from tests.support.pair import raises_as

RNG = np.random.default_rng(0)
BF16 = np.dtype(ml_dtypes.bfloat16)

Fn = Callable[[Any], Callable[..., Any]]  # lax module -> function of the operands


def _ints(shape: tuple[int, ...], dt: Any = np.float32, lo: int = -4, hi: int = 5
          ) -> np.ndarray:
    return RNG.integers(lo, hi, shape).astype(dt)


def _normal(shape: tuple[int, ...], dt: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dt)


def _check(fn: Fn, *args: Any, exact: bool = True) -> None:
    """Same value (exact, or within a few ULPs of the sum of |products|),
    dtype, weak type and ``typeof`` as JAX."""
    s, j = fn(slax)(*args), fn(jax.lax)(*args)
    assert str(spec.typeof(s)) == str(jax.typeof(j))
    assert s.aval.weak_type == j.weak_type
    sv, jv = np.asarray(s), np.asarray(j)
    assert sv.dtype == jv.dtype and sv.shape == jv.shape
    if exact:
        np.testing.assert_array_equal(sv, jv)
        return
    # Summation order differs from XLA's; bound the error by the conditioning.
    scale = np.abs(np.asarray(fn(jax.lax)(*[np.abs(a).astype(np.float32) for a in args])))
    out_eps = float(ml_dtypes.finfo(sv.real.dtype).eps)  # type: ignore[no-untyped-call]
    tol = 8 * float(np.finfo(np.float32).eps) * scale + out_eps * np.abs(jv)
    err = np.abs(sv.astype(np.complex128) - jv.astype(np.complex128))
    assert np.all(err <= tol + 1e-30), float((err - tol).max())


def _same_jaxpr(fn: Fn, *args: Any) -> None:
    sj = str(spec.make_jaxpr(fn(slax))(*args))
    jj = str(jax.make_jaxpr(fn(jax.lax))(*args))
    assert sj == jj


def _raises_same(fn: Fn, *args: Any) -> type[BaseException]:
    """JAX (run eagerly, so errors found when lowering count) raises, and
    spec raises an exception of the same class."""
    try:
        np.asarray(fn(jax.lax)(*args))
    except Exception as err:  # noqa: BLE001 - the oracle's class is what we compare
        raises_as(lambda: fn(slax)(*args), err)
        return type(err)
    raise AssertionError("JAX did not raise")


def cgd(*a: Any, **k: Any) -> Fn:
    """``lax.conv_general_dilated(lhs, rhs, *a, **k)`` for either lax."""
    return lambda lax: lambda x, w: lax.conv_general_dilated(x, w, *a, **k)


# ------------------------------------------------------------------ values

CASES_1D = [
    ((1,), "VALID", None, None), ((2,), "SAME", None, None), ((3,), "SAME_LOWER", None, None),
    ((1,), [(2, 1)], (2,), None), ((2,), [(-1, 2)], None, (2,)), ((1,), [(-2, -1)], (3,), (2,)),
    ((2,), [(-4, 3)], (2,), None),
]


@pytest.mark.parametrize("strides,padding,lhs_dil,rhs_dil", CASES_1D)
def test_conv_1d(strides: Any, padding: Any, lhs_dil: Any, rhs_dil: Any) -> None:
    x, w = _ints((2, 3, 9)), _ints((4, 3, 3))
    _check(cgd(strides, padding, lhs_dil, rhs_dil), x, w)
    _check(cgd(strides, padding, lhs_dil, rhs_dil), _normal((2, 3, 9)), _normal((4, 3, 3)),
           exact=False)


CASES_2D = [
    ((1, 1), "SAME", None, None, None),
    ((2, 1), "VALID", None, (1, 2), ("NHWC", "HWIO", "NHWC")),
    ((1, 2), [(1, 0), (2, -1)], (2, 1), (2, 1), ("NCHW", "OIHW", "NHWC")),
    ((2, 2), [(-1, -1), (0, 3)], (1, 3), None, ("NWHC", "WIOH", "CNHW")),
    ((3, 1), "SAME", None, (2, 2), ("HWCN", "OHWI", "NCHW")),
]


def _layout(shape_nchw: tuple[int, ...], spec_str: str, canon: str) -> tuple[int, ...]:
    """``shape_nchw`` given in the order of ``canon``, rearranged for ``spec_str``."""
    return tuple(shape_nchw[canon.index(c)] for c in spec_str)


@pytest.mark.parametrize("strides,padding,lhs_dil,rhs_dil,dn", CASES_2D)
def test_conv_2d_layouts(strides: Any, padding: Any, lhs_dil: Any, rhs_dil: Any,
                         dn: Any) -> None:
    lhs_c, rhs_c = (2, 3, 7, 6), (4, 3, 3, 2)
    if dn is None:
        ls, rs = lhs_c, rhs_c
    else:
        ls = _layout(lhs_c, dn[0], "NC" + "".join(c for c in dn[1] if c not in "OI"))
        rs = _layout(rhs_c, dn[1], "OI" + "".join(c for c in dn[1] if c not in "OI"))
    fn = cgd(strides, padding, lhs_dil, rhs_dil, dn)
    _check(fn, _ints(ls), _ints(rs))
    _check(fn, _normal(ls), _normal(rs), exact=False)


def test_conv_3d() -> None:
    x, w = _ints((1, 2, 5, 4, 6)), _ints((3, 2, 2, 3, 2))
    _check(cgd((1, 2, 1), "SAME", None, (1, 1, 2)), x, w)
    _check(cgd((2, 1, 2), [(1, 1), (0, -1), (2, 0)], (2, 1, 1)), x, w)
    dn = ("NDHWC", "DHWIO", "NDHWC")
    _check(cgd((1, 1, 1), "VALID", dimension_numbers=dn),
           _normal((1, 5, 4, 6, 2)), _normal((2, 3, 2, 2, 3)), exact=False)


@pytest.mark.parametrize("dn", [None, ("NHWC", "HWIO", "NHWC")])
def test_depthwise_feature_groups(dn: Any) -> None:
    lhs, rhs = (2, 4, 6, 5), (8, 1, 3, 3)  # 4 groups of 1 channel, 2 outputs each
    if dn is not None:
        lhs, rhs = (2, 6, 5, 4), (3, 3, 1, 8)
    fn = cgd((1, 1), "SAME", dimension_numbers=dn, feature_group_count=4)
    _check(fn, _ints(lhs), _ints(rhs))
    _check(fn, _normal(lhs), _normal(rhs), exact=False)
    # Two groups of two channels.
    _check(cgd((2, 1), "VALID", feature_group_count=2), _ints((2, 4, 6, 5)),
           _ints((6, 2, 2, 2)))


@pytest.mark.parametrize("bgc,out_feats", [(2, 4), (3, 6), (6, 6)])
def test_batch_groups(bgc: int, out_feats: int) -> None:
    x, w = _ints((6, 3, 5, 4)), _ints((out_feats, 3, 2, 2))
    _check(cgd((1, 1), "SAME", batch_group_count=bgc), x, w)
    _check(cgd((1, 2), [(0, 1), (1, 0)], (1, 2), batch_group_count=bgc,
               dimension_numbers=("NHWC", "OIHW", "CHWN")),
           _ints((6, 5, 4, 3)), w)


@pytest.mark.parametrize("dt,pet", [
    (np.float32, None), (np.float16, None), (BF16, None), (np.float16, np.float32),
    (BF16, np.float32), (np.int32, None), (np.int8, None), (np.int8, np.int32),
    (np.uint8, np.int16), (np.int16, np.float32), (np.bool_, None), (np.bool_, np.int32),
    (np.complex64, None),
])
def test_dtypes(dt: Any, pet: Any) -> None:
    fn = cgd((1, 2), "SAME", rhs_dilation=(2, 1), preferred_element_type=pet)
    if np.dtype(dt) == np.bool_:
        x, w = _ints((2, 3, 6, 7), dt, 0, 2), _ints((4, 3, 2, 3), dt, 0, 2)
    elif np.dtype(dt) == np.uint8:
        x, w = _ints((2, 3, 6, 7), dt, 0, 256), _ints((4, 3, 2, 3), dt, 0, 256)
    elif np.dtype(dt) in (np.int8, np.int32):  # wrap-around for int8
        x, w = _ints((2, 3, 6, 7), dt, -128, 128), _ints((4, 3, 2, 3), dt, -128, 128)
    elif np.dtype(dt) == np.complex64:
        x = (_normal((2, 3, 6, 7)) + 1j * _normal((2, 3, 6, 7))).astype(dt)
        w = (_normal((4, 3, 2, 3)) + 1j * _normal((4, 3, 2, 3))).astype(dt)
        _check(fn, x, w, exact=False)
        return
    else:
        x, w = _ints((2, 3, 6, 7), dt), _ints((4, 3, 2, 3), dt)
    _check(fn, x, w)
    if np.issubdtype(np.dtype(dt), np.inexact) or np.dtype(dt) == BF16:
        _check(fn, _normal((2, 3, 6, 7), dt), _normal((4, 3, 2, 3), dt), exact=False)


def test_narrow_float_rounds_once() -> None:
    """f16/bf16 accumulate in float32 and round once: values agree exactly."""
    for dt in (np.float16, BF16):
        _check(cgd((1, 1), "SAME"), _normal((2, 8, 6, 6), dt), _normal((3, 8, 3, 3), dt))


def test_float64_under_x64(x64: None) -> None:
    _check(cgd((1,), "SAME"), _normal((2, 3, 9), np.float64), _normal((4, 3, 3), np.float64),
           exact=False)
    _check(cgd((1,), "SAME", preferred_element_type=np.int64),
           _ints((2, 3, 9), np.int32), _ints((4, 3, 3), np.int32))


def test_empty_and_degenerate() -> None:
    _check(cgd((1, 1), "VALID"), _ints((2, 3, 2, 5)), _ints((4, 3, 3, 2)))  # window too big
    _check(cgd((1, 1), "SAME"), _ints((0, 3, 4, 5)), _ints((4, 3, 3, 2)))
    _check(cgd((1, 1), "SAME"), _ints((2, 0, 4, 5)), _ints((4, 0, 3, 2)))  # empty sum
    _check(cgd((1, 1), [(-2, -2), (0, 0)]), _ints((2, 3, 4, 5)), _ints((4, 3, 1, 2)))
    _check(cgd((), []), _ints((2, 3)), _ints((4, 3)))  # no spatial dims: a matmul


def test_signed_zero_and_subnormals() -> None:
    x = np.array([[[-1.0, 2.0, -0.0]]], np.float32)
    _check(cgd((1,), "VALID"), x, np.array([[[0.0]]], np.float32))
    sub = (_normal((2, 3, 8)) * 1e-39).astype(np.float32)
    tiny = (_normal((2, 3, 8)) * 1e-20).astype(np.float32)
    for hardware in (True, False):
        _denormals.use_hardware(hardware)
        try:
            _check(cgd((1,), "SAME"), sub, _normal((4, 3, 3)))
            _check(cgd((1,), "SAME"), tiny, (_normal((4, 3, 3)) * 1e-19).astype(np.float32))
            _check(cgd((1,), "SAME"), sub.astype(BF16), _normal((4, 3, 3), BF16))
        finally:
            _denormals.use_hardware(True)


def test_weak_type_operands() -> None:
    def fn(lax: Any) -> Callable[[], Any]:
        return lambda: lax.conv(lax.full((1, 1, 4, 4), 2.0), lax.full((1, 1, 2, 2), 1.5),
                                (1, 1), "VALID")
    s, j = fn(slax)(), fn(jax.lax)()
    assert str(spec.typeof(s)) == str(jax.typeof(j))
    np.testing.assert_array_equal(np.asarray(s), np.asarray(j))


# ---------------------------------------------------------------- wrappers

def test_conv_and_general_padding() -> None:
    x, w = _ints((2, 3, 7, 6)), _ints((4, 3, 3, 2))
    for padding in ("SAME", "VALID"):
        _check(lambda lax: lambda a, b: lax.conv(a, b, (2, 1), padding), x, w)
    _check(lambda lax: lambda a, b: lax.conv_with_general_padding(
        a, b, (1, 2), [(1, 2), (-1, 0)], (2, 1), (1, 2)), x, w)
    _check(lambda lax: lambda a, b: lax.conv_with_general_padding(
        a, b, (1, 1), "SAME", None, (2, 2)), x, w)


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 0), (0, 2))])
@pytest.mark.parametrize("transpose_kernel", [False, True])
def test_conv_transpose(padding: Any, transpose_kernel: bool) -> None:
    x, w = _ints((1, 5, 4, 2)), _ints((3, 2, 2, 2))
    fn: Fn = lambda lax: lambda a, b: lax.conv_transpose(  # noqa: E731
        a, b, (2, 1), padding, transpose_kernel=transpose_kernel)
    _check(fn, x, w)
    _same_jaxpr(fn, x, w)
    fn2: Fn = lambda lax: lambda a, b: lax.conv_transpose(  # noqa: E731
        a, b, (2, 3), padding, rhs_dilation=(1, 2), use_consistent_padding=True)
    _check(fn2, x, w)


def test_static_helpers() -> None:
    for args in [((7, 6), (3, 2), (2, 1), "SAME"), ((7, 6), (3, 2), (2, 1), "SAME_LOWER"),
                 ((5,), (4,), (3,), "same"), ((7, 6), (3, 2), (2, 1), "VALID")]:
        assert slax.padtype_to_pads(*args) == jax.lax.padtype_to_pads(*args)
    for dn in [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"),
               ("WNCH", "OWHI", "HWCN")]:
        s = slax.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), dn)
        j = jax.lax.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), dn)
        assert repr(s) == repr(j) and tuple(s) == tuple(j)
        if dn is not None:
            assert slax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
            for pad in ("SAME", "VALID", [(1, 0), (2, -1)]):
                args = ((2, 3, 9, 8), (9, 8, 3, 3), (2, 1), pad, dn)
                assert slax.conv_general_shape_tuple(*args) == tuple(
                    int(d) for d in jax.lax.conv_general_shape_tuple(*args))
    assert slax.conv_shape_tuple((6, 3, 9, 8), (4, 3, 2, 3), (1, 2), "SAME", 2) == tuple(
        int(d) for d in jax.lax.conv_shape_tuple((6, 3, 9, 8), (4, 3, 2, 3), (1, 2), "SAME", 2))
    for pad in ("SAME", "VALID", [(1, 0), (2, 1)]):
        args = ((2, 9, 8, 3), (3, 3, 3, 4), (2, 3), pad, ("NHWC", "HWIO", "NHWC"))
        assert slax.conv_transpose_shape_tuple(*args) == tuple(
            int(d) for d in jax.lax.conv_transpose_shape_tuple(*args))
    cdn = slax.ConvDimensionNumbers((0, 1), (1, 0), (0, 1))
    assert repr(cdn) == repr(jax.lax.ConvDimensionNumbers((0, 1), (1, 0), (0, 1)))
    assert slax.conv_general_dilated_p is slax.conv_general_dilated_p  # exported
    assert slax.conv_general_dilated_p.name == jax.lax.conv_general_dilated_p.name


# ------------------------------------------------------------------ jaxprs

@pytest.mark.parametrize("fn,ls,rs,dt", [
    (cgd((1, 1), "SAME"), (2, 3, 8, 8), (4, 3, 3, 3), np.float32),
    (cgd((2, 1), [(1, 0), (2, -1)], (1, 2), (2, 1), ("NHWC", "HWIO", "NHWC"),
         precision="highest", preferred_element_type=jnp.float32),
     (2, 8, 8, 3), (3, 3, 3, 4), np.float16),
    (cgd((1,), "VALID", feature_group_count=3, precision=("high", "fastest")),
     (2, 6, 5), (9, 2, 2), np.int32),
    (cgd((1, 2), "SAME_LOWER", batch_group_count=2,
         dimension_numbers=("NHWC", "HWIO", "NHWC")),
     (4, 5, 6, 3), (2, 2, 3, 4), BF16),
    (lambda lax: lambda a, b: lax.conv(a, b, (1, 1), "VALID",
                                       preferred_element_type=np.float32),
     (1, 2, 4, 4), (3, 2, 2, 2), np.int8),
])
def test_jaxpr_text(fn: Fn, ls: tuple[int, ...], rs: tuple[int, ...], dt: Any) -> None:
    _same_jaxpr(fn, _ints(ls, dt), _ints(rs, dt))


# ------------------------------------------------------------------ errors

F = np.float32
ERROR_CASES: list[tuple[str, Fn, tuple[int, ...], tuple[int, ...], Any, Any]] = [
    ("rank", cgd((1, 1), "SAME"), (2, 3, 4, 4), (4, 3, 3), F, F),
    ("fgc-zero", cgd((1, 1), "SAME", feature_group_count=0), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("fgc-divide", cgd((1, 1), "SAME", feature_group_count=3), (2, 4, 4, 4), (6, 1, 3, 3), F, F),
    ("fgc-in", cgd((1, 1), "SAME", feature_group_count=2), (2, 4, 4, 4), (6, 4, 3, 3), F, F),
    ("fgc-out", cgd((1, 1), "SAME", feature_group_count=2), (2, 4, 4, 4), (5, 2, 3, 3), F, F),
    ("bgc-zero", cgd((1, 1), "SAME", batch_group_count=0), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("bgc-divide", cgd((1, 1), "SAME", batch_group_count=3), (2, 4, 4, 4), (6, 4, 3, 3), F, F),
    ("bgc-out", cgd((1, 1), "SAME", batch_group_count=2), (2, 4, 4, 4), (5, 4, 3, 3), F, F),
    ("both-groups", cgd((1, 1), "SAME", batch_group_count=2, feature_group_count=2),
     (2, 4, 4, 4), (4, 2, 3, 3), F, F),
    ("strides-len", cgd((1,), [(0, 0), (0, 0)]), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("stride-zero", cgd((0, 1), [(0, 0), (0, 0)]), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("pads-len", cgd((1, 1), [(0, 0)]), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("pads-form", cgd((1, 1), [(0, 0, 1), (0, 0)]), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("pads-string", cgd((1, 1), "FULL"), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("neg-pad", cgd((1, 1), [(-3, -2), (0, 0)]), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("rhs-dil", cgd((1, 1), "SAME", None, (0, 1)), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("lhs-dil", cgd((1, 1), [(0, 0), (0, 0)], (1, -1)), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("lhs-dil-len", cgd((1, 1), [(0, 0), (0, 0)], (1,)), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("lhs-dil-string", cgd((1, 1), "SAME", (2, 1)), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("zero-window", cgd((1, 1), "VALID"), (2, 4, 4, 4), (4, 4, 0, 3), F, F),
    ("dtypes", cgd((1, 1), "SAME"), (2, 4, 4, 4), (4, 4, 3, 3), F, np.int32),
    ("pet-narrow", cgd((1, 1), "SAME", preferred_element_type=np.float16),
     (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("pet-kind", cgd((1, 1), "SAME", preferred_element_type=np.int32),
     (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("pet-sign", cgd((1, 1), "SAME", preferred_element_type=np.uint32),
     (2, 4, 4, 4), (4, 4, 3, 3), np.int8, np.int8),
    ("pet-int-narrow", cgd((1, 1), "SAME", preferred_element_type=np.int8),
     (2, 4, 4, 4), (4, 4, 3, 3), np.int32, np.int32),
    ("dn-len", cgd((1, 1), "SAME", dimension_numbers=("NCHW", "OIHW")),
     (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("dn-chars", cgd((1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHX")),
     (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("dn-missing", cgd((1, 1), "SAME", dimension_numbers=("NXHW", "OIHW", "NCHW")),
     (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("dn-strlen", cgd((1, 1), "SAME", dimension_numbers=("NCH", "OIHW", "NCHW")),
     (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("dn-type", cgd((1, 1), "SAME", dimension_numbers="NCHW"), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
    ("dn-dup", cgd((1, 1), [(0, 0), (0, 0)], dimension_numbers=slax.ConvDimensionNumbers(
        (0, 1, 2, 2), (0, 1, 2, 3), (0, 1, 2, 3))), (2, 4, 4, 4), (4, 4, 3, 3), F, F),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(case: tuple[str, Fn, tuple[int, ...], tuple[int, ...], Any, Any]) -> None:
    name, fn, ls, rs, ldt, rdt = case
    if name == "dn-dup":  # JAX needs its own record type; spec's is a different class
        dn = jax.lax.ConvDimensionNumbers((0, 1, 2, 2), (0, 1, 2, 3), (0, 1, 2, 3))

        def fn(lax: Any) -> Callable[..., Any]:
            rec = dn if lax is jax.lax else slax.ConvDimensionNumbers(*dn)
            return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), [(0, 0), (0, 0)],
                                                         dimension_numbers=rec)
    _raises_same(fn, np.ones(ls, ldt), np.ones(rs, rdt))


def test_error_messages_cite_constraints() -> None:
    with pytest.raises(ValueError, match=r"conv_general_dilated C3: .*3.*4"):
        slax.conv_general_dilated(np.ones((2, 4, 4, 4), F), np.ones((6, 1, 3, 3), F), (1, 1),
                                  "SAME", feature_group_count=3)
    with pytest.raises(ValueError, match=r"conv_general_dilated C8: .*\(-3, -2\)"):
        slax.conv_general_dilated(np.ones((2, 4, 4, 4), F), np.ones((4, 4, 3, 3), F), (1, 1),
                                  [(-3, -2), (0, 0)])
    with pytest.raises(TypeError, match=r"conv_general_dilated C10: .*float32 and int32"):
        slax.conv_general_dilated(np.ones((2, 4, 4, 4), F), np.ones((4, 4, 3, 3), np.int32),
                                  (1, 1), "SAME")
    with pytest.raises(ValueError, match=r"conv_general_dilated C2"):  # JAX: IndexError
        slax.conv_general_dilated(np.ones((2, 4, 4, 4), F), np.ones((4, 4, 3, 3), F), (1, 1),
                                  [(0, 0), (0, 0)], dimension_numbers=slax.ConvDimensionNumbers(
                                      (0, 1, 2, 7), (0, 1, 2, 3), (0, 1, 2, 3)))


# -------------------------------------------------------- typing property

_DTYPES = [np.float32, np.float16, BF16, np.int32, np.int8, np.uint8, np.bool_, np.complex64]
_PETS = [None, None, None, np.float32, np.int32, np.int16, np.uint32, np.float16, np.complex64]


@st.composite
def _conv_case(draw: Any) -> tuple[Any, ...]:
    n = draw(st.integers(0, 3))
    rank = n + 2
    fgc = draw(st.sampled_from([1, 1, 2, 3]))
    bgc = draw(st.sampled_from([1, 1, 2])) if fgc == 1 or draw(st.booleans()) else 1
    batch = bgc * draw(st.integers(0, 2)) + draw(st.sampled_from([0, 0, 0, 1]))
    cin = draw(st.integers(0, 2))
    feats = fgc * cin + draw(st.sampled_from([0, 0, 0, 1]))
    out = fgc * bgc * draw(st.integers(0, 2)) + draw(st.sampled_from([0, 0, 0, 1]))
    spatial_l = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    spatial_r = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    strides = tuple(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    padding: Any = draw(st.one_of(
        st.sampled_from(["SAME", "VALID", "SAME_LOWER"]),
        st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=n, max_size=n)))
    lhs_dil = tuple(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    if isinstance(padding, str):
        lhs_dil = (1,) * n
    rhs_dil = tuple(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    lperm = draw(st.permutations(range(rank)))
    rperm = draw(st.permutations(range(rank)))
    operm = draw(st.permutations(range(rank)))
    lhs_c = (batch, feats, *spatial_l)
    rhs_c = (out, cin, *spatial_r)
    lshape = [0] * rank
    rshape = [0] * rank
    for axis, size in zip(lperm, lhs_c):
        lshape[axis] = size
    for axis, size in zip(rperm, rhs_c):
        rshape[axis] = size
    dt = draw(st.sampled_from(_DTYPES))
    rdt = dt if draw(st.integers(0, 9)) else draw(st.sampled_from(_DTYPES))
    pet = draw(st.sampled_from(_PETS))
    dn = (tuple(lperm), tuple(rperm), tuple(operm))
    return (tuple(lshape), tuple(rshape), dt, rdt, strides, padding, lhs_dil, rhs_dil, dn,
            fgc, bgc, pet)


def _out_type(lax: Any, mod: Any, case: tuple[Any, ...]) -> Any:
    ls, rs, dt, rdt, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc, pet = case
    rec = lax.ConvDimensionNumbers(*dn)

    def f(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dil, rhs_dil, rec, fgc, bgc,
                                        preferred_element_type=pet)

    out = mod.eval_shape(f, mod.ShapeDtypeStruct(ls, np.dtype(dt)),
                         mod.ShapeDtypeStruct(rs, np.dtype(rdt)))
    return tuple(out.shape), np.dtype(out.dtype), bool(getattr(out, "weak_type", False))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_conv_case())
def test_output_type_property(case: tuple[Any, ...]) -> None:
    """Over random configurations: spec's output shape/dtype equal JAX's, and
    spec raises exactly when JAX does, with the same exception class."""
    try:
        expected = _out_type(jax.lax, jax, case)
    except Exception as err:  # noqa: BLE001 - the oracle's class is what we compare
        raises_as(lambda: _out_type(slax, spec, case), err)
        return
    assert _out_type(slax, spec, case) == expected
