"""``jax.interpreters.xla``: the names user primitives register with are backed by spec;
the others work on JAX's tracing machinery and raise NotImplementedError."""

from spec._src.api.extend import unsupported

_MODULE = "jax.interpreters.xla"

Backend = unsupported(_MODULE, "Backend")
apply_primitive = unsupported(_MODULE, "apply_primitive")
canonicalize_dtype_handlers = unsupported(_MODULE, "canonicalize_dtype_handlers")

__all__ = [
    "Backend",
    "apply_primitive",
    "canonicalize_dtype_handlers",
]
