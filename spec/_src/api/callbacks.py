"""The callback API: ``jax.debug.print``, ``jax.debug.callback``,
``jax.pure_callback``, ``jax.experimental.io_callback`` and
``jax.effects_barrier`` (SPEC.md, "Effects and callbacks")."""

from __future__ import annotations

import functools
import logging
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import source_info as si
from spec._src.core import tree_util
from spec._src.core.dtypes import canonicalize_dtype
from spec._src.core.effects import debug_effect, ordered_debug_effect
from spec._src.core.interpreter import Tracer, canonical_aval_of, canonical_value
from spec._src.core.types import ArrayType
from spec._src.lax.callbacks import (
    FORMAT_CHECKER,
    VMAP_METHODS,
    FlatCallback,
    debug_callback_p,
    debug_print_p,
    io_callback_p,
    merge_callback_args,
    pure_callback_p,
)


def _is_array_leaf(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    try:
        canonical_value(x)
    except (TypeError, ValueError, AssertionError):
        return False
    return not isinstance(x, str)


def _split_callback_args(args: tuple[Any, ...], kwargs: dict[str, Any]
                         ) -> tuple[Any, list[Any], tuple[tuple[int, Any], ...]]:
    """The call's leaves split into arrays (operands of the equation) and
    everything else (static params, by leaf position)."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    dyn: list[Any] = []
    static: list[tuple[int, Any]] = []
    for i, leaf in enumerate(leaves):
        if _is_array_leaf(leaf):
            dyn.append(leaf)
        else:
            static.append((i, leaf))
    return in_tree, dyn, tuple(static)


def _weak_types(leaves: Sequence[Any]) -> list[bool]:
    return [canonical_aval_of(x).weak_type for x in leaves]


class _MergedCallback:
    """The user's debug callback, given its static leaves back."""

    def __init__(self, callback: Callable[..., Any], in_tree: Any,
                 static_args: tuple[tuple[int, Any], ...], weak_types: Sequence[bool]) -> None:
        self.callback = callback
        self.in_tree = in_tree
        self.static_args = static_args
        self.weak_types = tuple(weak_types)

    def __call__(self, *dyn: Any) -> None:
        args, kwargs = merge_callback_args(self.in_tree, dyn, self.static_args)
        self.callback(*args, **kwargs)

    def __repr__(self) -> str:
        return (f"<function debug_callback.<locals>._debug_callback.<locals>._flat_callback "
                f"at {hex(id(self))}>")


# ------------------------------------------------------------------ debug


def debug_callback(callback: Callable[..., Any] | None = None, *args: Any,
                   ordered: bool = False, partitioned: bool = False, **kwargs: Any) -> Any:
    """Calls ``callback(*args, **kwargs)`` with the values of the arrays, also
    under transformations; returns None. Called with options only, returns
    the function taking the callback and its arguments."""
    def _debug_callback(fn: Callable[..., Any], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError("first argument to jax.debug.callback must be callable, but got "
                            f"an object of type {type(fn)}")
        in_tree, dyn, static = _split_callback_args(c_args, c_kwargs)
        debug_callback_p.bind(*dyn, callback=_MergedCallback(fn, in_tree, static, _weak_types(dyn)),
                              effect=ordered_debug_effect if ordered else debug_effect,
                              partitioned=partitioned)

    if callback is not None:
        _debug_callback(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_callback received unexpected arguments in the two-call form:"
                        f" {args=} {kwargs=}")
    return _debug_callback


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False,
                partitioned: bool = False, skip_format_check: bool = False,
                _use_logging: bool = False, **kwargs: Any) -> Any:
    """Prints ``fmt.format(*args, **kwargs)`` when the program runs (also
    staged, batched or differentiated), NumPy's print options as at the call."""
    def _debug_print(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
        if not skip_format_check:
            FORMAT_CHECKER.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        in_tree, dyn, static = _split_callback_args(c_args, c_kwargs)
        record = None
        if _use_logging:
            file_name, line_no = si.user_location(si.current())
            record = _DEBUG_LOGGER.makeRecord(_DEBUG_LOGGER.name, logging.INFO, file_name,
                                              line_no, "", (), None)
        debug_print_p.bind(*dyn, fmt=fmt, has_placeholders=has_placeholders, in_tree=in_tree,
                           logging_record=record,
                           np_printoptions=tuple(np.get_printoptions().items()),
                           ordered=ordered, partitioned=partitioned, static_args=static)

    if fmt is not None:
        _debug_print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_print received unexpected arguments in the two-call form:"
                        f" {args=} {kwargs=}")
    return _debug_print


# The logger ``jax.debug.log`` writes to: JAX's, so that handlers and levels
# set on it by name apply to either.
_DEBUG_LOGGER = logging.getLogger("jax._src.debugging")

debug_log = functools.partial(debug_print, _use_logging=True)
"""``jax.debug.log``: ``debug_print`` whose line goes, when the program runs,
to the ``jax._src.debugging`` logger at level INFO as a record naming the
user frame that called it."""


# -------------------------------------------------------------- callbacks


def _result_avals(result_shape_dtypes: Any) -> tuple[list[ArrayType], Any]:
    leaves, out_tree = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for x in leaves:
        dt = np.dtype(x.dtype)
        if canonicalize_dtype(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        avals.append(ArrayType(tuple(x.shape), dt))
    return avals, out_tree


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None,
                  **kwargs: Any) -> Any:
    """Calls a pure Python function, whose results have the given shapes
    and dtypes; unused results let the call be removed."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {VMAP_METHODS}, "
                         f"but got: {vmap_method}")
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    avals, out_tree = _result_avals(result_shape_dtypes)
    outs = pure_callback_p.bind(*flat, callback=FlatCallback(callback, in_tree, _weak_types(flat)),
                                result_avals=tuple(avals), sharding=sharding,
                                vmap_method=vmap_method)
    return tree_util.tree_unflatten(out_tree, list(outs))


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Calls a Python function with side effects; ``ordered`` calls run in
    program order."""
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    avals, out_tree = _result_avals(result_shape_dtypes)
    outs = io_callback_p.bind(*flat, callback=FlatCallback(callback, in_tree, _weak_types(flat)),
                              ordered=ordered, result_avals=tuple(avals), sharding=sharding)
    return tree_util.tree_unflatten(out_tree, list(outs))


def effects_barrier() -> None:
    """Waits for pending effects. spec runs every effect when its equation
    is evaluated, so none is ever pending."""


__all__ = ["debug_callback", "debug_log", "debug_print", "effects_barrier", "io_callback",
           "pure_callback"]
