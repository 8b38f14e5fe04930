"""jax.nn: activations, normalisations, attention and initializers."""
