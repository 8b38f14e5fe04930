"""``spec.scipy.sparse``: JAX's ``jax.scipy.sparse`` (the ``linalg`` solvers)."""

from spec.scipy.sparse import linalg as linalg
