"""TEMPORARY placeholder until the tree_util helper lands its module."""
from typing import Any
import optree
def tree_flatten(tree: Any, is_leaf: Any = None) -> Any:
    return optree.tree_flatten(tree, is_leaf=is_leaf, none_is_leaf=False, namespace="spec")
def tree_unflatten(treedef: Any, leaves: Any) -> Any:
    return optree.tree_unflatten(treedef, leaves)
def tree_map(f: Any, tree: Any, *rest: Any, is_leaf: Any = None) -> Any:
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False, namespace="spec")
