"""``jax.lax.linalg.qdwh``: the polar decomposition ``x = u h`` by the
QR-based dynamically weighted Halley iteration (Nakatsukasa, Bai and Gygi,
SIAM J. Matrix Anal. Appl. 31(5), 2010).

x (``[m, n]``, ``m >= n``) is scaled by ``1 / sqrt(||x||_1 ||x||_inf)`` so
that its singular values lie in (0, 1]; each step maps ``u`` to ``e u + (a -
e) u (I + c u^H u)^-1`` with weights a, b, c (``e = b / c``) chosen from a
lower bound l on the smallest singular value (starting at the dtype's eps
and updated by the same map), which the Python loop below computes ahead of
time. Steps with ``c > 100`` are computed through a QR factorisation of
``[sqrt(c) u; I]`` (stable for large c), the rest through a Cholesky
factorisation of ``I + c u^H u`` with two triangular solves; those test
convergence (``||u_k - u_{k-1}||_F > cbrt(5 eps)``), and a while loop
continues with Halley's fixed weights (3, 1, 3) until convergence or
``max_iterations`` (default 10) steps. Then one Newton-Schulz step ``u =
1.5 u - 0.5 u u^H u`` and ``h = (u^H x + (u^H x)^H) / 2``. The matmuls run at
the precision ``float32`` names (HIGHEST). With ``dynamic_shape = (m, n)``
the operand is a padded ``[M, N]`` matrix whose leading ``m x n`` block is
decomposed, the rest masked to zero (the identity in the Gram matrices).
The program is JAX's, equation for equation (one jit named ``qdwh``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.lax_index import dynamic_index_in_dim
from spec._src.core.config import default_matmul_precision
from spec._src.lax import control_flow as lax_cf
from spec._src.lax.elementwise import rsqrt
from spec._src.lax import linalg as lax_linalg
from spec._src.lax import loops as lax_loops
from spec._src.lax import shaping as lax_shaping
from spec._src.lax import slicing as lax_slicing
from spec._src.numpy import creation
from spec._src.numpy import dtypes as jdt
from spec._src.numpy import indexing as jidx
from spec._src.numpy import math as jm
from spec._src.numpy.linalg_solve import norm

Params = tuple[Any, Any, Any]
_CHOLESKY_CUTOFF = 100


def _mask(x: Any, dims: tuple[Any, ...], alternative: Any = 0) -> Any:
    """x where every index is below its dim (None: no bound), else alternative."""
    mask = None
    for i, d in enumerate(dims):
        if d is not None:
            inside = lax_shaping.broadcasted_iota(np.int32, x.shape, i) < d
            mask = inside if mask is None else mask & inside
    return x if mask is None else jidx.where(mask, x, alternative)


def _stack_rows(a: Any, b: Any, m: Any) -> Any:
    """``[a[:m]; b]`` in a's padded shape plus b's rows."""
    padded = lax_slicing.pad(a, creation.array(0, a.dtype), [(0, b.shape[0], 0), (0, 0, 0)])
    return lax_slicing.dynamic_update_slice_in_dim(padded, b, m, 0)


def _h(x: Any) -> Any:
    return x.T.conj()


def _qr_step(u: Any, m: Any, n: Any, params: Params) -> Any:
    """``e u + (a - e)/sqrt(c) q1 q2^H`` with ``[q1; q2]`` the thin Q of
    ``[sqrt(c) u; I]``."""
    a_minus_e_by_sqrt_c, sqrt_c, e = params
    rows, cols = u.shape
    y = _stack_rows(sqrt_c * u, creation.eye(cols, dtype=u.dtype), m)
    q, _ = lax_linalg.qr(y, full_matrices=False)
    q1 = _mask(lax_slicing.slice(q, (0, 0), (rows, cols)), (m, n))
    q2 = _h(_mask(lax_slicing.dynamic_slice_in_dim(q, m, cols, axis=0), (n, n)))
    return e * u + a_minus_e_by_sqrt_c * (q1 @ q2)


def _cholesky_step(u: Any, m: Any, n: Any, params: Params) -> Any:
    """``e u + (a - e) u (I + c u^H u)^-1`` through the Cholesky factor of
    ``I + c u^H u`` and two triangular solves."""
    a_minus_e, c, e = params
    cols = u.shape[1]
    gram = c * (_h(u) @ u) + creation.eye(cols, dtype=u.dtype)
    gram = _mask(gram, (n, n), creation.eye(cols, dtype=gram.dtype))
    factor = lax_linalg.cholesky(gram, symmetrize_input=False)
    z = lax_linalg.triangular_solve(factor, u.T, left_side=True, lower=True,
                                    conjugate_a=True).conj()
    z = _h(lax_linalg.triangular_solve(factor, z, left_side=True, lower=True,
                                       transpose_a=True, conjugate_a=True))
    return e * u + a_minus_e * z


def _weights(eps: float, max_iterations: int) -> tuple[list[Params], list[Params]]:
    """The dynamic weights (a, b, c), as the QR steps' and the Cholesky
    steps' parameters, until the bound l on the smallest singular value
    reaches 1 within ``5 eps``."""
    tol = 10.0 * eps / 2.0
    low = eps
    qr_params: list[Params] = []
    chol_params: list[Params] = []
    k = 0
    while low + tol < 1 and k < max_iterations:
        k += 1
        l2 = low * low
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        low = low * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > _CHOLESKY_CUTOFF:
            qr_params.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
        else:
            chol_params.append((a - e, c, e))
    return qr_params, chol_params


def _qdwh(x: Any, m: Any, n: Any, max_iterations: int, eps: float | None
          ) -> tuple[Any, Any, Any, Any]:
    if eps is None:
        finfo: Any = jdt.finfo
        eps = float(finfo(x.dtype).eps)
    one_norm = norm(x, ord=1)
    inf_norm = norm(x, ord=np.inf)
    alpha_inverse = rsqrt(one_norm) * rsqrt(inf_norm)
    alpha_inverse = jidx.where(one_norm == 0, 1, alpha_inverse)
    u = x * alpha_inverse.astype(x.dtype)
    tol_norm = jm.cbrt(10.0 * eps / 2.0)
    qr_params, chol_params = _weights(eps, max_iterations)

    def step(k: Any, state: tuple[Any, Any], update: Callable[..., Any], table: Any,
             test: bool) -> tuple[Any, Any]:
        u, _ = state
        params = ((3 - 1 / 3, 3, 1 / 3) if table is None
                  else tuple(dynamic_index_in_dim(table, k, keepdims=False)))
        previous = u
        u = update(u, m, n, params)
        not_converged: Any = True
        if test:
            not_converged = norm(u - previous) > tol_norm
        return u, not_converged

    def steps(u: Any, params: list[Params], update: Callable[..., Any], test: bool
              ) -> tuple[Any, Any]:
        if not params:
            return u, True
        table = creation.array(params).astype(x.dtype)
        body = functools.partial(step, update=update, table=table, test=test)
        out: tuple[Any, Any] = lax_loops.fori_loop(0, len(params), body, (u, True))
        return out

    u, _ = steps(u, qr_params, _qr_step, False)
    u, not_converged = steps(u, chol_params, _cholesky_step, True)

    def more(state: tuple[Any, Any, Any]) -> Any:
        k, _, not_converged = state
        return jm.logical_and(not_converged, k < max_iterations)

    def halley(state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        k, u, not_converged = state
        u, not_converged = step(k, (u, not_converged), _cholesky_step, None, True)
        return k + 1, u, not_converged

    done = len(qr_params) + len(chol_params)
    iterations, u, not_converged = lax_cf.while_loop(more, halley, (done, u, not_converged))
    u = 1.5 * u - 0.5 * u @ (_h(u) @ u)
    h = _h(u) @ x
    h = (h + _h(h)) / 2
    return u, h, iterations, jm.logical_not(not_converged)


@functools.partial(jit, static_argnames=("is_hermitian", "max_iterations", "eps"))
def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None
         ) -> tuple[Any, Any, Any, Any]:
    """``(u, h, num_iters, is_converged)`` with ``x = u h`` (see the module
    docstring); is_hermitian is unused."""
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    rows, cols = x.shape
    if rows < cols:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _mask(x, (m, n))
    else:
        m, n = rows, cols
    with default_matmul_precision("float32"):
        return _qdwh(x, m, n, max_iterations, eps)
