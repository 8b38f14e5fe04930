"""``jax.api_util``: the argument-handling helpers libraries borrow from
JAX's API functions. Those that work on JAX's wrapped-function machinery
(``linear_util``), which spec does not have, raise NotImplementedError."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

from spec._src.core import tree_util
from spec._src.core.types import ArrayType
from spec._src.api.jit import typeof
from spec._src.api.vmap import _flatten_axes


def safe_map(f: Callable[..., Any], *args: Iterable[Any]) -> list[Any]:
    """``map`` over sequences that must all have the same length."""
    lists = [list(a) for a in args]
    n = len(lists[0])
    for i, a in enumerate(lists[1:], 1):
        if len(a) != n:
            raise AssertionError(f"length mismatch: {[len(x) for x in lists]} (argument {i})")
    return list(map(f, *lists))


def flatten_axes(name: str, treedef: Any, axis_tree: Any) -> list[Any]:
    """One axis per leaf of ``treedef``, from ``axis_tree``, a tree prefix
    of it."""
    return _flatten_axes(name, tree_util.tree_unflatten(treedef, [0] * treedef.num_leaves),
                         axis_tree)


def shaped_abstractify(x: Any) -> ArrayType:
    """The type of a value (array, scalar or tracer)."""
    return typeof(x)


def rebase_donate_argnums(donate_argnums: Sequence[int], static_argnums: Sequence[int]
                          ) -> tuple[int, ...]:
    """Donated positions renumbered among the arguments left once the
    static ones are removed."""
    if set(donate_argnums) & set(static_argnums):
        raise ValueError("arguments cannot be both static and donated: "
                         f"{sorted(set(donate_argnums) & set(static_argnums))}")
    static = sorted(static_argnums)
    return tuple(i - sum(s < i for s in static) for i in sorted(donate_argnums))


def donation_vector(donate_argnums: Sequence[int], donate_argnames: Sequence[str],
                    in_tree: Any) -> tuple[bool, ...]:
    """Per leaf of ``in_tree`` (an (args, kwargs) tree), whether it is donated."""
    args_tree, kwargs_tree = in_tree.children()
    flags: list[bool] = []
    for i, sub in enumerate(args_tree.children()):
        flags += [i in donate_argnums] * sub.num_leaves
    kw = tree_util.tree_unflatten(kwargs_tree, [0] * kwargs_tree.num_leaves)
    for key in sorted(kw) if isinstance(kw, dict) else []:
        flags += [key in donate_argnames] * tree_util.tree_structure(kw[key]).num_leaves
    return tuple(flags)


def _unsupported(name: str) -> Callable[..., NoReturn]:
    def fail(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"jax.api_util.{name} works on JAX's wrapped functions "
                                  "(linear_util), which spec does not have")
    fail.__name__ = name
    return fail


argnums_partial = _unsupported("argnums_partial")
debug_info = _unsupported("debug_info")
flatten_fun = _unsupported("flatten_fun")
flatten_fun_nokwargs = _unsupported("flatten_fun_nokwargs")
