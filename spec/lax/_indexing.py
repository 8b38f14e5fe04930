"""lax wrappers for gather and scatter."""

__all__: list[str] = []
