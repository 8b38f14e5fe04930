"""Shape-manipulation functions of ``spec.numpy`` and the shape methods of arrays.

Functions that JAX 0.12 wraps in a visible ``jit`` (``atleast_*d``, ``flip``)
are wrapped here too, so the jaxprs match; those JAX jits with early inlining
(``ravel``, ``swapaxes``, ``moveaxis``, ``squeeze``, ``broadcast_arrays``)
leave no trace in a jaxpr and are plain functions here.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer, canonical_aval_of
from spec._src.lax import structural_api as L
from spec._src.lax.structural_api import canonicalize_axis
from spec._src.numpy import creation, indexing, reductions
from spec._src.numpy import math as jnp_math
from spec._src.numpy.creation import _broadcast_to_unsharded

__all__ = [
    "array_split", "astype", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays",
    "broadcast_to", "concatenate", "expand_dims", "flip", "hstack", "matrix_transpose",
    "moveaxis", "ndim", "pad", "permute_dims", "ravel", "repeat", "reshape", "shape", "size",
    "split", "squeeze", "stack", "swapaxes", "tile", "transpose", "tril", "triu", "vstack",
]


def _check_arraylike(name: str, *args: Any) -> None:
    from spec._src.numpy.util import check_arraylike
    check_arraylike(name, *args)


def _ensure(name: str, x: Any) -> Any:
    """``ensure_arraylike``: arrays and scalars only, as an array."""
    _check_arraylike(name, x)
    return L.asarray(x)


def _aval(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)


def _index_tuple(x: Any) -> tuple[int, ...]:
    try:
        return (operator.index(x),)
    except TypeError:
        return tuple(operator.index(i) for i in x)


def _jit(name: str, fn: Callable[..., Any], statics: tuple[str, ...] = ()) -> Callable[..., Any]:
    """A function JAX jits visibly (a ``jit`` equation named ``name``)."""
    from spec._src.api.jit import jit
    fn.__name__ = name
    jitted: Callable[..., Any] = jit(fn, static_argnames=statics or None)
    return jitted


# =================================================================== dtypes

def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    arr = _ensure("astype", x)
    dt = T.default_float() if dtype is None else T.to_dtype(dtype, "astype")
    from spec._src.core.prng import is_key_dtype
    if is_key_dtype(_aval(arr).dtype) and dt != _aval(arr).dtype:
        # Key words are reached through random.key_data, not a conversion.
        raise ValueError(f"Cannot convert_element_type from {_aval(arr).dtype} to {dt}")
    if T.is_complex(_aval(arr).dtype) and dt == T.bool_:
        # convert_element_type(complex, bool) looks at the real part only;
        # NumPy's astype tests both parts.
        arr = jnp_math.not_equal(arr, L._convert_element_type(0, _aval(arr).dtype, False))
    result = L._convert_element_type(arr, dt, False, warn_on_complex_to_real_cast=False)
    return L._array_copy(result) if copy else result


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
    return _reshape_method(L.asarray(a), shape, order=order, out_sharding=out_sharding)


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


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    arr = _ensure("swapaxes", a)
    perm = list(range(_aval(arr).ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]  # Python indexing, as np.arange
    return L.transpose(arr, perm)


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    arr = _ensure("moveaxis", a)
    nd = _aval(arr).ndim
    src = tuple(canonicalize_axis(i, nd) for i in _index_tuple(source))
    dst = tuple(canonicalize_axis(i, nd) for i in _index_tuple(destination))
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return L.transpose(arr, perm)


# ======================================================== squeeze / expand

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

def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
    from spec._src.numpy.creation import asarray
    from spec._src.numpy.util import promote_dtypes
    if isinstance(arrays, (np.ndarray, Array, Tracer)):
        arrays = list(arrays)
    _check_arraylike("concatenate", *arrays)
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        return concatenate([ravel(a) for a in arrays], axis=0, dtype=dtype)
    if np.ndim(arrays[0]) == 0 if not isinstance(arrays[0], (Array, Tracer)) else \
            _aval(arrays[0]).ndim == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    ax = canonicalize_axis(axis, _aval(arrays[0]).ndim)
    if dtype is None:
        outs = promote_dtypes(*[L.asarray(a) for a in arrays])
    else:
        outs = [asarray(a, dtype=dtype) for a in arrays]
    return L.concatenate(outs, ax)


def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    from spec._src.numpy.creation import asarray
    from spec._src.numpy.util import promote_dtypes
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
    if isinstance(arrays, (np.ndarray, Array, Tracer)):
        ax = canonicalize_axis(axis, np.ndim(arrays) if isinstance(arrays, np.ndarray)
                               else _aval(arrays).ndim)
        return concatenate(expand_dims(arrays, ax + 1), axis=ax, dtype=dtype)
    _check_arraylike("stack", *arrays)
    if dtype is not None:
        arrs = [asarray(a, dtype=dtype) for a in arrays]
    else:
        arrs = promote_dtypes(*[L.asarray(a) for a in arrays])
    return L.stack(arrs, axis=axis)


def hstack(tup: Any, dtype: Any = None) -> Any:
    _check_arraylike("hstack", *tup)
    arrs = [atleast_1d(m) for m in tup]
    return concatenate(arrs, axis=0 if _aval(arrs[0]).ndim == 1 else 1, dtype=dtype)


def vstack(tup: Any, dtype: Any = None) -> Any:
    _check_arraylike("vstack", *tup)
    return concatenate([atleast_2d(m) for m in tup], axis=0, dtype=dtype)


def _split(op: str, ary: Any, sections: Any, axis: int) -> list[Any]:
    arr = _ensure(op, ary)
    axis = operator.index(axis)
    size = _aval(arr).shape[canonicalize_axis(axis, _aval(arr).ndim)]
    if isinstance(sections, (tuple, list)) or (
            isinstance(sections, (np.ndarray, Array)) and np.ndim(sections) > 0):
        cuts = [int(np.clip(operator.index(i) + (size if operator.index(i) < 0 else 0),
                            0, size)) for i in sections]
        sizes = [int(d) for d in np.diff(np.asarray([0, *cuts, size]))]
    else:
        n = operator.index(sections)
        part, rest = divmod(size, n)
        if rest == 0:
            sizes = [part] * n
        elif op == "array_split":
            sizes = [part + 1] * rest + [part] * (n - rest)
        else:
            raise ValueError(f"array split does not result in an equal division: rest is {rest}")
    # JAX passes NumPy int64 sizes; they are part of the printed params.
    return list(L.split(arr, [np.int64(s) for s in sizes], axis=axis))  # type: ignore[misc]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    return _split("split", ary, indices_or_sections, axis)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    return _split("array_split", ary, indices_or_sections, axis)


# ============================================================= tile / repeat

def tile(A: Any, reps: Any) -> Any:
    arr = _ensure("tile", A)
    try:
        reps_t = tuple(operator.index(r) for r in reps)
    except TypeError:
        reps_t = (operator.index(reps),)
    nd = _aval(arr).ndim
    reps_t = (1,) * (nd - len(reps_t)) + reps_t
    if len(reps_t) > nd:
        arr = L.expand_dims(arr, tuple(range(len(reps_t) - nd)))
    return L.tile(arr, reps_t)


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None, out_sharding: Any = None) -> Any:
    """Repeat elements along ``axis``. A static scalar ``repeats`` broadcasts
    and reshapes; an array ``repeats`` (concrete, or traced together with a
    static ``total_repeat_length``) goes through JAX's scatter/cumsum/take
    sequence, which pads with the last element up to ``total_repeat_length``
    or truncates to it."""
    _check_arraylike("repeat", a, repeats)
    arr = L.asarray(a)
    if axis is None:
        arr = ravel(arr)
        axis = 0
    axis = operator.index(axis)
    if total_repeat_length is None:
        if isinstance(repeats, Tracer):
            from spec._src.core.errors import ConcretizationTypeError
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: "
                f"{repeats.aval}\nWhen jit-compiling jnp.repeat, the total number of repeats "
                "must be static. To fix this, either specify a static value for `repeats`, "
                "or pass a static value to `total_repeat_length`.")
        if np.ndim(repeats) == 0 and _aval(arr).ndim != 0:
            return _repeat_scalar(arr, operator.index(np.asarray(repeats).item()), axis)
        reps: Any = np.ravel(np.asarray(repeats))
        if _aval(arr).ndim != 0:
            reps = _np_broadcast_repeats(reps, _aval(arr).shape[axis])
        total = int(np.sum(reps))
    else:
        total = operator.index(total_repeat_length)
        reps = ravel(L.asarray(repeats))
        if _aval(arr).ndim != 0:
            reps = _broadcast_to_unsharded(reps, (_aval(arr).shape[axis],))
    return _repeat_general(arr, reps, axis, total)


def _np_broadcast_repeats(reps: np.ndarray, n: int) -> np.ndarray:
    try:
        return np.broadcast_to(reps, (n,))
    except ValueError:
        raise ValueError(f"jnp.repeat: repeats of shape {reps.shape} cannot be broadcast to "
                         f"the repeated axis of size {n}") from None


def _repeat_scalar(arr: Any, n: int, axis: int) -> Any:
    shp = _aval(arr).shape
    ax = canonicalize_axis(axis, len(shp))
    aux = list(shp)
    aux.insert(ax + 1, n)
    out = L.broadcast_in_dim(arr, tuple(aux), [i for i in range(len(aux)) if i != ax + 1])
    result = list(shp)
    result[ax] *= n
    return _reshape_method(out, tuple(result))


def _roll_static_fn(a: Any) -> Any:
    """``jnp.roll(a, 1)`` of a 1-D array, as JAX stages it (``_roll_static``)."""
    n = _aval(a).shape[0]
    if n == 0:
        return a
    i = (-1) % n
    return L.concatenate([L.slice_in_dim(a, i, n), L.slice_in_dim(a, 0, i)], 0)


def _repeat_general(arr: Any, reps: Any, axis: int, total: int) -> Any:
    shp = _aval(arr).shape
    if not shp:
        if np.shape(reps) == (1,):
            return creation.full([total], arr)
        raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                         "values of the parameter `repeats`.")
    ax = canonicalize_axis(axis, len(shp))
    if total == 0:
        result = list(shp)
        result[ax] = 0
        return _reshape_method(creation.array([], dtype=_aval(arr).dtype), tuple(result))
    if shp[ax] == 0:
        return arr
    # Each element's first output position is the exclusive cumsum of repeats;
    # marking those positions and cumsumming again gives, for every output
    # position, the index of the element it copies.
    exclusive = _jitted("_roll_static")(reps).at[0].set(0)
    starts = reductions.cumsum(exclusive)
    marks = creation.zeros([total], dtype="int32").at[starts].add(1)
    gather = reductions.cumsum(marks) - 1
    return indexing.take(arr, gather, axis=ax)


# ===================================================================== pad

_PAD_KWARGS: dict[str, tuple[str, ...]] = {
    "empty": (), "edge": (), "wrap": (), "constant": ("constant_values",),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}
PadPairs = tuple[tuple[Any, Any], ...]


def _pad_pairs(nvals: Any, nd: int, name: str) -> PadPairs:
    """``pad_width``-style input as one (before, after) pair per axis."""
    import spec._src.core.tree_util as tu
    from spec._src.core.errors import ConcretizationTypeError
    if any(isinstance(v, Tracer) for v in tu.tree_leaves(nvals)):
        raise ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: the "
            f"{name} argument of jnp.pad must be concrete")
    try:
        arr = np.asarray(nvals)
    except ValueError:
        raise TypeError(f"`{name}` entries must be the same shape: {nvals}") from None
    if arr.dtype == object:
        raise TypeError(f"`{name}` entries must be the same shape: {nvals}")
    if arr.shape == (nd, 2):
        return tuple((row[0], row[1]) for row in arr)
    if arr.shape == (1, 2):
        return tuple((arr[0, 0], arr[0, 1]) for _ in range(nd))
    if arr.shape == (2,):
        return tuple((arr[0], arr[1]) for _ in range(nd))
    if arr.shape in ((1,), ()):
        v = arr.reshape(-1)[0]
        return tuple((v, v) for _ in range(nd))
    raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. "
                     f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _is_dim(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_no_padding(pair: tuple[Any, Any], mode: str) -> None:
    if pair[0] > 0 or pair[1] > 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _lax_pad(x: Any, value: Any, widths: Sequence[tuple[Any, Any, int]]) -> Any:
    """``lax.pad`` keeping the width entries as given: JAX passes NumPy
    int64 widths through, and they are part of the printed params."""
    from spec._src.lax.structural import pad_p
    return pad_p.bind(x, value, padding_config=tuple(tuple(w) for w in widths))


def _pad_constant(x: Any, pw: PadPairs, constant_values: Any) -> Any:
    aval = _aval(x)
    nd = aval.ndim
    cv = L._convert_element_type(constant_values, aval.dtype, aval.weak_type)
    cv_nd = _aval(cv).ndim
    if cv_nd == 0:
        return _lax_pad(x, cv, [(lo, hi, 0) for lo, hi in pw])
    if cv_nd == 1:
        if _aval(cv).shape[-1] == 1:
            return _lax_pad(x, squeeze(cv), [(lo, hi, 0) for lo, hi in pw])
        if _aval(cv).shape[-1] != 2:
            raise ValueError("jnp.pad: constant_values has unsupported shape "
                             f"{_aval(cv).shape}. If the shape is 1D or 2D, the last dimension "
                             "must be of size 1 or 2.")
    cv = _broadcast_to_unsharded(cv, (nd, 2))
    for i in range(nd):
        widths: list[tuple[Any, Any, int]] = [(0, 0, 0)] * nd
        if pw[i][0] != 0:
            widths[i] = (pw[i][0], 0, 0)
            x = _lax_pad(x, cv[i, 0], widths)
        if pw[i][1] != 0:
            widths[i] = (0, pw[i][1], 0)
            x = _lax_pad(x, cv[i, 1], widths)
    return x


def _pad_wrap(x: Any, pw: PadPairs) -> Any:
    for i in range(_aval(x).ndim):
        size = _aval(x).shape[i]
        if size == 0:
            _check_no_padding(pw[i], "wrap")
            continue
        left_reps, left_rem = divmod(int(pw[i][0]), size)
        right_reps, right_rem = divmod(int(pw[i][1]), size)
        parts = []
        if left_rem > 0:
            parts.append(L.slice_in_dim(x, size - left_rem, size, axis=i))
        parts += (left_reps + right_reps + 1) * [x]
        if right_rem > 0:
            parts.append(L.slice_in_dim(x, 0, right_rem, axis=i))
        x = L.concatenate(parts, i)
    return x


def _reflect_side(x: Any, i: int, padding: int, before: bool, mode: str, odd: bool,
                  size: int) -> Any:
    edge = L.slice_in_dim(x, 0, 1, axis=i) if before else L.slice_in_dim(x, -1, None, axis=i)
    offset = 1 if (mode == "reflect" and size > 1) else 0
    while padding > 0:
        cur = min(padding, size - offset)
        padding -= cur
        if before:
            part = L.slice_in_dim(x, offset, offset + cur, axis=i)
        else:
            stop = None if (mode == "symmetric" or size == 1) else -1
            part = L.slice_in_dim(x, -(cur + offset), stop, axis=i)
        part = flip(part, axis=i)
        if odd:
            part = 2 * edge - part
            if size > 1:
                edge = (L.slice_in_dim(part, 0, 1, axis=i) if before
                        else L.slice_in_dim(part, -1, None, axis=i))
        x = L.concatenate([part, x] if before else [x, part], i)
    return x


def _pad_reflect(x: Any, pw: PadPairs, mode: str, reflect_type: str) -> Any:
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    for i in range(_aval(x).ndim):
        size = _aval(x).shape[i]
        if size == 0:
            _check_no_padding(pw[i], mode)
            continue
        if pw[i][0] == 0 and pw[i][1] == 0:
            continue
        x = _reflect_side(x, i, int(pw[i][0]), True, mode, reflect_type == "odd", size)
        x = _reflect_side(x, i, int(pw[i][1]), False, mode, reflect_type == "odd", size)
    return x


def _pad_edge(x: Any, pw: PadPairs) -> Any:
    for i in range(_aval(x).ndim):
        n = _aval(x).shape[i]
        if n == 0:
            _check_no_padding(pw[i], "edge")
            continue
        before = repeat(L.slice_in_dim(x, 0, 1, axis=i), pw[i][0], axis=i)
        after = repeat(L.slice_in_dim(x, n - 1, n, axis=i), pw[i][1], axis=i)
        x = L.concatenate([before, x, after], i)
    return x


def _pad_stats(x: Any, pw: PadPairs, stat_length: PadPairs | None, mode: str) -> Any:
    stats: dict[str, Callable[..., Any]] = {"maximum": reductions.amax, "minimum": reductions.amin,
                                            "mean": reductions.mean}
    stat = stats[mode]
    for i in range(_aval(x).ndim):
        if stat_length is None:
            s_before = s_after = stat(x, axis=i, keepdims=True)
        else:
            n = _aval(x).shape[i]
            lb, la = (int(v) for v in stat_length[i])
            if lb == 0 or la == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            lb, la = min(lb, n), min(la, n)
            sl_before = L.slice_in_dim(x, 0, lb, axis=i)
            sl_after = L.slice_in_dim(x, -la, None, axis=i)
            s_before = stat(sl_before, axis=i, keepdims=True)
            s_after = stat(sl_after, axis=i, keepdims=True)
        aval = _aval(x)
        if T.is_int(aval.dtype):
            s_before, s_after = jnp_math.round(s_before), jnp_math.round(s_after)
        s_before = L._convert_element_type(s_before, aval.dtype, aval.weak_type)
        s_after = L._convert_element_type(s_after, aval.dtype, aval.weak_type)
        x = L.concatenate([repeat(s_before, pw[i][0], axis=i), x,
                           repeat(s_after, pw[i][1], axis=i)], i)
    return x


def _pad_empty(x: Any, pw: PadPairs) -> Any:
    for i in range(_aval(x).ndim):
        shp = _aval(x).shape
        before = creation.empty_like(x, shape=shp[:i] + (int(pw[i][0]),) + shp[i + 1:])
        after = creation.empty_like(x, shape=shp[:i] + (int(pw[i][1]),) + shp[i + 1:])
        x = L.concatenate([before, x, after], i)
    return x


def _pad_fn(array: Any, pad_width: PadPairs, mode: str, constant_values: Any,
            stat_length: Any, end_values: Any, reflect_type: str) -> Any:
    x = L.asarray(array)
    nd = _aval(x).ndim
    if nd == 0:
        return x
    pw = _pad_pairs(pad_width, nd, "pad_width")
    if any(v < 0 for pair in pw for v in pair):
        raise ValueError("index can't contain negative values")
    if mode == "constant":
        from spec._src.numpy.creation import asarray
        return _pad_constant(x, pw, asarray(constant_values))
    if mode == "wrap":
        return _pad_wrap(x, pw)
    if mode in ("symmetric", "reflect"):
        return _pad_reflect(x, pw, mode, reflect_type)
    if mode == "edge":
        return _pad_edge(x, pw)
    if mode in ("maximum", "minimum", "mean"):
        sl = None if stat_length is None else _pad_pairs(stat_length, nd, "stat_length")
        return _pad_stats(x, pw, sl, mode)
    if mode == "empty":
        return _pad_empty(x, pw)
    raise NotImplementedError(f"jnp.pad mode {mode!r} is not specified yet")


@functools.cache
def _pad_jit() -> Callable[..., Any]:
    from spec._src.api.jit import jit
    _pad_fn.__name__ = _pad_fn.__qualname__ = "_pad"
    jitted: Callable[..., Any] = jit(_pad_fn, static_argnums=(1, 2, 4, 5, 6))
    return jitted


def pad(array: Any, pad_width: Any, mode: str | Callable[..., Any] = "constant",
        **kwargs: Any) -> Any:
    """``numpy.pad`` for the modes constant, edge, wrap, reflect, symmetric
    (even/odd), empty, maximum, minimum and mean; a visible ``_pad`` jit as in
    JAX, whose constant mode is one ``lax.pad``."""
    arr = _ensure("pad", array)
    pw = _pad_pairs(pad_width, _aval(arr).ndim, "pad_width")
    if pw and not all(_is_dim(lo) and _is_dim(hi) for lo, hi in pw):
        raise TypeError("`pad_width` must be of integral type.")
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not specified yet")
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode in ("linear_ramp", "median"):
        raise NotImplementedError(f"jnp.pad mode {mode!r} is not specified yet")
    stat_length = kwargs.get("stat_length")
    if stat_length is not None:
        stat_length = _hashable(stat_length)
    return _pad_jit()(arr, pw, mode, kwargs.get("constant_values", 0), stat_length,
                      _hashable(kwargs.get("end_values", 0)), kwargs.get("reflect_type", "even"))


def _hashable(v: Any) -> Any:
    """Static jit arguments must hash: nested sequences become tuples."""
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(_hashable(e) for e in v)
    return v


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
    from spec._src.lax.elementwise_api import select
    return select(which, m, creation.zeros_like(m))


def _triu_fn(m: Any, k: int = 0) -> Any:
    m = _ensure("triu", m)
    which, _ = _tri_mask(m, k - 1, "triu")
    from spec._src.lax.elementwise_api import select
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
        return L.rev(m, list(range(nd)))
    return L.rev(m, [canonicalize_axis(ax, nd) for ax in _index_tuple(axis)])


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
        from spec._src.numpy.creation import array
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
    if hasattr(a, "shape"):
        return tuple(a.shape)
    return tuple(np.shape(a))


def ndim(a: Any) -> int:
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


def _repeat_method(self: Any, repeats: Any, axis: int | None = None, *,
                   total_repeat_length: int | None = None) -> Any:
    return repeat(self, repeats, axis, total_repeat_length=total_repeat_length)


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
        "repeat": _repeat_method,
    }
    for cls in (Array, Tracer):
        for name, fn in methods.items():
            setattr(cls, name, fn)


_install_array_methods()
