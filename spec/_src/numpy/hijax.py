"""jnp functions that JAX 0.12 stages as hijax primitives (user-style
``HiPrim`` subclasses, ``spec._src.api.hijax``): ``SearchSorted`` (under
``jnp.searchsorted`` and what calls it) and ``Nonzero`` (under
``jnp.nonzero``, ``argwhere``, ``flatnonzero`` and one-argument ``where``).
(``Ldexp`` and ``Frexp``, under ``jnp.ldexp``/``jnp.frexp``, live with those
functions in ``spec._src.numpy.math``, which this module's imports reach.)

Each prints as ``ClassName[params] operands`` in jaxprs. Their results are
integers: the JVP rule gives float0 tangents that are arrays, not symbolic
zeros (as JAX's rules do), so a staged function applied to them later still
counts as having a nonzero input tangent (one structured-residual entry per
such jit); the VJP rule saves nothing and returns symbolic zero
cotangents.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.api.hijax import HiPrim, linearize_from_jvp, printed_form
from spec._src.api.vmap import vmap
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.types import ArrayType
from spec._src.interpreters.ad_util import Zero
from spec._src.lax import elementwise as ew
from spec._src.lax import indexing as li
from spec._src.lax import reductions as lr
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.numpy import shape as jnp_shape


def _float0_like(aval: ArrayType) -> np.ndarray:
    return np.zeros(aval.shape, T.FLOAT0)


def _zero_cotangent(aval: ArrayType) -> Any:
    return Zero(aval.tangent_type())


# ------------------------------------------------------------ searchsorted

def _sort_lt(x: Any, y: Any) -> Any:
    """``x < y`` in lax.sort's total order (NaNs last, -0 == +0; complex by
    real part, then imaginary part)."""
    dt = canonical_aval_of(x).dtype
    if T.is_complex(dt):
        xr, yr, xi, yi = ew.real(x), ew.real(y), ew.imag(x), ew.imag(y)
        return ew.bitwise_or(_sort_lt(xr, yr), ew.bitwise_and(_sort_eq(xr, yr), _sort_lt(xi, yi)))
    if T.is_float(dt):
        return ew.bitwise_or(ew.lt(x, y), ew.bitwise_and(ew.bitwise_not(ew.ne(x, x)),
                                                          ew.ne(y, y)))
    return ew.lt(x, y)


def _sort_eq(x: Any, y: Any) -> Any:
    if T.is_float(canonical_aval_of(x).dtype):
        return ew.bitwise_or(ew.eq(x, y), ew.bitwise_and(ew.ne(x, x), ew.ne(y, y)))
    return ew.eq(x, y)


def _count_before(sorted_1d: Any, query: Any, side: str, dtype: T.DType) -> Any:
    """``compare_all``: the count of entries of the 1-D ``sorted_1d`` strictly
    before each query (``left``) or before or equal (``right``)."""
    n = canonical_aval_of(sorted_1d).shape[0]
    qshape = canonical_aval_of(query).shape
    col = L.reshape(sorted_1d, (n,) + (1,) * len(qshape))
    row = L.broadcast_in_dim(query, (1, *qshape), tuple(range(1, len(qshape) + 1)))
    before = (_sort_lt(col, row) if side == "left"
              else ew.bitwise_not(_sort_lt(row, col)))
    return lr.reduce_sum(L.convert_element_type(before, dtype), (0,))


def _element_at(sorted_1d: Any, index: Any) -> Any:
    """``sorted_1d[index]`` for an unsigned index array, clamped into range."""
    dnums = li.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))
    shape = canonical_aval_of(index).shape
    return li.gather(sorted_1d, L.reshape(index, (*shape, 1)), dnums, (1,), mode="clip")


def _binary_search(sorted_1d: Any, query: Any, side: str, dtype: T.DType) -> Any:
    """``scan``: a bisection of ceil(log2(n + 1)) halvings, on every query at
    once; on unsorted input it gives JAX's values, which counting does not."""
    n = canonical_aval_of(sorted_1d).shape[0]
    qshape = canonical_aval_of(query).shape
    unsigned = np.dtype(np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32)
    low, high = L.full(qshape, 0, unsigned), L.full(qshape, n, unsigned)
    two = L.full(qshape, 2, unsigned)
    for _ in range(int(np.ceil(np.log2(n + 1)))):
        mid = ew.add(low, ew.div(ew.sub(high, low), two))
        pivot = _element_at(sorted_1d, mid)
        # Left: go left when query <= pivot; right: when query < pivot.
        go_left = (ew.bitwise_not(_sort_lt(pivot, query)) if side == "left"
                   else _sort_lt(query, pivot))
        low, high = ew.select_n(go_left, mid, low), ew.select_n(go_left, high, mid)
    return L.convert_element_type(high, dtype)


def _ranks(x: Any) -> Any:
    """The position of each entry of the 1-D ``x`` in its stable sort: the
    inverse of the sorting permutation."""
    m = canonical_aval_of(x).shape[0]
    iota = L.broadcasted_iota(np.dtype(np.int32 if m <= np.iinfo(np.int32).max else np.int64),
                              (m,), 0)
    perm = lr.sort((x, iota), dimension=0, num_keys=1)[1]
    return lr.sort((perm, iota), dimension=0, num_keys=1)[1]


def _cosort(sorted_1d: Any, query: Any, side: str, dtype: T.DType) -> Any:
    """``sort``: ranks in the joint sort of the sorted entries and the queries
    (queries first for ``left``, last for ``right``) less the ranks among the
    queries alone."""
    n = canonical_aval_of(sorted_1d).shape[0]
    qshape = canonical_aval_of(query).shape
    flat = L.reshape(query, (int(np.prod(qshape, dtype=np.int64)),))
    q = canonical_aval_of(flat).shape[0]
    if side == "left":
        joint = _ranks(slicing.concatenate([flat, sorted_1d], 0))
        index = slicing.slice(joint, (0,), (q,))
    else:
        joint = _ranks(slicing.concatenate([sorted_1d, flat], 0))
        index = slicing.slice(joint, (n,), (n + q,))
    return L.convert_element_type(L.reshape(ew.sub(index, _ranks(flat)), qshape), dtype)


_METHODS = {"scan": _binary_search, "scan_unrolled": _binary_search,
            "compare_all": _count_before, "sort": _cosort}


def _insertion_indices(sorted_1d: Any, query: Any, side: str, method: str,
                       dtype: T.DType) -> Any:
    if canonical_aval_of(sorted_1d).shape[0] == 0:
        return L.full(canonical_aval_of(query).shape, 0, dtype)
    return _METHODS[method](sorted_1d, query, side, dtype)


@printed_form
class SearchSorted(HiPrim):
    """Insertion indices of ``query`` into ``sorted_arr``, sorted along
    ``dimension``, with ``batch_dims`` leading axes shared by both."""

    valid_methods = ("compare_all", "scan", "scan_unrolled", "sort")

    # The params, also attributes.
    side: str
    dimension: int
    batch_dims: int
    method: str

    def __init__(self, sorted_aval: ArrayType, query_aval: ArrayType, *, side: str,
                 dimension: int, batch_dims: int, method: str, out_dtype: T.DType) -> None:
        batch_dims = operator.index(batch_dims)
        if batch_dims < 0 or batch_dims >= sorted_aval.ndim:
            raise ValueError(f"batch_dims={batch_dims} must be in range "
                             f"[0, {sorted_aval.ndim})")
        dimension = operator.index(dimension)
        if not batch_dims <= dimension < sorted_aval.ndim:
            raise ValueError(f"dimension={dimension} must be in range [{batch_dims}, "
                             f"{sorted_aval.ndim})")
        if sorted_aval.dtype != query_aval.dtype:
            raise ValueError("dtypes of sorted_arr and query must match; got "
                             f"{sorted_aval.dtype} and {query_aval.dtype}")
        if side not in ("left", "right"):
            raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
        if method not in self.valid_methods:
            raise ValueError(f"invalid argument method={method!r}, expected one of "
                             f"{list(self.valid_methods)}")
        if sorted_aval.shape[:batch_dims] != query_aval.shape[:batch_dims]:
            raise ValueError(f"batch dimension sizes must match; got "
                             f"{sorted_aval.shape[:batch_dims]} != "
                             f"{query_aval.shape[:batch_dims]}")
        if not T.is_int(out_dtype):
            raise ValueError(f"out_dtype should be an integer type; got {out_dtype}")
        self.out_dtype = out_dtype
        self.in_avals = (sorted_aval, query_aval)
        # One index per query element and per unbatched axis of sorted_arr
        # other than ``dimension``, those leading.
        lead = sorted_aval.shape[:batch_dims]
        rest = tuple(d for i, d in enumerate(sorted_aval.shape)
                     if i >= batch_dims and i != dimension)
        shape = lead + rest + query_aval.shape[batch_dims:]
        self.out_aval = ArrayType(shape, out_dtype)
        self.params = dict(side=side, dimension=dimension, batch_dims=batch_dims,
                           method=method)
        super().__init__()

    @classmethod
    def from_printed(cls, params: dict[str, Any], in_avals: Any, out_avals: Any
                     ) -> SearchSorted:
        """The result dtype is not a param: the result's."""
        return cls(*in_avals, **params, out_dtype=out_avals[0].dtype)

    def expand(self, sorted_arr: Any, query: Any) -> Any:
        moved = jnp_shape.moveaxis(sorted_arr, self.dimension, -1)
        b = self.batch_dims
        rest = canonical_aval_of(moved).ndim - b - 1

        def one(s: Any, q: Any) -> Any:
            return _insertion_indices(s, q, self.side, self.method, self.out_dtype)

        # Batch axes map both operands; the other axes of sorted_arr map it
        # alone, query broadcast.
        fun: Any = one
        for _ in range(rest):
            fun = vmap(fun, in_axes=(0, None))
        for _ in range(b):
            fun = vmap(fun, in_axes=0)
        return fun(moved, query)

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        del axis_data
        sorted_arr, query = args
        b, dimension = self.batch_dims, self.dimension
        if dims[0] is None and dims[1] is None:
            out_dim = None
        elif dims[1] is None:
            sorted_arr = jnp_shape.moveaxis(sorted_arr, dims[0], b)
            dimension += 1
            out_dim = b
        elif dims[0] is None:
            query = jnp_shape.moveaxis(query, dims[1], b)
            out_dim = canonical_aval_of(sorted_arr).ndim - 1
        else:
            sorted_arr = jnp_shape.moveaxis(sorted_arr, dims[0], 0)
            query = jnp_shape.moveaxis(query, dims[1], 0)
            b, dimension, out_dim = b + 1, dimension + 1, 0
        prim = SearchSorted(canonical_aval_of(sorted_arr), canonical_aval_of(query),
                            side=self.side, dimension=dimension, batch_dims=b,
                            method=self.method, out_dtype=self.out_dtype)
        return prim(sorted_arr, query), out_dim

    def jvp(self, primals: Any, tangents: Any) -> Any:
        del tangents
        out = self(*primals)
        return out, _float0_like(self.out_aval)

    def vjp_fwd(self, nzs_in: Any, *args: Any) -> Any:
        return self(*args), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return tuple(_zero_cotangent(a) for a in self.in_avals)

    lin, linearized = linearize_from_jvp


def searchsorted(sorted_arr: Any, query: Any, *, side: str = "left", dimension: int = 0,
                 batch_dims: int = 0, method: str = "scan", dtype: Any = T.int32) -> Any:
    """Batch-aware insertion indices (JAX's ``hijax.searchsorted``)."""
    prim = SearchSorted(canonical_aval_of(sorted_arr), canonical_aval_of(query), side=side,
                        dimension=dimension, batch_dims=batch_dims, method=method,
                        out_dtype=np.dtype(dtype))
    return prim(sorted_arr, query)


# ----------------------------------------------------------------- nonzero

def _first_positions(mask_1d: Any, size: int) -> Any:
    """The flat positions of the first ``size`` true entries of the 1-D
    ``mask_1d`` (past the count: the length of the mask): slot k counts the
    entries whose running count of true entries is at most k."""
    running = lr.cumsum(L.convert_element_type(mask_1d, T.int32), 0)
    dnums = li.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
    n = canonical_aval_of(running).shape[0]
    counts = li.scatter_add(L.full((size,), 0, T.int32), L.reshape(running, (n, 1)),
                            L.full((n,), 1, T.int32), dnums, mode="drop")
    return lr.cumsum(counts, 0)


@printed_form
class Nonzero(HiPrim):
    """The indices along ``axes`` of the first ``size`` nonzero entries of
    ``a`` (per index of the other axes), padded with the fill values (0
    without them)."""

    # The params, also attributes.
    size: int
    axes: tuple[int, ...]
    out_dtype: T.DType

    def __init__(self, a_aval: ArrayType, *fill_avals: ArrayType, size: int,
                 axes: tuple[int, ...], out_dtype: T.DType) -> None:
        size = operator.index(size)
        if fill_avals and len(fill_avals) != len(axes):
            raise ValueError(f"Expected {len(axes)} fill values, got {len(fill_avals)}")
        if any(fv.dtype != out_dtype for fv in fill_avals):
            raise ValueError(f"Expected fill values to have dtype {out_dtype}, got "
                             f"{list(fill_avals)}")
        if size < 0:
            raise ValueError(f"size must be a positive integer; got size={size}")
        if not all(0 <= ax < a_aval.ndim for ax in axes):
            raise ValueError(f"axes out of range for array with {a_aval.ndim} dimensions:  "
                             f"axes={axes}")
        if len(axes) != len(set(axes)):
            raise ValueError(f"duplicate axes are not allowed: axes={axes}")
        batch_shape = tuple(d for i, d in enumerate(a_aval.shape) if i not in axes)
        self.in_avals = (a_aval, *fill_avals)
        self.out_aval = tuple(ArrayType((*batch_shape, size), out_dtype) for _ in axes)
        self.params = dict(size=size, axes=tuple(axes), out_dtype=out_dtype)
        super().__init__()

    def expand(self, a: Any, *fills: Any) -> Any:
        axes = tuple(sorted(self.axes))
        aval = canonical_aval_of(a)
        batch_axes = [i for i in range(aval.ndim) if i not in axes]
        batch_shape = tuple(aval.shape[i] for i in batch_axes)
        sub_shape = tuple(aval.shape[i] for i in axes)
        if not axes:
            return ()
        if aval.size == 0 or self.size == 0:
            return tuple(L.full((*batch_shape, self.size), 0, self.out_dtype) for _ in axes)
        moved = L.transpose(a, (*batch_axes, *axes))
        flat = L.reshape(moved, (*batch_shape, int(np.prod(sub_shape))))
        mask = flat if aval.dtype == T.bool_ else ew.ne(flat, L.full((), 0, aval.dtype))
        positions: Any = lambda m: _first_positions(m, self.size)  # noqa: E731
        for _ in batch_shape:
            positions = vmap(positions)
        flat_index = positions(mask)
        counts = lr.reduce_sum(L.convert_element_type(mask, T.int32), (len(batch_shape),))
        slot = L.broadcasted_iota(T.int32, (*batch_shape, self.size), len(batch_shape))
        padding = ew.ge(slot, L.broadcast_in_dim(counts, (*batch_shape, self.size),
                                                  tuple(range(len(batch_shape)))))
        strides = np.cumprod(sub_shape[::-1])[::-1] // np.asarray(sub_shape)
        out = []
        for i, (stride, dim) in enumerate(zip(strides.tolist(), sub_shape)):
            index = ew.rem(ew.div(flat_index, L.full((), stride, T.int32)),
                           L.full((), dim, T.int32))
            index = L.convert_element_type(index, self.out_dtype)
            fill = (L.broadcast_in_dim(fills[i], (*batch_shape, self.size),
                                       tuple(range(canonical_aval_of(fills[i]).ndim)))
                    if fills else L.full((*batch_shape, self.size), 0, self.out_dtype))
            out.append(ew.select_n(padding, index, fill))
        return tuple(out)

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        del axis_data
        a, *fills = args
        d_a, *d_fills = dims
        if d_a is None and all(d is None for d in d_fills):
            return self(*args), (None,) * len(self.axes)
        if d_a is None:
            size = next(canonical_aval_of(f).shape[d] for f, d in zip(fills, d_fills)
                        if d is not None)
            shape = canonical_aval_of(a).shape
            a = L.broadcast_in_dim(a, (size, *shape), tuple(range(1, len(shape) + 1)))
            d_a = 0
        if d_a != 0:
            a = jnp_shape.moveaxis(a, d_a, 0)
        axes = tuple(ax + 1 for ax in self.axes)
        ones = canonical_aval_of(a).ndim - len(axes) - 1
        moved = []
        for f, d in zip(fills, d_fills):
            if d is not None:
                f = jnp_shape.moveaxis(f, d, 0) if d != 0 else f
                f = L.reshape(f, (canonical_aval_of(f).shape[0],) + (1,) * ones)
            moved.append(f)
        prim = Nonzero(canonical_aval_of(a), *(canonical_aval_of(f) for f in moved),
                       size=self.size, axes=axes, out_dtype=self.out_dtype)
        return prim(a, *moved), (0,) * len(axes)

    def jvp(self, primals: Any, tangents: Any) -> Any:
        del tangents
        out = self(*primals)
        return out, tuple(_float0_like(a) for a in self.out_aval)

    def vjp_fwd(self, nzs_in: Any, *args: Any) -> Any:
        return self(*args), None

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return tuple(_zero_cotangent(a) for a in self.in_avals)

    lin, linearized = linearize_from_jvp


def nonzero(a: Any, *fills: Any, size: int, dtype: T.DType) -> tuple[Any, ...]:
    """The indices along every axis of ``a`` (JAX's ``hijax.nonzero``), with
    one fill value per axis or none."""
    axes = tuple(range(canonical_aval_of(a).ndim))
    prim = Nonzero(canonical_aval_of(a), *(canonical_aval_of(f) for f in fills), size=size,
                   axes=axes, out_dtype=dtype)
    return tuple(prim(a, *fills))
