"""``spec._src.core.dtypes``: the public ``jax.dtypes`` module.

The dtype lattice and x64 canonicalisation live in ``spec._src.core.types``; this module
gives them JAX's public names and adds what is specific to ``jax.dtypes``: the
abstract ``extended`` / ``prng_key`` scalar classes, ``float0``, the sub-byte
aware ``issubdtype`` and ``itemsize_bits``, and ``scalar_type_of``.

``spec.numpy`` builds its dtype surface on this module (never the reverse, so
importing ``spec._src.core.dtypes`` never imports ``spec.numpy``).
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.core.types import TypePromotionError, result_type

__all__ = [
    "TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0",
    "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type", "scalar_type_of",
]

# JAX exposes the raw ml_dtypes scalar type here (jnp.bfloat16 is the
# array-constructing wrapper around it).
bfloat16: type[np.generic] = ml_dtypes.bfloat16

# JAX's finfo/iinfo *are* ml_dtypes', so reprs and attributes agree exactly,
# including for bfloat16, the float8/float4 family and int2/int4.
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo

# The dtype of tangents of integer and boolean primals: zero bytes per element.
float0: T.DType = T.FLOAT0


# ------------------------------------------------------------ extended dtypes
# Extended dtypes are not NumPy dtypes: each is an ExtendedDType instance whose
# ``type`` is a subclass of ``extended``. Their scalar classes sit under
# np.generic so ``issubdtype(key.dtype, extended)`` works as for NumPy types.

class _PublicRepr(type):
    """Metaclass that prints the class under its ``jax.dtypes`` name."""

    def __repr__(cls) -> str:
        return f"<class 'jax.dtypes.{cls.__name__}'>"


class extended(np.generic, metaclass=_PublicRepr):
    """Abstract scalar class of every extended dtype; never instantiated."""


class prng_key(extended):
    """Abstract scalar class of PRNG key dtypes; never instantiated.

    Placeholder: the PRNG issue defines the key dtypes (an ExtendedDType per
    PRNG implementation) whose ``type`` subclasses this class.
    """


class ExtendedDType:
    """Base of extended dtype objects (the PRNG issue subclasses it).

    A subclass instance is a dtype; its ``type`` is the scalar class (a subclass
    of ``extended``) that places it in the issubdtype hierarchy.
    """

    @property
    def type(self) -> type:
        raise NotImplementedError("ExtendedDType subclasses define `type`")


# ----------------------------------------------------------------- issubdtype

# bfloat16 and the float8/6/4 family (their dtype kinds vary: 'V', sometimes 'f').
_CUSTOM_FLOAT_SCALARS = frozenset(d.type for d in [T.bfloat16, *T.SMALL_FLOAT_TYPES])
_NARROW_SIGNED_SCALARS = frozenset(d.type for d in T.NARROW_INT_TYPES)
_NARROW_UNSIGNED_SCALARS = frozenset(d.type for d in T.NARROW_UINT_TYPES)
_ISSUBDTYPE_ARG_TYPES = (type, np.dtype, ExtendedDType)


def _is_subclass(a: Any, b: Any) -> bool:
    """issubclass that answers False (instead of raising) when ``a`` is no class."""
    try:
        return issubclass(a, b)
    except TypeError:
        return False


def issubdtype(a: Any, b: Any) -> bool:
    """True if dtype ``a`` is ``b`` or below it in NumPy's scalar hierarchy.

    Unlike ``np.issubdtype``, the ml_dtypes floats count as ``floating`` and the
    sub-byte ints as signed/unsigned ``integer``, and extended dtypes are placed
    by their scalar ``type``.
    """
    # Unhashable dtype-likes (objects with a dtype attribute) are converted
    # first, so the cached core only sees hashable classes and dtypes.
    return _issubdtype_cached(
        a if isinstance(a, _ISSUBDTYPE_ARG_TYPES) else np.dtype(a),
        b if isinstance(b, _ISSUBDTYPE_ARG_TYPES) else np.dtype(b))


@functools.lru_cache(maxsize=512)
def _issubdtype_cached(a: Any, b: Any) -> bool:
    if isinstance(b, type) and _is_subclass(b, extended):
        if isinstance(a, ExtendedDType):
            return _is_subclass(a.type, b)
        if isinstance(a, type) and _is_subclass(a, np.generic):
            return _is_subclass(a, b)
        return _is_subclass(np.dtype(a).type, b)
    if isinstance(b, ExtendedDType):
        # An extended dtype has no subtypes but itself.
        return isinstance(a, ExtendedDType) and a == b
    if isinstance(a, ExtendedDType):
        a = a.type
    a_sc = a if isinstance(a, type) and _is_subclass(a, np.generic) else np.dtype(a).type
    b_sc = b if isinstance(b, type) and _is_subclass(b, np.generic) else np.dtype(b).type
    # ml_dtypes scalar classes derive from np.generic directly, so NumPy alone
    # would not see them as floating/integer.
    if a_sc in _CUSTOM_FLOAT_SCALARS:
        return b_sc in (a_sc, np.floating, np.inexact, np.number, np.generic)
    if a_sc in _NARROW_SIGNED_SCALARS:
        return b_sc in (a_sc, np.signedinteger, np.integer, np.number, np.generic)
    if a_sc in _NARROW_UNSIGNED_SCALARS:
        return b_sc in (a_sc, np.unsignedinteger, np.integer, np.number, np.generic)
    return bool(np.issubdtype(a_sc, b_sc))


# ------------------------------------------------------------ canonicalisation

def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> Any:
    """The dtype ``dtype`` stands for in the current x64 mode (no warning)."""
    if issubdtype(dtype, extended):
        if not allow_extended_dtype:
            raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} "
                             "with allow_extended_dtype=False")
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise TypeError(f"dtype {dtype!r} not understood") from err
    return T.canonicalize_dtype(dt)


def _check_jax_dtype(x: Any, dt: T.DType) -> None:
    if not (T.is_valid_dtype(dt) or dt == float0 or issubdtype(dt, extended)):
        raise TypeError(f"Value '{x}' with dtype {dt} is not a valid JAX array type. "
                        "Only arrays of numeric types are supported by JAX.")


def dtype_of(x: Any) -> Any:
    """JAX's internal ``dtypes.dtype``: the canonical dtype of a value or type.

    Python scalars and their types give the default dtypes; NumPy scalar types,
    dtypes and names are explicit requests (x64 truncation warns); JAX arrays
    keep their dtype; anything else is converted by its ``dtype`` attribute or
    NumPy's inference and canonicalised silently.
    """
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type):
        if any(x is t for t in T.PYTHON_SCALAR_TYPES):  # identity: np.dtype == float holds
            return T.python_scalar_dtype(x)
        if _is_subclass(x, np.generic):
            return T.explicit_dtype(np.dtype(x), "dtype")
    elif type(x) in T.PYTHON_SCALAR_TYPES:
        return T.python_scalar_dtype(type(x))
    aval = getattr(x, "aval", None)
    if isinstance(aval, T.ArrayType):
        return aval.dtype
    if isinstance(x, (str, np.dtype)):
        dt = np.dtype(x)
        _check_jax_dtype(x, dt)
        return T.explicit_dtype(dt, "dtype")
    attr = getattr(x, "dtype", None)
    if isinstance(attr, (np.dtype, ExtendedDType)):
        found: Any = attr
    else:
        try:
            found = np.result_type(x)
        except TypeError as err:
            raise TypeError(f"Cannot determine dtype of {x}") from err
    _check_jax_dtype(x, found)
    return canonicalize_dtype(found, allow_extended_dtype=True)


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) of a JAX value's dtype."""
    dt = dtype_of(x)
    if isinstance(dt, np.dtype) and T.is_valid_dtype(dt):
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[T.kind(dt)]
    raise TypeError(f"Invalid scalar value {x}")


def itemsize_bits(dtype: Any) -> int:
    """Bits per element; unlike ``itemsize``, exact for the sub-byte types."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    if dtype == np.dtype(bool):
        return 8  # booleans are stored one per byte
    if issubdtype(dtype, np.integer):
        return int(iinfo(dtype).bits)  # type: ignore[no-untyped-call]
    if issubdtype(dtype, np.floating):
        return int(finfo(dtype).bits)  # type: ignore[no-untyped-call]
    if issubdtype(dtype, np.complexfloating):
        return 2 * int(finfo(dtype).bits)  # type: ignore[no-untyped-call]
    raise ValueError(f"unexpected input: {dtype=}")
