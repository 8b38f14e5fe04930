"""``jax.custom_batching``: ``custom_vmap`` and ``sequential_vmap``.

``custom_vmap(fun)`` wraps a function whose batching the user defines with ``def_vmap(rule)``:
``rule(axis_size, in_batched, *args)`` gets the arguments with their batch axes at the front
(``in_batched`` a list, one tree of booleans per argument) and returns ``(out, out_batched)``.
Calling it traces fun and binds ``custom_vmap_call`` (its closed-over values first); without
a rule it is AttributeError, as JAX. ``sequential_vmap(f)`` is the custom_vmap whose rule
maps f over the batched arguments with ``lax.map`` (one call per example), the others passed
whole.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from spec._src.core import tree_util
from spec._src.core.interpreter import canonical_aval_of, trace_to_jaxpr, Jaxpr
from spec._src.lax.custom_batching import ClosedRule, custom_vmap_call_p
from spec._src.api.lax_map import map as lax_map

__all__ = ["custom_vmap", "sequential_vmap"]


def _resolve_kwargs(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> tuple[Any, ...]:
    """The arguments as positional ones (TypeError from the signature otherwise)."""
    if not kwargs:
        return args
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"keyword arguments {list(bound.kwargs)} could not be resolved to "
                        "positions")
    return tuple(bound.args)


class custom_vmap:  # noqa: N801 (JAX's name)
    """A function with a user-defined vmap rule (see the module docstring)."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable[..., Any] | None = None

    def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]
                 ) -> Callable[..., tuple[Any, Any]]:
        """Set the vmap rule; returns it unchanged."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "<unnamed function>")
        try:
            args = _resolve_kwargs(self.fun, args, kwargs)
        except TypeError as e:
            raise TypeError(
                "The input arguments to the custom_vmap-decorated function "
                f"{name} could not be resolved to positional-only arguments. Binding failed "
                f"with the error:\n{e}") from e
        if not self.vmap_rule:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 "using def_vmap.")
        flat, in_tree = tree_util.tree_flatten(args)
        out_trees: list[Any] = []

        def flat_fun(*xs: Any) -> list[Any]:
            out = self.fun(*tree_util.tree_unflatten(in_tree, list(xs)))
            leaves, tree = tree_util.tree_flatten(out)
            out_trees.append(tree)
            return list(leaves)
        traced, _ = trace_to_jaxpr(flat_fun, [canonical_aval_of(x) for x in flat])
        consts = list(traced.consts)
        call = Jaxpr([], [*traced.constvars, *traced.invars], traced.outvars, traced.eqns,
                     traced.effects)
        consts_tree = tree_util.tree_structure(consts)
        outs = custom_vmap_call_p.bind(
            *consts, *flat, call=call, rule=ClosedRule(self.vmap_rule),
            in_tree=tree_util.treedef_tuple((consts_tree, in_tree)), out_tree=out_trees[0])
        return tree_util.tree_unflatten(out_trees[0], list(outs))


def _tree_split(mask: Any, tree: Any) -> tuple[Any, Any]:
    lhs = tree_util.tree_map(lambda m, x: x if m else None, mask, tree)
    rhs = tree_util.tree_map(lambda m, x: None if m else x, mask, tree)
    return lhs, rhs


def _tree_merge(mask: Any, lhs: Any, rhs: Any) -> Any:
    return tree_util.tree_map(lambda m, a, b: a if m else b, mask, lhs, rhs)


def sequential_vmap(f: Callable[..., Any]) -> custom_vmap:
    """f as a custom_vmap whose batching runs f once per example (``lax.map``)."""
    wrapped = custom_vmap(f)

    @wrapped.def_vmap
    def rule(axis_size: int, in_batched: Any, *args: Any) -> tuple[Any, Any]:
        del axis_size
        mapped, whole = _tree_split(in_batched, list(args))

        def one(mapped_args: Any) -> Any:
            return wrapped(*_tree_merge(in_batched, mapped_args, whole))
        out = lax_map(one, mapped)
        return out, tree_util.tree_map(lambda _: True, out)
    return wrapped
