"""``custom_vmap_call``: a function with a user-defined vmap rule (``jax.custom_batching``).

Params, as JAX's: ``call`` (the function's jaxpr, its closed-over values the leading
operands), ``rule`` (the rule, called as ``rule(axis_size, in_batched, *args)`` on the
operands' trees: ``(consts, args)``), ``in_tree`` and ``out_tree``. Evaluated, staged and
lowered it is its body. Under vmap the operands' batch axes move to the front and the rule
runs on them (ValueError, JAX's texts, when the trees it returns differ from each other or
from the function's); its outputs are batched at 0 where it says so. Its JVP is another
custom_vmap_call, of the body's JVP, whose rule runs the user's rule on the primals batched
in both primal and tangent and vmaps its JVP over the axes batched in only one of them
(JAX's ``custom_vmap_jvp``). It has no transpose (JAX's reverse mode fails on it too).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core import tree_util
from spec._src.core.interpreter import (
    VMA_FROM_TYPING,
    Jaxpr,
    eval_jaxpr,
    eval_jaxpr_values,
    from_primitive,
    not_applicable,
    sharding_of_call,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import ad, batching
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import instantiate
from spec._src.interpreters.batching import AxisData, BatchDim, bdim_at_front
from spec._src.lowering import control as CL

_NAME = "custom_vmap_call"


def rule_name(rule: Any) -> str:
    return getattr(rule, "__name__", "<unnamed rule>")


def check_vmap_rule_trees(rule: Any, original_out_tree: Any, out_tree: Any,
                          out_batched_tree: Any) -> None:
    if out_tree != out_batched_tree:
        raise ValueError("structure of output value and output batching specification "
                         f"returned by custom vmap rule ({rule_name(rule)}) do not match.\n"
                         f"Output values: {out_tree}\nBatching spec: {out_batched_tree}")
    if out_tree != original_out_tree:
        raise ValueError(f"structure of output returned by custom vmap rule "
                         f"({rule_name(rule)}) does not match that of original "
                         f"custom-vmapped function.\nOriginal output: {original_out_tree}\n"
                         f"Rule output: {out_tree}")


class ClosedRule:
    """The user's rule on the operands' trees ``(consts, args)``; closed-over values are
    never batched."""

    def __init__(self, rule: Callable[..., Any]) -> None:
        self.rule = rule
        self.__name__ = rule_name(rule)

    def __call__(self, axis_size: int, all_in_batched: Any, *all_args: Any) -> Any:
        _, args = all_args
        consts_batched, in_batched = all_in_batched
        assert not any(tree_util.tree_leaves(consts_batched)), consts_batched
        return self.rule(axis_size, list(in_batched), *args)

    def __str__(self) -> str:
        return str(self.rule)

    __repr__ = __str__


# ------------------------------------------------------------------ sections

def _type(*avals: ArrayType, call: Jaxpr, rule: Any, in_tree: Any, out_tree: Any
          ) -> list[ArrayType]:
    expected = call.in_avals
    require(len(avals) == len(expected), _NAME, "C1",
            f"called with {len(avals)} operands, call takes {len(expected)}")
    for i, (got, want) in enumerate(zip(avals, expected)):
        require(got.shape == want.shape and got.dtype == want.dtype, _NAME, "C2",
                f"operand {i} has type {got}, call expects {want}")
    return list(call.out_avals)


def _impl(*args: Any, call: Jaxpr, **params: Any) -> Sequence[Any]:
    return eval_jaxpr_values(call, [], args)


def _batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *, call: Jaxpr, rule: Any,
           in_tree: Any, out_tree: Any) -> tuple[list[Any], list[BatchDim]]:
    moved = [x if d is None else bdim_at_front(x, d, axis.size, axis.explicit_mesh_axis)
             for x, d in zip(args, dims)]
    in_batched = tree_util.tree_unflatten(in_tree, [d is not None for d in dims])
    out, out_batched = rule(axis.size, in_batched, *tree_util.tree_unflatten(in_tree, moved))
    flat_outs, tree1 = tree_util.tree_flatten(out)
    flat_batched, tree2 = tree_util.tree_flatten(out_batched)
    check_vmap_rule_trees(rule, out_tree, tree1, tree2)
    return flat_outs, [0 if b else None for b in flat_batched]


def _front(x: Any, d: BatchDim) -> Any:
    return x if d is None else batching.moveaxis(x, d, 0)


def _jvp_of_rule(rule: Any, out_tree: Any) -> Callable[..., Any]:
    def jvp_rule(axis_size: int, in_batched: Any, primals: Any, tangents: Any) -> Any:
        batched_ps, batched_ts = in_batched
        both = tree_util.tree_map(operator.and_, batched_ps, batched_ts)
        extra_ps = tree_util.tree_map(lambda p, t: 0 if p and not t else None,
                                      batched_ps, batched_ts)
        extra_ts = tree_util.tree_map(lambda p, t: 0 if t and not p else None,
                                      batched_ps, batched_ts)
        flat_ps_ts, tree_ps_ts = tree_util.tree_flatten((primals, tangents))
        flat_extra, _ = tree_util.tree_flatten((extra_ps, extra_ts), is_leaf=lambda x: x is None)
        both_out: list[Any] = []

        def jvp_flat(*flat: Any) -> list[Any]:
            ps, ts = tree_util.tree_unflatten(tree_ps_ts, list(flat))
            flat_p, p_tree = tree_util.tree_flatten(ps)

            def to_jvp(*xs: Any) -> list[Any]:
                out, out_batched = rule(axis_size, both, *tree_util.tree_unflatten(p_tree,
                                                                                   list(xs)))
                check_vmap_rule_trees(rule, out_tree, tree_util.tree_structure(out),
                                      tree_util.tree_structure(out_batched))
                both_out[:] = [out_batched]
                return list(tree_util.tree_leaves(out))
            p_outs, t_outs = ad.jvp_flat(to_jvp, flat_p, tree_util.tree_leaves(ts))
            return [*p_outs, *(instantiate(t) for t in t_outs)]
        outs, out_dims = batching.batch_flat(jvp_flat, AxisData(axis_size), flat_ps_ts,
                                             flat_extra, named=False)
        n = len(outs) // 2
        outs = [_front(x, d) for x, d in zip(outs, out_dims)]
        extra = [d is not None for d in out_dims]
        mutual = tree_util.tree_leaves(both_out[0])
        out_ps = tree_util.tree_unflatten(out_tree, outs[:n])
        out_ts = tree_util.tree_unflatten(out_tree, outs[n:])
        batched_ps_out = tree_util.tree_unflatten(
            out_tree, [a or b for a, b in zip(mutual, extra[:n])])
        batched_ts_out = tree_util.tree_unflatten(
            out_tree, [a or b for a, b in zip(mutual, extra[n:])])
        return (out_ps, out_ts), (batched_ps_out, batched_ts_out)
    jvp_rule.__name__ = rule_name(rule)
    return jvp_rule


def _jvp_call(call: Jaxpr) -> Jaxpr:
    """The body's JVP as a jaxpr from (primals, tangents) to (primals, tangents), every
    tangent instantiated."""
    n = len(call.invars)

    def body(*xs: Any) -> list[Any]:
        p_outs, t_outs = ad.jvp_flat(lambda *a: eval_jaxpr(call, [], *a), xs[:n], xs[n:],
                                     named=False)
        return [*p_outs, *(instantiate(t) for t in t_outs)]
    avals = [*call.in_avals, *(a.tangent_type() for a in call.in_avals)]
    traced, _ = trace_to_jaxpr(body, avals)
    assert not traced.consts
    return Jaxpr([], list(traced.invars), traced.outvars, traced.eqns, traced.effects)


def _jvp(primals: list[Any], tangents: list[Any], *, call: Jaxpr, rule: Any, in_tree: Any,
         out_tree: Any) -> tuple[list[Any], list[Any]]:
    if ad.in_linearize_rule():
        # The primal outputs come out of one call with the tangents: JAX's linearize
        # cannot split them off, and says so.
        raise ValueError("Linearization failed to produce known values for all output "
                         "primals. This is typically caused by attempting to differentiate a "
                         "function uses an operation that does not support reverse-mode "
                         "autodiff.")
    tangents = [instantiate(t) for t in tangents]
    jvp_call = _jvp_call(call)
    outs = custom_vmap_call_p.bind(
        *primals, *tangents, call=jvp_call, rule=_jvp_of_rule(rule, out_tree),
        in_tree=tree_util.treedef_tuple((in_tree, in_tree)),
        out_tree=tree_util.treedef_tuple((out_tree, out_tree)))
    n = len(outs) // 2
    return list(outs[:n]), list(outs[n:])


custom_vmap_call_p = declare(
    _NAME, lowering=CL.inline("call"), typing=_type, impl=_impl, multiple_results=True,
    jvp=_jvp, transpose=not_applicable(
        "JAX defines no transpose for custom_vmap_call: reverse mode through a custom_vmap "
        "function fails at linearization"),
    batch=_batch, sharding=sharding_of_call("call"),
    doc="A function with a user-defined vmap rule.",
    per_device=from_primitive(PD.call_program("call")), vma_rule=VMA_FROM_TYPING)


__all__ = ["ClosedRule", "custom_vmap_call_p"]
