"""``spec.scipy.spatial``: JAX's ``jax.scipy.spatial`` (its ``transform`` module)."""

from spec.scipy.spatial import transform as transform
