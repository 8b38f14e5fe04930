"""``jax.interpreters.pxla``: the names user primitives register with are backed by spec;
the others work on JAX's tracing machinery and raise NotImplementedError."""

from spec._src.api.extend import unsupported

_MODULE = "jax.interpreters.pxla"

create_compile_options = unsupported(_MODULE, "create_compile_options")

__all__ = [
    "create_compile_options",
]
