"""``spec.rules``: the primitive registry, spec's own public surface.

Every primitive is one declaration with all of its sections; importing the rule families
declares them. ``missing_sections()`` lists any section that is neither written nor marked
``not_applicable(reason)``.
"""

from __future__ import annotations

from spec._src.core.registry import REGISTRY, declare, missing_sections, primitive
from spec._src.interpreters import per_device as _per_device

# Importing a family module declares its primitives.
from spec._src.lax import (  # noqa: F401  (imported for their declarations)
    ad_prims,
    calls,
    collectives,
    control_flow,
    conv,
    custom,
    dot,
    elementwise,
    indexing,
    linalg,
    manual_collectives,
    prng,
    reductions,
    remat,
    reshard,
    scan,
    shard_map,
    state,
    structural,
)

_per_device.attach()

__all__ = ["REGISTRY", "declare", "missing_sections", "primitive"]
