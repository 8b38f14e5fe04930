"""The lowering of the transcendental, special-function and bit-field
elementwise primitives: spec's module text, compiled by jaxlib, computes
what ``jax.jit`` of the same program computes (bit for bit where spec emits
JAX's ops) and agrees with spec's own evaluation within the ULP bounds of
tests/rules/test_elementwise.py; and its text is JAX's."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import hypothesis.strategies as st
import pytest
from hypothesis import given, settings
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lax.control_flow import while_p
from tests.lowering.xla_run import bits, canonical, lowered, spec_and_compiled
from tests.rules.test_elementwise import TRANSCENDENTAL, _close

_X = np.linspace(-0.95, 0.95, 23, dtype=np.float32)
_POS = np.linspace(0.3, 7.5, 23, dtype=np.float32)

# name -> operand; every one of these lowers to JAX's own ops.
UNARY = {"acos": _X, "asin": _X, "atan": _X * 4, "atanh": _X, "asinh": _X * 9,
         "acosh": _POS + 1, "cosh": _X * 5, "sinh": _X * 5, "erf": _X * 3, "erfc": _X * 3,
         "erf_inv": _X, "exp2": _X * 20, "log2": _POS, "digamma": _POS, "lgamma": _POS}


def _bound(name: str) -> tuple[float, float, float]:
    return TRANSCENDENTAL.get(name, (2, 0.0, 0.0))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_compiled_matches_jax_and_spec(name: str) -> None:
    x = UNARY[name]
    ours, compiled, text = spec_and_compiled(getattr(slax, name), x)
    theirs = np.asarray(jax.jit(getattr(jlax, name))(x))
    ulps, atol, rtol = _bound(name)
    _close(ours[0], compiled[0], ulps, atol, rtol, np.dtype(np.float32), scale=None)
    assert bits(compiled[0]) == bits(theirs)
    assert canonical(text) == canonical(jax.jit(getattr(jlax, name)).lower(x).as_text())


def _programs(lax: Any) -> dict[str, tuple[Callable[..., Any], list[np.ndarray]]]:
    m = np.array([0, 1, 2, 3] * 5 + [0, 1, 2], np.float32)
    return {
        "nextafter": (lambda a: lax.nextafter(a, a + 1.0), [_X]),
        "polygamma": (lambda mm, a: lax.polygamma(mm, a), [m, _POS]),
        "conj": (lambda a: (lax.conj(a), lax.conj(lax.complex(a, -a))), [_X]),
        "pow": (lambda a: (lax.pow(a + 1.0, a * 3), lax.pow(a, np.int32(3))), [_X]),
        "one_minus_square": (lambda a: lax.one_minus_square(a), [_X]),
        "polynomial": (lambda a: lax.polynomial(a, [a, np.float32(2), a * a, np.float32(-.5)]),
                       [_X]),
    }


@pytest.mark.parametrize("name", sorted(_programs(jlax)))
def test_other_elementwise_compiled_matches_jax(name: str) -> None:
    fn, args = _programs(slax)[name]
    jfn, _ = _programs(jlax)[name]
    ours, compiled, text = spec_and_compiled(fn, *args)
    theirs = [np.asarray(t) for t in jax.tree.leaves(jax.jit(jfn)(*args))]
    assert [bits(c) for c in compiled] == [bits(t) for t in theirs]
    for a, c in zip(ours, compiled):
        if name not in ("polygamma", "pow"):
            assert bits(a) == bits(c)
            continue
        # spec's float32 polygamma(m > 1) is within a few tens of ULPs of XLA's.
        _close(a, c, 64 if name == "polygamma" else 2, 0.0, 0.0, a.dtype, scale=None)
    assert canonical(text) == canonical(jax.jit(jfn).lower(*args).as_text())


_FIELDS = np.array([0.0, -0.0, 1.5, -3.25, 1e-40, np.inf, -np.inf, np.nan, 3e38, 1e-38,
                    -7e-39, 6.0], np.float32)
_SHIFTS = np.array([1, 2, -3, 200, 5, 1, 1, 1, 10, -10, 4, -150], np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_frexp_ldexp_bitwise(dtype: Any, request: pytest.FixtureRequest) -> None:
    """Special values, subnormals, overflow and underflow: the compiled
    bit-field lowering gives spec's and JAX's bits."""
    x = _FIELDS.astype(np.float64).astype(dtype) if dtype != np.float16 else \
        np.array([0.0, -0.0, 1.5, -3.25, 1e-6, np.inf, np.nan, 6e4], np.float16)
    shifts = [_SHIFTS[: x.size], _SHIFTS[: x.size].astype(np.int8),
              np.abs(_SHIFTS[: x.size]).astype(np.uint32)]
    if dtype == np.float64:
        request.getfixturevalue("x64")
    ours, compiled, _ = spec_and_compiled(snp.frexp, x)
    theirs = jax.jit(jnp.frexp)(x)
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]
    assert [bits(c) for c in compiled] == [bits(np.asarray(t)) for t in theirs]
    for n in shifts:
        ours, compiled, _ = spec_and_compiled(snp.ldexp, x, n)
        assert bits(ours[0]) == bits(compiled[0])
        assert bits(compiled[0]) == bits(np.asarray(jax.jit(jnp.ldexp)(x, n)))


def test_accuracy_param_is_not_lowered() -> None:
    """An explicit accuracy has no specified lowering: NotImplementedError
    naming the primitive."""
    with pytest.raises(NotImplementedError, match="exp2"):
        lowered(lambda a: slax.exp2(a, accuracy=slax.AccuracyMode.HIGHEST), _X)


@pytest.mark.parametrize("name", ["igamma", "igammac", "igamma_grad_a"])
def test_incomplete_gamma_lowers_its_composite(name: str) -> None:
    """spec lowers the composite its impl evaluates (JAX lowers the same
    series and continued fraction; JAX's text, dead equations of the loop
    bodies included): the compiled module gives spec's bits up to XLA's
    rewrites, and JAX's values."""
    if not callable(while_p.lowering):
        pytest.skip("the composite's while_loop has no lowering in this checkout")
    a = np.array([0.5, 1.0, 2.5, 4.0, 9.0, 0.1], np.float32)
    x = np.array([0.2, 1.0, 3.0, 2.0, 12.0, 5.0], np.float32)
    ours, compiled, text = spec_and_compiled(getattr(slax, name), a, x)
    assert canonical(text) == canonical(jax.jit(getattr(jlax, name)).lower(a, x).as_text())
    theirs = np.asarray(jax.jit(getattr(jlax, name))(a, x))
    _close(ours[0], compiled[0], 8, 1e-7, 0.0, np.dtype(np.float32), scale=None)
    _close(compiled[0], theirs, 8, 1e-7, 0.0, np.dtype(np.float32), scale=None)


_FLOAT_BITS = st.lists(st.integers(0, 2 ** 32 - 1), min_size=6, max_size=6)


@settings(max_examples=15, deadline=None)
@given(_FLOAT_BITS, st.lists(st.integers(-300, 300), min_size=6, max_size=6))
def test_bit_field_lowerings_bitwise_on_drawn_floats(raw: list[int], shifts: list[int]
                                                     ) -> None:
    """Any float32 bits (subnormals, nans, infinities included): the compiled
    frexp, ldexp and nextafter give spec's bits."""
    x = np.array(raw, np.uint32).view(np.float32)
    n = np.array(shifts, np.int32)
    y = x[::-1].copy()

    def fn(a: Any, b: Any, k: Any) -> Any:
        return (*snp.frexp(a), snp.ldexp(a, k), slax.nextafter(a, b))
    ours, compiled, _ = spec_and_compiled(fn, x, y, n)
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]


_I0E_X = np.array([0.0, -0.0, 1e-3, 1.5, -2.5, 7.99, 8.0, 8.01, 30.0, -100.0, 1e30, np.inf,
                   np.nan], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_bessel_i0e_lowers_to_jax_chebyshev_composite(dtype: Any,
                                                       request: pytest.FixtureRequest) -> None:
    """bessel_i0e lowers to JAX's Chebyshev composite: JAX's module text
    (float16 computed in float32), which XLA runs to spec's values within
    SPEC.md's bound (2 float32 ULPs, 1e-14 relative in float64); in float32
    through jnp.i0, a jit around it (4 ULPs: e^|x| rounds too)."""
    if dtype == np.float64:
        request.getfixturevalue("x64")
    x = _I0E_X.astype(dtype) if dtype != np.float16 else _I0E_X[_I0E_X != 1e30].astype(dtype)
    assert canonical(lowered(slax.bessel_i0e, x)) == \
        canonical(jax.jit(jlax.bessel_i0e).lower(x).as_text())
    if dtype == np.float32:
        x = x[np.isfinite(x) & (np.abs(x) < 50)]
        ours, compiled, text = spec_and_compiled(snp.i0, x)
        assert canonical(text) == canonical(jax.jit(jnp.i0).lower(x).as_text())
        _close(ours[0], compiled[0], 4, 0.0, 0.0, np.dtype(dtype), scale=None)
        return
    ours, compiled, _ = spec_and_compiled(slax.bessel_i0e, x)
    ulps, rtol = (0, 1e-14) if dtype == np.float64 else (2, 0.0)
    _close(ours[0], compiled[0], ulps, 0.0, rtol, np.dtype(dtype), scale=None)


# lgamma's hard operands: subnormals, zeros, poles, the zeros of lgamma on
# (-10, -2) and the edges of their windows, Stirling's range, overflow.
_LGAMMA_X = np.array([
    1e-45, -1e-45, 1e-39, -3e-39, 0.0, -0.0, 0.5, 1.0, 2.0, 1.5, 1.5000001, 4.0, 4.0000005,
    -0.5, -1.0, -2.0, -2.4570247, -2.5, -2.6, -2.7476826, -3.0000002, -5.5, -6.00337,
    -9.99, -10.5, -8388608.0, -8388609.0, -1e30, 1e-8, 3.7, 37.5, 1e20, 4.085003e36,
    4.0850033e36, 3e38, np.inf, -np.inf, np.nan], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
def test_lgamma_lowers_to_jax_float32_computation(dtype: Any) -> None:
    """lgamma of float32 (and narrower, through float32) lowers to JAX's own
    float32 computation, its jitted helpers named as JAX's: JAX's text,
    which XLA runs to JAX's bits on operands across every branch."""
    with np.errstate(over="ignore"):  # (float16 overflows to inf)
        x = _LGAMMA_X.astype(dtype)
    _, compiled, text = spec_and_compiled(slax.lgamma, x)
    assert canonical(text) == canonical(jax.jit(jlax.lgamma).lower(x).as_text())
    assert bits(compiled[0]) == bits(np.asarray(jax.jit(jlax.lgamma)(x)))


def test_lgamma_helpers_are_emitted_once_per_operand_type() -> None:
    """Two lgammas of one operand type call one private function; another
    shape gets its own, as JAX's symbol table names them."""
    def f(lax: Any) -> Callable[..., Any]:
        return lambda a, b: (lax.lgamma(a) * 2, lax.lgamma(b), lax.lgamma(a + 1))
    a, b = _POS[:3], _POS.reshape(1, -1)
    assert canonical(lowered(f(slax), a, b)) == canonical(jax.jit(f(jlax)).lower(a, b).as_text())


def test_lgamma_helper_bodies_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """lgamma's staged helper bodies (one per helper and operand type) are
    kept up to a bound, the oldest going first: lowering lgamma at several
    shapes past it keeps at most the bound, and each module is still JAX's."""
    from spec._src.lax import elementwise as spec_elementwise
    monkeypatch.setattr(spec_elementwise, "_STAGED_HELPERS", {})
    monkeypatch.setattr(spec_elementwise, "_STAGED_HELPERS_KEPT", 9)
    for n in (2, 3, 4):
        x = _POS[:n]
        text = lowered(slax.lgamma, x)
        assert canonical(text) == canonical(jax.jit(jlax.lgamma).lower(x).as_text())
        assert len(spec_elementwise._STAGED_HELPERS) <= 9


def test_betainc_lowers_to_jax_continued_fraction() -> None:
    """regularized_incomplete_beta lowers to JAX's while-loop composite
    (the same jaxpr as JAX's lowering function traces; JAX's module text),
    and the compiled module gives spec's values within SPEC.md's float32
    bound (1e-4 relative), special values exactly."""
    from jax._src.lax import special as jax_special
    from spec._src.lax import special_functions as spec_special
    a = np.array([0.5, 1.0, 2.5, 4.0, 9.0, 0.1, 0.0, 2.0, -1.0, np.nan, 3.0, np.inf],
                 np.float32)
    b = np.array([0.2, 1.0, 3.0, 2.0, 12.0, 5.0, 1.0, 0.0, 1.0, 1.0, 2.0, 1.0], np.float32)
    x = np.array([0.2, 0.5, 0.3, 0.9, 0.4, 0.01, 0.5, 0.5, 0.5, 0.5, 1.0, 0.5], np.float32)
    traced = [fn(lambda *v, f=f: f(*v, dtype=np.dtype(np.float32)))(a, b, x) for fn, f in
              [(spec.make_jaxpr, spec_special._betainc_composite),
               (jax.make_jaxpr, jax_special.regularized_incomplete_beta_impl)]]
    assert str(traced[0]) == str(traced[1])
    ours, compiled, text = spec_and_compiled(slax.betainc, a, b, x)
    assert canonical(text) == canonical(jax.jit(jlax.betainc).lower(a, b, x).as_text())
    _close(ours[0], compiled[0], 0, 0.0, 1e-4, np.dtype(np.float32), scale=None)


def test_conversions_lower_as_jax() -> None:
    """A conversion to bool is x != 0 and a complex operand converted to a
    real dtype keeps its real part, as JAX lowers them: JAX's text, which
    XLA runs to spec's bits."""
    n = np.array([0, 1, -2, 256, 7], np.int32)
    z = (n + 1j * n[::-1]).astype(np.complex64)
    for fn, arg in [(lambda v: jlax.convert_element_type(v, np.bool_), n),
                    (lambda v: jlax.convert_element_type(v, np.bool_), z),
                    (lambda v: jlax.convert_element_type(v, np.float32), z)]:
        def sfn(v: Any, dt: Any = fn(arg).dtype) -> Any:
            return slax.convert_element_type(v, dt)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            ours, compiled, text = spec_and_compiled(sfn, arg)
            assert canonical(text) == canonical(jax.jit(fn).lower(arg).as_text())
            assert bits(compiled[0]) == bits(ours[0])


_COMPLEX = np.array([1 + 2j, np.nan + np.inf * 1j, np.inf - 1j, 0 + 80j, -0.0 - 3j,
                     1e-30 + 1e-30j, 3e30 - 4e30j, 0.5 - 0.25j], np.complex64)


@pytest.mark.parametrize("name", ["abs", "sin", "cos", "square", "exp2", "log2"])
def test_complex_expansions_are_jax_s(name: str) -> None:
    """abs (a hypot scaled against overflow and underflow, inf beside a NaN),
    sin and cos (over expm1, a zero real part kept exact), square, exp2 and
    log2 of a complex operand lower to JAX's expansion; XLA runs it to JAX's
    values, and ``as_text("hlo")`` is XLA's conversion of it (``chlo.square``
    expanded as XLA expands it; not for exp2 and log2, whose complex
    exponential and logarithm XLA expands into real operations and spec's
    HLO text does not)."""
    from tests.lowering.xla_run import compile_and_run, hlo_renumbered, xla_hlo_text
    lowered_ = spec.jit(getattr(slax, name)).lower(_COMPLEX)
    text = lowered_.as_text()
    if name not in ("exp2", "log2"):
        assert hlo_renumbered(lowered_.as_text("hlo")) == hlo_renumbered(
            xla_hlo_text(lowered_.as_text(debug_info=True)))
    assert canonical(text) == canonical(jax.jit(getattr(jlax, name)).lower(_COMPLEX).as_text())
    (ours,) = compile_and_run(text, [_COMPLEX])
    assert bits(ours) == bits(np.asarray(jax.jit(getattr(jlax, name))(_COMPLEX)))


def test_integer_powers_lower_as_jax() -> None:
    """integer_pow as JAX's multiplication sequence: x * x, (x * x) * x for
    a cube, square-and-multiply above, 1 / x^n for negative powers."""
    for dtype in (np.float32, np.complex64):
        x = np.ones(3, dtype)
        for y in (0, 1, 2, 3, 5, 6, -1, -3):
            ours = spec.jit(lambda a: slax.integer_pow(a, y)).lower(x).as_text()
            theirs = jax.jit(lambda a: jlax.integer_pow(a, y)).lower(x).as_text()
            assert canonical(ours) == canonical(theirs), (dtype, y)
