"""The public names of ``jax.core`` that JAX 0.12 still exports, on spec's interpreter.

``Tracer``, ``Trace``, ``ShapedArray`` (spec's ArrayType), ``AbstractValue`` (its registered
base), ``Atom`` (a variable or a literal), ``ensure_compile_time_eval`` are spec's own;
``eval_context()`` evaluates its block eagerly whatever trace is current;
``eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True)`` (the interpreter's) binds
every equation under the current trace; ``max_dim``/``min_dim`` of two (static) dimension
sizes; ``ParamDict`` and ``Value`` are the annotation aliases JAX exports.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator
from typing import Any

from spec._src.core import interpreter as I

ParamDict = dict[str, Any]
Value = Any


@contextlib.contextmanager
def eval_context() -> Iterator[None]:
    """Within the block, operations run eagerly, outside every trace."""
    with I.set_current_trace(I.EvalTrace()):
        yield


def max_dim(d1: int, d2: int) -> int:
    """The larger of two dimension sizes."""
    return max(operator.index(d1), operator.index(d2))


def min_dim(d1: int, d2: int) -> int:
    """The smaller of two dimension sizes."""
    return min(operator.index(d1), operator.index(d2))


__all__ = ["ParamDict", "Value", "eval_context", "max_dim", "min_dim"]
