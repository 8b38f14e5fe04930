"""``jax.experimental.random``: stateful random number generation."""

from spec._src.random.stateful import (
    StatefulPRNG,
    stateful_rng,
)

__all__ = [
    "StatefulPRNG",
    "stateful_rng",
]
