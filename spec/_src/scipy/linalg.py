"""``jax.scipy.linalg``: SciPy's linear-algebra API over ``jnp.linalg`` and
``lax.linalg``, built as JAX builds it: factorisations (``lu``,
``lu_factor``, ``cholesky``, ``cho_factor``, ``qr``, ``svd``, ``eigh``) and
the solves that reuse them (``lu_solve``, ``cho_solve``,
``solve_triangular``, ``solve``), ``inv``, ``det``, ``expm`` (scaling and
squaring over Pade approximants, Higham 2005), ``block_diag`` and the
special matrices (``toeplitz``, ``hankel``, ``circulant``, ``companion``,
``hilbert``, ``pascal``, ``helmert``, ``dft``, ``hadamard``, ``leslie``).

The ``overwrite_*`` and ``check_finite`` arguments are accepted and ignored
(JAX's arrays are immutable and it never checks finiteness). A function of
a matrix (or vector) maps over leading batch axes, which broadcast."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import control_flow as lax_cf
from spec._src.lax import linalg as lax_linalg
from spec._src.lax import linalg_lu as lax_lu
from spec._src.lax import loops as lax_loops
from spec._src.lax import slicing as lax_slicing
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax.dot import Precision
from spec._src.lax.linear_solve import custom_linear_solve
from spec._src.numpy import creation
from spec._src.numpy import indexing as jnp_indexing
from spec._src.numpy import math as jm
from spec._src.numpy import shape as js
from spec._src.numpy import statistics as jstat
from spec._src.numpy.linalg import _linalg_eigh, _linalg_svd, dot, linalg, matmul
from spec._src.numpy.linalg_solve import _broadcasted_matvec, lu_solve as _lax_lu_solve

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "det",
    "dft", "eigh", "expm", "fiedler", "hadamard", "hankel", "helmert", "hilbert", "inv",
    "invhilbert", "invpascal", "leslie", "lu",
    "lu_factor", "lu_solve", "pascal", "qr", "solve", "solve_triangular", "svd", "toeplitz",
]


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(canonical_aval_of(x).shape)


def _dtype(x: Any) -> T.DType:
    return canonical_aval_of(x).dtype


def _inexact(*xs: Any) -> list[Any]:
    return list(jm._promote_dtypes_inexact(*(creation.asarray(x) for x in xs)))


def _vectorize(fn: Callable[..., Any], core: Sequence[int]) -> Callable[..., Any]:
    """``fn`` of arguments with ``core[i]`` trailing core axes, mapped (one
    ``vmap`` per axis) over their broadcast leading axes."""
    def mapped(*args: Any) -> Any:
        shapes = [_shape(a) for a in args]
        batch = np.broadcast_shapes(*(s[:len(s) - c] for s, c in zip(shapes, core)))
        full = [js.broadcast_to(a, (*batch, *s[len(s) - c:]))
                for a, s, c in zip(args, shapes, core)]
        f = fn
        for _ in batch:
            f = vmap(f)
        return f(*full)
    return mapped


# ----------------------------------------------------------------- cholesky

def _cholesky_fn(a: Any, lower: bool) -> Any:
    (a,) = _inexact(a)
    factor = lax_linalg.cholesky(a if lower else jm.conj(js.matrix_transpose(a)),
                                 symmetrize_input=False)
    return factor if lower else jm.conj(js.matrix_transpose(factor))


_cholesky_fn.__name__ = _cholesky_fn.__qualname__ = "_cholesky"
_cholesky = jit(_cholesky_fn, static_argnames=("lower",))


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """The Cholesky factor of a Hermitian positive-definite matrix, upper
    (``a = U^H U``) unless ``lower``; NaNs where ``a`` is not positive
    definite. Only the triangle of ``a`` on the factor's side is read."""
    del overwrite_a, check_finite
    return _cholesky(a, lower)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def _core_of_rhs(fun: str, c: Any, b: Any) -> int:
    """1 when b is one vector per matrix, 2 when a matrix of them."""
    if len(_shape(b)) == 1:
        return 1
    if len(_shape(c)) == len(_shape(b)) + 1 and _shape(c)[-1] == _shape(b)[-1]:
        return 1
    return 2


def _cho_solve_fn(c: Any, b: Any, lower: bool) -> Any:
    c, b = _inexact(c, b)
    core = _core_of_rhs("cho_solve", c, b)

    def solve_with(transpose_a: bool) -> Callable[..., Any]:
        return _vectorize(functools.partial(lax_linalg.triangular_solve, left_side=True,
                                            lower=lower, transpose_a=transpose_a,
                                            conjugate_a=transpose_a), (2, core))
    b = solve_with(not lower)(c, b)
    return solve_with(lower)(c, b)


_cho_solve_fn.__name__ = _cho_solve_fn.__qualname__ = "_cho_solve"
_cho_solve = jit(_cho_solve_fn, static_argnames=("lower",))


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """``x`` with ``a x = b`` from ``cho_factor(a)``: two triangular solves."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    return _cho_solve(c, b, lower)


# ----------------------------------------------------------------------- lu

def _lu_factor_fn(a: Any, overwrite_a: bool = False, check_finite: bool = True
                  ) -> tuple[Any, Any]:
    (a,) = _inexact(a)
    factors, pivots, _ = lax_lu.lu(a)
    return factors, pivots


_lu_factor_fn.__name__ = _lu_factor_fn.__qualname__ = "lu_factor"
lu_factor = jit(_lu_factor_fn, static_argnames=("overwrite_a", "check_finite"))


def _lu_solve_fn(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0,
                 overwrite_b: bool = False, check_finite: bool = True) -> Any:
    factors, pivots = lu_and_piv
    factors, b = _inexact(factors, b)
    perm = lax_lu.lu_pivots_to_permutation(pivots, _shape(factors)[-2])
    core = _core_of_rhs("lu_solve", factors, b)
    return _vectorize(functools.partial(_lax_lu_solve, trans=trans), (2, 1, core))(
        factors, perm, b)


_lu_solve_fn.__name__ = _lu_solve_fn.__qualname__ = "lu_solve"
lu_solve = jit(_lu_solve_fn, static_argnames=("trans", "overwrite_b", "check_finite"))


def _lu_matrix(a: Any, permute_l: bool) -> tuple[Any, ...]:
    """One matrix's P, L, U (or P L, U) from its packed factors."""
    factors, _, permutation = lax_lu.lu(a)
    dtype = _dtype(a)
    m, n = _shape(a)
    iota = creation.arange(m, dtype=_dtype(permutation))
    p = creation.array(permutation[None, :] == iota[:, None], dtype=dtype)
    k = min(m, n)
    low = js.tril(factors, -1)[:, :k] + creation.eye(m, k, dtype=dtype)
    up = js.triu(factors)[:k, :]
    if permute_l:
        return matmul(p, low, precision=Precision.HIGHEST), up
    return jm.real(p), low, up


def _lu_fn(a: Any, permute_l: bool = False, overwrite_a: bool = False,
           check_finite: bool = True) -> tuple[Any, ...]:
    (a,) = _inexact(a)
    out: tuple[Any, ...] = _vectorize(functools.partial(_lu_matrix, permute_l=permute_l),
                                      (2,))(a)
    return out


_lu_fn.__name__ = _lu_fn.__qualname__ = "lu"
lu = jit(_lu_fn, static_argnames=("permute_l", "overwrite_a", "check_finite"))


# ------------------------------------------------------------------- solves

def _solve_fn(a: Any, b: Any, assume_a: str, lower: bool) -> Any:
    if assume_a != "pos":
        return linalg.solve(a, b)
    a, b = _inexact(a, b)
    sa, sb = _shape(a), _shape(b)
    if not (len(sa) >= 2 and len(sb) in (len(sa), len(sa) - 1)
            and sa[-1] == sa[-2] == sb[len(sa) - 2]):
        raise ValueError("The arguments to solve must have shapes a=[..., m, m] and "
                         f"b=[..., m, k] or b=[..., m]; got a={sa} and b={sb}")
    factors = cho_factor(stop_gradient(a), lower=lower)
    solve_ = functools.partial(
        custom_linear_solve, lambda x: _broadcasted_matvec(a, x),
        solve=lambda _, x: js.squeeze(cho_solve(factors, x[..., None]), -1),
        symmetric=True)
    if len(sa) == len(sb) + 1:
        return solve_(b)
    return vmap(solve_, len(sb) - 1, max(len(sa), len(sb)) - 1)(b)


_solve_fn.__name__ = _solve_fn.__qualname__ = "_solve"
_solve = jit(_solve_fn, static_argnames=("assume_a", "lower"))


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """``x`` with ``a x = b``: a Cholesky solve for ``assume_a="pos"``, else
    ``jnp.linalg.solve`` (an LU solve)."""
    del overwrite_a, overwrite_b, debug, check_finite
    valid = {"gen", "sym", "her", "pos"}
    if assume_a not in valid:
        raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
    return _solve(a, b, assume_a, lower)


def _triangular_flags(trans: int | str) -> tuple[bool, bool]:
    if trans in (0, "N"):
        return False, False
    if trans in (1, "T"):
        return True, False
    if trans in (2, "C"):
        return True, True
    raise ValueError(f"Invalid 'trans' value {trans}")


def _solve_triangular_fn(a: Any, b: Any, trans: int | str, lower: bool,
                         unit_diagonal: bool) -> Any:
    transpose_a, conjugate_a = _triangular_flags(trans)
    a, b = _inexact(a, b)
    core = _core_of_rhs("solve_triangular", a, b)
    return _vectorize(functools.partial(
        lax_linalg.triangular_solve, left_side=True, lower=lower, transpose_a=transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal), (2, core))(a, b)


_solve_triangular_fn.__name__ = _solve_triangular_fn.__qualname__ = "_solve_triangular"
_solve_triangular = jit(_solve_triangular_fn,
                        static_argnames=("trans", "lower", "unit_diagonal"))


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug: Any = None, check_finite: bool = True) -> Any:
    """``x`` with ``op(a) x = b`` for triangular a (only the ``lower`` or
    upper triangle is read); ``trans`` 0/"N", 1/"T" or 2/"C"."""
    del overwrite_b, debug, check_finite
    return _solve_triangular(a, b, trans, lower, unit_diagonal)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    del overwrite_a, check_finite
    return linalg.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    del overwrite_a, check_finite
    return linalg.det(a)


# ------------------------------------------------------------ decompositions

def _qr_fn(a: Any, mode: str, pivoting: bool) -> tuple[Any, ...]:
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    (a,) = _inexact(a)
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
    if mode == "r":
        return (r, p[0]) if pivoting else (r,)
    return (q, r, p[0]) if pivoting else (q, r)


_qr_fn.__name__ = _qr_fn.__qualname__ = "_qr"
_qr = jit(_qr_fn, static_argnames=("mode", "pivoting"))


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> Any:
    """``(q, r)``; ``mode`` "full", "economic" or "r" (a 1-tuple ``(r,)``)."""
    del overwrite_a, lwork, check_finite
    return _qr(a, mode, pivoting)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        overwrite_a: bool = False, check_finite: bool = True, lapack_driver: str = "gesdd"
        ) -> Any:
    del overwrite_a, check_finite, lapack_driver
    (a,) = _inexact(a)
    return _linalg_svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, type: int = 1,
         check_finite: bool = True, eigvals: Any = None) -> Any:
    """Eigenvalues (ascending) and, unless ``eigvals_only``, eigenvectors
    ``(w, v)`` of a Hermitian matrix; the generalised problem (``b``) and
    an eigenvalue subset are not implemented in spec."""
    del overwrite_a, overwrite_b, check_finite
    if b is not None or eigvals is not None or type != 1:
        raise NotImplementedError("jax.scipy.linalg.eigh: the generalised problem and "
                                  "eigenvalue subsets are not implemented in spec")
    w, v = _linalg_eigh(a, UPLO="L" if lower else "U", symmetrize_input=False)
    return w if eigvals_only else (w, v)


# -------------------------------------------------------------------- expm

_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _precise_dot(a: Any, b: Any) -> Any:
    return dot(a, b, precision=Precision.HIGHEST)


def _pade(order: int) -> Callable[[Any], tuple[Any, Any]]:
    """The odd (U) and even (V) parts of the [order/order] Pade
    approximant's numerator, from the powers A^2, A^4, ... (Higham's
    grouping for order 13)."""
    b = _PADE[order]

    def approximant(a: Any) -> tuple[Any, Any]:
        m, n = _shape(a)
        ident = creation.eye(m, n, dtype=_dtype(a))
        powers = [ident, _precise_dot(a, a)]
        if order >= 5:
            powers.append(_precise_dot(powers[1], powers[1]))
        if order >= 7:
            powers.append(_precise_dot(powers[2], powers[1]))
        if order == 9:
            powers.append(_precise_dot(powers[3], powers[1]))
        if order == 13:
            a2, a4, a6 = powers[1], powers[2], powers[3]
            u = _precise_dot(a, _precise_dot(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                             + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
            v = (_precise_dot(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6
                 + b[4] * a4 + b[2] * a2 + b[0] * ident)
            return u, v
        k = len(powers)
        odd = b[2 * k - 1] * powers[k - 1]
        even = b[2 * k - 2] * powers[k - 1]
        for i in range(k - 2, -1, -1):
            odd = odd + b[2 * i + 1] * powers[i]
            even = even + b[2 * i] * powers[i]
        return _precise_dot(a, odd), even
    return approximant


def _calc_p_q(a: Any) -> tuple[Any, Any, Any]:
    """The scaled matrix's Pade numerator P and denominator Q and the
    number of squarings; the order is chosen by the 1-norm (Higham's
    thresholds for double and single precision)."""
    a_l1 = linalg.norm(a, 1)
    if _dtype(a) in (T.float64, T.complex128):
        maxnorm = 5.371920351148152
        conds = [1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                 2.097847961257068e+000]
        orders = [3, 5, 7, 9, 13]
    elif _dtype(a) in (T.float32, T.complex64):
        maxnorm = 3.925724783138660
        conds = [4.258730016922831e-001, 1.880152677804762e+000]
        orders = [3, 5, 7]
    else:
        raise TypeError(f"A.dtype={_dtype(a).name} is not supported.")
    n_squarings = jm.maximum(0, jm.floor(jm.log2(a_l1 / maxnorm)))
    a = a / 2 ** n_squarings.astype(_dtype(a))
    idx = jstat.digitize(a_l1, creation.array(conds, dtype=_dtype(a_l1)))
    u, v = lax_cf.switch(idx, [_pade(o) for o in orders], a)
    return u + v, -u + v, n_squarings


def _squaring(r: Any, n_squarings: Any, max_squarings: int) -> Any:
    def step(c: Any, i: Any) -> tuple[Any, None]:
        return lax_cf.cond(i < n_squarings, lambda x: _precise_dot(x, x), lambda x: x, c), None
    res, _ = lax_loops.scan(step, r, creation.arange(max_squarings,
                                                      dtype=_dtype(n_squarings)))
    return res


def _expm_matrix(a: Any, upper_triangular: bool, max_squarings: int) -> Any:
    p, q, n_squarings = _calc_p_q(a)

    def compute(args: tuple[Any, Any, Any]) -> Any:
        _, num, den = args
        r = (solve_triangular(den, num) if upper_triangular else linalg.solve(den, num))
        return _squaring(r, n_squarings, max_squarings)

    def nan(args: tuple[Any, Any, Any]) -> Any:
        return creation.full_like(args[0], np.nan)
    return lax_cf.cond(n_squarings > max_squarings, nan, compute, (a, p, q))


def _expm_fn(A: Any, *, upper_triangular: bool = False,  # noqa: N803
             max_squarings: int = 16) -> Any:
    (a,) = _inexact(A)
    if len(_shape(a)) < 2 or _shape(a)[-1] != _shape(a)[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape="
                         f"{_shape(a)}.")
    return _vectorize(functools.partial(_expm_matrix, upper_triangular=upper_triangular,
                                        max_squarings=max_squarings), (2,))(a)


_expm_fn.__name__ = _expm_fn.__qualname__ = "expm"
expm = jit(_expm_fn, static_argnames=("upper_triangular", "max_squarings"))


# --------------------------------------------------------- special matrices

def _block_diag_fn(*arrs: Any) -> Any:
    if not arrs:
        return creation.zeros((1, 0))
    bad = [i for i, a in enumerate(arrs) if len(_shape(a)) > 2]
    if bad:
        raise ValueError(f"Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                         f"dimensions, got {arrs[bad[0]]} at argument {bad[0]}.")
    converted = [js.atleast_2d(a) for a in arrs]
    converted = list(jm._promote_dtypes(*converted)) if len(converted) > 1 else converted
    dtype = _dtype(converted[0])
    total = sum(_shape(a)[1] for a in converted)
    padded = []
    col = 0
    for arr in converted:
        cols = _shape(arr)[1]
        padded.append(lax_slicing.pad(arr, np.zeros((), dtype),
                                      ((0, 0, 0), (col, total - cols - col, 0))))
        col += cols
    return js.concatenate(padded, axis=0)


_block_diag_fn.__name__ = _block_diag_fn.__qualname__ = "block_diag"
block_diag = jit(_block_diag_fn)


def _toeplitz_core(c: Any, r: Any) -> Any:
    n, m = _shape(c)[0], _shape(r)[0]
    both = js.concatenate([js.flip(c), r[1:]])
    return both[(n - 1) - creation.arange(n)[:, None] + creation.arange(m)[None, :]]


def toeplitz(c: Any, r: Any = None) -> Any:
    """The matrix with first column c and first row r (``conj(c)`` when
    None), constant along diagonals; leading axes map."""
    c = creation.asarray(c)
    r = jm.conj(c) if r is None else creation.asarray(r)
    return _vectorize(_toeplitz_core, (1, 1))(js.atleast_1d(c), js.atleast_1d(r))


def hankel(c: Any, r: Any = None) -> Any:
    """The matrix with first column c and last row r, constant along
    anti-diagonals (r defaults to zeros)."""
    c = js.atleast_1d(creation.asarray(c))
    r = creation.zeros_like(c) if r is None else js.atleast_1d(creation.asarray(r))
    c, r = jm._promote_dtypes(c, r)

    def core(cv: Any, rv: Any) -> Any:
        n, m = _shape(cv)[0], _shape(rv)[0]
        both = js.concatenate([cv, rv[1:]])
        return both[creation.arange(n)[:, None] + creation.arange(m)[None, :]]
    return _vectorize(core, (1, 1))(c, r)


def circulant(c: Any) -> Any:
    """The matrix whose columns are the cyclic shifts of c."""
    c = js.atleast_1d(creation.asarray(c))

    def core(cv: Any) -> Any:
        n = _shape(cv)[0]
        return cv[(creation.arange(n)[:, None] - creation.arange(n)[None, :]) % n]
    return _vectorize(core, (1,))(c)


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial with coefficients a (highest
    degree first): first row ``-a[1:] / a[0]``, ones below the diagonal."""
    a = creation.asarray(a)
    if len(_shape(a)) < 1 or _shape(a)[-1] < 2:
        raise ValueError("The length of `a` along the last axis must be at least 2.")

    def core(av: Any) -> Any:
        n = _shape(av)[0]
        first = -av[1:] / av[0]
        sub = creation.eye(n - 2, n - 1, dtype=_dtype(first))
        return js.concatenate([first[None, :], sub], axis=0)
    return _vectorize(core, (1,))(a)


def leslie(f: Any, s: Any) -> Any:
    """Fecundities f on the first row, survival rates s on the subdiagonal."""
    f, s = jm._promote_dtypes(js.atleast_1d(creation.asarray(f)),
                              js.atleast_1d(creation.asarray(s)))

    def core(fv: Any, sv: Any) -> Any:
        n = _shape(fv)[0]
        sub = jnp_indexing.where(creation.eye(n - 1, n, dtype=bool), sv[:, None],
                                 creation.zeros((), _dtype(sv)))
        return js.concatenate([fv[None, :], sub], axis=0)
    return _vectorize(core, (1, 1))(f, s)


def hilbert(n: int) -> Any:
    """``1 / (i + j + 1)``, float."""
    x = creation.arange(n, dtype=float)
    return 1.0 / (x[:, None] + x[None, :] + 1.0)


def pascal(n: int, kind: str | None = None) -> Any:
    """The Pascal matrix ("symmetric", "lower" or "upper"), from exact
    binomial coefficients."""
    if kind is None:
        kind = "symmetric"
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be one of 'symmetric', 'lower', or 'upper'; got "
                         f"{kind=}")
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    binom = np.vectorize(math.comb, otypes=[np.float64])
    if kind == "lower":
        values = np.where(i >= j, binom(i, np.minimum(i, j)), 0.0)
    elif kind == "upper":
        values = np.where(i <= j, binom(j, np.minimum(i, j)), 0.0)
    else:
        values = binom(i + j, i) if n else np.zeros((0, 0))
    # JAX builds it in float32 whatever the default float type.
    return creation.asarray(values, dtype=np.float32)


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix: row i (from 0) holds ``1 / d`` in its first i+1
    entries and ``-(i+1) / d`` next, ``d = sqrt((i+1)(i+2))``; with
    ``full`` a first row of ``1 / sqrt(n)``."""
    i = np.arange(n - 1)[:, None]
    j = np.arange(n)[None, :]
    k = (i + 1).astype(np.float64)
    denom = np.sqrt(k * (k + 1))
    body = np.where(j <= i, 1.0 / denom, np.where(j == i + 1, -k / denom, 0.0))
    if full:
        body = np.concatenate([np.full((1, n), 1 / np.sqrt(n)), body], axis=0)
    return creation.asarray(body, dtype=float)


def invhilbert(n: int) -> Any:
    """The exact inverse of ``hilbert(n)`` (integers from binomial
    coefficients), in the default float type."""
    values = np.array([[(-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                        * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2
                        for j in range(n)] for i in range(n)], dtype=np.float64)
    return creation.asarray(values.reshape(n, n), dtype=float)


def invpascal(n: int, kind: str | None = None) -> Any:
    """The exact inverse of ``pascal(n, kind)``: ``(-1)^(i-j) C(i, j)`` below
    the diagonal for "lower", its transpose for "upper", ``U^-1 L^-1`` for
    "symmetric"; in the default float type."""
    if kind is None:
        kind = "symmetric"
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be one of 'symmetric', 'lower', or 'upper'; got "
                         f"{kind=}")
    low = np.array([[(-1) ** (i - j) * math.comb(i, j) if i >= j else 0 for j in range(n)]
                    for i in range(n)], dtype=np.float64).reshape(n, n)
    values = low if kind == "lower" else low.T if kind == "upper" else low.T @ low
    return creation.asarray(values, dtype=float)


def fiedler(a: Any) -> Any:
    """``|a_i - a_j|``, mapped over leading axes."""
    arr = js.atleast_1d(creation.asarray(a))
    return jm.abs(arr[..., None] - arr[..., None, :])


def hadamard(n: int, dtype: Any = int) -> Any:
    """Sylvester's Hadamard matrix of order n (a power of 2)."""
    if n < 1 or (n & (n - 1)):
        raise ValueError("n must be a positive integer that is a power of 2.")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return creation.asarray(h, dtype=dtype)


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The discrete Fourier transform matrix ``exp(-2 pi i jk / n)``, scaled
    by ``1/n`` ("n") or ``1/sqrt(n)`` ("sqrtn")."""
    if scale not in (None, "n", "sqrtn"):
        raise ValueError(f"scale must be None, 'n', or 'sqrtn'; got {scale=}")
    k = creation.arange(n)
    out = jm.exp(-2j * np.pi * (k[:, None] * k[None, :] % max(n, 1)) / max(n, 1))
    if scale == "n":
        out = out / n
    elif scale == "sqrtn":
        out = out / np.sqrt(n)
    return out if dtype is None else out.astype(dtype)


