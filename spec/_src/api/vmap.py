"""``vmap``: JAX's signature, argument checks and error messages (in spec's
words where JAX's are long). The machinery is in ``spec._src.interpreters.batching``."""

from __future__ import annotations

import difflib
import functools
import inspect
import itertools
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from spec._src.interpreters import batching
from spec._src.core import source_info as si
from spec._src.core import tree_util
from spec._src.core.hitypes import MappingSpec, is_high
from spec._src.lax import hi_axes as HA
from spec._src.core.interpreter import canonical_aval_of


def _is_axis(x: Any) -> bool:
    return x is None or isinstance(x, MappingSpec) or (
        isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def _check_axes_spec(spec: Any, what: str) -> None:
    for leaf in tree_util.tree_leaves(spec, is_leaf=lambda x: x is None):
        if not _is_axis(leaf):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with "
                            f"those types as leaves, but got {spec}.")


class _PytreeLeaf:
    """Stands for each leaf of a value when its structure is compared with
    an axes specification."""

    def __repr__(self) -> str:
        return "pytree leaf"


def _type_text(x: Any) -> str:
    # JAX's messages name its own stand-in class for a leaf.
    if isinstance(x, _PytreeLeaf):
        return "<class 'jax._src.api_util.PytreeLeaf'>"
    return str(type(x))


def _is_node(x: Any) -> bool:
    try:
        tree_util.flatten_one_level(x)
    except ValueError:
        return False
    return True


def _prefix_errors(name: str, prefix: Any, full: Any, path: tuple[Any, ...] = ()
                   ) -> list[str]:
    """Where ``prefix`` (an axes specification; None is a leaf) fails to be a
    tree prefix of ``full``, each place described as JAX describes it."""
    if prefix is None or not _is_node(prefix):
        return []
    where = f"    {name}{tree_util.keystr(path)}\n"
    if type(prefix) is not type(full):
        return ["pytree structure error: different types at key path\n" + where +
                f"At that key path, the prefix pytree {name} has a subtree of type\n"
                f"    {_type_text(prefix)}\n"
                "but at the same key path the full pytree has a subtree of different type\n"
                f"    {_type_text(full)}."]
    p_kids, p_meta = tree_util.flatten_one_level(prefix)
    f_kids, f_meta = tree_util.flatten_one_level(full)
    p_children, f_children = tuple(p_kids), tuple(f_kids)
    p_keys = tuple(k for k, _ in tree_util.flatten_one_level_with_keys(prefix)[0])
    f_keys = tuple(k for k, _ in tree_util.flatten_one_level_with_keys(full)[0])
    if isinstance(prefix, (list, tuple)):
        if len(prefix) != len(full):
            ty = type(prefix).__name__
            return [f"pytree structure error: different lengths of {ty} at key path\n" + where
                    + f"At that key path, the prefix pytree {name} has a subtree of type "
                    f"{ty} of length {len(prefix)}, but the full pytree has a subtree of "
                    f"the same type but of length {len(full)}."]
    elif len(p_children) != len(f_children):
        diff = " ".join(str(k) for k in set(p_keys).symmetric_difference(f_keys))
        return ["pytree structure error: different numbers of pytree children at key path\n"
                + where + f"At that key path, the prefix pytree {name} has a subtree of type\n"
                f"    {type(prefix)}\nwith {len(p_children)} child keys\n"
                f"    {' '.join(str(k) for k in p_keys)}\n"
                "but at the same key path the full pytree has a subtree of the same type but "
                f"with {len(f_children)} child keys\n    {' '.join(str(k) for k in f_keys)}\n"
                f"so the symmetric difference on key sets is\n    {diff}"]
    if p_meta != f_meta:
        p_str, f_str = str(p_meta), str(f_meta)
        lines = difflib.ndiff(p_str.splitlines(), f_str.splitlines())
        return ["pytree structure error: different pytree metadata at key path\n" + where +
                f"At that key path, the prefix pytree {name} has a subtree of type\n"
                f"    {type(prefix)}\nwith metadata\n    {p_str}\n"
                "but at the same key path the full pytree has a subtree of the same type but "
                f"with metadata\n    {f_str}\nso the diff in the metadata at these pytree "
                f"nodes is\n{textwrap.indent(chr(10).join(lines), '    ')}"]
    out: list[str] = []
    for k, a, b in zip(p_keys, p_children, f_children):
        out.extend(_prefix_errors(name, a, b, (*path, k)))
    return out


def _flatten_axes(what: str, tree: Any, spec: Any) -> list[Any]:
    """One axis (or None) per leaf of ``tree``: ``spec`` is a tree prefix of
    it whose leaves (ints or None) cover whole subtrees."""
    spec_leaves, spec_tree = tree_util.tree_flatten(spec, is_leaf=lambda x: x is None)
    try:
        subtrees = spec_tree.flatten_up_to(tree)
    except (TypeError, ValueError):
        structure = tree_util.tree_structure(tree)
        dummy = tree_util.tree_unflatten(structure, [_PytreeLeaf()] * structure.num_leaves)
        errors = _prefix_errors(f"vmap {what}", spec, dummy)
        if not errors:
            raise
        details = "\n  ".join(errors)
        raise ValueError(f"vmap {what} specification must be a tree prefix of the "
                         f"corresponding value; \n  Mismatch details ({len(errors)} found):"
                         f"\n  {details}") from None
    axes: list[Any] = []
    for axis, sub in zip(spec_leaves, subtrees):
        axes.extend([axis] * len(tree_util.tree_leaves(sub)))
    return axes


def _arg_names(fun: Callable[..., Any], n: int) -> list[str]:
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"args[{i}]" for i in range(n)]


def _leaf_names(fun: Callable[..., Any], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> list[str]:
    """How JAX's messages name each input leaf: ``argument x[0]``,
    ``kwargs['y']``."""
    names = _arg_names(fun, len(args))
    out: list[str] = []
    for name, arg in zip(names, args):
        with_path, _ = tree_util.tree_flatten_with_path(arg)
        out.extend("argument " + name + tree_util.keystr(p) for p, _ in with_path)
    with_path, _ = tree_util.tree_flatten_with_path(kwargs)
    out.extend("kwargs" + tree_util.keystr(p) for p, _ in with_path)
    return out


def _leaf_aval(leaf: Any) -> Any:
    try:
        return canonical_aval_of(leaf)
    except TypeError:
        if isinstance(leaf, str):  # (JAX checks strings first, in its own words)
            raise TypeError(f"Argument {leaf!r} of type {type(leaf)} is not a valid JAX "
                            "type") from None
        raise TypeError(f"Argument '{leaf}' of type '{type(leaf)}' is not a valid JAX "
                        "type") from None


def _axis_size(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               leaves: list[Any], axes: list[Any], axis_size: int | None) -> int:
    names = _leaf_names(fun, args, kwargs)
    # Every leaf must be a JAX value before any is checked against its
    # axis (a string among the leaves is reported as such, not as rank 0).
    avals = [_leaf_aval(leaf) for leaf in leaves]
    sizes: list[tuple[int, str]] = []
    for aval, axis, name in zip(avals, axes, names):
        if axis is None or isinstance(axis, MappingSpec):
            continue  # a hi value's mapped size is not read off it: axis_size gives it
        if is_high(aval):
            raise ValueError(
                f"vmap was requested to map a value of non-array type {aval.str_short()} "
                f"along axis {axis}, but non-array types can't be mapped along an integer "
                "axis. Instead pass a mapping spec (a MappingSpec instance) as this "
                "argument's in_axes entry, and pass axis_size explicitly.")
        if not -aval.ndim <= axis < aval.ndim:
            raise ValueError(f"vmap was requested to map its argument along axis {axis}, "
                             f"which implies that its rank should be at least "
                             f"{axis + 1 if axis >= 0 else -axis}, but is only {aval.ndim} "
                             f"(its shape is {aval.shape})")
        sizes.append((aval.shape[axis % aval.ndim],
                      f"axis {axis} of {name} of type {aval}"))
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes or "
                             "axis_size must be specified")
        return int(axis_size)
    distinct = {s for s, _ in sizes}
    if axis_size is not None:
        distinct.add(int(axis_size))
    if len(distinct) > 1:
        lines = [f"  * one axis had size {s}: {where}" for s, where in sizes]
        if axis_size is not None:
            lines.insert(0, f"  * the `axis_size` argument was {axis_size}")
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + ";\n".join(lines))
    return distinct.pop()


def _spec_entry(x: Any, dim: int) -> Any:
    """The spec entry of ``x``'s dimension ``dim`` (None without a sharding)."""
    sharding = canonical_aval_of(x).sharding
    if sharding is None:
        return None
    parts = sharding.spec.partitions
    return parts[dim] if dim < len(parts) else None


def _mapped_axis_spec(leaves: list[Any], dims: list[Any]) -> tuple[Any, ...] | None:
    """The mesh axes the mapped dimensions are sharded over (explicit
    sharding mode): every mapped input's entry must be the same, an
    unsharded one (a NumPy array's too) included; a tuple, or None."""
    entries = [_spec_entry(x, d) for x, d in zip(leaves, dims)
               if d is not None and not isinstance(d, MappingSpec)]
    for first, other in itertools.pairwise(entries):
        if other != first:
            raise ValueError("Mapped away dimension of inputs passed to vmap should be sharded "
                             f"the same. Got inconsistent axis specs: {first} vs {other}")
    entry = entries[0] if entries else None
    if entry is None:
        return None
    return entry if isinstance(entry, tuple) else (entry,)


def _check_unmapped_args(mesh_axis: tuple[Any, ...] | None, leaves: list[Any],
                         dims: list[Any]) -> None:
    """An unmapped input may not be sharded over the mesh axes the batch
    dimension is sharded over (each example would then hold only a part)."""
    if mesh_axis is None:
        return
    for x, d in zip(leaves, dims):
        if d is not None:
            continue
        aval = canonical_aval_of(x)
        if getattr(aval, "sharding", None) is None or is_high(aval):
            continue
        used = {a for p in aval.sharding.spec.partitions if p is not None
                for a in (p if isinstance(p, tuple) else (p,))}
        if used & set(mesh_axis):
            raise ValueError("Unmapped values passed to vmap cannot be sharded along the mesh "
                             f"axis you are vmapping over. Got type: {aval.str_short(True)}, "
                             f"in_axes: {d} and vmapped mesh axis: {mesh_axis}")


def _spmd_name(spmd_axis_name: Any, mesh_axis: tuple[Any, ...] | None
               ) -> tuple[Any, ...] | None:
    """``spmd_axis_name`` as a tuple; with explicitly sharded inputs it must
    name exactly their mesh axes, and then adds nothing (None)."""
    if spmd_axis_name is None:
        return None
    names = spmd_axis_name if isinstance(spmd_axis_name, tuple) else (spmd_axis_name,)
    if mesh_axis is None:
        return names
    if names != mesh_axis:
        raise ValueError("Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis "
                         f"type is allowed. Got spmd_axis_name={names} and arrays sharded on "
                         f"explicit_mesh_axis={mesh_axis}")
    return None


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0,
         axis_name: Any = None, axis_size: int | None = None,
         spmd_axis_name: Any = None) -> Callable[..., Any]:
    """Map ``fun`` over an axis of its arguments: a batching rule per
    primitive, never a loop over the batch."""
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (_is_axis(in_axes) or isinstance(in_axes, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries "
                        "corresponding to the positional arguments passed to the function, "
                        f"but got {in_axes}.")
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")

    @functools.wraps(fun)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}.")
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        arg_axes = _flatten_axes("in_axes", args, in_axes)
        if not leaves and axis_size is None:
            raise ValueError("vmap wrapped function must be passed at least one argument "
                             "containing an array or axis_size must be specified, got empty "
                             f"*args={args} and **kwargs={kwargs}")
        # Keyword arguments are always mapped over axis 0, as in JAX.
        axes = arg_axes + [0] * (len(leaves) - len(arg_axes))
        size = _axis_size(fun, args, kwargs, leaves, axes, axis_size)
        dims: list[Any] = [a if a is None or isinstance(a, MappingSpec)
                           else a % canonical_aval_of(x).ndim for x, a in zip(leaves, axes)]
        mesh_axis = _mapped_axis_spec(leaves, dims)
        _check_unmapped_args(mesh_axis, leaves, dims)
        axis = batching.AxisData(size, axis_name, _spmd_name(spmd_axis_name, mesh_axis),
                                 mesh_axis)
        store: dict[str, Any] = {}

        def flat(*xs: Any) -> list[Any]:
            a, k = tree_util.tree_unflatten(in_tree, list(xs))
            out = fun(*a, **k)
            out_leaves, store["tree"] = tree_util.tree_flatten(out)
            return out_leaves

        outs, out_dims = batching.batch_flat(flat, axis, leaves, dims)
        out_tree = store["tree"]
        out_spec = _flatten_axes("out_axes", tree_util.tree_unflatten(out_tree, outs),
                                 out_axes)
        # (moved to out_axes within the transformation: named ``vmap()/...``)
        with si.transform("vmap"):
            moved = [_place_output(o, d, w, axis) for o, d, w in zip(outs, out_dims, out_spec)]
        return tree_util.tree_unflatten(out_tree, moved)

    return vmapped


def _place_output(x: Any, dim: Any, want: Any, axis: batching.AxisData) -> Any:
    if want is None:
        if dim is not None:
            raise ValueError(f"at vmap out_axes, got axis spec None but output was batched "
                             f"on axis {dim}")
        return x
    if isinstance(want, MappingSpec) and dim is None and is_high(canonical_aval_of(x)):
        # An unbatched hi output broadcast along the spec asked for.
        return HA.broadcast(x, canonical_aval_of(x), (axis.size, want))
    if isinstance(want, MappingSpec) or isinstance(dim, MappingSpec):
        if dim != want:
            raise ValueError(f"at vmap out_axes, got axis spec {want!r} but the output was "
                             f"batched as {dim!r}")
        return x
    ndim = canonical_aval_of(x).ndim + (1 if dim is None else 0)
    if not -ndim <= want < ndim:
        raise ValueError(f"axis {want} is out of bounds for array of dimension {ndim}")
    return batching.match_axis(axis, x, dim, want % ndim)


__all__ = ["vmap"]
