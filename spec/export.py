"""``jax.export``: exporting a jit-staged program."""

from spec._src.api.export import Exported, export

__all__ = ["Exported", "export"]
