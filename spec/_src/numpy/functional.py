"""NumPy's "Functional programming" routines as JAX builds them from
transformations: ``apply_along_axis`` and ``fromfunction`` nest one ``vmap``
per mapped axis (so the function sees a 1-d slice, or scalars), ``piecewise``
is a vectorized ``lax.switch`` on the index of the first true condition, and
``apply_over_axes`` calls the function once per axis, keeping dimensions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core.canonical import canonical_shape
from spec._src.lax import control_flow
from spec._src.lax.shaping import canonicalize_axis
from spec._src.numpy import creation, reductions
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.util import _ensure, _ndim, check_arraylike
from spec._src.numpy.vectorize import vectorize


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any,
                     **kwargs: Any) -> Any:
    """``func1d`` on every 1-d slice of ``arr`` along ``axis``: the axes after
    ``axis`` are vmapped with their results moved last, those before it
    vmapped at the front (JAX's nesting, so the jaxpr is JAX's)."""
    check_arraylike("apply_along_axis", arr)
    num_dims = _ndim(arr)
    axis = canonicalize_axis(axis, num_dims)

    def func(a: Any) -> Any:
        return func1d(a, *args, **kwargs)

    mapped = func
    for i in range(1, num_dims - axis):
        mapped = vmap(mapped, in_axes=i, out_axes=-1)
    for _ in range(axis):
        mapped = vmap(mapped, in_axes=0, out_axes=0)
    return mapped(arr)


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: Sequence[int]) -> Any:
    """``func(a, axis)`` for each axis in turn; a result one rank short gets
    the axis back (size 1), as a ``keepdims`` reduction."""
    arr = _ensure("apply_over_axes", a)
    for axis in axes:
        b = func(arr, axis)
        if _ndim(b) == _ndim(arr):
            arr = b
        elif _ndim(b) == _ndim(arr) - 1:
            arr = jnp_shape.expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return arr


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                 **kwargs: Any) -> Any:
    """``function`` on the index grid of ``shape``: one vmap per axis over
    ``arange`` vectors, so ``function`` sees scalars (NumPy passes whole grids)."""
    dims = canonical_shape(shape, "shape argument of jnp.fromfunction()")
    mapped = function
    for i in range(len(dims)):
        in_axes = tuple(0 if i == j else None for j in reversed(range(len(dims))))
        mapped = vmap(mapped, in_axes=in_axes)
    return mapped(*(creation.arange(s, dtype=dtype) for s in dims), **kwargs)


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """``funclist[i]`` where ``condlist[i]`` is the first true condition; an
    extra last entry of ``funclist`` is the default (zero otherwise); entries
    that are not callable are constants. Conditions are a boolean array (one
    row per condition) or a sequence of them."""
    x_arr = _ensure("piecewise", x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funcs_in_order = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funcs_in_order = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    consts = {i: c for i, c in enumerate(funcs_in_order) if not callable(c)}
    funcs = frozenset((i, f) for i, f in enumerate(funcs_in_order) if callable(f))
    return _piecewise(x_arr, creation.asarray(condlist, dtype=bool), consts, funcs, *args, **kw)


def _piecewise_fn(x: Any, condlist: Any, consts: dict[int, Any],
                  funcs: frozenset[tuple[int, Callable[..., Any]]], *args: Any,
                  **kw: Any) -> Any:
    funcdict = dict(funcs)
    entries = [consts.get(i, funcdict.get(i)) for i in range(len(condlist) + 1)]
    # A leading row of zeros makes index 0 (the default) the argmax of the
    # running count where no condition holds.
    counts = reductions.cumsum(jnp_shape.concatenate(
        [creation.zeros_like(condlist[:1]), condlist], 0), 0)
    indices = reductions.argmax(counts, 0)
    dtype = x.dtype

    def call(f: Callable[..., Any]) -> Callable[[Any], Any]:
        return lambda v: f(v, *args, **kw).astype(dtype)

    def const(c: Any) -> Callable[[Any], Any]:
        return lambda v: creation.array(c, dtype=dtype)

    branches = [call(f) if callable(f) else const(f) for f in entries]
    return vectorize(control_flow.switch, excluded=(1,))(indices, branches, x)


_piecewise_fn.__name__ = _piecewise_fn.__qualname__ = "_piecewise"
_piecewise = jit(_piecewise_fn, static_argnames=("funcs",))


__all__ = ["apply_along_axis", "apply_over_axes", "fromfunction", "piecewise"]
