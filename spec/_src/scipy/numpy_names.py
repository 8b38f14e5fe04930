"""The spec.numpy functions jax.scipy is written with, gathered from the
modules that define them (internal modules never import the facade)."""

from spec._src.numpy.creation import arange, array, asarray, full_like, ones_like, zeros, zeros_like
from spec._src.numpy.indexing import select, where
from spec._src.numpy.math import (abs, cos, exp, expm1, floor, fmod, i0, isinf, isnan, log,
                                  log1p, maximum, minimum, promote_args_inexact, sign,
                                  signbit, sin, sqrt, square)
from spec._src.numpy.polynomials import polyval
from spec._src.numpy.reductions import cumprod, sum
from spec._src.numpy.shape import expand_dims, moveaxis, stack

__all__ = [
    "abs", "arange", "cumprod", "array", "asarray", "cos", "exp", "expand_dims", "expm1", "floor", "fmod",
    "full_like", "i0", "isinf", "isnan", "log", "log1p", "maximum", "minimum", "moveaxis",
    "ones_like", "polyval", "promote_args_inexact", "select", "sign", "signbit", "sin", "sqrt",
    "square", "stack", "sum", "where", "zeros", "zeros_like",
]
