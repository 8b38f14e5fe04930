"""lax wrappers for structural primitives, with JAX's signatures.

The wrappers canonicalise static arguments (shapes, axes, dtypes), skip the
bind where JAX returns its operand unchanged, and otherwise bind exactly one
primitive (or the short sequence JAX emits), so that jaxprs match JAX's.
"""

from __future__ import annotations

import math
import operator
import weakref
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.array import Array, host_value
from spec._src.core.interpreter import Tracer, canonical_aval_of, hooks
from spec._src.core.registry import primitive
from spec._src.interpreters.ad_util import zeros_hooks
from spec._src.lax.elementwise import select_n_p
from spec._src.lax.reshard import place, reshard
from spec._src.lax.structural import (
    _convert_impl,
    bitcast_convert_type_p,
    broadcast_in_dim_p,
    concatenate_p,
    convert_element_type_p,
    copy_p,
    dynamic_slice_p,
    dynamic_update_slice_p,
    empty_p,
    fold_convert,
    iota_p,
    pad_p,
    reshape_p,
    rev_p,
    slice_p,
    split_p,
    squeeze_p,
    stack_p,
    tile_p,
    transpose_p,
    unstack_p,
)

__all__ = [
    "asarray", "bitcast_convert_type", "broadcast", "broadcast_in_dim", "broadcast_to_rank",
    "broadcasted_iota", "collapse", "concatenate", "convert_element_type", "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "empty", "expand_dims", "full",
    "full_like", "index_in_dim", "iota", "pad", "reshape", "rev", "slice", "slice_in_dim",
    "split", "squeeze", "stack", "tile", "transpose", "unstack",
]

_builtin_slice = slice


def _is_array(x: Any) -> bool:
    """JAX's ``isinstance(x, Array)``: concrete arrays and tracers alike."""
    return isinstance(x, (Array, Tracer))


def canonicalize_axis(axis: Any, ndim: int) -> int:
    ax: int = operator.index(axis)
    if not -ndim <= ax < ndim:
        raise ValueError(f"axis {ax} is out of bounds for array of dimension {ndim}")
    return ax + ndim if ax < 0 else ax


def _ndim(x: Any) -> int:
    return canonical_aval_of(x).ndim if not isinstance(x, (list, tuple)) else int(np.ndim(x))


def _shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, (list, tuple)):
        return tuple(np.shape(x))
    return canonical_aval_of(x).shape


# ================================================================ conversion

def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast to ``new_dtype`` (a strong type)."""
    return _convert_element_type(operand, T.to_dtype(new_dtype, "convert_element_type"), False)


def _convert_element_type(operand: Any, new_dtype: T.DType | None = None,
                          weak_type: bool = False, sharding: Any = None,
                          warn_on_complex_to_real_cast: bool = True) -> Any:
    if hasattr(operand, "__jax_array__") and not _is_array(operand):
        operand = operand.__jax_array__()
    aval = canonical_aval_of(operand)
    new_dtype = aval.dtype if new_dtype is None else new_dtype
    weak_type = bool(weak_type)
    if (warn_on_complex_to_real_cast and T.is_complex(aval.dtype)
            and not T.is_complex(new_dtype)):
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=3)
    if _is_array(operand):
        if aval.dtype == new_dtype and aval.weak_type == weak_type:
            return operand
        folded = fold_convert(operand, new_dtype, weak_type) if sharding is None else None
        if folded is not None:
            return folded
        return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type,
                                           sharding=sharding)
    # Python scalars and NumPy values convert now; under a trace the result is
    # a literal (scalars) or a constant, as in JAX.
    if type(operand) is np.ndarray and operand.ndim:
        return _converted_numpy(operand, new_dtype, weak_type)
    if isinstance(operand, int) and not isinstance(operand, bool):
        raw = np.asarray(operand)
        if raw.dtype == object:  # beyond int64: let NumPy round it to the target
            raw = raw.astype(np.float64 if not T.is_int(new_dtype) else np.int64)
    else:
        raw = np.asarray(operand)
    if raw.dtype not in T.ALL_DTYPES:
        raw = raw.astype(aval.dtype)
    (out,) = _convert_impl(raw, new_dtype=new_dtype, weak_type=weak_type)
    return host_value(np.asarray(out), T.ArrayType(raw.shape, new_dtype, weak_type),
                      "convert_element_type")


# While staging, a NumPy array is converted once per (trace, array, dtype,
# weak type): a program that reads the same NumPy constant twice captures one
# constant, as in JAX. Entries keep their trace alive (so its id is not
# reused) and a weak reference to the source array (to detect a recycled id).
# Evaluation never caches: the array may change between calls.
_NUMPY_CONVERSIONS: dict[tuple[int, int, T.DType, bool], tuple[Any, Any, Any]] = {}
_NUMPY_CONVERSIONS_LIMIT = 256


def _converted_numpy(x: np.ndarray, dtype: T.DType, weak: bool) -> Any:
    from spec._src.core.interpreter import EvalTrace, current_trace
    trace = current_trace()
    staging = type(trace) is not EvalTrace
    key = (id(trace), id(x), dtype, weak)
    known = _NUMPY_CONVERSIONS.get(key) if staging else None
    if known is not None and known[1]() is x:
        return known[2]
    raw = x if x.dtype in T.ALL_DTYPES else x.astype(T.dtype_of_value(x))
    (out,) = _convert_impl(raw, new_dtype=dtype, weak_type=weak)
    result = host_value(np.asarray(out), T.ArrayType(raw.shape, dtype, weak),
                        "convert_element_type")
    if staging:
        if len(_NUMPY_CONVERSIONS) >= _NUMPY_CONVERSIONS_LIMIT:
            _NUMPY_CONVERSIONS.clear()
        _NUMPY_CONVERSIONS[key] = (trace, weakref.ref(x), result)
    return result


def asarray(x: Any) -> Any:
    """``lax.asarray``: arrays unchanged; Python scalars become weak arrays."""
    if _is_array(x):
        return x
    if T.is_python_scalar(x) and type(x) is not bool:
        return _convert_element_type(x, T.python_scalar_dtype(type(x)), True)
    return _convert_element_type(x, canonical_aval_of(x).dtype, False)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    return bitcast_convert_type_p.bind(operand,
                                       new_dtype=T.to_dtype(new_dtype, "bitcast_convert_type"))


def _array_copy(x: Any) -> Any:
    return copy_p.bind(x)


# ================================================================== creation
# The creation wrappers and their shardings (SPEC.md, "creation functions and
# shardings"). A sharding is concrete when it names real devices (a
# NamedSharding over a Mesh, a SingleDeviceSharding) and abstract when it is
# a type-level NamedSharding over an AbstractMesh; JAX treats the two apart.

class NotAPlacementError(AttributeError, TypeError):
    """A ``sharding`` that is not a Sharding object (a bare PartitionSpec given
    to lax.full or as jnp's ``device=``). JAX fails looking an attribute up on
    it (AttributeError); it is a TypeError too, the class that names the fault."""


def _sharding_is_concrete(sharding: Any, who: str) -> bool:
    from spec._src.core.sharding import AbstractMesh, NamedSharding, Sharding
    if not isinstance(sharding, Sharding):
        raise NotAPlacementError(
            f"{who}: sharding must be a jax.sharding.Sharding (a NamedSharding, or a device's "
            f"SingleDeviceSharding), got {sharding!r} of type {type(sharding).__name__}")
    return not (isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh))


def _canonical_out_sharding(sharding: Any, api_name: str) -> Any:
    """An ``out_sharding`` argument (None, P, NamedSharding) as the abstract
    NamedSharding a primitive records (TypeError/ValueError as JAX's)."""
    from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
    return canonicalize_out_sharding(sharding, api_name)


def iota(dtype: Any, size: int) -> Any:
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *,
                     out_sharding: Any = None) -> Any:
    dt = T.to_dtype(dtype, "broadcasted_iota")
    shp = T.check_shape(shape, "broadcasted_iota")
    dim = operator.index(dimension)
    sharding = _canonical_out_sharding(out_sharding, "broadcasted_iota")
    if sharding is not None:
        # The result type must fit the layout (rank, divisibility): JAX's
        # ValueError when it builds that type. Checked here until iota's
        # typing rule does it; the param keeps the spec as given.
        from spec._src.lax.sharding_reduce_dot import fit_out
        fit_out(sharding, shp)
    return iota_p.bind(dtype=dt, shape=shp, dimension=dim, sharding=sharding)


def empty(shape: Sequence[int], dtype: Any, *, out_sharding: Any = None) -> Any:
    return empty_p.bind(shape=T.check_shape(shape, "empty"), dtype=dtype,
                        out_sharding=out_sharding)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *,
         sharding: Any = None) -> Any:
    shp = T.check_shape(shape, "full")
    fill_shape = _shape(fill_value)
    if fill_shape:
        raise TypeError("full must be called with scalar fill_value, got fill_value.shape "
                        f"{fill_shape}.")
    if dtype is None:
        aval = canonical_aval_of(fill_value)
        fill_dtype, weak = aval.dtype, aval.weak_type
    else:
        fill_dtype, weak = T.to_dtype(dtype, "full"), False
    value = _convert_element_type(fill_value, fill_dtype, weak)
    if sharding is None:
        return broadcast(value, shp)
    if not _sharding_is_concrete(sharding, "lax.full"):
        return _broadcast_scalar_sharded(value, shp, sharding)
    if _is_concrete_value(value):
        return _filled_on_devices(value, fill_dtype, shp, sharding)
    # Staged, a concrete sharding places nothing: JAX drops it.
    return broadcast(value, shp)


def _zeros_of_type(aval: T.ArrayType) -> Any:
    """A zero of exactly type ``aval``: weak types kept, so that sums with it
    (add_any takes its first operand's type) keep theirs; sharded zeros are
    laid out as the type says (cotangent types are a function of primal
    types, zeros included)."""
    zero = _convert_element_type(0, aval.dtype, aval.weak_type)
    if aval.sharding is not None and not aval.shape:
        # A scalar needs no broadcast, only its layout: JAX reshards it.
        return primitive("reshard").bind(zero, dst_sharding=aval.sharding, concrete_mesh=None)
    return full(aval.shape, zero, sharding=aval.sharding)


zeros_hooks.array_zeros = _zeros_of_type  # the zeros autodiff materialises (zeros_like_aval)


def _is_concrete_value(value: Any) -> bool:
    """JAX's ``isinstance(fill_value, ArrayImpl)``: a concrete array, i.e. any
    Array when evaluating eagerly, and under a trace only a captured device
    array (a Python scalar converted while tracing is a literal)."""
    from spec._src.core.interpreter import EvalTrace, current_trace
    if not isinstance(value, Array):
        return False
    return type(current_trace()) is EvalTrace or value._py is None


def _filled_on_devices(value: Any, dtype: T.DType, shape: tuple[int, ...], sharding: Any) -> Any:
    """A concrete array of ``shape`` filled with ``value``, laid out by the
    concrete ``sharding`` (JAX builds it shard by shard, so the result is not
    weakly typed). The layout is checked first: rank, divisibility, and JAX
    cannot place blocks of an unreduced layout (NotImplementedError)."""
    from spec._src.core.array import on_device
    from spec._src.core.sharding import NamedSharding
    sharding.shard_shape(shape)
    if isinstance(sharding, NamedSharding):
        sharding.devices_indices_map(shape)
    filled = on_device(broadcast(_convert_element_type(value, dtype, False), shape))
    if isinstance(sharding, NamedSharding):
        return place(filled, sharding)
    return filled  # one device: the embedded backend keeps every array on device 0


def _broadcast_scalar_sharded(value: Any, shape: tuple[int, ...], sharding: Any) -> Any:
    """JAX's ``broadcast(value, shape, out_sharding=sharding)`` for a scalar:
    the sharding canonicalised (an empty mesh's is none); a rank-0 result is
    the scalar itself, moved to the layout by a reshard when its own differs."""
    s = _canonical_out_sharding(sharding, "broadcast_in_dim")
    if s is None:
        return broadcast(value, shape)
    if _layout_kept(value):
        # JAX's ValueError building the result type (rank, divisibility);
        # checked here until broadcast_in_dim's typing rule does it.
        from spec._src.lax.sharding_reduce_dot import fit_out
        fit_out(s, shape)
    if not shape and canonical_aval_of(value).sharding != s:
        return reshard(value, s)
    return broadcast(value, shape, out_sharding=s)


def _layout_kept(value: Any) -> bool:
    """Whether a broadcast of ``value`` gets its ``sharding`` param as its
    type's layout: only with explicit mesh axes in context or on ``value``
    (otherwise JAX's sharding rule is not consulted and the result is
    replicated, whatever the param says)."""
    from spec._src.core.sharding import AxisType, get_abstract_mesh
    own = canonical_aval_of(value).sharding
    meshes = [get_abstract_mesh()] + ([own.mesh] if own is not None else [])
    return any(AxisType.Explicit in m.axis_types for m in meshes)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None,
              sharding: Any = None) -> Any:
    fill_shape = _shape(x) if shape is None else T.check_shape(shape, "full_like")
    if hasattr(x, "dtype") and not _is_array(x) and not isinstance(x, (np.ndarray, np.generic)):
        x_dtype, x_weak = T.canonicalize_dtype(np.dtype(x.dtype)), bool(
            getattr(x, "weak_type", False))  # ShapeDtypeStruct-like
    else:
        aval = canonical_aval_of(x)
        x_dtype, x_weak = aval.dtype, aval.weak_type
    weak = dtype is None and x_weak
    dt = x_dtype if dtype is None else T.canonicalize_dtype(np.dtype(dtype))
    if sharding is None:
        sharding = like_sharding(x, fill_shape, shape is None, weak)
    out = full(fill_shape, _convert_element_type(fill_value, dt, weak), sharding=sharding)
    out = reduced_like(out, x)
    # Inside shard_map the result varies wherever x does (a free cast).
    vma: frozenset[Any] = getattr(getattr(x, "aval", None), "vma", frozenset())
    if vma:
        from spec._src.lax.shard_map import pvary
        out = pvary(out, tuple(vma - canonical_aval_of(out).vma))
    return out


def like_sharding(x: Any, shape: tuple[int, ...], same_shape: bool, weak: bool) -> Any:
    """The sharding a ``*_like`` result inherits from ``x`` when none is given.
    A traced ``x`` passes its type's sharding (reduced/unreduced axes too) when
    no new shape is asked for. A concrete ``x`` passes its placement when it
    was placed on purpose (committed: spec's arrays on a mesh, a
    ShapeDtypeStruct's sharding), over real devices or an explicit mesh, ``x``
    is not weakly typed, and the shape is kept or the layout is replicated."""
    from spec._src.core.sharding import AxisType, NamedSharding, get_concrete_mesh
    if isinstance(x, Tracer):
        return x.aval.sharding if same_shape else None
    s = x._sharding if isinstance(x, Array) else getattr(x, "sharding", None)
    if s is None or weak or not getattr(x, "_committed", True):
        return None
    placed = (_sharding_is_concrete(s, "full_like") or not get_concrete_mesh().empty
              or (isinstance(s, NamedSharding)
                  and all(t == AxisType.Explicit for t in s.mesh.axis_types)))
    if placed and (shape == _shape(x) or s.is_fully_replicated):
        return s
    return None


def reduced_like(out: Any, x: Any) -> Any:
    """JAX's last step of ``*_like`` outside shard_map: under an explicit
    context mesh, a rank-0 result that is replicated over the axes on which
    the result or ``x`` is reduced is resharded to be reduced over them."""
    from spec._src.core.sharding import AxisType, P, get_abstract_mesh
    mesh = get_abstract_mesh()
    if mesh.empty or any(t != AxisType.Explicit for t in mesh.axis_types):
        return out
    out_aval = canonical_aval_of(out)
    if out_aval.shape:
        return out
    out_spec = getattr(out_aval.sharding, "spec", None)
    x_spec = getattr(getattr(getattr(x, "aval", None), "sharding", None), "spec", None)
    if x_spec is None and not isinstance(x, (Array, Tracer)):
        x_spec = getattr(getattr(x, "sharding", None), "spec", None)
    reduced = frozenset().union(*(s.reduced for s in (out_spec, x_spec) if s is not None))
    if not reduced:
        return out
    used: set[Any] = set()
    if out_spec is not None:
        for entry in out_spec.partitions:
            used.update(entry if isinstance(entry, tuple) else (entry,))
        used |= out_spec.unreduced | out_spec.reduced
    if reduced <= frozenset(mesh.axis_names) - used:
        return reshard(out, P(reduced=reduced))
    return out


# ============================================================== broadcasting

def _out_sharding(sharding: Any, api_name: str) -> Any:
    """A P or NamedSharding as the abstract NamedSharding primitives record."""
    if sharding is None:
        return None
    from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
    return canonicalize_out_sharding(sharding, api_name)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     *, out_sharding: Any = None) -> Any:
    shp = tuple(operator.index(d) for d in shape) if isinstance(
        shape, (tuple, list, np.ndarray)) else shape
    dims = tuple(operator.index(d) for d in broadcast_dimensions)
    out_sharding = _out_sharding(out_sharding, "broadcast_in_dim")
    if (_ndim(operand) == len(shp) and not dims and _is_array(operand)
            and out_sharding is None):
        return operand
    if (_is_array(operand) and out_sharding is None and _shape(operand) == tuple(shp)
            and dims == tuple(range(len(shp)))):
        # The identity: JAX's staging forwards such an equation to its operand
        # (so e.g. expand_dims(x, ()) adds nothing to a jaxpr).
        return operand
    if (out_sharding is not None and _shape(operand) == tuple(shp)
            and dims == tuple(range(len(shp)))
            and canonical_aval_of(operand).sharding != out_sharding):
        # Only the layout changes: a reshard, as JAX stages it.
        return reshard(operand, out_sharding)
    return broadcast_in_dim_p.bind(operand, shape=shp, broadcast_dimensions=dims,
                                   sharding=out_sharding)


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    if len(sizes) == 0 and out_sharding is None:
        return asarray(operand)
    shp = _shape(operand)
    dims = tuple(range(len(sizes), len(sizes) + len(shp)))
    return broadcast_in_dim(operand, tuple(sizes) + shp, dims, out_sharding=out_sharding)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    nd = _ndim(x)
    if nd == rank:
        return asarray(x)
    return broadcast(x, (1,) * (rank - nd))


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    dimensions = tuple(dimensions)
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    ndim_out = _ndim(array) + len(dimensions)
    dims = [canonicalize_axis(i, ndim_out) for i in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
    result_shape = list(_shape(array))
    for i in sorted(dims):
        result_shape.insert(i, 1)
    kept = [i for i in range(ndim_out) if i not in dims]
    return broadcast_in_dim(array, tuple(result_shape), kept)


# ================================================================= reshaping

def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            *, out_sharding: Any = None) -> Any:
    sizes = T.check_shape(new_sizes, "reshape", "new_sizes")
    shp = _shape(operand)
    if dimensions is None:
        dims: tuple[int, ...] | None = None
        same_dims = True
    else:
        dims = tuple(operator.index(d) for d in dimensions)
        same_dims = dims == tuple(range(len(shp)))
    out_sharding = _out_sharding(out_sharding, "reshape")
    same_sharding = out_sharding is None or canonical_aval_of(operand).sharding == out_sharding
    if shp and shp == sizes and same_dims and same_sharding and _is_array(operand):
        return operand
    return reshape_p.bind(operand, new_sizes=sizes,
                          dimensions=None if dims is None or same_dims else dims,
                          sharding=out_sharding)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    perm = tuple(operator.index(d) for d in permutation)
    if perm == tuple(range(_ndim(operand))) and _is_array(operand):
        return operand
    return transpose_p.bind(operand, permutation=perm)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    nd = _ndim(array)
    dims = tuple(sorted(canonicalize_axis(i, nd) for i in dimensions))
    if not dims and _is_array(array):
        return array
    return squeeze_p.bind(array, dimensions=dims)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    return rev_p.bind(operand, dimensions=tuple(dimensions))


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    shp = _shape(operand)
    lo, hi, _ = _builtin_slice(start_dimension, stop_dimension).indices(len(shp))
    if hi < lo:
        raise ValueError(f"Invalid dimension range passed to collapse: {shp}"
                         f"[{start_dimension}:{stop_dimension}]")
    size = math.prod(shp[lo:hi])
    return reshape(operand, shp[:lo] + (size,) + shp[hi:])


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    if len(operands) == 0:
        raise ValueError("concatenate requires a non-empty sequences of arrays")
    if len(operands) == 1 and _is_array(operands[0]):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=operator.index(dimension))


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    arrays = [asarray(op) for op in operands]
    if not arrays:
        raise ValueError("stack expects at least one operand, got 0.")
    ax = canonicalize_axis(axis, _ndim(arrays[0]) + 1)
    return stack_p.bind(*arrays, axis=ax)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> Sequence[Any]:
    operand = asarray(operand)
    return split_p.bind(operand, sizes=tuple(sizes),  # type: ignore[no-any-return]
                        axis=canonicalize_axis(axis, _ndim(operand)))


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices along ``axis`` (what iterating over a traced array gives in JAX)."""
    arr = asarray(x)
    return tuple(unstack_p.bind(arr, axis=canonicalize_axis(axis, _ndim(arr))))


hooks.unstack = unstack  # iterating over a tracer (Tracer.__iter__)

def tile(operand: Any, reps: Sequence[int]) -> Any:
    return tile_p.bind(operand, reps=tuple(reps))


def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    config = tuple(tuple(operator.index(v) for v in entry) for entry in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


# =================================================================== slicing

def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    return slice_p.bind(operand, start_indices=tuple(start_indices),
                        limit_indices=tuple(limit_indices),
                        strides=None if strides is None else tuple(strides))


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    shp = _shape(operand)
    starts, limits, strides = [0] * len(shp), list(shp), [1] * len(shp)
    axis = int(axis)
    size = shp[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = size if limit_index is None else operator.index(limit_index)
    starts[axis] = start + size if start < 0 else start
    limits[axis] = limit + size if limit < 0 else limit
    strides[axis] = operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    index, axis = operator.index(index), int(axis)
    size = _shape(operand)[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return result if keepdims else squeeze(result, (axis,))


def _dynamic_slice_indices(operand: Any, start_indices: Any,
                           allow_negative: bool | Sequence[bool]) -> list[Any]:
    shp = _shape(operand)
    if not isinstance(start_indices, (list, tuple)):
        idx_aval = canonical_aval_of(start_indices)
        if idx_aval.ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got {idx_aval.shape}")
        start_indices = list(start_indices)
    if len(start_indices) != len(shp):
        raise ValueError("Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shp})")
    flags = [allow_negative] * len(shp) if isinstance(allow_negative, bool) else list(
        allow_negative)
    out: list[Any] = []
    for i, d, neg in zip(start_indices, shp, flags):
        dt = canonical_aval_of(i).dtype
        if T.is_unsigned_int(dt):
            out.append(i)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            if i < 0 and not neg:
                raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                                 "allow_negative_indices=False")
            out.append(_convert_element_type(int(i) + d if i < 0 else i, dt, False))
        elif neg:
            out.append(_wrap_negative(i, d, dt))
        else:
            out.append(i)
    return out


def _wrap_negative(i: Any, d: int, dt: T.DType) -> Any:
    """``select(i < 0, i + d, i)`` as JAX stages it for a dynamic index."""
    d_arr = _convert_element_type(d, dt, False)
    negative = i < 0
    return select_n_p.bind(negative, i, i + d_arr)


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    idx = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    sizes = T.check_shape(slice_sizes, "dynamic_slice", "slice_sizes")
    return dynamic_slice_p.bind(operand, *idx, slice_sizes=sizes)


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    idx = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *idx)


def _zero_like_index(start_index: Any) -> Any:
    """The start index of the untouched axes: 0 of the given index's type."""
    if isinstance(start_index, int) and not isinstance(start_index, bool):
        return 0
    dt = canonical_aval_of(start_index).dtype
    return host_value(np.zeros((), dt), T.ArrayType((), dt, False), "index")


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    shp = _shape(operand)
    axis = int(axis)
    starts: list[Any] = [_zero_like_index(start_index)] * len(shp)
    starts[axis] = start_index
    sizes = list(shp)
    sizes[axis] = operator.index(slice_size)
    flags = [False] * len(shp)
    flags[axis] = allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=flags)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    nd = _ndim(operand)
    axis = int(axis)
    starts: list[Any] = [_zero_like_index(start_index)] * nd
    starts[axis] = start_index
    flags = [False] * nd
    flags[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=flags)
