"""lax wrappers for dot_general and friends."""

__all__: list[str] = []
