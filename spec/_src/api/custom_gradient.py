"""``jax.custom_gradient`` and ``jax.closure_convert``: custom derivatives from a function that
returns its own VJP, and the closure conversion that makes a function's captured values
explicit arguments.

Both trace a Python function into a jaxpr so that the values it closes over (possibly tracers
of an enclosing transformation) become data: the VJP closure's captured values travel as the
residuals of a ``custom_vjp``; a converted function's perturbable captured values become
trailing arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.custom_derivatives import custom_vjp
from spec._src.core import tree_util
from spec._src.core.interpreter import (Jaxpr, Tracer, canonical_aval_of, eval_jaxpr,
                                        trace_to_jaxpr)
from spec._src.core.types import ArrayType


def _traced(fun: Callable[..., Any], in_tree: Any, in_avals: Sequence[ArrayType]
            ) -> tuple[Jaxpr, Any]:
    """``fun`` as a jaxpr, and its output tree; ``in_tree`` is the tree of its argument
    tuple."""
    out_tree: list[Any] = []

    def flat(*leaves: Any) -> list[Any]:
        args = tree_util.tree_unflatten(in_tree, list(leaves))
        out_leaves, tree = tree_util.tree_flatten(fun(*args))
        out_tree.append(tree)
        return list(out_leaves)

    jaxpr, _ = trace_to_jaxpr(flat, list(in_avals))
    return jaxpr, out_tree[0]


def _maybe_perturbed(x: Any) -> bool:
    """Whether a captured value could carry a nonzero tangent: a tracer of a float or
    complex type (an integer's tangent is float0, a concrete array has none)."""
    return isinstance(x, Tracer) and bool(np.issubdtype(x.aval.dtype, np.inexact))


def closure_convert(fun: Callable[..., Any], *example_args: Any
                    ) -> tuple[Callable[..., Any], list[Any]]:
    """``(converted, hoisted)``: ``converted(*args, *hoisted)`` computes ``fun(*args)`` for
    arguments of ``example_args``' structure and types, with the values ``fun`` captured that
    may be perturbed (tracers of inexact type) passed explicitly as ``hoisted``."""
    flat_args, in_tree = tree_util.tree_flatten(example_args)
    jaxpr, out_tree = _traced(fun, in_tree, [canonical_aval_of(x) for x in flat_args])
    consts = list(jaxpr.consts)
    hoist = [_maybe_perturbed(c) for c in consts]
    kept = [c for c, h in zip(consts, hoist) if not h]
    hoisted = [c for c, h in zip(consts, hoist) if h]

    def converted(*args_and_hoisted: Any) -> Any:
        split = len(args_and_hoisted) - len(hoisted)
        args, given = args_and_hoisted[:split], iter(args_and_hoisted[split:])
        kept_values = iter(kept)
        merged = [next(given) if h else next(kept_values) for h in hoist]
        leaves, tree = tree_util.tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(
                "The inputs to the closure produced by closure_convert must have the same "
                "Pytree structure as the example arguments passed when closure_convert was "
                f"called. Expected {in_tree}, but got {tree}")
        return tree_util.tree_unflatten(out_tree, eval_jaxpr(jaxpr, merged, *leaves))

    return converted, hoisted


class _VJPResiduals:
    """A VJP closure as data: its jaxpr and trees (static) and captured values (leaves)."""

    def __init__(self, jaxpr: Jaxpr, cts_in_tree: Any, single: bool, consts: list[Any]
                 ) -> None:
        self.jaxpr, self.cts_in_tree, self.single, self.consts = (jaxpr, cts_in_tree, single,
                                                                   consts)


tree_util.register_pytree_node(
    _VJPResiduals,
    lambda r: (r.consts, (r.jaxpr, r.cts_in_tree, r.single)),
    lambda aux, consts: _VJPResiduals(aux[0], aux[1], aux[2], list(consts)))


def _rule_with_logs(rule: Callable[..., Any]) -> Callable[..., Any]:
    """A ``with_logs`` VJP function, its result checked to be ``(in_cts, logs)``
    with ``logs`` None or a dict (JAX's TypeErrors)."""
    def checked(*cts: Any) -> tuple[Any, Any]:
        out = rule(*cts)
        if not (isinstance(out, (list, tuple)) and len(out) == 2):
            raise TypeError(
                "custom_gradient function used with with_logs=True must return a VJP "
                f"function producing a pair (in_cts, logs), but the VJP function returned {out}.")
        in_cts, logs = out
        if logs is not None and type(logs) is not dict:
            raise TypeError(
                "custom_gradient function used with with_logs=True must return a VJP "
                "function whose second output is None or a dict of backward-pass log "
                f"entries, but got {type(logs).__name__}.")
        return in_cts, logs
    return checked


def custom_gradient(fun: Callable[..., tuple[Any, Callable[..., Any]]] | None = None, *,
                    with_logs: bool = False) -> Any:
    """``fun(*args)`` returns ``(value, vjp)`` with ``vjp(cotangent)`` giving one cotangent per
    argument (a bare value when there is one argument): the result computes ``value`` and
    differentiates through ``vjp``. ``with_logs``: ``vjp`` returns ``(cotangents, logs)``,
    the logs a dict of the backward pass's (``VJP.with_logs``) or None. Without ``fun``, the
    decorator with these options."""
    if fun is None:
        return lambda f: custom_gradient(f, with_logs=with_logs)
    user = fun

    def value_only(*args: Any, **kwargs: Any) -> Any:
        return user(*args, **kwargs)[0]

    wrapped = custom_vjp(value_only)

    def fwd(*args: Any, **kwargs: Any) -> tuple[Any, _VJPResiduals]:
        ans, rule = user(*args, **kwargs)
        ans_leaves, ans_tree = tree_util.tree_flatten((ans,))
        jaxpr, out_tree = _traced(_rule_with_logs(rule) if with_logs else rule, ans_tree,
                                  [canonical_aval_of(x) for x in ans_leaves])
        cts_tree = tree_util.treedef_children(out_tree)[0] if with_logs else out_tree
        single = tree_util.treedef_is_leaf(cts_tree)
        return ans, _VJPResiduals(jaxpr, out_tree, single, list(jaxpr.consts))

    def cotangents(res: _VJPResiduals, cts: Any) -> Any:
        leaves = tree_util.tree_leaves(cts)
        return tree_util.tree_unflatten(res.cts_in_tree,
                                        eval_jaxpr(res.jaxpr, res.consts, *leaves))

    def bwd(res: _VJPResiduals, cts: Any) -> tuple[Any, ...]:
        cts_in = cotangents(res, cts)
        return (cts_in,) if res.single else tuple(cts_in)

    def bwd_with_logs(res: _VJPResiduals, cts: Any) -> tuple[tuple[Any, ...], Any]:
        cts_in, logs = cotangents(res, cts)
        return ((cts_in,) if res.single else tuple(cts_in)), logs

    if with_logs:
        wrapped.defvjp_with_logs(fwd, bwd_with_logs)
    else:
        wrapped.defvjp(fwd, bwd)
    return wrapped


__all__ = ["closure_convert", "custom_gradient"]
