"""``jax.ad_checkpoint``: checkpoint (remat) and its policies."""

from spec._src.lax.remat import Offloadable, Recompute, Saveable, name_p
from spec._src.api.checkpoint import (
    checkpoint,
    checkpoint_dots,
    checkpoint_name,
    checkpoint_name_fwd,
    checkpoint_policies,
    dots_saveable,
    dots_with_no_batch_dims_saveable,
    everything_saveable,
    nothing_saveable,
    print_saved_residuals,
    remat,
    save_any_names_but_these,
    save_anything_except_these_names,
    save_from_both_policies,
    save_only_these_names,
    saved_residuals,
)

__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_dots",
    "checkpoint_name",
    "checkpoint_name_fwd",
    "checkpoint_policies",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "everything_saveable",
    "name_p",
    "nothing_saveable",
    "print_saved_residuals",
    "remat",
    "save_any_names_but_these",
    "save_anything_except_these_names",
    "save_from_both_policies",
    "save_only_these_names",
    "saved_residuals",
]
