"""``jax.ad``: the placeholders of ``VJP.with_refs``."""

from spec._src.interpreters.ad import (
    DidntWant,
    DontWant,
    GradRef,
    GradValue,
)

__all__ = [
    "DidntWant",
    "DontWant",
    "GradRef",
    "GradValue",
]
