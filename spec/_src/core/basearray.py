"""``spec.Array``: the abstract type of arrays, concrete and traced.

As with ``jax.Array``, ``isinstance(x, spec.Array)`` holds for concrete
arrays and for tracers alike, so user code can test for and annotate arrays
without knowing whether it is being traced. The concrete class is
``spec._src.core.array.Array`` (JAX's ``ArrayImpl``).
"""

from __future__ import annotations

import abc

from spec._src.core import array as _concrete
from spec._src.core.interpreter import Tracer


class Array(abc.ABC):  # noqa: B024  (an abstract type with no abstract methods, like jax.Array)
    __slots__ = ()
    __module__ = "spec"


Array.register(_concrete.Array)
Array.register(Tracer)
