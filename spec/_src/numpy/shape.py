"""Shape-manipulation functions of ``spec.numpy`` and the shape methods of arrays.

Functions that JAX 0.12 wraps in a visible ``jit`` (``atleast_*d``, ``flip``)
are wrapped here too, so the jaxprs match; those JAX jits with early inlining
(``ravel``, ``swapaxes``, ``moveaxis``, ``squeeze``, ``broadcast_arrays``)
leave no trace in a jaxpr and are plain functions here.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core.canonical import dim_at, static_axis, static_hashable
from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer, canonical_aval_of
from spec._src.core.prng import is_key_dtype
from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.elementwise import select
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation, util
from spec._src.numpy import math as jnp_math
from spec._src.numpy.creation import _broadcast_to_unsharded, array, asarray
from spec._src.numpy.math import _as_array, _named_jit, remainder
from spec._src.numpy.util import _index, _inline_jit, _ndim, _shape, check_arraylike, promote_dtypes

__all__ = [
    "array_split", "astype", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays",
    "broadcast_to", "concatenate", "expand_dims", "flip", "hstack", "matrix_transpose", "moveaxis",
    "ndim", "permute_dims", "ravel", "reshape", "shape", "size", "split", "squeeze", "stack",
    "swapaxes", "transpose", "tril", "triu", "vstack", "roll", "block", "broadcast_shapes",
    "column_stack", "concat", "dsplit", "dstack", "fliplr", "flipud", "hsplit", "rollaxis",
    "rot90", "unstack", "vsplit",
]


def _check_arraylike(name: str, *args: Any) -> None:
    check_arraylike(name, *args)


def _ensure(name: str, x: Any) -> Any:
    """``ensure_arraylike``: arrays and scalars only, as an array."""
    _check_arraylike(name, x)
    return L.asarray(T.from_jax_array(x))


def _aval(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)


def _index_tuple(x: Any) -> tuple[int, ...]:
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(operator.index(i) for i in x)


def _jit(name: str, fn: Callable[..., Any], statics: tuple[str, ...] = ()) -> Callable[..., Any]:
    """A function JAX jits visibly (a ``jit`` equation named ``name``; the
    function shows as ``name``, as JAX's jnp function does, in errors)."""
    fn.__name__ = fn.__qualname__ = name
    jitted: Callable[..., Any] = jit(fn, static_argnames=statics or None)
    return jitted


# =================================================================== dtypes

def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    arr = _ensure("astype", x)
    dt = T.default_float() if dtype is None else T.to_dtype(dtype, "astype")
    if is_key_dtype(_aval(arr).dtype) and dt != _aval(arr).dtype:
        # Key words are reached through random.key_data, not a conversion.
        raise ValueError(f"Cannot convert_element_type from {_aval(arr).dtype} to {dt}")
    if T.is_complex(_aval(arr).dtype) and dt == T.bool_:
        # convert_element_type(complex, bool) looks at the real part only;
        # NumPy's astype tests both parts.
        arr = jnp_math.not_equal(arr, L._convert_element_type(0, _aval(arr).dtype, False))
    result = L._convert_element_type(arr, dt, False, warn_on_complex_to_real_cast=False)
    return slicing._array_copy(result) if copy else result


# ================================================================== reshape

def _compute_newshape(x: Any, newshape: Any) -> tuple[int, ...]:
    orig = newshape
    try:
        iter(newshape)
    except TypeError:
        newshape = [newshape]
    try:
        dims = tuple(operator.index(d) for d in newshape)
    except TypeError:
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {orig}.") from None
    size = _aval(x).size
    shp = _aval(x).shape
    neg = [i for i, d in enumerate(dims) if d == -1]
    if len(neg) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {orig}")
    if neg:
        others = math.prod(d for i, d in enumerate(dims) if i != neg[0])
        if others == 0 or size % others != 0:
            raise TypeError(f"cannot reshape array of shape {shp} (size {size}) into shape "
                            f"{orig} because the product of specified axis sizes ({others}) "
                            f"does not evenly divide {size}")
        return tuple(size // others if i == neg[0] else d for i, d in enumerate(dims))
    if size != math.prod(dims):
        raise TypeError(f"cannot reshape array of shape {shp} (size {size}) into shape {orig} "
                        f"(size {math.prod(dims)})")
    return dims


def _reshape_method(self: Any, *args: Any, order: str = "C", out_sharding: Any = None) -> Any:
    newshape = _compute_newshape(self, args[0] if len(args) == 1 else args)
    if order == "C":
        return L.reshape(self, newshape, None, out_sharding=out_sharding)
    if order == "F":
        dims = list(range(_aval(self).ndim))[::-1]
        return _T_property(L.reshape(self, newshape[::-1], dims))
    if order == "A":
        raise NotImplementedError("np.reshape order=A is not implemented.")
    raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def reshape(a: Any, shape: Any, order: str = "C", *, copy: Any = None,
            out_sharding: Any = None) -> Any:
    _check_arraylike("reshape", a)
    if out_sharding is None and isinstance(a, (np.ndarray, np.generic)):
        # JAX forwards to the operand's own method: NumPy reshapes a NumPy array (any
        # dtype, strings too) and the result is NumPy's.
        return a.reshape(shape, order=order)  # type: ignore[call-overload]
    return _reshape_method(L.asarray(T.from_jax_array(a)), shape, order=order,
                           out_sharding=out_sharding)


@_inline_jit
def ravel(a: Any, order: str = "C", *, out_sharding: Any = None) -> Any:
    arr = _ensure("ravel", a)
    if order == "K":
        raise NotImplementedError("Ravel not implemented for order='K'.")
    return _reshape_method(arr, (_aval(arr).size,), order=order)


# ================================================================ transpose

def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    arr = _ensure("transpose", a)
    nd = _aval(arr).ndim
    order = list(range(nd))[::-1] if axes is None else list(axes)
    return L.transpose(arr, [canonicalize_axis(i, nd) for i in order])


def permute_dims(a: Any, /, axes: tuple[int, ...]) -> Any:
    arr = _ensure("permute_dims", a)
    nd = _aval(arr).ndim
    canon = tuple(canonicalize_axis(i, nd) for i in axes)
    if len(set(canon)) != len(canon):
        raise ValueError(f"repeated axis: {canon}")
    return L.transpose(arr, canon)


def matrix_transpose(x: Any, /) -> Any:
    arr = _ensure("matrix_transpose", x)
    nd = _aval(arr).ndim
    if nd < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
    return L.transpose(arr, (*range(nd - 2), nd - 1, nd - 2))


@_inline_jit
def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    arr = _ensure("swapaxes", a)
    # The axes are jit static arguments in JAX (unhashable: ValueError), then
    # indices into a NumPy permutation (a non-integer: NumPy's IndexError).
    axis1, axis2 = static_hashable(axis1, "axis1"), static_hashable(axis2, "axis2")
    perm = np.arange(_aval(arr).ndim)
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return L.transpose(arr, tuple(int(p) for p in perm))


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    arr = _ensure("moveaxis", a)
    return _moveaxis_staged(arr, _index_tuple(source), _index_tuple(destination))


@_inline_jit
def _moveaxis_staged(arr: Any, source: tuple[int, ...], destination: tuple[int, ...]) -> Any:
    nd = _aval(arr).ndim
    src = tuple(canonicalize_axis(i, nd) for i in source)
    dst = tuple(canonicalize_axis(i, nd) for i in destination)
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return L.transpose(arr, perm)


# ======================================================== squeeze / expand

@_inline_jit
def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    arr = _ensure("squeeze", a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(_aval(arr).shape) if d == 1)
    else:
        axes = _index_tuple(axis)
    return L.squeeze(arr, axes)


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    arr = _ensure("expand_dims", a)
    return L.expand_dims(arr, _index_tuple(axis))


# =============================================================== broadcasting

def broadcast_to(array: Any, shape: Any, *, out_sharding: Any = None) -> Any:
    if out_sharding is None:
        return _broadcast_to_unsharded(array, shape)
    # With a sharding: lax.broadcast_to's layout rules.
    return creation._broadcast_to(array, shape, out_sharding)


@_inline_jit
def broadcast_arrays(*args: Any) -> tuple[Any, ...]:
    _check_arraylike("broadcast_arrays", *args)
    arrs = [L.asarray(a) for a in args]
    shapes = [_aval(a).shape for a in arrs]
    if not shapes or all(s == shapes[0] for s in shapes):
        return tuple(arrs)
    try:
        result = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
    return tuple(_broadcast_to_unsharded(a, result) for a in arrs)


# ============================================================ join / split

def _arraylike_operand(x: Any) -> Any:
    """One operand of a joining function as an array (``lax.asarray``)."""
    return L.asarray(T.from_jax_array(x))


def _shapes_listed(arrays: Sequence[Any]) -> str:
    return ", ".join(str(_aval(a).shape) for a in arrays)


def _check_concatenable(arrays: Sequence[Any], axis: int) -> None:
    """jnp.concatenate's operands, with JAX's messages: one rank, and equal sizes
    everywhere but ``axis``."""
    if len({_aval(a).ndim for a in arrays}) != 1:
        raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                        f"{_shapes_listed(arrays)}.")
    rest = {_aval(a).shape[:axis] + _aval(a).shape[axis + 1:] for a in arrays}
    if len(rest) != 1:
        raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                        f"than the one being concatenated: concatenating along dimension {axis} "
                        f"for shapes {_shapes_listed(arrays)}.")


def _check_stackable(arrays: Sequence[Any]) -> None:
    """jnp.stack's operands, with JAX's messages: one shape."""
    if len({_aval(a).ndim for a in arrays}) != 1:
        raise ValueError("Cannot stack arrays with different numbers of dimensions: got "
                         f"{_shapes_listed(arrays)}.")
    if len({_aval(a).shape for a in arrays}) != 1:
        raise ValueError("All input arrays must have the same shape. Got "
                         f"{_shapes_listed(arrays)}.")


def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
    if _is_array(arrays):
        return _concatenate_array(arrays, axis, dtype)
    _check_arraylike("concatenate", *arrays)
    # Each operand is converted first, as JAX's ensure_arraylike does (a string is the
    # conversion's TypeError, before the operands' ranks are read).
    arrays = [_arraylike_operand(a) for a in arrays]
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return concatenate([ravel(a) for a in arrays], axis=0, dtype=dtype)
    if _aval(arrays[0]).ndim == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    ax = canonicalize_axis(axis, _aval(arrays[0]).ndim)
    if dtype is None:
        outs = promote_dtypes(*arrays)
    else:
        outs = [asarray(a, dtype=dtype) for a in arrays]
    _check_concatenable(outs, ax)
    return slicing.concatenate(outs, ax)


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, Array, Tracer))


def _concatenate_array(arr: Any, axis: int | None, dtype: Any) -> Any:
    """The slices of ``arr`` along its leading axis joined along ``axis``
    (of a slice), as one reshape that first moves the leading axis before
    ``axis``: JAX's way, which never unstacks the array."""
    x = asarray(arr, dtype=dtype)
    shp = _shape(x)
    if not shp or shp[0] == 0:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return L.reshape(x, (math.prod(shp),))
    if len(shp) == 1:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    ax = canonicalize_axis(axis, len(shp) - 1)
    joined = (*shp[1:ax + 1], shp[0] * shp[ax + 1], *shp[ax + 2:])
    order = (*range(1, ax + 1), 0, *range(ax + 1, len(shp)))
    return L.reshape(x, joined, order)


def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
    if isinstance(arrays, (np.ndarray, Array, Tracer)):
        ax = canonicalize_axis(axis, np.ndim(arrays) if isinstance(arrays, np.ndarray)
                               else _aval(arrays).ndim)
        return concatenate(expand_dims(arrays, ax + 1), axis=ax, dtype=dtype)
    _check_arraylike("stack", *arrays)
    arrays = [_arraylike_operand(a) for a in arrays]
    if dtype is not None:
        arrs = [asarray(a, dtype=dtype) for a in arrays]
    else:
        arrs = promote_dtypes(*arrays)
    _check_stackable(arrs)
    return slicing.stack(arrs, axis=axis)


# An array argument of a stacking function stands for the sequence of its
# leading-axis slices: as in JAX, each is reshaped under one ``vmap`` and the
# result concatenated as an array (never unstacked).

def hstack(tup: Any, dtype: Any = None) -> Any:
    if _is_array(tup):
        arrs = vmap(atleast_1d)(tup)
        slice_ndim = _ndim(arrs) - 1
    else:
        _check_arraylike("hstack", *tup)
        arrs = [atleast_1d(m) for m in tup]
        slice_ndim = _ndim(arrs[0])
    return concatenate(arrs, axis=0 if slice_ndim == 1 else 1, dtype=dtype)


def vstack(tup: Any, dtype: Any = None) -> Any:
    if _is_array(tup):
        return concatenate(vmap(atleast_2d)(tup), axis=0, dtype=dtype)
    _check_arraylike("vstack", *tup)
    return concatenate([atleast_2d(m) for m in tup], axis=0, dtype=dtype)


def _split(op: str, ary: Any, sections: Any, axis: int) -> list[Any]:
    arr = _ensure(op, ary)
    axis = operator.index(axis)
    size = dim_at(_aval(arr).shape, axis)
    if isinstance(sections, (tuple, list)) or (
            isinstance(sections, (np.ndarray, Array)) and np.ndim(sections) > 0):
        cuts = [int(np.clip(operator.index(i) + (size if operator.index(i) < 0 else 0),
                            0, size)) for i in sections]
        sizes = [int(d) for d in np.diff(np.asarray([0, *cuts, size]))]
    else:
        # A number of sections is read with int(), as JAX does (2.0 and 2.5 are 2).
        n = int(sections)
        part, rest = divmod(size, n)
        if rest == 0:
            sizes = [part] * n
        elif op == "array_split":
            sizes = [part + 1] * rest + [part] * (n - rest)
        else:
            raise ValueError(f"array split does not result in an equal division: rest is {rest}")
    # JAX passes NumPy int64 sizes; they are part of the printed params.
    return list(slicing.split(arr, [np.int64(s) for s in sizes], axis=axis))  # type: ignore[misc]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    return _split("array_split", ary, indices_or_sections, axis)


# ============================================================= tile / repeat


def _roll_static_fn(a: Any) -> Any:
    """``jnp.roll(a, 1)`` of a 1-D array, as JAX stages it (``_roll_static``)."""
    n = _aval(a).shape[0]
    if n == 0:
        return a
    i = (-1) % n
    return slicing.concatenate([slicing.slice_in_dim(a, i, n), slicing.slice_in_dim(a, 0, i)], 0)




# ================================================================ tril / triu

def _tri_mask(m: Any, k: int, name: str) -> tuple[Any, T.Shape]:
    shp = _aval(m).shape
    if len(shp) < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    mask = creation.tri(shp[-2], shp[-1], k=k, dtype=bool)
    return L.broadcast(mask, shp[:-2]), shp


def _tril_fn(m: Any, k: int = 0) -> Any:
    m = _ensure("tril", m)
    which, _ = _tri_mask(m, k, "tril")
    return select(which, m, creation.zeros_like(m))


def _triu_fn(m: Any, k: int = 0) -> Any:
    m = _ensure("triu", m)
    which, _ = _tri_mask(m, k - 1, "triu")
    return select(which, creation.zeros_like(m), m)


def tril(m: Any, k: int = 0) -> Any:
    """``m`` with the entries above the ``k``-th diagonal zeroed."""
    return _jitted("tril")(m, k=operator.index(k))


def triu(m: Any, k: int = 0) -> Any:
    return _jitted("triu")(m, k=operator.index(k))


# ================================================================ flip / atleast

def _flip_impl(m: Any, axis: Any = None) -> Any:
    nd = _aval(m).ndim
    if axis is None:
        return slicing.rev(m, list(range(nd)))
    return slicing.rev(m, [canonicalize_axis(ax, nd) for ax in _index_tuple(axis)])


@functools.cache
def _jitted(name: str) -> Callable[..., Any]:
    table: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
        "_flip": (_flip_impl, ("axis",)),
        "_roll_static": (_roll_static_fn, ()),
        "tril": (_tril_fn, ("k",)),
        "triu": (_triu_fn, ("k",)),
        "atleast_1d": (_atleast_impl(1), ()),
        "atleast_2d": (_atleast_impl(2), ()),
        "atleast_3d": (_atleast_impl(3), ()),
    }
    fn, statics = table[name]
    return _jit(name, fn, statics)


def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    arr = _ensure("flip", m)
    axis_arg = None if axis is None else (_index_tuple(axis) if not isinstance(axis, int)
                                          else operator.index(axis))
    return _jitted("_flip")(arr, axis=axis_arg)


def _atleast_one(x: Any, n: int) -> Any:
    if n < 3:
        return array(x, copy=False, ndmin=n)
    arr = L.asarray(x)
    nd = _aval(arr).ndim
    dims = {0: (0, 1, 2), 1: (0, 2), 2: (2,)}.get(nd)
    return L.expand_dims(arr, dims) if dims is not None else arr


def _atleast_impl(n: int) -> Callable[..., Any]:
    def impl(*arys: Any) -> Any:
        _check_arraylike(f"atleast_{n}d", *arys)
        if len(arys) == 1:
            return _atleast_one(arys[0], n)
        return tuple(_atleast_one(a, n) for a in arys)
    return impl


def atleast_1d(*arys: Any) -> Any:
    return _jitted("atleast_1d")(*arys)


def atleast_2d(*arys: Any) -> Any:
    return _jitted("atleast_2d")(*arys)


def atleast_3d(*arys: Any) -> Any:
    return _jitted("atleast_3d")(*arys)


# ================================================================ queries

def shape(a: Any) -> tuple[int, ...]:
    a = T.from_jax_array(a)
    if hasattr(a, "shape"):
        return tuple(a.shape)
    return tuple(np.shape(a))


def ndim(a: Any) -> int:
    a = T.from_jax_array(a)
    if hasattr(a, "ndim"):
        return int(a.ndim)
    return int(np.ndim(a))


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    shp = shape(a)
    if axis is None:
        return math.prod(shp)
    return math.prod(shp[canonicalize_axis(i, len(shp))] for i in _index_tuple(axis))


# ============================================================ array methods

def _T_property(self: Any) -> Any:
    nd = _aval(self).ndim
    return L.transpose(self, list(range(nd))[::-1])


def _mT_property(self: Any) -> Any:
    return matrix_transpose(self)


def _transpose_method(self: Any, *args: Any) -> Any:
    if not args:
        axes = None
    elif len(args) == 1:
        axes = None if args[0] is None else _index_tuple(args[0])
    else:
        axes = _index_tuple(args)
    return transpose(self, axes)


def _swapaxes_method(self: Any, axis1: int, axis2: int) -> Any:
    return swapaxes(self, axis1, axis2)


def _squeeze_method(self: Any, axis: int | Sequence[int] | None = None) -> Any:
    return squeeze(self, axis)


def _ravel_method(self: Any, order: str = "C", *, out_sharding: Any = None) -> Any:
    return ravel(self, order=order)


def _astype_method(self: Any, dtype: Any, copy: bool = False, device: Any = None) -> Any:
    return astype(self, dtype, copy=copy, device=device)


def _install_array_methods() -> None:
    """Shape methods on both Array and Tracer, so traced code reads like NumPy."""
    methods: dict[str, Any] = {
        "reshape": _reshape_method,
        "transpose": _transpose_method,
        "T": property(_T_property),
        "mT": property(_mT_property),
        "swapaxes": _swapaxes_method,
        "squeeze": _squeeze_method,
        "ravel": _ravel_method,
        "flatten": _ravel_method,
        "astype": _astype_method,
    }
    for cls in (Array, Tracer):
        for name, fn in methods.items():
            setattr(cls, name, fn)


_install_array_methods()


def _roll_static_impl(a: Any, shift: tuple[int, ...], axis: tuple[int, ...]) -> Any:
    shape = _aval(a).shape
    for ax, s in zip(*np.broadcast_arrays(np.asarray(axis), np.asarray(shift))):
        ax = int(ax)
        if shape[ax] == 0:
            continue
        i = (-int(s)) % shape[ax]
        a = slicing.concatenate([slicing.slice_in_dim(a, i, shape[ax], axis=ax),
                             slicing.slice_in_dim(a, 0, i, axis=ax)], ax)
    return a


_roll_static = _named_jit("_roll_static", _roll_static_impl, static_argnums=(1, 2))


def _roll_dynamic_impl(a: Any, shift: Any, axis: tuple[int, ...]) -> Any:
    shape = np.broadcast_shapes(_aval(shift).shape, np.shape(axis))
    if len(shape) != 1:
        raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    # Iterating the traced shifts unstacks them, as JAX's loop does.
    shifts = broadcast_to(shift, shape)
    for x, ax in zip(shifts, np.broadcast_to(np.asarray(axis), shape)):
        ax = int(ax)
        size = array(_aval(a).shape[ax], dtype=T.int32)
        s = remainder(L.convert_element_type(x, T.int32), ew.max(size, np.int32(1)))
        doubled = slicing.concatenate((a, a), ax)
        a = slicing.dynamic_slice_in_dim(doubled, ew.sub(size, s), _aval(a).shape[ax], axis=ax)
    return a


_roll_dynamic = _named_jit("_roll_dynamic", _roll_dynamic_impl, static_argnums=(2,))


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Elements shifted cyclically by ``shift`` along ``axis`` (the flattened
    array when None)."""
    check_arraylike("roll", a)
    arr = _as_array(a)
    if axis is None:
        return reshape(roll(ravel(arr), shift, 0), _aval(arr).shape)
    ndim = _aval(arr).ndim
    axes = tuple(_canonical_axis(ax, ndim) for ax in _index_tuple(axis))
    try:
        shifts = _index_tuple(shift)
    except TypeError:
        return _roll_dynamic(arr, asarray(shift), axes)
    return _roll_static(arr, shifts, axes)


def _canonical_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _moveaxis(a: Any, src: int, dst: int) -> Any:
    return moveaxis(a, src, dst)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    check_arraylike("concat", *arrays)
    return concatenate(arrays, axis=axis)


@_inline_jit
def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    arr = util._ensure("unstack", x)
    return tuple(slicing.unstack(arr, axis=static_axis(axis, _ndim(arr))))


def fliplr(m: Any) -> Any:
    return flip(util._ensure("fliplr", m), 1)


def flipud(m: Any) -> Any:
    return flip(util._ensure("flipud", m), 0)


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
        return flip(flip(m, ax1), ax2)
    perm = list(range(nd))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    if k == 1:
        return transpose(flip(m, ax2), perm)
    return flip(transpose(m, perm), ax2)


_rot90 = util._jit("rot90", _rot90_fn, ("k", "axes"))


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    arr = util._ensure("rot90", m)
    if len(static_hashable(axes, "axes")) != 2:
        raise ValueError(f"rot90: axes must be a pair of ints, got {axes!r}")
    axes_t = tuple(operator.index(a) for a in axes)
    # k is a static argument that JAX reduces mod 4 and compares with 0, 1
    # and 2, any other remainder (a fractional k included) being three turns.
    quarter = static_hashable(k, "k") % 4
    return _rot90(arr, k=int(quarter) if quarter in (0, 1, 2) else 3, axes=axes_t)


def _rollaxis_fn(a: Any, axis: int, start: int = 0) -> Any:
    nd = _ndim(a)
    ax = canonicalize_axis(axis, nd)
    if not -nd <= start <= nd:
        raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
    if start < 0:
        start += nd
    if start > ax:
        start -= 1
    return moveaxis(a, ax, start)


_rollaxis = util._jit("rollaxis", _rollaxis_fn, ("axis", "start"))


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    arr = util._ensure("rollaxis", a)
    start = _index(start, "'start' argument of jnp.rollaxis()")
    return _rollaxis(arr, axis=operator.index(axis), start=start)


def _as_sequence(name: str, tup: Any, convert: Callable[[Any], Any]) -> list[Any]:
    """A stacking function's argument as a list of arrays: an array stands for
    the sequence of its leading-axis slices; the entries of a sequence are
    converted by ``convert`` (JAX's dstack and column_stack convert apart)."""
    if isinstance(tup, (np.ndarray, Array, Tracer)):
        arr = L.asarray(tup)
        if _ndim(arr) == 0:
            raise ValueError(f"{name}: a 0-d array is not a sequence of arrays")
        return list(unstack(arr))
    check_arraylike(name, *tup)
    return [convert(t) for t in tup]


def column_stack(tup: Any) -> Any:
    if _is_array(tup):
        # Each slice of an array of rank below 3 becomes a column.
        cols = tup if _ndim(tup) >= 3 else vmap(lambda a: atleast_2d(a).T)(tup)
        return concatenate(cols, axis=1)
    arrs = _as_sequence("column_stack", tup, asarray)
    # List entries become columns when they are 1-d (or scalars).
    return concatenate([atleast_2d(a).T if _ndim(a) < 2 else a for a in arrs], axis=1)


def dstack(tup: Any, dtype: Any = None) -> Any:
    if _is_array(tup):
        return concatenate(vmap(atleast_3d)(tup), axis=2, dtype=dtype)
    arrs = _as_sequence("dstack", tup, _arraylike_operand)
    return concatenate([atleast_3d(a) for a in arrs], axis=2, dtype=dtype)


def _split_along(name: str, ary: Any, sections: Any, axis: int, min_ndim: int) -> list[Any]:
    arr = util._ensure(name, ary)
    if _ndim(arr) < min_ndim:
        # JAX fails reading the missing axis of the shape: an IndexError.
        raise IndexError(f"{name} requires an array of at least {min_ndim} dimensions, got "
                         f"shape {_shape(arr)}")
    return _split(name, arr, sections, axis)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    arr = util._ensure("hsplit", ary)
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
        return concatenate([_atleast_nd(p, rank) for p, _ in parts], axis=-depth), depth + 1
    return creation.asarray(xs), 1


def _block_fn(arrays: Any) -> Any:
    return _block_rec(arrays)[0]


_block = util._jit("block", _block_fn)


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
