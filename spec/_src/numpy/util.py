"""Shared machinery of the jnp layer: dtype promotion of operands."""

from __future__ import annotations

import ml_dtypes

import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from spec._src.api.jit import jit
from spec._src.core.canonical import optional_axes
from spec._src.core import types as T
from spec._src.core.array import Array, placed_on, weak_scalar
from spec._src.core.commitment import committed_device, is_committed
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core import nan_checks
from spec._src.core import tree_util
from spec._src.core.interpreter import (
    MISS,
    EagerPlan,
    EvalTrace,
    Tracer,
    _insert_pvary,
    canonical_aval_of,
    current_trace,
    remember_plan,
    run_recorded,
    set_current_trace,
    to_concrete_value,
)
from spec._src.core.hitypes import is_hi_value, is_high
from spec._src.core.prng import is_key_dtype
from spec._src.core.sharding import _context
from spec._src.core.state_types import RefType
from spec._src.core.tokens import Token, is_token_dtype
from spec._src.lax import shaping as L
from spec._src.lax.shaping import _convert_element_type
from spec._src.lax.shaping import canonicalize_axis
from spec._src.lax.reshard import ArrayCopySemantics, device_put_p
from spec._src.interpreters import ad
from spec._src.interpreters.ad_util import Zero

__all__ = ["check_arraylike", "check_for_prngkeys", "promote_args", "promote_dtypes",
           "to_weak_or_strong"]


def check_arraylike(fun_name: str, *args: Any) -> None:
    """jnp functions accept arrays and scalars, not lists/tuples (as JAX). A scalar is
    what NumPy's ``isscalar`` says, strings and bytes included, as in JAX: the check
    passes them and the conversion, where a function makes one, refuses them."""
    for i, a in enumerate(args):
        if isinstance(a, (Array, np.ndarray, np.generic, str, bytes)) or isinstance(
                a, T.PYTHON_SCALAR_TYPES):
            if type(a) is Token:
                _refuse_token(fun_name, a, i)
            continue
        if isinstance(a, Tracer) and is_token_dtype(getattr(a.aval, "dtype", None)):
            _refuse_token(fun_name, a, i)
        # Refs (eager Refs, traced refs) are not arrays: JAX's TypeError.
        _refuse_ref(fun_name, a, i)
        if is_hi_value(a) or (isinstance(a, Tracer) and is_high(a.aval)):
            raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                            f"{_jax_class_seen(fun_name, a)} at position {i}.")
        if isinstance(a, Tracer) or hasattr(a, "__jax_array__"):
            continue
        raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got {type(a)} at "
                        f"position {i}.")


# JAX's jnp functions that are ufunc objects: they check their operands
# before their jit; the others check inside it.
_JAX_UFUNCS = frozenset({
    "negative", "add", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor", "subtract",
    "minimum", "maximum", "logical_and", "logical_or", "logical_xor", "logaddexp",
    "logaddexp2"})

# The module of JAX's tracer class for each of spec's traces.
_JAX_TRACER_MODULES = {"DynamicJaxprTrace": "partial_eval", "BatchTrace": "batching",
                       "JVPTrace": "ad", "LinearizeTrace": "ad"}


def _jax_class_seen(fun_name: str, a: Any) -> str:
    """The class of a hi value as JAX's check of ``fun_name``'s operands
    sees it: inside the function's jit a tracer of JAX's jit trace; before
    it (a ufunc) the value's own class, or the class of the tracer it is."""
    trace = "DynamicJaxprTrace" if fun_name not in _JAX_UFUNCS else (
        a._trace.name if isinstance(a, Tracer) else None)
    if trace is None or trace not in _JAX_TRACER_MODULES:
        return str(type(a))
    return f"<class 'jax._src.interpreters.{_JAX_TRACER_MODULES[trace]}.{trace}r'>"


# JAX's jnp functions that check their operands outside any jit of their
# own (the ufuncs among them): a token reaches the check as itself, or as
# the tracer of the caller's trace; the other functions see their jit's tracer.
_JAX_CHECKED_OUTSIDE_JIT = _JAX_UFUNCS | frozenset({
    "argmax", "argmin", "argwhere", "array_split", "astype", "bincount", "broadcast_arrays",
    "broadcast_to", "compress", "concatenate", "copy", "cumulative_prod", "cumulative_sum",
    "delete", "diag", "diag_indices_from", "diagflat", "dsplit", "empty_like", "expand_dims",
    "flip", "fliplr", "flipud", "full_like", "histogram", "histogram2d",
    "histogram_bin_edges", "histogramdd", "hsplit", "intersect1d", "isin", "isneginf",
    "isposinf", "ix_", "matrix_transpose", "meshgrid", "nanargmax", "nanargmin", "nonzero",
    "ones_like", "pad", "permute_dims", "polydiv", "polymul", "power", "ptp", "repeat",
    "reshape", "roll", "roots", "setdiff1d", "setxor1d", "split", "squeeze", "stack", "std",
    "tensordot", "tile", "transpose", "tril_indices_from", "trim_zeros", "triu_indices_from",
    "union1d", "unique", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "unravel_index", "var", "vsplit", "where", "zeros_like"})


def _refuse_token(fun_name: str, a: Any, position: int) -> None:
    """A token is no array operand: JAX's TypeError, naming the class its
    check sees (JAX's ``core.Token``, or a tracer of JAX's)."""
    if fun_name not in _JAX_CHECKED_OUTSIDE_JIT:
        seen = "<class 'jax._src.interpreters.partial_eval.DynamicJaxprTracer'>"
    elif isinstance(a, Tracer) and a._trace.name in _JAX_TRACER_MODULES:
        trace = a._trace.name
        seen = f"<class 'jax._src.interpreters.{_JAX_TRACER_MODULES[trace]}.{trace}r'>"
    else:
        seen = "<class 'jax._src.core.Token'>"
    raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got {seen} at "
                    f"position {position}.")


def _refuse_ref(fun_name: str, a: Any, position: int) -> None:
    aval = getattr(a, "aval", None)
    if type(aval) is RefType:
        raise TypeError(f"{fun_name} got a Ref of type {aval} at position {position}, but a Ref "
                        "can't be passed where an array is expected. Did you forget to read its "
                        "value with `ref[...]`?")


def check_for_prngkeys(fun_name: str, *args: Any) -> None:
    """Operands of different dtypes, one of them a key dtype: a TypeError
    naming them all, before any promotion (as JAX's jnp functions). Operands
    of one dtype pass: the primitive's typing rule decides about keys."""
    dtypes = [canonical_aval_of(a).dtype for a in args]
    if len(set(dtypes)) < 2 or not any(is_key_dtype(d) for d in dtypes):
        return
    raise TypeError(f"{fun_name} does not accept dtypes {', '.join(map(str, dtypes))}.")


def to_weak_or_strong(x: Any, dtype: T.DType, weak: bool) -> Any:
    """``x`` as an operand of exactly (dtype, weak). Python scalars become
    concrete values (inlined as literals when traced); the rest convert."""
    if T.is_python_scalar(x):
        return python_scalar_operand(x, dtype, weak)
    if type(x) is np.ndarray and x.dtype == dtype and not weak:
        # Already what is asked for: the NumPy array itself, so that a trace
        # capturing it twice makes one constant (as JAX, which keys constants
        # by the object).
        return x
    return _convert_element_type(x, dtype, weak)


@functools.lru_cache(maxsize=256)
def _scalar_type(dtype: T.DType, weak: bool) -> T.ArrayType:
    return T.ArrayType((), dtype, weak)


def python_scalar_operand(x: Any, dtype: T.DType, weak: bool) -> Array:
    """A Python scalar as a typed rank-0 value.

    A float/complex/bool that keeps its own type stays the Python value
    (printed as written in jaxpr literals); ints, and anything converted, are
    the value of the new dtype, as in JAX. An int that the target integer
    dtype cannot hold raises OverflowError, as JAX does.
    """
    aval = _scalar_type(dtype, weak)
    kind = type(x)
    if kind is int:
        # The int must fit the weak int type (int32, or int64 under x64);
        # converting it on to a narrower integer dtype then wraps.
        weak_int = T.default_int()
        low, high = _iinfo(weak_int)
        if not low <= x <= high:
            raise OverflowError(f"Python int {x} too large to convert to {weak_int.name}")
        arr = _narrowed(np.int64(x), dtype)
        return weak_scalar(arr, arr, aval)
    if kind is complex and not T.is_complex(dtype):
        x = x.real
    arr = _narrowed(x, dtype)
    keeps_type = T.python_scalar_dtype(kind) == dtype and weak == (kind is not bool)
    # Like JAX's typed host scalars, the result stays a jaxpr literal when
    # staged: the Python value if its type is kept, else the converted value.
    return weak_scalar(x if keeps_type else arr, arr, aval)


@functools.lru_cache(maxsize=64)
def _iinfo(dtype: T.DType) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _narrowed(x: Any, dtype: T.DType) -> np.ndarray:
    """``x`` rounded to ``dtype``; out-of-range values become inf/wrap
    silently, as a conversion does (no NumPy warning)."""
    limit = _float_limit(dtype)
    if type(x) is float and -limit <= x <= limit:
        return np.array(x, dtype)  # in range: no overflow to silence
    with np.errstate(all="ignore"):
        return np.array(x).astype(dtype)


@functools.lru_cache(maxsize=64)
def _float_limit(dtype: T.DType) -> float:
    """The largest finite value of a real float dtype (-1: not a real float)."""
    if not T.is_float(dtype):
        return -1.0
    return float(ml_dtypes.finfo(dtype).max)  # type: ignore[no-untyped-call]


_TYPED = (Array, Tracer)


def promote_dtypes(*args: Any) -> list[Any]:
    """Convert operands to their common (dtype, weak type), JAX's ``promote_dtypes``."""
    if len(args) < 2:
        return list(args)
    if _agree(args):
        return list(args)  # already of one (dtype, weak): nothing to convert
    dtype, weak = T.result_type_and_weak(*args)
    if _context.in_manual:
        # Inside shard_map operands are cast to the common varying axes before
        # their dtypes are promoted, as JAX stages it.
        args = tuple(_insert_pvary(args))
    return [to_weak_or_strong(a, dtype, weak) for a in args]


def _agree(args: tuple[Any, ...] | list[Any], same_rank: bool = False) -> bool:
    """Do all operands already have one (dtype, weak type) — and, if asked,
    one rank — so that promotion has nothing to do? (A weak bool is never
    left alone: promotion makes it strong.)"""
    if not isinstance(args[0], _TYPED):
        return False
    first = args[0].aval
    if first.weak_type and first.dtype == T.bool_ or is_high(first):
        return False
    for a in args[1:]:
        if not isinstance(a, _TYPED):
            return False
        aval = a.aval
        if aval.dtype != first.dtype or aval.weak_type != first.weak_type:
            return False
        if same_rank and len(aval.shape) != len(first.shape):
            return False
    return True


def promote_args(fun_name: str, *args: Any) -> list[Any]:
    check_arraylike(fun_name, *args)
    check_for_prngkeys(fun_name, *args)
    return promote_dtypes(*args)


def aval_of(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)


Fn = Callable[..., Any]


def _aval(x: Any) -> T.ArrayType:
    return canonical_aval_of(x)


def _ndim(x: Any) -> int:
    return _aval(x).ndim


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(_aval(x).shape)


def _dtype(x: Any) -> T.DType:
    return _aval(x).dtype


def _ensure(name: str, *args: Any) -> Any:
    """JAX's ``ensure_arraylike``: arrays and scalars only, returned as arrays."""
    check_arraylike(name, *args)
    out = [L.asarray(a) for a in args]
    return out[0] if len(out) == 1 else out


def _to_inexact(dt: T.DType) -> T.DType:
    """int64/uint64 -> float64, other ints and bool -> float32 (JAX's mapping)."""
    if T.is_inexact(dt):
        return dt
    return T.float64 if dt in (T.int64, T.uint64) else T.float32


def _promote_inexact(*args: Any) -> list[Any]:
    """JAX's ``promote_dtypes_inexact``: one common inexact (dtype, weak type)."""
    dtype, weak = T.result_type_and_weak(*args)
    return [to_weak_or_strong(a, _to_inexact(dtype), weak) for a in args]


def _promote(*args: Any) -> list[Any]:
    """JAX's ``promote_dtypes``."""
    if len(args) < 2:
        return [L.asarray(a) for a in args]
    return promote_dtypes(*args)


def _convert(x: Any, dtype: T.DType, weak: bool = False) -> Any:
    return to_weak_or_strong(x, dtype, weak)


def _concrete(x: Any, what: str) -> np.ndarray:
    """The value of ``x`` where it must be known at trace time."""
    if isinstance(x, Tracer):
        known = to_concrete_value(x)
        if known is None:
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: {what}")
        x = known
    if isinstance(x, Array):
        return np.asarray(x._value)
    return np.asarray(x)


def _concrete_or_error(x: Any, what: str) -> Any:
    """``x`` where its value must be known while tracing, as JAX's
    ``core.concrete_or_error(None, x)``: a tracer whose value is known is
    replaced by that value (an autodiff tracer by its primal), so what is
    computed from it is a constant of the transformation."""
    if not isinstance(x, Tracer):
        return x
    known = to_concrete_value(x)
    if known is None:
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {what}")
    return known


def _index(x: Any, what: str) -> int:
    if isinstance(x, Tracer):
        _concrete(x, what)
    return operator.index(x)


def _jit(name: str, fn: Fn, statics: tuple[str, ...] = ()) -> Fn:
    """``fn`` staged as a visible ``jit`` equation named ``name``, as JAX does."""
    fn.__name__ = fn.__qualname__ = name
    jitted: Fn = jit(fn, static_argnames=statics or None)
    return jitted


F = TypeVar("F", bound=Callable[..., Any])


_RECORDING = ad.INLINE_RECORDING_TRACES


def _inline_jit(fn: F) -> F:
    """``fn`` as JAX stages it, a ``jit(inline=JAX_EARLY)``: no equation of
    its own in a jaxpr, but under ``vjp`` outside staging one structured
    residual entry (``ad.inline_call``). Functions of one or two positional
    operands (the elementwise ones, on the eager hot path) get a wrapper of
    that signature, which skips packing the arguments."""
    arity = _positional_arity(fn)
    call: Callable[..., Any]
    # The plans of recent eager calls (interpreter.EagerPlan), newest first:
    # each one dispatch standing for ``fn`` at its operands' types, as JAX's
    # trace cache holds one jaxpr per operand types.
    plans: list[EagerPlan] = []
    if arity == 1:
        def call(x: Any, /) -> Any:
            for known in plans:
                out = known.apply1(x)
                if out is not MISS:
                    return out
            trace = current_trace()
            if not isinstance(trace, _RECORDING):
                try:
                    if type(trace) is EvalTrace:
                        out, made = run_recorded(fn, (x,))
                        remember_plan(plans, made)
                        return out
                    return ad.run_jnp_body(trace, fn, x)
                except FloatingPointError:
                    nan_checks.announce_inline_rerun()
                    raise
            moved = ad.inline_operands_on_device((x,))
            if moved is not None:
                (x,) = moved
            if type(trace) is ad.JVPTrace:
                x = _tangent_in_primal_memory(trace, x)
            with ad.inline_call(((x,), {})):
                return _committed_tangents(trace, (x,), fn(x))
    elif arity == 2:
        names = list(inspect.signature(fn).parameters)

        def call(x: Any, y: Any, /) -> Any:
            for known in plans:
                out = known.apply2(x, y)
                if out is not MISS:
                    return out
            trace = current_trace()
            if not isinstance(trace, _RECORDING):
                if is_committed(x) and is_committed(y):  # named as JAX's jit names them
                    committed_device((x, y), names, fn.__name__)
                try:
                    if type(trace) is EvalTrace:
                        out, made = run_recorded(fn, (x, y))
                        remember_plan(plans, made)
                        return out
                    return ad.run_jnp_body(trace, fn, x, y)
                except FloatingPointError:
                    nan_checks.announce_inline_rerun()
                    raise
            moved = ad.inline_operands_on_device((x, y))
            if moved is not None:
                x, y = moved
            if type(trace) is ad.JVPTrace:
                x, y = _tangent_in_primal_memory(trace, x), _tangent_in_primal_memory(trace, y)
            with ad.inline_call(((x, y), {})):
                return _committed_tangents(trace, (x, y), fn(x, y))
    else:
        def call(*args: Any, **kwargs: Any) -> Any:
            trace = current_trace()
            if not isinstance(trace, _RECORDING):
                try:
                    return ad.run_jnp_body(trace, fn, *args, **kwargs)
                except FloatingPointError:
                    nan_checks.announce_inline_rerun()
                    raise
            if type(trace) is ad.JVPTrace:
                args = tuple(_tangent_in_primal_memory(trace, a) for a in args)
            with ad.inline_call((args, kwargs)):
                return _committed_tangents(trace, args, fn(*args, **kwargs))
    return cast(F, functools.wraps(fn)(call))


def _tangent_in_primal_memory(trace: ad.JVPTrace, x: Any) -> Any:
    """``x`` as the body of a jnp function JAX stages as a jit receives it
    under ``trace``: JAX traces the body's JVP with each tangent typed as its
    primal's tangent type, so a tangent in another memory than its primal
    (a device tangent of a host primal) enters the body moved there."""
    if type(x) is not ad.JVPTracer or x._trace is not trace or type(x.tangent) is Zero:
        return x
    want = canonical_aval_of(x.primal).memory_space
    if canonical_aval_of(x.tangent).memory_space is want:
        return x
    with set_current_trace(trace.parent):
        (moved,) = device_put_p.bind(x.tangent, devices=(want,), srcs=(None,),
                                     copy_semantics=(ArrayCopySemantics.REUSE_INPUT,))
    return ad.JVPTracer(trace, x.primal, moved)


def _committed_tangents(trace: Any, operands: tuple[Any, ...], out: Any) -> Any:
    """``out`` as JAX's eager jit call of the function's JVP gives it: every
    result lives on the device of a committed operand (primal or tangent),
    committed there, tangents included."""
    if type(trace) is not ad.JVPTrace or type(trace.parent) is not EvalTrace:
        return out
    device = None
    for x in operands:
        for v in (x.primal, x.tangent) if type(x) is ad.JVPTracer else (x,):
            if type(v) is Array and v._committed and v._sharding is None:
                device = v._single_device()
                break
    if device is None:
        return out

    def commit(r: Any) -> Any:
        if type(r) is ad.JVPTracer and r._trace is trace and type(r.tangent) is Array \
                and not r.tangent._committed and r.tangent._sharding is None:
            return ad.JVPTracer(trace, r.primal, placed_on(r.tangent, device, True))
        return r
    return tree_util.tree_map(commit, out)


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """The number of parameters when all are positional-only without
    defaults, else None."""
    params = inspect.signature(fn).parameters.values()
    if all(p.kind is p.POSITIONAL_ONLY and p.default is p.empty for p in params):
        return len(params)
    return None


def _axis_tuple(axis: Any, nd: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(nd))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = tuple(canonicalize_axis(operator.index(a), nd) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return out


def _hashable_axis(axis: Any) -> Any:
    """``axis`` as JAX hands it to a reduction's jit: None, an int or a tuple."""
    return optional_axes(axis)
