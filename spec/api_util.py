"""``jax.api_util``."""

from spec._src.api.api_util import (
    argnums_partial,
    debug_info,
    donation_vector,
    flatten_axes,
    flatten_fun,
    flatten_fun_nokwargs,
    rebase_donate_argnums,
    safe_map,
    shaped_abstractify,
)

__all__ = ["argnums_partial", "debug_info", "donation_vector", "flatten_axes", "flatten_fun",
           "flatten_fun_nokwargs", "rebase_donate_argnums", "safe_map", "shaped_abstractify"]
