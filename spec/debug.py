"""``jax.debug``: looking at values and shardings while a program runs."""

from spec._src.core.effects import DebugEffect, OrderedDebugEffect
from spec._src.api.callbacks import debug_callback as callback
from spec._src.api.callbacks import debug_log as log
from spec._src.api.callbacks import debug_print as print  # noqa: A001  (JAX's name)
from spec._src.api.debugger import breakpoint  # noqa: A004  (JAX's name)
from spec._src.api.debug_sharding import (
    inspect_array_sharding,
    visualize_array_sharding,
    visualize_sharding,
)

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback",
           "inspect_array_sharding", "log", "print", "visualize_array_sharding",
           "visualize_sharding"]
