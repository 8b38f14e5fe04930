"""Argument canonicalisation: axes, shapes and static integer parameters.

Every public function that takes an axis, a shape or a static integer
parameter reads it through this module, so that spec accepts exactly the
spellings JAX accepts and rejects the others with JAX's exception classes.
The rules are those of ``operator.index``: a Python or NumPy integer (or a
0-d integer array) is an integer; a float, even an integral one, is not.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import Tracer

__all__ = ["static_int", "canonical_integral", "canonical_axis", "dim_at", "reduced_size",
           "optional_axes", "reduction_axes", "canonical_shape", "shape_like",
           "hashable_params"]

_SHAPE_MESSAGE = "Shapes must be 1D sequences of concrete values of integer type"


def _reject_tracer(value: Any, what: str) -> None:
    # A traced value has no concrete integer; JAX asks for a static argument.
    if isinstance(value, Tracer):
        raise ConcretizationTypeError(
            f"{what} argument must be a concrete integer, got the traced value {value}. "
            "Pass it as a static argument (jit's static_argnums).")


def static_int(value: Any, what: str) -> int:
    """``value`` as an int by ``operator.index``: TypeError for a float, a
    string or any other non-integer, naming ``what``."""
    _reject_tracer(value, what)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r} "
                        f"of type {type(value).__name__}") from None


def canonical_integral(value: Any, what: str) -> int:
    """A static integer that may also be spelled as an integral float
    (``2.0``), as JAX's ``integer_pow`` exponent may; ``2.5`` is a TypeError."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    return static_int(value, what)


def canonical_axis(axis: Any, ndim: int, what: str = "axis",
                   out_of_range: type[Exception] = ValueError) -> int:
    """One positional axis in ``[-ndim, ndim)`` mapped to ``[0, ndim)``.
    TypeError for a non-integer; ``out_of_range`` (JAX's ValueError unless a
    caller raises another class there) when out of range."""
    a = static_int(axis, what)
    if not -ndim <= a < ndim:
        raise out_of_range(f"{what} {a} is out of bounds for array of dimension {ndim}")
    return a + ndim if a < 0 else a


def dim_at(shape: Sequence[int], axis: Any, what: str = "axis") -> int:
    """The size of ``shape`` at ``axis``, read by indexing the shape, as JAX
    reads it where it takes a dimension before checking the axis (``jnp.split``,
    the count of ``jnp.mean`` and ``jnp.var``): TypeError for a non-integer,
    IndexError (not ``canonical_axis``'s ValueError) outside ``[-ndim, ndim)``."""
    a = static_int(axis, what)
    if not -len(shape) <= a < len(shape):
        raise IndexError(f"{what} {a} is out of range for an array of shape {tuple(shape)}: "
                         "tuple index out of range")
    return shape[a]


def reduced_size(shape: Sequence[int], axis: Any) -> int:
    """How many elements a reduction over ``axis`` combines, as JAX's ``mean``
    counts them before it sums: each axis's size by ``dim_at`` (IndexError out of
    range), a repeated axis counted twice (the sum then rejects it). An axis
    name is ``reduction_axes``' error."""
    given = optional_axes(axis)
    if given is None:
        return math.prod(shape)
    items = (given,) if isinstance(given, int) else given
    positions = [i for i in items if not isinstance(i, str)]
    if len(positions) != len(items):
        reduction_axes(axis, len(shape))
    return math.prod(dim_at(shape, i) for i in positions)


def optional_axes(axis: Any) -> int | tuple[int | str, ...] | None:
    """The ``axis`` argument of a reduction before it meets a rank, in a
    hashable form: None, one integer, or a tuple made from any iterable
    (tuple, list, set, 1-d array) of integers and axis names. A float is
    neither an integer nor iterable: TypeError."""
    if axis is None:
        return None
    _reject_tracer(axis, "axis")
    try:
        return operator.index(axis)
    except TypeError:
        pass
    if isinstance(axis, str):
        return (axis,)
    try:
        items = list(axis)
    except TypeError:
        raise TypeError("axis must be None, an integer or a collection of integers, "
                        f"got {axis!r} of type {type(axis).__name__}") from None
    return tuple(i if isinstance(i, str) else static_int(i, "axis") for i in items)


def reduction_axes(axis: Any, ndim: int, named: bool = True) -> tuple[int, ...]:
    """The positional axes a reduction over ``axis`` removes, in the order
    given; a repeated axis is a ValueError. An axis name is a NameError
    outside a ``shard_map`` for the reductions that have a named form
    (``named``: sum, max, min and those built on them) and a
    NotImplementedError for the others (prod, all, any)."""
    given = optional_axes(axis)
    if given is None:
        return tuple(range(ndim))
    items = (given,) if isinstance(given, int) else given
    for item in items:
        if isinstance(item, str) and not named:
            raise NotImplementedError(f"reduction over the named axis {item!r}: only sums, "
                                      "maxima and minima reduce over axis names.")
        if isinstance(item, str):
            raise NameError(f"Found an unbound axis name: {item}. Positional axes are "
                            "integers; named axes are bound by shard_map or vmap.")
    canon = tuple(canonical_axis(i, ndim) for i in items)
    if len(set(canon)) != len(canon):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return canon


def _is_sequence(value: Any) -> bool:
    """What NumPy gives at least one dimension: ordered containers, not
    strings, bytes, sets or mappings."""
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def listed_axes(axis: Any) -> Any:
    """``axis`` as read by the reductions that take it without the jnp
    reductions' coercion (``logsumexp``): only a tuple, a list or an array
    is a collection; a set or a 0-d array is one axis, and so a TypeError."""
    if axis is None or isinstance(axis, (tuple, list)):
        return axis
    if isinstance(axis, np.ndarray):
        if axis.ndim == 0:
            raise TypeError(f"axis must be an integer or a 1-d collection of integers, "
                            f"got the 0-d array {axis!r}")
        return tuple(axis.tolist())
    if isinstance(axis, str):
        return axis
    return static_int(axis, "axis")


def canonical_shape(shape: Any, fun_name: str = "") -> tuple[int, ...]:
    """A shape argument: one integer, or a sequence of integers. Anything
    NumPy sees as 0-d (a set, a dict, bytes, a string) is one dimension and
    must itself be an integer: TypeError otherwise."""
    _reject_tracer(shape, "shape")
    dims = shape if _is_sequence(shape) else (shape,)
    try:
        return tuple(operator.index(d) for d in dims)
    except TypeError:
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(f"{_SHAPE_MESSAGE}, got {shape!r}{where}.") from None


def hashable_params(prim_name: str, **params: Any) -> None:
    """A primitive's parameters must hash, since equations are compared and cached by
    them; JAX checks that before any rule reads them (a list in a shape, a traced
    size): TypeError naming the parameter."""
    for name, value in params.items():
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                "Parameters to jaxpr equations must have __hash__ and __eq__ methods. In a "
                f"call to primitive {prim_name}, the value of parameter {name} was not "
                f"hashable: {value!r}") from None


def shape_like(value: Any, fun_name: str, arg_name: str) -> tuple[int, ...]:
    """A shape-like parameter of a lax primitive (a shape, broadcast dimensions), read
    as JAX's shape rules read one: a tuple, a list or an array, converted by NumPy (a
    ragged one is NumPy's ValueError), one-dimensional (JAX's check raises IndexError
    otherwise), every element an integer by ``operator.index`` (an integral float is
    not) and nonnegative; TypeError naming the elements' types or the values."""
    if not isinstance(value, (tuple, list, np.ndarray)):
        raise TypeError(f"{fun_name} {arg_name} must be of type tuple/list/ndarray, "
                        f"got {type(value)}.")
    if not len(value):
        return ()
    if all(type(d) is int and d >= 0 for d in value):
        return tuple(value)  # (the common spelling, read without NumPy)
    for d in value:
        _reject_tracer(d, f"{fun_name} {arg_name}")
    as_array = np.array(value)
    if as_array.ndim != 1:
        raise IndexError(f"{fun_name} {arg_name} must be 1-dimensional, got "
                         f"{as_array.ndim} dimensions in {value!r}.")
    try:
        dims = tuple(operator.index(d) for d in as_array)
    except TypeError:
        raise TypeError(f"{fun_name} {arg_name} must have every element be an integer "
                        f"type, got {tuple(map(type, value))}.") from None
    if any(d < 0 for d in dims):
        raise TypeError(f"{fun_name} {arg_name} must have every element be nonnegative, "
                        f"got {value!r}.")
    return dims


def static_hashable(value: Any, what: str) -> Any:
    """``value`` unchanged if it can be a jit static argument. JAX passes the
    axis of several functions (median, quantile, diff, partition...) straight
    to a jit's static argument, so an unhashable one (a list, a set, an
    array) is the ValueError jit raises there."""
    try:
        hash(value)
    except TypeError as err:
        raise ValueError(
            "Non-hashable static arguments are not supported. An error occurred while "
            f"trying to hash an object of type {type(value)}, {value!r} (static argument "
            f"{what!r}). The error was:\nTypeError: {err}") from None
    return value


def static_axis(axis: Any, ndim: int, what: str = "axis") -> int:
    """An axis that JAX receives as a jit static argument: unhashable is a
    ValueError, then a non-integer a TypeError, out of range a ValueError."""
    return canonical_axis(static_hashable(axis, what), ndim, what)
