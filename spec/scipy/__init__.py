"""``spec.scipy``: JAX's ``jax.scipy`` (``linalg``, ``special``, ``stats``)."""

from spec.scipy import linalg as linalg
from spec.scipy import special as special
from spec.scipy import stats as stats
