"""``jax.experimental.hijax``: user-defined primitives with their own
differentiation and batching rules (``VJPHiPrimitive``, JAX 0.12's
``HiPrim``), and the names their rules use."""

from spec._src.api.hijax import (
    AbstractRef,
    AbstractValue,
    HiPrim,
    HiPspec,
    HiType,
    MappingSpec,
    ShapedArray,
    TransformedRef,
    VJPHiPrimitive,
    aval_method,
    aval_property,
    bdims_at_front,
    control_flow_allowed_effects,
    instantiate_zeros,
    is_undefined_primal,
    jvp_from_lin,
    linearize_from_jvp,
    register_hitype,
    unmap_avals,
    vjp_from_jvp,
    vjp_from_lin,
    vmap_rule,
)
from spec._src.interpreters.accumulators import GradAccum, NullAccum, ValAccum
from spec._src.interpreters.ad import RefAccum
from spec._src.interpreters.ad_util import Zero

__all__ = [
    "AbstractRef", "AbstractValue", "GradAccum", "HiPrim", "HiPspec", "HiType", "MappingSpec",
    "NullAccum", "RefAccum", "ShapedArray", "TransformedRef", "VJPHiPrimitive", "ValAccum",
    "Zero", "aval_method", "aval_property", "bdims_at_front", "control_flow_allowed_effects",
    "instantiate_zeros", "is_undefined_primal", "jvp_from_lin", "linearize_from_jvp",
    "register_hitype", "unmap_avals", "vjp_from_jvp", "vjp_from_lin", "vmap_rule",
]
