"""``jax.interpreters.mlir``: lowering registrations of user primitives."""

from spec._src.api.extend import lower_fun, register_lowering

__all__ = ["lower_fun", "register_lowering"]
