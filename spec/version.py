"""``spec.version``: JAX's ``jax.version`` — spec's own version (``__version__``,
``_version``) and the JAX release spec specifies (``jax_version``)."""

from spec._src.backends.environment import SPEC_VERSION, SPECIFIED_JAX_VERSION, version_info

__version__ = SPEC_VERSION
_version = SPEC_VERSION
__version_info__ = version_info(SPEC_VERSION)
jax_version = SPECIFIED_JAX_VERSION

__all__ = ["__version__", "__version_info__", "jax_version"]
