"""``lax.stop_gradient``."""

from __future__ import annotations

from typing import Any

from spec import tree_util
from spec.rules.ad_prims import stop_gradient_p


def stop_gradient(x: Any) -> Any:
    """The identity on every leaf of ``x``, with zero derivative under every
    transform (nested differentiation included)."""
    return tree_util.tree_map(stop_gradient_p.bind, x)


__all__ = ["stop_gradient"]
