"""Hypothesis strategies and checkers for property-testing typing rules.

Anyone can use these against their own implementation: draw dtypes, shapes
and arrays the way spec's own tests do, and check that a primitive's impl
produces exactly what its typing rule promises.

hypothesis is a test-time dependency; importing this module requires it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from spec._src.core import types as T
from spec._src.core.interpreter import Primitive, canonical_value
from spec.test_util import check_grads, check_jvp, check_vjp
from spec._src.core.types import ArrayType

__all__ = [
    "Program", "check_grads", "check_jvp", "check_vjp", "array_types", "arrays",
    "broadcastable_shapes", "check_impl_matches_typing",
    "dtypes", "programs", "shapes", "values_of",
]

# 64-bit types only exist under x64; the default strategies avoid them.
X32_DTYPES: list[T.DType] = [
    T.bool_, T.int8, T.int16, T.int32, T.uint8, T.uint16, T.uint32, T.float16, T.bfloat16,
    T.float32, T.complex64]


def dtypes(include: Sequence[T.DType] | None = None) -> st.SearchStrategy[T.DType]:
    return st.sampled_from(list(include) if include is not None else X32_DTYPES)


def shapes(max_rank: int = 4, max_side: int = 5, min_rank: int = 0) -> st.SearchStrategy[T.Shape]:
    return st.lists(st.integers(0, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def broadcastable_shapes(max_rank: int = 4, max_side: int = 4
                         ) -> st.SearchStrategy[tuple[T.Shape, T.Shape]]:
    """Pairs of shapes that lax's elementwise rule accepts: equal rank with
    size-1 stretching, or one side rank 0."""

    @st.composite
    def pair(draw: Any) -> tuple[T.Shape, T.Shape]:
        base = draw(shapes(max_rank, max_side, min_rank=1))
        if draw(st.booleans()):
            return base, ()
        other = tuple(d if draw(st.booleans()) else 1 for d in base)
        return (base, other) if draw(st.booleans()) else (other, base)

    return pair()


def array_types(dtype_strategy: st.SearchStrategy[T.DType] | None = None,
                shape_strategy: st.SearchStrategy[T.Shape] | None = None
                ) -> st.SearchStrategy[ArrayType]:
    return st.builds(lambda s, d, w: ArrayType(s, d, w and d != T.bool_),
                     shapes() if shape_strategy is None else shape_strategy,
                     dtypes() if dtype_strategy is None else dtype_strategy, st.booleans())


def values_of(aval: ArrayType, seed: int) -> np.ndarray:
    """Deterministic values of a type, including edge values for floats."""
    rng = np.random.default_rng(seed)
    dt = aval.dtype
    if dt == T.bool_:
        return rng.integers(0, 2, aval.shape).astype(bool)
    if T.is_int(dt):
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -100), min(int(info.max), 100)
        return rng.integers(lo, hi + 1, aval.shape).astype(dt)
    real = rng.standard_normal(aval.shape) * 3
    if T.is_complex(dt):
        return (real + 1j * rng.standard_normal(aval.shape)).astype(dt)
    return real.astype(dt)


def arrays(aval_strategy: st.SearchStrategy[ArrayType] | None = None
           ) -> st.SearchStrategy[np.ndarray]:
    return st.builds(values_of, array_types() if aval_strategy is None else aval_strategy,
                     st.integers(0, 2**31 - 1))


def check_impl_matches_typing(prim: Primitive, *operands: Any, **params: Any) -> list[ArrayType]:
    """Run typing and impl on concrete operands; raise AssertionError unless
    every output has exactly the shape and dtype the typing rule gives."""
    values, avals = zip(*(canonical_value(x) for x in operands)) if operands else ((), ())
    out_types = list(prim.typing(*avals, **params))
    outs = prim.impl(*values, **params)
    assert len(outs) == len(out_types), f"{prim}: {len(outs)} outputs, typed {len(out_types)}"
    for out, ty in zip(outs, out_types):
        arr = np.asarray(out)
        assert arr.shape == ty.shape and arr.dtype == ty.dtype, (
            f"{prim}: impl gave {arr.dtype}{list(arr.shape)}, typing says {ty}")
    return out_types


# ------------------------------------------------------- random programs

# Each op: (name, arity, how it maps operand shapes to the result shape or
# None when not applicable). Programs only use float32 values, so every op
# is well typed by construction; shapes are tracked as they are drawn.
_UNARY_OPS = ("sin", "cos", "tanh", "exp_neg_sq", "abs", "negative", "sqrt_abs", "square",
              "sum0", "sumall", "transpose", "flatten", "rev0", "slice_step", "cumsum0",
              "scale", "shift", "astype_roundtrip", "max_keep")
_BINARY_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "where_pos", "dot")


def _unary_shape(op: str, s: T.Shape) -> T.Shape | None:
    if op in ("sum0", "rev0", "slice_step", "cumsum0", "max_keep") and not s:
        return None
    if op == "sum0":
        return s[1:]
    if op == "sumall":
        return ()
    if op == "transpose":
        return tuple(reversed(s))
    if op == "flatten":
        return (int(np.prod(s, dtype=np.int64)),)
    if op == "slice_step":
        return ((s[0] + 1) // 2, *s[1:])
    if op == "max_keep":
        return (1, *s[1:]) if s[0] > 0 else None
    return s


def _binary_shape(op: str, a: T.Shape, b: T.Shape) -> T.Shape | None:
    if op == "dot":
        if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
            return (a[0], b[1])
        return None
    return a if a == b else (a if not b else (b if not a else None))


class Program:
    """A random straight-line array program, runnable against any JAX-like
    namespace (``jnp``) so that implementations can be compared."""

    def __init__(self, input_shapes: list[T.Shape], steps: list[tuple[str, tuple[int, ...]]]
                 ) -> None:
        self.input_shapes = input_shapes
        self.steps = steps

    def __repr__(self) -> str:
        return f"Program(inputs={self.input_shapes}, steps={self.steps})"

    def __call__(self, jnp: Any, *inputs: Any) -> Any:
        values = list(inputs)
        for op, idx in self.steps:
            values.append(_apply(jnp, op, [values[i] for i in idx]))
        return values[-1]

    def inputs(self, seed: int) -> list[np.ndarray]:
        return [values_of(ArrayType(s, T.float32), seed + i)
                for i, s in enumerate(self.input_shapes)]


def _apply(jnp: Any, op: str, args: list[Any]) -> Any:
    x = args[0]
    table: dict[str, Any] = {
        "sin": lambda: jnp.sin(x), "cos": lambda: jnp.cos(x), "tanh": lambda: jnp.tanh(x),
        "exp_neg_sq": lambda: jnp.exp(-(x * x)), "abs": lambda: jnp.abs(x),
        "negative": lambda: -x, "sqrt_abs": lambda: jnp.sqrt(jnp.abs(x)),
        "square": lambda: jnp.square(x), "sum0": lambda: jnp.sum(x, axis=0),
        "sumall": lambda: jnp.sum(x), "transpose": lambda: jnp.transpose(x),
        "flatten": lambda: jnp.reshape(x, (-1,)), "rev0": lambda: jnp.flip(x, axis=0),
        "slice_step": lambda: x[::2], "cumsum0": lambda: jnp.cumsum(x, axis=0),
        "scale": lambda: x * 0.5, "shift": lambda: x + 1,
        "astype_roundtrip": lambda: x.astype(jnp.bfloat16).astype(jnp.float32),
        "max_keep": lambda: jnp.max(x, axis=0, keepdims=True),
    }
    if op in table:
        return table[op]()
    y = args[1]
    binary: dict[str, Any] = {
        "add": lambda: x + y, "subtract": lambda: x - y, "multiply": lambda: x * y,
        "maximum": lambda: jnp.maximum(x, y), "minimum": lambda: jnp.minimum(x, y),
        "where_pos": lambda: jnp.where(x > 0, x, y), "dot": lambda: jnp.dot(x, y),
    }
    return binary[op]()


@st.composite
def _programs(draw: Any, max_steps: int) -> Program:
    n_inputs = draw(st.integers(1, 2))
    base = draw(shapes(max_rank=3, max_side=4, min_rank=0))
    input_shapes = [base if draw(st.booleans()) else draw(shapes(3, 4)) for _ in range(n_inputs)]
    value_shapes = list(input_shapes)
    steps: list[tuple[str, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(1, max_steps))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(_UNARY_OPS))
            i = draw(st.integers(0, len(value_shapes) - 1))
            out = _unary_shape(op, value_shapes[i])
            idx: tuple[int, ...] = (i,)
        else:
            op = draw(st.sampled_from(_BINARY_OPS))
            i = draw(st.integers(0, len(value_shapes) - 1))
            j = draw(st.integers(0, len(value_shapes) - 1))
            out = _binary_shape(op, value_shapes[i], value_shapes[j])
            idx = (i, j)
        if out is not None:
            steps.append((op, idx))
            value_shapes.append(out)
    if not steps:
        steps.append(("scale", (0,)))
    return Program(input_shapes, steps)


def programs(max_steps: int = 8) -> st.SearchStrategy[Program]:
    """Random well-typed float32 programs (see ``Program``)."""
    return _programs(max_steps)
