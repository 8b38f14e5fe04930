"""``jax.interpreters.partial_eval``: the names user primitives register with are backed by spec;
the others work on JAX's tracing machinery and raise NotImplementedError."""

from spec._src.api.extend import unsupported

_MODULE = "jax.interpreters.partial_eval"

DynamicJaxprTracer = unsupported(_MODULE, "DynamicJaxprTracer")
JaxprTracer = unsupported(_MODULE, "JaxprTracer")
PartialVal = unsupported(_MODULE, "PartialVal")
Val = unsupported(_MODULE, "Val")
abstract_eval_fun = unsupported(_MODULE, "abstract_eval_fun")
close_jaxpr = unsupported(_MODULE, "close_jaxpr")
convert_constvars_jaxpr = unsupported(_MODULE, "convert_constvars_jaxpr")
custom_partial_eval_rules = unsupported(_MODULE, "custom_partial_eval_rules")
dce_jaxpr = unsupported(_MODULE, "dce_jaxpr")
dce_jaxpr_call_rule = unsupported(_MODULE, "dce_jaxpr_call_rule")
dce_jaxpr_closed_call_rule = unsupported(_MODULE, "dce_jaxpr_closed_call_rule")
dce_jaxpr_consts = unsupported(_MODULE, "dce_jaxpr_consts")
dce_rules = unsupported(_MODULE, "dce_rules")
lower_jaxpr = unsupported(_MODULE, "lower_jaxpr")
lower_jaxpr2 = unsupported(_MODULE, "lower_jaxpr2")
move_binders_to_back = unsupported(_MODULE, "move_binders_to_back")
new_eqn_recipe = unsupported(_MODULE, "new_eqn_recipe")
partial_eval_jaxpr_custom_rules = unsupported(_MODULE, "partial_eval_jaxpr_custom_rules")
partial_eval_jaxpr_nounits = unsupported(_MODULE, "partial_eval_jaxpr_nounits")
prune_closed_jaxpr_outputs = unsupported(_MODULE, "prune_closed_jaxpr_outputs")
trace_to_jaxpr_dynamic = unsupported(_MODULE, "trace_to_jaxpr_dynamic")
trace_to_jaxpr_nounits = unsupported(_MODULE, "trace_to_jaxpr_nounits")

__all__ = [
    "DynamicJaxprTracer",
    "JaxprTracer",
    "PartialVal",
    "Val",
    "abstract_eval_fun",
    "close_jaxpr",
    "convert_constvars_jaxpr",
    "custom_partial_eval_rules",
    "dce_jaxpr",
    "dce_jaxpr_call_rule",
    "dce_jaxpr_closed_call_rule",
    "dce_jaxpr_consts",
    "dce_rules",
    "lower_jaxpr",
    "lower_jaxpr2",
    "move_binders_to_back",
    "new_eqn_recipe",
    "partial_eval_jaxpr_custom_rules",
    "partial_eval_jaxpr_nounits",
    "prune_closed_jaxpr_outputs",
    "trace_to_jaxpr_dynamic",
    "trace_to_jaxpr_nounits",
]
