"""The autodiff transforms users call: ``jvp``, ``linearize``, ``vjp``,
``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``, ``jacobian``,
``hessian``, ``linear_transpose``; with JAX's signatures, argument checks and
error messages (in spec's words). The machinery is in ``spec._src.interpreters.ad``."""

from __future__ import annotations

import inspect
import re

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.api.vmap import vmap
from spec._src.core.hitypes import is_high
from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.core.array import from_numpy
from spec._src.core.interpreter import (
    Jaxpr,
    canonical_aval_of,
    canonical_value,
    eval_jaxpr,
    trace_to_jaxpr,
)
from spec._src.core.literals import typed_scalar
from spec._src.core.state_types import is_ref_type
from spec._src.core.types import ArrayType
from spec._src.interpreters import ad
from spec._src.interpreters.accumulators import reverse_mode
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, zeros_like_aval
from spec._src.lax import shaping as L
from spec._src.lax import slicing
from spec._src.lax.reshard import reshard_p
from spec._src.lax.shaping import _convert_element_type
from spec._src.numpy import creation
from spec._src.numpy import dtypes as jnp_dtypes

# ------------------------------------------------------------------ helpers


def _flatten_fun(fun: Callable[..., Any], in_tree: Any,
                 out_store: dict[str, Any], has_aux: bool = False) -> Callable[..., list[Any]]:
    """``fun`` over flat leaves; the output tree (and aux) land in ``out_store``."""

    def flat(*leaves: Any) -> list[Any]:
        args = tree_util.tree_unflatten(in_tree, list(leaves))
        out = fun(*args)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair "
                                f"(output, auxiliary data), got {type(out).__name__}")
            out, aux = out
            out_store["raw_aux"] = aux
        out_leaves, out_tree = tree_util.tree_flatten(out)
        out_store["tree"] = out_tree
        for leaf in out_leaves:
            _check_output_leaf(leaf)
        return out_leaves

    return flat


def _aux(store: dict[str, Any]) -> Any:
    """The auxiliary output, as values of the enclosing trace: tracers of the
    (finished) differentiation trace are replaced by their primals."""
    def lower(x: Any) -> Any:
        while isinstance(x, ad.JVPTracer) and not x._trace.valid:
            x = x.primal
        return x
    return tree_util.tree_map(lower, store["raw_aux"])


def _check_output_leaf(leaf: Any) -> None:
    try:
        canonical_aval_of(leaf)
    except TypeError:
        raise TypeError(f"The function to differentiate returned a value of type "
                        f"{type(leaf).__name__}, which is not a valid JAX type") from None


def _materialize(t: Any, aval: ArrayType | None = None) -> Any:
    """A tangent or cotangent for the user: zeros are materialised (float0
    zeros as NumPy arrays, as JAX returns them)."""
    if type(t) is Zero:
        return zeros_like_aval(t.aval)
    return t


# ---------------------------------------------------------------------- jvp


def jvp(fun: Callable[..., Any], primals: Any, tangents: Any,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), d fun(primals) . tangents)``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents "
                        f"have tree structure {t_tree}.")
    for p, t in zip(p_leaves, t_leaves):
        _check_jvp_pair(p, t)
    store: dict[str, Any] = {}
    flat = _flatten_fun(fun, p_tree, store, has_aux)
    tangents_in = [Zero(canonical_aval_of(p).tangent_type()) if _is_float0(t) else t
                   for p, t in zip(p_leaves, t_leaves)]
    with reverse_mode(False):
        p_out, t_out = ad.jvp_flat(flat, p_leaves, tangents_in)
    out_tree = store["tree"]
    primals_out = tree_util.tree_unflatten(out_tree, p_out)
    tangents_out = tree_util.tree_unflatten(out_tree, [_materialize(t) for t in t_out])
    if has_aux:
        return primals_out, tangents_out, _aux(store)
    return primals_out, tangents_out


def _is_float0(t: Any) -> bool:
    return isinstance(t, np.ndarray) and t.dtype == T.FLOAT0


def _check_jvp_pair(p: Any, t: Any) -> None:
    p_aval = canonical_aval_of(p)
    if is_high(p_aval):
        return  # as in JAX, only array primals are checked against their tangents
    t_aval = ArrayType(np.shape(t), T.FLOAT0, False) if _is_float0(t) else canonical_aval_of(t)
    want = p_aval.tangent_type().dtype
    if t_aval.dtype != want:
        raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be "
                        "equal, or in case of int/bool primal dtype the tangent dtype must be "
                        f"float0. Got primal dtype {p_aval.dtype.name} and so expected tangent "
                        f"dtype {want.name}, but got tangent dtype {t_aval.dtype.name} instead.")
    if t_aval.shape != p_aval.shape:
        raise ValueError("jvp called with different primal and tangent shapes; Got primal "
                         f"shape {p_aval.shape} and tangent shape as {t_aval.shape}")


# ---------------------------------------------------------------- linearize


def _call_flat(fun: Callable[..., Any], args: Sequence[Any], store: dict[str, Any],
               has_aux: bool) -> tuple[Callable[..., list[Any]], list[Any], Any]:
    leaves, in_tree = tree_util.tree_flatten(tuple(args))
    return _flatten_fun(fun, in_tree, store, has_aux), leaves, in_tree


def linearize(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(fun(*primals), f_jvp)`` where ``f_jvp`` is the linear map of tangents."""
    store: dict[str, Any] = {}
    flat, leaves, in_tree = _call_flat(fun, primals, store, has_aux)
    with reverse_mode(False):
        lin = ad.linearize_flat(flat, leaves)
    out_tree = store["tree"]
    primal_avals = [canonical_aval_of(x) for x in leaves]

    def f_jvp(*tangents: Any) -> Any:
        t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
        if t_tree != in_tree:
            raise TypeError(f"expected {in_tree}, got {t_tree}")
        for t, primal in zip(t_leaves, primal_avals):
            _check_linearized_tangent(t, primal)
        outs = eval_jaxpr(lin.jaxpr, lin.jaxpr.consts, *t_leaves)
        return tree_util.tree_unflatten(out_tree, outs)

    primals_out = tree_util.tree_unflatten(out_tree, lin.primals_out)
    if has_aux:
        return primals_out, f_jvp, _aux(store)
    return primals_out, f_jvp


def _value_type(x: Any) -> ArrayType:
    """The type of a tangent or cotangent value handed in (float0 zeros included)."""
    return ArrayType(np.shape(x), T.FLOAT0) if _is_float0(x) else canonical_aval_of(x)


def _same_placed_type(got: ArrayType, want: ArrayType) -> bool:
    """Shape, dtype and memory agree (weak types aside)."""
    return (got.shape == want.shape and got.dtype == want.dtype
            and got.memory_space is want.memory_space)


def _check_linearized_tangent(t: Any, primal: ArrayType) -> None:
    """A tangent handed to a linearized function has its primal's tangent
    type: shape, dtype and memory (weak types aside)."""
    want = primal.tangent_type()
    got = _value_type(t)
    if not _same_placed_type(got, want):
        raise ValueError("linearized function called on tangent values inconsistent with the "
                         f"original primal values:\nGot tangent aval {got} for primal aval "
                         f"{primal} but expected {want}.")


# ---------------------------------------------------------------------- vjp


# The sentinels print as ``Name()`` and compare equal by class, as the
# ``jax.ad`` placeholders do (spec._src.interpreters.ad.Placeholder).
_Sentinel = ad.Placeholder


class NotNeeded(_Sentinel):
    """In ``VJP.args_res``: an argument the backward pass does not read."""


class NotSaveable(_Sentinel):
    """In ``VJP.args_res``: an argument the backward pass reads but that
    ``saveable_args`` excluded; it must be restored before the call."""


# Both sentinels are pytree nodes with no children: flattening a VJP object
# yields no leaves for them.
# Their node data is ``()`` (a dataclass without fields in JAX), so a
# treedef prints ``NotNeeded[()]``.
tree_util.register_pytree_node(NotNeeded, lambda _: ((), ()), lambda _, __: NotNeeded())
tree_util.register_pytree_node(NotSaveable, lambda _: ((), ()), lambda _, __: NotSaveable())


@dataclass(frozen=True)
class _Backward:
    """What a VJP object needs besides its residual values (its pytree aux
    data): the linear jaxpr (without consts), where each of its residuals
    comes from, and the argument and output structure."""

    jaxpr: Jaxpr
    # Per residual (the jaxpr's constvars): ("arg", leaf index) for an
    # argument value saved verbatim, ("opaque", index) for a computed one.
    sources: tuple[tuple[str, int], ...]
    in_tree: Any
    out_tree: Any
    out_avals: tuple[ArrayType, ...]
    arg_paths: tuple[str, ...]
    fun_name: str


class VJP:
    """The function returned by ``vjp``: a pytree whose leaves are the values
    the backward pass needs, in three channels: ``args_res`` (argument values
    saved verbatim, mirroring the arguments), ``opaque_residuals`` (values
    computed by the forward pass) and ``structured_residuals`` (one entry
    per call, loop or custom rule that saves named residuals, see
    ``ad.inline_call``). Calling it runs the backward pass on a cotangent of
    the output; ``with_logs`` is the same function returning
    ``(cotangents, logs)``, the dict the backward rules logged."""

    def __init__(self, backward: _Backward, args_res: list[Any], opaque_residuals: list[Any],
                 structured_residuals: list[Any],
                 grad_entries: Sequence[Any] | None = None, want_logs: bool = False) -> None:
        self._backward = backward
        self.args_res = args_res
        self.opaque_residuals = opaque_residuals
        self.structured_residuals = structured_residuals
        self.want_logs = want_logs
        # Per argument leaf: a gradient ref, ``GradValue()`` or ``DontWant()``
        # (``with_refs``); None before any binding.
        self._grad_entries = None if grad_entries is None else list(grad_entries)

    def with_refs(self, *entries: Any) -> VJP:
        """This VJP function with gradient refs bound: one entry per argument
        (a pytree like the arguments) that is a ``Ref`` (the gradient is
        added into it in place; the call returns ``GradRef()`` there),
        ``jax.ad.GradValue()`` (returned as a value) or ``jax.ad.DontWant()``
        (not computed; the call returns ``DidntWant()``)."""
        b = self._backward
        flat, tree = tree_util.tree_flatten(entries)
        if tree != b.in_tree:
            raise ValueError(_with_refs_tree_message(b, tree))
        for k, (v, e) in enumerate(zip(b.jaxpr.invars, flat)):
            _check_grad_entry(b, k, v.aval, e)
        return VJP(b, self.args_res, self.opaque_residuals, self.structured_residuals, flat,
                   self.want_logs)

    @property
    def with_logs(self) -> VJP:
        """This VJP function returning ``(cotangents, logs)``."""
        return VJP(self._backward, self.args_res, self.opaque_residuals,
                   self.structured_residuals, self._grad_entries, True)

    @property
    def jaxpr(self) -> Jaxpr:
        return self._backward.jaxpr

    @property
    def in_tree(self) -> Any:
        return self._backward.in_tree

    @property
    def out_tree(self) -> Any:
        return self._backward.out_tree

    def replace(self, **changes: Any) -> VJP:
        """A copy with some of ``args_res``, ``opaque_residuals``,
        ``structured_residuals`` replaced."""
        allowed = {"args_res", "opaque_residuals", "structured_residuals", "want_logs"}
        unknown = set(changes) - allowed
        if unknown:
            raise TypeError(f"VJP.replace got unexpected fields {sorted(unknown)}; "
                            f"expected some of {sorted(allowed)}")
        fields = {k: getattr(self, k) for k in allowed}
        fields.update(changes)
        return VJP(self._backward, list(fields["args_res"]), list(fields["opaque_residuals"]),
                   list(fields["structured_residuals"]), self._grad_entries,
                   bool(fields["want_logs"]))

    def __repr__(self) -> str:
        b = self._backward
        return (f"VJP(in_tree={b.in_tree}, out_tree={b.out_tree}, args_res={self.args_res}, "
                f"opaque_residuals={self.opaque_residuals}, "
                f"structured_residuals={self.structured_residuals})")

    def _residual_values(self) -> list[Any]:
        b = self._backward
        try:
            arg_entries = b.in_tree.flatten_up_to(tuple(self.args_res))
        except (TypeError, ValueError) as err:
            raise ValueError(f"VJP.args_res does not match the structure of the differentiated "
                             f"function's arguments {b.in_tree}: {err}") from None
        missing = [b.arg_paths[i] for kind, i in b.sources
                   if kind == "arg" and type(arg_entries[i]) in (NotSaveable, NotNeeded)]
        if missing:
            # JAX's wording (users match on it), naming each argument by its
            # path and the function by its source location.
            places = "\n".join(f"  * the argument at position {p} of the differentiated "
                               f"function {b.fun_name};" for p in missing)
            raise ValueError(
                "the VJP function was applied before restoring its not-saveable residuals.\n\n"
                "Because `saveable_args` was passed to `jax.vjp`, some argument values that\n"
                "would have been saved for the backward pass were instead replaced with\n"
                "`NotSaveable()` sentinels. Before the VJP function can be applied, these\n"
                "values must be restored, e.g. by assigning to the VJP function's `args_res`\n"
                "attribute. The values not yet restored correspond to:\n" + places)
        return [arg_entries[i] if kind == "arg" else self.opaque_residuals[i]
                for kind, i in b.sources]

    def __call__(self, *cts: Any) -> Any:
        b = self._backward
        ct = cts[0] if len(cts) == 1 else cts
        ct_leaves, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != b.out_tree:
            raise ValueError(f"the VJP function of {b.fun_name} got a cotangent with tree "
                             f"structure {ct_tree}, but the differentiated function's output "
                             f"has structure {b.out_tree}")
        checked = [self._check_ct(c, a) for c, a in zip(ct_leaves, b.out_avals)]
        residuals = self._residual_values()
        entries = self._grad_entries or [ad.GradValue()] * len(b.jaxpr.invars)
        args = [_backward_arg(b, k, v.aval, e)
                for k, (v, e) in enumerate(zip(b.jaxpr.invars, entries))]
        with ad.collecting_logs(self.want_logs) as logs:
            cts_in = ad.backward_pass(b.jaxpr, residuals, args, checked, named=True)
        grads = [_gradient(c, e) for c, e in zip(cts_in, entries)]
        arg_cts = tree_util.tree_unflatten(b.in_tree, grads)
        return (arg_cts, logs) if self.want_logs else arg_cts

    @staticmethod
    def _check_ct(ct: Any, primal_aval: ArrayType) -> Any:
        want = primal_aval.ct_type()
        got = _value_type(ct)
        if not _same_placed_type(got, want):
            raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                             f"function: got {got.str_short()}, but expected "
                             f"{want.str_short()} because the corresponding output of the "
                             f"differentiated function had JAX type {primal_aval.str_short()}")
        if want.dtype == T.FLOAT0:
            return Zero(want)
        return ct


def _arg_name(b: _Backward, k: int) -> str:
    return f"the argument at position {b.arg_paths[k]} of the differentiated function {b.fun_name}"


def _check_grad_entry(b: _Backward, k: int, aval: ArrayType, entry: Any) -> None:
    """JAX's checks of one ``with_refs`` entry against its argument (any
    entry that is neither a Ref nor ``DontWant()`` means ``GradValue()``)."""
    given = getattr(entry, "aval", None)
    if type(entry) is ad.DontWant or given is None or not is_ref_type(given):
        if type(entry) is not ad.DontWant and is_ref_type(aval):
            raise ValueError(
                f"the gradient for {_arg_name(b, k)}, which is Ref-typed, can't be returned as "
                "a value. In the arguments to the VJP function's `with_refs` method, pass a "
                "`Ref` for it, to accumulate the gradient into the ref in-place, or pass "
                "`jax.ad.DontWant()` to skip computing this argument's gradient.")
        return
    want = ad.cotangent_aval(aval)
    if given.shape != want.shape or given.dtype != want.dtype:
        raise ValueError(
            "unexpected JAX type (e.g. shape/dtype) for gradient ref passed to the VJP "
            f"function's `with_refs` method for {_arg_name(b, k)}: the given ref has type "
            f"{given.str_short(False)}, but accumulating this argument's gradient requires a "
            f"ref of type Ref{{{want.str_short(False)}}}")


def _backward_arg(b: _Backward, k: int, aval: ArrayType, entry: Any) -> Any:
    """What the backward pass gets for argument ``k``: where its cotangent goes."""
    if type(entry) is ad.DontWant:
        return ad.NotWanted(aval)
    if is_ref_type(getattr(entry, "aval", None)):
        return ad.RefAccum(ad.cotangent_aval(aval), entry)
    if is_ref_type(aval):
        raise ValueError(
            f"{_arg_name(b, k)} is Ref-typed, so its gradient must be accumulated into a ref, "
            "but no gradient ref was provided. Bind one using the VJP function's `with_refs` "
            "method before applying it, as in `f_vjp.with_refs(grad_ref)(ct)`; the gradient "
            "will be accumulated into `grad_ref` in-place via addition. Or, to skip computing "
            "this argument's gradient, pass `jax.ad.DontWant()` in place of a gradient ref.")
    return UndefinedPrimal(aval)


def _gradient(ct: Any, entry: Any) -> Any:
    if type(entry) is ad.DontWant:
        return ad.DidntWant()
    if is_ref_type(getattr(entry, "aval", None)):
        return ad.GradRef()
    return _materialize(ct)


def _with_refs_tree_message(b: _Backward, tree: Any) -> str:
    lines = "\n".join(f"  * args{path} was a {a} in the primal arguments, but a {c} in the "
                      f"`with_refs` arguments, so {why}."
                      for path, a, c, why in _tree_differences(b.in_tree, tree, ""))
    return (
        "unexpected tree structure in the arguments to a VJP function's `with_refs` method.\n\n"
        "The arguments to `with_refs` must match the pytree structure of the primal\n"
        f"arguments of the differentiated function {b.fun_name},\n"
        "with one entry for each array argument. Each entry must be a `Ref` (to\n"
        "accumulate this argument's gradient into the ref in-place), a\n"
        "`jax.ad.GradValue()` (to have this argument's gradient returned as a value,\n"
        "the default behavior), or a `jax.ad.DontWant()` (to skip computing this\n"
        "argument's gradient). Note that `None` is an empty pytree, so it can't be\n"
        "used as a placeholder entry.\n\n"
        "But the tree structures differ:\n" + lines)


def _node_kind(td: Any) -> tuple[Any, str]:
    data = td.node_data()
    if data is None:
        return None, "pytree leaf"
    kind = data[0]
    n = len(td.children())
    name = getattr(kind, "__name__", str(kind))
    return kind, f"{name} of length {n}" if kind in (tuple, list) else name


def _tree_differences(a: Any, c: Any, path: str) -> list[tuple[str, str, str, str]]:
    """The first places where two tree structures differ (JAX's wording)."""
    ka, da = _node_kind(a)
    kc, dc = _node_kind(c)
    if ka is not kc:
        return [(path, da, dc, "their Python types differ")]
    if ka is None:
        return []
    if len(a.children()) != len(c.children()):
        return [(path, da, dc, "the lengths do not match")]
    if a.node_data() != c.node_data():
        return [(path, da, dc, "their auxiliary data differ")]
    out: list[tuple[str, str, str, str]] = []
    for i, (x, y) in enumerate(zip(a.children(), c.children())):
        out += _tree_differences(x, y, f"{path}[{i}]")
    return out


def _vjp_flatten(v: VJP) -> tuple[list[Any], Any]:
    return [v.args_res, v.opaque_residuals, v.structured_residuals], (v._backward, v.want_logs)


def _vjp_unflatten(aux: tuple[_Backward, bool], children: Sequence[Any]) -> VJP:
    args_res, opaque, structured = children
    backward, want_logs = aux
    return VJP(backward, list(args_res), list(opaque), list(structured), want_logs=want_logs)


tree_util.register_pytree_node(VJP, _vjp_flatten, _vjp_unflatten)


def _saveable_mask(spec: Any, args: tuple[Any, ...]) -> list[bool]:
    """Per argument leaf, whether it may be saved: ``spec`` is a tree of
    bools matched against the arguments loosely (containers only by their
    number of children, dict keys when both are dicts; a bool covers a whole
    subtree)."""
    out: list[bool] = []
    full = "the saveable_args argument to jax.vjp"

    def walk(s: Any, td: Any, where: str) -> None:
        if isinstance(s, bool):  # exactly bool, as JAX (np.bool_ is no flag)
            out.extend([s] * td.num_leaves)
            return
        try:
            kids, _ = tree_util.flatten_one_level(s)
        except ValueError:
            raise ValueError(f"{full} must be a tree of bools, like a tuple-tree (made of bools "
                             f"and tuples only), but {where} is {s!r} of type "
                             f"{type(s).__name__}") from None
        kids = list(kids)
        if td.num_nodes == 1 and td.num_leaves == 1:
            raise ValueError(f"{full} must form a tree prefix of the corresponding values (up "
                             f"to container types), but {where} is a container while the "
                             "corresponding part of the values is a leaf; use a single bool "
                             "there instead")
        td_kids = td.children()
        if len(kids) != len(td_kids):
            raise ValueError(f"{full} must form a tree prefix of the corresponding values (up "
                             "to container types, so containers need only match in their "
                             f"number of children), but {where} has {len(kids)} children "
                             f"while the corresponding container has {len(td_kids)}")
        data = td.node_data()
        if type(s) is dict and data is not None and data[0] is dict \
                and sorted(s) != list(data[1]):
            raise ValueError(f"{full} must form a tree prefix of the corresponding values, "
                             f"but {where} is a dict with keys {sorted(s)} while the "
                             f"corresponding dict has keys {list(data[1])}")
        for k, (si, kid) in enumerate(zip(kids, td_kids)):
            walk(si, kid, f"{where}[{k}]")

    walk(spec, tree_util.tree_structure(args), "saveable_args")
    return out


def _leaf_paths(args: tuple[Any, ...]) -> tuple[str, ...]:
    with_path, _ = tree_util.tree_flatten_with_path(args)
    return tuple("args" + tree_util.keystr(path) for path, _ in with_path)


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False,
        reduce_axes: Sequence[Any] = (), saveable_args: Any = True) -> Any:
    """``(fun(*primals), vjp_fn)``: ``vjp_fn(ct)`` is the cotangent of each primal."""
    store: dict[str, Any] = {}
    flat, leaves, in_tree = _call_flat(fun, primals, store, has_aux)
    # Python-scalar primals become typed scalars, as JAX canonicalizes them.
    leaves = [typed_scalar(x) for x in leaves]
    saveable = _saveable_mask(saveable_args, tuple(primals))
    with reverse_mode(True):
        lin = ad.linearize_flat(flat, leaves)
    out_tree = store["tree"]
    out_avals = tuple(canonical_aval_of(o) for o in lin.primals_out)
    # Classify residuals: argument leaves saved verbatim, or computed values.
    leaf_index: dict[int, int] = {}
    for i, x in enumerate(leaves):
        leaf_index.setdefault(id(x), i)
    sources: list[tuple[str, int]] = []
    needed: dict[int, Any] = {}
    opaque: list[Any] = []
    for c in lin.jaxpr.consts:
        found = leaf_index.get(id(c))
        if found is not None:
            sources.append(("arg", found))
            needed[found] = c
        else:
            sources.append(("opaque", len(opaque)))
            opaque.append(c)
    entries = [(needed[i] if saveable[i] else NotSaveable()) if i in needed else NotNeeded()
               for i in range(len(leaves))]
    args_res = list(tree_util.tree_unflatten(in_tree, entries))
    j = lin.jaxpr
    bare = Jaxpr(j.constvars, j.invars, j.outvars, j.eqns, j.effects)
    backward = _Backward(bare, tuple(sources), in_tree, out_tree, out_avals,
                         _leaf_paths(tuple(primals)), _fun_name(fun))
    fn = VJP(backward, args_res, opaque, list(lin.structured))
    primals_out = tree_util.tree_unflatten(out_tree, lin.primals_out)
    if has_aux:
        return primals_out, fn, _aux(store)
    return primals_out, fn


def _fun_name(fun: Any) -> str:
    """``name at file:line`` of the function's definition (seen through
    wrappers and partials), as JAX names a differentiated function."""
    try:
        fun = inspect.unwrap(fun)
        while isinstance(fun, functools.partial):
            fun = inspect.unwrap(fun.func)
    except ValueError:  # a cycle of __wrapped__
        return "<unknown>"
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", None)
    if code is not None and name is not None:
        return f"{name} at {code.co_filename}:{code.co_firstlineno}"
    try:
        text = str(fun)
    except Exception:
        return "<unknown>"
    builtin = re.match(r"<built-in function (\S+)>", text)
    return builtin.group(1) if builtin else "<unknown>"


def fwd_and_bwd(fun: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``fwd(*args) -> (out, vjp_fn[, aux])`` and ``bwd(vjp_fn, ct)``: the two
    halves of ``vjp``, jitted by default so each compiles once."""
    _check_callable(fun)
    nums = _argnums_tuple(argnums)

    def fwd(*args: Any, **kwargs: Any) -> Any:
        chosen = _inbounds(nums, len(args))
        f_partial, diff_args = _split_diff_args(fun, chosen, args, kwargs)
        return vjp(f_partial, *diff_args, has_aux=has_aux)

    def bwd(f_vjp: VJP, outgrad: Any) -> Any:
        g = f_vjp(outgrad)
        return g[0] if isinstance(argnums, (int, np.integer)) else g

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd


def _inbounds(argnums: tuple[int, ...], n_args: int) -> tuple[int, ...]:
    """Positional indices resolved against ``n_args`` (negative ones from the
    end); an empty tuple is allowed (nothing is differentiated)."""
    for i in argnums:
        if not -n_args <= i < n_args:
            raise ValueError("Positional argument indices, e.g. for `static_argnums`, must have "
                             "value greater than or equal to -len(args) and less than "
                             f"len(args), but got value {i} for len(args) == {n_args}.")
    return tuple(i % n_args for i in argnums)


# --------------------------------------------------------------------- grad


def _argnums_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(argnums, (int, np.integer)):
        return (int(argnums),)
    return tuple(int(a) for a in argnums)


def _check_argnums(argnums: tuple[int, ...], n_args: int,
                   shown: Any = None) -> tuple[int, ...]:
    if not argnums:
        raise TypeError("Argument `argnums` must be an int or a non-empty sequence of ints.")
    most = max(argnums)
    if most >= n_args or min(argnums) < -n_args:
        needed = most + 1 if most >= 0 else -min(argnums)
        shown = argnums if shown is None else shown
        raise TypeError(f"differentiating with respect to argnums={shown} requires at least "
                        f"{needed} positional arguments to be passed by the caller, but got "
                        f"only {n_args} positional arguments.")
    return tuple(a % n_args for a in argnums)


def _check_input_dtype(leaf: Any, holomorphic: bool, allow_int: bool, name: str) -> None:
    try:
        aval = canonical_aval_of(leaf)
    except TypeError:
        raise TypeError(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX type."
                        ) from None
    if is_high(aval):
        return  # a hi type's tangent type is its own choice (to_tangent_aval)
    dt = aval.dtype
    if holomorphic:
        if not T.is_complex(dt):
            raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                            f"but got {dt.name}.")
    elif not T.is_inexact(dt) and not allow_int:
        raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                        f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                        "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_output_dtype(aval: ArrayType, holomorphic: bool, name: str) -> None:
    dt = aval.dtype
    if holomorphic:
        if not T.is_complex(dt):
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                            f"but got {dt.name}.")
    elif T.is_complex(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex outputs, use jax.vjp directly.")
    elif not T.is_float(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For differentiation of functions "
                        "with integer outputs, use jax.vjp directly.")


def _check_jacfwd_input(leaf: Any, holomorphic: bool) -> None:
    """Forward-mode Jacobians take real inputs (complex ones only when
    promised holomorphic): no ``allow_int``."""
    aval = canonical_aval_of(leaf)
    if is_high(aval):
        return  # a hi type's tangent type is its own choice (to_tangent_aval)
    dt = aval.dtype
    if holomorphic:
        if not T.is_complex(dt):
            raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, "
                            f"but got {dt.name}.")
    elif not T.is_float(dt):
        raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                        f"np.floating), but got {dt.name}. For holomorphic differentiation, "
                        "pass holomorphic=True. For differentiation of non-holomorphic "
                        "functions involving complex inputs or integer inputs, use jax.jvp "
                        "directly.")


def _check_jacfwd_output(leaf: Any, holomorphic: bool) -> None:
    """Only a holomorphic jacfwd constrains its outputs (to complex)."""
    dt = canonical_aval_of(leaf).dtype
    if holomorphic and not T.is_complex(dt):
        raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                        f"but got {dt.name}.")


def _split_diff_args(fun: Callable[..., Any], argnums: tuple[int, ...], args: Sequence[Any],
                     kwargs: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``fun`` as a function of only the differentiated arguments."""

    def partial_fun(*diff: Any) -> Any:
        full = list(args)
        for i, v in zip(argnums, diff):
            full[i] = v
        return fun(*full, **kwargs)

    return partial_fun, tuple(args[i] for i in argnums)


def value_and_grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False, holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """``(fun(*args), grad(fun)(*args))`` in one pass."""
    nums = _argnums_tuple(argnums)
    _check_callable(fun)

    @functools.wraps(fun)
    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        chosen = _check_argnums(nums, len(args), argnums)
        f_partial, diff_args = _split_diff_args(fun, chosen, args, kwargs)
        for leaf in tree_util.tree_leaves(diff_args):
            if is_ref_type(getattr(leaf, "aval", None)):
                raise TypeError(
                    "grad cannot differentiate with respect to a Ref-typed argument, because "
                    "the gradient for a ref must itself be accumulated into a ref. Instead, use "
                    "`jax.vjp` and bind a gradient ref using the returned VJP function's "
                    "`with_refs` method. (Ref arguments not selected by grad's argnums are "
                    "fine: they are treated as plumbing, and are not differentiated.)")
            _check_input_dtype(leaf, holomorphic, allow_int, "grad")
        if has_aux:
            ans, vjp_fn, aux = vjp(f_partial, *diff_args, has_aux=True)
        else:
            ans, vjp_fn = vjp(f_partial, *diff_args)
        _check_scalar_output(ans, holomorphic)
        ct = _one_like(ans)
        g = vjp_fn(ct)
        g = g[0] if isinstance(argnums, (int, np.integer)) else g
        return ((ans, aux), g) if has_aux else (ans, g)

    return value_and_grad_f


def _check_callable(fun: Any) -> None:
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")


def _check_scalar_output(ans: Any, holomorphic: bool) -> None:
    leaves = tree_util.tree_leaves(ans)
    if len(leaves) != 1 or not isinstance(ans, type(leaves[0])):
        if not (len(leaves) == 1 and ans is leaves[0]):
            raise TypeError("Gradient only defined for scalar-output functions. Output was "
                            f"{ans}.")
    aval = canonical_aval_of(leaves[0])
    if aval.shape != ():
        raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                        f"{aval.shape}. Reduce the output to a scalar (e.g. output.sum()) or "
                        "use jax.jacobian for a non-scalar output.")
    _check_output_dtype(aval, holomorphic, "grad")


def _one_like(x: Any) -> Any:
    """The seed cotangent of a scalar output: 1 of the output's cotangent type.
    Under a mesh it carries the output's cotangent sharding (with no
    partitions: it is a scalar), which JAX stages as a reshard of the literal."""
    sharding = canonical_aval_of(x).ct_type().sharding
    if sharding is None:
        return L.full_like(x, 1, shape=())
    one = L.full_like(x, 1, shape=())
    return reshard_p.bind(one, dst_sharding=sharding.update(spec=sharding.spec.update(
        partitions=())), concrete_mesh=None)


def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """The gradient of a scalar-output function with respect to ``argnums``."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_f(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        _, g = vg(*args, **kwargs)
        return g

    return grad_f


# ---------------------------------------------------------------- jacobians


def _std_basis(tree: Any) -> Any:
    """The standard basis of ``tree``'s leaves as ``tree``, each leaf with a
    leading axis of the total size: an identity matrix split by leaf."""
    leaves = tree_util.tree_leaves(tree)
    total = sum(canonical_aval_of(x).size for x in leaves)
    dtype = jnp_dtypes.result_type(*leaves)
    return _unravel(tree, 1, None, creation.eye(total, dtype=dtype))


def _unravel(tree: Any, axis: int, example: Any, arr: Any) -> Any:
    """Split ``arr`` along ``axis`` into ``tree``'s leaves (that axis becomes
    each leaf's shape), each cast to the dtype and weak type of ``example``
    (or of its own leaf)."""
    leaves, treedef = tree_util.tree_flatten(tree)
    shape = canonical_aval_of(arr).shape
    axis = axis % len(shape)
    sizes: list[Any] = [np.int64(canonical_aval_of(x).size) for x in leaves]
    parts = slicing.split(arr, sizes, axis) if leaves else []
    out = []
    for part, leaf in zip(parts, leaves):
        want = shape[:axis] + canonical_aval_of(leaf).shape + shape[axis + 1:]
        reshaped = part if canonical_aval_of(part).shape == want else part.reshape(want)
        out.append(_downcast(reshaped, leaf if example is None else example))
    return tree_util.tree_unflatten(treedef, out)


def _downcast(x: Any, example: Any) -> Any:
    """``x`` as ``example``'s dtype and weak type (a complex block of a real
    example keeps its real part), as JAX's Jacobians do."""
    aval = canonical_aval_of(example)
    x_aval = canonical_aval_of(x)
    if x_aval.dtype == T.FLOAT0:
        # A Jacobian block of an integer output (forward mode): zeros. JAX
        # converts the float0 block with NumPy, which cannot make a bool of
        # float0's empty bytes: the same TypeError as JAX's.
        if aval.dtype == np.dtype(bool):
            raise TypeError("a bytes-like object is required, not 'int'")
        zeros = L.full(x_aval.shape, 0, aval.dtype)
        return _convert_element_type(zeros, aval.dtype, aval.weak_type)
    if T.is_complex(x_aval.dtype) and not T.is_complex(aval.dtype):
        x = x.real
    return _convert_element_type(x, aval.dtype, aval.weak_type)


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian by forward mode: the JVP vmapped over the input basis."""
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        chosen = _check_argnums(nums, len(args))
        f_partial, diff_args = _split_diff_args(fun, chosen, args, kwargs)
        for leaf in tree_util.tree_leaves(diff_args):
            _check_jacfwd_input(leaf, holomorphic)

        def push(tangents: Any) -> Any:
            return jvp(f_partial, diff_args, tangents, has_aux=has_aux)

        out_axes = (None, -1, None) if has_aux else (None, -1)
        res = vmap(push, out_axes=out_axes)(_std_basis(diff_args))
        y, jac = res[0], res[1]
        for leaf in tree_util.tree_leaves(y):
            _check_jacfwd_output(leaf, holomorphic)
        example = diff_args[0] if isinstance(argnums, (int, np.integer)) else diff_args
        jac_tree = tree_util.tree_map(lambda y_leaf, j: _unravel(example, -1, y_leaf, j),
                                      y, jac)
        return (jac_tree, res[2]) if has_aux else jac_tree

    return jacfun


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable[..., Any]:
    """The Jacobian by reverse mode: the VJP vmapped over the output basis."""
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        chosen = _check_argnums(nums, len(args))
        f_partial, diff_args = _split_diff_args(fun, chosen, args, kwargs)
        for leaf in tree_util.tree_leaves(diff_args):
            _check_input_dtype(leaf, holomorphic, allow_int, "jacrev")
        res = vjp(f_partial, *diff_args, has_aux=has_aux)
        y, pullback = res[0], res[1]
        for leaf in tree_util.tree_leaves(y):
            _check_output_dtype(canonical_aval_of(leaf), holomorphic, "jacrev")
        jac = vmap(pullback)(_std_basis(y))
        is_int = isinstance(argnums, (int, np.integer))
        jac = jac[0] if is_int else jac
        example = diff_args[0] if is_int else diff_args
        jac_tree = tree_util.tree_map(lambda x_leaf, j: _unravel(y, 0, x_leaf, j), example, jac)
        jac_tree = tree_util.tree_transpose(tree_util.tree_structure(example),
                                            tree_util.tree_structure(y), jac_tree)
        return (jac_tree, res[2]) if has_aux else jac_tree

    return jacfun


jacobian = jacrev


def _like(block: Any, example: ArrayType) -> Any:
    """A Jacobian block takes the dtype and weak type of its example leaf
    (the output for jacfwd, the input for jacrev), as in JAX."""
    return _convert_element_type(block, example.dtype, example.weak_type)


def hessian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable[..., Any]:
    """``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


# -------------------------------------------------------- linear_transpose


def linear_transpose(fun: Callable[..., Any], *primals: Any,
                     reduce_axes: Sequence[Any] = ()) -> Callable[..., Any]:
    """The transpose of a linear ``fun`` at the types of ``primals``: real or
    complex (or float0) inputs and outputs, or integer ones throughout."""
    leaves, in_tree = tree_util.tree_flatten(tuple(primals))
    in_avals = [canonical_aval_of(x) for x in leaves]
    store: dict[str, Any] = {}
    flat = _flatten_fun(fun, in_tree, store)
    # JAX traces the function by partial evaluation, which forwards no
    # identity of a value computed from the inputs: it is transposed.
    jaxpr, _ = trace_to_jaxpr(flat, in_avals, forwards_identities=False)
    out_tree = store["tree"]
    out_avals = jaxpr.out_avals
    dts = [a.dtype for a in (*in_avals, *out_avals)]
    integer = all(d == T.FLOAT0 or T.is_int(d) for d in dts)
    if not (all(d == T.FLOAT0 or T.is_inexact(d) for d in dts) or integer):
        ins = [np.dtype(a.dtype) for a in in_avals]
        outs = [np.dtype(a.dtype) for a in out_avals]
        raise TypeError("linear_transpose only supports [float, complex, or float0] -> "
                        "[float, complex, or float0], and integer -> integer functions, "
                        f"but got {ins} -> {outs}.")
    # As JAX, what does not depend on the inputs (a control-flow primitive's
    # known part included) is computed now, under the current trace; the
    # transpose reads it as residuals.
    split = ad.partial_eval_jaxpr(jaxpr, [True] * len(in_avals), True)
    residuals = eval_jaxpr(split.known, split.known.consts)
    unknown = split.unknown
    linear = Jaxpr(unknown.invars[:split.num_res], unknown.invars[split.num_res:],
                   unknown.outvars, unknown.eqns, consts=list(residuals))

    def transposed(*cts: Any) -> Any:
        ct = cts[0] if len(cts) == 1 else cts
        ct_leaves, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError("cotangent tree does not match function output, expected "
                            f"{out_tree} but got {ct_tree}")
        for c, a in zip(ct_leaves, out_avals):
            got = canonical_aval_of(c)
            if got.shape != a.shape or got.dtype != a.dtype \
                    or got.memory_space is not a.memory_space:
                raise TypeError("cotangent type does not match function output, expected "
                                f"{tuple(out_avals)!r} but got {ct_leaves!r}")
        args = [UndefinedPrimal(a) for a in in_avals]
        ct_in = [Zero(a.ct_type()) if a.dtype == T.FLOAT0 else c
                 for c, a in zip(ct_leaves, out_avals)]
        ad.integer_cotangents[0], was = integer, ad.integer_cotangents[0]
        try:
            out = ad.backward_pass(linear, linear.consts, args, ct_in, named=True)
        finally:
            ad.integer_cotangents[0] = was
        # A program that computes something returns Arrays (JAX's jnp
        # functions run as calls); the identity hands the cotangent back.
        res = [_materialize(c) for c in out]
        if jaxpr.eqns:
            res = [_on_device(r) for r in res]
        return tree_util.tree_unflatten(in_tree, res)

    return transposed


def _on_device(x: Any) -> Any:
    """A host cotangent (NumPy value or Python scalar) as an Array."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != T.FLOAT0:
        return from_numpy(x)
    if T.is_python_scalar(x):
        return from_numpy(canonical_value(x)[0], weak_type=not isinstance(x, bool))
    return x


__all__ = ["NotNeeded", "NotSaveable", "VJP", "fwd_and_bwd", "grad", "hessian", "jacfwd",
           "jacobian", "jacrev", "jvp", "linear_transpose",
           "linearize", "value_and_grad", "vjp"]
