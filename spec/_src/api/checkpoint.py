"""Gradient checkpointing: ``checkpoint`` (alias ``remat``), ``checkpoint_name``,
the ``checkpoint_policies`` and the residual inspectors ``saved_residuals``
and ``print_saved_residuals`` (JAX's ``jax.ad_checkpoint``).

``checkpoint(f)`` stages ``f`` into a jaxpr and binds the ``remat2``
primitive with it (spec/_src/lax/remat.py): same values as ``f``; under
``grad``/``vjp``/``linearize`` only the values the policy allows (and the
checkpoint's inputs) are saved, the rest is recomputed on the tangent side.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spec._src.api.autodiff import vjp
from spec._src.core import tree_util
from spec._src.core.source_info import summarize
from spec._src.core.interpreter import Eqn, Jaxpr, Literal, Var, canonical_aval_of, trace_to_jaxpr
from spec._src.lax.reductions import reduce_precision_p
from spec._src.lax.remat import Offloadable, name_p, remat_p
from spec._src.core.types import ArrayType

# ------------------------------------------------------------------ policies


def everything_saveable(*_: Any, **__: Any) -> bool:
    """Save every value: differentiation as without ``checkpoint``."""
    return True


def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Save nothing but the checkpoint's inputs (the default policy)."""
    return False


def _is_prim(prim: Any, name: str) -> bool:
    return getattr(prim, "name", None) == name


def dots_saveable(prim: Any, *_: Any, **__: Any) -> bool:
    """Save the results of matrix products and convolutions."""
    return _is_prim(prim, "dot_general") or _is_prim(prim, "conv_general_dilated") \
        or _is_prim(prim, "scaled_matmul_wrapper")


checkpoint_dots = dots_saveable


def dots_with_no_batch_dims_saveable(prim: Any, *args: Any, **params: Any) -> bool:
    """Save the results of ``dot_general`` without batch dimensions."""
    if _is_prim(prim, "dot_general"):
        (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
        if not lhs_b and not rhs_b:
            return True
    if _is_prim(prim, "scaled_matmul_wrapper"):
        return bool(args[0].shape[0] == 1)
    return False


def save_anything_except_these_names(*names_not_to_save: str) -> Callable[..., bool]:
    """As in JAX 0.12 this policy saves every value, named or not (JAX marks
    it as not doing what its name says)."""
    del names_not_to_save
    return lambda *_, **__: True


def save_any_names_but_these(*names_not_to_save: str) -> Callable[..., bool]:
    """Save the values named by ``checkpoint_name``, except the given names."""
    excluded = frozenset(names_not_to_save)

    def policy(prim: Any, *_: Any, **params: Any) -> bool:
        if prim is name_p:
            return params["name"] not in excluded
        return False

    return policy


def save_only_these_names(*names_which_can_be_saved: str) -> Callable[..., bool]:
    """Save only the values named (by ``checkpoint_name``) with these names."""
    allowed = set(names_which_can_be_saved)

    def policy(prim: Any, *_: Any, **params: Any) -> bool:
        if prim is name_p:
            return params["name"] in allowed
        return False

    return policy


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable[..., Any]:
    """As ``dots_with_no_batch_dims_saveable``, the products offloaded to
    ``offload_dst`` instead of kept."""
    def policy(prim: Any, *_: Any, **params: Any) -> bool | Offloadable:
        if _is_prim(prim, "dot_general"):
            (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
            if not lhs_b and not rhs_b:
                return Offloadable(offload_src, offload_dst)
        return False

    return policy


def save_and_offload_only_these_names(
        *, names_which_can_be_saved: Iterable[str], names_which_can_be_offloaded: Iterable[str],
        offload_src: str, offload_dst: str) -> Callable[..., Any]:
    """As ``save_only_these_names``; the values named in
    ``names_which_can_be_offloaded`` are offloaded to ``offload_dst``."""
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    both = saved & offloaded
    if both:
        raise ValueError(
            "The names should be exclusive and should not intersect in "
            "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
            f"names_which_can_be_saved={saved}, names_which_can_be_offloaded={offloaded} "
            f"and the intersection={both}")

    def policy(prim: Any, *_: Any, **params: Any) -> bool | Offloadable:
        if prim is name_p and params["name"] in saved:
            return True
        if prim is name_p and params["name"] in offloaded:
            return Offloadable(offload_src, offload_dst)
        return False

    return policy


def save_from_both_policies(policy_1: Callable[..., Any], policy_2: Callable[..., Any]
                            ) -> Callable[..., Any]:
    """A value is saveable when either policy says so."""
    if policy_1 is everything_saveable or policy_2 is everything_saveable:
        return everything_saveable
    if policy_1 is nothing_saveable:
        return policy_2
    if policy_2 is nothing_saveable:
        return policy_1

    def policy(prim: Any, *args: Any, **params: Any) -> bool:
        out1 = policy_1(prim, *args, **params)
        out2 = policy_2(prim, *args, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise ValueError(  # noqa: TRY004 (the class JAX raises)
                f"save_from_both_policies: both policies must answer a bool; "
                f"got {out1!r} and {out2!r}")
        return out1 or out2

    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
)


# ------------------------------------------------------------------- the API


def _static_argnums(static_argnums: Any, n_args: int) -> frozenset[int]:
    if type(static_argnums) is int:
        static_argnums = (static_argnums,)
    elif not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
        raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` "
                        f"must be an int or a tuple of ints, but got value {static_argnums}")
    if not all(-n_args <= d < n_args for d in static_argnums):
        raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` "
                         "must name positions in -len(args) <= d < len(args); got "
                         f"{static_argnums} for len(args) = {n_args}")
    return frozenset(d % n_args for d in static_argnums)


def checkpoint(fun: Callable[..., Any], *, prevent_cse: bool | Sequence[bool] = True,
               policy: Callable[..., Any] | None = None,
               static_argnums: int | tuple[int, ...] = (),
               static_argnames: str | Iterable[str] = ()) -> Callable[..., Any]:
    """``fun`` with the same values, whose reverse-mode derivative saves only
    what ``policy`` allows (default: nothing but the inputs) and recomputes
    the rest. Static arguments are fixed Python values (closed over)."""
    cse: bool | tuple[bool, ...]
    if isinstance(prevent_cse, Sequence):
        cse = tuple(prevent_cse)
    elif isinstance(prevent_cse, bool):
        cse = prevent_cse
    else:
        raise TypeError(f"prevent_cse must be a bool or tuple of bools, got "
                        f"type(prevent_cse)={type(prevent_cse)}")
    argnames = (static_argnames,) if isinstance(static_argnames, str) \
        else tuple(static_argnames)

    @functools.wraps(fun)
    def fun_remat(*args: Any, **kwargs: Any) -> Any:
        statics = _static_argnums(static_argnums, len(args)) if static_argnums != () \
            else frozenset()
        dyn_args = tuple(a for i, a in enumerate(args) if i not in statics)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in argnames}
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        out_store: list[Any] = []

        def flat(*xs: Any) -> list[Any]:
            d_args, d_kwargs = tree_util.tree_unflatten(in_tree, list(xs))
            it = iter(d_args)
            full = [args[i] if i in statics else next(it) for i in range(len(args))]
            out = fun(*full, **{**kwargs, **d_kwargs})
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_store.append(out_tree)
            return list(out_leaves)

        avals = [canonical_aval_of(x) for x in leaves]
        traced, _ = trace_to_jaxpr(flat, avals)
        jaxpr = Jaxpr([], [*traced.constvars, *traced.invars], traced.outvars, traced.eqns,
                      traced.effects)
        consts = list(traced.consts)
        cse_param: bool | tuple[bool, ...] = cse
        if isinstance(cse, tuple):
            per_arg = _cse_prefix(cse, (dyn_args, dyn_kwargs) if dyn_kwargs else dyn_args)
            cse_param = (False,) * len(consts) + per_arg
        outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=cse_param,
                            differentiated=False, policy=policy)
        return tree_util.tree_unflatten(out_store[0], list(outs))

    return fun_remat


def _cse_prefix(prefix: tuple[bool, ...], tree: Any) -> tuple[bool, ...]:
    """A per-argument ``prevent_cse`` tuple broadcast to the argument leaves."""
    args = tree[0] if isinstance(tree, tuple) and len(tree) == 2 \
        and isinstance(tree[1], dict) else tree
    if len(prefix) != len(args):
        raise ValueError(f"prevent_cse has {len(prefix)} entries for {len(args)} arguments")
    out: list[bool] = []
    for flag, arg in zip(prefix, args):
        out.extend([bool(flag)] * len(tree_util.tree_leaves(arg)))
    return tuple(out)


def remat(fun: Callable[..., Any], *, prevent_cse: bool | Sequence[bool] = True,
          policy: Callable[..., Any] | None = None,
          static_argnums: int | tuple[int, ...] = ()) -> Callable[..., Any]:
    """Alias of ``checkpoint``."""
    return checkpoint(fun, prevent_cse=prevent_cse, policy=policy,
                      static_argnums=static_argnums)


def checkpoint_name_fwd(x: Any, name: str) -> Any:
    """``checkpoint_name``, as JAX's forward-pass naming does without its
    remat3 mode."""
    return checkpoint_name(x, name)


def checkpoint_name(x: Any, name: str) -> Any:
    """The identity on every leaf of ``x``, labelled ``name`` for policies."""
    return tree_util.tree_map(functools.partial(name_p.bind, name=name), x)


# ------------------------------------------------------------------ residuals


def _arg_names(f: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any],
               n_leaves: int) -> list[str]:
    """A name per flat argument leaf: the parameter name and the leaf's key
    path (``params[1]['a']``), as JAX's debug info gives them."""
    try:
        sig = inspect.signature(f)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return [""] * n_leaves
    names: list[str] = []
    bound_names = list(bound.arguments)
    for i, _ in enumerate(args):
        pname = bound_names[i] if i < len(bound_names) else f"args[{i}]"
        param = sig.parameters.get(pname)
        if param is not None and param.kind is inspect.Parameter.VAR_POSITIONAL:
            pname = f"{pname}[{i - list(sig.parameters).index(param.name)}]"
        names.extend(pname + tree_util.keystr(p)
                     for p, _ in tree_util.tree_flatten_with_path(args[i])[0])
    for k in sorted(kwargs):
        names.extend(k + tree_util.keystr(p)
                     for p, _ in tree_util.tree_flatten_with_path(kwargs[k])[0])
    return names if len(names) == n_leaves else [""] * n_leaves


def saved_residuals(f: Callable[..., Any], *args: Any, **kwargs: Any
                    ) -> list[tuple[ArrayType, str]]:
    """The residuals ``vjp(f, *args, **kwargs)`` saves, each with where it
    comes from: a literal, a constant, an argument (by name) or the output of
    an operation (``output of sin from file:line:column (function)``, the
    user's line that bound it)."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))

    def flat(*xs: Any) -> list[Any]:
        a, kw = tree_util.tree_unflatten(in_tree, list(xs))
        _, fn = vjp(lambda *ys: f(*ys, **kw), *a)
        return list(tree_util.tree_leaves(fn))

    jaxpr, _ = trace_to_jaxpr(flat, [canonical_aval_of(x) for x in leaves])
    return _describe_residuals(jaxpr, _arg_names(f, args, kwargs, len(leaves)))


def _describe_residuals(jaxpr: Jaxpr, arg_names: Sequence[str]) -> list[tuple[ArrayType, str]]:
    lits = [a for a in jaxpr.outvars if isinstance(a, Literal)]
    # A reduce_precision inserted on a residual is not its producer: look through it.
    subst = {id(e.outvars[0]): e.invars[0] for e in jaxpr.eqns
             if e.primitive is reduce_precision_p}

    def look_through(a: Any) -> Any:
        while id(a) in subst:
            a = subst[id(a)]
        return a

    res = {id(look_through(a)) for a in jaxpr.outvars if isinstance(a, Var)}
    results: list[tuple[ArrayType, str]] = [(a.aval, "from a literal") for a in lits]
    results += [(v.aval, "from a constant") for v in jaxpr.constvars if id(v) in res]
    for i, v in enumerate(jaxpr.invars):
        if id(v) in res:
            src = (f"from the argument {arg_names[i]}" if arg_names[i]
                   else f"from the argument at flattened index {i}")
            results.append((v.aval, src))
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if id(v) in res:
                results.append((v.aval, _describe_output(eqn)))
    return results


def _describe_output(eqn: Eqn) -> str:
    src = summarize(eqn.source_info)
    if eqn.primitive is name_p:
        return f"named '{eqn.params['name']}' from {src}"
    if eqn.primitive.name == "jit":
        return f"output of jitted function '{eqn.params['name']}' from {src}"
    return f"output of {eqn.primitive.name} from {src}"


def print_saved_residuals(f: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Print ``saved_residuals``: one ``f32[3] <description>`` line each."""
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short(True)} {src}")


__all__ = [
    "checkpoint", "checkpoint_dots", "checkpoint_name", "checkpoint_name_fwd",
    "checkpoint_policies",
    "dots_saveable", "dots_with_no_batch_dims_saveable", "everything_saveable",
    "nothing_saveable", "offload_dot_with_no_batch_dims", "print_saved_residuals",
    "save_and_offload_only_these_names", "remat", "save_any_names_but_these",
    "save_anything_except_these_names", "save_from_both_policies", "save_only_these_names",
    "saved_residuals",
]
