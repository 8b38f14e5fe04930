"""jnp _indexing."""

__all__: list[str] = []
