"""``jax.smap``: ``shard_map`` over one mesh axis, with vmap-style axes.

``smap(f, in_axes=, out_axes=, axis_name=)`` is ``shard_map(f, mesh=None (the context
mesh), in_specs=, out_specs=, axis_names={axis_name})`` where each axis ``a`` becomes the
spec ``P(None, ..., None, axis_name)`` with ``a`` Nones before the name, and None becomes
``P()`` (replicated), as JAX builds them (a negative axis thus maps the leading one). Left at
its default (``Infer``), in_axes is read from the arguments' explicit shardings, which needs
``axis_name`` to be an Explicit axis (TypeError otherwise). TypeErrors as JAX's for an axis
name that is a list or tuple and for axes that are not ints or None.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from spec._src.api.shard_map import shard_map
from spec._src.core import tree_util
from spec._src.core.sharding import AxisType, P, get_abstract_mesh


class InferFromArgs:
    """The default of smap's ``in_axes``: the axes come from the arguments' shardings."""

    def __repr__(self) -> str:
        return "jax.sharding.Infer"


Infer = InferFromArgs()


def _axes_to_pspec(axis_name: Any, axis: int | None) -> P:
    if axis is None:
        return P()
    return P(*[None] * axis + [axis_name])


def _check_axes(in_axes: Any, out_axes: Any, axis_name: Any) -> None:
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got "
                        f"{axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                        "entries corresponding to the positional arguments passed to the "
                        f"function, but got {in_axes}.")
    if in_axes is not Infer and not all(isinstance(a, int)
                                        for a in tree_util.tree_leaves(in_axes)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                        f"container with those types as leaves, but got {in_axes}.")
    if not all(isinstance(a, int) for a in tree_util.tree_leaves(out_axes)):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with "
                        f"those types as leaves, but got {out_axes}.")


def _specs(axes: Any, axis_name: Any) -> Any:
    return tree_util.tree_map(partial(_axes_to_pspec, axis_name), axes,
                              is_leaf=lambda x: x is None)


def _smap(f: Callable[..., Any], *, in_axes: Any, out_axes: Any, axis_name: Any
          ) -> Callable[..., Any]:
    _check_axes(in_axes, out_axes, axis_name)
    in_specs = None if in_axes is Infer else _specs(in_axes, axis_name)
    mapped: Callable[..., Any] = shard_map(f, mesh=None, in_specs=in_specs,
                                           out_specs=_specs(out_axes, axis_name),
                                           axis_names={axis_name}, check_vma=True)
    if in_axes is not Infer:
        return mapped

    def inferred(*args: Any) -> Any:
        mesh = get_abstract_mesh()
        kinds = dict(zip(mesh.axis_names, mesh.axis_types))
        if kinds.get(axis_name) is not AxisType.Explicit:
            raise TypeError(f"in_axes was not specified when axis_name="
                            f"{frozenset({axis_name})} was of type {kinds.get(axis_name)}")
        return mapped(*args)
    return inferred


def smap(f: Callable[..., Any] | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: Any) -> Any:
    """``f`` mapped over one mesh axis (see the module docstring); a decorator without f."""
    if f is None:
        return lambda g: _smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    return _smap(f, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)


__all__ = ["Infer", "InferFromArgs", "smap"]
