"""``jnp.ufunc`` and ``jnp.frompyfunc``: NumPy's universal functions with their
methods (``reduce``, ``accumulate``, ``at``, ``reduceat``, ``outer``), as JAX
builds them. Each method is a visible ``jit`` named after it (the ufunc is a
static argument, so ufuncs are hashable and immutable); a ufunc given its own
implementation of a method (``jnp.add.reduce`` is ``jnp.sum``) uses it,
others fall back on a loop over the reduced axis (``fori_loop``/``scan``) of
the scalar function, as JAX's do. The fourteen ufuncs ``jax.numpy`` exports
(``add``, ``multiply``, ``maximum``, ``logaddexp``, ...) are built here on
spec's element-wise functions."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import eval_shape, jit
from spec._src.api.vmap import vmap
from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer, canonical_aval_of
from spec._src.lax import loops
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import indexing, reductions
from spec._src.numpy.elements import append
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.math import _where
from spec._src.numpy.util import check_arraylike
from spec._src.numpy.vectorize import vectorize

_AT_INPLACE_WARNING = """\
Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like
np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.
>>> arr = jnp.add.at(arr, ind, val, inplace=False)
"""


def _one(x: Any) -> Any:
    """A scalar 1 of ``x``'s type: what the result dtype is probed with."""
    return L.full_like(x, 1, shape=())


def _result_dtype(func: Callable[..., Any], *xs: Any) -> T.DType:
    out: T.DType = np.dtype(eval_shape(func, *(_one(x) for x in xs)).dtype)
    return out


def _index_tuple(idx: Any) -> tuple[Any, ...]:
    """An index as a tuple; a list (or other non-tuple sequence) is refused,
    as JAX refuses multidimensional indexing by one."""
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, Sequence) and not isinstance(idx, (Array, Tracer, np.ndarray, str)):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        "allowed; use `arr[tuple(seq)]` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    return (idx,)


# Operand types check_arraylike accepts, by exact type (the hot path's test).
_PASS_ARRAYLIKE = frozenset({Array, float, int, bool, complex})


class ufunc:
    """A universal function: ``func`` of ``nin`` scalars (to ``nout`` results),
    applied element-wise with broadcasting; binary ones also reduce,
    accumulate, update at indices, reduce between indices and form outer
    products. ``identity`` is the value an empty reduction gives."""

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable[..., Any] | None = None,
                 reduce: Callable[..., Any] | None = None,
                 accumulate: Callable[..., Any] | None = None,
                 at: Callable[..., Any] | None = None,
                 reduceat: Callable[..., Any] | None = None) -> None:
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        # Read-only (properties below): a ufunc is a static jit argument.
        self.__static_props = {
            "func": func, "nin": operator.index(nin), "nout": operator.index(nout),
            "nargs": operator.index(nargs or nin), "identity": identity, "call": call,
            "reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat,
        }

    _func = property(lambda self: self.__static_props["func"])
    # The jnp function a built-in ufunc's call is (None for frompyfunc's).
    _call = property(lambda self: self.__static_props["call"])
    nin = property(lambda self: self.__static_props["nin"])
    nout = property(lambda self: self.__static_props["nout"])
    nargs = property(lambda self: self.__static_props["nargs"])
    identity = property(lambda self: self.__static_props["identity"])

    def _key(self) -> tuple[Any, ...]:
        # The method implementations are not part of a ufunc's identity.
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        for a in args:  # eager arrays and Python scalars pass: skip the check's work
            if type(a) not in _PASS_ARRAYLIKE:
                check_arraylike(self.__name__, *args)
                break
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        call = self.__static_props["call"] or (lambda *xs: _call_vectorized(self, *xs))
        return call(*args)

    def _require_binary(self, method: str) -> None:
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def reduce(self, a: Any, axis: int | None = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        """The reduction of ``a`` along ``axis`` by the binary function."""
        return _reduce(self, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                       initial=initial, where=where)

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """The running reduction of ``a`` along ``axis``."""
        return _accumulate(self, a, axis=axis, dtype=dtype, out=out)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """``a`` with the function applied at ``indices`` (with ``b`` for a
        binary ufunc); repeated indices apply it repeatedly."""
        return _at(self, a, indices, b, inplace=inplace)

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
                 out: None = None) -> Any:
        """Reductions of ``a`` over the segments that start at ``indices``."""
        return _reduceat(self, a, indices, axis=axis, dtype=dtype, out=out)

    def outer(self, A: Any, B: Any, /) -> Any:  # noqa: N803 (NumPy's names)
        """The function on every pair of an element of ``A`` and one of ``B``."""
        return _outer(self, A, B)

    def _static(self, key: str) -> Any:
        return self.__static_props[key]

    # ---------------------------------------------------------- fallbacks

    def _reduce_via_scan(self, arr: Any, axis: Any = 0, dtype: Any = None,
                         keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        arr = L.asarray(arr)
        if initial is None:
            initial = self.identity
        if dtype is None:
            dtype = _result_dtype(self._func, arr, arr)
        if where is not None:
            where = jnp_shape.broadcast_to(where, canonical_aval_of(arr).shape)
        arr, where, axis, final_shape = _reduce_layout(arr, where, axis, keepdims)
        if axis != 0:
            arr = jnp_shape._moveaxis(arr, axis, 0)
            if where is not None:
                where = jnp_shape._moveaxis(where, axis, 0)
        shape = canonical_aval_of(arr).shape
        if shape[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return L.full(final_shape, initial, dtype)

        def body_fun(i: Any, val: Any) -> Any:
            if where is None:
                return self(val, arr[i].astype(dtype))
            # The mask row is read before the step, as JAX's body reads them.
            return _where(where[i], self(val, arr[i].astype(dtype)), val)

        start_index, start_value = (1, arr[0]) if initial is None else (0, initial)
        start_value = jnp_shape.broadcast_to(L.asarray(start_value).astype(dtype), shape[1:])
        result = loops.fori_loop(start_index, shape[0], body_fun, start_value)
        return result.reshape(final_shape) if keepdims else result

    def _accumulate_via_scan(self, arr: Any, axis: int = 0, dtype: Any = None) -> Any:
        check_arraylike(f"{self.__name__}.accumulate", arr)
        arr = L.asarray(arr)
        if dtype is None:
            dtype = _result_dtype(self._func, arr, arr)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        aval = canonical_aval_of(arr)
        axis = canonicalize_axis(axis, aval.ndim)
        if aval.size == 0:
            return L.full(aval.shape, 0, dtype)
        arr = jnp_shape._moveaxis(arr, axis, 0)

        def scan_fun(carry: Any, _: Any) -> Any:
            i, x = carry
            y = _where(i == 0, arr[0].astype(dtype),
                       self(x.astype(dtype), arr[i].astype(dtype)))
            return (i + 1, y), y

        _, result = loops.scan(scan_fun, (0, arr[0].astype(dtype)), None,
                               length=canonical_aval_of(arr).shape[0])
        return jnp_shape._moveaxis(result, 0, axis)

    def _at_via_scan(self, a: Any, indices: Any, *args: Any) -> Any:
        check_arraylike(f"{self.__name__}.at", a, *args)
        dtype = _result_dtype(self._func, a, *args)
        a = L.asarray(a).astype(dtype)
        args = tuple(L.asarray(arg).astype(dtype) for arg in args)
        index = _index_tuple(indices)
        if not index:
            return a
        shapes = [np.shape(i) for i in index if not isinstance(i, slice)]
        shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        if not shape:
            return a.at[index].set(self(a.at[index].get(), *args))
        if args:
            rest = canonical_aval_of(args[0]).shape[len(shape):]
            arg = jnp_shape.broadcast_to(args[0], (*shape, *rest))
            args = (arg.reshape(math.prod(shape), *rest),)
        flat = [i if isinstance(i, slice) else jnp_shape.broadcast_to(i, shape).ravel()
                for i in index]

        def scan_fun(carry: Any, x: Any) -> Any:
            i, arr = carry
            idx = tuple(ind if isinstance(ind, slice) else ind[i] for ind in flat)
            arr = arr.at[idx].set(self(arr.at[idx].get(), *(g[i] for g in args)))
            return (i + 1, arr), x

        length = next(canonical_aval_of(i).shape[0] for i in flat if not isinstance(i, slice))
        carry, _ = loops.scan(scan_fun, (0, a), None, length)
        return carry[1]

    def _reduceat_via_scan(self, a: Any, indices: Any, axis: int = 0,
                           dtype: Any = None) -> Any:
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a = L.asarray(a)
        (ind0,) = _index_tuple(indices)
        aval = canonical_aval_of(a)
        if aval.ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got "
                             f"a.shape={aval.shape!r}")
        if np.ndim(ind0) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got "
                             f"indices.shape={np.shape(ind0)!r}")
        if dtype is not None:
            a = a.astype(dtype)
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = canonicalize_axis(axis, aval.ndim)
        out = indexing.take(a, ind0, axis=axis)
        out_ndim = canonical_aval_of(out).ndim
        ind = L.expand_dims(append(ind0, aval.shape[axis]),
                            [d for d in range(out_ndim) if d != axis])
        n = canonical_aval_of(ind).shape[axis]
        ind_start = slicing.slice_in_dim(ind, 0, n - 1, axis=axis)
        ind_end = slicing.slice_in_dim(ind, 1, n, axis=axis)

        def loop_body(i: Any, acc: Any) -> Any:
            inside = (i > ind_start) & (i < ind_end)
            return _where(inside, self(acc, indexing.take(a, L.expand_dims(i, (0,)), axis=axis)),
                          acc)
        return loops.fori_loop(0, aval.shape[axis], loop_body, out)


def _reduce_layout(arr: Any, where: Any, axis: Any, keepdims: bool
                   ) -> tuple[Any, Any, int, tuple[int, ...]]:
    """The operand (flattened for ``axis=None``), the mask, the axis and the
    result shape of a reduction over one axis."""
    shape = canonical_aval_of(arr).shape
    if isinstance(axis, tuple):
        raise NotImplementedError("tuple of axes")
    if axis is None:
        final = (1,) * len(shape) if keepdims else ()
        arr = arr.ravel()
        return arr, None if where is None else where.ravel(), 0, final
    axis = canonicalize_axis(axis, len(shape))
    final = (*shape[:axis], 1, *shape[axis + 1:]) if keepdims else \
        (*shape[:axis], *shape[axis + 1:])
    return arr, where, axis, final


# ---------------------------------------------------------------- the methods
# Module-level jitted functions of the ufunc (a static argument), named as
# JAX's jitted methods are.

def _call_vectorized_fn(self: ufunc, *args: Any) -> Any:
    return vectorize(self._func)(*args)


def _reduce_fn(self: ufunc, a: Any, axis: Any = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    check_arraylike(f"{self.__name__}.reduce", a)
    self._require_binary("reduce")
    if out is not None:
        raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if initial is not None:
        check_arraylike(f"{self.__name__}.reduce", initial)
    if where is not None:
        check_arraylike(f"{self.__name__}.reduce", where)
        if self.identity is None and initial is None:
            raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                             "identity, so to use a where mask one has to specify 'initial'.")
        if canonical_aval_of(where).dtype != T.bool_:
            raise ValueError(f"where argument must have dtype=bool; got "
                             f"dtype={canonical_aval_of(where).dtype}")
    reduce = self._static("reduce") or self._reduce_via_scan
    return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def _accumulate_fn(self: ufunc, a: Any, axis: int = 0, dtype: Any = None,
                   out: None = None) -> Any:
    self._require_binary("accumulate")
    if out is not None:
        raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    accumulate = self._static("accumulate") or self._accumulate_via_scan
    return accumulate(a, axis=axis, dtype=dtype)


def _at_fn(self: ufunc, a: Any, indices: Any, b: Any = None, *, inplace: bool = True) -> Any:
    if inplace:
        raise NotImplementedError(_AT_INPLACE_WARNING)
    at = self._static("at") or self._at_via_scan
    return at(a, indices) if b is None else at(a, indices, b)


def _reduceat_fn(self: ufunc, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
                 out: None = None) -> Any:
    self._require_binary("reduceat")
    if out is not None:
        raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    reduceat = self._static("reduceat") or self._reduceat_via_scan
    return reduceat(a, indices, axis=axis, dtype=dtype)


def _outer_fn(self: ufunc, A: Any, B: Any) -> Any:  # noqa: N803
    self._require_binary("outer")
    check_arraylike(f"{self.__name__}.outer", A, B)

    def flat(x: Any) -> Any:
        return L.reshape(x, (int(np.size(x)) if not isinstance(x, (Array, Tracer))
                             else canonical_aval_of(x).size,))
    result = vmap(vmap(self, (None, 0)), (0, None))(flat(A), flat(B))
    return result.reshape(*np.shape(A), *np.shape(B))


def _named(name: str, fn: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    jitted: Callable[..., Any] = jit(fn, **kw)
    return jitted


_call_vectorized = _named("_call_vectorized", _call_vectorized_fn, static_argnames=("self",))
_reduce = _named("reduce", _reduce_fn,
                 static_argnames=("self", "axis", "dtype", "out", "keepdims"))
_accumulate = _named("accumulate", _accumulate_fn, static_argnames=("self", "axis", "dtype"))
_at = _named("at", _at_fn, static_argnums=(0,), static_argnames=("inplace",))
_reduceat = _named("reduceat", _reduceat_fn, static_argnames=("self", "axis", "dtype"))
_outer = _named("outer", _outer_fn, static_argnums=(0,))


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *,
               identity: Any = None) -> ufunc:
    """A ufunc from a function of ``nin`` scalars (vectorized when called)."""
    return ufunc(func, nin, nout, identity=identity)


# ------------------------------------------------------- jax.numpy's ufuncs

def _updating_at(method: str) -> Callable[[Any, Any, Any], Any]:
    """``a.at[indices].<method>(b)``; on bool arrays in int32 and back, as
    JAX's add.at and multiply.at (an or / an and of the updates)."""
    def update(a: Any, indices: Any, b: Any) -> Any:
        if canonical_aval_of(a).dtype == T.bool_:
            a = a.astype("int32")
            b = L.convert_element_type(b, T.bool_).astype("int32")
            return getattr(a.at[indices], method)(b).astype(bool)
        return getattr(a.at[indices], method)(b)
    return update


_add_at = _updating_at("add")
_multiply_at = _updating_at("mul")


def _subtract_at(a: Any, indices: Any, b: Any) -> Any:
    return a.at[indices].subtract(b)


def _binary(func: Callable[..., Any], identity: Any, **methods: Any) -> ufunc:
    return ufunc(func, name=func.__name__, nin=2, nout=1, call=func, identity=identity,
                 **methods)


negative = ufunc(jnp_math.negative, name="negative", nin=1, nout=1, call=jnp_math.negative)
add = _binary(jnp_math.add, 0, reduce=reductions.sum, accumulate=reductions.cumsum,
              at=_add_at)
multiply = _binary(jnp_math.multiply, 1, reduce=reductions.prod,
                   accumulate=reductions.cumprod, at=_multiply_at)
subtract = _binary(jnp_math.subtract, None, at=_subtract_at)
bitwise_and = _binary(jnp_math.bitwise_and, -1, reduce=reductions._reduce_bitwise_and)
bitwise_or = _binary(jnp_math.bitwise_or, 0, reduce=reductions._reduce_bitwise_or)
bitwise_xor = _binary(jnp_math.bitwise_xor, 0, reduce=reductions._reduce_bitwise_xor)
minimum = _binary(jnp_math.minimum, None, reduce=reductions._reduce_min)
maximum = _binary(jnp_math.maximum, None, reduce=reductions._reduce_max)
logical_and = _binary(jnp_math.logical_and, True, reduce=reductions._reduce_logical_and)
logical_or = _binary(jnp_math.logical_or, False, reduce=reductions._reduce_logical_or)
logical_xor = _binary(jnp_math.logical_xor, False, reduce=reductions._reduce_logical_xor)
logaddexp = _binary(jnp_math.logaddexp, -np.inf, reduce=reductions._logsumexp)
logaddexp2 = _binary(jnp_math.logaddexp2, -np.inf, reduce=reductions._logsumexp2)


__all__ = [
    "add", "bitwise_and", "bitwise_or", "bitwise_xor", "frompyfunc", "logaddexp",
    "logaddexp2", "logical_and", "logical_or", "logical_xor", "maximum", "minimum",
    "multiply", "negative", "subtract", "ufunc",
]
