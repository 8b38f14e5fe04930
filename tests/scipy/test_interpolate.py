"""spec.scipy.interpolate.RegularGridInterpolator against jax.scipy.interpolate run live:
linear and nearest values, dtypes and shapes for every form of query points (inside and
outside the grid, fill values, trailing value axes, integer values), gradients, jit and vmap
through the interpolator as a pytree, and the errors JAX raises; then scipy.interpolate in
float64 as a second oracle."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.interpolate as J
import numpy as np
import pytest
import scipy.interpolate as scipy_interpolate

import spec
import spec.numpy as snp
import spec.scipy.interpolate as S
from tests.support.pair import errors_alike

_rng = np.random.default_rng(7)
# An uneven grid: cells of different widths along each axis.
_GRID = (np.array([0.0, 0.5, 2.0, 3.0], np.float32),
         np.array([-1.0, 0.0, 0.25, 1.5, 2.0], np.float32))
_VALUES = _rng.normal(size=(4, 5, 2)).astype(np.float32)
# Points inside the grid, on nodes, on its edges and outside it along either axis.
_XI = np.concatenate([
    np.stack([_rng.uniform(0, 3, 9), _rng.uniform(-1, 2, 9)], axis=-1),
    [[0.5, 0.25], [0.0, -1.0], [3.0, 2.0], [-0.1, 0.3], [1.0, 2.5], [3.5, -1.5]],
]).astype(np.float32)

# float32 sums of 4 products of O(1) values: JAX and spec evaluate the same expression, so
# only a difference in evaluation order could show, a few units of float32's 1.2e-7 epsilon.
_TOL = {"rtol": 1e-6, "atol": 1e-6}


def _close(ours: Any, theirs: Any, **tol: float) -> None:
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), **(tol or _TOL))


def _evaluations(m: Any, np_: Any, values: Any, xi: Any) -> dict[str, Any]:
    """Each way of building and calling an interpolator, on one library."""
    grid = tuple(np_.asarray(g) for g in _GRID)
    linear = m.RegularGridInterpolator(grid, values)
    nearest = m.RegularGridInterpolator(grid, values[..., 0], method="nearest")
    out = {
        "linear": linear(xi),
        "nearest_override": linear(xi, method="nearest"),
        "nearest": nearest(xi),
        "nearest_as_linear": nearest(xi, "linear"),
        # A batch of points (3, 5, 2); a flat list of pairs; a tuple of coordinate arrays that
        # broadcast (a 3 x 5 mesh).
        "batched": linear(xi.reshape(3, 5, 2)),
        "flat": nearest(xi.reshape(-1)),
        "tuple": nearest((xi[:3, :1], xi[:5, 1])),
        "one_tuple": nearest((xi,)),
        # fill_value None extrapolates from the edge cells.
        "extrapolated": m.RegularGridInterpolator(grid, values, fill_value=None)(xi),
        "filled": m.RegularGridInterpolator(grid, values, fill_value=-3)(xi),
        "int_values": m.RegularGridInterpolator(grid, np_.asarray(_GRID[1] * 4, np.int32) *
                                                np_.ones((4, 1), np.int32))(xi),
        # A grid over the first axis only: the other axes of values ride along.
        "one_axis": m.RegularGridInterpolator(grid[:1], values)(xi[:, :1]),
    }
    return out


def test_values_match_jax() -> None:
    ours = _evaluations(S, snp, snp.asarray(_VALUES), _XI)
    # JAX's side under jit: one compilation instead of one per operation keeps the test fast.
    theirs = jax.jit(functools.partial(_evaluations, J, jnp))(_VALUES, _XI)
    for name, expected in theirs.items():
        _close(ours[name], expected)
    assert np.isnan(np.asarray(ours["linear"])[-3:]).all()


def _mixed_precisions(m: Any, np_: Any, values: Any, xi: Any) -> list[Any]:
    """float16 values with float32 points, float32 with float64, float64 with float32."""
    return [m.RegularGridInterpolator(_GRID, v)(x) for v, x in
            [(values.astype(np_.float16), xi), (values, xi.astype(np_.float64)),
             (values.astype(np_.float64), xi)]]


def test_mixed_precisions_match_jax(x64: None) -> None:
    ours = _mixed_precisions(S, snp, snp.asarray(_VALUES), snp.asarray(_XI))
    # JAX's dtypes and shapes (traced, not compiled); the values against scipy in float64.
    theirs = jax.eval_shape(functools.partial(_mixed_precisions, J, jnp), _VALUES, _XI)
    reference = scipy_interpolate.RegularGridInterpolator(
        _GRID, _VALUES.astype(np.float64), bounds_error=False)(_XI.astype(np.float64))
    for our_values, expected, tolerance in zip(ours, theirs, [2e-3, 1e-6, 1e-6]):
        assert (our_values.dtype, our_values.shape) == (expected.dtype, expected.shape)
        # float16 values round to its 1e-3; the others are float32 at worst.
        np.testing.assert_allclose(np.asarray(our_values, np.float64), reference,
                                   rtol=tolerance, atol=tolerance)


def test_linear_interpolation_is_exact_on_a_linear_function() -> None:
    # f(x, y) = 30 (x - 1) + 10 (y - 4) + 10 on an integer grid (JAX's docstring example):
    # bilinear interpolation reproduces it, and integer values come back as float32.
    points = (snp.array([1, 2, 3]), snp.array([4, 5, 6]))
    values = snp.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]])
    out = S.RegularGridInterpolator(points, values)(snp.array([[1.5, 4.5], [2.2, 5.8]]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), [30.0, 64.0], rtol=1e-6)


def test_gradients_match_jax() -> None:
    def loss(m: Any, values: Any, xi: Any) -> Any:
        interpolator = m.RegularGridInterpolator(_GRID, values, fill_value=None)
        return (interpolator(xi) ** 2).sum()

    ours = spec.grad(functools.partial(loss, S), argnums=(0, 1))(snp.asarray(_VALUES), _XI)
    theirs = jax.jit(jax.grad(functools.partial(loss, J), argnums=(0, 1)))(_VALUES, _XI)
    for our_grad, their_grad in zip(ours, theirs):
        _close(our_grad, their_grad, rtol=1e-5, atol=1e-5)


def test_pytree_jit_and_vmap() -> None:
    interpolator = S.RegularGridInterpolator(_GRID, snp.asarray(_VALUES))
    twin = J.RegularGridInterpolator(_GRID, jnp.asarray(_VALUES))
    assert str(spec.tree_util.tree_structure(interpolator)) == \
        str(jax.tree_util.tree_structure(twin))
    assert sorted(vars(interpolator)) == sorted(vars(twin))
    jitted = spec.jit(lambda f, xi: f(xi))(interpolator, _XI)
    _close(jitted, interpolator(_XI))
    # vmap over query batches, and over the values (the interpolator rebuilt per slice).
    mapped = spec.vmap(interpolator)(_XI.reshape(3, 5, 2))
    _close(mapped, interpolator(_XI).reshape(3, 5, 2))
    stacked = np.stack([_VALUES[..., 0], 2 * _VALUES[..., 1]])

    def evaluate(values: Any) -> Any:
        return S.RegularGridInterpolator(_GRID, values, method="nearest")(_XI)

    looped = snp.stack([evaluate(snp.asarray(v)) for v in stacked])
    _close(spec.vmap(evaluate)(stacked), looped)


def test_matches_scipy_in_float64(x64: None) -> None:
    grid = tuple(g.astype(np.float64) for g in _GRID)
    values, xi = _VALUES.astype(np.float64), _XI.astype(np.float64)
    for method in ("linear", "nearest"):
        for fill_value in (np.nan, None, 0.5):
            ours = S.RegularGridInterpolator(grid, values, method, fill_value=fill_value)(xi)
            reference = scipy_interpolate.RegularGridInterpolator(
                grid, values, method, bounds_error=False, fill_value=fill_value)(xi)
            np.testing.assert_allclose(np.asarray(ours), reference, rtol=1e-13, atol=1e-13)


def _error_cases() -> dict[str, Any]:
    values = _VALUES[..., 0]
    return {
        "unknown method": lambda m, np_: m.RegularGridInterpolator(_GRID, np_.asarray(values),
                                                                   method="cubic"),
        "unknown call method": lambda m, np_: m.RegularGridInterpolator(
            _GRID, np_.asarray(values))(_XI, method="spline"),
        "bounds_error": lambda m, np_: m.RegularGridInterpolator(
            _GRID, np_.asarray(values), bounds_error=True),
        "values list": lambda m, np_: m.RegularGridInterpolator(_GRID, values.tolist()),
        "too many grids": lambda m, np_: m.RegularGridInterpolator(_GRID + _GRID[:1],
                                                                   np_.asarray(values)),
        "complex fill": lambda m, np_: m.RegularGridInterpolator(
            _GRID, np_.asarray(values), fill_value=1j),
        "grid lists": lambda m, np_: m.RegularGridInterpolator(
            tuple(g.tolist() for g in _GRID), np_.asarray(values)),
        "xi dimension": lambda m, np_: m.RegularGridInterpolator(
            _GRID, np_.asarray(values))(np_.ones((4, 3))),
        "flat xi size": lambda m, np_: m.RegularGridInterpolator(
            _GRID, np_.asarray(values))(np_.ones(5)),
        "tuple xi shapes": lambda m, np_: m.RegularGridInterpolator(
            _GRID, np_.asarray(values))((np_.ones(3), np_.ones(4))),
    }


@pytest.mark.parametrize("case", sorted(_error_cases()))
def test_errors_match_jax(case: str) -> None:
    build = _error_cases()[case]
    ours, theirs = errors_alike(lambda: build(S, snp), lambda: build(J, jnp))
    # Ours may say more (the offending values), never less.
    assert str(theirs) in str(ours)
