"""``jax.config``: flags and their context managers."""

from spec._src.core.config import (
    config,
    Config,
    enable_x64,
    use_direct_linearize,
)

# Importable as before, though not in JAX's __all__ of this module.
from spec._src.core.config import default_matmul_precision as default_matmul_precision
from spec._src.core.config import disable_jit as disable_jit
from spec._src.core.config import enable_checks as enable_checks
from spec._src.core.config import numpy_dtype_promotion as numpy_dtype_promotion
from spec._src.core.config import numpy_rank_promotion as numpy_rank_promotion
from spec._src.core.config import update as update
from spec._src.core.config import x64_enabled as x64_enabled

__all__ = [
    "config",
    "Config",
    "enable_x64",
    "use_direct_linearize",
]
