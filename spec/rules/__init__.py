"""``spec.rules``: the primitive registry, spec's own public surface.

Every primitive is declared once, with all of its fields (``Primitive.FIELDS``: the rule
sections typing, impl, sharding, jvp, transpose, batch; the hooks such as its per-device
program, discharge rule or dce rule; its flags). A section that cannot exist is
``not_applicable(reason)``; a hook left at its default is a named ``Default``
(``GATHERED``, ``KEPT_OR_DROPPED_WHOLE``, ...). ``missing_sections()`` lists every field
not accounted for. Importing the rule families declares their primitives.
"""

from __future__ import annotations

from spec._src.core.registry import REGISTRY, declare, missing_sections, primitive
from spec._src.lax import (  # noqa: F401  (imported for their declarations)
    ad_prims,
    ann,
    barrier,
    calls,
    collectives,
    control_flow,
    conv,
    custom,
    custom_batching,
    dot,
    elementwise,
    fft,
    ffi,
    indexing,
    integer_ops,
    linalg,
    linalg_eig,
    linalg_householder,
    linalg_lu,
    linalg_products,
    linalg_schur,
    linalg_tridiagonal,
    linear_solve,
    prng,
    reduce,
    reductions,
    remat,
    reshard,
    scaled_dot,
    scan,
    shaping,
    shard_map,
    slicing,
    special,
    special_functions,
    state,
    tokens,
    windows,
)

__all__ = ["REGISTRY", "declare", "missing_sections", "primitive"]
