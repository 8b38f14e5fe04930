"""Operators and methods shared by ``Array`` and ``Tracer``.

They dispatch to the ``jnp`` functions so that ``x + y`` means ``jnp.add(x, y)``
whether ``x`` is concrete or traced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.array import Array
from spec._src.core.hitypes import is_high
from spec._src.core.interpreter import Tracer
from spec._src.numpy import indexing, linalg, reductions
from spec._src.numpy import math as jnp_math


def _numpy_function(name: str) -> Callable[..., Any]:
    """``jnp.<name>``, from the module that defines it."""
    for module in (jnp_math, linalg, indexing):
        fn = getattr(module, name, None)
        if fn is not None:
            return fn  # type: ignore[no-any-return]
    raise AttributeError(f"spec.numpy has no function {name!r}")


def _on_hi_type(x: Any) -> bool:
    return isinstance(x, Tracer) and is_high(x.aval)


def _hi_operator(self: Any, op: str, *args: Any) -> Any:
    """A tracer of a hi type forwards an operator to its type, as JAX's
    tracers do: to the type's ``_<op>`` (an AttributeError naming it when
    the type defines none)."""
    return getattr(self.aval, f"_{op}")(self, *args)


def _binary(name: str, reflected: bool = False, op: str = "") -> Callable[[Any, Any], Any]:
    fn = _numpy_function(name)

    def method(self: Any, other: Any) -> Any:
        if type(self) is Array and type(other) in _PLAIN_OPERANDS:
            # An eager array with another or a Python scalar: no hi type to
            # forward to and nothing to convert (the common eager case, kept short).
            return fn(other, self) if reflected else fn(self, other)
        if _on_hi_type(self):
            return _hi_operator(self, op, other)
        if not _is_operand(other):
            return NotImplemented
        other = T.from_jax_array(other)  # operators convert as jnp.asarray does
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = name
    return method


def _unary(name: str, op: str = "") -> Callable[[Any], Any]:
    fn = _numpy_function(name)

    def method(self: Any) -> Any:
        if _on_hi_type(self):
            return _hi_operator(self, op)
        return fn(self)
    method.__name__ = name
    return method


_OPERAND_TYPES = (Array, Tracer, np.ndarray, np.generic, *T.PYTHON_SCALAR_TYPES)
_PLAIN_OPERANDS = frozenset({Array, *T.PYTHON_SCALAR_TYPES})


def _is_operand(x: Any) -> bool:
    return isinstance(x, _OPERAND_TYPES) or hasattr(x, "__jax_array__")


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod",
}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "invert"}


def _named(name: str) -> Callable[..., Any]:
    """A method forwarding its arguments to ``jnp.<name>(self, ...)``."""
    fn = _numpy_function(name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = name
    return method


def _part(name: str) -> property:
    fn = _numpy_function(name)
    return property(lambda self: fn(self))


def install(cls: type) -> None:
    for dunder, fn in _BINARY.items():
        setattr(cls, f"__{dunder}__", _binary(fn, op=dunder))
        setattr(cls, f"__r{dunder}__", _binary(fn, reflected=True, op=f"r{dunder}"))
    for dunder, fn in _COMPARE.items():
        setattr(cls, f"__{dunder}__", _binary(fn, op=dunder))
    for dunder, fn in _UNARY.items():
        setattr(cls, f"__{dunder}__", _unary(fn, op=dunder))
    cls.__hash__ = None  # type: ignore[assignment]
    setattr(cls, "real", _part("real"))
    setattr(cls, "imag", _part("imag"))
    for name in ("conj", "conjugate", "round", "take"):
        setattr(cls, name, _named(name))
    setattr(cls, "clip", _clip_method)


def _clip_method(self: Any, min: Any = None, max: Any = None) -> Any:
    """``x.clip(lo, hi)``: JAX's method passes the bounds to jnp.clip by
    keyword (so its staged call takes them in keyword order)."""
    return jnp_math.clip(self, min=min, max=max)


for _cls in (Array, Tracer):
    install(_cls)


_REDUCTION_METHODS = ("sum", "mean", "var", "std", "max", "min", "prod", "argmax", "argmin",
                      "all", "any", "cumsum", "cumprod", "sort", "argsort")


def _function_method(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    # A wrapper, not fn itself: a jit-wrapped fn is no function and would not bind self.
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _on_hi_type(self):  # the hi type's method (``aval_method``), as in JAX
            return getattr(self.aval, name).fun(self, *args, **kwargs)
        return fn(self, *args, **kwargs)
    method.__name__ = name
    return method


def _install_function_methods() -> None:
    """``x.sum()``, ``x.dot(y)`` ... on concrete arrays and tracers alike."""
    for cls in (Array, Tracer):
        for name in _REDUCTION_METHODS:
            setattr(cls, name, _function_method(getattr(reductions, name), name))
        setattr(cls, "dot", _function_method(linalg.dot, "dot"))


_install_function_methods()
