"""spec.scipy.integrate.trapezoid against jax.scipy.integrate.trapezoid run live: values,
dtypes and jaxpr text with and without sample points, over a chosen axis; and exactness on a
linear function (the trapezoid rule integrates it exactly)."""

from __future__ import annotations

from typing import Any

import jax
import jax.scipy.integrate as J
import numpy as np
import pytest

import spec
import spec.scipy.integrate as S

_Y = np.random.default_rng(2).normal(size=(3, 7)).astype(np.float32)


@pytest.mark.parametrize("args, kwargs", [
    ((_Y,), {}), ((_Y,), {"dx": 0.5, "axis": 0}), ((_Y, np.linspace(0, 2, 7)), {}),
    ((np.arange(5),), {}),
])
def test_matches_jax(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours, theirs = S.trapezoid(*args, **kwargs), J.trapezoid(*args, **kwargs)
    assert (ours.dtype, ours.shape, ours.weak_type) == (theirs.dtype, theirs.shape,
                                                         theirs.weak_type)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6, atol=1e-7)
    assert str(spec.make_jaxpr(lambda *a: S.trapezoid(*a, **kwargs))(*args)) == \
        str(jax.make_jaxpr(lambda *a: J.trapezoid(*a, **kwargs))(*args))


def test_linear_function_is_integrated_exactly() -> None:
    x = np.array([0.0, 0.5, 2.0, 3.0])
    assert float(S.trapezoid(3 * x + 1, x)) == pytest.approx(3 * 9 / 2 + 3, rel=1e-12)
