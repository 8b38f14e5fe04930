"""Objects describing staged computations: ``ShapeDtypeStruct``, ``ArgInfo``,
the cost and memory summaries of a compiled program."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.sharding import (
    NamedSharding,
    PartitionSpec,
    get_concrete_mesh,
    modify_spec_for_auto_manual,
)
from spec._src.core.types import ArrayType, to_dtype


class ShapeDtypeStruct:
    """A shape and dtype (and weak type) standing in for an array."""

    __slots__ = ("shape", "dtype", "weak_type", "_given_sharding")

    def __init__(self, shape: Any, dtype: Any, *, weak_type: bool = False,
                 sharding: Any = None) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self._given_sharding = sharding

    @property
    def sharding(self) -> Any:
        """The sharding given; a PartitionSpec is read over the mesh of the
        ``set_mesh`` in effect when asked (there must be one)."""
        given = self._given_sharding
        if not isinstance(given, PartitionSpec):
            return given
        mesh = get_concrete_mesh()
        if mesh.empty:
            raise TypeError("When specifying PartitionSpec to `ShapeDtypeStruct`, the context"
                            " mesh cannot be empty. Please use `jax.set_mesh` to set the mesh"
                            " context.")
        return NamedSharding(mesh, given)

    @classmethod
    def like(cls, x: Any) -> ShapeDtypeStruct:
        """The shape, dtype, weak type and sharding of ``x`` (an array, a
        tracer or a type)."""
        aval = x if isinstance(x, ArrayType) else canonical_aval_of(x)
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type, sharding=aval.sharding)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def aval(self) -> ArrayType:
        """The type of the values it stands for: over a NamedSharding's
        mesh, typed by its spec (Auto axes left to the partitioner)."""
        aval = ArrayType(self.shape, to_dtype(self.dtype), self.weak_type)
        sharding = self.sharding
        if not isinstance(sharding, NamedSharding) or sharding.mesh.empty:
            return aval
        mesh = sharding.mesh.abstract_mesh
        parts = sharding.spec.partitions + (None,) * (len(self.shape) - len(sharding.spec))
        spec = sharding.spec.update(partitions=parts)
        return aval.update(sharding=NamedSharding(mesh, modify_spec_for_auto_manual(spec, mesh)))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


class ArgInfo:
    """One dynamic argument of a staged computation: its type and whether it
    is donated."""

    __slots__ = ("_aval", "donated")

    def __init__(self, aval: ArrayType, donated: bool) -> None:
        self._aval = aval
        self.donated = donated

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._aval.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(self._aval.dtype)

    def __repr__(self) -> str:
        return f"ArgInfo(_aval={self._aval}, donated={self.donated})"


# Element-wise primitives XLA's cost model counts as transcendentals (one per
# output element, no flops); other element-wise arithmetic is one flop each.
_TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "logistic",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "pow",
    "rsqrt", "sqrt", "cbrt", "erf", "erfc", "erf_inv", "lgamma", "digamma"})
_FLOP_PER_ELEMENT = frozenset({
    "add", "sub", "mul", "div", "neg", "max", "min", "abs", "sign", "rem", "square",
    "integer_pow", "floor", "ceil", "round", "select_n", "clamp", "nextafter",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "add_any"})


_REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"})


def _size(aval: Any) -> int:
    return int(np.prod(getattr(aval, "shape", ()), dtype=np.int64))


def _nbytes(aval: Any) -> int:
    return _size(aval) * np.dtype(getattr(aval, "dtype", np.float32)).itemsize


def _eqn_cost(eqn: Any) -> tuple[int, int]:
    """(flops, transcendentals) of one equation, sub-jaxprs included."""
    name = eqn.primitive.name
    out = eqn.outvars[0].aval if eqn.outvars else None
    if name in _TRANSCENDENTAL:
        return 0, _size(out)
    if name in _FLOP_PER_ELEMENT:
        return _size(out), 0
    if name == "dot_general":
        (lhs_contract, _), _ = eqn.params["dimension_numbers"]
        lhs_shape = eqn.invars[0].aval.shape
        depth = int(np.prod([lhs_shape[d] for d in lhs_contract], dtype=np.int64))
        return 2 * _size(out) * depth, 0
    if name in _REDUCTIONS:
        return _size(eqn.invars[0].aval) - _size(out), 0
    flops = transcendentals = 0
    for sub in _sub_jaxprs(eqn.params):
        f, t = jaxpr_cost(sub)
        flops, transcendentals = flops + f, transcendentals + t
    return flops, transcendentals


def _sub_jaxprs(params: dict[str, Any]) -> list[Any]:
    subs = []
    for value in params.values():
        inner = getattr(value, "jaxpr", value)
        if hasattr(inner, "eqns"):
            subs.append(inner)
    return subs


def jaxpr_cost(jaxpr: Any) -> tuple[int, int]:
    """Total (flops, transcendentals) of a jaxpr's equations, each counted
    once (a loop body is counted once, not per trip)."""
    flops = transcendentals = 0
    for eqn in jaxpr.eqns:
        f, t = _eqn_cost(eqn)
        flops, transcendentals = flops + f, transcendentals + t
    return flops, transcendentals


def _bytes_accessed(jaxpr: Any) -> int:
    """Each top-level equation reads its operands and writes its results
    (no fusion: an intermediate is written once and read by each user)."""
    total = 0
    for eqn in jaxpr.eqns:
        out_bytes = sum(_nbytes(v.aval) for v in eqn.outvars)
        total += out_bytes + sum(_operand_bytes(eqn, v) for v in eqn.invars)
        if eqn.primitive.name in _REDUCTIONS:
            total += sum(np.dtype(v.aval.dtype).itemsize for v in eqn.outvars)  # init value
    return total


def _operand_bytes(eqn: Any, var: Any) -> int:
    """An operand's bytes; a rank-0 operand of an element-wise equation with
    a larger result is broadcast first (read once, written and read again at
    the result's size)."""
    aval = getattr(var, "aval", None)
    out = eqn.outvars[0].aval if eqn.outvars else None
    elementwise = eqn.primitive.name in _FLOP_PER_ELEMENT or eqn.primitive.name in _TRANSCENDENTAL
    if elementwise and aval is not None and not aval.shape and _size(out) > 1:
        return _nbytes(aval) + 2 * _size(out) * int(np.dtype(aval.dtype).itemsize)
    return _nbytes(aval)


def cost_analysis(jaxpr: Any) -> dict[str, float]:
    """The cost summary of a staged program: flops and transcendentals from
    the equations' types, bytes accessed as each equation's operand and
    result bytes; ``flops`` and ``transcendentals`` only when non-zero."""
    flops, transcendentals = jaxpr_cost(jaxpr)
    cost: dict[str, float] = {"bytes accessed": float(_bytes_accessed(jaxpr))}
    if flops:
        cost["flops"] = float(flops)
    if transcendentals:
        cost["transcendentals"] = float(transcendentals)
    return cost


class CompiledMemoryStats:
    """The buffer sizes of a compiled program, from its types: arguments,
    results, and bytes that alias donated arguments. spec allocates no
    scratch buffers and generates no code, so those sizes are 0."""

    def __init__(self, jaxpr: Any, donated: Sequence[bool]) -> None:
        in_bytes = [_nbytes(v.aval) for v in jaxpr.invars]
        self.argument_size_in_bytes = sum(in_bytes)
        self.output_size_in_bytes = sum(_nbytes(getattr(v, "aval", None))
                                        for v in jaxpr.outvars)
        self.alias_size_in_bytes = sum(b for b, d in zip(in_bytes, donated) if d)
        self.temp_size_in_bytes = 0
        self.generated_code_size_in_bytes = 0
        self.host_argument_size_in_bytes = 0
        self.host_output_size_in_bytes = 0
        self.host_alias_size_in_bytes = 0
        self.host_temp_size_in_bytes = 0
        self.host_generated_code_size_in_bytes = 0
        self.peak_memory_in_bytes = (self.argument_size_in_bytes + self.output_size_in_bytes
                                     - self.alias_size_in_bytes)

    def __repr__(self) -> str:
        return (f"CompiledMemoryStats(argument_size_in_bytes={self.argument_size_in_bytes}, "
                f"output_size_in_bytes={self.output_size_in_bytes}, "
                f"alias_size_in_bytes={self.alias_size_in_bytes}, temp_size_in_bytes=0)")


class Layout:
    """How an array's elements lie in memory: its dimensions from major to
    minor (spec's buffers are row-major: ``(0, 1, ..., ndim - 1)``), no
    tiling."""

    __slots__ = ("major_to_minor", "tiling", "sub_byte_element_size_in_bits")

    def __init__(self, major_to_minor: Sequence[int], tiling: tuple[Any, ...] = (),
                 sub_byte_element_size_in_bits: int = 0) -> None:
        self.major_to_minor = tuple(int(d) for d in major_to_minor)
        self.tiling = tuple(tiling)
        self.sub_byte_element_size_in_bits = int(sub_byte_element_size_in_bits)

    @classmethod
    def row_major(cls, ndim: int) -> Layout:
        return cls(tuple(range(ndim)))

    def _key(self) -> tuple[Any, ...]:
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __repr__(self) -> str:
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class Format:
    """An argument's or result's layout and sharding in a compiled program."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout: Layout, sharding: Any) -> None:
        self.layout = layout
        self.sharding = sharding

    def __repr__(self) -> str:
        return f"Format(layout={self.layout!r}, sharding={self.sharding!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)

    def __hash__(self) -> int:
        return hash(self.layout)


# Options passed to the compiler (``jit(...).lower(...).compile(compiler_options)``).
CompilerOptions = dict[str, Any]


class Wrapped(Protocol):
    """What ``jit`` returns, as a type: a callable that can also be traced
    and lowered."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def trace(self, *args: Any, **kwargs: Any) -> Any: ...

    def lower(self, *args: Any, **kwargs: Any) -> Any: ...
