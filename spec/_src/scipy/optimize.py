"""``jax.scipy.optimize.minimize`` with ``method='BFGS'``, as JAX computes it: BFGS updates of
the inverse Hessian, each step's length from a line search satisfying the strong Wolfe
conditions (bracketing, then zooming by cubic, quadratic or bisection interpolation), all in
``lax.while_loop`` so the whole minimisation stages into one program.

Results mirror JAX's ``OptimizeResults``; ``status`` is 0 (converged), 1 (``maxiter`` reached),
2 + the line search's status (it failed) or -1."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from spec._src.api.autodiff import value_and_grad
from spec._src.lax import control_flow as lax_cf
from spec._src.lax.dot import Precision
from spec._src.numpy import creation
from spec._src.numpy import reductions as jnp_red
from spec._src.numpy.linalg import dot, einsum
from spec._src.numpy.math import (_promote_dtypes_inexact, abs, conjugate, isfinite,
                                  logical_not, maximum, minimum, real, reciprocal, sign, sqrt)
from spec._src.core import types as T
from spec._src.scipy import numpy_names as jnp

_dot = functools.partial(dot, precision=Precision.HIGHEST)
_einsum = functools.partial(einsum, precision=Precision.HIGHEST)


class OptimizeResults(NamedTuple):
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _bits(dtype: Any) -> int:
    return int(np.dtype(dtype).itemsize * 8)


def _norm(x: Any, ord: Any = None) -> Any:
    """The vector norms BFGS uses: the largest magnitude (``inf``) or the 2-norm."""
    if ord == np.inf:
        return jnp_red.max(abs(x))
    return sqrt(jnp_red.sum(real(x * conjugate(x))))


# ------------------------------------------------------------------- line search

def _cubicmin(a: Any, fa: Any, fpa: Any, b: Any, fb: Any, c: Any, fc: Any) -> Any:
    """The minimiser of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc)."""
    dtype = T.result_type(a, fa, fpa, b, fb, c, fc)
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = creation.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
    d2 = creation.array([fb - fa - fpa * db, fc - fa - fpa * dc], dtype=dtype)
    A, B = _dot(d1, d2) / denom
    radical = B * B - 3.0 * A * fpa
    return a + (-B + sqrt(radical)) / (3.0 * A)


def _quadmin(a: Any, fa: Any, fpa: Any, b: Any, fb: Any) -> Any:
    """The minimiser of the quadratic through (a, fa) with slope fpa at a, and (b, fb)."""
    db = b - a
    B = (fb - fa - fpa * db) / db ** 2
    return a - fpa / (2.0 * B)


def _replace_where(bit: Any, original: dict[str, Any], new: dict[str, Any],
                   keys: Any = None) -> dict[str, Any]:
    return {k: jnp.where(bit, new[k], original[k]) for k in (new.keys() if keys is None else keys)}


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _zoom(phi_and_grad: Callable[[Any], Any], wolfe_one: Callable[..., Any],
          wolfe_two: Callable[..., Any], a_lo: Any, phi_lo: Any, dphi_lo: Any, a_hi: Any,
          phi_hi: Any, dphi_hi: Any, g_0: Any, pass_through: Any) -> _ZoomState:
    """Shrink the bracket [a_lo, a_hi] until a step meets both Wolfe conditions."""
    state = _ZoomState(done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo,
                       a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.0,
                       phi_rec=(phi_lo + phi_hi) / 2.0, a_star=1.0, phi_star=phi_lo,
                       dphi_star=dphi_lo, g_star=g_0, nfev=0, ngev=0)
    delta1, delta2 = 0.2, 0.1

    def body(state: _ZoomState) -> _ZoomState:
        dalpha = state.a_hi - state.a_lo
        a = minimum(state.a_hi, state.a_lo)
        b = maximum(state.a_hi, state.a_lo)
        cchk, qchk = delta1 * dalpha, delta2 * dalpha
        threshold = jnp.where(_bits(dalpha.dtype) < 64, 1e-5, 1e-10)
        state = state._replace(failed=state.failed | (dalpha <= threshold))
        a_cubic = _cubicmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi,
                            state.a_rec, state.phi_rec)
        use_cubic = (state.j > 0) & (a_cubic > a + cchk) & (a_cubic < b - cchk)
        a_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
        use_quad = ~use_cubic & (a_quad > a + qchk) & (a_quad < b - qchk)
        a_bisect = (state.a_lo + state.a_hi) / 2.0
        use_bisect = ~use_cubic & ~use_quad
        a_j = jnp.where(use_cubic, a_cubic, state.a_rec)
        a_j = jnp.where(use_quad, a_quad, a_j)
        a_j = jnp.where(use_bisect, a_bisect, a_j)
        phi_j, dphi_j, g_j = phi_and_grad(a_j)
        phi_j = phi_j.astype(state.phi_lo.dtype)
        dphi_j = dphi_j.astype(state.dphi_lo.dtype)
        g_j = g_j.astype(state.g_star.dtype)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= state.phi_lo)
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j
        state = state._replace(**_replace_where(hi_to_j, state._asdict(), dict(
            a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=state.a_hi, phi_rec=state.phi_hi)))
        state = state._replace(done=star_to_j | state.done, **_replace_where(
            star_to_j, state._asdict(),
            dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)))
        state = state._replace(**_replace_where(hi_to_lo, state._asdict(), dict(
            a_hi=state.a_lo, phi_hi=state.phi_lo, dphi_hi=state.dphi_lo, a_rec=state.a_hi,
            phi_rec=state.phi_hi)))
        state = state._replace(**_replace_where(lo_to_j & ~hi_to_lo, state._asdict(), dict(
            a_rec=state.a_lo, phi_rec=state.phi_lo)))
        state = state._replace(**_replace_where(lo_to_j, state._asdict(), dict(
            a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)))
        state = state._replace(j=state.j + 1)
        return state._replace(failed=state.failed | (state.j >= 30))

    result: _ZoomState = lax_cf.while_loop(
        lambda s: ~s.done & ~pass_through & ~s.failed, body, state)
    return result


class _LineSearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


class _LineSearchResults(NamedTuple):
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def _line_search(f: Callable[[Any], Any], xk: Any, pk: Any, old_fval: Any, old_old_fval: Any,
                 gfk: Any, c1: float = 1e-4, c2: float = 0.9,
                 maxiter: int = 20) -> _LineSearchResults:
    """A step length along pk from xk meeting the strong Wolfe conditions."""
    xk, pk = _promote_dtypes_inexact(xk, pk)

    def phi_and_grad(t: Any) -> tuple[Any, Any, Any]:
        t = creation.array(t, dtype=pk.dtype)
        phi, g = value_and_grad(f)(xk + t * pk)
        return phi, real(_dot(g, pk)), g

    phi_0, dphi_0 = old_fval, real(_dot(gfk, pk))
    candidate_start = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
    start_value = jnp.where(candidate_start > 1, 1.0, candidate_start)

    def wolfe_one(a_i: Any, phi_i: Any) -> Any:  # sufficient decrease
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i: Any) -> Any:  # curvature
        return abs(dphi_i) <= -c2 * dphi_0

    state = _LineSearchState(done=creation.array(False, dtype=bool),
                             failed=creation.array(False, dtype=bool), i=1, a_i1=0.0,
                             phi_i1=phi_0, dphi_i1=dphi_0, nfev=0, ngev=0, a_star=0.0,
                             phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)
    star_keys = ["a_star", "phi_star", "dphi_star", "g_star"]

    def body(state: _LineSearchState) -> _LineSearchState:
        a_i = jnp.where(state.i == 1, start_value, state.a_i1 * 2.0)
        phi_i, dphi_i, g_i = phi_and_grad(a_i)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
        star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
        star_to_i = wolfe_two(dphi_i) & ~star_to_zoom1
        star_to_zoom2 = (dphi_i >= 0.0) & ~star_to_zoom1 & ~star_to_i
        zoom1 = _zoom(phi_and_grad, wolfe_one, wolfe_two, state.a_i1, state.phi_i1,
                      state.dphi_i1, a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
        state = state._replace(nfev=state.nfev + zoom1.nfev, ngev=state.ngev + zoom1.ngev)
        zoom2 = _zoom(phi_and_grad, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, state.a_i1,
                      state.phi_i1, state.dphi_i1, gfk, ~star_to_zoom2)
        state = state._replace(nfev=state.nfev + zoom2.nfev, ngev=state.ngev + zoom2.ngev)
        state = state._replace(
            done=star_to_zoom1 | state.done, failed=(star_to_zoom1 & zoom1.failed) | state.failed,
            **_replace_where(star_to_zoom1, state._asdict(), zoom1._asdict(), keys=star_keys))
        state = state._replace(done=star_to_i | state.done, **_replace_where(
            star_to_i, state._asdict(),
            dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)))
        state = state._replace(
            done=star_to_zoom2 | state.done, failed=(star_to_zoom2 & zoom2.failed) | state.failed,
            **_replace_where(star_to_zoom2, state._asdict(), zoom2._asdict(), keys=star_keys))
        return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax_cf.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = jnp.where(state.failed, creation.array(1),
                       jnp.where(state.i > maxiter, creation.array(3), creation.array(0)))
    alpha_k = creation.asarray(state.a_star)
    # Below float64, a tiny step is raised to 1e-8 so that the iterate still moves.
    alpha_k = jnp.where((_bits(alpha_k.dtype) != 64) & (abs(alpha_k) < 1e-8),
                        sign(alpha_k) * 1e-8, alpha_k)
    return _LineSearchResults(failed=state.failed | ~state.done, nit=state.i - 1,
                              nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=alpha_k,
                              f_k=state.phi_star, g_k=state.g_star, status=status)


# ------------------------------------------------------------------------ BFGS

class _BFGSResults(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    nhev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _minimize_bfgs(fun: Callable[[Any], Any], x0: Any, maxiter: int | None = None,
                   norm: Any = np.inf, gtol: float = 1e-5,
                   line_search_maxiter: int = 10) -> _BFGSResults:
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _BFGSResults(converged=_norm(g_0, ord=norm) < gtol, failed=False, k=0, nfev=1,
                         ngev=1, nhev=0, x_k=x0, f_k=f_0, g_k=g_0,
                         H_k=creation.eye(d, dtype=x0.dtype),
                         old_old_fval=f_0 + _norm(g_0) / 2, status=0, line_search_status=0)

    def cond(state: _BFGSResults) -> Any:
        return (logical_not(state.converged) & logical_not(state.failed)
                & (state.k < maxiter))

    def body(state: _BFGSResults) -> _BFGSResults:
        p_k = -_dot(state.H_k, state.g_k)
        step = _line_search(fun, state.x_k, p_k, old_fval=state.f_k,
                            old_old_fval=state.old_old_fval, gfk=state.g_k,
                            maxiter=line_search_maxiter)
        state = state._replace(nfev=state.nfev + step.nfev, ngev=state.ngev + step.ngev,
                               failed=step.failed, line_search_status=step.status)
        s_k = step.a_k * p_k
        y_k = step.g_k - state.g_k
        rho_k = reciprocal(_dot(y_k, s_k))
        sy_k = s_k[:, np.newaxis] * y_k[np.newaxis, :]
        w = creation.eye(d, dtype=rho_k.dtype) - rho_k * sy_k
        # H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T, kept when rho is not finite.
        h_next = (_einsum("ij,jk,lk", w, state.H_k, w)
                  + rho_k * s_k[:, np.newaxis] * s_k[np.newaxis, :])
        h_next = jnp.where(isfinite(rho_k), h_next, state.H_k)
        return state._replace(converged=_norm(step.g_k, ord=norm) < gtol, k=state.k + 1,
                              x_k=state.x_k + s_k, f_k=step.f_k, g_k=step.g_k, H_k=h_next,
                              old_old_fval=state.f_k)

    final: _BFGSResults = lax_cf.while_loop(cond, body, state)
    status = jnp.where(final.converged, 0, jnp.where(
        final.k == maxiter, 1, jnp.where(final.failed, 2 + final.line_search_status, -1)))
    return final._replace(status=status)


def minimize(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (), *, method: str,
             tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimise ``fun(x, *args)`` from ``x0`` (1-D) by ``method='BFGS'``; ``options`` go to
    BFGS (maxiter, norm, gtol, line_search_maxiter); ``tol`` is ignored, as in JAX."""
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError(
            f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")

    def fun_with_args(x: Any) -> Any:
        return fun(x, *args)

    if method.lower() == "bfgs":
        r = _minimize_bfgs(fun_with_args, x0, **options)
        return OptimizeResults(x=r.x_k, success=r.converged & logical_not(r.failed),
                               status=r.status, fun=r.f_k, jac=r.g_k, hess_inv=r.H_k,
                               nfev=r.nfev, njev=r.ngev, nit=r.k)
    raise ValueError(f"Method {method} not recognized")


__all__ = ["OptimizeResults", "minimize"]
