"""Batching (vmap) rules of the ref primitives (issue 8).

Kept apart from ``spec/rules/state.py`` so that the vmap rules of refs can
grow on their own; the declarations there take their ``batch`` sections
from here.
"""

from __future__ import annotations

from spec.interpreter import not_applicable

_VMAP = "vmap of refs is the next refs slice (issue 8): not specified yet"

new_ref_batch = not_applicable(_VMAP)
get_batch = not_applicable(_VMAP)
swap_batch = not_applicable(_VMAP)
addupdate_batch = not_applicable(_VMAP)
freeze_batch = not_applicable(_VMAP)
