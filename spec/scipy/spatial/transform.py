"""``spec.scipy.spatial.transform``: JAX's ``jax.scipy.spatial.transform`` (``Rotation``,
``Slerp``)."""

from spec._src.scipy.spatial_transform import *  # noqa: F403
