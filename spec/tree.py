"""Short names for the pytree utilities, mirroring ``jax.tree`` of JAX 0.12.

Every function here delegates to :mod:`spec.tree_util`; both share one registry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from spec._src.core import tree_util
from spec._src.core.tree_util import KeyPath, Leaf, PyTreeDef, Unspecified

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]

T = TypeVar("T")

_UNSPECIFIED = Unspecified()


def all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:  # noqa: A001
    """True when every leaf of ``tree`` is truthy."""
    return tree_util.tree_all(tree, is_leaf=is_leaf)


def flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Leaf], PyTreeDef]:
    """The leaves of ``tree`` (depth first, left to right) and its structure."""
    return tree_util.tree_flatten(tree, is_leaf)


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Leaf]:
    """The leaves of ``tree`` in flattening order."""
    return tree_util.tree_leaves(tree, is_leaf)


def map(  # noqa: A001
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Apply ``f`` at each leaf of ``tree`` (and the matching subtrees of ``rest``)."""
    return tree_util.tree_map(f, tree, *rest, is_leaf=is_leaf)


def reduce(
    function: Callable[[T, Any], T],
    tree: Any,
    initializer: T | Unspecified = _UNSPECIFIED,
    is_leaf: Callable[[Any], bool] | None = None,
) -> T:
    """Left fold of ``function`` over the leaves of ``tree``."""
    return tree_util.tree_reduce(function, tree, initializer, is_leaf=is_leaf)


def reduce_associative(
    operation: Callable[[T, T], T],
    tree: Any,
    *,
    identity: T | Unspecified = _UNSPECIFIED,
    is_leaf: Callable[[Any], bool] | None = None,
) -> T:
    """Balanced-tree reduction of the leaves with an associative ``operation``."""
    return tree_util.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf)


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The :class:`~spec._src.core.tree_util.PyTreeDef` of ``tree``."""
    return tree_util.tree_structure(tree, is_leaf)


def transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Swap the outer and inner levels of a nested tree."""
    return tree_util.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> Any:
    """Rebuild a tree of structure ``treedef`` from ``leaves``."""
    return tree_util.tree_unflatten(treedef, leaves)


def flatten_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`flatten`, with every leaf paired with its key path."""
    return tree_util.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)


def leaves_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> list[tuple[KeyPath, Any]]:
    """``(key path, leaf)`` pairs in flattening order."""
    return tree_util.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path)


def map_with_path(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[..., bool] | None = None,
    is_leaf_takes_path: bool = False,
) -> Any:
    """Like :func:`map`, passing each leaf's key path as the first argument of ``f``."""
    return tree_util.tree_map_with_path(
        f, tree, *rest, is_leaf=is_leaf, is_leaf_takes_path=is_leaf_takes_path
    )


def broadcast(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Repeat the leaves of ``prefix_tree`` over the matching subtrees of ``full_tree``."""
    return tree_util.tree_broadcast(prefix_tree, full_tree, is_leaf=is_leaf)


def static(**kwargs: Any) -> Any:
    """``dataclasses.field(**kwargs)`` marked ``static`` for ``register_dataclass``.

    Keeps any caller ``metadata``, adding ``static=True`` (caller entries win on a clash, as
    in JAX).
    """
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
