"""``jax_debug_nans`` / ``jax_debug_infs``: checking computed values.

With a check on, every eagerly evaluated primitive has its floating results
inspected; a NaN (or an infinity) raises ``FloatingPointError("invalid value
(nan) encountered in <primitive>")``. A jit call is one primitive whose
result names no operation, so a bad result of a jit call prints a notice and
runs the function again de-optimized (as if ``jit`` were removed), operation
by operation, where the failing operation raises the error that names it.
When the de-optimized run computes no bad value, the error says so.

Values computed while tracing (under ``jit``, ``make_jaxpr``) are not
checked: they are checked when the staged program runs.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

from spec._src.core.config import config

__all__ = ["InternalFloatingPointError", "active", "announce_inline_rerun", "check_results",
           "rerun_deoptimized", "python_rerun"]


class InternalFloatingPointError(Exception):
    """A bad value in the result of a call (a jit) that the caller re-runs
    de-optimized; it never reaches the user."""

    def __init__(self, name: str, ty: str) -> None:
        super().__init__(name, ty)
        self.name = name
        self.ty = ty


class _State(threading.local):
    def __init__(self) -> None:
        # Set by a jit wrapper for the one call it binds: it re-runs the
        # Python function itself when the call's result is bad.
        self.python_rerun = False


_state = _State()


_NOTICE = ("Invalid nan value encountered in the output of a jax.jit function. "
           "Calling the de-optimized version.")


def active() -> bool:
    values = config._values
    return bool(values["jax_debug_nans"] or values["jax_debug_infs"])


def _bad_kind(values: Sequence[Any]) -> str | None:
    """"nan" or "inf" for the first check a floating value fails, else None."""
    nans, infs = config._values["jax_debug_nans"], config._values["jax_debug_infs"]
    for v in values:
        a = np.asarray(v)
        if a.dtype.kind not in "fc" and a.dtype.name not in ("bfloat16",) \
                and not a.dtype.name.startswith("float8"):
            continue
        if nans and np.any(np.isnan(a)):
            return "nan"
        if infs and np.any(np.isinf(a)):
            return "inf"
    return None


def invalid_value_error(ty: str, name: str) -> FloatingPointError:
    return FloatingPointError(f"invalid value ({ty}) encountered in {name}")


@contextlib.contextmanager
def python_rerun() -> Iterator[None]:
    """Within the block, a bad result of the next call raises
    ``InternalFloatingPointError`` for the caller to re-run."""
    previous = _state.python_rerun
    _state.python_rerun = True
    try:
        yield
    finally:
        _state.python_rerun = previous


def check_results(prim_name: str, params: dict[str, Any], values: Sequence[Any],
                  rerun_jaxpr: Callable[[], object]) -> None:
    """Raise for a bad value among one eager equation's results. A jit
    equation is re-run de-optimized: by its Python caller when one asked to
    (``python_rerun``), else equation by equation (``rerun_jaxpr``)."""
    ty = _bad_kind(values)
    if ty is None:
        return
    if prim_name != "jit":
        raise invalid_value_error(ty, prim_name)
    name = f"jit({params.get('name', '')})"
    if _state.python_rerun:
        _state.python_rerun = False
        raise InternalFloatingPointError(name, ty)
    rerun_deoptimized(InternalFloatingPointError(name, ty), rerun_jaxpr)


def rerun_deoptimized(error: InternalFloatingPointError, run: Callable[[], object]) -> NoReturn:
    """Print JAX's notice and ``run()`` the de-optimized program: its
    FloatingPointError (naming the operation) propagates; if it raises none,
    the bad value came from optimization or from a NaN/inf literal."""
    print(_NOTICE)
    try:
        with _no_python_rerun():
            run()
    except (FloatingPointError, ZeroDivisionError) as e:
        raise e from None
    raise FloatingPointError(
        f"{error.args}. Because jax_config.debug_nans.value and/or config.jax_debug_infs "
        "is set, the de-optimized function (i.e., the function as if the `jit` decorator "
        "were removed) was called in an attempt to get a more precise error message. "
        "However, the de-optimized function did not produce invalid values during its "
        "execution. This behavior can result from `jit` optimizations causing the invalid "
        "value to be produced. It may also arise from having nan/inf literals as inputs or "
        "outputs, like `jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may be possible "
        "to avoid the invalid value by removing the `jit` decorator, at the cost of losing "
        "optimizations. \n\nIf you see this error, consider opening a bug report at "
        "https://github.com/jax-ml/jax.") from None


def announce_inline_rerun() -> None:
    """An eager call of an inlined jit (a ``jnp`` function) in which an
    operation failed a check. JAX compiles such a call, finds the bad result
    and re-runs it de-optimized, calling the jits inside eagerly in turn: each
    call that encloses the failing operation prints the notice once."""
    print(_NOTICE)


@contextlib.contextmanager
def _no_python_rerun() -> Iterator[None]:
    previous = _state.python_rerun
    _state.python_rerun = False
    try:
        yield
    finally:
        _state.python_rerun = previous
