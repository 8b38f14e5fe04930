"""``spec.core``: the public names of JAX's ``jax.core`` in JAX 0.12."""

from spec._src.api.core_names import ParamDict, Value, eval_context, max_dim, min_dim
from spec._src.core.hitypes import AbstractValue
from spec._src.core.interpreter import Atom, Trace, Tracer, ensure_compile_time_eval, eval_jaxpr
from spec._src.core.types import ShapedArray

__all__ = [
    "AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
    "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim",
]
