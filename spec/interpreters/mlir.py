"""``jax.interpreters.mlir``: the names user primitives register with are backed by spec;
the others work on JAX's tracing machinery and raise NotImplementedError."""

from spec._src.api.extend import lower_fun, register_lowering
from spec._src.api.extend import unsupported

_MODULE = "jax.interpreters.mlir"

AxisContext = unsupported(_MODULE, "AxisContext")
ConstantHandler = unsupported(_MODULE, "ConstantHandler")
DEVICE_TO_DEVICE_TYPE = unsupported(_MODULE, "DEVICE_TO_DEVICE_TYPE")
LoweringParameters = unsupported(_MODULE, "LoweringParameters")
LoweringResult = unsupported(_MODULE, "LoweringResult")
LoweringRule = unsupported(_MODULE, "LoweringRule")
LoweringRuleContext = unsupported(_MODULE, "LoweringRuleContext")
Mesh = unsupported(_MODULE, "Mesh")
MeshAxisName = unsupported(_MODULE, "MeshAxisName")
ModuleContext = unsupported(_MODULE, "ModuleContext")
RECV_FROM_HOST_TYPE = unsupported(_MODULE, "RECV_FROM_HOST_TYPE")
SEND_TO_HOST_TYPE = unsupported(_MODULE, "SEND_TO_HOST_TYPE")
SPMDAxisContext = unsupported(_MODULE, "SPMDAxisContext")
ShapePolyLoweringState = unsupported(_MODULE, "ShapePolyLoweringState")
ShardingContext = unsupported(_MODULE, "ShardingContext")
Token = unsupported(_MODULE, "Token")
TokenSet = unsupported(_MODULE, "TokenSet")
Value = unsupported(_MODULE, "Value")
aval_to_ir_type = unsupported(_MODULE, "aval_to_ir_type")
aval_to_ir_types = unsupported(_MODULE, "aval_to_ir_types")
core_call_lowering = unsupported(_MODULE, "core_call_lowering")
dense_int_array = unsupported(_MODULE, "dense_int_array")
dense_int_elements = unsupported(_MODULE, "dense_int_elements")
dtype_to_ir_type = unsupported(_MODULE, "dtype_to_ir_type")
emit_python_callback = unsupported(_MODULE, "emit_python_callback")
flatten_ir_types = unsupported(_MODULE, "flatten_ir_types")
flatten_ir_values = unsupported(_MODULE, "flatten_ir_values")
i32_attr = unsupported(_MODULE, "i32_attr")
i64_attr = unsupported(_MODULE, "i64_attr")
ir = unsupported(_MODULE, "ir")
ir_attribute = unsupported(_MODULE, "ir_attribute")
ir_constant = unsupported(_MODULE, "ir_constant")
ir_constants = unsupported(_MODULE, "ir_constants")
ir_tree_registry = unsupported(_MODULE, "ir_tree_registry")
ir_type_handlers = unsupported(_MODULE, "ir_type_handlers")
jaxpr_subcomp = unsupported(_MODULE, "jaxpr_subcomp")
lower_jaxpr_to_fun = unsupported(_MODULE, "lower_jaxpr_to_fun")
lower_jaxpr_to_module = unsupported(_MODULE, "lower_jaxpr_to_module")
lowerable_effects = unsupported(_MODULE, "lowerable_effects")
make_ir_context = unsupported(_MODULE, "make_ir_context")
merge_mlir_modules = unsupported(_MODULE, "merge_mlir_modules")
module_to_bytecode = unsupported(_MODULE, "module_to_bytecode")
module_to_string = unsupported(_MODULE, "module_to_string")
register_constant_handler = unsupported(_MODULE, "register_constant_handler")
shape_tensor = unsupported(_MODULE, "shape_tensor")
token_type = unsupported(_MODULE, "token_type")
unflatten_ir_values_like_types = unsupported(_MODULE, "unflatten_ir_values_like_types")

__all__ = [
    "AxisContext",
    "ConstantHandler",
    "DEVICE_TO_DEVICE_TYPE",
    "LoweringParameters",
    "LoweringResult",
    "LoweringRule",
    "LoweringRuleContext",
    "Mesh",
    "MeshAxisName",
    "ModuleContext",
    "RECV_FROM_HOST_TYPE",
    "SEND_TO_HOST_TYPE",
    "SPMDAxisContext",
    "ShapePolyLoweringState",
    "ShardingContext",
    "Token",
    "TokenSet",
    "Value",
    "aval_to_ir_type",
    "aval_to_ir_types",
    "core_call_lowering",
    "dense_int_array",
    "dense_int_elements",
    "dtype_to_ir_type",
    "emit_python_callback",
    "flatten_ir_types",
    "flatten_ir_values",
    "i32_attr",
    "i64_attr",
    "ir",
    "ir_attribute",
    "ir_constant",
    "ir_constants",
    "ir_tree_registry",
    "ir_type_handlers",
    "jaxpr_subcomp",
    "lower_fun",
    "lower_jaxpr_to_fun",
    "lower_jaxpr_to_module",
    "lowerable_effects",
    "make_ir_context",
    "merge_mlir_modules",
    "module_to_bytecode",
    "module_to_string",
    "register_constant_handler",
    "register_lowering",
    "shape_tensor",
    "token_type",
    "unflatten_ir_values_like_types",
]
