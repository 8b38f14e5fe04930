"""spec.scipy.ndimage.map_coordinates against jax.scipy.ndimage run live: nearest and linear
interpolation in every boundary mode, float and integer images: values, dtypes and jaxpr
text; linear interpolation is exact on a linear image; and the errors JAX raises."""

from __future__ import annotations

from typing import Any

import jax
import jax.scipy.ndimage as J
import numpy as np
import pytest

import spec
import spec.scipy.ndimage as S
from tests.support.pair import errors_alike

_rng = np.random.default_rng(4)
_IMAGE = _rng.normal(size=(5, 6)).astype(np.float32)
_COORDS = [_rng.uniform(-2, 7, 11).astype(np.float32), _rng.uniform(-2, 8, 11).astype(np.float32)]


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_matches_jax(order: int, mode: str) -> None:
    image = _IMAGE if mode != "wrap" else (_IMAGE * 10).astype(np.int32)
    ours = S.map_coordinates(image, _COORDS, order, mode=mode, cval=0.5)
    theirs = J.map_coordinates(image, _COORDS, order, mode=mode, cval=0.5)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6, atol=1e-6)
    if order == 1:
        def call(m: Any, impl: Any) -> Any:
            return lambda img, *c: impl.map_coordinates(img, c, order, mode=m)
        assert str(spec.make_jaxpr(call(mode, S))(image, *_COORDS)) == \
            str(jax.make_jaxpr(call(mode, J))(image, *_COORDS))


def test_linear_interpolation_is_exact_on_a_linear_image() -> None:
    i, j = np.meshgrid(np.arange(5.0), np.arange(6.0), indexing="ij")
    coords = [np.array([0.25, 3.5, 1.75]), np.array([4.5, 0.1, 2.0])]
    out = S.map_coordinates(2 * i - 3 * j + 1, coords, 1)
    # (float32 without x64: exact up to its rounding.)
    np.testing.assert_allclose(np.asarray(out), 2 * coords[0] - 3 * coords[1] + 1, rtol=1e-6)


@pytest.mark.parametrize("args", [(_IMAGE, _COORDS[:1], 1), (_IMAGE, _COORDS, 3),
                                  (_IMAGE, _COORDS, 1, "grid-wrap")])
def test_errors_match_jax(args: tuple[Any, ...]) -> None:
    ours, theirs = errors_alike(lambda: S.map_coordinates(*args),
                                lambda: J.map_coordinates(*args))
    assert str(ours) == str(theirs)
