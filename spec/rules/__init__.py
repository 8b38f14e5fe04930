"""The primitive rules: one declaration per primitive, grouped by family.

Every primitive is declared once, with all of its fields (``Primitive.FIELDS``:
the rule sections typing, impl, sharding, jvp, transpose, batch; the optional
hooks such as its per-device program, discharge rule or dce rule; its flags).
A section that is not written yet is an explicit ``pending(issue)``; one that
cannot exist is ``not_applicable(reason)``; a hook left at its default is a
named ``Default`` (``GATHERED``, ``KEPT_OR_DROPPED_WHOLE``, ...).
``missing_sections()`` lists every field not accounted for.
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

__all__ = ["REGISTRY", "declare", "missing_sections", "primitive"]
