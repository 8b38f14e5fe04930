"""spec.scipy.optimize.minimize (BFGS) against jax.scipy.optimize.minimize run live: every
field of the result (iterate, value, gradient, inverse Hessian, counts, status) on a smooth
convex function that converges and on Rosenbrock's, where float32 line searches fail as they
do in JAX; the converged gradient meets gtol; and JAX's errors for bad arguments."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jjnp
import jax.scipy.optimize as J
import numpy as np
import pytest

import spec.numpy as sjnp
import spec.scipy.optimize as S
from tests.support.pair import errors_alike

_X0 = np.array([-1.2, 1.0, 0.5, -0.3], np.float32)


def _convex(jnp: Any) -> Any:
    def f(x: Any, c: Any) -> Any:
        return jnp.sum(jnp.arange(1.0, 5.0) * (x - c) ** 2) + 0.1 * jnp.sum(x ** 4)
    return f


def _rosenbrock(jnp: Any) -> Any:
    def f(x: Any) -> Any:
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return f


@pytest.mark.parametrize("problem, args, options", [
    # (float32 gradients are rounding-level near 1e-5: paths to the default gtol part there.)
    (_convex, (np.float32(0.7),), {"gtol": 1e-3}),
    (_rosenbrock, (), {"maxiter": 8, "norm": 2.0}),
])
def test_results_match_jax(problem: Any, args: tuple[Any, ...], options: dict[str, Any]) -> None:
    ours = S.minimize(problem(sjnp), _X0, args, method="BFGS", options=options)
    # (JAX's side under one jit: a single compilation instead of one per eager operation.)
    theirs = jax.jit(lambda x0, *a: J.minimize(problem(jjnp), x0, a, method="BFGS",
                                               options=options))(_X0, *args)
    assert type(ours).__name__ == "OptimizeResults" and ours._fields == theirs._fields
    for name in theirs._fields:
        a, b = np.asarray(getattr(ours, name)), np.asarray(getattr(theirs, name))
        assert (a.dtype, a.shape) == (b.dtype, b.shape), name
        if a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)
    if bool(ours.success):
        assert np.max(np.abs(np.asarray(ours.jac))) < options.get("gtol", 1e-5) * 10


@pytest.mark.parametrize("kwargs", [{"args": [1.0], "method": "BFGS"},
                                    {"args": (1.0,), "method": "Nelder-Mead"}])
def test_errors_match_jax(kwargs: dict[str, Any]) -> None:
    ours, theirs = errors_alike(lambda: S.minimize(_convex(sjnp), _X0, **kwargs),
                                lambda: J.minimize(_convex(jjnp), _X0, **kwargs))
    assert str(ours) == str(theirs)
