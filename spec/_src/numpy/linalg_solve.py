"""The LU-based and derived parts of ``jnp.linalg``: ``solve`` (a
``custom_linear_solve`` over one LU factorisation, as JAX builds it),
``inv``, ``det`` and ``slogdet`` (custom JVPs), ``matrix_power``,
``matrix_rank``, ``pinv`` (custom JVP), ``lstsq``, ``norm`` and its
matrix/vector forms, ``cond``, ``multi_dot``, ``tensorinv``,
``tensorsolve``, and the array-API aliases ``trace``, ``matrix_transpose``,
``vecdot``, ``cross``, and ``eig`` / ``eigvals``. ``lu_solve`` is the triangular solves after an LU
(``jax.lax.linalg``'s helper, used by ``jax.scipy.linalg`` too).

The functions join the ``spec.numpy.linalg`` module object when this module
is imported (``spec.numpy`` imports it)."""

from __future__ import annotations

import functools
import math as pymath
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from spec._src.api.custom_derivatives import custom_jvp
from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import linalg_eig as lax_eig
from spec._src.lax import linalg_lu as lax_lu
from spec._src.lax import shaping as L
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax.dot import Precision, dot_general
from spec._src.lax.linalg import triangular_solve
from spec._src.lax.linear_solve import custom_linear_solve
from spec._src.lax.reductions import sort_key_val
from spec._src.numpy import creation
from spec._src.numpy import indexing as jnp_indexing
from spec._src.numpy import math as jm
from spec._src.numpy import reductions as jr
from spec._src.numpy import shape as js
from spec._src.numpy.linalg import (
    _inexact,
    _linalg_svd,
    cross,
    linalg,
    matmul,
    vecdot,
)
from spec._src.numpy.util import check_arraylike
from spec._src.numpy.vectorize import vectorize


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(canonical_aval_of(x).shape)


def _dtype(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype


def _eps(dtype: T.DType) -> float:
    """Machine epsilon of an inexact dtype (of its real part when complex)."""
    return float(np.finfo(np.dtype(dtype)).eps)


def _mT(x: Any) -> Any:  # noqa: N802
    return js.swapaxes(x, -1, -2)


def _H(x: Any) -> Any:  # noqa: N802
    return jm.conj(_mT(x))


# ----------------------------------------------------------------- lu_solve

def _lu_solve_core(lu: Any, permutation: Any, b: Any, trans: int) -> Any:
    """One matrix: permute, then the unit-lower and upper solves (or, for
    ``trans`` 1 / 2, the transposed / adjoint solves, then the inverse
    permutation)."""
    m = _shape(lu)[0]
    x = L.reshape(b, (m, pymath.prod(_shape(b)[1:])))
    if trans == 0:
        x = x[permutation, :]
        x = triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        x = triangular_solve(lu, x, left_side=True, lower=False)
    elif trans in (1, 2):
        conj = trans == 2
        x = triangular_solve(lu, x, left_side=True, lower=False, transpose_a=True,
                             conjugate_a=conj)
        x = triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True,
                             transpose_a=True, conjugate_a=conj)
        _, ind = sort_key_val(permutation, L.iota(np.int32, _shape(permutation)[0]))
        x = x[ind, :]
    else:
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    return L.reshape(x, _shape(b))


def _lu_solve_fn(lu: Any, permutation: Any, b: Any, trans: int) -> Any:
    ls, bs = _shape(lu), _shape(b)
    if len(ls) < 2 or ls[-1] != ls[-2]:
        raise ValueError(f"last two dimensions of LU decomposition must be equal, got shape "
                         f"{ls}")
    if len(bs) < 1:
        raise ValueError(f"b matrix must have rank >= 1, got shape {bs}")
    rhs_vector = len(ls) == len(bs) + 1
    if rhs_vector:
        if bs[-1] != ls[-1]:
            raise ValueError(f"When LU decomposition matrix and b have the same number of "
                             f"dimensions, last axis of LU decomposition matrix (shape {ls}) "
                             f"and b array (shape {bs}) must match")
        b = b[..., np.newaxis]
    elif bs[-2] != ls[-1]:
        raise ValueError(f"When LU decomposition matrix and b different numbers of "
                         f"dimensions, last axis of LU decomposition matrix (shape {ls}) and "
                         f"second to last axis of b array (shape {bs}) must match")
    batch = np.broadcast_shapes(ls[:-2], _shape(permutation)[:-1], _shape(b)[:-2])
    lu = js.broadcast_to(lu, (*batch, *ls[-2:]))
    permutation = js.broadcast_to(permutation, (*batch, _shape(permutation)[-1]))
    b = js.broadcast_to(b, (*batch, *_shape(b)[-2:]))
    fn: Any = _lu_solve_core
    for _ in batch:
        fn = vmap(fn, in_axes=(0, 0, 0, None))
    x = fn(lu, permutation, b, trans)
    return x[..., 0] if rhs_vector else x


_lu_solve_fn.__name__ = _lu_solve_fn.__qualname__ = "_lu_solve"
_lu_solve = jit(_lu_solve_fn, static_argnums=(3,))


def lu_solve(lu: Any, permutation: Any, b: Any, trans: int = 0) -> Any:
    """``x`` with ``a x = b`` (``a^T x = b`` for trans 1, ``a^H x = b`` for
    2) from ``lu(a)``'s factors and permutation, broadcasting as
    ``jnp.linalg.solve``."""
    return _lu_solve(L.asarray(lu), L.asarray(permutation), L.asarray(b), trans)


# -------------------------------------------------------------------- solve

def _broadcasted_matvec(a: Any, b: Any) -> Any:
    """``(..., n, m), (..., m) -> (..., n)``: one HIGHEST dot_general with
    the broadcast batch axes as batch dimensions."""
    batch = np.broadcast_shapes(_shape(a)[:-2], _shape(b)[:-1])
    nb = len(batch)
    # (broadcast_in_dim even where nothing is broadcast, as JAX: its
    # transpose, in the derived vecmat, is a reduce_sum over no axes)
    a = L.broadcast_in_dim(a, (*batch, *_shape(a)[-2:]),
                           tuple(range(nb + 2 - len(_shape(a)), nb + 2)))
    b = L.broadcast_in_dim(b, (*batch, _shape(b)[-1]),
                           tuple(range(nb + 1 - len(_shape(b)), nb + 1)))
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    return dot_general(a, b, dims, precision=Precision.HIGHEST)


def _solve_core(a: Any, b: Any) -> Any:
    """One matrix a against b (one vector, or a batch of them): the LU of a
    (gradient stopped) solves, and ``custom_linear_solve`` differentiates
    by solving again with the same factors."""
    out_shape = tuple(d_a if d_b == 1 else d_b
                      for d_a, d_b in zip(_shape(a)[:-1] + (1,), _shape(b)))
    b = L.broadcast_in_dim(b, out_shape, tuple(range(len(_shape(b)))))
    lu_, _, permutation = lax_lu.lu(stop_gradient(a))
    solve_ = functools.partial(
        custom_linear_solve, lambda x: _broadcasted_matvec(a, x),
        solve=lambda _, x: lu_solve(lu_, permutation, x, trans=0),
        transpose_solve=lambda _, x: lu_solve(lu_, permutation, x, trans=1))
    if len(_shape(a)) == len(_shape(b)) + 1:
        return solve_(b)
    return vmap(solve_, len(_shape(b)) - 1, max(len(_shape(a)), len(_shape(b))) - 1)(b)


def _solve_fn(a: Any, b: Any) -> Any:
    check_arraylike("jnp.linalg.solve", a, b)
    a, b = jm._promote_dtypes_inexact(L.asarray(a), L.asarray(b))
    sa, sb = _shape(a), _shape(b)
    if len(sa) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape="
                         f"{sa}")
    if len(sb) > 1 and len(sa) == len(sb) + 1 and sa[-1] == sb[-1] and sa[-1] != sb[-2]:
        raise ValueError(f"Invalid shapes for solve: {sa}, {sb}. Prior to JAX v0.5.0, this "
                         "would have been treated as a batched 1-dimensional solve. To "
                         "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
    # (shapes that do not fit the signature: vectorize's ValueError, as JAX's)
    signature = "(m,m),(m)->(m)" if len(sb) == 1 else "(m,m),(m,n)->(m,n)"
    return vectorize(_solve_core, signature=signature)(a, b)


_solve_fn.__name__ = _solve_fn.__qualname__ = "solve"
_solve = jit(_solve_fn)


def solve(a: Any, b: Any) -> Any:
    """``x`` with ``a @ x == b``: b a vector ``[m]`` (against every matrix of
    a) or ``[..., m, k]``; batch axes broadcast."""
    return _solve(a, b)


def _inv_fn(a: Any) -> Any:
    check_arraylike("jnp.linalg.inv", a)
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
    eye = creation.eye(shape[-1], dtype=_dtype(a))
    return solve(a, L.broadcast(eye, shape[:-2]))


_inv_fn.__name__ = _inv_fn.__qualname__ = "inv"
_inv = jit(_inv_fn)


def inv(a: Any) -> Any:
    """The inverse of each square matrix (``solve`` against the identity)."""
    return _inv(a)


# ------------------------------------------------------- det and slogdet

class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def _slogdet_lu_fn(a: Any) -> tuple[Any, Any]:
    """Sign and log|det| from the LU's diagonal and the pivots' parity."""
    dtype = _dtype(a)
    lu, pivot, _ = lax_lu.lu(a)
    diag = jnp_indexing.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = jr.any(diag == creation.array(0, dtype=dtype), axis=-1)
    iota = L.expand_dims(creation.arange(_shape(a)[-1], dtype=_dtype(pivot)),
                         tuple(range(len(_shape(pivot)) - 1)))
    parity = jr.count_nonzero(pivot != iota, axis=-1)
    if T.is_complex(dtype):
        sign = jr.prod(diag / jm.abs(diag).astype(dtype), axis=-1)
    else:
        sign = creation.array(1, dtype=dtype)
        parity = parity + jr.count_nonzero(diag < 0, axis=-1)
    sign = jnp_indexing.where(is_zero, creation.array(0, dtype=dtype),
                              sign * creation.array(-2 * (parity % 2) + 1, dtype=dtype))
    logdet = jnp_indexing.where(is_zero, creation.array(-np.inf, dtype=dtype),
                                jr.sum(jm.log(jm.abs(diag)).astype(dtype), axis=-1))
    return sign, jm.real(logdet)


_slogdet_lu: Any = custom_jvp(_slogdet_lu_fn)


def _slogdet_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """d log|det A| = trace(A^-1 dA); the sign's tangent is zero for real A
    and ``i Im(trace) sign`` for complex A."""
    (x,), (g,) = primals, tangents
    sign, ans = _slogdet_lu(x)
    ans_dot = jr.trace(solve(x, g), axis1=-1, axis2=-2)
    if T.is_complex(_dtype(x)):
        sign_dot = (ans_dot - jm.real(ans_dot).astype(_dtype(ans_dot))) * sign
        ans_dot = jm.real(ans_dot)
    else:
        sign_dot = creation.zeros_like(sign)
    return (sign, ans), (sign_dot, ans_dot)


_slogdet_lu.defjvp(_slogdet_jvp)


def _square_or_raise(fun: str, a: Any) -> None:
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to {fun}() must have shape [..., n, n], got {shape}")


def _slogdet_fn(a: Any, *, method: str | None = None) -> SlogdetResult:
    a = _inexact("jnp.linalg.slogdet", a)
    _square_or_raise("slogdet", a)
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         "(`None`), and 'qr'.")
    return SlogdetResult(*_slogdet_lu(a))


_slogdet_fn.__name__ = _slogdet_fn.__qualname__ = "slogdet"
_slogdet = jit(_slogdet_fn, static_argnames=("method",))


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """``(sign, log|det|)`` of each square matrix, from its LU."""
    out: SlogdetResult = _slogdet(a, method=method)
    return out


def _det_from_slogdet(a: Any) -> Any:
    sign, logdet = _slogdet_lu(a)
    return sign * jm.exp(logdet).astype(_dtype(sign))


_det_general: Any = custom_jvp(_det_from_slogdet)


def _det_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """d det A = det A trace(A^-1 dA) (for a nonsingular A)."""
    (x,), (g,) = primals, tangents
    y = _det_general(x)
    return y, y * jr.trace(solve(x, g), axis1=-1, axis2=-2)


_det_general.defjvp(_det_jvp)


def _det_fn(a: Any) -> Any:
    a = _inexact("jnp.linalg.det", a)
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")
    return _det_general(a)


_det_fn.__name__ = _det_fn.__qualname__ = "det"
_det = jit(_det_fn)


def det(a: Any) -> Any:
    """The determinant of each square matrix (sign times exp(log|det|) from
    the LU)."""
    return _det(a)


# ------------------------------------------------------------ matrix_power

def matrix_power(a: Any, n: int) -> Any:
    """``a`` to the integer power n by repeated squaring (``inv`` first for
    a negative n)."""
    check_arraylike("jnp.linalg.matrix_power", a)
    arr = creation.asarray(a)
    shape = _shape(arr)
    if len(shape) < 2:
        raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least "
                        "two-dimensional")
    if shape[-2] != shape[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    return _matrix_power(arr, n)


def _matrix_power_fn(arr: Any, n: int) -> Any:
    if n == 0:
        return js.broadcast_to(creation.eye(_shape(arr)[-2], dtype=_dtype(arr)), _shape(arr))
    if n < 0:
        arr = inv(arr)
        n = -n
    if n == 1:
        return arr
    z: Any = None
    result: Any = None
    while n > 0:
        z = arr if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


_matrix_power_fn.__name__ = _matrix_power_fn.__qualname__ = "matrix_power"
_matrix_power = jit(_matrix_power_fn, static_argnames=("n",))


# ---------------------------------------------------- svd-based functions

def _matrix_rank_fn(m: Any, rtol: Any = None, *, tol: Any = None) -> Any:
    arr = _inexact("jnp.linalg.matrix_rank", m)
    if tol is not None:
        rtol = tol
    if len(_shape(arr)) < 2:
        return jr.any(arr != 0).astype(np.int32)
    s = _linalg_svd(arr, full_matrices=False, compute_uv=False)
    if rtol is None:
        rtol = jr.max(s, axis=-1, keepdims=True) * max(_shape(arr)[-2:]) * \
            _eps(_dtype(s))
    else:
        rtol = L.expand_dims(creation.asarray(rtol), (-1,))
    return jr.sum(s > rtol, axis=-1)


_matrix_rank_fn.__name__ = _matrix_rank_fn.__qualname__ = "matrix_rank"
_matrix_rank = jit(_matrix_rank_fn)


def matrix_rank(M: Any, rtol: Any = None, *, tol: Any = None) -> Any:  # noqa: N803
    """The number of singular values above ``rtol`` (default ``max(s) *
    max(m, n) * eps``)."""
    return _matrix_rank(M, rtol, tol=tol)


def _pinv_core(a: Any, rtol: Any) -> Any:
    arr = _inexact("jnp.linalg.pinv", a)
    m, n = _shape(arr)[-2:]
    if m == 0 or n == 0:
        return creation.empty(_shape(arr)[:-2] + (n, m), _dtype(arr))
    arr = jm.conj(arr)
    if rtol is None:
        rtol = 10. * max(m, n) * creation.array(_eps(_dtype(arr)))
    rtol = creation.asarray(rtol)
    u, s, vh = _linalg_svd(arr, full_matrices=False)
    rtol = L.expand_dims(rtol[..., np.newaxis],
                         tuple(range(len(_shape(s)) - len(_shape(rtol)) - 1)))
    cutoff = rtol * s[..., 0:1]
    s = jnp_indexing.where(s > cutoff, s, np.inf).astype(_dtype(u))
    res = matmul(_mT(vh), jm.divide(_mT(u), s[..., np.newaxis]), precision=Precision.HIGHEST)
    return L.convert_element_type(res, _dtype(arr))


_pinv_core.__name__ = _pinv_core.__qualname__ = "_pinv"
_pinv: Any = custom_jvp(jit(_pinv_core))


def _pinv_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """Golub and Pereyra's derivative of the pseudo-inverse."""
    a, rtol = primals
    a_dot = tangents[0]
    p = _pinv(a, rtol)
    m, n = _shape(a)[-2:]
    if m >= n:
        s = matmul(matmul(p, _H(p)), _H(a_dot))
        t = matmul(matmul(_H(a_dot), _H(p)), p)
        p_dot = (-matmul(matmul(p, a_dot), p) + s - matmul(matmul(s, a), p) + t
                 - matmul(matmul(p, a), t))
    else:
        s = matmul(p, matmul(_H(p), _H(a_dot)))
        t = matmul(_H(a_dot), matmul(_H(p), p))
        p_dot = (-matmul(p, matmul(a_dot, p)) + s - matmul(s, matmul(a, p)) + t
                 - matmul(p, matmul(a, t)))
    return p, p_dot


_pinv.defjvp(_pinv_jvp)


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse from the SVD, singular values at or
    below ``rtol * max(s)`` dropped."""
    check_arraylike("jnp.linalg.pinv", a)
    if hermitian:
        raise NotImplementedError("jnp.linalg.pinv(hermitian=True) needs svd(hermitian=True), "
                                  "which spec does not have")
    if rcond is not None:
        rtol = rcond
    return _pinv(creation.asarray(a), rtol)


class LstsqResult(NamedTuple):
    solution: Any
    residuals: Any
    rank: Any
    s: Any


def _lstsq_fn(a: Any, b: Any, rcond: Any, numpy_resid: bool) -> LstsqResult:
    a, b = jm._promote_dtypes_inexact(L.asarray(a), L.asarray(b))
    if _shape(a)[0] != _shape(b)[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_vector = len(_shape(b)) == 1
    if b_vector:
        b = b[:, None]
    if len(_shape(a)) != 2:
        raise TypeError(f"{len(_shape(a))}-dimensional array given. Array must be two-"
                        "dimensional")
    if len(_shape(b)) != 2:
        raise TypeError(f"{len(_shape(b))}-dimensional array given. Array must be one or "
                        "two-dimensional")
    m, n = _shape(a)
    dtype = _dtype(a)
    if m * n == 0:
        s = creation.empty(0, dtype=dtype)
        rank = creation.array(0, dtype=int)
        x = creation.zeros((n, *_shape(b)[1:]), dtype=dtype)
    else:
        if rcond is None:
            rcond = _eps(dtype) * max(n, m)
        else:
            # The eps of the dtype, a NumPy scalar: strong (JAX's jnp.finfo).
            eps = ml_dtypes.finfo(np.dtype(dtype)).eps  # type: ignore[no-untyped-call]
            rcond = jnp_indexing.where(creation.asarray(rcond) < 0, eps, rcond)
        u, s, vt = _linalg_svd(a, full_matrices=False)
        mask = (s > 0) & (s >= creation.array(rcond, dtype=_dtype(s)) * s[0])
        rank = mask.sum()
        safe_s = jnp_indexing.where(mask, s, 1).astype(dtype)
        s_inv = jnp_indexing.where(mask, 1 / safe_s, 0)[:, np.newaxis]
        u_t_b = matmul(_H(u), b, precision=Precision.HIGHEST)
        x = matmul(_H(vt), s_inv * u_t_b, precision=Precision.HIGHEST)
    # NumPy's empty residuals depend on values; under jit they are always full.
    if numpy_resid and (rank < n or m <= n):
        resid = creation.asarray([])
    else:
        b_estimate = matmul(a, x, precision=Precision.HIGHEST)
        resid = _norm(b - b_estimate, axis=0) ** 2
    if b_vector:
        x = js.ravel(x)
    return LstsqResult(x, resid, rank, s)


_lstsq_fn.__name__ = _lstsq_fn.__qualname__ = "_lstsq"
_lstsq = jit(_lstsq_fn, static_argnames=("numpy_resid",))


def lstsq(a: Any, b: Any, rcond: float | None = None, *, numpy_resid: bool = False
          ) -> LstsqResult:
    """The least-squares solution of ``a @ x = b`` from the SVD, with the
    residuals, the effective rank and the singular values."""
    check_arraylike("jnp.linalg.lstsq", a, b)
    if numpy_resid:
        out: LstsqResult = _lstsq_fn(a, b, rcond, True)
        return out
    out = _lstsq(a, b, rcond, numpy_resid=False)
    return out


# ------------------------------------------------------------------- norms

def _norm_fn(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    x = _inexact("jnp.linalg.norm", x)
    x_shape = _shape(x)
    ndim = len(x_shape)
    if axis is None:
        if ord is None:
            return jm.sqrt(jr.sum(jm.real(x * jm.conj(x)), keepdims=keepdims))
        axis = tuple(range(ndim))
    elif isinstance(axis, tuple):
        axis = tuple(jr.canonicalize_axis(a, ndim) for a in axis)
    else:
        axis = (jr.canonicalize_axis(operator.index(axis), ndim),)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm2(x, ord, axis, keepdims)
    raise ValueError(f"Invalid axis values ({axis}) for jnp.linalg.norm.")


def _vector_norm(x: Any, ord: Any, axis: tuple[int, ...], keepdims: bool) -> Any:
    if ord is None or ord == 2:
        return jm.sqrt(jr.sum(jm.real(x * jm.conj(x)), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        # JAX's max starts at 0 (an empty vector's norm is 0).
        return jr.max(jm.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return jr.min(jm.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return jr.sum(x != 0, dtype=_dtype(jm.abs(x)), axis=axis,
                      keepdims=keepdims)
    if ord == 1:
        return jr.sum(jm.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    abs_x = jm.abs(x)
    ord_arr = creation.array(ord, dtype=_dtype(abs_x))
    ord_inv = creation.array(1. / ord, dtype=_dtype(abs_x))
    return jm.power(jr.sum(jm.power(abs_x, ord_arr), axis=axis, keepdims=keepdims), ord_inv)


def _matrix_norm2(x: Any, ord: Any, axis: tuple[int, int], keepdims: bool) -> Any:
    row_axis, col_axis = axis
    if row_axis == col_axis:
        raise ValueError(f"Duplicate axes given: {axis}")
    if ord is None or ord in ("f", "fro"):
        return jm.sqrt(jr.sum(jm.real(x * jm.conj(x)), axis=axis, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        sum_axis, red_axis = (row_axis, col_axis) if ord in (1, -1) else (col_axis, row_axis)
        if not keepdims and red_axis > sum_axis:
            red_axis -= 1
        sums = jr.sum(jm.abs(x), axis=sum_axis, keepdims=keepdims)
        if ord in (1, np.inf):
            return jr.max(sums, axis=red_axis, keepdims=keepdims, initial=0)
        return jr.min(sums, axis=red_axis, keepdims=keepdims)
    if ord in (2, -2, "nuc"):
        y = js.moveaxis(x, (row_axis, col_axis), (-2, -1))
        s = _linalg_svd(y, compute_uv=False)
        if ord == 2:
            out = jr.max(s, axis=-1, initial=0)
        elif ord == -2:
            out = jr.min(s, axis=-1)
        else:
            out = jr.sum(s, axis=-1)
        if keepdims:
            out = js.expand_dims(out, axis)
        return out
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


_norm_fn.__name__ = _norm_fn.__qualname__ = "norm"
_norm = jit(_norm_fn, static_argnames=("ord", "axis", "keepdims"))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector norms (one axis) and matrix norms (two axes) as NumPy's."""
    return _norm(x, ord, axis, keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    check_arraylike("jnp.linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    check_arraylike("jnp.linalg.vector_norm", x)
    if ord is None or ord == 2:
        return jm.sqrt(jr.sum(jm.real(x * jm.conj(x)), axis=axis, keepdims=keepdims))
    if axis is None:
        result = norm(js.ravel(x), ord=ord)
        if keepdims:
            result = L.expand_dims(result, tuple(range(len(_shape(x)))))
        return result
    return norm(x, ord=ord, axis=axis, keepdims=keepdims)


def _cond_fn(x: Any, p: Any = None) -> Any:
    check_arraylike("jnp.linalg.cond", x)
    arr = _inexact("jnp.linalg.cond", x)
    if len(_shape(arr)) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"{_shape(arr)=}")
    if _shape(arr)[-1] == 0 or _shape(arr)[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                         f"{_shape(arr)=}")
    if p is None or p == 2:
        s = _linalg_svd(arr, compute_uv=False)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = _linalg_svd(arr, compute_uv=False)
        r = s[..., -1] / s[..., 0]
    else:
        if _shape(arr)[-2] != _shape(arr)[-1]:
            raise ValueError(f"jnp.linalg.cond: for {p=}, array must be square; got "
                             f"{_shape(arr)=}")
        r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
    # Infinite where the matrix is singular (NaNs from the inverse of a
    # matrix without NaNs).
    return jnp_indexing.where(jm.isnan(r) & ~jr.any(jm.isnan(arr), axis=(-2, -1)), np.inf, r)


_cond_fn.__name__ = _cond_fn.__qualname__ = "cond"
_cond = jit(_cond_fn, static_argnames=("p",))


def cond(x: Any, p: Any = None) -> Any:
    """The condition number in norm p (singular values for p = None, 2, -2)."""
    return _cond(x, p)


# ---------------------------------------------------------- tensor solves

def tensorinv(a: Any, ind: int = 2) -> Any:
    check_arraylike("jnp.linalg.tensorinv", a)
    arr = creation.asarray(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got {ind=}")
    contracting, batch = _shape(arr)[:ind], _shape(arr)[ind:]
    flat_size = pymath.prod(contracting)
    if pymath.prod(batch) != flat_size:
        raise ValueError("tensorinv is only possible when the product of the first `ind` "
                         "dimensions equals that of the remaining dimensions. got "
                         f"{_shape(arr)=} with {ind=}.")
    return js.reshape(inv(js.reshape(arr, (flat_size, -1))), (*batch, *contracting))


def tensorsolve(a: Any, b: Any, axes: tuple[int, ...] | None = None) -> Any:
    check_arraylike("jnp.linalg.tensorsolve", a, b)
    a_arr, b_arr = creation.asarray(a), creation.asarray(b)
    if axes is not None:
        a_arr = js.moveaxis(a_arr, axes, len(axes) * [len(_shape(a_arr)) - 1])
    out_shape = _shape(a_arr)[len(_shape(b_arr)):]
    a_arr = js.reshape(a_arr, (b_arr.size, pymath.prod(out_shape)))
    b_arr = js.ravel(b_arr)
    return js.reshape(solve(a_arr, b_arr), out_shape)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """The product of a chain of matrices (1-D first and last operands are a
    row and a column vector), multiplied left to right."""
    check_arraylike("jnp.linalg.multi_dot", *arrays)
    arrs = [creation.asarray(x) for x in arrays]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)="
                         f"{len(arrs)}")
    if not (len(_shape(arrs[0])) in (1, 2) and len(_shape(arrs[-1])) in (1, 2) and
            all(len(_shape(a)) == 2 for a in arrs[1:-1])):
        raise ValueError("multi_dot: input arrays must all be two-dimensional, except for "
                         "the first and last array which may be 1 or 2 dimensional. Got "
                         f"array shapes {[_shape(a) for a in arrs]}")
    out = arrs[0]
    for x in arrs[1:]:
        out = matmul(out, x, precision=precision)
    return out


def _trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    check_arraylike("jnp.linalg.trace", x)
    return jr.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def _matrix_transpose(x: Any, /) -> Any:
    check_arraylike("jnp.linalg.matrix_transpose", x)
    return js.matrix_transpose(x)


def _cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    check_arraylike("jnp.linalg.cross", x1, x2)
    if _shape(x1)[axis] != 3 or _shape(x2)[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they have {_shape(x1)[axis]=} and {_shape(x2)[axis]=}")
    return cross(x1, x2, axis=axis)


def _vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
            preferred_element_type: Any = None) -> Any:
    return vecdot(x1, x2, axis=axis, precision=precision,
                  preferred_element_type=preferred_element_type)


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors (columns, unit norm) of a general
    square matrix, both complex."""
    a = _inexact("jnp.linalg.eig", a)
    w, v = lax_eig.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def _eigvals_fn(a: Any) -> Any:
    a = _inexact("jnp.linalg.eigvals", a)
    return lax_eig.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


_eigvals_fn.__name__ = _eigvals_fn.__qualname__ = "eigvals"
_eigvals = jit(_eigvals_fn)


def eigvals(a: Any) -> Any:
    """The (complex) eigenvalues of a general square matrix."""
    return _eigvals(a)


_LINALG_FUNCTIONS: dict[str, Any] = {
    "eig": eig, "eigvals": eigvals, "EigResult": EigResult,
    "solve": solve, "inv": inv, "det": det, "slogdet": slogdet, "matrix_power": matrix_power,
    "matrix_rank": matrix_rank, "pinv": pinv, "lstsq": lstsq, "norm": norm,
    "matrix_norm": matrix_norm, "vector_norm": vector_norm, "cond": cond,
    "tensorinv": tensorinv, "tensorsolve": tensorsolve, "multi_dot": multi_dot,
    "trace": _trace, "matrix_transpose": _matrix_transpose, "cross": _cross,
    "vecdot": _vecdot, "SlogdetResult": SlogdetResult,
}
for _name, _fn in _LINALG_FUNCTIONS.items():
    setattr(linalg, _name, _fn)

__all__ = ["lu_solve"]
