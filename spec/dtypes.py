"""``spec.dtypes``: dtype utilities under JAX's names."""

from __future__ import annotations

from spec.types import TypePromotionError, canonicalize_dtype, result_type

__all__ = ["TypePromotionError", "canonicalize_dtype", "result_type"]
