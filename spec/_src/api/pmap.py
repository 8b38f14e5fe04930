"""``pmap``: the parallel map, as JAX 0.12 builds it on ``shard_map``.

``pmap(f, axis_name)(*args)`` runs one instance of ``f`` per device of a
one-axis mesh named ``axis_name`` (the first n devices, n the size of the
mapped axis, or ``devices``), each on its slice of the mapped arguments
(``in_axes``: an int or None per argument, a tree prefix) with that axis
removed; the instances' results are stacked along ``out_axes`` (None: an
unmapped result, the same on every device). Collectives over
``axis_name`` inside ``f`` act across the instances. The whole map is one
``jit`` of a ``shard_map`` whose specs put ``axis_name`` on each mapped
axis; ``static_broadcasted_argnums`` are passed to every instance as they
are (hashable, not traced); ``donate_argnums`` and ``backend`` are
accepted as JAX accepts them.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spec._src.api.jit import jit
from spec._src.api.shard_map import shard_map
from spec._src.api.vmap import _flatten_axes
from spec._src.api.placement import devices as all_devices
from spec._src.core import tree_util
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.sharding import Mesh, P
from spec._src.lax.shaping import expand_dims, squeeze

_DEFAULT_NAME = "_internal_pmap_axis_name"


def _index_tuple(x: int | Iterable[int]) -> tuple[int, ...]:
    return (operator.index(x),) if isinstance(x, int) else tuple(operator.index(i) for i in x)


def _check_axes(what: str, axes: Any) -> None:
    for leaf in tree_util.tree_leaves(axes):
        if type(leaf) is not int:
            raise TypeError(f"pmap {what} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {axes}.")


def _spec(axis_name: Any, axis: int | None) -> P:
    return P() if axis is None else P(*[None] * axis, axis_name)


def _mapped_size(leaves: Sequence[Any], axes: Sequence[int | None]) -> int:
    for leaf, axis in zip(leaves, axes):
        if axis is not None:
            return int(canonical_aval_of(leaf).shape[axis])
    raise ValueError("pmap requires at least one argument with a mapped axis.")


def _mesh_devices(devices: Sequence[Any] | None, size: int, axis_size: int | None
                  ) -> tuple[Any, ...]:
    if axis_size is not None and axis_size != size:
        raise ValueError(f"Specified axis_size {axis_size} doesn't match received "
                         f"axis_size {size}.")
    pool = tuple(all_devices()) if devices is None else tuple(devices)
    if size > len(pool):
        raise ValueError(f"compiling computation that requires {size} logical devices, but "
                         f"only {len(pool)} XLA devices are available (num_replicas={size})")
    return pool[:size]


def pmap(fun: Callable[..., Any], axis_name: Any = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: int | Iterable[int] = (),
         devices: Sequence[Any] | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Iterable[int] = ()) -> Any:
    """Map ``fun`` over a leading (``in_axes``) axis, one device per
    instance (see the module docstring)."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")
    if devices is not None and not devices:
        raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    name = _DEFAULT_NAME if axis_name is None else axis_name
    static = _index_tuple(static_broadcasted_argnums)
    _index_tuple(donate_argnums)
    _check_axes("in_axes", in_axes)
    _check_axes("out_axes", out_axes)

    compiled: dict[Any, Any] = {}

    def build(tree: Any, axes: tuple[int | None, ...], statics: dict[int, Any],
              mesh: Mesh) -> Any:
        def per_device(*flat: Any) -> Any:
            blocks = [x if a is None else squeeze(x, (a,)) for x, a in zip(flat, axes)]
            dyn, kw = tree_util.tree_unflatten(tree, blocks)
            it = iter(dyn)
            full = [statics[i] if i in statics else next(it)
                    for i in range(len(dyn) + len(statics))]
            out = fun(*full, **kw)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_dims = _flatten_axes("out_axes", out, out_axes)
            stacked = [x if a is None else expand_dims(x, (a,))
                       for x, a in zip(out_leaves, out_dims)]
            return tree_util.tree_unflatten(out_tree, stacked)

        in_specs = tuple(_spec(name, a) for a in axes)
        out_specs = tree_util.tree_map(lambda a: _spec(name, a), out_axes,
                                       is_leaf=lambda x: x is None)
        return jit(shard_map(per_device, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=False, axis_names={name}))

    @functools.wraps(fun)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        statics = {i % len(args): args[i] for i in static} if args else {}
        dynamic = tuple(a for i, a in enumerate(args) if i not in statics)
        axes_spec = in_axes
        if isinstance(in_axes, (list, tuple)) and statics:
            axes_spec = type(in_axes)(a for i, a in enumerate(in_axes) if i not in statics)
        leaves, tree = tree_util.tree_flatten((dynamic, kwargs))
        axes = tuple(_flatten_axes("in_axes", (dynamic, kwargs), (axes_spec, 0)))
        chosen = _mesh_devices(devices, _mapped_size(leaves, axes), axis_size)
        # One jit per argument structure, static values and devices (JAX's cache).
        key = (tree, axes, tuple(sorted(statics.items())), tuple(id(d) for d in chosen))
        if key not in compiled:
            compiled[key] = build(tree, axes, statics, Mesh(chosen, (name,)))
        return compiled[key](*leaves)

    return mapped


__all__ = ["pmap"]
