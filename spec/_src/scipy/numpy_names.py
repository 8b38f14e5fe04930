"""The spec.numpy functions jax.scipy is written with, gathered from the
modules that define them (internal modules never import the facade)."""

from spec._src.numpy.creation import arange, array, asarray, full_like, ones_like, zeros, zeros_like
from spec._src.numpy.indexing import select, where
from spec._src.numpy.math import (abs, arctan, clip, conjugate, cos, exp, expm1, floor, fmod,
                                  imag, isinf, isnan, isneginf, isposinf, log, log1p, logaddexp,
                                  logical_or, maximum, minimum, promote_args_inexact, real,
                                  reciprocal, round, sign, signbit, sin, sinc, square)
from spec._src.numpy.linalg import matmul
from spec._src.numpy.logic import isscalar
from spec._src.numpy.polynomials import polyval
from spec._src.numpy.reductions import cumprod, sum
from spec._src.numpy.shape import broadcast_to, expand_dims, roll, stack

__all__ = [
    "abs", "arange", "arctan", "array", "asarray", "broadcast_to", "clip", "conjugate", "cos",
    "cumprod", "exp", "expand_dims", "expm1", "floor", "fmod", "full_like", "imag", "isinf",
    "isnan", "isneginf", "isposinf", "isscalar", "log", "log1p", "logaddexp", "logical_or",
    "matmul", "maximum", "minimum", "ones_like", "polyval", "promote_args_inexact", "real",
    "reciprocal", "roll", "round", "select", "sign", "signbit", "sin", "sinc", "square",
    "stack", "sum", "where", "zeros", "zeros_like",
]
