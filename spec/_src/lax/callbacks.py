"""Callbacks into Python: ``debug_print``, ``debug_callback``,
``pure_callback``, ``io_callback`` (SPEC.md, "Effects and callbacks").

Each is an opaque equation holding a Python function. Its impl runs the
function on the operands as Arrays (on the host, as JAX does). The debug
primitives and ``io_callback`` have an effect (``Debug``/``OrderedDebug``,
``IO``/``OrderedIO``), so dead-code elimination keeps them; a
``pure_callback`` has none and is dropped when nothing reads its results.

Transformations, as in JAX: ``vmap`` runs a debug callback once per batch
element (in order), an unordered ``io_callback`` as a loop over the batch and
a ``pure_callback`` by its ``vmap_method``; autodiff sees the debug
primitives in the forward pass only (their JVP prints the primals, their
transpose does nothing) and refuses the other two. Inside ``shard_map`` a
callback runs once per device on the device's block; outside it, once on
the whole operands.
"""

from __future__ import annotations

import copy
import logging
import re
import string
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.array import Array, from_numpy
from spec._src.core.effects import (
    Effect,
    debug_effect,
    in_compiled_program,
    io_effect,
    ordered_debug_effect,
    ordered_io_effect,
)
from spec._src.core.errors import JaxRuntimeError
from spec._src.core.interpreter import (
    VMA_FROM_TYPING,
    Primitive,
    from_primitive,
    pp_eqn_default,
)
from spec._src.core.registry import declare, primitive
from spec._src.core.effects import DebugEffect, IOEffect, OrderedDebugEffect, OrderedIOEffect
from spec._src.lowering import custom_call as LCC
from spec._src.lowering.effects import register_lowerable
from spec._src.core.types import ArrayType, canonicalize_dtype
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.batching import AxisData, BatchDim, batched_aval, moveaxis
from spec._src.lax.loops import scan
from spec._src.lax.shaping import broadcast
from spec._src.lax.slicing import index_in_dim, stack

logger = logging.getLogger("spec.callbacks")

VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None]


# ------------------------------------------------------------ the functions


class FlatCallback:
    """The user's function called on flat operands: they are unflattened by
    ``in_tree`` into ``(args, kwargs)`` first (JAX's ``_FlatCallback``)."""

    def __init__(self, callback_func: Callable[..., Any], in_tree: Any,
                 weak_types: Sequence[bool] = ()) -> None:
        self.callback_func = callback_func
        self.in_tree = in_tree
        # (the operands' weak types: the callback sees Arrays typed as at the call)
        self.weak_types = tuple(weak_types)

    def __call__(self, *flat_args: Any) -> Any:
        args, kwargs = tree_util.tree_unflatten(self.in_tree, list(flat_args))
        return self.callback_func(*args, **kwargs)

    def __repr__(self) -> str:
        return (f"_FlatCallback(callback_func={self.callback_func!r}, "
                f"in_tree={self.in_tree!r})")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, FlatCallback) and self.callback_func is other.callback_func
                and self.in_tree == other.in_tree)

    def __hash__(self) -> int:
        return hash((id(self.callback_func), self.in_tree))


def _runtime_error(exc: BaseException) -> JaxRuntimeError:
    """XLA's report of a failed host callback: the Python traceback (frames
    without their source lines) after ``INTERNAL: CpuCallback error``."""
    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f'  File "{f.filename}", line {f.lineno}, in {f.name}\n' for f in frames]
    last = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    return JaxRuntimeError("INTERNAL: CpuCallback error calling callback: Traceback (most "
                           "recent call last):\n" + "".join(lines) + last)


def _host_args(args: Sequence[np.ndarray], weak_types: Sequence[bool]) -> list[Array]:
    weak = list(weak_types) if len(weak_types) == len(args) else [False] * len(args)
    return [from_numpy(np.asarray(a), weak_type=w) for a, w in zip(args, weak)]


def _call(what: str, fn: Callable[..., Any], args: Sequence[np.ndarray],
          always_wrapped: bool, check: Callable[[Any], Any] | None = None) -> Any:
    """Run a callback; a failure is logged (as JAX logs it) and raised as
    the runtime reports it."""
    try:
        out = fn(*_host_args(args, getattr(fn, "weak_types", ())))
    except BaseException as e:
        logger.exception("%s failed", what)
        if always_wrapped or in_compiled_program():
            raise _runtime_error(e) from None
        raise
    if check is None:
        return out
    try:
        return check(out)
    except RuntimeError as e:  # (the runtime checks the results; it logs nothing)
        raise _runtime_error(e) from None


def _checked_results(result_avals: Sequence[ArrayType]) -> Callable[[Any], list[np.ndarray]]:
    """The results as NumPy arrays of the declared shapes and dtypes (XLA's
    runtime checks them, with these messages)."""
    def check(out: Any) -> list[np.ndarray]:
        leaves = tree_util.tree_leaves(out)
        if len(leaves) != len(result_avals):
            raise RuntimeError("Mismatched number of outputs from callback. Expected: "
                               f"{len(result_avals)}, Actual: {len(leaves)}")
        # (Python scalars and 64-bit arrays as the current x64 mode has them)
        leaves = [_canonical(np.asarray(x)) for x in leaves]
        for i, (x, a) in enumerate(zip(leaves, result_avals)):
            if x.shape != tuple(a.shape):
                raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: "
                                   f"{tuple(a.shape)}, Actual: {x.shape}")
            if x.dtype != a.dtype:
                raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: "
                                   f"{np.dtype(a.dtype)}, Actual: {x.dtype}")
        return leaves
    return check


def _canonical(x: np.ndarray) -> np.ndarray:
    dtype = canonicalize_dtype(x.dtype)
    return x if dtype == x.dtype else x.astype(dtype)


# -------------------------------------------------------------- printing


class _Masked:
    """A param shown with object addresses masked, as JAX prints them."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                      repr(self.value))


def _pp_callback(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    if "callback" in params:
        params["callback"] = _Masked(params["callback"])
    if "result_avals" in params:
        params["result_avals"] = _ShapedTuple(params["result_avals"])
    return pp_eqn_default(eqn, ctx, params)


class _ShapedTuple:
    """Result types as JAX prints them: ``(ShapedArray(float32[]),)``."""

    def __init__(self, avals: Sequence[ArrayType]) -> None:
        self.avals = avals

    def __str__(self) -> str:
        inner = ", ".join(f"ShapedArray({a.str_short()})" for a in self.avals)
        return f"({inner},)" if len(self.avals) == 1 else f"({inner})"


# ------------------------------------------------------------ rules kit


def _no_results(*avals: ArrayType, **_: Any) -> list[ArrayType]:
    return []


def _declared_results(*avals: ArrayType, result_avals: tuple[ArrayType, ...], **_: Any
                      ) -> list[ArrayType]:
    return list(result_avals)


def _no_sharding(*avals: ArrayType, **_: Any) -> list[Any]:
    return []


def _replicated_results(*avals: ArrayType, result_avals: tuple[ArrayType, ...], **_: Any
                        ) -> list[Any]:
    return [None for _ in result_avals]


def _unsplit(args: list[S.Dist], out_avals: list[ArrayType], **_: Any) -> bool:
    return all(S.is_plain(a.aval) for a in args) and all(S.is_plain(o) for o in out_avals)


def _per_device_program(prim: Primitive) -> PD.Program:
    """Inside ``shard_map`` every device runs the callback on its block (in
    device order); split operands are gathered and the callback runs once."""
    def each_device(geo: S.Geometry, args: list[S.Dist], out_avals: list[ArrayType],
                    **params: Any) -> list[S.Dist]:
        return S.run_local(prim, geo, args, out_avals, params, per_device=lambda k: params)
    return PD.guarded(prim, _unsplit, each_device)


def _element(args: Sequence[Any], dims: Sequence[BatchDim], i: int) -> list[Any]:
    return [a if d is None else index_in_dim(a, i, d, keepdims=False)
            for a, d in zip(args, dims)]


def _unrolled(name: str) -> Callable[..., tuple[list[Any], list[BatchDim]]]:
    """vmap of a debug callback: one call per batch element, in order."""
    def batch(axis: AxisData, args: list[Any], dims: list[BatchDim], **params: Any
              ) -> tuple[list[Any], list[BatchDim]]:
        prim = primitive(name)
        outs = [prim.bind(*_element(args, dims, i), **params) for i in range(axis.size)]
        stacked = [stack(list(col)) for col in zip(*outs)]
        return stacked, [0] * len(stacked)
    return batch


def _looped(prim: Primitive, args: list[Any], dims: list[BatchDim], unroll: bool,
            params: dict[str, Any]) -> list[Any]:
    """The callback in a loop (a scan) over the batch axis."""
    moved = [a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    is_batched = [d is not None for d in dims]
    unbatched = [a for a, b in zip(moved, is_batched) if not b]

    def body(carry: tuple[()], xs: list[Any]) -> tuple[tuple[()], list[Any]]:
        it_u, it_b = iter(unbatched), iter(xs)
        merged = [next(it_b) if b else next(it_u) for b in is_batched]
        return carry, prim.bind(*merged, **params)

    _, outs = scan(body, (), [a for a, b in zip(moved, is_batched) if b], unroll=unroll)
    return list(outs)


def _debug_jvp(name: str) -> Callable[..., tuple[list[Any], list[Any]]]:
    """The forward pass prints the primals; tangents are not printed."""
    def jvp(primals: list[Any], tangents: list[Any], **params: Any
            ) -> tuple[list[Any], list[Any]]:
        primitive(name).bind(*primals, **params)
        return [], []
    return jvp


def _debug_transpose(cts: list[Any], *args: Any, **_: Any) -> list[Any]:
    # No results, so no cotangents flow through; the operands get none.
    return [None for _ in args]


def _effect_of(effect: Effect) -> Callable[[list[Any], dict[str, Any]], frozenset[Any]]:
    def rule(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
        return frozenset({params.get("effect", effect)})
    return rule


# ----------------------------------------------------------- debug_callback


def _debug_callback_impl(*args: np.ndarray, callback: Callable[..., Any], effect: Effect,
                         partitioned: bool) -> list[np.ndarray]:
    _call("jax.debug.callback", callback, args, always_wrapped=False)
    return []


for _effect in (DebugEffect, IOEffect, OrderedDebugEffect, OrderedIOEffect):
    register_lowerable(_effect)

debug_callback_p: Primitive = declare(
    "debug_callback", lowering=LCC.host_callback(True, with_results=False),
    typing=_no_results, impl=_debug_callback_impl, multiple_results=True,
    sharding=_no_sharding, jvp=_debug_jvp("debug_callback"), transpose=_debug_transpose,
    batch=_unrolled("debug_callback"), effects_rule=_effect_of(debug_effect),
    per_device=from_primitive(_per_device_program), vma_rule=VMA_FROM_TYPING,
    pp_rule=_pp_callback,
    doc="jax.debug.callback: calls a Python function on the operands (SPEC.md, callbacks)")


# -------------------------------------------------------------- debug_print


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting them."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ""

    def check_unused_args(self, used_args: Any, args: Sequence[Any], kwargs: Any) -> None:
        unused = [a for i, a in enumerate(args) if i not in used_args]
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
        if unused_kw:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead "
                "should pass in a regular string.")


FORMAT_CHECKER = _FormatChecker()


def merge_callback_args(in_tree: Any, dyn_args: Sequence[Any],
                        static_args: Sequence[tuple[int, Any]]) -> Any:
    """The ``(args, kwargs)`` of a call from its array leaves and its static
    (non-array) leaves, by leaf position."""
    statics = dict(static_args)
    dyn = iter(dyn_args)
    leaves = [statics[i] if i in statics else next(dyn)
              for i in range(len(statics) + len(dyn_args))]
    return tree_util.tree_unflatten(in_tree, leaves)


def _print_message(fmt: str, has_placeholders: bool, np_printoptions: Sequence[Any],
                   args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    if not has_placeholders:
        return " ".join((fmt, *(str(a) for a in args)))
    with np.printoptions(**dict(np_printoptions)):
        return fmt.format(*args, **kwargs)


def _debug_print_impl(*args: np.ndarray, fmt: str, ordered: bool, partitioned: bool,
                      in_tree: Any, static_args: tuple[tuple[int, Any], ...],
                      np_printoptions: tuple[tuple[str, Any], ...], has_placeholders: bool,
                      logging_record: Any) -> list[np.ndarray]:
    def emit(*arrays: Array) -> None:
        c_args, c_kwargs = merge_callback_args(in_tree, arrays, static_args)
        msg = _print_message(fmt, has_placeholders, np_printoptions, c_args, c_kwargs)
        if logging_record is not None:
            # (a copy per line: the parameter is shared by every run of the program)
            record = copy.copy(logging_record)
            record.msg = msg
            logging.getLogger(record.name).handle(record)
        else:
            sys.stdout.write(msg + "\n")
    _call("jax.debug.callback", emit, args, always_wrapped=False)
    return []


def _debug_print_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return frozenset({ordered_debug_effect if params["ordered"] else debug_effect})


def _pp_debug_print(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    params["np_printoptions"] = _Masked(params["np_printoptions"])
    return pp_eqn_default(eqn, ctx, params)


debug_print_p: Primitive = declare(
    "debug_print", lowering=LCC.host_callback(True, with_results=False),
    typing=_no_results, impl=_debug_print_impl, multiple_results=True,
    sharding=_no_sharding, jvp=_debug_jvp("debug_print"), transpose=_debug_transpose,
    batch=_unrolled("debug_print"), effects_rule=_debug_print_effects,
    per_device=from_primitive(_per_device_program), vma_rule=VMA_FROM_TYPING,
    pp_rule=_pp_debug_print,
    doc="jax.debug.print: formats the operands and writes a line (SPEC.md, callbacks)")


# ------------------------------------------------------------ pure_callback


def _pure_callback_impl(*args: np.ndarray, callback: Callable[..., Any],
                        result_avals: tuple[ArrayType, ...], sharding: Any,
                        vmap_method: str | None) -> list[np.ndarray]:
    out: list[np.ndarray] = _call("jax.pure_callback", callback, args, always_wrapped=True,
                                  check=_checked_results(result_avals))
    return out


def _pure_callback_jvp(primals: list[Any], tangents: list[Any], **_: Any
                       ) -> tuple[list[Any], list[Any]]:
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_callback_transpose(cts: list[Any], *args: Any, **_: Any) -> list[Any]:
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` "
                     "to use callbacks while taking gradients.")


def _pure_callback_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                         vmap_method: str | None, result_avals: tuple[ArrayType, ...],
                         **params: Any) -> tuple[list[Any], list[BatchDim]]:
    """JAX's ``vmap_method``s: ``sequential`` loops over the batch;
    ``expand_dims`` gives unbatched operands a leading axis of size 1 and
    ``broadcast_all`` one of the batch size, then calls once expecting a
    leading batch axis on the results; ``legacy_vectorized`` calls once on
    the operands as they are (batched ones with the batch axis first)."""
    size = axis.size
    if vmap_method in ("sequential", "sequential_unrolled"):
        outs = _looped(pure_callback_p, args, dims, vmap_method == "sequential_unrolled",
                       dict(params, vmap_method=vmap_method, result_avals=result_avals))
        return outs, [0] * len(outs)
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got {vmap_method=}.")
    moved = [a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    if vmap_method != "legacy_vectorized":
        lead = size if vmap_method == "broadcast_all" else 1
        moved = [broadcast(a, (lead,)) if d is None else a for a, d in zip(moved, dims)]
    batched = tuple(batched_aval(r, 0, size, axis.explicit_mesh_axis) for r in result_avals)
    outs = pure_callback_p.bind(*moved, vmap_method=vmap_method, result_avals=batched,
                                **params)
    return list(outs), [0] * len(outs)


pure_callback_p: Primitive = declare(
    "pure_callback", lowering=LCC.host_callback(False),
    typing=_declared_results, impl=_pure_callback_impl,
    multiple_results=True, sharding=_replicated_results, jvp=_pure_callback_jvp,
    transpose=_pure_callback_transpose, batch=_pure_callback_batch,
    per_device=from_primitive(_per_device_program), vma_rule=VMA_FROM_TYPING,
    pp_rule=_pp_callback,
    doc="jax.pure_callback: a pure function computed in Python (SPEC.md, callbacks)")


# -------------------------------------------------------------- io_callback


def _io_callback_impl(*args: np.ndarray, callback: Callable[..., Any],
                      result_avals: tuple[ArrayType, ...], sharding: Any, ordered: bool
                      ) -> list[np.ndarray]:
    out: list[np.ndarray] = _call("jax.io_callback", callback, args, always_wrapped=True,
                                  check=_checked_results(result_avals))
    return out


def _io_callback_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return frozenset({ordered_io_effect if params["ordered"] else io_effect})


def _io_callback_jvp(primals: list[Any], tangents: list[Any], **_: Any
                     ) -> tuple[list[Any], list[Any]]:
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts: list[Any], *args: Any, **_: Any) -> list[Any]:
    raise ValueError("IO callbacks do not support transpose.")


def _io_callback_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                       ordered: bool, **params: Any) -> tuple[list[Any], list[BatchDim]]:
    """An unordered io_callback runs once per batch element, in a loop; an
    ordered one cannot be batched (its calls would need an order)."""
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    outs = _looped(io_callback_p, args, dims, False, dict(params, ordered=False))
    return outs, [0] * len(outs)


io_callback_p: Primitive = declare(
    "io_callback", lowering=LCC.host_callback(True),
    typing=_declared_results, impl=_io_callback_impl, multiple_results=True,
    sharding=_replicated_results, jvp=_io_callback_jvp, transpose=_io_callback_transpose,
    batch=_io_callback_batch, effects_rule=_io_callback_effects,
    per_device=from_primitive(_per_device_program), vma_rule=VMA_FROM_TYPING,
    pp_rule=_pp_callback,
    doc="io_callback: a Python function with side effects (SPEC.md, callbacks)")


__all__ = ["FORMAT_CHECKER", "FlatCallback", "VMAP_METHODS", "debug_callback_p",
           "debug_print_p", "io_callback_p", "merge_callback_args", "pure_callback_p",
           ]
