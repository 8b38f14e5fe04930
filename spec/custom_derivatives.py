"""``jax.custom_derivatives``: custom_jvp, custom_vjp, custom_gradient and closure_convert."""

from spec._src.api.custom_derivatives import (
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_vjp,
    custom_vjp_primal_tree_values,
    linear_call,
    zero_from_primal,
)

from spec._src.api.custom_gradient import closure_convert, custom_gradient

# Importable as before, though not in JAX's __all__ of this module.
from spec._src.lax.custom import custom_jvp_call_p as custom_jvp_call_p
from spec._src.lax.custom import custom_vjp_call_p as custom_vjp_call_p
from spec._src.lax.custom import remat_opt_p as remat_opt_p

__all__ = [
    "CustomVJPPrimal",
    "SymbolicZero",
    "closure_convert",
    "custom_gradient",
    "custom_jvp",
    "custom_vjp",
    "custom_vjp_primal_tree_values",
    "linear_call",
    "zero_from_primal",
]
