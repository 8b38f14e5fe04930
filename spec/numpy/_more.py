"""More jnp functions: the wider NumPy surface, built on the other jnp modules."""

__all__: list[str] = []
