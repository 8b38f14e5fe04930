"""jnp.fft and lax.fft against JAX run live (values within a stated
tolerance, dtypes, jaxprs, errors), and the ``fft`` primitive against
mathematics: its impl is NumPy's float64 transform rounded once, its
transpose passes the dot-product test, vmap is a loop, its lowering is
JAX's."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.test_stablehlo import _canonical, _compile_and_run
from tests.support.pair import errors_alike

_rng = np.random.default_rng(3)
X = _rng.standard_normal((3, 4, 6)).astype(np.float32)
Z = (X + 1j * _rng.standard_normal((3, 4, 6))).astype(np.complex64)

# (function, operand, keyword arguments)
_CALLS: list[tuple[str, Any, dict[str, Any]]] = [
    ("fft", Z, {}), ("fft", X, {"n": 9, "axis": 0, "norm": "ortho"}), ("ifft", Z, {"n": 4}),
    ("rfft", X, {}), ("rfft", X, {"n": 5, "axis": 1, "norm": "forward"}),
    ("irfft", Z, {}), ("irfft", Z, {"n": 7, "axis": 0}), ("hfft", Z, {}), ("ihfft", X, {}),
    ("fft2", Z, {"norm": "forward"}), ("ifft2", Z, {"s": (3, 5)}), ("rfft2", X, {}),
    ("irfft2", Z, {"axes": (0, 2)}), ("fftn", X, {}), ("ifftn", Z, {"axes": (2, 0)}),
    ("rfftn", X, {"s": (2, 8)}), ("irfftn", Z, {"norm": "ortho"}),
    ("fftn", _rng.standard_normal((2, 2, 2, 3, 2)).astype(np.complex64), {}),
    ("irfftn", _rng.standard_normal((2, 2, 2, 3, 2)).astype(np.complex64), {}),
    ("fftshift", X, {}), ("ifftshift", X, {"axes": 1}), ("fftshift", X, {"axes": (0, 2)}),
]


def _close(ours: Any, theirs: Any) -> None:
    """Equal dtypes and shapes; values within 1e-5 of the largest magnitude
    (float32 transforms in XLA's ducc round each butterfly; spec's are the
    float64 transform rounded once)."""
    a, b = np.asarray(ours), np.asarray(theirs)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    scale = max(float(np.max(np.abs(b))), 1.0) if b.size else 1.0
    eps = 1e-5 if a.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(a, b, rtol=0, atol=eps * scale)


@pytest.mark.parametrize("name, x, kwargs", _CALLS, ids=[f"{c[0]}-{i}" for i, c in
                                                         enumerate(_CALLS)])
def test_jnp_fft_matches_jax(name: str, x: Any, kwargs: dict[str, Any]) -> None:
    _close(getattr(snp.fft, name)(x, **kwargs), getattr(jnp.fft, name)(x, **kwargs))


def test_transforms_over_an_empty_axis_match_jax() -> None:
    """An empty transform is empty (JAX's RFFT of length 0 fails when lowered: ValueError)."""
    e, ez = np.zeros((2, 0), np.float32), np.zeros((0, 3), np.complex64)
    for name, x in (("fft", e), ("ifft2", ez), ("irfft", np.zeros((2, 1), np.complex64))):
        _close(getattr(snp.fft, name)(x), jax.jit(getattr(jnp.fft, name))(x))
    _close(spec.grad(lambda v: snp.fft.fft(v).real.sum())(e),
           jax.jit(jax.grad(lambda v: jnp.fft.fft(v).real.sum()))(e))
    for lib, fft in ((jax, jnp.fft), (spec, snp.fft)):
        with pytest.raises(ValueError):
            lib.block_until_ready(fft.rfft(e))


def test_float64_and_frequencies(x64: None) -> None:
    x = _rng.standard_normal((5, 8))
    for name in ("fft", "rfft", "ifft2", "rfftn", "hfft"):
        _close(getattr(snp.fft, name)(x), getattr(jnp.fft, name)(x))
    for n, d in ((8, 1.0), (7, 0.5)):
        _close(snp.fft.fftfreq(n, d), jnp.fft.fftfreq(n, d))
        _close(snp.fft.rfftfreq(n, d), jnp.fft.rfftfreq(n, d))
    _close(snp.fft.fftfreq(6, dtype=np.float32), jnp.fft.fftfreq(6, dtype=np.float32))


def test_float32_frequencies_and_weak_types() -> None:
    _close(snp.fft.fftfreq(5), jnp.fft.fftfreq(5))
    _close(snp.fft.rfftfreq(9, 0.1), jnp.fft.rfftfreq(9, 0.1))
    for fn in ("fft", "rfft"):
        theirs = jax.eval_shape(getattr(jnp.fft, fn), 2.0 * jnp.ones(4))
        ours = spec.eval_shape(getattr(snp.fft, fn), 2.0 * snp.ones(4))
        assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)


def test_impl_is_numpy_float64_rounded_once() -> None:
    """The contract that makes float32 results machine-independent."""
    ours = np.asarray(slax.fft(Z, slax.FftType.FFT, (4, 6)))
    wide = np.fft.fftn(Z.astype(np.complex128), axes=(1, 2)).astype(np.complex64)
    assert ours.tobytes() == wide.tobytes()
    ours_r = np.asarray(slax.fft(X, "irfft", (4, 10)))
    wide_r = np.fft.irfftn(X.astype(np.complex128), s=(4, 10), axes=(1, 2)).astype(np.float32)
    assert ours_r.tobytes() == wide_r.tobytes()


def test_jaxprs_match_jax() -> None:
    for name, x, kwargs in [("rfft", X, {"n": 8, "norm": "ortho"}), ("fft2", X, {}),
                            ("irfftn", Z, {"s": (3, 4)}), ("fftshift", X, {}),
                            ("ihfft", X, {})]:
        theirs = jax.make_jaxpr(lambda v: getattr(jnp.fft, name)(v, **kwargs))(x)
        ours = spec.make_jaxpr(lambda v: getattr(snp.fft, name)(v, **kwargs))(x)
        assert str(ours) == str(theirs), name


@pytest.mark.parametrize("call", [
    lambda fft, lax: lax.fft(Z, "rfft", (6,)),
    lambda fft, lax: lax.fft(Z, "dft", (6,)),
    lambda fft, lax: lax.fft(Z, 7, (6,)),
    lambda fft, lax: lax.fft(X, "fft", (5,)),
    lambda fft, lax: lax.fft(X, "rfft", (1, 2, 3, 4)),
    lambda fft, lax: lax.fft(Z, "irfft", (5, 6)),
    lambda fft, lax: fft.fft(X, n=0),
    lambda fft, lax: fft.fftn(X, s=(2, 3), axes=(0,)),
    lambda fft, lax: fft.fftn(X, axes=(1, 1)),
    lambda fft, lax: fft.fft(X, axis=(0, 1)),
    lambda fft, lax: fft.fft2(X, axes=(0,)),
    lambda fft, lax: fft.fft(X, norm="none"),
    lambda fft, lax: fft.fftfreq([3]),
])
def test_errors_match_jax(call: Any) -> None:
    ours, theirs = errors_alike(lambda: call(snp.fft, slax), lambda: call(jnp.fft, jlax))
    assert str(theirs) in str(ours)


@pytest.mark.parametrize("kind, x, lengths", [
    ("fft", Z, (4, 6)), ("ifft", Z, (6,)), ("rfft", X, (4, 6)), ("rfft", X[..., :5], (5,)),
    ("irfft", Z[..., :4], (4, 6)), ("irfft", Z[..., :4], (7,))])
def test_transpose_is_adjoint_and_vjp_matches_jax(kind: str, x: Any, lengths: Any) -> None:
    """Re sum(F(x) y) = Re sum(x F^T(y)) (JAX's convention: the bilinear
    transpose, its real part where one side is real), and the VJP is JAX's."""
    fwd = lambda v: slax.fft(v, kind, lengths)  # noqa: E731
    y_aval = spec.eval_shape(fwd, x)
    y = _rng.standard_normal(y_aval.shape).astype(np.float32)
    if np.dtype(y_aval.dtype).kind == "c":
        y = (y + 1j * _rng.standard_normal(y_aval.shape)).astype(y_aval.dtype)
    (ft_y,) = spec.linear_transpose(fwd, x)(y)

    def inner(a: Any, b: Any) -> float:
        a, b = np.asarray(a, np.complex128), np.asarray(b, np.complex128)
        return float(np.sum(a * b).real)
    lhs, rhs = inner(fwd(x), y), inner(x, ft_y)
    assert abs(lhs - rhs) <= 1e-4 * max(abs(lhs), 1.0)
    (theirs,) = jax.vjp(lambda v: jlax.fft(v, kind, lengths), x)[1](y)
    _close(spec.vjp(fwd, x)[1](y)[0], theirs)


def test_vmap_is_a_loop() -> None:
    fwd = lambda v: slax.fft(v, "rfft", (6,))  # noqa: E731
    batched = np.asarray(spec.vmap(fwd, in_axes=1)(X))
    looped = np.stack([np.asarray(fwd(X[:, i])) for i in range(X.shape[1])])
    np.testing.assert_array_equal(batched, looped)
    np.testing.assert_array_equal(
        np.asarray(spec.vmap(lambda v: slax.fft(v, "fft", (4, 6)))(Z)),
        np.asarray(slax.fft(Z, "fft", (4, 6))))


def test_lowering_matches_jax() -> None:
    for kind, x, lengths in [("rfft", X, (4, 6)), ("fft", Z, (6,)), ("irfft", Z, (4, 10))]:
        jaxpr = spec.make_jaxpr(lambda v: slax.fft_p.bind(
            v, fft_type=slax.FftType[kind.upper()], fft_lengths=lengths))(x)
        text = lower_jaxpr(jaxpr, "f")
        theirs = jax.jit(lambda v: jlax.fft_p.bind(
            v, fft_type=jlax.FftType[kind.upper()], fft_lengths=lengths)).lower(x).as_text()
        assert _canonical(text) == _canonical(theirs.replace("@jit__lambda", "@jit_f"))
        _close(_compile_and_run(text, [x])[0], jax.jit(jlax.fft, static_argnums=(1, 2))(
            x, kind, lengths))
