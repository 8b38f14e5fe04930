"""``jax.interpreters``: the rule tables user primitives register into."""

from spec.interpreters import ad, batching, mlir, partial_eval, pxla, xla

__all__ = ["ad", "batching", "mlir", "partial_eval", "pxla", "xla"]
