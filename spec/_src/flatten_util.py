"""``ravel_pytree``: a pytree of arrays as one flat vector, and the inverse map."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.numpy.creation import asarray, zeros
from spec._src.numpy.shape import concatenate, ravel, reshape, split
from spec._src.core.tree_util import tree_flatten, tree_unflatten


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Concatenate the raveled leaves (promoted to their common dtype); return the inverse.

    The inverse splits a vector of the same length back into leaves of the original shapes
    and casts each back to its original dtype.
    """
    leaves, treedef = tree_flatten(pytree)
    arrays = [asarray(leaf) for leaf in leaves]
    if not arrays:
        return zeros((0,), np.float32), lambda flat: tree_unflatten(treedef, [])
    shapes = [a.shape for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    flat = concatenate([ravel(a) for a in arrays])
    split_points = [int(p) for p in np.cumsum(sizes)[:-1]]

    def unravel(vector: Any) -> Any:
        vector = asarray(vector)
        if vector.shape != flat.shape:
            raise ValueError(
                f"The unravel function expected an array of shape {flat.shape}, got shape "
                f"{vector.shape}.")
        pieces = split(vector, split_points)
        rebuilt = [reshape(piece, shape).astype(dtype)
                   for piece, shape, dtype in zip(pieces, shapes, dtypes, strict=True)]
        return tree_unflatten(treedef, rebuilt)

    return flat, unravel
