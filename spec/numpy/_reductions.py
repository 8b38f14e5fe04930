"""jnp _reductions."""

__all__: list[str] = []
