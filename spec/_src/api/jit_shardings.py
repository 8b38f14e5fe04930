"""``jit``'s ``in_shardings`` and ``out_shardings`` on an eager call.

Each dynamic positional argument's leaves are checked against the sharding
``in_shardings`` gives them (one Sharding for every argument, or a tuple with
one pytree prefix per argument; None leaves a leaf alone): the memory kinds
must agree, a committed array must already live on that sharding's devices,
and an uncommitted one is put there. The results are put where
``out_shardings`` (a Sharding or a pytree prefix of the results) says; with
a mesh among them, the others are replicated over it.

Staged, the call carries them per leaf (``staged_shardings``): one entry
per operand (each positional argument's leaves take theirs, keyword
arguments and closed-over values none) and one per result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec._src.api import placement
from spec._src.core import tree_util
from spec._src.core.array import Array
from spec._src.core.commitment import is_committed
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.sharding import NamedSharding, P, Sharding, get_concrete_mesh
from spec._src.lax.call_shardings import UNSPECIFIED, EagerPlacement, register_eager_placement


def _as_sharding(s: Any) -> Any:
    """A PartitionSpec as a NamedSharding over the mesh of ``set_mesh``."""
    if isinstance(s, P):
        mesh = get_concrete_mesh()
        if mesh.empty:
            raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed"
                             " to jit's in_shardings or out_shardings")
        return NamedSharding(mesh, s)
    return s


def _is_spec(s: Any) -> bool:
    return s is None or isinstance(s, (Sharding, P))


def _per_leaf(tree: Any, shardings: Any) -> list[Any]:
    """One sharding (or None) per leaf of ``tree`` from a prefix of it."""
    structure = tree_util.tree_structure(tree)
    if _is_spec(shardings):
        return [shardings] * structure.num_leaves
    entries, prefix = tree_util.tree_flatten(shardings, is_leaf=_is_spec)
    subtrees = prefix.flatten_up_to(tree)
    return [e for sub, e in zip(subtrees, entries)
            for _ in range(tree_util.tree_structure(sub).num_leaves)]


def _memory_kind(leaf: Any) -> str:
    return leaf.sharding.memory_kind if isinstance(leaf, Array) else "device"


def _placed_leaf(leaf: Any, sharding: Any) -> Any:
    sharding = _as_sharding(sharding)
    if not isinstance(sharding, Sharding):  # None, or a layout (Format): nothing to place
        return leaf
    kind = _memory_kind(leaf)
    if sharding.memory_kind != kind:
        raise ValueError("Memory kinds passed to jax.jit does not match memory kind on the"
                         f" respective arg. Got jit memory kind: {sharding.memory_kind}, arg"
                         f" memory kind: {kind} for arg type: {canonical_aval_of(leaf)}")
    if is_committed(leaf):
        if leaf.sharding.device_set != sharding.device_set:
            raise ValueError("Sharding passed to jit does not match the sharding on the"
                             f" respective arg. Got jit sharding: {sharding},\narg sharding:"
                             f" {leaf.sharding} for arg type: {canonical_aval_of(leaf)}")
        if leaf.sharding == sharding:
            return leaf
    return placement.device_put(leaf, sharding)


def place_arguments(args: Sequence[Any], in_shardings: Any,
                    static_argnums: Sequence[int]) -> tuple[Any, ...]:
    """The positional arguments placed by ``in_shardings``."""
    dynamic = [i for i in range(len(args)) if i not in static_argnums]
    per_arg = _positional(len(dynamic), in_shardings)
    out = list(args)
    for i, shardings in zip(dynamic, per_arg):
        leaves, structure = tree_util.tree_flatten(args[i])
        placed = [_placed_leaf(x, s) for x, s in zip(leaves, _per_leaf(args[i], shardings))]
        out[i] = tree_util.tree_unflatten(structure, placed)
    return tuple(out)


def place_results(out: Any, out_shardings: Any) -> Any:
    """The results put where ``out_shardings`` says. The program runs on the
    mesh a sharding names: a result given none is replicated over it (one
    already laid out over that mesh stays as it is)."""
    leaves, structure = tree_util.tree_flatten(out)
    shardings = [s if isinstance(s, Sharding) else None
                 for s in map(_as_sharding, _per_leaf(out, out_shardings))]
    meshes = [s.mesh for s in shardings if isinstance(s, NamedSharding)]
    placed = []
    for x, s in zip(leaves, shardings):
        if s is None and meshes and not _over(x, meshes[0]):
            s = NamedSharding(meshes[0], P())
        placed.append(x if s is None else placement.device_put(x, s))
    return tree_util.tree_unflatten(structure, placed)


def _entry(s: Any) -> Any:
    s = _as_sharding(s)
    return s if isinstance(s, Sharding) else UNSPECIFIED


def _positional(n_dynamic: int, in_shardings: Any) -> list[Any]:
    """Each dynamic positional argument's sharding (prefix) entry."""
    if _is_spec(in_shardings):
        return [in_shardings] * n_dynamic
    per_arg = list(in_shardings)
    if len(per_arg) != n_dynamic:
        raise ValueError(f"jit in_shardings has {len(per_arg)} entries, but the function"
                         f" was called with {n_dynamic} positional arguments")
    return per_arg


def staged_shardings(dyn_tree: Any, in_shardings: Any, out_tree: Any, out_shardings: Any
                     ) -> tuple[list[Any], list[Any]]:
    """The staged call's entries: per leaf of the dynamic arguments
    (``dyn_tree``: the tree of their (positional, keyword) pair) and per
    result leaf."""
    args, kwargs = tree_util.tree_unflatten(dyn_tree, [0] * dyn_tree.num_leaves)
    ins: list[Any] = []
    for arg, entry in zip(args, _positional(len(args), in_shardings)):
        ins.extend(map(_entry, _per_leaf(arg, entry)))
    ins.extend([UNSPECIFIED] * tree_util.tree_structure(kwargs).num_leaves)
    results = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    return ins, [_entry(s) for s in _per_leaf(results, out_shardings)]


def _over(x: Any, mesh: Any) -> bool:
    s = getattr(x, "_sharding", None)
    return s is not None and s.mesh == mesh


def _call_operands(args: Sequence[Any], entries: Sequence[Any]) -> list[Any]:
    return [x if s is UNSPECIFIED else _placed_leaf(x, s) for x, s in zip(args, entries)]


def _call_results(outs: Sequence[Any], entries: Sequence[Any]) -> list[Any]:
    return [x if s is UNSPECIFIED or getattr(x, "sharding", None) == s
            else placement.device_put(x, s) for x, s in zip(outs, entries)]


# An eagerly evaluated jit equation places by its shardings as a call does.
register_eager_placement(EagerPlacement(_call_operands, _call_results))


__all__ = ["place_arguments", "place_results", "staged_shardings"]
