"""``python -m spec.surface``: per public JAX module, the names JAX has and spec lacks."""

from __future__ import annotations

from spec._src.surface import missing_names, report

__all__ = ["missing_names", "report"]

if __name__ == "__main__":
    print(report())
