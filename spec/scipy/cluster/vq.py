"""``spec.scipy.cluster.vq``: JAX's ``jax.scipy.cluster.vq`` (``vq``)."""

from spec._src.scipy.cluster_vq import *  # noqa: F403
