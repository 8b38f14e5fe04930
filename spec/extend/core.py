"""``jax.extend.core``: user primitives and the jaxpr types."""

from spec._src.api.extend import Primitive, jaxpr_as_fun
from spec._src.core.interpreter import (
    ClosedJaxpr,
    DropVar,
    Eqn as JaxprEqn,
    Jaxpr,
    Literal,
    Var,
    check_jaxpr,
)

__all__ = ["ClosedJaxpr", "DropVar", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "Var",
           "check_jaxpr", "jaxpr_as_fun"]
