"""``spec.nn``: JAX's ``jax.nn`` (activations, softmax and friends,
one_hot, dot_product_attention, initializers)."""

from spec._src.nn.functions import *  # noqa: F403
from spec.nn import initializers as initializers
