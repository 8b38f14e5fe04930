"""The spec.numpy functions jax.nn is written with, gathered from the
modules that define them (internal modules never import the facade)."""

from spec._src.numpy.creation import arange, array, asarray, full, ones, ones_like, zeros
from spec._src.numpy.dtypes import promote_types
from spec._src.numpy.indexing import where
from spec._src.numpy.linalg import einsum
from spec._src.numpy.math import (abs, clip, exp, expm1, isfinite, log, log1p, logaddexp,
                                  logical_and, maximum, minimum, real, sqrt, square, subtract,
                                  tanh)
from spec._src.numpy.reductions import max, mean, sum
from spec._src.numpy.shape import (broadcast_to, expand_dims, moveaxis, reshape, split,
                                   transpose, tril)

__all__ = [
    "abs", "arange", "array", "asarray", "broadcast_to", "clip", "einsum", "exp", "expand_dims",
    "expm1", "full", "isfinite", "log", "log1p", "logaddexp", "logical_and", "max", "maximum",
    "mean", "minimum", "moveaxis", "ones", "ones_like", "promote_types", "real", "reshape",
    "split", "sqrt", "square", "subtract", "sum", "tanh", "transpose", "tril", "where", "zeros",
]
