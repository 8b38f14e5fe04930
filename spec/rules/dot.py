"""dot_general."""
