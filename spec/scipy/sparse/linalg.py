"""``spec.scipy.sparse.linalg``: JAX's ``jax.scipy.sparse.linalg`` (``cg``, ``bicgstab``,
``gmres``)."""

from spec._src.scipy.sparse_linalg import *  # noqa: F403
