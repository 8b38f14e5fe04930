"""``jax.dtypes``: the dtype lattice's public names."""

from spec._src.core.dtypes import (
    TypePromotionError,
    bfloat16,
    canonicalize_dtype,
    extended,
    finfo,
    float0,
    iinfo,
    issubdtype,
    itemsize_bits,
    prng_key,
    result_type,
    scalar_type_of,
)

# Importable as before, though not in JAX's __all__ of this module.
from spec._src.core.dtypes import ExtendedDType as ExtendedDType
from spec._src.core.dtypes import dtype_of as dtype_of

__all__ = [
    "TypePromotionError",
    "bfloat16",
    "canonicalize_dtype",
    "extended",
    "finfo",
    "float0",
    "iinfo",
    "issubdtype",
    "itemsize_bits",
    "prng_key",
    "result_type",
    "scalar_type_of",
]
