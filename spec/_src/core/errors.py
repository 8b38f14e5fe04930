"""JAX's user-facing exception classes, with JAX's class hierarchy.

Programs catch these by class, so the hierarchy (which class derives from
TypeError, IndexError, ...) is part of the specification.
"""

from __future__ import annotations


_ERRORS_PAGE = "https://docs.jax.dev/en/latest/101/errors.html"


class _JAXErrorMixin:
    """Appends a pointer to JAX's error documentation page."""

    _error_page = _ERRORS_PAGE

    def __init__(self, message: str) -> None:
        name = type(self).__name__
        super().__init__(f"{message}\nSee {self._error_page}#jax.errors.{name}")  # type: ignore[call-arg]


class JAXTypeError(_JAXErrorMixin, TypeError):
    pass


class JAXIndexError(_JAXErrorMixin, IndexError):
    pass


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where a concrete one is needed."""


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(JAXTypeError):
    pass


class TracerArrayConversionError(JAXTypeError):
    pass


class UnexpectedTracerError(JAXTypeError):
    pass


class KeyReuseError(JAXTypeError):
    pass


class NonConcreteBooleanIndexError(JAXIndexError):
    pass


class JaxprTypeError(TypeError):
    """A jaxpr failed type checking (``check_jaxpr``)."""


class JaxRuntimeError(RuntimeError):
    pass


class InconclusiveDimensionOperation(Exception):
    pass


class ShardingTypeError(Exception):
    """Operands whose shardings a primitive's sharding rule cannot combine
    (JAX's class of the same name, a plain Exception)."""


class ForbiddenCollectiveError(Exception):
    """An operation needs a collective across a mesh axis that
    ``jax.sharding.no_collectives`` forbids (JAX's class of the same name, a
    plain Exception)."""


class InvalidInputException(TypeError):
    """A value of a type no JAX value has (JAX's class of the same name in
    its dtypes module)."""


__all__ = [
    "ConcretizationTypeError", "ForbiddenCollectiveError",
    "InconclusiveDimensionOperation", "InvalidInputException",
    "JAXIndexError",
    "JAXTypeError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError",
    "NonConcreteBooleanIndexError", "ShardingTypeError", "TracerArrayConversionError",
    "TracerBoolConversionError", "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
