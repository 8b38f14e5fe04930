"""``spec.nn``: JAX's ``jax.nn`` (activations, softmax and friends,
one_hot, dot_product_attention, initializers)."""

from spec._src.nn.functions import *  # noqa: F403
from spec._src.nn.scaled import (get_scaled_dot_general_config as get_scaled_dot_general_config,
                                 scaled_dot_general as scaled_dot_general,
                                 scaled_matmul as scaled_matmul)
from spec.nn import initializers as initializers
