"""``jax.experimental.multihost_utils``: values shared across processes.

With the virtual backend there is one process: every array is fully
addressable, and gathering adds the process axis (of size 1) as JAX does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec import tree_util


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's value, as NumPy arrays: stacked along a new leading
    axis, or concatenated along the first when ``tiled``."""
    def gather(x: Any) -> np.ndarray:
        out = np.asarray(x)
        return np.expand_dims(out, axis=0) if not tiled else out
    return tree_util.tree_map(gather, in_tree)


def sync_global_devices(name: str) -> None:
    """A barrier across processes (one process: nothing to wait for)."""
    del name


__all__ = ["process_allgather", "sync_global_devices"]
