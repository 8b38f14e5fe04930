"""Tokens: values that order side effects in XLA and carry no data.

A token's type is ``abstract_token``, the scalar array type of the extended
dtype ``token``: it prints ``Tok`` in jaxprs and ``AbstractToken()``
elsewhere, as JAX's ``AbstractToken``, and lowers to ``!stablehlo.token``.
A concrete token is a ``Token``: an Array subclass whose buffer is one
boolean that nothing reads (so jit, caches and pytrees carry it as any
array), shown as an opaque object, as JAX's ``core.Token``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import dtypes as D
from spec._src.core.array import Array, SpecInternalError
from spec._src.core.types import ArrayType


class token_scalar(D.extended):  # noqa: N801 (a NumPy-style scalar type name)
    """The scalar type placing the token dtype in the dtype hierarchy."""


class TokenTy(D.ExtendedDType):
    """The dtype of tokens."""

    __slots__ = ()
    kind = "V"
    itemsize = 0
    physical: np.dtype[Any] = np.dtype(np.bool_)

    @property
    def type(self) -> type:
        return token_scalar

    @property
    def name(self) -> str:
        return "token"

    def __repr__(self) -> str:
        return "token"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return type(other) is TokenTy

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(TokenTy)

    def _format_aval(self, aval: ArrayType, short: bool) -> str:
        """How a token's type prints: ``Tok`` in jaxprs, JAX's class otherwise."""
        return "Tok" if short else "AbstractToken()"

    def _make_array(self, value: np.ndarray, aval: ArrayType) -> Array:
        if value.dtype != self.physical or value.shape != ():
            raise SpecInternalError(f"a value of dtype {value.dtype} and shape {value.shape} "
                                    "is no token")
        return Token._make(value, aval)


TOKEN = TokenTy()
abstract_token = ArrayType((), TOKEN)  # type: ignore[arg-type]


def is_token_dtype(dt: Any) -> bool:
    return type(dt) is TokenTy


def is_token_type(aval: Any) -> bool:
    return isinstance(aval, ArrayType) and is_token_dtype(aval.dtype)


def token_value() -> np.ndarray:
    """The buffer of a token (one boolean, never read)."""
    return np.zeros((), np.bool_)


class Token(Array):
    """A concrete token (JAX's ``core.Token``): no data, no arithmetic."""

    __slots__ = ()

    @classmethod
    def _make(cls, value: np.ndarray, aval: ArrayType) -> Token:
        return cls._placed_nowhere(value, aval)

    def __repr__(self) -> str:
        return object.__repr__(self)

    __str__ = __repr__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """A 0-d object array holding the token (NumPy's view of JAX's)."""
        out = np.empty((), object)
        out[()] = self
        return out

    def __bool__(self) -> bool:
        raise TypeError("a token has no truth value")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def new_token() -> Token:
    return Token._make(token_value(), abstract_token)


__all__ = ["TOKEN", "Token", "TokenTy", "abstract_token", "is_token_dtype", "is_token_type",
           "new_token"]
