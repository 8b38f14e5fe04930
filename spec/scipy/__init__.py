"""``spec.scipy``: JAX's ``jax.scipy`` (``special``)."""

from spec.scipy import special as special
