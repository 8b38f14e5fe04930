"""``spec.lib``: JAX's ``jax.lib``, which exports no public names in JAX 0.12 (its
submodules are jaxlib's bindings, which spec does not have)."""

__all__: list[str] = []
