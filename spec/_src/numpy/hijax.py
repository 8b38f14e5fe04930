"""jnp functions that JAX 0.12 stages as hijax primitives (user-style
``HiPrim`` subclasses, ``spec._src.api.hijax``): ``SearchSorted`` (under
``jnp.searchsorted`` and what calls it) and ``Nonzero`` (under
``jnp.nonzero``, ``argwhere``, ``flatnonzero`` and one-argument ``where``).

Each prints as ``ClassName[params] operands`` in jaxprs. Their results are
integers: the JVP rule gives float0 tangents that are arrays, not symbolic
zeros (as JAX's rules do), so a staged function applied to them later still
counts as having a nonzero input tangent (one structured-residual entry per
such jit); the VJP rule saves nothing and returns zero cotangents.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.api.hijax import HiPrim, linearize_from_jvp
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
    """``x < y`` in lax.sort's total order (NaNs last; complex by real part,
    then imaginary part)."""
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
    return lr.reduce_sum(ew.convert_element_type(before, dtype), (0,))


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
    return ew.convert_element_type(high, dtype)


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
    return ew.convert_element_type(L.reshape(ew.sub(index, _ranks(flat)), qshape), dtype)


_METHODS = {"scan": _binary_search, "scan_unrolled": _binary_search,
            "compare_all": _count_before, "sort": _cosort}


def _insertion_indices(sorted_1d: Any, query: Any, side: str, method: str,
                       dtype: T.DType) -> Any:
    if canonical_aval_of(sorted_1d).shape[0] == 0:
        return L.full(canonical_aval_of(query).shape, 0, dtype)
    return _METHODS[method](sorted_1d, query, side, dtype)


class SearchSorted(HiPrim):
    """Insertion indices of ``query`` into ``sorted_arr``, sorted along
    ``dimension``, with ``batch_dims`` leading axes shared by both."""

    valid_methods = ("compare_all", "scan", "scan_unrolled", "sort")

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
