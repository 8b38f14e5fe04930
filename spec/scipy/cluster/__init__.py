"""``spec.scipy.cluster``: JAX's ``jax.scipy.cluster`` (the ``vq`` module)."""

from spec.scipy.cluster import vq as vq
