"""jnp _linalg."""

__all__: list[str] = []
