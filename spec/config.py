"""``jax.config``: flags and their context managers."""

from spec._src.core.config import (
    config,
    Config,
    enable_x64,
    use_direct_linearize,
)

__all__ = [
    "config",
    "Config",
    "enable_x64",
    "use_direct_linearize",
]
