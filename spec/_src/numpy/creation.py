"""Array creation functions of ``spec.numpy``, built on the structural lax wrappers.

Each function emits the primitives JAX 0.12's ``jax.numpy`` emits for the same
call (compared as jaxpr text in tests/test_structural.py).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spec._src.api import placement
from spec._src.api.jit import jit
from spec._src.core.canonical import canonical_shape
from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import (
    Tracer, canonical_aval_of, context_mesh_placing, device_array)
from spec._src.core.prng import is_key_dtype
from spec._src.core.sharding import (
    AxisType, NamedSharding, P, Sharding, SingleDeviceSharding, get_concrete_mesh)
from spec._src.core.state_types import RefType
from spec._src.core.tokens import Token
from spec._src.lax import elementwise as ew
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.prng import full_keys
from spec._src.core.interpreter import check_divisible
from spec._src.lax.reshard import place, reshard
from spec._src.lax.shaping import _convert_element_type
from spec._src.numpy.util import check_arraylike

__all__ = [
    "arange", "array", "asarray", "copy", "empty", "empty_like", "eye", "full", "full_like",
    "identity", "linspace", "ones", "ones_like", "tri", "zeros", "zeros_like", "frombuffer",
    "fromstring",
]


def _user_dtype(dtype: Any, fun_name: str) -> T.DType:
    return T.to_dtype(dtype, fun_name)


def _shape_arg(shape: Any, fun_name: str) -> tuple[int, ...]:
    """``canonicalize_shape``: an int or a sequence of ints (TypeError otherwise)."""
    return canonical_shape(shape, fun_name)


def _forgot_tuple(name: str, shape: Any, dtype: Any) -> None:
    if isinstance(dtype, int) and isinstance(shape, int):
        raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally "
                        f"write `jax.numpy.{name}({shape}, {dtype})` when you meant "
                        f"`jax.numpy.{name}(({shape}, {dtype}))`, i.e. with a single tuple "
                        "argument for the shape?")


# ===================================================================== array

def array(object: Any, dtype: Any = None, *, copy: bool = True, order: str | None = "K",
          ndmin: int = 0, device: Any = None, out_sharding: Any = None) -> Any:
    out = _converted(object, dtype, copy, order, ndmin)
    if context_mesh_placing() and type(out) is Array and out._sharding is None \
            and not isinstance(object, (Array, Tracer)) \
            and not any(isinstance(leaf, (Array, Tracer)) for leaf in _leaves(object)):
        # Host data under set_mesh is copied to every device of the mesh, as
        # JAX transfers it (a placement naming no dimension).
        return place(out, NamedSharding(get_concrete_mesh(), P()))
    return out


def _converted(object: Any, dtype: Any, copy: bool, order: str | None, ndmin: int) -> Any:
    """``array``'s value, where the default device holds it."""
    if order is not None and order != "K":
        raise NotImplementedError("Only implemented for order='K'")
    if type(object) is Token:
        # JAX's token is no array to NumPy: an object array JAX refuses.
        raise TypeError(f"Value '<jax._src.core.Token object at {hex(id(object))}>' with dtype "
                        "object is not a valid JAX array type. Only arrays of numeric types are "
                        "supported by JAX.")
    if dtype is None and ndmin == 0:
        if isinstance(object, Tracer):
            # The final conversion JAX makes: a new value for an eager
            # autodiff tracer, the tracer itself otherwise.
            aval = canonical_aval_of(object)
            value = slicing._array_copy(object) if copy else object
            return device_array(_convert_element_type(value, aval.dtype, aval.weak_type))
        if isinstance(object, (int, float, complex, np.number, np.ndarray)):
            return device_array(
                L.asarray(object) if not isinstance(object, np.ndarray) else
                _convert_element_type(object, T.dtype_of_value(object), False))
    dt = None if dtype is None else _user_dtype(dtype, "array")
    weak = dt is None and _is_weak(object)
    if hasattr(object, "__jax_array__") and not isinstance(object, (Array, Tracer)):
        object = object.__jax_array__()
    leaves = _leaves(object)
    if any(leaf is None for leaf in leaves):
        raise ValueError("None is not a valid value for jnp.array")
    if dt is None:
        dt = _lattice_dtype(leaves)
    out: Any
    if isinstance(object, (Array, Tracer)):
        out = slicing._array_copy(object) if copy else object
    elif not any(isinstance(leaf, (Array, Tracer)) for leaf in leaves):
        if T.is_python_scalar(object):
            T.value_type(object)  # overflow check of Python ints, as coerce_to_array
        with np.errstate(all="ignore"):
            raw = np.asarray(_numpy_leaves(object), dtype=dt)
        out = raw
    elif isinstance(object, (list, tuple)):
        if len(object) == 0:
            out = np.array([], dtype=dt)
        else:
            parts = [L.expand_dims(array(e, dtype=dt, copy=False), [0]) for e in object]
            while len(parts) > 16:  # JAX concatenates in groups of 16
                parts = [slicing.concatenate(parts[i:i + 16], 0) for i in range(0, len(parts), 16)]
            out = slicing.concatenate(parts, 0)
    else:
        raise TypeError(f"Unexpected input type for array: {type(object)}")
    result = _convert_element_type(out, dt, weak)
    nd = len(canonical_aval_of(result).shape)
    if ndmin > nd:
        result = L.expand_dims(result, range(ndmin - nd))
    return device_array(result)


def _is_weak(x: Any) -> bool:
    if T.is_python_scalar(x) and type(x) is not bool:
        return True
    aval = getattr(x, "aval", None)
    return bool(isinstance(aval, T.ArrayType) and aval.weak_type)


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [leaf for item in obj for leaf in _leaves(item)]
    return [T.from_jax_array(obj)]


def _numpy_leaves(obj: Any) -> Any:
    """Leaves as NumPy understands them (Arrays never reach here)."""
    if isinstance(obj, (list, tuple)):
        return [_numpy_leaves(o) for o in obj]
    return obj


def _lattice_dtype(leaves: list[Any]) -> T.DType:
    """JAX's ``lattice_result_type`` of the leaves: weak Python scalars join
    without being canonicalised first; an empty list is the default float."""
    if not leaves:
        return T.default_float()
    args = [leaf if isinstance(leaf, (Array, Tracer, *T.PYTHON_SCALAR_TYPES))
            else np.asarray(leaf) for leaf in leaves]
    dt: T.DType = T.result_type(*args)
    return dt


def asarray(a: Any, dtype: Any = None, order: Any = None, *, copy: Any = None,
            device: Any = None, out_sharding: Any = None) -> Any:
    aval = getattr(a, "aval", None)
    if type(aval) is RefType:
        raise TypeError(f"jnp.asarray got a Ref of type {aval}, but a Ref can't be passed where "
                        "an array is expected. Did you forget to read its value with "
                        "`ref[...]`?")
    dt = None if dtype is None else _user_dtype(dtype, "asarray")
    return array(a, dtype=dt, copy=bool(copy), order=order)


def to_device_array(a: Any) -> Any:
    """``asarray`` on the default device whatever the context mesh
    (``device_put``'s conversion, which then places the array itself)."""
    aval = getattr(a, "aval", None)
    if type(aval) is RefType:
        return asarray(a)  # (its error)
    return _converted(a, None, False, "K", 0)


def copy(a: Any, order: Any = None) -> Any:
    return array(a, copy=True, order=order)


# ============================================================== fill creators
# ``device=`` and ``out_sharding=`` (never both): a device or a Sharding is
# concrete placement; an out_sharding (P or NamedSharding) is canonicalised to
# the abstract NamedSharding the result's type carries. lax.full /
# lax.full_like (spec/lax/_structural.py) tell the two apart.

def _device_or_out_sharding(device: Any, out_sharding: Any, name: str) -> Any:
    if device is not None and out_sharding is not None:
        raise ValueError("Only one of `device` or `out_sharding` can be set. Got "
                         f"device={device!r} and out_sharding={out_sharding!r}")
    if device is not None:
        return _device_sharding(device)
    return L._canonical_out_sharding(out_sharding, name)


def _device_sharding(device: Any) -> Any:
    """A device as the sharding that keeps the whole array on it; a Sharding
    (or anything else, which lax rejects) as given."""
    return SingleDeviceSharding(device) if placement.is_device(device) else device


def _is_single_device(sharding: Any) -> bool:
    return isinstance(sharding, SingleDeviceSharding)


def _put(x: Any, device: Any) -> Any:
    return placement.device_put(x, device)


def zeros(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    _forgot_tuple("zeros", shape, dtype)
    dt = _user_dtype(float if dtype is None else dtype, "zeros")
    shp = _shape_arg(shape, "zeros")
    sharding = _device_or_out_sharding(device, out_sharding, "jnp.zeros")
    return device_array(L.full(shp, 0, dt, sharding=sharding))


def ones(shape: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    _forgot_tuple("ones", shape, dtype)
    shp = _shape_arg(shape, "ones")
    dt = _user_dtype(float if dtype is None else dtype, "ones")
    sharding = _device_or_out_sharding(device, out_sharding, "jnp.ones")
    return device_array(L.full(shp, 1, dt, sharding=sharding))


def empty(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    _forgot_tuple("empty", shape, dtype)
    dt = _user_dtype(float if dtype is None else dtype, "empty")
    shp = _shape_arg(shape, "empty")
    if device is not None and out_sharding is None:
        # lax.empty takes no concrete placement: JAX puts the result there.
        return _put(device_array(L.empty(shp, dt)), device)
    sharding = _device_or_out_sharding(device, out_sharding, "jnp.empty")
    return device_array(L.empty(shp, dt, out_sharding=L._canonical_out_sharding(
        sharding, "lax.empty")))


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    dt = None if dtype is None else _user_dtype(dtype, "full")
    check_arraylike("full", fill_value)
    sharding = _device_or_out_sharding(device, out_sharding, "full")
    # np.ndim, not the value's type: a scalar too large for its dtype is the shape's
    # error first when the shape is bad, as in JAX.
    if not np.ndim(fill_value):
        return device_array(L.full(_shape_arg(shape, "full"), fill_value, dt,
                                   sharding=sharding))
    filled = asarray(fill_value, dtype=dt)
    if _is_single_device(sharding):
        return _put(_broadcast_to(filled, shape, None), device)
    return device_array(_broadcast_to(filled, shape, sharding))


def _broadcast_to_unsharded(arr: Any, shape: Any) -> Any:
    """``jnp.broadcast_to`` without a sharding: leading axes added, size-1 axes
    stretched."""
    check_arraylike("broadcast_to", arr)
    arr = L.asarray(arr)
    target = canonical_shape(shape, "broadcast_to")
    aval = canonical_aval_of(arr)
    if aval.shape == target:
        return arr
    if len(target) < aval.ndim:
        raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={aval.shape} shape={target}")
    lead = len(target) - aval.ndim
    # A negative size that no operand dimension meets is broadcast_in_dim's TypeError.
    if not all(d in (1, t) for d, t in zip(aval.shape, target[lead:])):
        wanted = T.ArrayType(target, aval.dtype)
        raise ValueError(f"Incompatible types for broadcasting: input type="
                         f"{aval} and requested type={wanted}")
    return L.broadcast_in_dim(arr, target, tuple(range(lead, len(target))))


def _broadcast_to(arr: Any, shape: Any, sharding: Any) -> Any:
    """``jnp.broadcast_to`` with JAX's ``sharding`` (lax.broadcast_to): the
    result laid out by it; each operand dimension must be unsharded or
    sharded as its result dimension; same shape and another layout is a
    reshard."""
    s = L._canonical_out_sharding(sharding, "jnp.broadcast_to")
    if s is None:
        return _broadcast_to_unsharded(arr, shape)
    shp = (shape,) if not isinstance(shape, (tuple, list)) and np.ndim(shape) == 0 else shape
    target = _shape_arg(shp, "broadcast_to")
    aval = canonical_aval_of(arr)
    if aval.shape == target and aval.sharding == s:
        return arr
    lead = len(target) - aval.ndim
    if lead < 0:
        raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={aval.shape} shape={target}")
    tail = s.spec._normalized_spec_for_aval(len(target)).partitions[lead:]
    mine = aval.sharding.spec.partitions if aval.sharding is not None else (None,) * aval.ndim
    if (not all(d in (1, t) for d, t in zip(aval.shape, target[lead:]))
            or not all(a in (None, b) for a, b in zip(mine, tail))):
        wanted = T.ArrayType(target, aval.dtype, sharding=s)
        raise ValueError(f"Incompatible types for broadcasting: input type={aval} "
                         f"and requested type={wanted}")
    if aval.shape == target:
        return reshard(arr, s)
    check_divisible(T.ArrayType(target, aval.dtype, sharding=s))
    return L.broadcast_in_dim(arr, target, tuple(range(lead, len(target))), out_sharding=s)


def _like_args(name: str, a: Any, dtype: Any, shape: Any
               ) -> tuple[Any, T.DType | None, tuple[int, ...] | None]:
    if type(a) is Token or not (hasattr(a, "dtype") and hasattr(a, "shape")):
        check_arraylike(name, a)
    a = T.from_jax_array(a)
    dt = None if dtype is None else _user_dtype(dtype, name)
    shp = None if shape is None else _shape_arg(shape, name)
    return a, dt, shp


def _keys_like(a: Any, fill_value: Any, dt: Any, shp: tuple[int, ...] | None) -> Any:
    """``full_like`` where the result dtype is a PRNG key dtype (None when it
    is not): JAX's key dtype rule fills the key words instead."""
    a_dtype = getattr(a, "dtype", None) if dt is None else dt
    if not is_key_dtype(a_dtype):
        return None
    return full_keys(tuple(np.shape(a)) if shp is None else shp, fill_value, a_dtype)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
               out_sharding: Any = None) -> Any:
    a, dt, shp = _like_args("zeros_like", a, dtype, shape)
    sharding = _device_or_out_sharding(device, out_sharding, "jnp.zeros_like")
    keys = _keys_like(a, 0, dt, shp)
    return keys if keys is not None else L.full_like(a, 0, dt, shp, sharding=sharding)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
              out_sharding: Any = None) -> Any:
    a, dt, shp = _like_args("ones_like", a, dtype, shape)
    sharding = _device_or_out_sharding(device, out_sharding, "jnp.ones_like")
    keys = _keys_like(a, 1, dt, shp)
    return keys if keys is not None else L.full_like(a, 1, dt, shp, sharding=sharding)


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *,
               device: Any = None) -> Any:
    """JAX's ``lax.empty_like``: ``full_like``'s sharding rule, an ``empty``
    instead of a broadcast, and a weakly typed prototype's weak type kept by
    a conversion."""
    a, dt, shp = _like_args("empty_like", prototype, dtype, shape)
    aval = canonical_aval_of(a) if not hasattr(a, "shape") or _arrayish(a) else None
    a_shape = aval.shape if aval is not None else tuple(a.shape)
    a_dtype = aval.dtype if aval is not None else np.dtype(a.dtype)
    fill_shape = a_shape if shp is None else shp
    weak = dt is None and bool(aval.weak_type if aval is not None
                               else getattr(a, "weak_type", False))
    out_dtype = a_dtype if dt is None else dt
    sharding = _device_sharding(device) if device is not None else None
    if sharding is None:
        sharding = L.like_sharding(a, fill_shape, shp is None, weak)
    out: Any
    if sharding is not None and L._sharding_is_concrete(sharding, "empty_like"):
        sharding.shard_shape(fill_shape)
        if _is_single_device(sharding):
            out = device_array(L.empty(fill_shape, out_dtype))
        else:
            sharding.devices_indices_map(fill_shape)
            out = _put(device_array(L.empty(fill_shape, out_dtype)), sharding)
    else:
        out = L.empty(fill_shape, out_dtype,
                      out_sharding=L._canonical_out_sharding(sharding, "lax.empty"))
    if weak:
        out = _convert_element_type(out, None, True)
    return L.reduced_like(out, a)


def _arrayish(a: Any) -> bool:
    return isinstance(a, (Array, Tracer, np.ndarray, np.generic))


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:
    if hasattr(a, "dtype") and hasattr(a, "shape"):
        check_arraylike("full_like", 0, fill_value)
    else:
        check_arraylike("full_like", a, fill_value)
    dt = None if dtype is None else _user_dtype(dtype, "full_like")
    shp = None if shape is None else _shape_arg(shape, "full_like")
    sharding = _device_or_out_sharding(device, out_sharding, "full_like")
    if not np.ndim(fill_value):  # (a scalar is converted to the result's dtype, not its own)
        keys = _keys_like(a, fill_value, dt, shp)
        if keys is not None:
            return keys
        return L.full_like(a, fill_value, dt, shp, sharding=sharding)
    target = canonical_aval_of(a).shape if shp is None else shp
    fill_dt = canonical_aval_of(a).dtype if dt is None else dt
    filled = asarray(fill_value, dtype=fill_dt)
    if _is_single_device(sharding):
        return _put(_broadcast_to(filled, target, None), device)
    return _broadcast_to(filled, target, sharding)


# =================================================================== ranges

def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None, out_sharding: Any = None) -> Any:
    sharding = _device_or_out_sharding(device, out_sharding, "jnp.arange")
    if sharding is None or not L._sharding_is_concrete(sharding, "jnp.arange"):
        return _arange(start, stop, step, dtype, sharding)
    # A concrete placement: the range is computed, then put there.
    return _put(_arange(start, stop, step, dtype, None), sharding)


def _arange(start: Any, stop: Any, step: Any, dtype: Any, out_sharding: Any) -> Any:
    dt = None if dtype is None else _user_dtype(dtype, "arange")
    check_arraylike("arange", *(v for v in (start, stop, step) if v is not None))
    start_name = "stop" if stop is None and step is None else "start"
    for name, val in ((start_name, start), ("stop", stop), ("step", step)):
        if isinstance(val, Tracer):
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: "
                f"{val.aval}\nIt arose in the jnp.arange argument '{name}'")
        if val is not None and np.ndim(val) != 0:
            raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={val}")
    if dt is None:
        dt = T.result_type_and_weak(start, *(v for v in (stop, step) if v is not None))[0]
    # np.iscomplexobj, which converts no Python int: arange(2**62) is the size's error.
    if any(np.iscomplexobj(v) for v in (start, stop, step) if v is not None):
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer "
                         "supported starting in JAX v0.10.0.")
    lo: Any = _py_scalar(start)
    hi: Any = None if stop is None else _py_scalar(stop)
    st: Any = None if step is None else _py_scalar(step)
    if hi is None:
        lo, hi = 0, lo
    if st is not None:
        work = T.float32 if T.is_float(dt) and dt.itemsize < 4 else dt
        size = max(0, int(np.ceil((hi - lo) / st)))
        ramp = L.broadcasted_iota(work, (size,), 0, out_sharding=out_sharding)
        scaled = ew.mul(_convert_element_type(st, work), ramp)
        return L.convert_element_type(ew.add(_convert_element_type(lo, work), scaled), dt)
    if lo == 0:
        return L.broadcasted_iota(dt, (max(0, int(np.ceil(hi))),), 0, out_sharding=out_sharding)
    size = max(0, int(np.ceil(hi - lo)))
    return ew.add(_convert_element_type(lo, dt),
                   L.broadcasted_iota(dt, (size,), 0, out_sharding=out_sharding))


def _py_scalar(v: Any) -> Any:
    if isinstance(v, (int, float)):
        return v
    return np.asarray(v).item()


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Any:
    """Evenly spaced samples; computed as JAX does (a jitted ``_linspace``)."""
    num = operator.index(num)
    axis = operator.index(axis)
    fn = _LINSPACE.get("fn")
    if fn is None:
        _linspace_impl.__name__ = "_linspace"  # the name JAX's jit equation shows
        fn = _LINSPACE["fn"] = jit(_linspace_impl,
                                   static_argnames=("num", "endpoint", "retstep", "dtype",
                                                    "axis"))
    out = fn(start, stop, num=num, endpoint=endpoint, retstep=retstep,
             dtype=None if dtype is None else np.dtype(dtype), axis=axis)
    if device is None:
        return out
    sharding = _linspace_sharding(device)
    if retstep:
        return _put(out[0], sharding), out[1]
    return _put(out, sharding)


def _linspace_sharding(device: Any) -> Any:
    """JAX converts linspace's result with ``sharding=device`` and constrains
    it there (``with_sharding_constraint``): the device must be a Sharding,
    and a NamedSharding may name only Auto mesh axes (explicit ones are
    ``reshard``'s business)."""
    sharding = _device_sharding(device)
    if not isinstance(sharding, Sharding):  # JAX's class here is ValueError
        raise ValueError(  # noqa: TRY004
            f"sharding={sharding!r} must be an instance of jax.sharding.Sharding")
    if isinstance(sharding, NamedSharding):
        kinds = sharding.mesh._name_to_type
        named = [a for p in sharding.spec.partitions if p is not None
                 for a in (p if isinstance(p, tuple) else (p,))]
        if any(kinds.get(a) != AxisType.Auto for a in named):
            raise ValueError("The spec of NamedSharding passed to with_sharding_constraint can "
                             f"only refer to Auto axes of the mesh. Got spec={sharding.spec} "
                             f"and mesh={sharding.mesh.abstract_mesh}. You probably meant to "
                             "use `reshard` API?")
    return sharding


_LINSPACE: dict[str, Any] = {}


def _linspace_impl(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
                   retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if dtype is None:
        dt = T.result_type_and_weak(start, stop)[0]
        dt = dt if T.is_inexact(dt) else T.default_float()
    else:
        dt = _user_dtype(dtype, "linspace")
    comp = dt if T.is_inexact(dt) else T.default_float()
    a = _convert_element_type(start, comp, False)
    b = _convert_element_type(stop, comp, False)
    shape = list(np.broadcast_shapes(canonical_aval_of(a).shape, canonical_aval_of(b).shape))
    a_b = _broadcast_to_unsharded(a, tuple(shape))
    b_b = _broadcast_to_unsharded(b, tuple(shape))
    axis = len(shape) + axis + 1 if axis < 0 else axis
    bounds = list(shape)
    bounds.insert(axis, 1)
    div = (num - 1) if endpoint else num
    if num > 1:
        real = T.float64 if comp in (T.float64, T.complex128) else (
            T.float32 if comp == T.complex64 else comp)
        div_c = _convert_element_type(div, comp, False)
        delta = ew.div(ew.sub(b, a), div_c)
        iota_shape = [1] * len(bounds)
        iota_shape[axis] = div
        ramp = L.reshape(L.iota(real, div), iota_shape)
        step = ew.div(ramp, _convert_element_type(div, real, False))
        step = _convert_element_type(step, comp, False)
        one = _convert_element_type(1, comp, True)
        out = ew.add(ew.mul(L.reshape(a_b, bounds), ew.sub(one, step)),
                      ew.mul(ew.div(L.reshape(b_b, bounds), div_c),
                              _convert_element_type(ramp, comp, False)))
        if endpoint:
            out = slicing.concatenate([out, L.expand_dims(b_b, (axis,))],
                                L.canonicalize_axis(axis, len(bounds)))
    elif num == 1:
        delta = _convert_element_type(np.nan if endpoint else 0.0, comp, False)
        out = L.reshape(a_b, bounds)
    else:
        shape.insert(axis, 0)
        delta = L.full((), np.nan, comp)
        out = L.empty(tuple(shape), dt)
    if T.is_int(dt) and not T.is_int(canonical_aval_of(out).dtype):
        out = ew.floor(out)
    result = _convert_element_type(out, dt, False)
    return (result, delta) if retstep else result


# =================================================================== matrices

def eye(N: int, M: int | None = None, k: Any = 0, dtype: Any = None, *,
        device: Any = None) -> Any:
    dt = _user_dtype(float if dtype is None else dtype, "eye")
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    offset = _offset(k, "eye")
    idt = canonical_aval_of(offset).dtype
    i = L.broadcasted_iota(idt, (n, m), 0)
    j = L.broadcasted_iota(idt, (n, m), 1)
    out = ((i + offset) == j).astype(dt)
    return out if device is None else _put(out, device)


def _offset(k: Any, name: str) -> Any:
    """The diagonal offset as an array: a Python int clipped to int32's
    range, then of the default integer type (int64 under x64, as JAX's
    conversion of the clipped int gives)."""
    if isinstance(k, int) and not isinstance(k, bool):
        info = np.iinfo(np.int32)
        k = _convert_element_type(int(min(max(k, info.min), info.max)), T.default_int(),
                                  False)
    aval = canonical_aval_of(k)
    if aval.shape or not T.is_int(aval.dtype):
        raise ValueError(f"k must be a scalar integer; got {k}")
    return k


def identity(n: int, dtype: Any = None) -> Any:
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    dt = _user_dtype(float if dtype is None else dtype, "tri")
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    # (JAX's index type is int32 unless the offset's, the default integer
    # type, is wider: int64 under x64)
    idt = T.default_int()
    offset = _convert_element_type(operator.index(k), idt, False)
    shifted = L.broadcasted_iota(idt, (n, m), 0) + offset
    j = L.broadcasted_iota(idt, (n, m), 1)
    return L.convert_element_type(shifted >= j, dt)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))
