"""``jax.interpreters``: the rule tables user primitives register into."""

from spec.interpreters import ad, batching, mlir

__all__ = ["ad", "batching", "mlir"]
