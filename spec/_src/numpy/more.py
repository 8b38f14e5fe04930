"""More jnp functions: the wider NumPy surface, built on the other jnp modules.

Everything here is composed from existing ``spec.numpy`` / ``spec.lax``
functions (no new primitives). Functions that JAX 0.12 wraps in a visible
``jit`` are wrapped the same way where that is cheap (``_jit`` below), so the
jaxprs print alike; values, dtypes and weak types are what must match.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer, canonical_aval_of
from spec._src.lax import conv as lc
from spec._src.lax import elementwise_api as ew
from spec._src.lax import reductions as lr
from spec._src.lax import structural_api as L
from spec._src.lax.structural_api import canonicalize_axis
from spec._src.numpy import creation, indexing, linalg, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _named_jit
from spec._src.numpy.util import check_arraylike, promote_dtypes, to_weak_or_strong

__all__ = [
    "acos", "acosh", "append", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_count",
    "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "block", "broadcast_shapes",
    "column_stack", "concat", "cumulative_prod", "cumulative_sum", "delete", "diag_indices",
    "diag_indices_from", "diagflat", "diff", "dsplit", "dstack", "e", "ediff1d", "euler_gamma",
    "fliplr", "flipud", "geomspace", "hsplit", "index_exp", "indices", "inf", "insert",
    "isscalar", "iterable", "ix_", "logspace", "mask_indices", "matvec", "meshgrid", "nan",
    "newaxis", "pi", "resize", "rollaxis", "rot90", "s_", "tril_indices", "tril_indices_from",
    "trim_zeros", "triu_indices", "triu_indices_from", "unstack", "vander", "vecdot", "vecmat",
    "vsplit",
]

pi: float = np.pi
e: float = np.e
inf: float = np.inf
nan: float = np.nan
euler_gamma: float = np.euler_gamma
newaxis: None = None

Fn = Callable[..., Any]


# ===================================================================== helpers

def _aval(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)


def _ndim(x: Any) -> int:
    return _aval(x).ndim


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(_aval(x).shape)


def _dtype(x: Any) -> T.DType:
    return _aval(x).dtype


def _ensure(name: str, *args: Any) -> Any:
    """JAX's ``ensure_arraylike``: arrays and scalars only, returned as arrays."""
    check_arraylike(name, *args)
    out = [L.asarray(a) for a in args]
    return out[0] if len(out) == 1 else out


def _to_inexact(dt: T.DType) -> T.DType:
    """int64/uint64 -> float64, other ints and bool -> float32 (JAX's mapping)."""
    if T.is_inexact(dt):
        return dt
    return T.float64 if dt in (T.int64, T.uint64) else T.float32


def _promote_inexact(*args: Any) -> list[Any]:
    """JAX's ``promote_dtypes_inexact``: one common inexact (dtype, weak type)."""
    dtype, weak = T.result_type_and_weak(*args)
    return [to_weak_or_strong(a, _to_inexact(dtype), weak) for a in args]


def _promote(*args: Any) -> list[Any]:
    """JAX's ``promote_dtypes``."""
    if len(args) < 2:
        return [L.asarray(a) for a in args]
    return promote_dtypes(*args)


def _convert(x: Any, dtype: T.DType, weak: bool = False) -> Any:
    return to_weak_or_strong(x, dtype, weak)


def _concrete(x: Any, what: str) -> np.ndarray:
    """The value of ``x`` where it must be known at trace time."""
    if isinstance(x, Tracer):
        from spec._src.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {what}")
    if isinstance(x, Array):
        return np.asarray(x._value)
    return np.asarray(x)


def _index(x: Any, what: str) -> int:
    if isinstance(x, Tracer):
        _concrete(x, what)
    return operator.index(x)


def _jit(name: str, fn: Fn, statics: tuple[str, ...] = ()) -> Fn:
    """``fn`` staged as a visible ``jit`` equation named ``name``, as JAX does."""
    from spec._src.api.jit import jit
    fn.__name__ = fn.__qualname__ = name
    jitted: Fn = jit(fn, static_argnames=statics or None)
    return jitted


def _moveaxis(a: Any, src: int, dst: int) -> Any:
    return jnp_shape.moveaxis(a, src, dst)


# =========================================================== array-API aliases

def acos(x: Any, /) -> Any:
    return jnp_math.arccos(x)


def acosh(x: Any, /) -> Any:
    return jnp_math.arccosh(x)


def asin(x: Any, /) -> Any:
    return jnp_math.arcsin(x)


def asinh(x: Any, /) -> Any:
    return jnp_math.arcsinh(x)


def atan(x: Any, /) -> Any:
    return jnp_math.arctan(x)


def atanh(x: Any, /) -> Any:
    return jnp_math.arctanh(x)


def atan2(x1: Any, x2: Any, /) -> Any:
    return jnp_math.arctan2(x1, x2)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    check_arraylike("concat", *arrays)
    return jnp_shape.concatenate(arrays, axis=axis)


def bitwise_invert(x: Any, /) -> Any:
    return jnp_math.invert(x)


def bitwise_left_shift(x1: Any, x2: Any, /) -> Any:
    return jnp_math.left_shift(x1, x2)


def bitwise_right_shift(x1: Any, x2: Any, /) -> Any:
    return jnp_math.right_shift(x1, x2)


def _bitwise_count_fn(x: Any) -> Any:
    from spec._src.numpy.math import promote_args_numeric
    (x,) = promote_args_numeric("bitwise_count", x)
    # The count is of |x| (NumPy's definition), always as uint8.
    return jnp_shape.astype(ew.population_count(jnp_math.abs(x)), T.uint8)


_bitwise_count = _jit("bitwise_count", _bitwise_count_fn)


def bitwise_count(x: Any, /) -> Any:
    check_arraylike("bitwise_count", x)
    if not (T.is_int(_dtype(x)) or _dtype(x) == T.bool_):
        raise TypeError(f"bitwise_count requires an integer or boolean operand, got "
                        f"{_dtype(x).name}")
    return _bitwise_count(x)


def _cumulative(name: str, fn: Fn, x: Any, axis: int | None, dtype: Any,
                include_initial: bool, initial: int, promote: bool) -> Any:
    arr = _ensure(name, x)
    nd = _ndim(arr)
    if nd == 0:
        raise ValueError(f"{name}: the input must be non-scalar, but a scalar value or scalar "
                         "array was given.")
    if axis is None:
        if nd > 1:
            raise ValueError(f"{name}: the input array has rank {nd}, but axis was not set to "
                             "an explicit value; axis is only optional for one-dimensional "
                             "arrays.")
        axis = 0
    ax = canonicalize_axis(axis, nd)
    if dtype is None and promote and T.is_int(_dtype(arr)):
        # cumulative_sum widens small integers as sum does; cumulative_prod does not.
        from spec._src.numpy.reductions import promote_integer_dtype
        dtype = promote_integer_dtype(_dtype(arr))
    out = fn(arr, axis=ax, dtype=dtype)
    if include_initial:
        edge = list(_shape(arr))
        edge[ax] = 1
        out = L.concatenate([L.full(tuple(edge), initial, _dtype(out)), out], ax)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    return _cumulative("cumulative_sum", reductions.cumsum, x, axis, dtype, include_initial, 0, True)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    return _cumulative("cumulative_prod", reductions.cumprod, x, axis, dtype, include_initial, 1, False)


def _batch_letters(n: int) -> str:
    return "".join(chr(ord("a") + i) for i in range(n))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    a, b = _ensure("jnp.vecdot", x1, x2)
    sa, sb = _shape(a), _shape(b)
    try:
        n1, n2 = sa[axis], sb[axis]
    except IndexError:
        raise ValueError(f"vecdot: axis={axis} is out of bounds for shapes {sa} and {sb}"
                         ) from None
    if n1 != n2:
        raise ValueError(f"axes must match; got shapes {sa} and {sb} with axis={axis}")
    a = _moveaxis(a, axis, -1)
    b = _moveaxis(b, axis, -1)
    # conj(a) . b over the last axis, broadcasting the leading (batch) axes.
    batch = np.broadcast_shapes(_shape(a)[:-1], _shape(b)[:-1])
    a = jnp_shape.broadcast_to(a, (*batch, n1))
    b = jnp_shape.broadcast_to(b, (*batch, n1))
    letters = _batch_letters(len(batch))
    return linalg.einsum(f"{letters}z,{letters}z->{letters}", jnp_math.conj(a), b,
                      precision=precision, preferred_element_type=preferred_element_type)


def _matvec_fn(x1: Any, x2: Any) -> Any:
    a, b = _promote(x1, x2)
    if _ndim(a) < 2 or _ndim(b) < 1:
        raise ValueError(f"matvec: x1 must be at least 2-D and x2 at least 1-D, got shapes "
                         f"{_shape(a)} and {_shape(b)}")
    n, m = _shape(a)[-2:]
    if _shape(b)[-1] != m:
        raise ValueError(f"matvec: contracting dimensions differ: {_shape(a)} and {_shape(b)}")
    batch = np.broadcast_shapes(_shape(a)[:-2], _shape(b)[:-1])
    a = jnp_shape.broadcast_to(a, (*batch, n, m))
    b = jnp_shape.broadcast_to(b, (*batch, m))
    letters = _batch_letters(len(batch))
    return linalg.einsum(f"{letters}yz,{letters}z->{letters}y", a, b)


def _vecmat_fn(x1: Any, x2: Any) -> Any:
    a, b = _promote(x1, x2)
    if _ndim(a) < 1 or _ndim(b) < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-D and x2 at least 2-D, got shapes "
                         f"{_shape(a)} and {_shape(b)}")
    n, m = _shape(b)[-2:]
    if _shape(a)[-1] != n:
        raise ValueError(f"vecmat: contracting dimensions differ: {_shape(a)} and {_shape(b)}")
    batch = np.broadcast_shapes(_shape(a)[:-1], _shape(b)[:-2])
    a = jnp_shape.broadcast_to(jnp_math.conj(a), (*batch, n))
    b = jnp_shape.broadcast_to(b, (*batch, n, m))
    letters = _batch_letters(len(batch))
    return linalg.einsum(f"{letters}y,{letters}yz->{letters}z", a, b)


_matvec = _jit("matvec", _matvec_fn)
_vecmat = _jit("vecmat", _vecmat_fn)


def matvec(x1: Any, x2: Any, /) -> Any:
    check_arraylike("matvec", x1, x2)
    return _matvec(x1, x2)


def vecmat(x1: Any, x2: Any, /) -> Any:
    check_arraylike("vecmat", x1, x2)
    return _vecmat(x1, x2)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    arr = _ensure("unstack", x)
    if _ndim(arr) == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    return tuple(L.unstack(arr, axis=canonicalize_axis(axis, _ndim(arr))))


def isscalar(element: Any) -> bool:
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, Tracer)):
        return bool(np.ndim(element) == 0) if isinstance(element, np.ndarray) else \
            _ndim(element) == 0
    if getattr(element, "__jax_array__", None) is not None:
        return _ndim(creation.asarray(element)) == 0
    return False


def iterable(y: Any) -> bool:
    return bool(np.iterable(y))


# ============================================================== shape helpers

def _append_fn(arr: Any, values: Any, axis: int | None = None) -> Any:
    if axis is None:
        return jnp_shape.concatenate([jnp_shape.ravel(arr), jnp_shape.ravel(values)], 0)
    return jnp_shape.concatenate([arr, values], axis=axis)


_append = _jit("append", _append_fn, ("axis",))


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    check_arraylike("append", arr, values)
    return _append(arr, values, axis=None if axis is None else operator.index(axis))


def _diff_fn(a: Any, n: int = 1, axis: int = -1, prepend: Any = None,
             append: Any = None) -> Any:
    arr = a
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    nd = _ndim(arr)
    if nd == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    ax = canonicalize_axis(axis, nd)
    parts: list[Any] = []
    for extra, before in ((prepend, True), (append, False)):
        if extra is None:
            continue
        extra = _ensure("diff", extra)
        if _ndim(extra) == 0:
            edge = list(_shape(arr))
            edge[ax] = 1
            extra = jnp_shape.broadcast_to(extra, tuple(edge))
        parts.append((before, extra))
    combined = [p for b, p in parts if b] + [arr] + [p for b, p in parts if not b]
    if len(combined) > 1:
        arr = jnp_shape.concatenate(combined, ax)
    hi = tuple(slice(1, None) if i == ax else slice(None) for i in range(nd))
    lo = tuple(slice(None, -1) if i == ax else slice(None) for i in range(nd))
    # Booleans have no subtraction: NumPy (and JAX) take "changed" instead.
    op = jnp_math.not_equal if _dtype(arr) == T.bool_ else jnp_math.subtract
    for _ in range(n):
        arr = op(arr[hi], arr[lo])
    return arr


_diff = _jit("diff", _diff_fn, ("n", "axis"))


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    arr = _ensure("diff", a)
    n = _index(n, "'n' argument of jnp.diff")
    axis = _index(axis, "'axis' argument of jnp.diff")
    return _diff(arr, n=n, axis=axis, prepend=prepend, append=append)


def _ediff1d_fn(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    arr = jnp_shape.ravel(ary)
    out = ew.sub(arr[1:], arr[:-1])
    if to_begin is not None:
        out = jnp_shape.concatenate((jnp_shape.ravel(jnp_shape.astype(to_begin, _dtype(arr))), out))
    if to_end is not None:
        out = jnp_shape.concatenate((out, jnp_shape.ravel(jnp_shape.astype(to_end, _dtype(arr)))))
    return out


_ediff1d = _jit("ediff1d", _ediff1d_fn)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    arr = _ensure("ediff1d", ary)
    if _dtype(arr) == T.bool_:
        raise TypeError("ediff1d does not accept boolean input (sub of bool is undefined)")
    for extra in (to_end, to_begin):
        if extra is not None:
            check_arraylike("ediff1d", extra)
    return _ediff1d(arr, to_end, to_begin)


def fliplr(m: Any) -> Any:
    return jnp_shape.flip(_ensure("fliplr", m), 1)


def flipud(m: Any) -> Any:
    return jnp_shape.flip(_ensure("flipud", m), 0)


def _rot90_fn(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    nd = _ndim(m)
    if nd < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {_shape(m)}, which has ndim {nd}")
    ax1, ax2 = (canonicalize_axis(a, nd) for a in axes)
    if ax1 == ax2:
        raise ValueError(f"rot90: axes must be different, got {axes}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return jnp_shape.flip(jnp_shape.flip(m, ax1), ax2)
    perm = list(range(nd))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    if k == 1:
        return jnp_shape.transpose(jnp_shape.flip(m, ax2), perm)
    return jnp_shape.flip(jnp_shape.transpose(m, perm), ax2)


_rot90 = _jit("rot90", _rot90_fn, ("k", "axes"))


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    arr = _ensure("rot90", m)
    axes_t = tuple(operator.index(a) for a in axes)
    if len(axes_t) != 2:
        raise ValueError(f"rot90: axes must be a pair of ints, got {axes}")
    return _rot90(arr, k=operator.index(k), axes=axes_t)


def _rollaxis_fn(a: Any, axis: int, start: int = 0) -> Any:
    nd = _ndim(a)
    ax = canonicalize_axis(axis, nd)
    if not -nd <= start <= nd:
        raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
    if start < 0:
        start += nd
    if start > ax:
        start -= 1
    return jnp_shape.moveaxis(a, ax, start)


_rollaxis = _jit("rollaxis", _rollaxis_fn, ("axis", "start"))


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    arr = _ensure("rollaxis", a)
    start = _index(start, "'start' argument of jnp.rollaxis()")
    return _rollaxis(arr, axis=operator.index(axis), start=start)


def _as_sequence(name: str, tup: Any) -> list[Any]:
    """A stacking function's argument as a list of arrays: an array stands for
    the sequence of its leading-axis slices."""
    if isinstance(tup, (np.ndarray, Array, Tracer)):
        arr = L.asarray(tup)
        if _ndim(arr) == 0:
            raise ValueError(f"{name}: a 0-d array is not a sequence of arrays")
        return list(unstack(arr))
    check_arraylike(name, *tup)
    return [L.asarray(t) for t in tup]


def column_stack(tup: Any) -> Any:
    is_array = isinstance(tup, (np.ndarray, Array, Tracer))
    arrs = _as_sequence("column_stack", tup)
    if is_array and _ndim(L.asarray(tup)) >= 3:
        return jnp_shape.concatenate(arrs, axis=1)
    # As JAX: each entry of a <3-d array input becomes a column; list entries
    # become columns when they are 1-d (or scalars).
    cols = [jnp_shape.atleast_2d(a).T if (is_array or _ndim(a) < 2) else a for a in arrs]
    return jnp_shape.concatenate(cols, axis=1)


def dstack(tup: Any, dtype: Any = None) -> Any:
    arrs = _as_sequence("dstack", tup)
    return jnp_shape.concatenate([jnp_shape.atleast_3d(a) for a in arrs], axis=2, dtype=dtype)


def _split_along(name: str, ary: Any, sections: Any, axis: int, min_ndim: int) -> list[Any]:
    from spec._src.numpy.shape import _split
    arr = _ensure(name, ary)
    if _ndim(arr) < min_ndim:
        # JAX fails reading the missing axis of the shape: an IndexError.
        raise IndexError(f"{name} requires an array of at least {min_ndim} dimensions, got "
                         f"shape {_shape(arr)}")
    return _split(name, arr, sections, axis)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    arr = _ensure("hsplit", ary)
    return _split_along("hsplit", arr, indices_or_sections, 0 if _ndim(arr) == 1 else 1, 1)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    return _split_along("vsplit", ary, indices_or_sections, 0, 1)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    return _split_along("dsplit", ary, indices_or_sections, 2, 3)


def _atleast_nd(x: Any, n: int) -> Any:
    nd = _ndim(x)
    return x if nd >= n else L.expand_dims(x, tuple(range(n - nd)))


def _block_rec(xs: Any) -> tuple[Any, int]:
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")  # noqa: TRY004 (JAX raises ValueError)
    if isinstance(xs, list):
        if not xs:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        parts = [_block_rec(x) for x in xs]
        depth = parts[0][1]
        if any(d != depth for _, d in parts[1:]):
            raise ValueError("Mismatched list depths in jax.numpy.block")
        rank = builtins.max(depth, builtins.max(_ndim(p) for p, _ in parts))
        return jnp_shape.concatenate([_atleast_nd(p, rank) for p, _ in parts], axis=-depth), depth + 1
    return creation.asarray(xs), 1


def _block_fn(arrays: Any) -> Any:
    return _block_rec(arrays)[0]


_block = _jit("block", _block_fn)


def block(arrays: Any) -> Any:
    return _block(arrays)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    if not shapes:
        return ()
    tuples = [(s,) if np.ndim(s) == 0 else tuple(s) for s in shapes]
    dims = [tuple(operator.index(d) for d in s) for s in tuples]
    rank = builtins.max(len(s) for s in dims)
    padded = [(1,) * (rank - len(s)) + s for s in dims]
    out = []
    for sizes in zip(*padded):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(tuples)}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def _resize_fn(a: Any, new_shape: tuple[int, ...]) -> Any:
    arr = jnp_shape.ravel(a)
    new_size = math.prod(new_shape)
    size = math.prod(_shape(arr))
    if size == 0 or new_size == 0:
        return creation.zeros_like(arr, shape=new_shape)
    reps = -(-new_size // size)
    return jnp_shape.reshape(jnp_shape.tile(arr, reps)[:new_size], new_shape)


_resize = _jit("resize", _resize_fn, ("new_shape",))


def resize(a: Any, new_shape: Any) -> Any:
    check_arraylike("resize", a)
    shape = (operator.index(new_shape),) if np.ndim(new_shape) == 0 else tuple(
        operator.index(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"all elements of `new_shape` must be non-negative, got {shape}")
    return _resize(a, new_shape=shape)


def _axis_set(axis: Any, nd: int) -> set[int]:
    if axis is None:
        return set(range(nd))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return {canonicalize_axis(a, nd) for a in axes}


def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Any:
    arr = _ensure("trim_zeros", filt)
    value = _concrete(arr, "the `filt` argument of trim_zeros()")
    nd = value.ndim
    axes = _axis_set(axis, nd)
    mode = trim.lower()
    if not axes or ("f" not in mode and "b" not in mode):
        return arr
    idx = []
    nonzero = value != 0
    for ax in range(nd):
        if ax not in axes:
            idx.append(slice(None))
            continue
        mask = nonzero.any(axis=tuple(i for i in range(nd) if i != ax))
        if not mask.any():
            idx.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if "f" in mode else None
        stop = value.shape[ax] - int(mask[::-1].argmax()) if "b" in mode else None
        idx.append(slice(start, stop))
    return arr[tuple(idx)]


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
    a = _ensure("delete", arr)
    if axis is None:
        a = jnp_shape.ravel(a)
        axis = 0
    ax = canonicalize_axis(axis, _ndim(a))
    n = _shape(a)[ax]
    lead = (slice(None),) * ax
    if not isinstance(obj, (np.ndarray, Array, Tracer, slice, list, tuple)):
        try:
            i = operator.index(obj)
        except TypeError:
            pass
        else:
            i = canonicalize_axis(i, n)
            return jnp_shape.concatenate([a[lead + (slice(0, i),)], a[lead + (slice(i + 1, None),)]],
                                   axis=ax)
    if isinstance(obj, slice):
        obj = np.arange(n)[obj]
        assume_unique_indices = True
    check_arraylike("delete", a, obj)
    obj_dtype = _dtype(obj) if isinstance(obj, (Array, Tracer)) else np.asarray(obj).dtype
    if T.is_int(obj_dtype) and assume_unique_indices:
        # Traceable: the kept positions are 0..n-k-1 shifted past each deleted index.
        idx = jnp_shape.ravel(creation.asarray(obj))
        idx = jnp_math.clip(jnp_math.where(idx < 0, idx + n, idx), 0, n)
        idx = reductions.sort(idx)
        k = _shape(idx)[0]
        idx = idx - creation.arange(k, dtype=_dtype(idx))
        keep = creation.arange(n - k, dtype=_dtype(idx))
        keep = keep + reductions.sum(keep[None, :] >= idx[:, None], axis=0, dtype=_dtype(keep))
        return a[lead + (keep,)]
    value = _concrete(obj, "'obj' array argument of jnp.delete()")
    if np.issubdtype(value.dtype, np.integer):
        mask = np.ones(n, dtype=bool)
        mask[value] = False
    elif value.dtype == np.bool_:
        if value.shape != (n,):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~value
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={value.dtype}; must be integer "
                         "or bool.")
    return a[lead + (mask,)]


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    a = L.asarray(arr)
    if axis is None:
        a = jnp_shape.ravel(a)
        axis = 0
    ax = canonicalize_axis(_index(axis, "axis argument of jnp.insert()"), _ndim(a))
    n_input = _shape(a)[ax]
    if isinstance(obj, slice):
        indices = creation.arange(*obj.indices(n_input))
    else:
        indices = creation.asarray(obj)
    if _ndim(indices) > 1:
        raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar; got {obj}")
    if not T.is_int(_dtype(indices)):
        if math.prod(_shape(indices)) == 0 and not isinstance(obj, (Array, Tracer)):
            indices = jnp_shape.astype(indices, int)
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    vals = creation.array(values, ndmin=_ndim(a), dtype=_dtype(a), copy=False)
    if math.prod(_shape(indices)) == 1:
        first = jnp_shape.ravel(indices)[0]
        if _ndim(indices) == 0:
            vals = jnp_shape.moveaxis(vals, 0, ax)
        indices = creation.full(_shape(vals)[ax], first)
    n_insert = broadcast_shapes(_shape(indices), (_shape(vals)[ax],))[0]
    out_shape = list(_shape(a))
    out_shape[ax] += n_insert
    out = creation.zeros_like(a, shape=tuple(out_shape))
    indices = jnp_math.clip(jnp_math.where(indices < 0, indices + n_input, indices), 0, n_input)
    # Inserted item j lands at its index plus the number of inserts before it.
    values_ind = indices.at[reductions.argsort(indices)].add(
        creation.arange(n_insert, dtype=_dtype(indices)))
    arr_mask = creation.ones(n_input + n_insert, dtype=bool).at[values_ind].set(False)
    arr_ind = jnp_math.where(arr_mask, size=n_input)[0]
    lead = (slice(None),) * ax
    out = out.at[lead + (values_ind,)].set(vals)
    return out.at[lead + (arr_ind,)].set(a)


# =================================================================== creation

def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Any, ...]:
    check_arraylike("meshgrid", *xi)
    args = [L.asarray(x) for x in xi]
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(_ndim(a) != 1 for a in args):
        raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[_shape(a) for a in args]}")
    swap = indexing == "xy" and len(args) >= 2
    if swap:
        args[0], args[1] = args[1], args[0]
    sizes = [_shape(a)[0] for a in args]
    out = []
    for i, a in enumerate(args):
        shape = [1] * len(args) if sparse else list(sizes)
        shape[i] = sizes[i]
        out.append(L.broadcast_in_dim(a, tuple(shape), (i,)))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def indices(dimensions: Sequence[int], dtype: Any = None,
            sparse: bool = False) -> Any:
    dt = T.to_dtype(int if dtype is None else dtype, "indices")
    dims = tuple(_index(d, "dimensions argument of jnp.indices") for d in dimensions)
    n = len(dims)
    out = []
    for i, d in enumerate(dims):
        shape = (1,) * i + (d,) + (1,) * (n - i - 1) if sparse else dims
        out.append(L.broadcast_in_dim(L.iota(dt, d), shape, (i,)))
    if sparse:
        return tuple(out)
    return jnp_shape.stack(out, 0) if out else creation.array([], dtype=dt)


def _space_dtype(name: str, start: Any, stop: Any, dtype: Any) -> T.DType:
    if dtype is None:
        return _to_inexact(T.result_type_and_weak(start, stop)[0])
    return T.to_dtype(dtype, name)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    num = _index(num, "'num' argument of jnp.logspace")
    axis = _index(axis, "'axis' argument of jnp.logspace")
    dt = _space_dtype("logspace", start, stop, dtype)
    comp = _to_inexact(dt)
    a, b = _ensure("logspace", start, stop)
    lin = creation.linspace(jnp_shape.astype(a, comp), jnp_shape.astype(b, comp), num, endpoint=endpoint,
                       axis=axis)
    return L.convert_element_type(jnp_math.power(base, lin), dt)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    num = _index(num, "'num' argument of jnp.geomspace")
    axis = _index(axis, "'axis' argument of jnp.geomspace")
    dt = _space_dtype("geomspace", start, stop, dtype)
    comp = _to_inexact(dt)
    a, b = _ensure("geomspace", start, stop)
    a, b = jnp_shape.astype(a, comp), jnp_shape.astype(b, comp)
    sign = jnp_math.sign(a)
    res = sign * logspace(jnp_math.log10(a / sign), jnp_math.log10(b / sign), num, endpoint=endpoint,
                          base=10.0, dtype=comp, axis=0)
    nd = _ndim(res)
    ax = canonicalize_axis(axis, nd)
    if ax != 0:
        res = L.transpose(res, (*range(1, ax + 1), 0, *range(ax + 1, nd)))
    return L.convert_element_type(res, dt)


def _triu_size(n: int, m: int, k: int) -> int:
    """How many (i, j) in an n x m grid have j - i >= k."""
    if k < 0:
        return n * m - _triu_size(m, n, 1 - k)
    if k >= m:
        return 0
    mk = builtins.min(n, m - k)
    return mk * (mk + 1) // 2 + mk * (m - k - mk)


def _tri_indices(name: str, n: Any, k: Any, m: Any, lower: bool) -> tuple[Any, Any]:
    n = _index(n, f"n argument of jnp.{name}")
    k = _index(k, f"k argument of jnp.{name}")
    m = n if m is None else _index(m, f"m argument of jnp.{name}")
    if lower:
        mask, size = jnp_shape.tril(creation.ones((n, m)), k=k), _triu_size(m, n, -k)
    else:
        mask, size = jnp_shape.triu(creation.ones((n, m)), k=k), _triu_size(n, m, k)
    i, j = indexing.nonzero(mask, size=size)
    return i, j


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    return _tri_indices("tril_indices", n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    return _tri_indices("triu_indices", n, k, m, False)


def _shape_2d(name: str, arr: Any) -> tuple[int, ...]:
    if hasattr(arr, "shape"):
        shape = tuple(arr.shape)
    else:
        shape = _shape(_ensure(name, arr))
    if len(shape) != 2:
        raise ValueError(f"{name}: only 2-D inputs are accepted, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    s = _shape_2d("tril_indices_from", arr)
    return tril_indices(s[0], k=k, m=s[1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    s = _shape_2d("triu_indices_from", arr)
    return triu_indices(s[0], k=k, m=s[1])


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    n = _index(n, "'n' argument of jnp.diag_indices()")
    ndim = _index(ndim, "'ndim' argument of jnp.diag_indices()")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    # The smallest signed type that holds n, but never narrower than the default int.
    dt = T.default_int() if n <= np.iinfo(np.int32).max else T.int64
    return (L.iota(dt, n),) * ndim


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    a = _ensure("diag_indices_from", arr)
    nd = _ndim(a)
    if nd < 2:
        raise ValueError(f"input array must be at least 2-d, got shape {_shape(a)}")
    if len(set(_shape(a))) != 1:
        raise ValueError(f"All dimensions of input must be of equal length, got {_shape(a)}")
    return diag_indices(_shape(a)[0], ndim=nd)


def diagflat(v: Any, k: int = 0) -> Any:
    check_arraylike("diagflat", v)
    flat = jnp_shape.ravel(v)
    length = _shape(flat)[0]
    k = operator.index(k)
    size = length + builtins.abs(k)
    res = creation.zeros(size * size, dtype=_dtype(flat))
    i = creation.arange(0, size - builtins.abs(k))
    pos = i + k + i * size if k >= 0 else i + (i - k) * size
    return res.at[pos].set(flat).reshape(size, size)


def _vander_fn(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    if _ndim(x) != 1:
        raise ValueError(f"x must be a one-dimensional array, got shape {_shape(x)}")
    n = _shape(x)[0] if N is None else N
    if n < 0:
        raise ValueError(f"N must be nonnegative, got {n}")
    powers = L.iota(_dtype(x), n)
    if not increasing:
        powers = ew.sub(L.full((), n - 1, _dtype(x)), powers)
    return jnp_math.power(x[..., None], powers[None])


_vander = _jit("vander", _vander_fn, ("N", "increasing"))


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    arr = _ensure("vander", x)
    n = None if N is None else _index(N, "'N' argument of jnp.vander()")
    return _vander(arr, N=n, increasing=bool(increasing))


def ix_(*args: Any) -> tuple[Any, ...]:
    check_arraylike("ix", *args)
    arrs = [L.asarray(a) for a in args]
    n = len(arrs)
    out = []
    for i, a in enumerate(arrs):
        if _ndim(a) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{_shape(a)}")
        if _dtype(a) == T.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = _shape(a)[0]
        if shape[i] == 0:
            out.append(L.full(tuple(shape), 0, T.canonicalize_dtype(np.dtype(np.intp))))
        else:
            out.append(L.broadcast_in_dim(a, tuple(shape), (i,)))
    return tuple(out)


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: int | None = None) -> tuple[Any, Any]:
    i, j = indexing.nonzero(mask_func(creation.ones((n, n)), k), size=size)
    return i, j


# NumPy's index-expression builders; JAX re-exports the very same objects.
index_exp = np.index_exp
s_ = np.s_


# ================================================================= statistics

def _axis_tuple(axis: Any, nd: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(nd))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = tuple(canonicalize_axis(operator.index(a), nd) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return out


def _hashable_axis(axis: Any) -> Any:
    return axis if axis is None or isinstance(axis, int) else tuple(axis)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    axis = _hashable_axis(axis)
    if weights is None:
        arr = _ensure("average", a)
        (arr,) = _promote_inexact(arr)
        axes = _axis_tuple(axis, _ndim(arr))
        avg = reductions.mean(arr, axis=axis, keepdims=keepdims)
        count = math.prod(_shape(arr)[d] for d in axes)
        wsum = L.full((), count, _dtype(avg))
    else:
        arr, w = _ensure("average", a, weights)
        arr, w = _promote_inexact(arr, w)
        axes = _axis_tuple(axis, _ndim(arr))
        if _shape(arr) != _shape(w):
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            if _shape(w) != tuple(_shape(arr)[d] for d in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 f"specified axis: weights {_shape(w)}, a {_shape(arr)}, "
                                 f"axis {axis}")
            # Lay the weights along the reduced axes (in the order axis names them).
            w = jnp_shape.transpose(w, tuple(int(i) for i in np.argsort(axes)))
            w = jnp_shape.reshape(w, tuple(d if i in axes else 1 for i, d in enumerate(_shape(arr))))
        wsum = reductions.sum(w, axis=axis, keepdims=keepdims)
        avg = reductions.sum(arr * w, axis=axis, keepdims=keepdims) / wsum
    if returned:
        if _shape(avg) != _shape(wsum):
            wsum = jnp_shape.broadcast_to(wsum, _shape(avg))
        return avg, wsum
    return avg


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    arr = _ensure("ptp", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
    axis = _hashable_axis(axis)
    return ew.sub(reductions.max(arr, axis=axis, keepdims=keepdims),
                   reductions.min(arr, axis=axis, keepdims=keepdims))


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile_impl(a: Any, q: Any, axis: Any, method: str, keepdims: bool,
                   squash_nans: bool) -> Any:
    """Quantiles ``q`` of ``a`` along ``axis``: sort, then interpolate between
    the two order statistics around ``q * (n - 1)`` (NaN-free counts for
    the nan-variants)."""
    if method not in _QUANTILE_METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         f"'nearest' or 'inverted_cdf', got {method!r}")
    if method == "inverted_cdf":
        raise NotImplementedError("spec: quantile method='inverted_cdf' is not implemented")
    (a,) = _promote_inexact(a)
    if T.is_complex(_dtype(a)):
        raise ValueError("quantile does not support complex input, as the operation is "
                         "poorly defined.")
    if _ndim(q) > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {_shape(q)}")
    nd = _ndim(a)
    axes = _axis_tuple(axis, nd)
    # Move the reduced axes last and merge them into one of length n.
    rest = tuple(d for d in range(nd) if d not in axes)
    rest_shape = tuple(_shape(a)[d] for d in rest)
    n = math.prod(_shape(a)[d] for d in axes)
    a2 = jnp_shape.reshape(jnp_shape.transpose(a, rest + axes), (*rest_shape, n))
    qdt = _dtype(q)
    q_nd = _ndim(q)
    if squash_nans and n == 0:
        out_shape = rest_shape
    else:
        if squash_nans:
            a2 = jnp_math.where(jnp_math.isnan(a2), np.nan, a2)  # one NaN sign: they sort last
        else:
            a2 = jnp_math.where(reductions.any(jnp_math.isnan(a2), axis=-1, keepdims=True), np.nan, a2)
        a2 = lr.sort(a2, dimension=_ndim(a2) - 1, is_stable=False)
        if squash_nans:
            count = reductions.sum(jnp_math.logical_not(jnp_math.isnan(a2)), axis=-1, dtype=qdt)
            count = L.expand_dims(count, tuple(range(q_nd)))      # q dims first
            qq = L.expand_dims(q, tuple(range(q_nd, q_nd + len(rest_shape))))
        else:
            count = L.full((), n, qdt)
            qq = q
        pos = ew.mul(qq, ew.sub(count, L.full((), 1, qdt)))
        low, high = ew.floor(pos), ew.ceil(pos)
        high_w = ew.sub(pos, low)
        low_w = ew.sub(L.full((), 1, qdt), high_w)
        top = ew.sub(count, L.full((), 1, qdt))
        zero = L.full((), 0, qdt)
        low = ew.max(zero, ew.min(low, top))
        high = ew.max(zero, ew.min(high, top))
        full_q = (*_shape(q), *rest_shape)
        low_v = _take_last(a2, L.convert_element_type(low, T.default_int()), full_q)
        high_v = _take_last(a2, L.convert_element_type(high, T.default_int()), full_q)
        low_w = jnp_shape.broadcast_to(jnp_shape.reshape(low_w, _shape(low_w) + (1,) * (
            len(full_q) - _ndim(low_w))), full_q)
        high_w = jnp_shape.broadcast_to(jnp_shape.reshape(high_w, _shape(high_w) + (1,) * (
            len(full_q) - _ndim(high_w))), full_q)
        if method == "linear":
            res = ew.add(ew.mul(L.convert_element_type(low_v, qdt), low_w),
                          ew.mul(L.convert_element_type(high_v, qdt), high_w))
        elif method == "lower":
            res = low_v
        elif method == "higher":
            res = high_v
        elif method == "nearest":
            res = jnp_math.where(high_w <= 0.5, low_v, high_v)
        else:
            res = ew.mul(ew.add(low_v, high_v), L.full((), 0.5, _dtype(low_v)))
        out_shape = None
    if out_shape is not None:  # nanquantile of an empty reduction: all NaN
        res = L.full((*_shape(q), *out_shape), np.nan, _dtype(a))
    if keepdims:
        kept = tuple(1 if d in axes else s for d, s in enumerate(_shape(a)))
        res = jnp_shape.reshape(res, (*_shape(q), *kept))
    return L.convert_element_type(res, _dtype(a))


def _take_last(a2: Any, idx: Any, full_q: tuple[int, ...]) -> Any:
    """``a2[..., idx]`` with ``idx`` of shape q_shape (+ rest shape): the
    result has shape q_shape + rest shape."""
    q_nd = len(full_q) - (_ndim(a2) - 1)
    if _ndim(idx) == q_nd:  # one index per q, shared by every row
        picked = indexing.take(a2, jnp_shape.ravel(idx) if q_nd else idx, axis=-1)
        if q_nd:
            picked = jnp_shape.moveaxis(picked, -1, 0)
        return picked
    b = jnp_shape.broadcast_to(a2, (*full_q[:q_nd], *_shape(a2)))
    return indexing.take_along_axis(b, idx[..., None], axis=-1)[..., 0]


def _quantile_common(name: str, a: Any, q: Any, axis: Any, out: Any, overwrite_input: bool,
                     method: str, keepdims: bool, weights: Any, squash: bool) -> Any:
    arr, qa = _ensure(name, a, q)
    if weights is not None:
        raise NotImplementedError(f"spec: jnp.{name} with weights is not implemented")
    if overwrite_input or out is not None:
        raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")
    return _quantile_jit(arr, qa, axis=_hashable_axis(axis), method=method,
                         keepdims=bool(keepdims), squash_nans=squash)


_quantile_jit = _jit("quantile", _quantile_impl, ("axis", "method", "keepdims", "squash_nans"))


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    return _quantile_common("quantile", a, q, axis, out, overwrite_input, method, keepdims,
                            weights, False)


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None) -> Any:
    return _quantile_common("nanquantile", a, q, axis, out, overwrite_input, method, keepdims,
                            weights, True)


def _percent(name: str, q: Any) -> Any:
    check_arraylike(name, q)
    (qa,) = _promote_inexact(L.asarray(q))
    return qa / 100


def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None) -> Any:
    check_arraylike("percentile", a, q)
    return quantile(a, _percent("percentile", q), axis=axis, out=out,
                    overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                    weights=weights)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    check_arraylike("nanpercentile", a, q)
    return nanquantile(a, _percent("nanpercentile", q), axis=axis, out=out,
                       overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                       weights=weights)


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    arr = _ensure("median", a)
    if any(_shape(arr)[d] == 0 for d in _axis_tuple(_hashable_axis(axis), _ndim(arr))):
        raise ValueError("jax.numpy.median reduction axis must be non-empty")
    return quantile(arr, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                    keepdims=keepdims, method="midpoint")


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    arr = _ensure("nanmedian", a)
    return nanquantile(arr, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                       keepdims=keepdims, method="midpoint")


def _check_inexact_dtype(name: str, dtype: Any) -> None:
    if dtype is not None and not T.is_inexact(T.to_dtype(dtype, name)):
        raise ValueError(f"{name}: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: Any = None, aweights: Any = None,
        dtype: Any = None) -> Any:
    if y is not None:
        check_arraylike("cov", m, y)
        m, y = _promote_inexact(m, y)
        if _ndim(y) > 2:
            raise ValueError(f"y has more than 2 dimensions: shape {_shape(y)}")
    else:
        check_arraylike("cov", m)
        (m,) = _promote_inexact(L.asarray(m))
    if _ndim(m) > 2:
        raise ValueError(f"m has more than 2 dimensions: shape {_shape(m)}")
    _check_inexact_dtype("cov", dtype)
    x = jnp_shape.atleast_2d(m)
    if not rowvar and _ndim(m) != 1:
        x = x.T
    if _shape(x)[0] == 0:
        return jnp_shape.reshape(creation.array([]), (0, 0))
    if y is not None:
        yy = jnp_shape.atleast_2d(y)
        if not rowvar and _shape(yy)[0] != 1:
            yy = yy.T
        x = jnp_shape.concatenate((x, yy), axis=0)
    rows, cols = _shape(x)
    if cols == 0:
        return creation.full(() if rows == 1 else (rows, rows), np.nan, dtype=_dtype(x))
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fw = _ensure("cov", fweights)
        if _ndim(fw) > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if _shape(fw)[0] != cols:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not T.is_int(_dtype(fw)):
            raise TypeError(f"fweights must be integer, got {_dtype(fw).name}")
        w = jnp_math.abs(fw)
    aw = None
    if aweights is not None:
        aw = _ensure("cov", aweights)
        if _ndim(aw) > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if _shape(aw)[0] != cols:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = jnp_math.abs(aw)
        w = aw if w is None else w * aw
    if dtype is not None:
        x = jnp_shape.astype(x, dtype)
        w = None if w is None else jnp_shape.astype(w, dtype)
    avg, wsum = average(x, axis=1, weights=w, returned=True)
    wsum = wsum[0]
    if w is None:
        f: Any = cols - ddof
    elif ddof == 0:
        f = wsum
    elif aw is None:
        f = wsum - ddof
    else:
        f = wsum - ddof * reductions.sum(w * aw) / wsum
    x = x - avg[:, None]
    xt = x.T if w is None else (x * w[None, :]).T
    return jnp_shape.squeeze(jnp_math.true_divide(linalg.dot(x, jnp_math.conj(xt)), f))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    check_arraylike("corrcoef", x)
    _check_inexact_dtype("corrcoef", dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if _ndim(c) == 0:
        return jnp_math.divide(c, c)
    d = indexing.diagonal(c)
    std = jnp_shape.astype(jnp_math.sqrt(jnp_math.real(d)), _dtype(c))
    c = c / std[:, None] / std[None, :]
    re = jnp_math.clip(jnp_math.real(c), -1, 1)
    if T.is_complex(_dtype(c)):
        return ew.complex(re, jnp_math.clip(jnp_math.imag(c), -1, 1))
    return re


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                        weights: Any = None) -> Any:
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = creation.asarray(a)
    dt = _to_inexact(_dtype(arr))
    if np.ndim(bins) == 1:
        return creation.asarray(bins, dtype=dt)
    nbins = _index(bins, "bins argument of histogram_bin_edges")
    if range is None:
        range = [0, 1] if math.prod(_shape(arr)) == 0 else [reductions.min(arr), reductions.max(arr)]
    r = creation.asarray(range, dtype=dt)
    if _shape(r) != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    flat = ptp(r) == 0
    lo = jnp_math.where(flat, r[0] - 0.5, r[0])
    hi = jnp_math.where(flat, r[1] + 0.5, r[1])
    return creation.linspace(lo, hi, nbins + 1, dtype=dt)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool | None = None, out_sharding: Any = None) -> tuple[Any, Any]:
    if weights is None:
        check_arraylike("histogram", a, bins)
        (arr,) = _promote_inexact(L.asarray(a))
        w = creation.ones_like(arr)
    else:
        check_arraylike("histogram", a, bins, weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError(f"weights should have the same shape as a: {np.shape(weights)} vs "
                             f"{np.shape(a)}")
        arr, w = _promote_inexact(a, weights)
    edges = histogram_bin_edges(arr, bins, range, w)
    idx = searchsorted(edges, arr, side="right")
    nedges = _shape(edges)[0]
    # The last bin is closed: values equal to the right edge count in it.
    idx = jnp_math.where(arr == edges[-1], nedges - 1, idx)
    counts = creation.zeros(nedges, _dtype(w)).at[idx].add(w)[1:]
    if density:
        counts = counts / diff(edges) / reductions.sum(counts)
    return counts, edges


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None,
             out_sharding: Any = None) -> Any:
    arr = _ensure("bincount", x)
    if _dtype(arr) == T.bool_:
        arr = L.convert_element_type(arr, T.int32)
    if not T.is_int(_dtype(arr)):
        raise TypeError(f"x argument to bincount must have an integer type; got "
                        f"{_dtype(arr).name}")
    if _ndim(arr) != 1:
        raise ValueError(f"only 1-dimensional input supported, got shape {_shape(arr)}")
    minlength = _index(minlength, "argument 'minlength' of jnp.bincount")
    if length is None:
        value = _concrete(arr, "argument 'x' of jnp.bincount; pass a static `length` to use "
                          "it under jit")
        length = builtins.max(minlength, value.size and int(builtins.max(0, value.max())) + 1)
    else:
        length = _index(length, "argument 'length' of jnp.bincount")
    if weights is None:
        w: Any = L.full((), 1, T.default_int())
    else:
        w = _ensure("bincount", weights)
        if _shape(w) != _shape(arr):
            raise ValueError(f"type of weights must match type of x. Got typeof(x)="
                             f"{_aval(arr).str_short()} and typeof(weights)="
                             f"{_aval(w).str_short()}")
    return creation.zeros(length, _dtype(w)).at[jnp_math.clip(arr, 0)].add(w, mode="drop")


def _digitize_fn(x: Any, bins: Any, right: bool = False, method: str | None = None) -> Any:
    kw = {} if method is None else {"method": method}
    side = "left" if right else "right"
    n = _shape(bins)[0]
    return jnp_math.where(bins[-1] >= bins[0], searchsorted(bins, x, side=side, **kw),
                     n - searchsorted(bins[::-1], x, side=side, **kw))


_digitize = _jit("digitize", _digitize_fn, ("right", "method"))


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    xa, ba = _ensure("digitize", x, bins)
    right = bool(_concrete(right, "right argument of jnp.digitize()"))
    if _ndim(ba) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    if _shape(ba)[0] == 0:
        return creation.zeros_like(xa, dtype=T.int32)
    return _digitize(xa, ba, right=right, method=method)


# ======================================================== searching / sorting

def _sort_lt(x: Any, y: Any) -> Any:
    """``x < y`` in lax.sort's total order: NaNs after everything, -0 == +0;
    complex numbers compare by real part, then imaginary part."""
    if T.is_complex(_dtype(x)):
        xr, yr = jnp_math.real(x), jnp_math.real(y)
        return _sort_lt(xr, yr) | ((_sort_eq(xr, yr)) & _sort_lt(jnp_math.imag(x), jnp_math.imag(y)))
    if T.is_float(_dtype(x)):
        return (x < y) | (jnp_math.logical_not(jnp_math.isnan(x)) & jnp_math.isnan(y))
    return x < y


def _sort_eq(x: Any, y: Any) -> Any:
    if T.is_float(_dtype(x)):
        return (x == y) | (jnp_math.isnan(x) & jnp_math.isnan(y))
    return x == y


def _searchsorted_fn(a: Any, v: Any, side: str = "left", sorter: Any = None,
                     method: str = "scan") -> Any:
    if _ndim(a) != 1:
        raise ValueError(f"a should be 1-dimensional, got shape {_shape(a)}")
    if method not in ("scan", "scan_unrolled", "compare_all", "sort"):
        raise ValueError(f"Unsupported method: {method}")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    a, v = _promote(a, v)
    if sorter is not None:
        a = a[sorter]
    n = _shape(a)[0]
    dt = T.int64 if n > np.iinfo(np.int32).max else T.int32
    if n == 0:
        return creation.zeros(_shape(v), dt)
    # Every method counts the sorted entries that come before each query
    # (strictly before for side='left', before or equal for 'right').
    av = jnp_shape.reshape(a, (n,) + (1,) * _ndim(v))
    before = _sort_lt(av, v[None]) if side == "left" else jnp_math.logical_not(_sort_lt(v[None], av))
    return reductions.sum(before, axis=0, dtype=dt)


_searchsorted = _jit("searchsorted", _searchsorted_fn, ("side", "method"))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    if sorter is None:
        check_arraylike("searchsorted", a, v)
    else:
        check_arraylike("searchsorted", a, v, sorter)
    return _searchsorted(L.asarray(a), L.asarray(v), side=side, sorter=sorter,
                         method=method)


def _lexsort_dtype(n: int) -> T.DType:
    return T.int64 if n > np.iinfo(np.int32).max else T.default_int()


def lexsort(keys: Any, axis: int = -1, *, batch_size: int = 16) -> Any:
    batch_size = _index(batch_size, "batch_size argument of jnp.lexsort()")
    if batch_size < 1:
        raise ValueError(f"lexsort: batch_size must be positive, got {batch_size}")
    if isinstance(keys, (np.ndarray, Array, Tracer)):
        k = _ensure("lexsort", keys)
        if _ndim(k) == 0 or _shape(k)[0] == 0:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        key_list = list(L.unstack(k, 0)) if _ndim(k) > 1 else []
        if _ndim(k) == 1:
            return L.full((), 0, T.default_int())
    else:
        check_arraylike("lexsort", *keys)
        key_list = [L.asarray(x) for x in keys]
        if not key_list:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        if len({_shape(x) for x in key_list}) > 1:
            raise ValueError("all keys need to be the same shape")
        if _ndim(key_list[0]) == 0:
            return L.full((), 0, T.default_int())
    shape = _shape(key_list[0])
    ax = canonicalize_axis(axis, len(shape))
    iota = L.broadcasted_iota(_lexsort_dtype(shape[ax]), shape, ax)
    # The last key is the primary one; ties fall through to earlier keys,
    # then to the position (the sort is stable).
    out = lr.sort((*key_list[::-1], iota), dimension=ax, num_keys=len(key_list))
    return out[-1]


def _order_reversing(x: Any) -> Any:
    return ew.bitwise_not(x) if (T.is_int(_dtype(x)) or _dtype(x) == T.bool_) else ew.neg(x)


def _partition_prep(name: str, a: Any, kth: int, axis: int) -> tuple[Any, int, int]:
    arr = _ensure(name, a)
    if T.is_complex(_dtype(arr)):
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    ax = canonicalize_axis(axis, _ndim(arr))
    k = canonicalize_axis(kth, _shape(arr)[ax])
    return jnp_shape.swapaxes(arr, ax, -1), ax, k


def _partition_fn(a: Any, kth: int, axis: int = -1) -> Any:
    arr, ax, k = _partition_prep("partition", a, kth, axis)
    bottom = _order_reversing(lr.top_k(_order_reversing(arr), k + 1)[0])
    top = lr.top_k(arr, _shape(arr)[-1] - k - 1)[0]
    return jnp_shape.swapaxes(L.concatenate([bottom, top], _ndim(arr) - 1), -1, ax)


def _argpartition_fn(a: Any, kth: int, axis: int = -1) -> Any:
    arr, ax, k = _partition_prep("argpartition", a, kth, axis)
    n = _shape(arr)[-1]
    bottom = lr.top_k(_order_reversing(arr), k + 1)[1]
    # The rest are the positions not among ``bottom``, in increasing order:
    # top_k of a 0/1 marker (ties keep the lower index first).
    positions = L.broadcasted_iota(_dtype(bottom), (*_shape(arr)[:-1], 1, n), _ndim(arr))
    taken = reductions.any(bottom[..., :, None] == positions, axis=-2)
    marker = jnp_math.where(taken, np.float32(0), np.float32(1))
    top = lr.top_k(marker, n - k - 1)[1]
    return jnp_shape.swapaxes(L.concatenate([bottom, top], _ndim(arr) - 1), -1, ax)


_partition = _jit("partition", _partition_fn, ("kth", "axis"))
_argpartition = _jit("argpartition", _argpartition_fn, ("kth", "axis"))


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    return _partition(_ensure("partition", a), kth=operator.index(kth),
                      axis=operator.index(axis))


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    return _argpartition(_ensure("argpartition", a), kth=operator.index(kth),
                         axis=operator.index(axis))


def _to_complex(dt: T.DType) -> T.DType:
    if T.is_complex(dt):
        return dt
    return T.complex128 if dt in (T.float64, T.int64, T.uint64) else T.complex64


def _sort_complex_fn(a: Any) -> Any:
    out = lr.sort(a, dimension=_ndim(a) - 1)
    return L.convert_element_type(out, T.canonicalize_dtype(_to_complex(_dtype(out))))


_sort_complex = _jit("sort_complex", _sort_complex_fn)


def sort_complex(a: Any) -> Any:
    arr = _ensure("sort_complex", a)
    if _ndim(arr) == 0:
        raise ValueError("sort_complex requires an array of rank >= 1")
    return _sort_complex(arr)


__all__ += [
    "argpartition", "average", "bincount", "corrcoef", "cov", "digitize", "histogram",
    "histogram_bin_edges", "lexsort", "median", "nanmedian", "nanpercentile", "nanquantile",
    "partition", "percentile", "ptp", "quantile", "searchsorted", "sort_complex",
]


# =================================================================== set ops

_UNIQUE_HINT = ("To make jnp.unique() compatible with JIT and other transforms, you can "
                "specify a concrete value for the size argument, which will determine the "
                "output size.")


def _unique_sorted_mask(ar: Any, axis: int, equal_nan: bool) -> tuple[Any, Any, Any]:
    """The slices of ``ar`` along ``axis`` sorted lexicographically, a mask of
    the first of each run of equal slices, and the sorting permutation."""
    aux = jnp_shape.moveaxis(ar, axis, 0)
    if T.is_complex(_dtype(aux)):
        # One canonical NaN, so that complex NaNs compare (and sort) together.
        aux = jnp_math.where(jnp_math.isnan(aux), L.full((), np.nan, _dtype(aux)), aux)
    size, *rest = _shape(aux)
    inner = math.prod(rest)
    if inner == 0:
        size = builtins.min(size, 1)  # empty slices are all equal: keep at most one
        perm = creation.zeros(size, dtype=int)
    else:
        perm = lexsort(jnp_shape.reshape(aux, (size, inner)).T[::-1])
    aux = aux[perm]
    if math.prod(_shape(aux)):
        if T.is_inexact(_dtype(aux)) and equal_nan:
            def neq(x: Any, y: Any) -> Any:
                return ew.ne(x, y) & jnp_math.logical_not(jnp_math.isnan(x) & jnp_math.isnan(y))
        else:
            neq = ew.ne
        changed = reductions.any(neq(aux[1:], aux[:-1]), tuple(range(1, _ndim(aux))))
        mask = creation.ones(size, dtype=bool).at[1:].set(changed)
    else:
        mask = creation.zeros(size, dtype=bool)
    return aux, mask, perm


def _unique_impl(ar: Any, axis: int, return_index: bool = False, return_inverse: bool = False,
                 return_counts: bool = False, equal_nan: bool = True, size: int | None = None,
                 fill_value: Any = None, return_true_size: bool = False) -> Any:
    axis = canonicalize_axis(axis, _ndim(ar))
    if _shape(ar)[axis] == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _unique_sorted_mask(ar, axis, equal_nan)
    nonempty = math.prod(_shape(aux)) > 0
    if size is None:
        _concrete(mask, "The error arose in jnp.unique(). " + _UNIQUE_HINT)
        ind = indexing.nonzero(mask)[0]
    else:
        ind = indexing.nonzero(mask, size=size)[0]
    result = aux[ind] if nonempty else aux
    if size is not None and fill_value is not None:
        fill = jnp_shape.astype(L.asarray(fill_value), _dtype(result))
        if _shape(result)[0]:
            valid = L.expand_dims(creation.arange(size) < reductions.sum(mask),
                                    tuple(range(1, _ndim(result))))
            result = jnp_math.where(valid, result, fill)
        else:
            result = creation.full_like(result, fill, shape=(size, *_shape(result)[1:]))
    result = jnp_shape.moveaxis(result, 0, axis)
    ret: list[Any] = [result]
    if return_index:
        ret.append(perm[ind] if nonempty else perm)
    if return_inverse:
        if nonempty:
            inv = creation.zeros(_shape(mask), dtype=int).at[perm].set(reductions.cumsum(mask) - 1)
        else:
            inv = creation.zeros(_shape(ar)[axis], dtype=int)
        ret.append(inv)
    if return_counts:
        if nonempty:
            n = _shape(mask)[0]
            if size is None:
                idx = jnp_shape.concatenate([indexing.nonzero(mask)[0], creation.array([n])])
            else:
                idx = indexing.nonzero(mask, size=size + 1)[0]
                idx = idx.at[1:].set(jnp_math.where(idx[1:], idx[1:], n))
            ret.append(diff(idx))
        elif _shape(ar)[axis]:
            ret.append(creation.full((1,), _shape(ar)[axis], dtype=int))
        else:
            ret.append(creation.empty(0, dtype=int))
    if return_true_size:
        ret.append(reductions.sum(mask))
    return ret[0] if len(ret) == 1 else tuple(ret)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
    arr = _ensure("unique", ar)
    if size is None:
        _concrete(arr, "The error arose for the first argument of jnp.unique(). " +
                  _UNIQUE_HINT)
    else:
        size = _index(size, "The error arose for the size argument of jnp.unique(). " +
                      _UNIQUE_HINT)
    shape = _shape(arr)
    if axis is None:
        arr = jnp_shape.ravel(arr)
        ax = 0
    else:
        ax = canonicalize_axis(axis, _ndim(arr))
    out = _unique_impl(arr, ax, return_index, return_inverse, return_counts,
                       equal_nan=equal_nan, size=size, fill_value=fill_value)
    if return_inverse and axis is None:
        k = 2 if return_index else 1
        out = (*out[:k], jnp_shape.reshape(out[k], shape), *out[k + 1:])
    return out


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    return unique(_ensure("unique_values", x), equal_nan=False, size=size,
                  fill_value=fill_value)


def _result_tuple(name: str, fields: tuple[str, ...]) -> Any:
    import collections
    return collections.namedtuple(name, fields)


_UniqueCounts = _result_tuple("_UniqueCountsResult", ("values", "counts"))
_UniqueInverse = _result_tuple("_UniqueInverseResult", ("values", "inverse_indices"))
_UniqueAll = _result_tuple("_UniqueAllResult",
                           ("values", "indices", "inverse_indices", "counts"))


def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    v, c = unique(_ensure("unique_counts", x), return_counts=True, equal_nan=False, size=size,
                  fill_value=fill_value)
    return _UniqueCounts(values=v, counts=c)


def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    v, i = unique(_ensure("unique_inverse", x), return_inverse=True, equal_nan=False,
                  size=size, fill_value=fill_value)
    return _UniqueInverse(values=v, inverse_indices=i)


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    v, i, inv, c = unique(_ensure("unique_all", x), return_index=True, return_inverse=True,
                          return_counts=True, equal_nan=False, size=size,
                          fill_value=fill_value)
    return _UniqueAll(values=v, indices=i, inverse_indices=inv, counts=c)


def _in1d(ar1: Any, ar2: Any, invert: bool, method: str = "auto") -> Any:
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    a, b = _promote(ar1, ar2)
    a, b = jnp_shape.ravel(a), jnp_shape.ravel(b)
    if not math.prod(_shape(a)) or not math.prod(_shape(b)):
        return (creation.ones if invert else creation.zeros)(_shape(a), dtype=bool)
    # Every method gives the same answer; compare all pairs.
    if invert:
        return reductions.all(a[:, None] != b[None, :], axis=-1)
    return reductions.any(a[:, None] == b[None, :], axis=-1)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    el, te = _ensure("isin", element, test_elements)
    return jnp_shape.reshape(_in1d(el, te, invert=invert, method=method), _shape(el))


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    a, b = _ensure("union1d", ar1, ar2)
    if size is None:
        _concrete(a, "The error arose in union1d()")
        _concrete(b, "The error arose in union1d()")
    else:
        size = _index(size, "The error arose in union1d()")
    return unique(jnp_shape.concatenate((a, b), axis=None), size=size, fill_value=fill_value)


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    a, b = _ensure("setdiff1d", ar1, ar2)
    a, b = jnp_shape.ravel(a), jnp_shape.ravel(b)
    if size is None:
        _concrete(a, "The error arose in setdiff1d()")
    else:
        size = _index(size, "The error arose in setdiff1d()")
    fill = creation.full_like(a, 0 if fill_value is None else fill_value, shape=())
    n = math.prod(_shape(a))
    if n == 0 or size == 0:
        return creation.full_like(a, fill, shape=size or 0)
    if not assume_unique:
        a = unique(a, size=size and n)
    mask = _in1d(a, b, invert=True)
    if size is None:
        return a[mask]
    if not assume_unique:
        # unique(size=n) repeats its first value as padding: not part of the set.
        n_unique = n + 1 - reductions.sum(a == a[0])
        mask = jnp_math.where(creation.arange(n) < n_unique, mask, False)
    return jnp_math.where(creation.arange(size) < reductions.sum(mask), a[jnp_math.where(mask, size=size)],
                     fill)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    a, b = _ensure("intersect1d", ar1, ar2)
    a, b = _promote(a, b)
    a, b = jnp_shape.ravel(a), jnp_shape.ravel(b)
    if size is not None:
        return _intersect1d_size(a, b, assume_unique, return_indices,
                                 _index(size, "size argument of intersect1d"), fill_value)
    ind1 = ind2 = creation.arange(0)
    if not assume_unique:
        if return_indices:
            a, ind1 = unique(a, return_index=True)
            b, ind2 = unique(b, return_index=True)
        else:
            a, b = unique(a), unique(b)
    both = jnp_shape.concatenate((a, b))
    if return_indices:
        n = _shape(both)[0]
        iota = L.broadcasted_iota(T.int64 if n > np.iinfo(np.int32).max else T.int32,
                                    (n,), 0)
        aux, order = lr.sort((both, iota), dimension=0, num_keys=1)
    else:
        aux = reductions.sort(both)
    mask = aux[1:] == aux[:-1]
    common = aux[:-1][mask]
    if not return_indices:
        return common
    i1 = order[:-1][mask]
    i2 = order[1:][mask] - _shape(a)[0]
    if not assume_unique:
        i1, i2 = ind1[i1], ind2[i2]
    return common, i1, i2


def _intersect1d_size(a: Any, b: Any, assume_unique: bool, return_indices: bool, size: int,
                      fill_value: Any) -> Any:
    """Traceable intersect1d: the sorted common values, padded to ``size``
    (with ``fill_value``, else the smallest common value, else 0)."""
    if return_indices:
        raise NotImplementedError("spec: intersect1d(size=..., return_indices=True) is not "
                                  "implemented")
    n = _shape(a)[0]
    if assume_unique:
        ua, valid = reductions.sort(a), creation.ones(n, dtype=bool)
    elif n:
        ua, count = _unique_impl(a, 0, size=n, fill_value=0, return_true_size=True)
        valid = creation.arange(n) < count
    else:
        ua, valid = a, creation.zeros(0, dtype=bool)
    keep = valid & _in1d(ua, b, invert=False)
    if size == 0:
        return creation.zeros(size, _dtype(a))
    num = reductions.sum(keep)
    vals = ua[indexing.nonzero(keep, size=size, fill_value=0)[0]] if n else creation.zeros(size, _dtype(a))
    inside = creation.arange(size) < num
    if fill_value is None:
        vals = jnp_math.where(inside, vals, reductions.max(jnp_math.where(inside, vals, 0)))
        return jnp_math.where(inside, vals, reductions.min(vals))
    return jnp_math.where(inside, vals, fill_value)


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    a, b = _ensure("setxor1d", ar1, ar2)
    a, b = _promote(jnp_shape.ravel(a), jnp_shape.ravel(b))
    if size is not None:
        raise NotImplementedError("spec: setxor1d(size=...) is not implemented")
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = jnp_shape.concatenate((a, b))
    if math.prod(_shape(aux)) == 0:
        return aux
    aux = reductions.sort(aux)
    edge = creation.array([True])
    flag = jnp_shape.concatenate((edge, aux[1:] != aux[:-1], edge))
    return aux[flag[1:] & flag[:-1]]


__all__ += [
    "intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "unique", "unique_all",
    "unique_counts", "unique_inverse", "unique_values",
]


# ======================================================= selection / choice

def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    conds = [creation.asarray(c) for c in condlist]
    choices = _promote(creation.asarray(default), *[creation.asarray(c) for c in choicelist])
    # The first true condition wins; index 0 (the default) where none holds.
    stacked = jnp_shape.stack(jnp_shape.broadcast_arrays(False, *conds))
    idx = reductions.argmax(jnp_shape.astype(stacked, bool), axis=0)
    return ew.select_n(*jnp_shape.broadcast_arrays(idx, *choices))


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    items = [a, *choices]
    check_arraylike("choose", *items)
    idx, *opts = [L.asarray(v) for v in items]
    if not T.is_int(_dtype(idx)):
        raise ValueError(f"`a` array must be integer typed, got {_dtype(idx).name}")
    n = len(opts)
    if mode == "raise":
        value = _concrete(idx, "jnp.choose was jit-compiled with mode='raise'. Use "
                          "mode='wrap' or mode='clip' instead.")
        if np.any((value < 0) | (value >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = jnp_math.clip(idx, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    idx, *opts = jnp_shape.broadcast_arrays(idx, *opts)
    return creation.array(opts)[(idx, *indices(_shape(idx), sparse=True))]


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
    check_arraylike("compress", condition, a, fill_value)
    cond = jnp_shape.astype(L.asarray(condition), bool)
    arr = L.asarray(a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    if _ndim(cond) != 1:
        raise ValueError(f"condition must be a 1D array, got shape {_shape(cond)}")
    if axis is None:
        axis = 0
        arr = jnp_shape.ravel(arr)
    else:
        arr = jnp_shape.moveaxis(arr, axis, 0)
    n = _shape(arr)[0]
    cond, extra = cond[:n], cond[n:]
    arr = arr[:_shape(cond)[0]]
    if size is None:
        msg = ("The size argument of jnp.compress must be specified in order to use "
               "jnp.compress within JAX transformations like jax.jit.")
        c = _concrete(cond, msg)
        if _concrete(extra, msg).any():
            raise ValueError("condition contains entries that are out of bounds")
        result = arr[c]
    elif not 0 <= size <= _shape(arr)[0]:
        raise ValueError(f"size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={_shape(arr)[0]}")
    else:
        mask = L.expand_dims(cond, tuple(range(1, _ndim(arr))))
        arr = jnp_math.where(mask, arr, creation.array(fill_value, dtype=_dtype(arr)))
        result = arr[reductions.argsort(cond, stable=True, descending=True)][:size]
    return jnp_shape.moveaxis(result, 0, axis)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    check_arraylike("extract", condition, arr, fill_value)
    return compress(jnp_shape.ravel(condition), jnp_shape.ravel(arr), size=size, fill_value=fill_value)


def _put_along_axis_fn(arr: Any, indices: Any, values: Any, axis: int | None,
                       mode: str | None = None) -> Any:
    shape = _shape(arr)
    if axis is None:
        arr = jnp_shape.ravel(arr)
        ax = 0
    else:
        ax = canonicalize_axis(axis, _ndim(arr))
    if _ndim(arr) != _ndim(indices):
        raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={_ndim(arr)} and indices.ndim={_ndim(indices)}.")
    try:
        values = jnp_shape.broadcast_to(values, _shape(indices))
    except (ValueError, TypeError):
        raise ValueError("put_along_axis argument 'values' must be broadcastable to "
                         f"'indices'. Got values.shape={_shape(values)} and "
                         f"indices.shape={_shape(indices)}.") from None
    # Index every other axis by its own (broadcast) position.
    idx = []
    for d in range(_ndim(arr)):
        if d == ax:
            idx.append(indices)
        else:
            s = [1] * _ndim(arr)
            s[d] = _shape(indices)[d]
            idx.append(jnp_shape.reshape(creation.arange(_shape(indices)[d]), tuple(s)))
    out = arr.at[tuple(idx)].set(values, mode=mode)
    return jnp_shape.reshape(out, shape) if axis is None else out


_put_along_axis = _jit("put_along_axis", _put_along_axis_fn, ("axis", "mode"))


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True,
                   *, mode: str | None = None) -> Any:
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                         "arrays are immutable. Pass inplace=False to instead return an "
                         "updated array.")
    a, i, v = _ensure("put_along_axis", arr, indices, values)
    return _put_along_axis(a, i, v, axis=axis, mode=mode)


# ============================================================ linear algebra

def _kron_fn(a: Any, b: Any) -> Any:
    a, b = _promote(a, b)
    na, nb = _ndim(a), _ndim(b)
    if na < nb:
        a = L.expand_dims(a, tuple(range(nb - na)))
    elif nb < na:
        b = L.expand_dims(b, tuple(range(na - nb)))
    nd = _ndim(a)
    out_shape = tuple(x * y for x, y in zip(_shape(a), _shape(b)))
    ae = L.expand_dims(a, tuple(range(1, 2 * nd, 2)))
    be = L.expand_dims(b, tuple(range(0, 2 * nd, 2)))
    return jnp_shape.reshape(ew.mul(*jnp_shape.broadcast_arrays(ae, be)), out_shape)


_kron = _jit("kron", _kron_fn)


def kron(a: Any, b: Any) -> Any:
    check_arraylike("kron", a, b)
    return _kron(a, b)


def _cross_fn(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
              axis: int | None = None) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    a = jnp_shape.moveaxis(a, axisa, -1)
    b = jnp_shape.moveaxis(b, axisb, -1)
    if _shape(a)[-1] != 3 or _shape(b)[-1] != 3:
        raise ValueError(f"Dimension must be 3 for cross product, got shapes {_shape(a)} and "
                         f"{_shape(b)}")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = creation.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return jnp_shape.moveaxis(c, 0, axisc)


_cross = _jit("cross", _cross_fn, ("axisa", "axisb", "axisc", "axis"))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    check_arraylike("cross", a, b)
    return _cross(a, b, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis)


# ====================================================================== misc

def _gradient_fn(f: Any, *varargs: Any, axis: Any = None, edge_order: int | None = None
                 ) -> Any:
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not "
                                  "supported.")
    a, *spacing = _promote_inexact(f, *varargs)
    nd = _ndim(a)
    axes = tuple(range(nd)) if axis is None else tuple(
        canonicalize_axis(i, nd) for i in ((axis,) if isinstance(axis, int) else axis))
    if not axes:
        return []
    if builtins.min(_shape(a)[i] for i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                         "least 2 elements are required.")
    if not spacing:
        steps: list[Any] = [1.0] * len(axes)
    elif len(spacing) == 1:
        steps = spacing * len(axes)
    elif len(spacing) == len(axes):
        steps = list(spacing)
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    grads = [_gradient_along(a, h, ax) for ax, h in zip(axes, steps)]
    return grads[0] if len(axes) == 1 else grads


def _gradient_along(a: Any, h: Any, axis: int) -> Any:
    def sl(x: Any, start: int | None, stop: int | None) -> Any:
        return L.slice_in_dim(x, start, stop, axis=axis)
    upper = sl(a, 1, 2) - sl(a, 0, 1)
    lower = sl(a, -1, None) - sl(a, -2, -1)
    if np.ndim(h) == 0:
        inner = (sl(a, 2, None) - sl(a, None, -2)) * 0.5 / h
        lower = lower / h
        upper = upper / h
    elif np.ndim(h) == 1:
        if _shape(h)[0] != _shape(a)[axis]:
            raise ValueError("Spacing arrays must have the same length as the dimension along "
                             "which the gradient is calculated.")
        hs = [1] * _ndim(a)
        hs[axis] = _shape(h)[0]
        h = jnp_shape.reshape(h, tuple(hs))
        upper = upper / (sl(h, 1, 2) - sl(h, 0, 1))
        lower = lower / (sl(h, -1, None) - sl(h, -2, -1))
        dx1 = sl(h, 1, -1) - sl(h, 0, -2)
        dx2 = sl(h, 2, None) - sl(h, 1, -1)
        c0 = -dx2 / (dx1 * (dx1 + dx2))
        c1 = (dx2 - dx1) / (dx1 * dx2)
        c2 = dx1 / (dx2 * (dx1 + dx2))
        inner = c0 * sl(a, 0, -2) + c1 * sl(a, 1, -1) + c2 * sl(a, 2, None)
    else:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    return jnp_shape.concatenate((upper, inner, lower), axis=axis)


_gradient = _jit("gradient", _gradient_fn, ("axis", "edge_order"))


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None) -> Any:
    check_arraylike("gradient", f, *varargs)
    return _gradient(f, *varargs, axis=_hashable_axis(axis), edge_order=edge_order)


def _modf_fn(x: Any) -> tuple[Any, Any]:
    (x,) = _promote_inexact(x)
    whole = jnp_math.where(ew.ge(x, L.full((), 0, _dtype(x))), jnp_math.floor(x), jnp_math.ceil(x))
    return x - whole, whole


_modf = _jit("modf", _modf_fn)


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    arr = _ensure("modf", x)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    result: tuple[Any, Any] = _modf(arr)
    return result


def unravel_index(indices: Any, shape: Any) -> tuple[Any, ...]:
    idx = _ensure("unravel_index", indices)
    try:
        dims = list(shape)
    except TypeError:
        dims = [shape]
    if any(np.ndim(s) != 0 for s in dims):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    out: list[Any] = [0] * len(dims)
    for i, s in reversed(list(enumerate(dims))):
        idx, out[i] = jnp_math.divmod(idx, s)
    oob_pos = idx > 0
    oob_neg = creation.asarray(False) if T.is_unsigned_int(_dtype(idx)) else idx < -1
    # Out-of-range flat indices clip to the last (or first) position, as JAX.
    return tuple(jnp_math.where(oob_pos, s - 1, jnp_math.where(oob_neg, 0, i)) for s, i in zip(dims, out))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                         f"len(dims)={len(dims)}")
    dims_t = tuple(_index(d, "in `dims` argument of ravel_multi_index().") for d in dims)
    check_arraylike("ravel_multi_index", *multi_index)
    idx = [L.asarray(i) for i in multi_index]
    if dtype is None:
        dt = T.result_type_and_weak(int, *idx)[0]
    else:
        dt = T.to_dtype(dtype, "ravel_multi_index")
    if not T.is_int(dt):
        raise ValueError(f"dtype={dt} is not an integer type.")
    if math.prod(dims_t) - 1 > np.iinfo(dt).max:
        raise ValueError(f"jnp.ravel_multi_index: dtype={dt} not large enough to hold "
                         f"flattened index for dims={dims_t}.")
    for i in idx:
        if mode == "raise":
            _concrete(i, "ravel_multi_index was jit-compiled with mode='raise'. Use "
                      "mode='wrap' or mode='clip' instead.")
        if not T.is_int(_dtype(i)):
            raise TypeError(f"only int indices permitted, got {_dtype(i).name}")
    if mode == "raise":
        if any(np.any((_concrete(i, "") < 0) | (_concrete(i, "") >= d))
               for i, d in zip(idx, dims_t)):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [jnp_math.clip(i, 0, d - 1) for i, d in zip(idx, dims_t)]
    elif mode == "wrap":
        idx = [i % d for i, d in zip(idx, dims_t)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         "'ignore'.")
    if order == "F":
        strides = np.cumprod((1,) + dims_t[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims_t[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    result = creation.array(0, dtype=dt)
    for i, s in zip(idx, strides):
        result = result + jnp_shape.astype(i, dt) * int(s)
    return result


def _packbits_fn(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    bits01 = jnp_shape.astype(ew.ne(a, L.full((), 0, _dtype(a))), T.uint8)
    weights = creation.arange(8, dtype=T.uint8)
    if bitorder == "big":
        weights = weights[::-1]
    if axis is None:
        bits01 = jnp_shape.ravel(bits01)
        axis = 0
    bits01 = jnp_shape.swapaxes(bits01, axis, -1)
    rem = _shape(bits01)[-1] % 8
    if rem:
        bits01 = L.pad(bits01, np.uint8(0), [(0, 0, 0)] * (_ndim(bits01) - 1) +
                         [(0, 8 - rem, 0)])
    bits01 = jnp_shape.reshape(bits01, (*_shape(bits01)[:-1], _shape(bits01)[-1] // 8, 8))
    weights = L.expand_dims(weights, tuple(range(_ndim(bits01) - 1)))
    packed = jnp_shape.astype(reductions.sum(bits01 << weights, axis=-1), T.uint8)
    return jnp_shape.swapaxes(packed, axis, -1)


_packbits = _jit("packbits", _packbits_fn, ("axis", "bitorder"))


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    arr = _ensure("packbits", a)
    if not (T.is_int(_dtype(arr)) or _dtype(arr) == T.bool_):
        raise TypeError(f"Expected an input array of integer or boolean data type, got "
                        f"{_dtype(arr).name}")
    if bitorder not in ("little", "big"):
        raise ValueError(f"'order' must be either 'little' or 'big', got {bitorder!r}")
    return _packbits(arr, axis=axis, bitorder=bitorder)


def _unpackbits_fn(a: Any, axis: int | None = None, count: int | None = None,
                   bitorder: str = "big") -> Any:
    weights = creation.asarray(1) << creation.arange(8, dtype=T.uint8)
    if bitorder == "big":
        weights = weights[::-1]
    if axis is None:
        a = jnp_shape.ravel(a)
        axis = 0
    a = jnp_shape.swapaxes(a, axis, -1)
    w = L.expand_dims(weights, tuple(range(_ndim(a))))
    bits = jnp_shape.astype((a[..., None] & w) > 0, T.uint8)
    bits = jnp_shape.reshape(bits, (*_shape(bits)[:-2], -1))
    if count is not None:
        if count > _shape(bits)[-1]:
            bits = jnp_shape.pad(bits, [(0, 0)] * (_ndim(bits) - 1) + [(0, count - _shape(bits)[-1])])
        else:
            bits = bits[..., :count]
    return jnp_shape.swapaxes(bits, axis, -1)


_unpackbits = _jit("unpackbits", _unpackbits_fn, ("axis", "count", "bitorder"))


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    arr = _ensure("unpackbits", a)
    if _dtype(arr) != T.uint8:
        raise TypeError(f"Expected an input array of unsigned byte data type, got "
                        f"{_dtype(arr).name}")
    if bitorder not in ("little", "big"):
        raise ValueError(f"'order' must be either 'little' or 'big', got {bitorder!r}")
    return _unpackbits(arr, axis=axis, count=count, bitorder=bitorder)


def _unwrap_fn(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    p, period = _promote(p, period)
    if T.is_complex(_dtype(p)):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    if _shape(p)[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period // 2 if T.is_int(_dtype(p)) else period / 2
    dd = diff(p, axis=axis)
    ddmod = jnp_math.mod(dd + interval, period) - interval
    ddmod = jnp_math.where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = jnp_math.where(jnp_math.abs(dd) < discont, 0, ddmod - dd)
    ax = canonicalize_axis(axis, _ndim(p))
    head = L.slice_in_dim(p, 0, 1, axis=ax)
    tail = L.slice_in_dim(p, 1, None, axis=ax) + reductions.cumsum(correction, axis=ax)
    return jnp_shape.concatenate((head, tail), axis=ax)


_unwrap = _jit("unwrap", _unwrap_fn, ("axis",))


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    arr = _ensure("unwrap", p)
    return _unwrap(arr, discont, axis=operator.index(axis), period=period)


def array_equiv(a1: Any, a2: Any) -> Any:
    x, y = creation.asarray(a1), creation.asarray(a2)
    try:
        eq = jnp_math.equal(x, y)
    except ValueError:
        # As JAX: a ValueError means "not equivalent" (a TypeError propagates).
        return creation.array(False)
    return reductions.all(eq)


def _isreal_fn(x: Any) -> Any:
    i = jnp_math.imag(x)
    return ew.eq(i, L.full((), 0, _dtype(i)))


def _iscomplex_fn(x: Any) -> Any:
    i = jnp_math.imag(x)
    return ew.ne(i, L.full((), 0, _dtype(i)))


_isreal = _jit("isreal", _isreal_fn)
_iscomplex = _jit("iscomplex", _iscomplex_fn)


def isreal(x: Any) -> Any:
    return _isreal(x)


def iscomplex(x: Any) -> Any:
    return _iscomplex(x)


# NumPy's print-option helpers and array printers, re-exported as JAX does.
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
array_repr = np.array_repr
array_str = np.array_str


__all__ += [
    "array_equiv", "array_repr", "array_str", "choose", "compress", "cross", "extract",
    "get_printoptions", "gradient", "iscomplex", "isreal", "kron", "modf", "packbits",
    "printoptions", "put_along_axis", "ravel_multi_index", "select", "set_printoptions",
    "unpackbits", "unravel_index", "unwrap",
]


# ------------------------------------------------------------ 1-D convolutions

def _conv_1d(x: Any, y: Any, mode: str, op: str, precision: Any,
             preferred_element_type: Any) -> Any:
    """Full/same/valid 1-D convolution or correlation as one conv_general_dilated
    over (batch 1, feature 1, length) views; the shorter operand is the kernel."""
    if jnp_shape.ndim(x) != 1 or jnp_shape.ndim(y) != 1:
        raise ValueError(f"{op}() only supports 1-dimensional inputs, got shapes "
                         f"{jnp_shape.shape(x)} and {jnp_shape.shape(y)}.")
    from spec._src.numpy.math import promote_args, promote_args_inexact
    if preferred_element_type is None:  # NumPy's convolutions return inexact values
        x, y = promote_args_inexact(op, x, y)
    else:  # the caller picks the accumulation type: operands only agree in dtype
        x, y = promote_args(op, x, y)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    reverse_output = False
    if op == "correlate":
        y = jnp_math.conj(y)
        if x.shape[0] < y.shape[0]:
            x, y, reverse_output = y, x, True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = jnp_shape.flip(y)
    k = y.shape[0]
    pads = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}
    if mode not in pads:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = lc.conv_general_dilated(x[None, None, :], y[None, None, :], (1,), [pads[mode]],
                                   precision=precision,
                                   preferred_element_type=preferred_element_type)
    return out[0, 0, ::-1] if reverse_output else out[0, 0]


_conv_jit = _named_jit("_conv", _conv_1d, static_argnames=(
    "mode", "op", "precision", "preferred_element_type"))


def _convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    return _conv_jit(a, v, mode, "convolve", precision, preferred_element_type)


def _correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
               preferred_element_type: Any = None) -> Any:
    return _conv_jit(a, v, mode, "correlate", precision, preferred_element_type)


convolve = _named_jit("convolve", _convolve,
                     static_argnames=("mode", "precision", "preferred_element_type"))
correlate = _named_jit("correlate", _correlate,
                      static_argnames=("mode", "precision", "preferred_element_type"))

__all__ += ["convolve", "correlate"]


# ============================================ more surface (second batch)
# ComplexWarning, top_k, index tricks, interp, trapezoid, spacing, fill_diagonal,
# window functions, i0, polynomials, histogram2d/dd, frombuffer/fromstring, minmax.

ComplexWarning = np.exceptions.ComplexWarning


def _top_k(a: Any, k: int, axis: int = -1, mode: str = "largest") -> tuple[Any, Any]:
    arr = _ensure("top_k", a)
    if T.is_complex(_dtype(arr)):
        raise ValueError("top_k is not compatible with complex inputs.")
    if mode not in ("largest", "smallest"):
        raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
    axis = canonicalize_axis(axis, _ndim(arr))
    if mode == "largest":
        vals, idx = lr.top_k(arr, k, axis=axis)
        return vals, idx
    # The k smallest are the k largest of an order-reversed copy; undo after.
    vals, idx = lr.top_k(_order_reverse(arr), k, axis=axis)
    return _order_reverse(vals), idx


def _order_reverse(x: Any) -> Any:
    """A map that reverses the total order of x's dtype (its own inverse)."""
    if T.is_inexact(_dtype(x)):
        return ew.neg(x)
    # Integers and bool: ~x reverses the order (-x - 1 when signed) and cannot overflow.
    return ew.bitwise_not(x)


_top_k_jit = _named_jit("top_k", _top_k, static_argnames=("k", "axis", "mode"))


def top_k(a: Any, k: int, /, *, axis: int = -1, mode: str = "largest",
          sorted: bool = True) -> tuple[Any, Any]:
    return _top_k_jit(a, k, axis=axis, mode=mode)  # type: ignore[no-any-return]


# ----------------------------------------------------------- index tricks

def _concrete_scalar(v: Any, what: str) -> Any:
    if isinstance(v, Tracer):
        from spec._src.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(f"{what} must be concrete, got a traced value {v}")
    return v if v is None or isinstance(v, (int, float, complex)) else np.asarray(v).item()


def _grid_1d(s: slice, op: str) -> Any:
    """One slice of an index trick: arange, or linspace when the step is imaginary."""
    start = _concrete_scalar(s.start, f"slice start of jnp.{op}") or 0
    stop = _concrete_scalar(s.stop, f"slice stop of jnp.{op}")
    step = _concrete_scalar(s.step, f"slice step of jnp.{op}") or 1
    if np.iscomplex(step):  # 5j means "5 points, stop included"
        return creation.linspace(start, stop, int(abs(step)))
    return creation.arange(start, stop, step)


def _grid_parts(key: Any, op: str) -> list[Any]:
    parts = [_grid_1d(k, op) for k in key]
    return _promote(*parts) if len(parts) >= 2 else parts


class _MGrid:
    """jnp.mgrid: dense grids from slices, stacked on a new leading axis."""

    def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        parts = _grid_parts(key, "mgrid")
        if not parts:
            return creation.arange(0)
        return jnp_shape.stack(meshgrid(*parts, indexing="ij", sparse=False), 0)


class _OGrid:
    """jnp.ogrid: open (sparse) grids from slices, as a list."""

    def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        return list(meshgrid(*_grid_parts(key, "ogrid"), indexing="ij", sparse=True))


class _AxisConcat:
    """r_/c_: concatenate slices, arrays and scalars along an axis."""
    axis: int = 0
    ndmin: int = 1
    trans1d: int = -1
    op_name: str = "r_"

    def __getitem__(self, key: Any) -> Any:
        items: tuple[Any, ...] = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec: list[Any] = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self.op_name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")  # noqa: TRY004 (JAX raises ValueError)
            else:
                obj = creation.array(item, copy=False)
                item_ndim = _ndim(obj)
            obj = creation.array(obj, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # The item's own axes go where trans1d says among the ndmin axes.
                shift = ndmin - builtins.abs(ndmin + trans1d + 1) % ndmin
                order = tuple(range(ndmin))
                obj = jnp_shape.transpose(obj, order[shift:] + order[:shift])
            out.append(obj)
        res = jnp_shape.concatenate(tuple(out), axis=axis)
        if matrix != -1 and _ndim(res) == 1:
            res = jnp_shape.expand_dims(res, matrix)
        return res

    def __len__(self) -> int:
        return 0


class _RClass(_AxisConcat):
    pass


class _CClass(_AxisConcat):
    axis = -1
    ndmin = 2
    trans1d = 0
    op_name = "c_"


mgrid = _MGrid()
ogrid = _OGrid()
r_ = _RClass()
c_ = _CClass()


# ------------------------------------------------------------------ interp

def _interp(x: Any, xp: Any, fp: Any, left: Any, right: Any, period: Any) -> Any:
    x, xp, fp = _ensure("interp", x, xp, fp)
    if _shape(xp) != _shape(fp) or _ndim(xp) != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = _promote_inexact(x, xp)
    (fp,) = _promote_inexact(fp)
    ext_left = isinstance(left, str)
    ext_right = isinstance(right, str)
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', "
                             f"but got: {v!r}")
    if T.is_complex(_dtype(x)):
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = jnp_math.abs(period)
        x = x % period
        xp = xp % period
        xp, fp = lr.sort_key_val(xp, fp)
        # Wrap one point around each end so every x has a bracketing pair.
        xp = jnp_shape.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = jnp_shape.concatenate([fp[-1:], fp, fp[:1]])
    i = jnp_math.clip(searchsorted(xp, x, side="right"), 1, _shape(xp)[0] - 1)
    df = fp[i] - fp[i - 1]
    dx = xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    # Coincident xp points: take the left value rather than divide by ~0.
    eps = np.spacing(np.finfo(np.dtype(_dtype(xp))).eps)
    dx0 = jnp_math.abs(dx) <= eps
    f = jnp_math.where(dx0, fp[i - 1], fp[i - 1] + (delta / jnp_math.where(dx0, 1, dx)) * df)
    if not ext_left and period is None:
        f = jnp_math.where(x < xp[0], fp[0] if left is None else left, f)
    if not ext_right and period is None:
        f = jnp_math.where(x > xp[-1], fp[-1] if right is None else right, f)
    return f


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    statics = tuple(n for n, v in (("left", left), ("right", right), ("period", period))
                    if v is None or isinstance(v, str))
    fn = _jit("interp", _interp, statics)
    return fn(x, xp, fp, left=left, right=right, period=period)


# --------------------------------------------------------------- trapezoid

def _trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    if x is None:
        y = _ensure("trapezoid", y)
        (ya,) = _promote_inexact(y)
        dxa = L.asarray(dx)
        if _ndim(dxa) > 0:
            dxa = L.expand_dims(dxa, tuple(range(_ndim(ya) - _ndim(dxa))))
            dxa = jnp_shape.moveaxis(dxa, axis, -1)
    else:
        y, x = _ensure("trapezoid", y, x)
        ya, xa = _promote_inexact(y, x)
        dxa = diff(xa) if _ndim(xa) == 1 else jnp_shape.moveaxis(diff(xa, axis=axis), axis, -1)
    ya = jnp_shape.moveaxis(ya, axis, -1)
    if _ndim(dxa) == 0 or _shape(dxa)[-1] == 1:
        # Uniform spacing: dx * (sum - half the two end points).
        d = dxa if _ndim(dxa) == 0 else dxa[..., 0]
        return d * (reductions.sum(ya, -1) - 0.5 * (ya[..., 0] + ya[..., -1]))
    return 0.5 * reductions.sum(dxa * (ya[..., 1:] + ya[..., :-1]), -1)


_trapezoid_jit = _named_jit("trapezoid", _trapezoid, static_argnames=("axis",))


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    return _trapezoid_jit(y, x, dx, axis=axis)


# ----------------------------------------------------------------- spacing

def _spacing(x: Any) -> Any:
    from spec._src.numpy.math import promote_args_inexact
    (arr,) = promote_args_inexact("spacing", x)
    dt = _dtype(arr)
    if T.is_complex(dt):
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    inf = L.full_like(arr, np.inf)
    if dt == T.float16:  # JAX steps float16 towards +inf only
        return ew.nextafter(arr, inf) - arr
    res = ew.nextafter(arr, jnp_math.copysign(inf, arr)) - arr
    # A NumPy scalar, so strong-typed: JAX's result is strong even for weak x.
    tiny = np.finfo(np.dtype(dt)).smallest_subnormal
    return jnp_math.where(res == 0, jnp_math.copysign(tiny, arr), res)


spacing = _named_jit("spacing", _spacing)


# ----------------------------------------------------------- fill_diagonal

def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    a, val = _ensure("fill_diagonal", a, val)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and any(n != shape[0] for n in shape[1:]):
        raise ValueError(f"All dimensions of input must be of equal length, got {shape}")
    n = builtins.min(shape)
    idx = diag_indices(n, len(shape))
    if _ndim(val) == 0:
        return a.at[idx].set(val)
    flat = jnp_shape.ravel(val)
    size = _shape(flat)[0]
    if size == 0:  # JAX's tiling divides by the size of val
        raise ZeroDivisionError(f"fill_diagonal: val has shape {_shape(val)}, no values to "
                                f"fill a diagonal of length {n} with")
    reps = -(-n // size)
    return a.at[idx].set(jnp_shape.tile(flat, reps)[:n])


# --------------------------------------------------------- window functions

def _window(M: int, name: str) -> tuple[int, T.DType]:
    try:
        m = operator.index(M)
    except TypeError as err:
        from spec._src.core.errors import ConcretizationTypeError
        if isinstance(M, Tracer):
            raise ConcretizationTypeError(f"M argument of jnp.{name} must be concrete") from err
        raise
    return m, T.default_float()


def bartlett(M: int) -> Any:
    m, dt = _window(M, "bartlett")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return 1 - jnp_math.abs(2 * n + 1 - m) / (m - 1)


def blackman(M: int) -> Any:
    m, dt = _window(M, "blackman")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return (0.42 - 0.5 * jnp_math.cos(2 * np.pi * n / (m - 1))
            + 0.08 * jnp_math.cos(4 * np.pi * n / (m - 1)))


def hamming(M: int) -> Any:
    m, dt = _window(M, "hamming")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return 0.54 - 0.46 * jnp_math.cos(2 * np.pi * n / (m - 1))


def hanning(M: int) -> Any:
    m, dt = _window(M, "hanning")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    return 0.5 * (1 - jnp_math.cos(2 * np.pi * n / (m - 1)))


def kaiser(M: int, beta: Any) -> Any:
    m, dt = _window(M, "kaiser")
    if m <= 1:
        return L.full((m,), 1, dt)
    n = L.iota(dt, m)
    alpha = 0.5 * (m - 1)
    return i0(beta * jnp_math.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)


# ---------------------------------------------------------------------- i0
# Cephes' Chebyshev coefficients for exp(-|x|) I0(x) on [0, 8] and 8 < |x|.
_I0A: tuple[float, ...] = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
    -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11, 9.675809035373237e-11,
    -5.189795601635263e-10, 2.6598237246823866e-09, -1.300025009986248e-08,
    6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05,
    0.00018850288509584165, -0.0005763755745385824, 0.0016394756169413357,
    -0.004324309995050576, 0.010546460394594998, -0.02373741480589947, 0.04930528423967071,
    -0.09490109704804764, 0.17162090152220877, -0.3046826723431984, 0.6767952744094761,
)
_I0B: tuple[float, ...] = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15,
    3.8116806693526224e-15, -9.554846698828307e-15, -4.150569347287222e-14,
    1.54008621752141e-14, 3.8527783827421426e-13, 7.180124451383666e-13,
    -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05,
    0.0033691164782556943, 0.8044904110141088,
)


def _chbevl(t: Any, coeffs: tuple[float, ...]) -> Any:
    """Clenshaw's recurrence for a Chebyshev series at t (vectorised, traceable)."""
    b0 = creation.zeros_like(t)
    b1 = creation.zeros_like(t)
    b2 = b1
    for c in coeffs:
        b2, b1 = b1, b0
        b0 = t * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _i0(x: Any) -> Any:
    from spec._src.numpy.math import promote_args_inexact
    (x,) = promote_args_inexact("i0", x)
    dt = _dtype(x)
    if not T.is_float(dt):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {dt.name}")
    # Narrow floats are evaluated in float32 and rounded back, as XLA does.
    work = T.float32 if np.dtype(dt).itemsize < 4 else dt
    weak = _aval(x).weak_type
    ax = jnp_math.abs(x)
    wx = ax if work == dt else L.convert_element_type(ax, work)
    small = _chbevl(wx / 2 - 2, _I0A)
    safe = jnp_math.where(wx > 8, wx, 8)  # keeps the unused branch finite
    big = _chbevl(32 / safe - 2, _I0B) / jnp_math.sqrt(safe)
    i0e = jnp_math.where(wx <= 8, small, big)
    # exp(|x|) is taken in x's own dtype, so narrow floats overflow where JAX's do.
    return jnp_math.exp(ax) * _convert(i0e, dt, weak)


i0 = _named_jit("i0", _i0)


# ------------------------------------------------------------- polynomials

def _polyval(p: Any, x: Any) -> Any:
    p, x = _ensure("polyval", p, x)
    p, x = _promote(p, x)
    shape = tuple(np.broadcast_shapes(_shape(p)[1:], _shape(x)))
    if _shape(p)[0] == 0:
        return L.full_like(x, 0, shape=shape)
    # Horner's rule from the leading coefficient.
    y = jnp_shape.broadcast_to(p[0], shape)
    for i in range(1, _shape(p)[0]):
        y = y * x + p[i]
    # JAX evaluates through its `polynomial` primitive, whose result is never weak.
    return _convert(jnp_shape.broadcast_to(y, shape), _dtype(y), False)


_polyval_jit = _named_jit("polyval", _polyval)


def polyval(p: Any, x: Any, *, unroll: int | None = None) -> Any:
    return _polyval_jit(p, x)


def _polyadd(a1: Any, a2: Any) -> Any:
    a1, a2 = _ensure("polyadd", a1, a2)
    a1, a2 = _promote(a1, a2)
    if _ndim(a1) == 0 or _ndim(a2) == 0:  # JAX fails indexing a scalar's shape here
        raise IndexError(f"polyadd: coefficient arrays must be at least 1-d, got shapes "
                         f"{_shape(a1)} and {_shape(a2)}")
    if _shape(a2)[0] <= _shape(a1)[0]:
        return a1.at[-_shape(a2)[0]:].add(a2)
    return a2.at[-_shape(a1)[0]:].add(a1)


polyadd = _named_jit("polyadd", _polyadd)


def _polysub(a1: Any, a2: Any) -> Any:
    a1, a2 = _ensure("polysub", a1, a2)
    a1, a2 = _promote(a1, a2)
    return polyadd(a1, -a2)


polysub = _named_jit("polysub", _polysub)


def _polyder(p: Any, m: int = 1) -> Any:
    p = _ensure("polyder", p)
    m = operator.index(m)
    (p,) = _promote_inexact(p)
    if m < 0:
        raise ValueError(f"Order of derivative must be positive, got m={m}")
    if m == 0:
        return p
    dt = _dtype(p)
    grid = (creation.arange(m, _shape(p)[0], dtype=dt)[None]
            - creation.arange(m, dtype=dt)[:, None])
    coeff = reductions.prod(grid, 0)
    return p[:-m] * coeff[::-1]


_polyder_jit = _named_jit("polyder", _polyder, static_argnames=("m",))


def polyder(p: Any, m: int = 1) -> Any:
    return _polyder_jit(p, m=m)


def _polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    m = operator.index(m)
    p, k = _ensure("polyint", p, 0 if k is None else k)
    p, k = _promote_inexact(p, k)
    if m < 0:
        raise ValueError(f"Order of integral must be positive (see polyder), got m={m}")
    k = jnp_shape.atleast_1d(k)
    if _shape(k)[0] == 1:
        k = creation.full((m,), k[0])
    if _shape(k) != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    dt = _dtype(p)
    grid = (creation.arange(_shape(p)[0] + m, dtype=dt)[None]
            - creation.arange(m, dtype=dt)[:, None])
    coeff = reductions.prod(jnp_math.maximum(1, grid), 0)[::-1]
    return jnp_math.true_divide(jnp_shape.concatenate((p, k)), coeff)


_polyint_jit = _named_jit("polyint", _polyint, static_argnames=("m",))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    return _polyint_jit(p, m=m, k=k)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    a1, a2 = _ensure("polymul", a1, a2)
    a1, a2 = _promote_inexact(a1, a2)
    if trim_leading_zeros and (_shape(a1)[0] > 1 or _shape(a2)[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if _shape(a1)[0] == 0:
        a1 = creation.zeros(1, dtype=_dtype(a2))
    if _shape(a2)[0] == 0:
        a2 = creation.zeros(1, dtype=_dtype(a1))
    return convolve(a1, a2, mode="full")


def _poly(seq_of_zeros: Any) -> Any:
    z = _ensure("poly", seq_of_zeros)
    (z,) = _promote_inexact(z)
    z = jnp_shape.atleast_1d(z)
    sh = _shape(z)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        raise NotImplementedError("poly of a square matrix (its eigenvalues) is not "
                                  "implemented in spec")
    if len(sh) != 1:
        raise ValueError(f"input must be 1d or non-empty square 2d array, got shape {sh}.")
    dt = _dtype(z)
    if sh[0] == 0:
        return creation.ones((), dtype=dt)
    a = creation.ones((1,), dtype=dt)
    for k in range(sh[0]):
        a = convolve(a, jnp_shape.stack([creation.ones((), dt), -z[k]]), mode="full")
    return a


poly = _named_jit("poly", _poly)


# ---------------------------------------------------------- histogram2d/dd

def histogramdd(sample: Any, bins: Any = 10, range: Sequence[None | Sequence[Any]] | None = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, list[Any]]:
    if weights is None:
        check_arraylike("histogramdd", sample)
        (sample,) = _promote_inexact(L.asarray(sample))
    else:
        check_arraylike("histogramdd", sample, weights)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError(f"should have one weight for each sample, got weights shape "
                             f"{np.shape(weights)} for sample shape {np.shape(sample)}.")
        sample, weights = _promote_inexact(sample, weights)
    n, d = _shape(sample)
    if range is not None and (len(range) != d or not all(r is None or len(r) == 2
                                                         for r in range)):
        raise ValueError(f"For sample.shape={(n, d)}, range must be a sequence "
                         f"of {d} pairs or Nones; got {range=}")
    try:
        num_bins = len(bins)
    except TypeError:
        bins_per_dim: list[Any] = d * [bins]
    else:
        if num_bins != d:
            raise ValueError("should be a bin for each dimension.")
        bins_per_dim = list(bins)
    bin_idx, nbins, edges = [], [], []
    for i in builtins.range(d):
        rng = None if range is None else range[i]
        e_i = histogram_bin_edges(sample[:, i], bins_per_dim[i], rng, weights)
        idx = searchsorted(e_i, sample[:, i], side="right")
        # The last bin is closed on the right.
        bin_idx.append(jnp_math.where(sample[:, i] == e_i[-1], idx - 1, idx))
        nbins.append(_shape(e_i)[0] + 1)
        edges.append(e_i)
    flat = ravel_multi_index(tuple(bin_idx), tuple(nbins), mode="clip")
    hist = bincount(flat, weights, length=math.prod(nbins))
    hist = jnp_shape.reshape(hist, tuple(nbins))
    hist = hist[tuple(builtins.slice(1, -1) for _ in builtins.range(d))]
    if density:
        hist = hist / reductions.sum(hist)
        for i in builtins.range(d):
            shape = [1] * d
            shape[i] = nbins[i] - 2
            hist = hist / jnp_shape.reshape(diff(edges[i]), tuple(shape))
    return hist, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Sequence[None | Sequence[Any]] | None = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, Any, Any]:
    check_arraylike("histogram2d", x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]
    sample = jnp_shape.transpose(creation.array([x, y]))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


# ------------------------------------------------------ frombuffer/fromstring

def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    return creation.asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    return creation.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


# ------------------------------------------------------------------ minmax

def minmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> tuple[Any, Any]:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.minmax is not supported.")
    if initial is None:
        lo = hi = None
    elif isinstance(initial, tuple):
        lo, hi = initial
    else:
        lo = hi = initial
    return (reductions.min(a, axis=axis, keepdims=keepdims, initial=lo, where=where),
            reductions.max(a, axis=axis, keepdims=keepdims, initial=hi, where=where))


__all__ += [
    "ComplexWarning", "bartlett", "blackman", "c_", "fill_diagonal", "frombuffer",
    "fromstring", "hamming", "hanning", "histogram2d", "histogramdd", "i0", "interp",
    "kaiser", "mgrid", "minmax", "ogrid", "poly", "polyadd", "polyder", "polyint", "polymul",
    "polysub", "polyval", "r_", "spacing", "top_k", "trapezoid",
]
