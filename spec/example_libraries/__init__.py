"""``jax.example_libraries``: the small optimizer (``optimizers``) and neural-network
(``stax``) libraries JAX ships as examples of client code.

They are written against spec's public API only, as JAX's are written against ``jax``'s, so
besides standing in for JAX's modules they show that the public surface suffices for them.
"""
