"""Typed Python scalars: ``int``, ``float`` and ``complex`` subclasses that
carry the (weak) dtype a Python scalar gets, as JAX 0.12's ``vjp`` makes its
Python-scalar primals (``TypedFloat(3.0, dtype=float32)``). They stay Python
numbers (arithmetic on them gives plain Python numbers) while every spec
operation reads their type from ``aval``; staged, they are jaxpr literals
that evaluate to themselves."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core.types import (
    ArrayType,
    is_python_scalar,
    python_scalar_dtype,
    register_weak_scalar_type,
)


class _TypedScalar:
    """What the three typed scalars share; ``_number`` is the Python number
    type each one subclasses."""

    __slots__ = ()
    _number: type

    dtype: np.dtype[Any]
    aval: ArrayType
    _value: np.ndarray

    def __new__(cls, value: Any, dtype: Any) -> Any:
        number: Any = cls._number
        v = number.__new__(cls, value)
        _set_type(v, number(value), dtype)
        return v

    @property
    def weak_type(self) -> bool:
        return True  # (as an Array's: spec's rules read it there)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._number(self)}, dtype={self.dtype.name})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self._number(self), self.dtype)


class TypedInt(_TypedScalar, int):
    # An int subclass cannot have nonempty slots: its type lives in a dict.
    _number = int


class TypedFloat(_TypedScalar, float):
    __slots__ = ("dtype", "aval", "_value")
    _number = float

    def __str__(self) -> str:
        return str(float(self))


class TypedComplex(_TypedScalar, complex):
    __slots__ = ("dtype", "aval", "_value")
    _number = complex


TYPED_SCALAR_TYPES: tuple[type, ...] = (TypedInt, TypedFloat, TypedComplex)


for _typed in TYPED_SCALAR_TYPES:
    register_weak_scalar_type(_typed)


def _set_type(v: Any, value: Any, dtype: Any) -> None:
    dt = np.dtype(dtype)
    v.dtype = dt
    v.aval = ArrayType((), dt, True)  # weak, as the Python scalar it stands for
    v._value = np.asarray(value, dtype=dt)


def is_typed_scalar(x: Any) -> bool:
    return type(x) in TYPED_SCALAR_TYPES


def typed_scalar(x: Any) -> Any:
    """A Python int, float or complex as its typed scalar (JAX's
    ``canonicalize_value`` of one); anything else (bools included) as is."""
    if not is_python_scalar(x) or isinstance(x, bool) or is_typed_scalar(x):
        return x
    dt = python_scalar_dtype(type(x))
    if isinstance(x, int):
        return TypedInt(x, dt)
    if isinstance(x, float):
        return TypedFloat(x, dt)
    return TypedComplex(x, dt)


__all__ = ["TYPED_SCALAR_TYPES", "TypedComplex", "TypedFloat", "TypedInt", "is_typed_scalar",
           "typed_scalar"]
