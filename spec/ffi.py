"""``spec.ffi``: calling foreign functions through XLA's FFI (JAX's ``jax.ffi``)."""

from __future__ import annotations

from spec._src.core.tokens import abstract_token
from spec._src.api.ffi import (
    build_ffi_lowering_function,
    ffi_call,
    ffi_lowering,
    include_dir,
    pycapsule,
    register_ffi_target,
    register_ffi_target_as_batch_partitionable,
    register_ffi_type,
    register_ffi_type_id,
)

__all__ = [
    "abstract_token",
    "build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir", "pycapsule",
    "register_ffi_target", "register_ffi_target_as_batch_partitionable", "register_ffi_type",
    "register_ffi_type_id",
]
