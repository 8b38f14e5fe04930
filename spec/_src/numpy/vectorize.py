"""``jnp.vectorize``: a function of core-shaped arrays broadcast over leading
axes, as JAX builds it: one ``vmap`` per broadcast axis some operand has
(operands keep their size-1 axes out of the vmap), size-1 axes put back on
the result, and the gufunc signature's core sizes checked on the way in and
out."""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from spec._src.api.vmap import vmap
from spec._src.core.config import config
from spec._src.numpy import creation
from spec._src.numpy import shape as jnp_shape

CoreDims = tuple[str, ...]

_NAME = r"\w+"
_ARGUMENT = rf"\((?:{_NAME}(?:,{_NAME})*)?\)"
_ARGUMENTS = rf"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = rf"^{_ARGUMENTS}->{_ARGUMENTS}$"


def parse_signature(signature: str) -> tuple[list[CoreDims], list[CoreDims]]:
    """The core dimension names of each input and each output of a gufunc signature."""
    if not re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = ([tuple(re.findall(_NAME, arg)) for arg in re.findall(_ARGUMENT, side)]
                 for side in signature.split("->"))
    return ins, outs


def _record_core_sizes(sizes: dict[str, int], shape: tuple[int, ...], core: CoreDims,
                       context: str, *, is_input: bool) -> None:
    if is_input and len(shape) < len(core):
        raise ValueError(f"input with shape {shape!r} does not have enough dimensions for "
                         f"all core dimensions {core!r} {context}")
    if not is_input and len(shape) != len(core):
        raise ValueError(f"output shape {shape!r} does not match core dimensions {core!r} "
                         f"{context}")
    for name, size in zip(core, shape[len(shape) - len(core):]):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: {size!r} vs "
                             f"{sizes[name]!r} {context}")


def _checking_outputs(fun: Callable[..., Any], sizes: dict[str, int],
                      out_core: list[CoreDims], context: str) -> Callable[..., Any]:
    def checked(*args: Any) -> Any:
        out = fun(*args)
        outs = out if isinstance(out, tuple) else (out,)
        if len(out_core) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when multiple outputs are expected, "
                            f"got: {out!r}\n{context}")
        if len(outs) != len(out_core):
            raise TypeError(f"wrong number of output arguments: expected {len(out_core)!r}, "
                            f"got {len(outs)!r} {context}")
        seen = dict(sizes)
        for o, core in zip(outs, out_core):
            _record_core_sizes(seen, tuple(np.shape(o)), core, context, is_input=False)
        return out
    return checked


def _bind_excluded(fun: Callable[..., Any], excluded: Collection[int | str],
                   args: Sequence[Any], kwargs: dict[str, Any]
                   ) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
    """``fun`` with the excluded positional and keyword arguments bound, and the rest."""
    if not excluded:
        return fun, list(args), kwargs
    fixed = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
             if i < len(args)]
    fixed_kwargs = {k: v for k, v in kwargs.items() if k in excluded}

    def bound(*dynamic: Any, **more: Any) -> Any:
        full = list(dynamic)
        for i, value in fixed:
            full.insert(i, value)
        return fun(*full, **more, **fixed_kwargs)

    return (bound, [a for i, a in enumerate(args) if i not in excluded],
            {k: v for k, v in kwargs.items() if k not in excluded})


def _check_rank_promotion(arrays: Sequence[Any], in_core: list[CoreDims],
                          signature: str | None) -> None:
    """Under ``jax_numpy_rank_promotion`` 'warn' or 'raise', operands (rank 0 aside)
    whose loop dimensions have different ranks are reported: broadcasting them
    would add leading axes implicitly."""
    mode = config.jax_numpy_rank_promotion
    if mode == "allow":
        return
    loop_ranks = {x.ndim - len(core) for x, core in zip(arrays, in_core) if x.ndim != 0}
    if len(loop_ranks) < 2:
        return
    msg = (f"operands with shapes {[tuple(x.shape) for x in arrays]} require rank promotion "
           f"for jnp.vectorize function with signature {signature}. Set the "
           "jax_numpy_rank_promotion config option to 'allow' to disable this message; "
           "for more information, see "
           "https://docs.jax.dev/en/latest/101/rank_promotion_warning.html.")
    if mode == "raise":
        raise ValueError(msg)
    warnings.warn(msg, stacklevel=3)


def broadcast_by_vmap(fun: Callable[..., Any], args: list[Any], in_core: list[CoreDims],
                       batch: tuple[int, ...]) -> Any:
    reversed_filled, squeezed = [], []
    for x, core in zip(args, in_core):
        lead = tuple(x.shape[:x.ndim - len(core)])
        reversed_filled.append(((1,) * (len(batch) - len(lead)) + lead)[::-1])
        squeezed.append(jnp_shape.squeeze(x, axis=tuple(i for i, n in enumerate(lead)
                                                         if n == 1)))
    expanded = []
    for negdim, sizes in enumerate(zip(*reversed_filled)):
        in_axes = tuple(None if n == 1 else 0 for n in sizes)
        if all(ax is None for ax in in_axes):
            expanded.append(len(batch) - 1 - negdim)
        else:
            fun = vmap(fun, in_axes)
    result = fun(*squeezed)
    if not expanded:
        return result
    if isinstance(result, tuple):
        return tuple(jnp_shape.expand_dims(r, axis=expanded) for r in result)
    return jnp_shape.expand_dims(result, axis=expanded)


def vectorize(pyfunc: Callable[..., Any], *, excluded: Collection[int | str] = frozenset(),
              signature: str | None = None) -> Callable[..., Any]:
    """``pyfunc`` broadcast over leading axes (each scalar, or each core-shaped block)."""
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        context = (f"on vectorized function with excluded={excluded!r} and "
                   f"signature={signature!r}")
        # Keyword arguments not excluded reach pyfunc nowhere, as in JAX.
        fun, dynamic, _ = _bind_excluded(pyfunc, excluded, args, kwargs)
        if signature is not None:
            in_core, out_core = parse_signature(signature)
        else:
            in_core, out_core = [()] * len(dynamic), None
        nones = {i for i, a in enumerate(dynamic) if a is None}
        if nones:
            if any(in_core[i] != () for i in nones):
                raise ValueError(f"Cannot pass None at locations {nones} with "
                                 f"signature={signature!r}")
            fun, dynamic, _ = _bind_excluded(fun, nones, dynamic, {})
            in_core = [c for i, c in enumerate(in_core) if i not in nones]
        arrays = [creation.asarray(a) for a in dynamic]
        if len(arrays) != len(in_core):
            raise TypeError(f"wrong number of positional arguments: expected {len(in_core)!r}, "
                            f"got {len(arrays)!r} {context}")
        sizes: dict[str, int] = {}
        for x, core in zip(arrays, in_core):
            _record_core_sizes(sizes, tuple(x.shape), core, context, is_input=True)
        batch = jnp_shape.broadcast_shapes(*(tuple(x.shape[:x.ndim - len(core)])
                                             for x, core in zip(arrays, in_core)))
        if out_core is not None:
            fun = _checking_outputs(fun, sizes, out_core, context)
        _check_rank_promotion(arrays, in_core, signature)
        return broadcast_by_vmap(fun, arrays, in_core, tuple(batch))

    return wrapped


__all__ = ["broadcast_by_vmap", "vectorize"]
