"""The eigendecomposition of a general square matrix: ``eig``.

``eig(x)`` returns the eigenvalues ``w`` (complex) and, as asked, the left
eigenvectors ``vl`` (``vl_j^H x = w_j vl_j^H``) and right eigenvectors ``vr``
(``x vr_j = w_j vr_j``) of each matrix of a ``[..., n, n]`` batch, each
vector of unit 2-norm with its largest-magnitude component real (LAPACK
``geev``'s normalisation). Constraint numbering (cited in error messages,
see SPEC.md, section 9): C1 rank >= 2; C2 the matrix is square; C3 the
dtype is float32, float64, complex64 or complex128.

The NumPy evaluation is ``numpy.linalg.eig`` (LAPACK ``geev``, as XLA's CPU
backend) in the operand's precision on the whole batch; left eigenvectors
are the rows of ``vr^-1`` conjugated and normalised as geev normalises
them (the same vectors for distinct eigenvalues). A matrix with a
non-finite entry gives NaNs (geev's ``info != 0``). The order of the
eigenvalues is LAPACK's, which NumPy's and jaxlib's builds share in the
cases tested; JAX leaves it unspecified.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of, from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import instantiate
from spec._src.lax import sharding_kit as SK
from spec._src.lax.dot import Precision, batch_matmul, dot
from spec._src.lax.elementwise import abs as lax_abs
from spec._src.lax.elementwise import complex as lax_complex
from spec._src.lax.elementwise import conj, eq, imag, integer_pow, neg, real
from spec._src.lax.linalg import (
    _T,
    _batch_split_only,
    _eye,
    _H,
    _leading_batch,
    _matrix_parts,
    _nan_where,
    triangular_solve,
)
from spec._src.lax.linalg_lu import _vmap, lu
from spec._src.lax.reductions import argmax, reduce_sum
from spec._src.lax.shaping import asarray, broadcasted_iota, convert_element_type, expand_dims
from spec._src.lowering import linalg as LL


class EigImplementation(enum.Enum):
    """The eig backend hint (CPU has LAPACK only)."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


_LAPACK_TYPES = (T.float32, T.float64, T.complex64, T.complex128)


def _complex_of(dt: T.DType) -> T.DType:
    return T.complex128 if dt in (T.float64, T.complex128) else T.complex64


# ------------------------------------------------------------------- typing

def _eig_type(x: ArrayType, *, compute_left_eigenvectors: bool,
              compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
              implementation: Any) -> list[ArrayType]:
    require(x.ndim >= 2, "eig", "C1",
            f"input 0 must have rank at least 2, but got shape={x.shape}")
    require(x.shape[-1] == x.shape[-2], "eig", "C2",
            f"the input to eig must be a square matrix. Got shape {x.shape[-2:]}.",
            ValueError)
    require(x.dtype in _LAPACK_TYPES, "eig", "C3",
            f"does not accept dtype {x.dtype.name} at position 0; accepted dtypes are "
            "subtypes of float32, float64, complex64, complex128")
    dt, w = _complex_of(x.dtype), x.weak_type
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ArrayType(x.shape[:-1], dt, w), *[ArrayType(x.shape, dt, w)] * count]


# --------------------------------------------------------------------- impl

def _normalise(v: np.ndarray) -> np.ndarray:
    """Columns of unit 2-norm, each turned by a unit phase so that its
    largest-magnitude entry is real and positive (``zgeev``'s scaling)."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    top = np.take_along_axis(v, k, axis=-2)
    phase = np.where(np.abs(top) > 0, np.conj(top) / np.where(top == 0, 1, np.abs(top)), 1)
    return v * phase


def _eig_impl(x: np.ndarray, *, compute_left_eigenvectors: bool,
              compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
              implementation: Any) -> list[np.ndarray]:
    if implementation not in (None, EigImplementation.LAPACK):
        raise ValueError("Only the lapack implementation is supported on CPU.")
    dt = np.dtype(_complex_of(x.dtype))
    bad = ~np.isfinite(x).all(axis=(-2, -1))
    clean = np.where(bad[..., None, None], np.zeros((), x.dtype), x) if bad.any() else x
    n = x.shape[-1]
    if n == 0:
        w = np.zeros(x.shape[:-1], dt)
        vr = np.zeros(x.shape, dt)
    else:
        with np.errstate(all="ignore"):
            w, vr = np.linalg.eig(clean)
    outs = [_nan_where(bad, np.asarray(w, dt))]
    if compute_left_eigenvectors:
        with np.errstate(all="ignore"):
            vl = _normalise(np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2))) if n else vr
        outs.append(_nan_where(bad, np.asarray(vl, dt)))
    if compute_right_eigenvectors:
        outs.append(_nan_where(bad, np.asarray(vr, dt)))
    return outs


# ----------------------------------------------------------------- autodiff

def _solve_matrix(a: Any, b: Any) -> Any:
    """``a^-1 b`` for one square matrix, through its LU."""
    factors, _, perm = lu(a)
    x = b[perm, :]
    x = triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(factors, x, left_side=True, lower=False)


def _solve(a: Any, b: Any) -> Any:
    fn: Callable[..., Sequence[Any]] = lambda x, y: [_solve_matrix(x, y)]  # noqa: E731
    for _ in canonical_aval_of(a).shape[:-2]:
        fn = _vmap(fn, (0, 0))
    return fn(a, b)[0]


def _dot(a: Any, b: Any) -> Any:
    if canonical_aval_of(a).ndim == 2:
        return dot(a, b, precision=Precision.HIGHEST)
    return batch_matmul(a, b, precision=Precision.HIGHEST)


def _eig_vec_jvp(w: Any, v: Any, da: Any) -> tuple[Any, Any]:
    """Non-degenerate perturbation theory: with P = v^-1 dA v, dw = diag(P)
    and dv = v (F * P) + v diag(c), F_ij = 1/(w_j - w_i) off the diagonal;
    c keeps each vector's unit norm and its largest entry real (geev's
    normalisation)."""
    aval = canonical_aval_of(w)
    n = aval.shape[-1]
    eye_n = _eye(aval.dtype, n, n)
    fmat = integer_pow(eye_n + w[..., None, :] - w[..., None], -1) - eye_n
    p = _dot(_solve(v, da), v)
    i = broadcasted_iota(np.int32, (n,), 0)
    dw = p[..., i, i]
    u = _dot(v, fmat * p)
    nd = canonical_aval_of(v).ndim
    k = argmax(lax_abs(v), nd - 2, np.int32)
    mask = convert_element_type(eq(broadcasted_iota(np.int32, canonical_aval_of(v).shape,
                                                    nd - 2), expand_dims(k, (nd - 2,))),
                                canonical_aval_of(v).dtype)
    c = lax_complex(neg(real(reduce_sum(conj(v) * u, (nd - 2,)))),
                    neg(imag(reduce_sum(mask * u, (nd - 2,))))
                    / real(reduce_sum(mask * v, (nd - 2,))))
    return dw, u + v * expand_dims(c, (nd - 2,))


def _eig_jvp(primals: list[Any], tangents: list[Any], *, compute_left_eigenvectors: bool,
             compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
             implementation: Any) -> tuple[list[Any], list[Any]]:
    (a,), (da,) = primals, tangents
    da = instantiate(da)
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that JAX cannot check (see the enable_eigvec_derivs argument to "
            "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to "
            "opt in.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
    w, vr = outs[0], outs[-1]
    da = convert_element_type(da, canonical_aval_of(vr).dtype)
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        nd = canonical_aval_of(vr).ndim
        return [w], [reduce_sum(_solve(vr, da) * _T(vr), (nd - 1,))]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    primal_out, tangent_out = [w], [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(conj(w), outs[1], _H(da))
        primal_out.append(outs[1])
        tangent_out.append(dvl)
    if compute_right_eigenvectors:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


# ------------------------------------------------------------- declarations

eig_p = declare(
    "eig", lowering=LL.eig, typing=_eig_type, impl=_eig_impl, multiple_results=True,
    jvp=_eig_jvp, transpose=not_applicable("a matrix decomposition is not linear"),
    batch=_leading_batch("eig"), sharding=SK.section("eig", _matrix_parts("eig")),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        use_magma: bool | None = None, implementation: EigImplementation | None = None
        ) -> list[Any]:
    """``[w, vl, vr]`` (the eigenvectors as asked) of a general square matrix."""
    if use_magma is not None:
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    out = eig_p.bind(asarray(x), compute_left_eigenvectors=compute_left_eigenvectors,
                     compute_right_eigenvectors=compute_right_eigenvectors,
                     enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
    return list(out)


__all__ = ["EigImplementation", "eig", "eig_p"]
