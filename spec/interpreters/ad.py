"""``jax.interpreters.ad``: the names user primitives register with are backed by spec;
the others work on JAX's tracing machinery and raise NotImplementedError."""

from spec._src.api.extend import (
    add_tangents,
    defjvp,
    deflinear,
    deflinear2,
    is_undefined_primal,
    primitive_jvps,
    primitive_transposes,
)
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero
from spec._src.interpreters.ad_util import instantiate as instantiate_zeros
from spec._src.api.extend import unsupported

_MODULE = "jax.interpreters.ad"

JVPTrace = unsupported(_MODULE, "JVPTrace")
JVPTracer = unsupported(_MODULE, "JVPTracer")
add_jaxvals = unsupported(_MODULE, "add_jaxvals")
add_jaxvals_p = unsupported(_MODULE, "add_jaxvals_p")
annotations = unsupported(_MODULE, "annotations")
backward_pass = unsupported(_MODULE, "backward_pass")
defbilinear = unsupported(_MODULE, "defbilinear")
defjvp2 = unsupported(_MODULE, "defjvp2")
get_primitive_transpose = unsupported(_MODULE, "get_primitive_transpose")
jvp = unsupported(_MODULE, "jvp")
jvp_jaxpr = unsupported(_MODULE, "jvp_jaxpr")
linearize = unsupported(_MODULE, "linearize")
zeros_like_aval = unsupported(_MODULE, "zeros_like_aval")

__all__ = [
    "JVPTrace",
    "JVPTracer",
    "UndefinedPrimal",
    "Zero",
    "add_jaxvals",
    "add_jaxvals_p",
    "add_tangents",
    "annotations",
    "backward_pass",
    "defbilinear",
    "defjvp",
    "defjvp2",
    "deflinear",
    "deflinear2",
    "get_primitive_transpose",
    "instantiate_zeros",
    "is_undefined_primal",
    "jvp",
    "jvp_jaxpr",
    "linearize",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]
