"""``jax.interpreters.batching``: the names user primitives register with are backed by spec;
the others work on JAX's tracing machinery and raise NotImplementedError."""

from spec._src.api.extend import defvectorized, primitive_batchers
from spec._src.api.extend import unsupported

_MODULE = "jax.interpreters.batching"

axis_primitive_batchers = unsupported(_MODULE, "axis_primitive_batchers")
batch_jaxpr_axes = unsupported(_MODULE, "batch_jaxpr_axes")
batch_subtrace = unsupported(_MODULE, "batch_subtrace")
bdim_at_front = unsupported(_MODULE, "bdim_at_front")
broadcast = unsupported(_MODULE, "broadcast")
defbroadcasting = unsupported(_MODULE, "defbroadcasting")
defreducer = unsupported(_MODULE, "defreducer")
fancy_primitive_batchers = unsupported(_MODULE, "fancy_primitive_batchers")
register_vmappable = unsupported(_MODULE, "register_vmappable")
unregister_vmappable = unsupported(_MODULE, "unregister_vmappable")
zero_if_mapped = unsupported(_MODULE, "zero_if_mapped")

__all__ = [
    "axis_primitive_batchers",
    "batch_jaxpr_axes",
    "batch_subtrace",
    "bdim_at_front",
    "broadcast",
    "defbroadcasting",
    "defreducer",
    "defvectorized",
    "fancy_primitive_batchers",
    "primitive_batchers",
    "register_vmappable",
    "unregister_vmappable",
    "zero_if_mapped",
]
