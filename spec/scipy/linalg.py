"""``spec.scipy.linalg``: JAX's ``jax.scipy.linalg``."""

from spec._src.scipy.linalg import *  # noqa: F403
from spec._src.scipy.linalg_more import *  # noqa: F403
from spec._src.scipy.linalg_schur import *  # noqa: F403
