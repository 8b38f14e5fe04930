"""vmap of the elementwise primitives: spec's vmap against a Python loop over
the batch (run with spec) and against real JAX's vmap, for hypothesis-drawn
shapes, in_axes (None and negative included) and out_axes; the jaxprs of
representative vmapped functions against JAX's; vmap with grad and jit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jax import lax as jl

import spec
import spec.numpy as snp
from spec import lax as sl
from spec._src.core.registry import REGISTRY, missing_sections
from spec._src.lax import elementwise

SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ harness

def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _batched(rng: np.random.Generator, shape: Sequence[int], axis: int | None, size: int,
             make: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]) -> np.ndarray:
    """A value of per-example ``shape`` with a batch axis of ``size`` at ``axis``."""
    if axis is None:
        return make(rng, tuple(shape))
    full = list(shape)
    full.insert(axis % (len(shape) + 1), size)
    return make(rng, tuple(full))


def check_vmap(sf: Callable[..., Any], jf: Callable[..., Any], args: Sequence[np.ndarray],
               in_axes: Sequence[int | None], out_axes: int, *, rtol: float = 1e-6,
               jax_fails: bool = False) -> None:
    """spec's vmap == stacking spec's per-example results (exactly), and
    == JAX's vmap (values up to ``rtol``; dtypes and shapes exactly).
    ``jax_fails``: a case JAX 0.12's rule gets wrong (it raises TypeError)."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    got = _leaves(spec.vmap(sf, in_axes=tuple(in_axes), out_axes=out_axes)(*args))
    per = [_leaves(sf(*[a if ax is None else np.take(a, b, axis=ax)
                        for a, ax in zip(args, in_axes)])) for b in range(size)]
    if jax_fails:
        with pytest.raises(TypeError):
            jax.vmap(jf, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
        want = [np.stack([np.asarray(p[k]) for p in per], axis=out_axes)
                for k in range(len(got))]
    else:
        # One JAX compilation for the batched program (eagerly, each batched
        # primitive and axis move compiles on its own).
        want = _leaves(jax.jit(jax.vmap(jf, in_axes=tuple(in_axes), out_axes=out_axes))(
            *args))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        loop = np.stack([np.asarray(p[k]) for p in per], axis=out_axes)
        g_np = np.asarray(g)
        assert g_np.dtype == loop.dtype == np.asarray(w).dtype
        assert g_np.shape == loop.shape == np.shape(w)
        np.testing.assert_array_equal(g_np, loop)
        if g_np.dtype.kind in "fc":
            np.testing.assert_allclose(g_np, np.asarray(w), rtol=rtol, atol=1e-6)
        else:
            np.testing.assert_array_equal(g_np, np.asarray(w))


def _floats(lo: float, hi: float) -> Callable[..., np.ndarray]:
    def make(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(lo, hi, shape).astype(np.float32)
    return make


def _ints(lo: int, hi: int) -> Callable[..., np.ndarray]:
    def make(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.integers(lo, hi, shape).astype(np.int32)
    return make


def _complex(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.uniform(0.1, 0.9, shape) + 1j * rng.uniform(0.1, 0.9, shape)).astype(
        np.complex64)


def _bools(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 2, shape).astype(bool)


POS = _floats(0.1, 0.9)
INTS = _ints(0, 7)

# The lax function (same name in spec.lax and jax.lax) of each elementwise
# primitive, with its operands' value makers. Covers every primitive of
# spec/_src/lax/elementwise.py (checked below).
UNARY: dict[str, Any] = {
    "neg": POS, "sign": _floats(-1, 1), "floor": _floats(-2, 2), "ceil": _floats(-2, 2),
    "round": _floats(-2, 2), "is_finite": POS, "exp": POS, "exp2": POS, "log": POS,
    "log1p": POS, "expm1": POS, "tanh": POS, "logistic": POS, "sin": POS, "cos": POS,
    "tan": POS, "asin": POS, "acos": POS, "atan": POS, "sinh": POS, "cosh": POS,
    "asinh": POS, "acosh": _floats(1.1, 2.0), "atanh": POS, "sqrt": POS, "rsqrt": POS,
    "cbrt": POS, "square": POS, "abs": _floats(-1, 1), "erf": POS, "erfc": POS,
    "erf_inv": POS, "lgamma": POS, "digamma": POS, "real": _complex, "imag": _complex,
    "conj": _complex, "bitwise_not": INTS, "population_count": INTS, "clz": INTS,
}
BINARY: dict[str, Any] = {
    "add": POS, "sub": POS, "mul": POS, "div": POS, "rem": POS, "max": POS, "min": POS,
    "atan2": POS, "nextafter": POS, "pow": POS, "complex": POS, "bitwise_and": INTS,
    "bitwise_or": INTS, "bitwise_xor": INTS, "shift_left": INTS,
    "shift_right_logical": INTS, "shift_right_arithmetic": INTS, "eq": POS, "ne": POS,
    "lt": POS, "le": POS, "gt": POS, "ge": POS, "polygamma": None,
}
# lax function names whose primitive name differs.
PRIM_OF = {"bitwise_not": "not", "bitwise_and": "and", "bitwise_or": "or",
           "bitwise_xor": "xor"}
OTHERS = {"integer_pow", "select_n", "clamp", "polynomial", "one_minus_square", "log2",
          "eq_to", "le_to", "lt_to"}


def test_tables_cover_every_elementwise_primitive() -> None:
    names = {p.name for p in (getattr(elementwise, n) for n in elementwise.__all__
                              if n.endswith("_p"))}
    covered = {PRIM_OF.get(n, n) for n in [*UNARY, *BINARY]} | OTHERS
    assert names <= covered, names - covered


@st.composite
def _axes(draw: st.DrawFn, ranks: Sequence[int]) -> tuple[list[int | None], int]:
    """in_axes per operand (None, or a possibly negative axis of the batched
    value), at least one not None; and an out_axes for result rank."""
    axes: list[int | None] = [draw(st.none() | st.integers(-r - 1, r)) for r in ranks]
    if all(a is None for a in axes):
        axes[0] = draw(st.integers(-ranks[0] - 1, ranks[0]))
    return axes, draw(st.integers(-max(ranks) - 1, max(ranks)))


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3))
def test_unary(name: str, data: st.DataObject, shape: tuple[int, ...], size: int) -> None:
    (ax,), out = data.draw(_axes([len(shape)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = _batched(rng, shape, ax, size, UNARY[name])
    check_vmap(getattr(sl, name), getattr(jl, name), [x], [ax], out, rtol=4e-6)


def _second_shape(draw: Callable[..., Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The other operand: the same shape, rank 0 (lax stretches it), or the
    shape with some axes of size 1."""
    kind = draw(st.sampled_from(["same", "scalar", "ones"]))
    if kind == "scalar":
        return ()
    if kind == "ones":
        return tuple(1 if draw(st.booleans()) else d for d in shape)
    return shape


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3))
def test_binary(name: str, data: st.DataObject, shape: tuple[int, ...], size: int) -> None:
    shape2 = _second_shape(data.draw, shape)
    if data.draw(st.booleans()):
        shape, shape2 = shape2, shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    make = BINARY[name]
    if name == "polygamma":
        ex = [_ints(0, 3)(rng, shape).astype(np.float32), _floats(0.5, 2)(rng, shape2)]
    else:
        ex = [make(rng, shape), make(rng, shape2)]
    try:  # lax's per-example broadcasting: rank 0 stretches; size 1 where JAX allows
        jax.eval_shape(getattr(jl, name), *ex)
    except (TypeError, ValueError):
        assume(False)
    axes, out = data.draw(_axes([len(shape), len(shape2)]))
    makers = [make, make] if name != "polygamma" else [
        lambda r, s: _ints(0, 3)(r, s).astype(np.float32), _floats(0.5, 2)]
    args = [_batched(rng, s, a, size, m) for s, a, m in zip([shape, shape2], axes, makers)]
    check_vmap(getattr(sl, name), getattr(jl, name), args, axes, out, rtol=3e-5)


@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3), y=st.integers(-3, 4))
def test_integer_pow(data: st.DataObject, shape: tuple[int, ...], size: int, y: int) -> None:
    (ax,), out = data.draw(_axes([len(shape)]))
    x = _batched(np.random.default_rng(size), shape, ax, size, _floats(0.5, 1.5))
    check_vmap(lambda v: sl.integer_pow(v, y), lambda v: jl.integer_pow(v, y), [x], [ax], out)


@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3))
def test_select_n(data: st.DataObject, shape: tuple[int, ...], size: int) -> None:
    """`which` rank 0 or of the cases' shape; cases of one shape; bool
    (two cases) or int32 (three cases)."""
    which_shape = data.draw(st.sampled_from([(), shape]))
    n = data.draw(st.sampled_from([1, 2, 3]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    pred_make = _bools if n <= 2 else _ints(-1, 4)
    axes, out = data.draw(_axes([len(which_shape)] + [len(shape)] * n))
    args = [_batched(rng, which_shape, axes[0], size, pred_make)]
    args += [_batched(rng, shape, a, size, POS) for a in axes[1:]]
    check_vmap(sl.select_n, jl.select_n, args, axes, out)


@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3))
def test_clamp(data: st.DataObject, shape: tuple[int, ...], size: int) -> None:
    lo_shape = data.draw(st.sampled_from([(), shape]))
    hi_shape = data.draw(st.sampled_from([(), shape]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    axes, out = data.draw(_axes([len(lo_shape), len(shape), len(hi_shape)]))
    args = [_batched(rng, lo_shape, axes[0], size, _floats(0, 0.4)),
            _batched(rng, shape, axes[1], size, _floats(-1, 2)),
            _batched(rng, hi_shape, axes[2], size, _floats(0.6, 1))]
    # JAX's rule leaves a rank-0 operand unbroadcast when only max is batched.
    jax_bug = shape == () and axes[0] is None and axes[1] is None and axes[2] is not None
    check_vmap(sl.clamp, jl.clamp, args, axes, out, jax_fails=jax_bug)


@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3), n=st.integers(1, 3))
def test_polynomial(data: st.DataObject, shape: tuple[int, ...], size: int, n: int) -> None:
    """Array coefficients (rank 0 or the operand's shape), batched or not."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    cshapes = [data.draw(st.sampled_from([(), shape])) for _ in range(n + 1)]
    axes, out = data.draw(_axes([len(shape)] + [len(c) for c in cshapes]))
    args = [_batched(rng, s, a, size, _floats(-1, 1)) for s, a in zip([shape, *cshapes], axes)]

    def sf(x: Any, *cs: Any) -> Any:
        return elementwise.polynomial_p.bind(x, *cs)

    def jf(x: Any, *cs: Any) -> Any:
        from jax._src.lax.lax import polynomial_p  # the primitive, as spec binds it
        return polynomial_p.bind(x, *cs, unroll=1)

    check_vmap(sf, jf, args, axes, out, rtol=1e-5)


@SETTINGS
@given(data=st.data(), shape=shapes, size=st.integers(1, 3))
def test_frexp_ldexp(data: st.DataObject, shape: tuple[int, ...], size: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    (ax,), out = data.draw(_axes([len(shape)]))
    x = _batched(rng, shape, ax, size, _floats(-50, 50))
    check_vmap(snp.frexp, jnp.frexp, [x], [ax], out)
    axes, out = data.draw(_axes([len(shape), len(shape)]))
    args = [_batched(rng, shape, axes[0], size, _floats(-50, 50)),
            _batched(rng, shape, axes[1], size, _ints(-5, 5))]
    check_vmap(snp.ldexp, jnp.ldexp, args, axes, out)


def test_size_zero_batch() -> None:
    x = np.zeros((0, 3), np.float32)
    got = spec.vmap(lambda a, b: sl.mul(a, b), in_axes=(0, None))(x, np.ones(3, np.float32))
    want = jax.vmap(lambda a, b: jl.mul(a, b), in_axes=(0, None))(x, np.ones(3, np.float32))
    assert np.shape(got) == np.shape(want) == (0, 3)


# ------------------------------------------------------------- jaxpr texts

def _x() -> np.ndarray:
    return np.arange(16, dtype=np.float32).reshape(4, 4)


JAXPR_CASES: list[tuple[str, Callable[[Any, Any], Callable[..., Any]], tuple[Any, ...], Any]] = [
    ("add_1_none", lambda L, N: lambda a, b: a + b, (_x(), np.arange(4, dtype=np.float32)),
     (1, None)),
    ("add_scalar", lambda L, N: lambda a, b: L.add(a, b), (_x(), np.float32(2)), (1, None)),
    ("add_batched_scalar", lambda L, N: lambda a, b: L.add(a, b),
     (_x(), np.arange(4, dtype=np.float32)), (1, 0)),
    ("mul_agree", lambda L, N: lambda a, b: L.mul(a, b), (_x(), _x()), (1, 1)),
    ("where", lambda L, N: lambda a, b: N.where(a > 2, a, b),
     (_x(), np.arange(4, dtype=np.float32)), (1, None)),
    ("select_batched_scalar_pred", lambda L, N: lambda c, a, b: L.select(c, a, b),
     (_x()[0] > 3, _x(), _x()), (0, 1, 1)),
    ("select_scalar_pred", lambda L, N: lambda c, a, b: L.select(c, a, b),
     (np.bool_(True), _x(), _x()), (None, 1, 0)),
    ("select_n_int", lambda L, N: lambda c, a, b, d: L.select_n(c, a, b, d),
     (np.arange(4, dtype=np.int32) % 3, _x(), _x(), _x()[0]), (0, 1, 0, None)),
    ("clamp_scalars", lambda L, N: lambda a: L.clamp(np.float32(1), a, np.float32(5)),
     (_x(),), 1),
    ("clamp_batched_lo", lambda L, N: lambda lo, a: L.clamp(lo, a, np.float32(5)),
     (np.arange(4, dtype=np.float32), _x()), (0, 1)),
    ("clamp_array_lo", lambda L, N: lambda lo, a: L.clamp(lo, a, np.float32(5)),
     (_x(), _x()), (0, 1)),
    ("integer_pow", lambda L, N: lambda a: a ** 3, (_x(),), 1),
    ("pow", lambda L, N: lambda a, b: a ** b, (_x(), np.arange(4, dtype=np.float32)),
     (1, None)),
    ("round_abs", lambda L, N: lambda a: N.abs(N.round(a)), (_x(),), 1),
    ("complex_parts", lambda L, N: lambda a, b: N.real(N.conj(L.complex(a, b))) + N.imag(
        L.complex(a, b)), (_x(), np.arange(4, dtype=np.float32)), (1, None)),
    ("frexp", lambda L, N: lambda a: N.frexp(a), (_x(),), 1),
    ("ldexp", lambda L, N: lambda a, b: N.ldexp(a, b), (_x(), np.arange(4, dtype=np.int32)),
     (1, None)),
    ("polynomial", lambda L, N: lambda a: L.polynomial(a, [1.0, 2.0, 3.0]), (_x(),), 1),
]


@pytest.mark.parametrize("name,mk,args,in_axes", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_jaxpr_text(name: str, mk: Any, args: tuple[Any, ...], in_axes: Any) -> None:
    if name == "polynomial" and not hasattr(jl, "polynomial"):
        pytest.skip("jax.lax has no polynomial")
    want = str(jax.make_jaxpr(jax.vmap(mk(jl, jnp), in_axes=in_axes))(*args))
    got = str(spec.make_jaxpr(spec.vmap(mk(sl, snp), in_axes=in_axes))(*args))
    assert got == want


# ------------------------------------------------- with other transformations

def _f(x: Any, lax: Any) -> Any:
    return lax.mul(lax.sin(x), lax.clamp(np.float32(0.2), x, np.float32(0.7)))


def _loss(x: Any, lax: Any, np_: Any) -> Any:
    return np_.sum(_f(x, lax))


def test_vmap_of_grad_and_grad_of_vmap() -> None:
    x = np.linspace(0.1, 0.9, 6, dtype=np.float32).reshape(2, 3)
    got = spec.vmap(spec.grad(lambda v: _loss(v, sl, snp)), in_axes=1)(x)
    want = jax.vmap(jax.grad(lambda v: _loss(v, jl, jnp)), in_axes=1)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    got2 = spec.grad(lambda v: spec.vmap(lambda r: _f(r, sl))(v).sum())(x)
    want2 = jax.grad(lambda v: jax.vmap(lambda r: _f(r, jl))(v).sum())(x)
    np.testing.assert_allclose(np.asarray(got2), np.asarray(want2), rtol=1e-6)
    t_got = str(spec.make_jaxpr(spec.vmap(spec.grad(lambda v: _loss(v, sl, snp))))(x[0]))
    t_want = str(jax.make_jaxpr(jax.vmap(jax.grad(lambda v: _loss(v, jl, jnp))))(x[0]))
    assert t_got == t_want


def test_nested_vmap_and_jit() -> None:
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    y = np.linspace(0, 1, 3, dtype=np.float32)

    def g(a: Any, b: Any, lax: Any, api: Any) -> Any:
        return api.jit(lambda u, v: lax.select(lax.gt(u, v), u, lax.mul(u, v)))(a, b)

    got = spec.vmap(spec.vmap(lambda a, b: g(a, b, sl, spec), in_axes=(1, None)),
                    in_axes=(0, None))(x, y[0])
    want = jax.vmap(jax.vmap(lambda a, b: g(a, b, jl, jax), in_axes=(1, None)),
                    in_axes=(0, None))(x, y[0])
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    t_got = str(spec.make_jaxpr(spec.vmap(lambda a, b: g(a, b, sl, spec), in_axes=(0, 0)))(
        x[0], y))
    t_want = str(jax.make_jaxpr(jax.vmap(lambda a, b: g(a, b, jl, jax), in_axes=(0, 0)))(
        x[0], y))
    assert t_got == t_want


def test_no_batch_rule_missing() -> None:
    mine = {p.name for p in REGISTRY.values()
            if p.impl.__module__ in ("spec._src.lax.elementwise",)} | {
        n for n in ("abs", "clamp", "complex", "conj", "imag", "real", "integer_pow", "mul",
                    "pow", "round", "select_n", "polynomial")}
    missing = {m[0] for m in missing_sections() if m[1] == "batch"}
    assert not (mine & missing), mine & missing


@pytest.mark.parametrize("name", ["eq_to", "le_to", "lt_to"])
def test_total_order_comparisons(name: str) -> None:
    """The total-order comparisons (primitives without a lax function) batch as the
    loop and as JAX's vmap, nan and signed zeros included."""
    x = np.array([[0.0, -0.0, np.nan, 1.0], [-np.nan, 2.0, -1.0, 0.0]], np.float32)
    y = np.array([-0.0, 0.0, np.nan, 2.0], np.float32)
    s_prim, j_prim = getattr(sl, f"{name}_p"), getattr(jl, f"{name}_p")
    check_vmap(lambda a, b: s_prim.bind(a, b), lambda a, b: j_prim.bind(a, b),
               [x, y], [0, None], 0)
