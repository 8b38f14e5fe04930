"""jnp _shape."""

__all__: list[str] = []
