"""What JVP and transpose rules are written with.

A JVP rule has the signature ``jvp(primals, tangents, **params) ->
(primal_outs, tangent_outs)``: lists of values, where a tangent may be the
symbolic ``Zero(aval)`` (never materialised unless a rule needs it). Rules
compute with ``spec.lax`` functions, so under a staging trace they record
equations and under evaluation they compute.

A transpose rule has the signature ``transpose(ct, *operands, **params) ->
list`` (``ct`` is a list for multiple-result primitives): operands the
primitive is linear in arrive as ``UndefinedPrimal(aval)``, the others as
values; it returns one cotangent per operand, ``None`` for operands that are
not undefined. A cotangent may be ``Zero``.

The helpers below build the common shapes of rules: ``defjvp`` (one tangent
contribution per operand, summed), ``defjvp2`` (contributions that also read
the primal output), ``linear_jvp`` (the primitive applied to the tangents),
``zero_jvp`` (outputs whose tangents are zero: integer results, comparisons)
and ``linear_transpose`` (a transpose for a primitive linear in one operand).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core.array import Array
from spec._src.core.hitypes import HI_VALUE_TYPES, is_high
from spec._src.core.interpreter import (
    EvalTrace,
    Primitive,
    Tracer,
    canonical_aval_of,
    current_trace,
)
from spec._src.core.sharding import get_abstract_mesh
from spec._src.core.registry import primitive
from spec._src.core.types import FLOAT0, ArrayType


class Zero:
    """A symbolic zero tangent or cotangent of type ``aval``."""

    __slots__ = ("aval",)

    def __init__(self, aval: ArrayType) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval})"

    @staticmethod
    def from_primal_value(x: Any) -> Zero:
        return Zero(canonical_aval_of(x).tangent_type())


class UndefinedPrimal:
    """The operand a linear primitive is being transposed with respect to."""

    __slots__ = ("aval",)

    def __init__(self, aval: ArrayType) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def is_zero(x: Any) -> bool:
    return type(x) is Zero


# How a zero of a (non-float0) array type is materialised: a zero of the
# type's dtype and weak type broadcast to its shape and laid out as its
# sharding says, as lax builds it (``full``). The lax module that defines
# ``full`` (spec._src.lax.shaping) fills the hook when it is imported
# (importing spec does), so that the interpreters build zeros without
# importing lax (JAX's ``aval_zeros_likers``).
ArrayZeros = Callable[[ArrayType], Any]


def _array_zeros_unregistered(aval: ArrayType) -> Any:
    raise RuntimeError("building zeros is not registered: import spec._src.lax.shaping "
                       "(importing spec does)")


@dataclass
class ZerosHooks:
    """``array_zeros(aval)``: a materialised zero of exactly type ``aval``
    (a non-float0 array type; varying axes excepted, which ``zeros_like_aval``
    adds)."""

    array_zeros: ArrayZeros = _array_zeros_unregistered


zeros_hooks = ZerosHooks()


def zeros_like_aval(aval: ArrayType) -> Any:
    """A materialised zero of type ``aval``: a literal broadcast to the shape,
    as JAX stages it; float0 zeros are plain NumPy arrays (they carry no data);
    a hi tangent type's zero is its ``vspace_zero()``."""
    if is_high(aval):
        hi: Any = aval
        return hi.vspace_zero()
    if aval.dtype == FLOAT0:
        return _float0_zeros(aval.shape)
    return _varying(zeros_hooks.array_zeros(aval), aval)


def _varying(x: Any, aval: ArrayType) -> Any:
    """Inside shard_map a zero of a varying type varies too (a free cast,
    ``pvary`` with its axes in the mesh's order)."""
    if not aval.vma:
        return x
    names = list(getattr(get_abstract_mesh(), "axis_names", ()))
    axes = tuple(sorted(aval.vma, key=lambda a: names.index(a) if a in names else len(names)))
    return primitive("pvary").bind(x, axes=axes)


def _float0_zeros(shape: tuple[int, ...]) -> Any:
    """float0 zeros: a NumPy array when evaluating or rank-0 (a literal when
    staged); staged with a shape, a broadcast of the rank-0 literal, as JAX."""
    if not shape or type(current_trace()) is EvalTrace:
        return np.zeros(shape, FLOAT0)
    return primitive("broadcast_in_dim").bind(np.zeros((), FLOAT0), shape=tuple(shape),
                                   broadcast_dimensions=(), sharding=None)


def instantiate(t: Any) -> Any:
    """A tangent as a value: symbolic zeros are materialised."""
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(x: Any, y: Any) -> Any:
    """Sum two tangents, skipping symbolic zeros (``add_any`` otherwise; two
    values of a hi tangent type, its ``vspace_add``)."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    if HI_VALUE_TYPES:
        aval: Any = canonical_aval_of(x)
        if is_high(aval):
            return aval.vspace_add(x, y)
    return primitive("add_any").bind(x, y)


# --------------------------------------------------------------- JVP helpers

JvpRule = Callable[..., tuple[list[Any], list[Any]]]


class _PrimitiveRule:
    """A rule that needs its primitive (to bind the primal output); the
    primitive is attached when it is declared (see ``Primitive.__init__``)."""

    prim: Primitive

    def for_primitive(self, prim: Primitive) -> _PrimitiveRule:
        self.prim = prim
        return self


class defjvp(_PrimitiveRule):
    """A JVP from one contribution per operand: ``fns[i](t_i, *primals, **params)``
    is the output tangent due to operand i (``None``: operand i is not
    differentiable). Contributions of nonzero tangents are summed in operand
    order; the primal output is bound first."""

    reads_output = False

    def __init__(self, *fns: Callable[..., Any] | None) -> None:
        self.fns = fns

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any],
                 **params: Any) -> tuple[list[Any], list[Any]]:
        out = self.prim.bind(*primals, **params)
        extra = (out,) if self.reads_output else ()
        total: Any = Zero.from_primal_value(out)
        for fn, t in zip(self.fns, tangents):
            if fn is not None and type(t) is not Zero:
                total = add_tangents(total, fn(t, *extra, *primals, **params))
        return [out], [total]


class defjvp2(defjvp):
    """Like ``defjvp`` but each contribution also reads the primal output:
    ``fns[i](t_i, out, *primals, **params)``."""

    reads_output = True


class linear_jvp(_PrimitiveRule):
    """The JVP of a primitive linear in all its operands: the primitive
    applied to the tangents (zero tangents materialised unless all are zero)."""

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any],
                 **params: Any) -> tuple[list[Any], list[Any]]:
        outs = self.prim.bind(*primals, **params)
        outs = list(outs) if self.prim.multiple_results else [outs]
        if all(type(t) is Zero for t in tangents):
            return outs, [Zero.from_primal_value(o) for o in outs]
        t_outs = self.prim.bind(*[instantiate(t) for t in tangents], **params)
        return outs, list(t_outs) if self.prim.multiple_results else [t_outs]


class zero_jvp(_PrimitiveRule):
    """A JVP whose output tangents are all zero: integer or boolean results,
    and piecewise-constant functions (floor, sign, comparisons)."""

    def __call__(self, primals: Sequence[Any], tangents: Sequence[Any],
                 **params: Any) -> tuple[list[Any], list[Any]]:
        outs = self.prim.bind(*primals, **params)
        outs = list(outs) if self.prim.multiple_results else [outs]
        return outs, [Zero.from_primal_value(o) for o in outs]


def linear_transpose(fn: Callable[..., Any]) -> Callable[..., list[Any]]:
    """The transpose rule of a primitive with one operand, linear in it:
    ``fn(ct, operand, **params)`` is the cotangent of the (undefined) operand."""

    def rule(ct: Any, operand: Any, **params: Any) -> list[Any]:
        if type(ct) is Zero:
            return [Zero(operand.aval.ct_type())]
        return [fn(ct, operand, **params)]

    return rule


def unbroadcast(aval: ArrayType, x: Any) -> Any:
    """The cotangent of an operand of type ``aval`` that was broadcast (rank-0
    operands, or size-1 axes) to the shape of ``x``: sum over the broadcast
    axes and restore the operand's shape."""
    x_shape = canonical_aval_of(x).shape
    if x_shape == aval.shape:
        return x
    if not aval.shape:
        return _reduce_sum(x, tuple(range(len(x_shape))))
    dims = tuple(i for i, (a, b) in enumerate(zip(x_shape, aval.shape)) if a != b)
    summed = _reduce_sum(x, dims) if dims else x
    if canonical_aval_of(summed).shape == aval.shape and isinstance(summed, (Array, Tracer)):
        return summed
    return primitive("reshape").bind(summed, new_sizes=tuple(aval.shape), dimensions=None,
                                     sharding=None)


def _reduce_sum(x: Any, axes: tuple[int, ...]) -> Any:
    """``lax.reduce_sum(x, axes)``: the equation its wrapper records."""
    return primitive("reduce_sum").bind(x, axes=tuple(int(a) for a in axes), out_sharding=None)


def ct_aval(x: Any) -> ArrayType:
    """The cotangent type of an operand, defined or not."""
    return x.aval.ct_type() if type(x) is UndefinedPrimal else canonical_aval_of(x).ct_type()


__all__ = [
    "ArrayZeros", "JvpRule", "UndefinedPrimal", "Zero", "ZerosHooks", "add_tangents", "ct_aval",
    "defjvp", "defjvp2", "instantiate",
    "is_undefined_primal", "is_zero", "linear_jvp", "linear_transpose", "unbroadcast", "zero_jvp",
    "zeros_like_aval",
]
