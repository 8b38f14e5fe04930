"""lax wrappers for convolutions."""

__all__: list[str] = []
