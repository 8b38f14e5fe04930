"""dtype objects and dtype functions of ``spec.numpy`` (JAX's ``jnp``).

JAX has no scalar objects of its own: ``jnp.float32`` and friends are classes
made by a metaclass so that *calling* one builds a 0-d (or n-d) JAX array of
that dtype, while as a *type* it stands in for the NumPy scalar type (it
compares and hashes equal to it, ``np.dtype`` accepts it, and ``isinstance``
defers to it). The abstract classes (``jnp.floating``...) are NumPy's own.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import dtypes as D
from spec._src.core import types as T
from spec._src.numpy.creation import asarray

__all__ = [
    "bool", "bool_", "int1", "int2", "int4", "int8", "int16", "int32", "int64", "uint1", "uint2",
    "uint4", "uint8", "uint16", "uint32", "uint64", "bfloat16", "float16", "float32", "float64",
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float8_e8m0fnu", "complex64", "complex128", "int_", "uint", "float_", "complex_", "single",
    "double", "csingle", "cdouble", "generic", "number", "integer", "signedinteger",
    "unsignedinteger", "inexact", "floating", "complexfloating", "character", "flexible",
    "object_", "can_cast", "dtype", "finfo", "iinfo", "iscomplexobj", "isdtype", "isrealobj",
    "issubdtype", "promote_types", "result_type", "ComplexWarning",
]


# --------------------------------------------------------------- scalar types

class _ScalarMeta(type):
    """Metaclass of the jnp scalar types: each class carries one NumPy dtype."""

    dtype: T.DType

    @property
    def __numpy_dtype__(cls) -> T.DType:
        # The protocol np.dtype() uses to accept these classes (NumPy >= 2.4).
        return cls.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: object) -> bool:
        # NumPy's scalar type decides; so jnp.float32 == np.float32 and, like
        # np.float32, == np.dtype('float32').
        return cls is other or bool(cls.dtype.type == other)

    def __ne__(cls, other: object) -> bool:
        return not cls == other

    def __call__(cls, x: Any) -> Any:
        # Strong-typed array of the class's dtype, canonicalised for x64 (with
        # the usual truncation warning) by asarray.
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"<class 'jax.numpy.{cls.__name__}'>"

    # No __jax_array__: a scalar *type* used as an array operand is rejected by
    # the operand checks (TypeError), and ``array == jnp.float32`` is False, as in JAX.


def _scalar_type(np_type: type) -> _ScalarMeta:
    name = np_type.__name__  # np.bool_.__name__ is "bool", as JAX prints it
    doc = (f"A JAX scalar constructor of type {name}.\n\n"
           "Calling it returns a zero-dimensional (or n-dimensional) JAX array\n"
           "of this dtype; JAX has no separate scalar objects.")
    cls = _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type), "__doc__": doc})
    cls.__module__ = "spec.numpy"  # the public module, so pickling resolves
    return cls


bool_ = _scalar_type(np.bool_)
int2 = _scalar_type(ml_dtypes.int2)
int4 = _scalar_type(ml_dtypes.int4)
int8 = _scalar_type(np.int8)
int16 = _scalar_type(np.int16)
int32 = _scalar_type(np.int32)
int64 = _scalar_type(np.int64)
uint2 = _scalar_type(ml_dtypes.uint2)
uint4 = _scalar_type(ml_dtypes.uint4)
uint8 = _scalar_type(np.uint8)
uint16 = _scalar_type(np.uint16)
uint32 = _scalar_type(np.uint32)
uint64 = _scalar_type(np.uint64)
# int1/uint1 need ml_dtypes >= 0.5.4; JAX exposes them only when present.
if getattr(ml_dtypes, "int1", None) is not None:
    int1 = _scalar_type(ml_dtypes.int1)
if getattr(ml_dtypes, "uint1", None) is not None:
    uint1 = _scalar_type(ml_dtypes.uint1)
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)
float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)
float8_e4m3fn = _scalar_type(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
bfloat16 = _scalar_type(ml_dtypes.bfloat16)
float16 = _scalar_type(np.float16)
float32 = single = _scalar_type(np.float32)
float64 = double = _scalar_type(np.float64)
complex64 = csingle = _scalar_type(np.complex64)
complex128 = cdouble = _scalar_type(np.complex128)

# The NumPy-1 style aliases name the 64-bit types (x64 canonicalisation happens
# when they are used, not here).
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128

def __getattr__(name: str) -> Any:
    # ``jnp.bool`` (the array-API spelling of bool_) is served lazily: a
    # module-level binding would shadow the builtin inside this module.
    if name == "bool":
        return bool_
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# NumPy's abstract scalar classes, used as the second argument of issubdtype.
generic = np.generic
number = np.number
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
character = np.character
flexible = np.flexible
object_ = np.object_

dtype = np.dtype


# ------------------------------------------------------------------ functions

finfo = D.finfo
iinfo = D.iinfo
can_cast = np.can_cast  # JAX uses NumPy's (ml_dtypes registers its casts)


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """``jnp.issubdtype``: ``jax.dtypes.issubdtype`` (bfloat16 is floating, ...)."""
    return D.issubdtype(arg1, arg2)


def promote_types(a: Any, b: Any) -> T.DType:
    """The dtype two dtypes promote to; the Python types int/float/complex are weak.

    Unlike ``result_type`` nothing is canonicalised for x64.
    """
    # Identity, not equality, picks out the weak Python types: np.dtype('float64')
    # compares equal to float.
    na = a if any(a is t for t in (int, float, complex)) else np.dtype(a)
    nb = b if any(b is t for t in (int, float, complex)) else np.dtype(b)
    return T.promote_types(na, nb)


def _result_type_arg(x: Any) -> Any:
    # Explicit dtype requests are resolved here, so an x64 truncation warns
    # naming "dtype" as JAX's does; values and weak types go to spec._src.core.types.
    if isinstance(x, (str, np.dtype)) or (isinstance(x, type) and issubclass(x, np.generic)):
        return D.dtype_of(x)
    return x


def result_type(*args: Any) -> T.DType:
    """``jnp.result_type``: JAX's promotion of values and dtypes, x64-canonical."""
    out: T.DType = D.result_type(*(_result_type_arg(a) for a in args))
    return out


_KINDS: dict[str, frozenset[T.DType]] = {
    "bool": frozenset([T.bool_]),
    "signed integer": frozenset(T.SIGNED_TYPES),
    "unsigned integer": frozenset(T.UNSIGNED_TYPES),
    "integral": frozenset(T.INT_TYPES),
    "real floating": frozenset(T.FLOAT_TYPES),
    "complex floating": frozenset(T.COMPLEX_TYPES),
    "numeric": frozenset(T.INT_TYPES + T.FLOAT_TYPES + T.COMPLEX_TYPES),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Array-API ``isdtype``: is ``dtype`` of ``kind`` (a kind name, a dtype, or a tuple)."""
    the_dtype = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    options: set[T.DType] = set()
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            options |= _KINDS[k]
            continue
        try:
            options.add(np.dtype(k))
        except TypeError as err:
            if isinstance(k, str):
                raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_KINDS)}, "
                                 "or a compatible input for jnp.dtype()") from None
            raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}"
                            ) from err
    return the_dtype in options


def iscomplexobj(x: Any) -> bool:
    """True if ``x`` has a complex type, whatever its values."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (int, float, str, np.generic)):  # bool is an int
        return False
    dt = getattr(x, "dtype", None)
    scalar = dt.type if isinstance(dt, np.dtype) else asarray(x).dtype.type
    return D.issubdtype(scalar, np.complexfloating)


def isrealobj(x: Any) -> bool:
    """True unless ``x`` has a complex type."""
    return not iscomplexobj(x)


ComplexWarning = np.exceptions.ComplexWarning


# int1/uint1 are listed only when this ml_dtypes provides them.
__all__ = [n for n in __all__ if n == "bool" or n in globals()]
