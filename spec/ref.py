"""``jax.ref``: mutable array references."""

from spec._src.api.ref import (
    AbstractRef,
    Ref,
    addupdate,
    freeze,
    get,
    new_ref,
    set,
    swap,
)

__all__ = [
    "AbstractRef",
    "Ref",
    "addupdate",
    "freeze",
    "get",
    "new_ref",
    "set",
    "swap",
]
