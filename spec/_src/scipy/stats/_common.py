"""What the distributions share: JAX's promotion, typed constants, the
standardised variable, and the functions JAX derives from another one of the
same distribution (``pdf`` as the exponential of ``logpdf``, ``logcdf`` as the
logarithm of ``cdf``, ...), built once here rather than written per module."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from spec._src.lax import elementwise as lax_e
from spec._src.numpy.util import _jit
from spec._src.scipy import numpy_names as jnp

Fn = Callable[..., Any]


def promote(name: str, *args: Any) -> list[Any]:
    """``promote_args_inexact`` under the distribution function's name."""
    return jnp.promote_args_inexact(name, *args)


def const(x: Any, value: float) -> Any:
    """``value`` as a constant of x's dtype."""
    return lax_e.const_like(x, value)


def standardize(x: Any, loc: Any, scale: Any) -> Any:
    """``(x - loc) / scale`` as the lax subtraction and division JAX emits."""
    return lax_e.div(lax_e.sub(x, loc), scale)


def _derived(name: str, base: Fn, outer: Fn, what: str) -> Fn:
    signature = inspect.signature(base)

    @functools.wraps(base)
    def derived(*args: Any, **kwargs: Any) -> Any:
        # Defaults are passed on explicitly, as JAX's pdf(x, ..., loc=0) calls logpdf(x, ...,
        # loc): a jitted base function then sees them as operands.
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return outer(base(*bound.args, **bound.kwargs))
    derived.__name__ = derived.__qualname__ = name
    derived.__doc__ = f"The {what} of ``{base.__name__}`` (same arguments)."
    return derived


def exp_of(name: str, log_fn: Fn) -> Fn:
    """A function ``name`` that is ``lax.exp`` of ``log_fn`` (``pdf`` of ``logpdf``)."""
    return _derived(name, log_fn, lax_e.exp, "exponential")


def log_of(name: str, fn: Fn) -> Fn:
    """A function ``name`` that is ``lax.log`` of ``fn`` (``logcdf`` of ``cdf``)."""
    return _derived(name, fn, lax_e.log, "logarithm")


def staged(name: str) -> Callable[[Fn], Fn]:
    """The function as JAX stages it under ``@jit``: one ``jit`` equation named ``name``."""
    def stage(fn: Fn) -> Fn:
        return _jit(name, fn)
    return stage
