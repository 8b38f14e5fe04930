"""The primitive rules: one declaration per primitive, grouped by family.

Every primitive is declared once, with all of its sections (typing, impl,
sharding, jvp, transpose, batch). A section that is not written yet is an
explicit ``pending(issue)``; one that cannot exist is
``not_applicable(reason)``. ``missing_sections()`` lists the pending ones.
"""

from __future__ import annotations

from spec._src.core.registry import REGISTRY, declare, missing_sections, primitive

# Importing a family module declares its primitives.
from spec._src.lax import (
    elementwise,
    structural,
    indexing,
    reductions,
    dot,
    calls,
    conv,
    ad_prims,
    remat,
    custom,
    scan,
    collectives,
    control_flow,
    reshard,
    shard_map,
)
from spec._src.lax import manual_collectives  # noqa: F401
from spec._src.lax import prng  # noqa: F401
from spec._src.lax import state  # noqa: F401  (refs)
from spec._src.lax import linalg  # noqa: F401  (decompositions)
from spec._src.interpreters import per_device as _per_device

_per_device.attach()

__all__ = ["REGISTRY", "declare", "missing_sections", "primitive"]
