"""Lowering rules for the linear-algebra primitives, as JAX lowers them on
CPU: LAPACK FFI custom calls (``lapack_spotrf_ffi``, ``lapack_dgesdd_ffi``,
...) that jaxlib's CPU client registers, with column-major operand and
result layouts, the ``num_batch_dims`` frontend attribute, typed backend
attributes and the operand aliased to the result LAPACK overwrites; then
the NaN fill where LAPACK's ``info`` reports a failure. Each call carries
JAX's Shardy rule (``sdy.sharding_rule``): the batch dimensions are shared
by every operand and result (so the call may be split along them), the
matrix dimensions are factors of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.config import x64_enabled
from spec._src.core.types import ArrayType
from spec._src.lowering.emitter import LoweringContext, ints, tensor_type

Avals = Sequence[ArrayType]
_BOOL = np.dtype(np.bool_)
_I32 = np.dtype(np.int32)
_LAPACK_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _target(routine: str, dtype: Any) -> str:
    """``lapack_spotrf_ffi`` for ``potrf`` on float32."""
    name = np.dtype(dtype).name
    if name not in _LAPACK_PREFIX:
        raise NotImplementedError(f"LAPACK has no {routine} for dtype {name}")
    return f"lapack_{_LAPACK_PREFIX[name]}{routine}_ffi"


def _layout(rank: int, column_major: bool) -> str:
    """A layout (minor-to-major dimensions) as an index tensor: a batch of
    Fortran-order matrices, or the default row-major one."""
    dims = ((rank - 2, rank - 1, *range(rank - 3, -1, -1)) if column_major
            else tuple(range(rank - 1, -1, -1)))
    if not dims:
        body = ""
    elif len(dims) == 1:
        body = str(dims[0])
    else:
        body = ints(dims)
    return f"dense<{body}> : tensor<{len(dims)}xindex>"


def _char(c: str) -> int:
    return ord(c)


def ffi_call(ctx: LoweringContext, target: str, operands: Sequence[str], in_avals: Avals,
             out_avals: Avals, attributes: dict[str, int], aliases: dict[int, int],
             i32_attributes: dict[str, int] | None = None,
             bool_attributes: dict[str, bool] | None = None) -> list[str]:
    """``stablehlo.custom_call @target`` the way JAX's linalg FFI lowering
    writes it: arrays of the largest rank column-major, the rest row-major;
    ``attributes`` as ``ui8`` backend attributes (``i32_attributes`` as
    ``i32`` ones, ``bool_attributes`` as booleans, all in name order); ``aliases`` maps an
    operand to the result that reuses its buffer."""
    top = max(a.ndim for a in in_avals)
    in_layouts = ", ".join(_layout(a.ndim, a.ndim == top) for a in in_avals)
    out_layouts = ", ".join(_layout(a.ndim, a.ndim == top) for a in out_avals)
    typed = {**{k: f"{v} : ui8" for k, v in attributes.items()},
             **{k: f"{v} : i32" for k, v in (i32_attributes or {}).items()},
             **{k: str(v).lower() for k, v in (bool_attributes or {}).items()}}
    config = ", ".join(f"{k} = {v}" for k, v in sorted(typed.items()))
    multi = len(out_avals) > 1
    alias_text = ", ".join(
        f"#stablehlo.output_operand_alias<output_tuple_indices = "
        f"{ints([out]) if multi else '[]'}, operand_index = {op}, operand_tuple_indices = []>"
        for op, out in sorted(aliases.items()))
    attrs = (f'backend_config = "", mhlo.backend_config = {{{config}}}, '
             f'mhlo.frontend_attributes = {{num_batch_dims = "{top - 2}"}}, '
             f"operand_layouts = [{in_layouts}], "
             + (f"output_operand_aliases = [{alias_text}], " if aliases else "") +
             f"result_layouts = [{out_layouts}], "
             f"sdy.sharding_rule = {sharding_rule(in_avals, out_avals, top - 2)}")
    ins = ", ".join(tensor_type(a) for a in in_avals)
    outs = ", ".join(tensor_type(a) for a in out_avals)
    sig = f"({ins}) -> ({outs})" if multi else f"({ins}) -> {outs}"
    return ctx.results(f"stablehlo.custom_call @{target}({', '.join(operands)}) {{{attrs}}} : "
                       f"{sig}", len(out_avals))


# Shardy names a rule's factors i, j, k, ... in order of first use.
_FACTOR_NAMES = "ijklmnopqrstuvwxyz"


def sharding_rule(in_avals: Avals, out_avals: Avals, n_batch: int) -> str:
    """``#sdy.op_sharding_rule<([i, j, k])->([i, l, m], [i]) {i=2, ...},
    custom>``: each value's dimensions as factors, its leading ``n_batch``
    dimensions the factors every value shares (a value of smaller rank
    shares none), every other dimension a factor of its own, with the
    factors' sizes, as JAX's linalg lowering writes it."""
    sizes: list[int] = []
    shared: list[int] = []

    def factors(aval: ArrayType) -> str:
        dims = list(aval.shape)
        own = dims
        names: list[int] = []
        if n_batch and len(dims) >= n_batch:
            if not shared:
                shared.extend(range(len(sizes), len(sizes) + n_batch))
                sizes.extend(dims[:n_batch])
            names += shared
            own = dims[n_batch:]
        for d in own:
            names.append(len(sizes))
            sizes.append(int(d))
        return "[" + ", ".join(_FACTOR_NAMES[k] for k in names) + "]"
    ins = ", ".join(factors(a) for a in in_avals)
    outs = ", ".join(factors(a) for a in out_avals)
    table = ", ".join(f"{_FACTOR_NAMES[k]}={n}" for k, n in enumerate(sizes))
    return f"#sdy.op_sharding_rule<({ins})->({outs}) {{{table}}}, custom>"


def _ok(ctx: LoweringContext, info: str, batch: tuple[int, ...]) -> str:
    """``info == 0`` per matrix (LAPACK succeeded)."""
    aval = ArrayType(batch, _I32)
    zero = ctx.constant(np.zeros((), _I32), ArrayType((), _I32))
    zeros = ctx.broadcast(zero, ArrayType((), _I32), aval, ())
    t = tensor_type(aval)
    return ctx.line(f"stablehlo.compare EQ, {info}, {zeros}, SIGNED : ({t}, {t}) -> "
                    f"{tensor_type(ArrayType(batch, _BOOL))}")


def _nan_unless(ctx: LoweringContext, ok: str, batch: tuple[int, ...], x: str,
                aval: ArrayType) -> str:
    """``x`` where its matrix's ``ok`` holds, NaN elsewhere (JAX's order of
    broadcasts: the predicate to unit axes, the NaN, the predicate to the
    full shape)."""
    nb = len(batch)
    unit = ArrayType((*batch, *(1 for _ in aval.shape[nb:])), _BOOL)
    pred = ctx.broadcast(ok, ArrayType(batch, _BOOL), unit, range(nb))
    scalar = ArrayType((), aval.dtype)
    # A complex NaN is NaN in both parts (JAX's ``nan + nan * 1j``).
    fill = complex(np.nan, np.nan) if np.dtype(aval.dtype).kind == "c" else np.nan
    nan = ctx.broadcast(ctx.constant(np.asarray(fill, aval.dtype), scalar), scalar, aval, ())
    wide = ArrayType(aval.shape, _BOOL)
    pred = ctx.broadcast(pred, unit, wide, range(aval.ndim))
    return ctx.line(f"stablehlo.select {pred}, {x}, {nan} : {tensor_type(wide)}, "
                    f"{tensor_type(aval)}")


def cholesky(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
             out_avals: Avals) -> list[str]:
    """``potrf`` on the lower triangle (the strict upper triangle stays the
    operand's); NaN where the matrix is not positive definite."""
    aval = in_avals[0]
    batch = tuple(aval.shape[:-2])
    if aval.shape[-1] == 0:
        return [operands[0]]
    factor, info = ffi_call(ctx, _target("potrf", aval.dtype), operands, in_avals,
                            [aval, ArrayType(batch, _I32)], {"uplo": _char("L")}, {0: 0})
    return [_nan_unless(ctx, _ok(ctx, info, batch), batch, factor, out_avals[0])]


def triangular_solve(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                     out_avals: Avals, *, left_side: bool, lower: bool, transpose_a: bool,
                     conjugate_a: bool, unit_diagonal: bool) -> list[str]:
    """``trsm`` for LAPACK's dtypes (a conjugate without transpose is first
    applied to ``a``); other dtypes use ``stablehlo.triangular_solve``."""
    a, b = operands
    a_aval, b_aval = in_avals
    if conjugate_a and not transpose_a:
        a = ctx.op("chlo.conj", [a], [a_aval], a_aval)
        conjugate_a = False
    if np.dtype(a_aval.dtype).name not in _LAPACK_PREFIX:
        trans = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
        props = (f"left_side = {str(left_side).lower()}, lower = {str(lower).lower()}, "
                 f"transpose_a = #stablehlo<transpose {trans}>, "
                 f"unit_diagonal = {str(unit_diagonal).lower()}")
        return ctx.generic_op("stablehlo.triangular_solve", [a, b], in_avals, out_avals,
                              properties=props)
    trans_x = ("C" if conjugate_a else "T") if transpose_a else "N"
    attrs = {"side": _char("L" if left_side else "R"), "uplo": _char("L" if lower else "U"),
             "trans_x": _char(trans_x), "diag": _char("U" if unit_diagonal else "N")}
    return ffi_call(ctx, _target("trsm", a_aval.dtype), [a, b], in_avals, [b_aval], attrs,
                    {1: 0})


def _triu(ctx: LoweringContext, r: str, aval: ArrayType) -> str:
    """Zeros below the diagonal (JAX's ``_triu``: a 2-D mask from iotas,
    broadcast over the batch)."""
    n, m = aval.shape[-2:]
    # The diagonal offset is a Python int: int64 under x64, which widens
    # the iotas it is added to (JAX's ``_tri``).
    index = np.dtype(np.int64) if x64_enabled() else _I32
    square = ArrayType((n, m), index)
    rows = ctx.line(f"stablehlo.iota dim = 0 : {tensor_type(square)}")
    shift = ctx.broadcast(ctx.constant(np.asarray(-1, index), ArrayType((), index)),
                          ArrayType((), index), square, ())
    rows = ctx.op("stablehlo.add", [rows, shift], [square, square], square)
    cols = ctx.line(f"stablehlo.iota dim = 1 : {tensor_type(square)}")
    t = tensor_type(square)
    mask_aval = ArrayType((n, m), _BOOL)
    mask = ctx.line(f"stablehlo.compare GE, {rows}, {cols}, SIGNED : ({t}, {t}) -> "
                    f"{tensor_type(mask_aval)}")
    if aval.ndim > 2:
        full = ArrayType(aval.shape, _BOOL)
        mask = ctx.broadcast(mask, mask_aval, full, [aval.ndim - 2, aval.ndim - 1])
    scalar = ArrayType((), aval.dtype)
    zeros = ctx.broadcast(ctx.constant(np.zeros((), aval.dtype), scalar), scalar, aval, ())
    return ctx.line(f"stablehlo.select {mask}, {zeros}, {r} : "
                    f"{tensor_type(ArrayType(aval.shape, _BOOL))}, {tensor_type(aval)}")


def _slice_last2(ctx: LoweringContext, x: str, aval: ArrayType, rows: int, cols: int
                 ) -> tuple[str, ArrayType]:
    out = ArrayType((*aval.shape[:-2], rows, cols), aval.dtype)
    ranges = ", ".join([*(f"0:{d}" for d in aval.shape[:-2]), f"0:{rows}", f"0:{cols}"])
    return ctx.line(f"stablehlo.slice {x} [{ranges}] : ({tensor_type(aval)}) -> "
                    f"{tensor_type(out)}"), out


def qr(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
       pivoting: bool, full_matrices: bool, **params: Any) -> list[str]:
    """``geqrf`` then ``orgqr``/``ungqr`` on the reflectors, R the upper
    triangle (JAX's qr lowering, function by function)."""
    if pivoting:
        raise NotImplementedError("lowering qr with pivoting=True is not specified")
    aval = in_avals[0]
    *batch, m, n = aval.shape
    k = min(m, n)
    if k == 0:
        return _empty_qr(ctx, out_avals)
    taus_aval = ArrayType((*batch, k), aval.dtype)
    r, taus = ffi_call(ctx, _target("geqrf", aval.dtype), operands, in_avals,
                       [aval, taus_aval], {}, {0: 0})
    orgqr = _target("ungqr" if np.dtype(aval.dtype).kind == "c" else "orgqr", aval.dtype)
    r_aval = aval
    if m < n:
        head, head_aval = _slice_last2(ctx, r, aval, m, m)
        (q,) = ffi_call(ctx, orgqr, [head, taus], [head_aval, taus_aval], [head_aval], {},
                        {0: 0})
    elif full_matrices:
        wide = ArrayType((*batch, m, m), aval.dtype)
        zero = ctx.constant(np.zeros((), aval.dtype), ArrayType((), aval.dtype))
        lows, highs = [0] * aval.ndim, [0] * (aval.ndim - 1) + [m - n]
        scalar = tensor_type(ArrayType((), aval.dtype))
        padded = ctx.line(
            f"stablehlo.pad {r}, {zero}, low = {ints(lows)}, high = {ints(highs)}, interior = "
            f"{ints([0] * aval.ndim)} : ({tensor_type(aval)}, {scalar}) -> {tensor_type(wide)}")
        (q,) = ffi_call(ctx, orgqr, [padded, taus], [wide, taus_aval], [wide], {}, {0: 0})
    else:
        (q,) = ffi_call(ctx, orgqr, [r, taus], [aval, taus_aval], [aval], {}, {0: 0})
        r, r_aval = _slice_last2(ctx, r, aval, n, n)
    return [q, _triu(ctx, r, r_aval)]


def _empty_qr(ctx: LoweringContext, out_avals: Avals) -> list[str]:
    q_aval, r_aval = out_avals
    m, k = q_aval.shape[-2:]
    eye = np.broadcast_to(np.eye(m, k, dtype=q_aval.dtype), q_aval.shape)
    return [ctx.constant(np.ascontiguousarray(eye), q_aval),
            ctx.constant(np.zeros(r_aval.shape, r_aval.dtype), r_aval)]


def eigh(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
         lower: bool, subset_by_index: Any, algorithm: Any, **params: Any) -> list[str]:
    """``syevd``/``heevd`` computing vectors (mode V) from one triangle;
    eigenvalues ascending (LAPACK sorts); NaN where it fails."""
    aval = in_avals[0]
    n = aval.shape[-1]
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("subset_by_index not supported on CPU and GPU")
    if algorithm is not None and "QDWH" in str(algorithm):
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if algorithm is not None and "JACOBI" in str(algorithm):
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    batch = tuple(aval.shape[:-2])
    v_aval, w_aval = out_avals
    routine = "heevd" if np.dtype(aval.dtype).kind == "c" else "syevd"
    v, w, info = ffi_call(ctx, _target(routine, aval.dtype), operands, in_avals,
                          [v_aval, w_aval, ArrayType(batch, _I32)],
                          {"mode": _char("V"), "uplo": _char("L" if lower else "U")}, {0: 0})
    ok = _ok(ctx, info, batch)
    return [_nan_unless(ctx, ok, batch, v, v_aval), _nan_unless(ctx, ok, batch, w, w_aval)]


def svd(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
        full_matrices: bool, compute_uv: bool, subset_by_index: Any, algorithm: Any
        ) -> list[str]:
    """``gesdd`` (``gesvd`` for the QR algorithm) in mode A (full), S
    (reduced) or N (values only); NaN where it fails."""
    aval = in_avals[0]
    *batch_list, m, n = aval.shape
    batch = tuple(batch_list)
    k = min(m, n)
    if not (subset_by_index is None or tuple(subset_by_index) == (0, k)):
        raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
    name = "DEFAULT" if algorithm is None else str(getattr(algorithm, "name", algorithm))
    if "JACOBI" in name or "POLAR" in name:
        raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented "
                                  "on CPU.")
    if k == 0:
        return _empty_svd(ctx, out_avals)
    routine = "gesvd" if name.endswith("QR") else "gesdd"
    mode = "N" if not compute_uv else "A" if full_matrices else "S"
    s_aval = out_avals[0]
    if compute_uv:
        u_aval, vt_aval = out_avals[1:]
    else:
        u_aval = ArrayType((*batch, m, m if full_matrices else k), aval.dtype)
        vt_aval = ArrayType((*batch, n if full_matrices else k, n), aval.dtype)
    _, s, u, vt, info = ffi_call(
        ctx, _target(routine, aval.dtype), operands, in_avals,
        [aval, s_aval, u_aval, vt_aval, ArrayType(batch, _I32)], {"mode": _char(mode)}, {0: 0})
    ok = _ok(ctx, info, batch)
    outs = [_nan_unless(ctx, ok, batch, s, s_aval)]
    if compute_uv:
        outs += [_nan_unless(ctx, ok, batch, u, u_aval), _nan_unless(ctx, ok, batch, vt, vt_aval)]
    return outs


def _empty_svd(ctx: LoweringContext, out_avals: Avals) -> list[str]:
    """No singular values; U and V^H identities of their shapes."""
    outs = [ctx.constant(np.zeros(out_avals[0].shape, out_avals[0].dtype), out_avals[0])]
    for a in out_avals[1:]:
        eye = np.broadcast_to(np.eye(a.shape[-2], a.shape[-1], dtype=a.dtype), a.shape)
        outs.append(ctx.constant(np.ascontiguousarray(eye), a))
    return outs


def lu(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals
       ) -> list[str]:
    """``getrf``: the factors and LAPACK's 1-based pivots (made 0-based); NaN
    where ``info`` reports an illegal argument (a singular matrix, info > 0,
    keeps its factors). Returns the factors and the pivots; the permutation
    is lowered from the pivots by the caller."""
    aval = in_avals[0]
    lu_aval, pivot_aval = out_avals[0], out_avals[1]
    batch = tuple(aval.shape[:-2])
    info_aval = ArrayType(batch, _I32)
    factors, pivots, info = ffi_call(ctx, _target("getrf", aval.dtype), operands, in_avals,
                                     [lu_aval, pivot_aval, info_aval], {}, {0: 0})
    scalar = ArrayType((), _I32)
    one = ctx.broadcast(ctx.constant(np.ones((), _I32), scalar), scalar, pivot_aval, ())
    pivots = ctx.op("stablehlo.subtract", [pivots, one], [pivot_aval, pivot_aval], pivot_aval)
    zeros = ctx.broadcast(ctx.constant(np.zeros((), _I32), scalar), scalar, info_aval, ())
    t = tensor_type(info_aval)
    ok = ctx.line(f"stablehlo.compare GE, {info}, {zeros}, SIGNED : ({t}, {t}) -> "
                  f"{tensor_type(ArrayType(batch, _BOOL))}")
    return [_nan_unless(ctx, ok, batch, factors, lu_aval), pivots]


def eig(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
        compute_left_eigenvectors: bool, compute_right_eigenvectors: bool,
        enable_eigvec_derivs: bool, implementation: Any) -> list[str]:
    """``geev`` with the vectors asked for (mode ``V``, else ``N``); a real
    operand's eigenvalues come as real and imaginary parts, joined by
    ``stablehlo.complex``; NaN where ``info != 0``."""
    if implementation is not None and "LAPACK" not in str(implementation):
        raise ValueError("Only the lapack implementation is supported on CPU.")
    aval = in_avals[0]
    batch = tuple(aval.shape[:-2])
    w_aval = out_avals[0]
    vec_aval = ArrayType(aval.shape, w_aval.dtype)
    real = np.dtype(aval.dtype).kind == "f"
    parts = [ArrayType(aval.shape[:-1], aval.dtype)] * (2 if real else 1)
    attrs = {"compute_left": _char("V" if compute_left_eigenvectors else "N"),
             "compute_right": _char("V" if compute_right_eigenvectors else "N")}
    *w, vl, vr, info = ffi_call(ctx, _target("geev", aval.dtype), operands, in_avals,
                                [*parts, vec_aval, vec_aval, ArrayType(batch, _I32)], attrs, {})
    if real:
        w = [ctx.line(f"stablehlo.complex {w[0]}, {w[1]} : {tensor_type(w_aval)}")]
    ok = _ok(ctx, info, batch)
    outs = [_nan_unless(ctx, ok, batch, w[0], w_aval)]
    if compute_left_eigenvectors:
        outs.append(_nan_unless(ctx, ok, batch, vl, vec_aval))
    if compute_right_eigenvectors:
        outs.append(_nan_unless(ctx, ok, batch, vr, vec_aval))
    return outs


def tridiagonal_solve(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                      out_avals: Avals, *, perturb_singular: bool) -> list[str]:
    """``gtsv`` (each operand aliased to its overwritten result), NaN where
    ``info != 0``; ``perturb_singular`` calls jaxlib's
    ``tridiagonal_solve_perturbed_ffi``."""
    b_aval = in_avals[3]
    if perturb_singular:
        return ffi_call(ctx, "tridiagonal_solve_perturbed_ffi", operands, in_avals, [b_aval],
                        {}, {})
    batch = tuple(b_aval.shape[:-2])
    *_, x, info = ffi_call(ctx, _target("gtsv", b_aval.dtype), operands, in_avals,
                           [*in_avals, ArrayType(batch, _I32)], {}, {0: 0, 1: 1, 2: 2, 3: 3})
    return [_nan_unless(ctx, _ok(ctx, info, batch), batch, x, out_avals[0])]


def householder_product(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                        out_avals: Avals) -> list[str]:
    """``orgqr`` (``ungqr`` for complex), a aliased to the result."""
    aval = in_avals[0]
    routine = "ungqr" if np.dtype(aval.dtype).kind == "c" else "orgqr"
    return ffi_call(ctx, _target(routine, aval.dtype), operands, in_avals, [out_avals[0]], {},
                    {0: 0})


def hessenberg(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
               out_avals: Avals) -> list[str]:
    """``gehrd`` over rows and columns ``low = 1`` to ``high = n`` (i32
    attributes), a aliased to its overwritten result; NaN where
    ``info != 0``."""
    aval = in_avals[0]
    batch = tuple(aval.shape[:-2])
    a, taus, info = ffi_call(ctx, _target("gehrd", aval.dtype), operands, in_avals,
                             [*out_avals, ArrayType(batch, _I32)], {}, {0: 0},
                             i32_attributes={"high": int(aval.shape[-1]), "low": 1})
    ok = _ok(ctx, info, batch)
    return [_nan_unless(ctx, ok, batch, a, out_avals[0]),
            _nan_unless(ctx, ok, batch, taus, out_avals[1])]


def schur(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
          *, compute_schur_vectors: bool, sort_eig_vals: bool, select_callable: Any
          ) -> list[str]:
    """``gees`` in mode ``V`` (or ``N``) without sorting, x aliased to the
    Schur form; its eigenvalues (real and imaginary parts for a real x) and
    ``sdim`` unused; NaN where ``info != 0``."""
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                                  "implemented.")
    aval = in_avals[0]
    batch = tuple(aval.shape[:-2])
    real = np.dtype(aval.dtype).kind == "f"
    eigvals = [ArrayType(aval.shape[:-1], aval.dtype)] * (2 if real else 1)
    info_aval = ArrayType(batch, _I32)
    attrs = {"mode": _char("V" if compute_schur_vectors else "N"), "sort": _char("N")}
    t, q, *_, info = ffi_call(ctx, _target("gees", aval.dtype), operands, in_avals,
                              [aval, aval, *eigvals, info_aval, info_aval], attrs, {0: 0})
    ok = _ok(ctx, info, batch)
    outs = [_nan_unless(ctx, ok, batch, t, out_avals[0])]
    if compute_schur_vectors:
        outs.append(_nan_unless(ctx, ok, batch, q, out_avals[1]))
    return outs


def tridiagonal(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                out_avals: Avals, *, lower: bool) -> list[str]:
    """``sytrd``/``hetrd`` on one triangle (``uplo``), a aliased to its
    overwritten result; NaN where ``info != 0``."""
    aval = in_avals[0]
    batch = tuple(aval.shape[:-2])
    routine = "hetrd" if np.dtype(aval.dtype).kind == "c" else "sytrd"
    *outs, info = ffi_call(ctx, _target(routine, aval.dtype), operands, in_avals,
                           [*out_avals, ArrayType(batch, _I32)],
                           {"uplo": _char("L" if lower else "U")}, {0: 0})
    ok = _ok(ctx, info, batch)
    return [_nan_unless(ctx, ok, batch, x, a) for x, a in zip(outs, out_avals)]


def ormqr(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
          left: bool, transpose: bool) -> list[str]:
    """``ormqr`` (``unmqr`` for complex) with boolean ``left``/``transpose``
    backend attributes, c aliased to the result."""
    aval = in_avals[0]
    routine = "unmqr" if np.dtype(aval.dtype).kind == "c" else "ormqr"
    return ffi_call(ctx, _target(routine, aval.dtype), operands, in_avals, [out_avals[0]], {},
                    {2: 0}, bool_attributes={"left": left, "transpose": transpose})
