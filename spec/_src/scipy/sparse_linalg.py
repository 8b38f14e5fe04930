"""``jax.scipy.sparse.linalg``: the Krylov solvers ``cg``, ``bicgstab`` and ``gmres``, as JAX
stages them.

Each solver takes ``A`` (and the preconditioner ``M``) as a square matrix, an object with
``@`` or a function computing ``A @ x``; ``b`` may be any pytree of arrays, and every vector
the iteration carries has ``b``'s structure. The iteration runs in ``lax.while_loop`` and the
whole solve is wrapped in ``lax.custom_linear_solve`` with the same solver for the transpose,
so derivatives are themselves solves (implicit differentiation), never a trace through the
iterations. ``cg`` marks the system symmetric when every leaf of ``b`` is real.

Convergence is ``norm(r) <= max(tol * norm(b), atol)`` (SciPy's non-legacy rule). ``cg`` and
``bicgstab`` return ``info=None``; ``gmres`` returns ``info`` -1 when the solution has a NaN,
else 0."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.api.placement import device_put
from spec._src.core import types as T
from spec._src.core.basearray import Array
from spec._src.core.dtypes import finfo as _untyped_finfo
from spec._src.core.tree_util import Partial, tree_leaves, tree_map, tree_reduce, tree_structure
from spec._src.lax import control_flow as lax_cf
from spec._src.lax import elementwise as lax_ew
from spec._src.lax import loops as lax_loops
from spec._src.lax.dot import Precision
from spec._src.lax.linear_solve import custom_linear_solve
from spec._src.lax.shaping import _convert_element_type
from spec._src.numpy import creation
from spec._src.numpy import math as jm
from spec._src.numpy.dtypes import iscomplexobj
from spec._src.numpy.indexing import where
from spec._src.numpy.linalg import dot, einsum, vdot
from spec._src.numpy.padding import pad
from spec._src.scipy.linalg import solve, solve_triangular

_dot = functools.partial(dot, precision=Precision.HIGHEST)
_vdot = functools.partial(vdot, precision=Precision.HIGHEST)
_einsum = functools.partial(einsum, precision=Precision.HIGHEST)

LinearMap = Callable[[Any], Any]
_finfo: Any = _untyped_finfo


# ------------------------------------------------------------------ pytree vector algebra

def _real_inner(x: Any, y: Any) -> Any:
    """Re<x, y> = <Re x, Re y> + <Im x, Im y>, always of a real dtype: the products z^H M z
    the solvers take are real for Hermitian M, and a real scalar keeps the carries real."""
    out = _vdot(x.real, y.real)
    if iscomplexobj(x) or iscomplexobj(y):
        out += _vdot(x.imag, y.imag)
    return out


def _tree_real_inner(x: Any, y: Any) -> Any:
    # Python's sum (starting from 0) is what JAX adds the leaves with: a leading "add 0.0".
    return sum(tree_leaves(tree_map(_real_inner, x, y)))


def _tree_inner(x: Any, y: Any) -> Any:
    """<x, y> = sum of conj(x) * y over every leaf."""
    return sum(tree_leaves(tree_map(_vdot, x, y)))


def _tree_norm(x: Any) -> Any:
    leaves = tree_leaves(x)
    return jm.sqrt(sum(_real_inner(leaf, leaf) for leaf in leaves))


def _scale(scalar: Any, tree: Any) -> Any:
    return tree_map(lambda leaf: scalar * leaf, tree)


def _plus(x: Any, y: Any) -> Any:
    return tree_map(operator.add, x, y)


def _minus(x: Any, y: Any) -> Any:
    return tree_map(operator.sub, x, y)


def _leaf_shapes(tree: Any) -> list[tuple[int, ...]]:
    return [np.shape(leaf) for leaf in tree_leaves(tree)]


def _tree_dtype_and_weak(tree: Any) -> tuple[T.DType, bool]:
    out: tuple[T.DType, bool] = T.result_type_and_weak(*tree_leaves(tree))
    return out


@Partial
def _identity(x: Any) -> Any:
    return x


def _check_square(matrix: Any) -> None:
    shape = matrix.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"linear operator must be a square matrix, but has shape: {shape}")


def _as_linear_map(f: Any) -> LinearMap:
    """``A`` (or ``M``) as a function computing ``A @ x``."""
    if callable(f):
        return f  # type: ignore[no-any-return]
    if isinstance(f, (np.ndarray, Array)):
        _check_square(f)
        return functools.partial(_dot, f)
    if hasattr(f, "__matmul__"):
        # An object without ``shape`` fails here with AttributeError, as in JAX.
        _check_square(f)
        return functools.partial(operator.matmul, f)
    raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _check_same_structure(x0: Any, b: Any) -> None:
    if tree_structure(x0) != tree_structure(b):
        raise ValueError("x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")


def _squared_tolerance(b: Any, tol: Any, atol: Any) -> Any:
    """max(tol * |b|, atol) squared, compared against squared residual norms."""
    b_norm2 = _tree_real_inner(b, b)
    return jm.maximum(jm.square(tol) * b_norm2, jm.square(atol))


# ------------------------------------------------------------------------- CG, BiCGSTAB

# The loops' carries are named ``value`` and ``carry`` as JAX's are: while_loop's type errors
# name the carry by its parameter.

def _cg_iterate(A: LinearMap, b: Any, x0: Any, *, maxiter: int, tol: Any = 1e-5,
                atol: Any = 0.0, M: LinearMap = _identity) -> Any:
    """Preconditioned conjugate gradients from x0."""
    bound = _squared_tolerance(b, tol, atol)
    r0 = _minus(b, A(x0))
    z0 = M(r0)
    dtype = T.result_type(*tree_leaves(z0))

    def keep_going(value: tuple[Any, ...]) -> Any:
        _, r, gamma, _, k = value
        # Unpreconditioned, gamma = <r, r> already.
        residual2 = gamma.real if M is _identity else _tree_real_inner(r, r)
        return (residual2 > bound) & (k < maxiter)

    def step(value: tuple[Any, ...]) -> tuple[Any, ...]:
        x, r, gamma, p, k = value
        Ap = A(p)
        alpha = gamma / _tree_real_inner(p, Ap).astype(dtype)
        x = _plus(x, _scale(alpha, p))
        r = _minus(r, _scale(alpha, Ap))
        z = M(r)
        gamma_next = _tree_real_inner(r, z).astype(dtype)
        p = _plus(z, _scale(gamma_next / gamma, p))
        return x, r, gamma_next, p, k + 1

    gamma0 = _tree_real_inner(r0, z0).astype(dtype)
    solution, *_ = lax_cf.while_loop(keep_going, step, (x0, r0, gamma0, z0, 0))
    return solution


# BiCGSTAB's breakdown codes, carried in the iteration counter: rho = 0, then omega or
# alpha = 0; a negative counter stops the loop.
_RHO_BREAKDOWN = -10
_OMEGA_ALPHA_BREAKDOWN = -11


def _bicgstab_iterate(A: LinearMap, b: Any, x0: Any, *, maxiter: int,
                      tol: Any = 1e-5, atol: Any = 0.0,
                      M: LinearMap = _identity) -> Any:
    """Preconditioned biconjugate gradients, stabilised, from x0."""
    bound = _squared_tolerance(b, tol, atol)

    def keep_going(value: tuple[Any, ...]) -> Any:
        r, k = value[1], value[-1]
        return (_tree_real_inner(r, r) > bound) & (k < maxiter) & (k >= 0)

    def step(value: tuple[Any, ...]) -> tuple[Any, ...]:
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_next = _tree_inner(rhat, r)
        beta = rho_next / rho * alpha / omega
        p = _plus(r, _scale(beta, _minus(p, _scale(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = rho_next / _tree_inner(rhat, q)
        s = _minus(r, _scale(alpha, q))
        # When the half step already meets the tolerance, the second half is skipped.
        half_step_done = _tree_real_inner(s, s) < bound
        shat = M(s)
        t = A(shat)
        omega = _tree_inner(t, s) / _tree_inner(t, t)
        choose = functools.partial(where, half_step_done)
        x = tree_map(choose, _plus(x, _scale(alpha, phat)),
                     _plus(x, _plus(_scale(alpha, phat), _scale(omega, shat))))
        r = tree_map(choose, s, _minus(s, _scale(omega, t)))
        k = where((omega == 0) | (alpha == 0), _OMEGA_ALPHA_BREAKDOWN, k + 1)
        k = where(rho_next == 0, _RHO_BREAKDOWN, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    r0 = _minus(b, A(x0))
    one = _convert_element_type(1, *_tree_dtype_and_weak(b))
    solution, *_ = lax_cf.while_loop(keep_going, step, (x0, r0, r0, one, one, one, r0, r0, 0))
    return solution


def _solve_with(iterate: Callable[..., Any], A: Any, b: Any, x0: Any, *,
                tol: Any, atol: Any, maxiter: int | None, M: Any,
                symmetric_if_real: bool) -> tuple[Any, None]:
    """The part cg and bicgstab share: defaults, argument checks, custom_linear_solve."""
    if x0 is None:
        x0 = tree_map(creation.zeros_like, b)
    b, x0 = device_put((b, x0), None)
    if maxiter is None:
        maxiter = 10 * sum(leaf.size for leaf in tree_leaves(b))  # SciPy's default
    A = _as_linear_map(A)
    M = _as_linear_map(_identity if M is None else M)
    _check_same_structure(x0, b)
    if _leaf_shapes(x0) != _leaf_shapes(b):
        raise ValueError("arrays in x0 and b must have matching shapes: "
                         f"{_leaf_shapes(x0)} vs {_leaf_shapes(b)}")
    run = functools.partial(iterate, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # A real positive-definite operator is symmetric; a complex one is only Hermitian.
    symmetric = symmetric_if_real and not any(
        T.is_complex(leaf.dtype) for leaf in tree_leaves(b))
    x = custom_linear_solve(A, b, solve=run, transpose_solve=run, symmetric=symmetric)
    return x, None


def cg(A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solve ``A x = b`` for Hermitian positive-definite ``A`` by conjugate gradients.

    Returns ``(x, None)``; ``x`` has ``b``'s structure. ``maxiter`` defaults to ten times the
    size of ``b``; ``M`` approximates the inverse of ``A``."""
    return _solve_with(_cg_iterate, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                       symmetric_if_real=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0,
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solve ``A x = b`` for a general square ``A`` by BiCGSTAB. Returns ``(x, None)``."""
    return _solve_with(_bicgstab_iterate, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                       symmetric_if_real=False)


# ---------------------------------------------------------------------------------- GMRES

def _normalize(x: Any, thresh: Any = None) -> tuple[Any, Any]:
    """x / |x| and |x|; both zero when |x| is at most ``thresh`` (default: the dtype's eps)."""
    norm = _tree_norm(x)
    dtype, weak = _tree_dtype_and_weak(x)
    if thresh is None:
        thresh = _finfo(norm.dtype).eps
    thresh = thresh.astype(dtype).real
    nonzero = norm > thresh
    divisor = _convert_element_type(norm, dtype, weak)
    unit = tree_map(lambda leaf: where(nonzero, leaf / divisor, 0.0), x)
    return unit, where(nonzero, norm, 0.0)


def _overlaps(Q: Any, v: Any) -> Any:
    """Q^H v, the columns of Q being the last axis of its leaves."""
    per_leaf = tree_map(lambda X, y: _einsum("...n,...->n", X.conj(), y), Q, v)
    return tree_reduce(operator.add, per_leaf)


def _orthogonalize(Q: Any, x: Any, xnorm: Any, max_iterations: int = 2) -> tuple[Any, Any]:
    """x minus its projection on the orthonormal columns of Q, and the overlaps removed.

    Classical Gram-Schmidt, at most ``max_iterations`` passes ("twice is enough"); another
    pass runs while the norm of the overlaps so far is below 1/sqrt(2) of the projected
    vector's norm (JAX's test)."""
    first = tree_leaves(Q)[0]
    overlaps = creation.zeros(first.shape[-1], dtype=first.dtype)
    scaled_norm = xnorm / jm.sqrt(2.0)

    def project_out(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        k, q, r, scaled = carry
        h = _overlaps(Q, q)
        q = _minus(q, tree_map(lambda X: _dot(X, h), Q))
        r = _plus(r, h)

        def renorm_pending(carry: tuple[Any, ...]) -> Any:
            k_, pending, _, _ = carry
            return jm.logical_and(pending, k_ < (max_iterations - 1))

        def renorm(carry: tuple[Any, ...]) -> tuple[Any, ...]:
            k_, _, q_, _ = carry
            _, qnorm = _normalize(q_)
            return k_, False, q_, qnorm / jm.sqrt(2.0)

        _, _, q, scaled = lax_cf.while_loop(renorm_pending, renorm, (k, True, q, scaled))
        return k + 1, q, r, scaled

    def again(carry: tuple[Any, ...]) -> Any:
        k, _, r, scaled = carry
        _, rnorm = _normalize(r)
        return jm.logical_and(k < (max_iterations - 1), rnorm < scaled)

    carry = project_out((0, x, overlaps, scaled_norm))
    _, q, r, _ = lax_cf.while_loop(again, project_out, carry)
    return q, r


def _arnoldi_step(k: Any, A: LinearMap, M: LinearMap, V: Any,
                  H: Any) -> tuple[Any, Any, Any]:
    """Column k+1 of V (M A V[:, k] made orthonormal to V) and row k of H (its overlaps);
    the new column is zero, and breakdown true, once the Krylov space is invariant."""
    dtype, _ = _tree_dtype_and_weak(V)
    eps = _finfo(dtype).eps
    v = M(A(tree_map(lambda X: X[..., k], V)))
    _, norm_before = _normalize(v)
    v, h = _orthogonalize(V, v, norm_before, max_iterations=2)
    unit, norm_after = _normalize(v, thresh=eps * norm_before)
    V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit)
    h = h.at[k + 1].set(norm_after.astype(dtype))
    H = H.at[k, :].set(h)
    return V, H, norm_after == 0.0


def _rotate(H: Any, i: Any, cs: Any, sn: Any) -> Any:
    """The Givens rotation (cs, sn) applied to entries i and i+1 of H."""
    x, y = H[i], H[i + 1]
    x_rotated = cs.conj() * x - sn.conj() * y
    y_rotated = sn * x + cs * y
    return H.at[i].set(x_rotated).at[i + 1].set(y_rotated)


def _givens(a: Any, b: Any) -> tuple[Any, Any]:
    """(cs, sn) of the rotation that zeroes b against a."""
    b_is_zero = abs(b) == 0
    a_smaller = abs(a) < abs(b)
    t = -where(a_smaller, a, b) / where(a_smaller, b, a)
    r = lax_ew.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    cs = where(b_is_zero, 1, where(a_smaller, r * t, r))
    sn = where(b_is_zero, 0, where(a_smaller, r, r * t))
    return cs, sn


def _triangularize_row(H_row: Any, givens: Any, k: Any) -> tuple[Any, Any]:
    """Row k of H through the k rotations so far, then a new rotation zeroing its entry k+1."""
    # (The loop's argument names are JAX's, which its errors would name.)
    rotated = lax_loops.fori_loop(0, k, lambda i, H_row: _rotate(H_row, i, *givens[i, :]),
                                  H_row)
    new = _givens(rotated[k], rotated[k + 1])
    givens = givens.at[k, :].set(new)
    return _rotate(rotated, k, *new), givens


def _krylov_basis(unit_residual: Any, restart: int) -> Any:
    """The residual direction as column 0 of ``restart + 1`` columns, the rest zero."""
    return tree_map(lambda x: pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                    unit_residual)


def _gmres_incremental(A: LinearMap, b: Any, x0: Any, unit_residual: Any,
                       residual_norm: Any, ptol: Any, restart: int,
                       M: LinearMap) -> tuple[Any, Any, Any]:
    """One GMRES cycle that keeps H's QR factors up to date by Givens rotations, so the
    residual norm is known at every Arnoldi step and the cycle stops once below ptol."""
    V = _krylov_basis(unit_residual, restart)
    dtype = T.result_type(*tree_leaves(b))
    # Rows not reached stay those of the identity, keeping R invertible on an early stop.
    R = creation.eye(restart, restart + 1, dtype=dtype)
    givens = creation.zeros((restart, 2), dtype=dtype)
    beta = creation.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def keep_going(carry: tuple[Any, ...]) -> Any:
        k, err = carry[0], carry[1]
        return jm.logical_and(k < restart, err > ptol)

    def step(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        k, _, V, R, beta, givens = carry
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row, givens = _triangularize_row(H[k, :], givens, k)
        R = R.at[k, :].set(row)
        beta = _rotate(beta, k, *givens[k, :])
        err = abs(beta[k + 1])
        return k + 1, err, V, R, beta, givens

    _, _, V, R, beta, _ = lax_cf.while_loop(
        keep_going, step, (0, residual_norm, V, R, beta, givens))
    y = solve_triangular(R[:, :-1].T, beta[:-1])
    x = _plus(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    unit, norm = _normalize(M(_minus(b, A(x))))
    return x, unit, norm


def _normal_equations_solve(a: Any, b: Any) -> Any:
    """The least-squares solution of a y = b through a^H a y = a^H b (positive definite)."""
    return solve(_dot(a.T.conj(), a), _dot(a.T.conj(), b), assume_a="pos")


def _gmres_batched(A: LinearMap, b: Any, x0: Any, unit_residual: Any,
                   residual_norm: Any, ptol: Any, restart: int,
                   M: LinearMap) -> tuple[Any, Any, Any]:
    """One GMRES cycle that builds the whole Krylov basis (stopping only on breakdown), then
    solves the small least-squares problem once."""
    del ptol  # the cycle never stops early on the residual
    V = _krylov_basis(unit_residual, restart)
    dtype, weak = _tree_dtype_and_weak(b)
    H = _convert_element_type(creation.eye(restart, restart + 1, dtype=dtype),
                              weak_type=weak)

    def keep_going(carry: tuple[Any, ...]) -> Any:
        _, _, breakdown, k = carry
        return jm.logical_and(k < restart, jm.logical_not(breakdown))

    def step(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        V, H, _, k = carry
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax_cf.while_loop(keep_going, step, (V, H, False, 0))
    beta = creation.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
    y = _normal_equations_solve(H.T, beta)
    x = _plus(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    unit, norm = _normalize(M(_minus(b, A(x))))
    return x, unit, norm


_GMRES_CYCLES: dict[str, Callable[..., tuple[Any, Any, Any]]] = {
    "incremental": _gmres_incremental,
    "batched": _gmres_batched,
}


def _gmres_iterate(A: LinearMap, b: Any, x0: Any, atol: Any, ptol: Any,
                   restart: int, maxiter: int, M: LinearMap,
                   cycle: Callable[..., tuple[Any, Any, Any]]) -> Any:
    """Restarted GMRES: up to ``maxiter`` cycles, each from the last one's solution, while
    the preconditioned residual norm exceeds ``atol`` (``ptol`` bounds it within a cycle)."""
    unit, norm = _normalize(M(_minus(b, A(x0))))

    def keep_going(value: tuple[Any, ...]) -> Any:
        _, k, _, residual_norm = value
        return jm.logical_and(k < maxiter, residual_norm > atol)

    def restart_cycle(value: tuple[Any, ...]) -> tuple[Any, ...]:
        x, k, unit_residual, residual_norm = value
        x, unit_residual, residual_norm = cycle(A, b, x, unit_residual, residual_norm, ptol,
                                                restart, M)
        return x, k + 1, unit_residual, residual_norm

    solution, *_ = lax_cf.while_loop(keep_going, restart_cycle, (x0, 0, unit, norm))
    return solution


def gmres(A: Any, b: Any, x0: Any = None, *, tol: Any = 1e-5, atol: Any = 0.0,
          restart: int = 20, maxiter: int | None = None, M: Any = None,
          solve_method: str = "batched") -> tuple[Any, Any]:
    """Solve ``A x = b`` for a general square ``A`` by restarted GMRES.

    ``restart`` is the Krylov dimension of a cycle (at most the size of ``b``), ``maxiter``
    the number of cycles (default ten times the size of ``b``). ``solve_method`` 'incremental'
    updates a QR factorization by Givens rotations and may end a cycle early; 'batched' solves
    each cycle's least-squares problem at its end. Returns ``(x, info)``, ``info`` -1 when
    ``x`` has a NaN, else 0."""
    if x0 is None:
        x0 = tree_map(creation.zeros_like, b)
    A = _as_linear_map(A)
    M = _as_linear_map(_identity if M is None else M)
    b, x0 = device_put((b, x0), None)
    size = sum(leaf.size for leaf in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    restart = min(restart, size)
    _check_same_structure(x0, b)
    b_norm = _tree_norm(b)
    atol = jm.maximum(tol * b_norm, atol)
    # Within a cycle the residual is the preconditioned one, its bound scaled to match.
    ptol = _tree_norm(M(b)) * jm.minimum(1.0, atol / b_norm)
    cycle = _GMRES_CYCLES.get(solve_method) if isinstance(solve_method, str) else None
    if cycle is None:
        raise ValueError(f"invalid solve_method {solve_method}, must be either "
                         "'incremental' or 'batched'")

    def run(A: LinearMap, b: Any) -> Any:
        return _gmres_iterate(A, b, x0, atol, ptol, restart, maxiter, M, cycle)

    x = custom_linear_solve(A, b, solve=run, transpose_solve=run)
    info = where(jm.isnan(_tree_norm(x)), -1, 0)
    return x, info


__all__ = ["bicgstab", "cg", "gmres"]
