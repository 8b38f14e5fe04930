"""Hijax primitives: user-defined primitives with their own differentiation
and batching rules (JAX's ``jax.experimental.hijax``).

A user primitive is a subclass of ``HiPrim`` (documented as
``VJPHiPrimitive``) whose instances fix the operand types (``in_avals``),
the result type (``out_aval``, any pytree of types) and static ``params``.
Calling an instance binds ONE declared primitive, ``hijax``, whose equation
param ``prim`` is the instance: every rule section of the declaration
dispatches to the instance's methods, so a user primitive goes through the
same rule mechanism as spec's own:

- typing: the operands must have the ``in_avals`` types (H1, H2), the
  results are the ``out_aval`` leaves (H3);
- impl: ``expand`` traced once per instance to a jaxpr and evaluated (as
  JAX lowers it); an ``expand`` that branches on values runs on them;
- jvp: the ``jvp`` method (forward mode), or, when reverse mode linearizes
  through the legacy path, ``vjp_fwd`` and the linear ``hijax_linearized``;
- linearize (direct): ``vjp_fwd`` under ``vjp``/``grad``, ``lin`` and
  ``linearized`` under ``linearize``;
- transpose: the ``transpose`` method (a primitive linear in some inputs);
  ``hijax_linearized`` transposes to ``vjp_bwd`` with gradient accumulators;
- batch: ``batch``, or by default ``batch_dim_rule`` giving the output's
  batch dimension and ``VmapOf`` (the primitive with every rule vmapped);
- printing: ``ClassName[params] operands`` as JAX prints it.

The typing constraints a user primitive is checked against are numbered
H1..H9 (SPEC.md, "Hijax primitives") and quoted in the errors
(``hijax_checks`` checks the rules' outputs).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from spec._src.core import pretty as pp
from spec._src.core import tree_util
from spec._src.core.array import Array
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.hitypes import is_high, plain_aval
from spec._src.core.hitypes import (
    AbstractValue,
    HiPspec,
    HiType,
    MappingSpec,
    aval_method,
    aval_property,
    register_hitype,
)
from spec._src.core.literals import typed_scalar
from spec._src.core.interpreter import (
    Eqn,
    EvalTrace,
    Jaxpr,
    PpContext,
    VMA_FROM_TYPING,
    Tracer,
    canonical_aval_of,
    current_trace,
    eval_jaxpr,
    eval_jaxpr_values,
    not_applicable,
    pp_params,
    pp_vars,
    set_current_trace,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, primitive, require
from spec._src.core.state_types import RefEffect, RefType
from spec._src.core.types import ArrayType
from spec._src.api import hijax_checks as checks
from spec._src.api.autodiff import linear_transpose
from spec._src.interpreters import ad, batching
from spec._src.interpreters import spmd
from spec._src.interpreters.accumulators import (
    GradAccum,
    NullAccum,
    ValAccum,
    is_reverse_mode,
)
from spec._src.interpreters.ad import RefAccum
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, instantiate, zeros_like_aval
from spec._src.interpreters.ad_util import is_undefined_primal as is_undefined_primal
from spec._src.interpreters.batching import AxisData
from spec._src.lowering.emitter import LoweringContext, lower_body

# ======================================================= types of the API


ShapedArray = ArrayType
AbstractRef = RefType


class EffectTypeSet:
    """A set of effect types (JAX's ``effects.EffectTypeSet``)."""

    def __init__(self, *types: type) -> None:
        self._types: set[type] = set(types)

    def add_type(self, effect_type: type) -> None:
        self._types.add(effect_type)

    def contains(self, eff: Any) -> bool:
        return any(isinstance(eff, t) for t in self._types)

    def filter_not_in(self, effs: Any) -> list[Any]:
        return [e for e in effs if not self.contains(e)]


# The effects control flow (cond, while_loop, scan) accepts in its bodies:
# spec's only effects are ref effects.
control_flow_allowed_effects = EffectTypeSet(RefEffect)


@dataclass(frozen=True)
class TransformedRef:
    """A view of a ref through a sequence of indexers (``ref.at[i][j]``):
    reading applies them in order, writing goes through one indexer."""

    ref: Any
    transforms: tuple[Any, ...]

    @property
    def at(self) -> _RefIndexer:
        return _RefIndexer(self.ref, self.transforms)

    def __getitem__(self, idx: Any) -> Any:
        value = self.ref[self.transforms[0]] if self.transforms else self.ref[...]
        for t in (*self.transforms[1:], idx):
            value = value[t]
        return value

    def __setitem__(self, idx: Any, value: Any) -> None:
        if len(self.transforms) != 0:
            raise NotImplementedError("writing through a TransformedRef with indexers: "
                                      "index the ref directly")
        self.ref[idx] = value


@dataclass(frozen=True)
class _RefIndexer:
    ref: Any
    transforms: tuple[Any, ...]

    def __getitem__(self, idx: Any) -> TransformedRef:
        return TransformedRef(self.ref, (*self.transforms, idx))


# ============================================================ tree helpers


def _flatten(tree: Any) -> tuple[list[Any], Any]:
    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=lambda x: isinstance(x, Zero))
    return list(leaves), treedef


def _leaves_checked(treedef: Any, tree: Any, what: str, name: str) -> list[Any]:
    """The leaves of ``tree``, which must have ``treedef``'s structure (H4)."""
    leaves, got = _flatten(tree)
    if got != treedef:
        raise TypeError(f"{name} H4: {what} has tree structure {got}, expected {treedef}")
    return leaves


def _leaves_up_to(treedef: Any, tree: Any) -> list[Any]:
    """``tree`` flattened up to ``treedef``; a ``None`` entry of a top-level
    tuple stands for every leaf under it (a rule's "no cotangent")."""
    children = treedef.children()
    if isinstance(tree, (tuple, list)) and len(tree) == len(children) \
            and treedef.node_data() is not None and treedef.node_data()[0] in (tuple, list):
        out: list[Any] = []
        for sub, c in zip(children, tree):
            out.extend([None] * sub.num_leaves if c is None else _leaves_up_to(sub, c))
        return out
    if tree is None:
        return [None] * treedef.num_leaves
    return list(treedef.flatten_up_to(tree))


def _broadcast_flags(flags: Any, treedef: Any) -> list[Any]:
    """A pytree of flags (or batch dims) matching ``treedef``, or a prefix of
    one (a single ``True``, a single dim), as one entry per leaf."""
    if not isinstance(flags, (tuple, list, dict)) or treedef.num_leaves == 0:
        if treedef.node_data() is None:
            return [flags]
        if not isinstance(flags, (tuple, list, dict)):
            return [flags] * treedef.num_leaves
    return list(treedef.flatten_up_to(flags))


@dataclass(frozen=True)
class Static:
    """A value carried through residuals as static data (no leaves)."""

    val: Any


tree_util.register_pytree_node(Static, lambda s: ((), s.val), lambda val, _: Static(val))


# ==================================================== the primitive class


def _overrides(prim: HiPrim, method: str) -> bool:
    return getattr(type(prim), method) is not getattr(HiPrim, method)


class HiPrim:
    """A user-defined primitive (``VJPHiPrimitive``). A subclass's
    ``__init__`` sets ``in_avals``, ``out_aval`` and ``params`` and calls
    ``super().__init__()``; ``expand`` is the implementation; the other
    methods are the rules of the transformations that need them."""

    in_avals: tuple[Any, ...]
    out_aval: Any
    params: dict[str, Hashable]
    effects: frozenset[Any] = frozenset()
    vjp_bwd_retval_logs: ClassVar[bool] = False

    def __init__(self) -> None:
        for attr in ("in_avals", "out_aval", "params"):
            if not hasattr(self, attr):
                raise AttributeError(f"subclass __init__ should set `self.{attr}`")
        if _overrides(self, "vjp_bwd") and _overrides(self, "vjp_bwd_retval"):
            raise AttributeError(f"subclass {type(self)} should not override both "
                                 "`vjp_bwd` and `vjp_bwd_retval`")
        in_flat, self.in_tree = _flatten(tuple(self.in_avals))
        out_flat, self.out_tree = _flatten(self.out_aval)
        for i, a in enumerate(out_flat):
            require(isinstance(a, ArrayType) or is_high(a), type(self).__name__, "H3",
                    f"out_aval leaf {i} is {a!r}, not an array type (ShapedArray) or a "
                    "hi type (HiType)")
        self.in_avals_flat = [plain_aval(a) for a in in_flat]
        self.out_avals_flat = [plain_aval(a) for a in out_flat]
        self.__dict__.update(self.params)
        self._expanded: Jaxpr | None = None
        self.check(*self.in_avals)

    # ----------------------------------------------------------- the rules

    def expand(self, *args: Any) -> Any:
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in: Any, /, *args: Any) -> Any:
        raise NotImplementedError(
            f"for grad support, subclass {type(self)} must implement `vjp_fwd`, or derive "
            "its reverse-mode rules from its jvp or lin rules by setting `vjp_fwd, "
            "vjp_bwd_retval = vjp_from_jvp` (or `= vjp_from_lin`)")

    def vjp_bwd(self, res: Any, outgrad: Any, /, *arg_accums: Any) -> Any:
        if self.vjp_bwd_retval_logs:
            args_grad, logs = self.vjp_bwd_retval(res, outgrad)
        else:
            args_grad, logs = self.vjp_bwd_retval(res, outgrad), None
        accums = _flatten(tuple(arg_accums))[0]
        grads = checks.flattened(type(self).__name__, "vjp_bwd_retval", "the cotangents",
                                 self.in_tree, args_grad,
                                 lambda: _leaves_up_to(self.in_tree, tuple(args_grad)))
        for acc, g in zip(accums, grads):
            if isinstance(acc, GradAccum):
                acc.accum(g)
        return logs

    def vjp_bwd_retval(self, res: Any, outgrad: Any, /) -> Any:
        raise NotImplementedError(
            f"for grad support, subclass {type(self)} must implement `vjp_bwd` or "
            "`vjp_bwd_retval`, or derive its reverse-mode rules by setting `vjp_fwd, "
            "vjp_bwd_retval = vjp_from_jvp` (or `= vjp_from_lin`)")

    def jvp(self, primals: Any, tangents: Any) -> Any:
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement "
                                  "`jvp`")

    def lin(self, nzs_in: Any, *primals: Any) -> Any:
        raise NotImplementedError(
            f"for linearize support, subclass {type(self)} must implement `lin` and "
            "`linearized`, or derive them from its `jvp` rule by setting `lin, "
            "linearized = linearize_from_jvp`")

    def linearized(self, residuals: Any, *tangents: Any) -> Any:
        raise NotImplementedError(
            f"for linearize support, subclass {type(self)} must implement `lin` and "
            "`linearized`, or derive them from its `jvp` rule by setting `lin, "
            "linearized = linearize_from_jvp`")

    def transpose(self, out_ct: Any, *maybe_accums: Any) -> Any:
        raise NotImplementedError(f"for transpose support, subclass {type(self)} must "
                                  "implement `transpose`")

    def batch(self, axis_data: AxisData, args: Any, dims: Any) -> Any:
        name, rule = type(self).__name__, "batch_dim_rule"
        got = self.batch_dim_rule(axis_data, dims)
        flat = checks.flattened(name, rule, "the batch dimensions", self.out_tree, got,
                                lambda: _broadcast_flags(got, self.out_tree))
        checks.check_out_dims(name, rule, flat, self.out_avals_flat)
        out_dim = tree_util.tree_unflatten(self.out_tree, flat)
        return VmapOf(self, axis_data, dims, out_dim)(*args), out_dim

    def batch_dim_rule(self, axis_data: AxisData, dims: Any, /) -> Any:
        raise NotImplementedError(f"for vmap support, subclass {type(self)} must implement "
                                  "`batch` or `batch_dim_rule`")

    def check(self, *arg_tys: Any) -> None:
        return None

    # ------------------------------------------------------------- binding

    def __call__(self, *args: Any) -> Any:
        flat = _leaves_checked(self.in_tree, tuple(args), "the arguments",
                               type(self).__name__)
        if _eager(flat):
            return self._expand_eagerly(flat)
        outs = hijax_p.bind(*flat, prim=self)
        return tree_util.tree_unflatten(self.out_tree, outs)

    def _expand_eagerly(self, flat: list[Any]) -> Any:
        """Called on concrete values outside any transformation, a hijax
        primitive is its ``expand``, run op by op on the values themselves
        (Python scalars as typed scalars), as JAX runs it: what ``expand``
        returns is the result, unconverted."""
        name = type(self).__name__
        _hijax_type(*[canonical_aval_of(x) for x in flat], prim=self)
        args = tree_util.tree_unflatten(self.in_tree, [typed_scalar(x) for x in flat])
        result = self.expand(*args)
        outs = _leaves_checked(self.out_tree, result, "the result of expand", name)
        for i, (got, want) in enumerate(zip(outs, self.out_avals_flat)):
            if is_high(want):
                continue  # as in JAX, a hi result's type is its value's own
            aval = canonical_aval_of(got)
            require(_same_type(aval, want), name, "H5",
                    f"expand returned {aval.str_short(True)} for result {i}, out_aval "
                    f"says {want.str_short(True)}")
        return result

    @classmethod
    def from_printed(cls, params: dict[str, Any], in_avals: Sequence[Any],
                     out_avals: Sequence[Any]) -> HiPrim:
        """The instance an equation's text shows: its printed params (read
        back as values) and its operands' and results' types. By default
        the constructor called on the operand types and the params."""
        return cls(*in_avals, **params)

    def pp_params(self) -> dict[str, Any]:
        """The params shown when printing jaxprs."""
        return {k: v for k, v in self.params.items() if not k.startswith("_")}

    def __repr__(self) -> str:
        return type(self).__name__ + _params_text(self.pp_params())

    def _types(self) -> tuple[Any, ...]:
        return (self.in_tree, tuple(self.in_avals_flat), self.out_tree,
                tuple(self.out_avals_flat))

    # Equal instances are one primitive to every cache, so equality includes
    # the types (JAX compares params and effects only).
    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self.params.items()), self.effects,
                     self._types()))

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and isinstance(other, HiPrim)
                and self.params == other.params and self.effects == other.effects
                and self._types() == other._types())

    # ------------------------------------------------ the expanded program

    def expanded_jaxpr(self) -> Jaxpr:
        """``expand`` traced on ``in_avals``, once per instance."""
        if self._expanded is None:
            name = type(self).__name__

            def flat_expand(*xs: Any) -> list[Any]:
                args = tree_util.tree_unflatten(self.in_tree, xs)
                return _leaves_checked(self.out_tree, self.expand(*args),
                                       "the result of expand", name)

            jaxpr, _ = trace_to_jaxpr(flat_expand, self.in_avals_flat)
            for i, (got, want) in enumerate(zip(jaxpr.out_avals, self.out_avals_flat)):
                require(checks.layout(got) == checks.layout(want), name, "H5",
                        f"expand returned {got.str_short(True)} for result {i}, out_aval "
                        f"says {want.str_short(True)}")
            self._expanded = jaxpr
        return self._expanded


VJPHiPrimitive = HiPrim


# The HiPrim classes jaxpr text may name, by the name an equation prints
# (the class's): ``parse_jaxpr`` rebuilds an equation's instance with the
# class's ``from_printed``. Filled by ``printed_form`` where each class is
# declared.
PRINTED_FORMS: dict[str, type[HiPrim]] = {}


def printed_form[C: type[HiPrim]](cls: C) -> C:
    """Class decorator: ``parse_jaxpr`` reads equations of ``cls``."""
    if PRINTED_FORMS.get(cls.__name__, cls) is not cls:
        raise ValueError(f"another HiPrim class is already read as {cls.__name__!r}")
    PRINTED_FORMS[cls.__name__] = cls
    return cls


def _eager(flat: Sequence[Any]) -> bool:
    """No transformation is tracing and every operand is a value."""
    return type(current_trace()) is EvalTrace and not any(isinstance(x, Tracer) for x in flat)


def _params_text(params: dict[str, Any]) -> str:
    if not params:
        return ""
    return "[" + " ".join(f"{k}={_param_text(v)}" for k, v in params.items()) + "]"


def _param_text(v: Any) -> Any:
    """A param as JAX prints a hijax primitive's: a nested primitive as
    ``Name[params]``, a type in short form, a Python function by its name,
    a jaxpr as a jaxpr, anything else by ``str``."""
    if isinstance(v, HiPrim):
        return repr(v)
    if isinstance(v, ArrayType):
        return v.str_short(True)
    if inspect.isfunction(v) or isinstance(v, functools.partial):
        while isinstance(v, functools.partial):
            v = v.func
        return getattr(v, "__name__", str(v))
    if isinstance(v, Jaxpr):
        return v
    return str(v)


# ====================================================== the hijax primitive


def _hijax_type(*avals: ArrayType, prim: HiPrim) -> list[ArrayType]:
    name = type(prim).__name__
    want = prim.in_avals_flat
    require(len(avals) == len(want), name, "H1",
            f"called with {len(avals)} array operands, in_avals has {len(want)} leaves")
    for i, (got, w) in enumerate(zip(avals, want)):
        require(_same_type(got, w), name, "H2",
                f"operand {i} has type {got.str_short(True)}, in_avals says {w.str_short(True)}")
    return list(prim.out_avals_flat)


def _same_type(got: Any, want: Any) -> bool:
    """Operand and declared types agree: hi types are equal, array types
    have the same layout."""
    if is_high(got) or is_high(want):
        return bool(got == want)
    return checks.layout(got) == checks.layout(want)


def _hijax_to_lojax(*args: Any, prim: HiPrim) -> list[Any]:
    """On hi values (their value classes), the primitive is its ``expand``:
    inside the abstraction, the values are containers of arrays."""
    name = type(prim).__name__
    result = prim.expand(*tree_util.tree_unflatten(prim.in_tree, list(args)))
    return _leaves_checked(prim.out_tree, result, "the result of expand", name)


def _hijax_sharding(*avals: ArrayType, prim: HiPrim) -> list[Any]:
    return [a.sharding for a in prim.out_avals_flat]


def _hijax_impl(*values: np.ndarray, prim: HiPrim) -> Sequence[np.ndarray]:
    try:
        jaxpr = prim.expanded_jaxpr()
    except ConcretizationTypeError:
        return _expand_on_values(prim, values)
    consts = [canonical_aval_value(c) for c in jaxpr.consts]
    return eval_jaxpr_values(jaxpr, consts, values)


def canonical_aval_value(c: Any) -> np.ndarray:
    return np.asarray(c._value if isinstance(c, Array) else c)


def _expand_on_values(prim: HiPrim, values: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``expand`` run on the concrete operands: an implementation that
    branches on values (Python control flow) cannot be traced."""
    arrays = [Array._from_checked(np.asarray(v), a, "hijax")
              for v, a in zip(values, prim.in_avals_flat)]
    args = tree_util.tree_unflatten(prim.in_tree, arrays)
    outs = _leaves_checked(prim.out_tree, prim.expand(*args), "the result of expand",
                           type(prim).__name__)
    return [np.asarray(o._value if isinstance(o, Array) else o) for o in outs]


def _hijax_program(geo: spmd.Geometry, args: list[spmd.Dist], out_avals: list[ArrayType],
                   *, prim: HiPrim) -> list[spmd.Dist]:
    """On a mesh, the expansion's equations each run their own per-device
    program; an expansion that branches on values runs gathered."""
    try:
        jaxpr = prim.expanded_jaxpr()
    except ConcretizationTypeError:
        return spmd.gathered(hijax_p)(geo, args, out_avals, prim=prim)
    outs = spmd.eval_jaxpr(jaxpr, [canonical_aval_value(c) for c in jaxpr.consts], args, geo)
    return [spmd.Dist(a, o.bufs) for o, a in zip(outs, out_avals)]


def _tangent_zero(aval: ArrayType) -> Zero:
    return Zero(aval.tangent_type())


def _hijax_jvp(primals: list[Any], tangents: list[Any], *, prim: HiPrim
               ) -> tuple[list[Any], list[Any]]:
    """Forward mode runs the ``jvp`` method; reverse mode on the legacy
    linearize path runs ``vjp_fwd``, its tangent map the linear
    ``hijax_linearized``; forward-mode linearize on that path runs ``lin``
    and ``linearized`` when there is no ``jvp``."""
    if is_reverse_mode():
        outs, res, nzs_out, sres = _run_fwd(prim, "vjp_fwd", primals, tangents)
        return outs, _bind_linearized(prim, tangents, nzs_out, res, sres)
    if ad.linearizing() or (ad.legacy_linearizing() and _overrides(prim, "lin")
                            and not _overrides(prim, "jvp")):
        # ``linearize`` of a cond's or scan's body on the direct path: the
        # ``lin`` rule (and its error where there is none, as JAX's linearize
        # trace asks for ``lin`` even of a primitive with a ``jvp``). The
        # legacy path (a JVP then partial evaluation), at the top and in
        # bodies alike, runs ``jvp`` and falls back on ``lin``.
        outs, res, nzs_out, sres = _run_fwd(prim, "lin", primals, tangents)
        t_outs = _user_linearized(prim, res, sres, tangents)
        return outs, [t if nz else _tangent_zero(a)
                      for t, nz, a in zip(t_outs, nzs_out, prim.out_avals_flat)]
    name = type(prim).__name__
    p_tree = tree_util.tree_unflatten(prim.in_tree, primals)
    t_tree = tree_util.tree_unflatten(prim.in_tree, tangents)
    p_out, t_out = prim.jvp(p_tree, t_tree)
    p_flat = _leaves_checked(prim.out_tree, p_out, "the primal output of jvp", name)
    checks.check_primals(name, "jvp", p_flat, prim.out_avals_flat)
    t_flat = checks.flattened(name, "jvp", "the output tangents", prim.out_tree, t_out,
                              lambda: _leaves_up_to(prim.out_tree, t_out))
    checks.check_tangents(name, "jvp", t_flat, prim.out_avals_flat)
    return p_flat, [_tangent_zero(a) if t is None else t
                    for t, a in zip(t_flat, prim.out_avals_flat)]


def _nzs_in(prim: HiPrim, tangents: Sequence[Any]) -> Any:
    return tree_util.tree_unflatten(prim.in_tree, [type(t) is not Zero for t in tangents])


def _run_fwd(prim: HiPrim, rule: str, primals: list[Any], tangents: list[Any]
             ) -> tuple[list[Any], Any, list[bool], Any]:
    """Run ``vjp_fwd`` or ``lin``: (outputs, residuals, which outputs have
    nonzero tangents, structured residuals or None)."""
    name = f"{type(prim).__name__}.{rule}"
    args = tree_util.tree_unflatten(prim.in_tree, primals)
    got = getattr(prim, rule)(_nzs_in(prim, tangents), *args)
    if not isinstance(got, tuple) or not 2 <= len(got) <= 4:
        raise TypeError(f"{type(prim).__name__} H6: {rule} must return (out, residuals), "
                        "(out, residuals, nzs_out) or (out, residuals, nzs_out, sres)")
    out, res, *rest = got
    outs = _leaves_checked(prim.out_tree, out, f"the primal output of {rule}",
                           type(prim).__name__)
    checks.check_primals(type(prim).__name__, rule, outs, prim.out_avals_flat)
    nzs_out = [bool(b) for b in _broadcast_flags(rest[0] if rest else True, prim.out_tree)]
    sres = rest[1] if len(rest) > 1 else None
    if sres is not None and rule == "vjp_fwd" and not _overrides(prim, "vjp_bwd"):
        raise TypeError(f"{type(prim).__name__} returned structured residuals from "
                        "`vjp_fwd`, which requires overriding `vjp_bwd(res, sres, outgrad, "
                        "*arg_accums)`")
    del name
    if sres is not None:
        ad.add_structured_residual(sres)
    return outs, res, nzs_out, sres


def _bind_linearized(prim: HiPrim, tangents: list[Any], nzs_out: list[bool], res: Any,
                     sres: Any) -> list[Any]:
    nz_in = tuple(type(t) is not Zero for t in tangents)
    packed = res if sres is None else (res, sres)
    res_flat, res_tree = tree_util.tree_flatten(packed)
    # Saved Python scalars are typed scalars, as every staged Python scalar.
    res_flat = [typed_scalar(r) for r in res_flat]
    if not any(nzs_out):
        return [_tangent_zero(a) for a in prim.out_avals_flat]
    outs = iter(hijax_linearized_p.bind(
        *res_flat, *(t for t in tangents if type(t) is not Zero), prim=prim,
        residuals_tree=res_tree, nz_in_flat=nz_in, nz_out_flat=tuple(nzs_out),
        has_sres=sres is not None))
    return [next(outs) if nz else _tangent_zero(a)
            for a, nz in zip(prim.out_avals_flat, nzs_out)]


def _hijax_linearize(trace: ad.LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                     prim: HiPrim) -> tuple[list[Any], list[Any]]:
    """Direct linearize: the primal side (``vjp_fwd`` in reverse mode,
    ``lin`` otherwise) on the enclosing trace, the tangent side (the linear
    ``hijax_linearized``, or the ``linearized`` method) staged."""
    reverse = is_reverse_mode()
    with set_current_trace(trace.parent):
        outs, res, nzs_out, sres = _run_fwd(prim, "vjp_fwd" if reverse else "lin",
                                            primals, tangents)
    with set_current_trace(trace.tangent_trace):
        if reverse:
            t_outs = _bind_linearized(prim, tangents, nzs_out, res, sres)
        else:
            t_outs = _user_linearized(prim, res, sres, tangents)
    return outs, [t if nz else _tangent_zero(a)
                  for t, nz, a in zip(t_outs, nzs_out, prim.out_avals_flat)]


def _user_linearized(prim: HiPrim, res: Any, sres: Any, tangents: list[Any]) -> list[Any]:
    t_tree = tree_util.tree_unflatten(prim.in_tree, tangents)
    got = prim.linearized(res, *t_tree) if sres is None else prim.linearized(res, sres, *t_tree)
    name = type(prim).__name__
    flat = checks.flattened(name, "linearized", "the output tangents", prim.out_tree, got,
                            lambda: _leaves_up_to(prim.out_tree, got))
    checks.check_tangents(name, "linearized", flat, prim.out_avals_flat)
    return [_tangent_zero(a) if t is None else t for t, a in zip(flat, prim.out_avals_flat)]


def _hijax_transpose(cts: list[Any], *invals: Any, prim: HiPrim) -> list[Any]:
    """The ``transpose`` method of a primitive linear in some inputs: it gets
    the output cotangent and, per input, an accumulator (a linear input) or
    the value."""
    name = f"{type(prim).__name__} H7: transpose"
    accums = [ValAccum(ad.cotangent_aval(x.aval), name) if type(x) is UndefinedPrimal else x
              for x in invals]
    ct_tree = tree_util.tree_unflatten(prim.out_tree, cts)
    log = prim.transpose(ct_tree, *tree_util.tree_unflatten(prim.in_tree, accums))
    ad.add_logs(log, f"{type(prim).__name__}.transpose")
    return [a.freeze() if isinstance(a, ValAccum) else None for a in accums]


def _hijax_batch(axis: AxisData, args: list[Any], dims: list[Any], *, prim: HiPrim
                 ) -> tuple[list[Any], list[Any]]:
    name = type(prim).__name__
    out, out_dims = prim.batch(axis, tree_util.tree_unflatten(prim.in_tree, args),
                               tree_util.tree_unflatten(prim.in_tree, dims))
    outs = _leaves_checked(prim.out_tree, out, "the result of batch", name)
    dims_flat = checks.flattened(name, "batch", "the batch dimensions", prim.out_tree,
                                 out_dims, lambda: _broadcast_flags(out_dims, prim.out_tree))
    checks.check_out_dims(name, "batch", dims_flat, prim.out_avals_flat)
    checks.check_batched(name, axis, outs, dims_flat, prim.out_avals_flat)
    return outs, dims_flat


def _pp_hijax(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    """``outs = ClassName[params] operands``, as JAX prints a hijax primitive."""
    prim: HiPrim = eqn.params["prim"]
    shown = {k: _param_text(v) for k, v in prim.pp_params().items()}
    return _pp_named(eqn, ctx, type(prim).__name__, shown)


def _pp_named(eqn: Eqn, ctx: PpContext, name: str, params: dict[str, Any]) -> pp.Doc:
    lhs = pp_vars(eqn.outvars, ctx, print_shapes=True)
    rhs = [pp.text(name), pp_params(params, ctx, sort=False),
           pp.text(" ") + pp_vars(eqn.invars, ctx)]
    if eqn.outvars:
        return pp.concat([lhs, pp.text(" = "), *rhs])
    return pp.concat(rhs)


def _hijax_lowering(ctx: LoweringContext, operands: Sequence[str],
                    in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                    prim: HiPrim) -> list[str]:
    """The primitive's ``expand`` traced on its operands' types, emitted in
    place (JAX lowers a hijax primitive through its expansion)."""
    if any(is_high(a) for a in (*in_avals, *out_avals)):
        raise NotImplementedError(f"lowering {type(prim).__name__} on hi-typed values is not "
                                  "specified")
    return lower_body(ctx, prim.expanded_jaxpr(), operands)


def _linearized_lowering(ctx: LoweringContext, operands: Sequence[str],
                         in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                         prim: HiPrim, **params: Any) -> list[str]:
    """Only the transposed tangent map runs; lowering the forward one is
    its evaluation's error."""
    raise _forward_error(prim)


hijax_p = declare(
    "hijax", lowering=_hijax_lowering, typing=_hijax_type, impl=_hijax_impl, multiple_results=True,
    jvp=_hijax_jvp, transpose=_hijax_transpose, batch=_hijax_batch,
    sharding=_hijax_sharding, linearize=_hijax_linearize, pp_rule=_pp_hijax,
    per_device=_hijax_program,
    vma_rule=VMA_FROM_TYPING, to_lojax=_hijax_to_lojax,
    doc="A user-defined primitive (a HiPrim instance, the param `prim`): each rule is "
        "one of its methods.")


# ------------------------------------------------- the linear tangent map


def _linearized_type(*avals: ArrayType, prim: HiPrim, residuals_tree: Any,
                     nz_in_flat: tuple[bool, ...], nz_out_flat: tuple[bool, ...],
                     has_sres: bool) -> list[ArrayType]:
    n = residuals_tree.num_leaves + sum(nz_in_flat)
    require(len(avals) == n, f"{type(prim).__name__}.linearized", "H1",
            f"called with {len(avals)} operands, expected {residuals_tree.num_leaves} "
            f"residuals and {sum(nz_in_flat)} tangents")
    return [a.tangent_type() for a, nz in zip(prim.out_avals_flat, nz_out_flat) if nz]


def _linearized_sharding(*avals: ArrayType, prim: HiPrim, nz_out_flat: tuple[bool, ...],
                         **params: Any) -> list[Any]:
    return [a.sharding for a, nz in zip(prim.out_avals_flat, nz_out_flat) if nz]


def _forward_error(prim: HiPrim) -> NotImplementedError:
    return NotImplementedError(
        f"the tangent map of {type(prim).__name__}'s reverse-mode rules (vjp_fwd/vjp_bwd) "
        f"only runs transposed: for forward-mode support, subclass {type(prim)} must "
        "implement `jvp` (or `lin` and `linearized`)")


def _linearized_forward(*args: Any, prim: HiPrim, **params: Any) -> Any:
    """The tangent map of a reverse-mode rule only runs transposed."""
    raise _forward_error(prim)


def _linearized_jvp(primals: list[Any], tangents: list[Any], *, prim: HiPrim,
                    **params: Any) -> Any:
    raise _forward_error(prim)


def _linearized_transpose(cts: list[Any], *invals: Any, prim: HiPrim, residuals_tree: Any,
                          nz_in_flat: tuple[bool, ...], nz_out_flat: tuple[bool, ...],
                          has_sres: bool) -> list[Any]:
    """``vjp_bwd`` with one accumulator per primal input: the caller's
    gradient ref (``RefAccum``), a ``ValAccum`` for a wanted cotangent, a
    ``NullAccum`` where none is wanted."""
    n_res = residuals_tree.num_leaves
    res = tree_util.tree_unflatten(residuals_tree, invals[:n_res])
    where = f"{type(prim).__name__} H7: vjp_bwd"
    operands = iter(invals[n_res:])
    accums: list[GradAccum] = []
    for aval, nz in zip(prim.in_avals_flat, nz_in_flat):
        x = next(operands) if nz else None
        ct_aval = ad.cotangent_aval(aval)
        if isinstance(x, RefAccum):
            accums.append(x)
        elif type(x) is UndefinedPrimal:
            accums.append(ValAccum(ct_aval, where))
        else:
            accums.append(NullAccum(ct_aval))
    ct_iter = iter(cts)
    full_cts = [next(ct_iter) if nz else Zero(ad.cotangent_aval(a))
                for a, nz in zip(prim.out_avals_flat, nz_out_flat)]
    ct_tree = tree_util.tree_unflatten(prim.out_tree, full_cts)
    acc_tree = tree_util.tree_unflatten(prim.in_tree, accums)
    if has_sres:
        plain, sres = res
        log = prim.vjp_bwd(plain, sres, ct_tree, *acc_tree)
    else:
        log = prim.vjp_bwd(res, ct_tree, *acc_tree)
    ad.add_logs(log, f"{type(prim).__name__}.vjp_bwd")
    results = [a.freeze() for a, nz in zip(accums, nz_in_flat)
               if nz and isinstance(a, ValAccum)]
    it = iter(results)
    tangent_results: list[Any] = []
    for a, nz in zip(accums, nz_in_flat):
        if nz:
            tangent_results.append(next(it) if isinstance(a, ValAccum) else None)
    return [None] * n_res + tangent_results


def _pp_linearized(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    params: dict[str, Any] = {"nz_in_flat": eqn.params["nz_in_flat"],
                              "nz_out_flat": eqn.params["nz_out_flat"]}
    if eqn.params["has_sres"]:
        params["has_sres"] = True
    return _pp_named(eqn, ctx, f"{type(eqn.params['prim']).__name__}.linearized", params)


hijax_linearized_p = declare(
    "hijax_linearized", lowering=_linearized_lowering, typing=_linearized_type,
    impl=_linearized_forward,
    multiple_results=True, jvp=_linearized_jvp, transpose=_linearized_transpose,
    batch=not_applicable("it only runs transposed, and its transpose runs the user's "
                         "vjp_bwd, which vmap batches as ordinary code"),
    sharding=_linearized_sharding, pp_rule=_pp_linearized, transpose_accumulates=True,
    vma_rule=VMA_FROM_TYPING,
    doc="The tangent map of a hijax primitive's reverse-mode rules: transposes to its "
        "vjp_bwd.")


# =================================================== batching: VmapOf


def unmap_avals(axis_data: AxisData, avals: Any, dims: Any) -> Any:
    """The types of the batched values whose per-example types are ``avals``
    (batched at ``dims``; ``None``: not batched)."""
    return tree_util.tree_map(
        lambda a, d: batching.batched_aval(a, d, axis_data.size, axis_data.explicit_mesh_axis),
        avals, dims, is_leaf=lambda x: x is None)


def bdims_at_front(axis_data: AxisData, args: Any, dims: Any) -> Any:
    """Every argument with its batch dimension first (unbatched ones
    broadcast)."""
    return tree_util.tree_map(
        lambda x, d: batching.bdim_at_front(x, d, axis_data.size, axis_data.explicit_mesh_axis),
        args, dims, is_leaf=lambda x: x is None)


def _is_zero(x: Any) -> bool:
    return isinstance(x, Zero)


def _map_zero(axis: AxisData, d: Any, x: Any) -> Any:
    """A symbolic zero of a batched value, as a rule sees it per example."""
    if _is_zero(x) and d is not None:
        return Zero(batching.unbatched_aval(x.aval, d))
    return x


def _unmap_zero(axis: AxisData, d: Any, x: Any) -> Any:
    if _is_zero(x) and d is not None:
        return Zero(batching.batched_aval(x.aval, d, axis.size, axis.explicit_mesh_axis))
    return x


def _vmapped(axis: AxisData, fun: Callable[..., Any], in_dims: list[Any],
             out_dims: list[Any] | None, args: list[Any]) -> tuple[list[Any], list[Any]]:
    """``fun`` (flat arrays in and out; ``Zero`` and ``None`` entries pass
    per example) run under vmap: outputs moved to ``out_dims`` (``None``:
    summed over the batch) or left where they came out."""
    live = [not _is_zero(a) and a is not None for a in args]
    vals = [a for a, ok in zip(args, live) if ok]
    vdims = [d for d, ok in zip(in_dims, live) if ok]
    shape: list[Any] = []

    def per_example(*xs: Any) -> list[Any]:
        it = iter(xs)
        full = [next(it) if ok else _map_zero(axis, d, a)
                for a, ok, d in zip(args, live, in_dims)]
        outs = list(fun(*full))
        shape[:] = [o if (_is_zero(o) or o is None) else True for o in outs]
        return [o for o in outs if not (_is_zero(o) or o is None)]

    arrays, natural = batching.batch_flat(per_example, axis, vals, vdims)
    moved_iter = iter(zip(arrays, natural))
    result: list[Any] = []
    dims_out: list[Any] = []
    for i, s in enumerate(shape):
        want = None if out_dims is None else out_dims[i]
        if s is not True:
            result.append(_unmap_zero(axis, want, s) if out_dims is not None else s)
            dims_out.append(want)
            continue
        x, d = next(moved_iter)
        if out_dims is None:
            result.append(x)
            dims_out.append(d)
        elif want is None:
            result.append(x if d is None else _reduce_batch(x, d))
            dims_out.append(None)
        else:
            result.append(batching.match_axis(axis, x, d, want))
            dims_out.append(want)
    return result, dims_out


def _reduce_batch(x: Any, d: int) -> Any:
    """A per-example cotangent of an unbatched input, summed over the batch
    (through the primitive, which the lax layer declares)."""
    return primitive("reduce_sum").bind(x, axes=(d,), out_sharding=None)


class VmapOf(HiPrim):
    """``prim`` batched along ``axis_data``: operands at ``in_dims``, the
    result at ``out_dim`` (from ``prim.batch_dim_rule``); each rule is
    ``prim``'s rule run under vmap."""

    # The vmapped backward rule returns the logs its examples made.
    vjp_bwd_retval_logs = True

    def __init__(self, prim: HiPrim, axis_data: AxisData, in_dims: Any, out_dim: Any) -> None:
        self.in_avals = tuple(unmap_avals(axis_data, tuple(prim.in_avals), in_dims))
        self.out_aval = unmap_avals(axis_data, prim.out_aval, out_dim)
        self.params = dict(prim=prim, axis_data=axis_data, in_dims=in_dims, out_dim=out_dim)
        super().__init__()

    @property
    def _in_dims_flat(self) -> list[Any]:
        return _broadcast_flags(self.in_dims, self.prim.in_tree)  # type: ignore[attr-defined]

    @property
    def _out_dims_flat(self) -> list[Any]:
        return _broadcast_flags(self.out_dim, self.prim.out_tree)  # type: ignore[attr-defined]

    def expand(self, *args: Any) -> Any:
        inner: HiPrim = self.prim  # type: ignore[attr-defined]

        def per_example(*xs: Any) -> list[Any]:
            out = inner.expand(*tree_util.tree_unflatten(inner.in_tree, xs))
            return _leaves_checked(inner.out_tree, out, "the result of expand",
                                   type(inner).__name__)

        flat = _flatten(tuple(args))[0]
        outs, natural = _vmapped(self.axis_data, per_example, self._in_dims_flat,  # type: ignore[attr-defined]
                                 None, flat)
        checks.check_unbatched(type(inner).__name__, natural, self._out_dims_flat)
        return tree_util.tree_unflatten(inner.out_tree, [
            batching.match_axis(self.axis_data, o, d, w)  # type: ignore[attr-defined]
            for o, d, w in zip(outs, natural, self._out_dims_flat)])

    def jvp(self, primals: Any, tangents: Any) -> Any:
        inner: HiPrim = self.prim  # type: ignore[attr-defined]
        n = inner.in_tree.num_leaves
        in_dims = self._in_dims_flat

        def per_example(*xs: Any) -> list[Any]:
            p = tree_util.tree_unflatten(inner.in_tree, xs[:n])
            t = tree_util.tree_unflatten(inner.in_tree, xs[n:])
            p_out, t_out = inner.jvp(p, t)
            t_flat = _leaves_up_to(inner.out_tree, t_out)
            return [*_flatten(p_out)[0],
                    *(Zero(a.tangent_type()) if x is None else x
                      for x, a in zip(t_flat, inner.out_avals_flat))]

        flat = [*_flatten(tuple(primals))[0], *_leaves_up_to(self.in_tree, tuple(tangents))]
        outs, _ = _vmapped(self.axis_data, per_example, in_dims * 2,  # type: ignore[attr-defined]
                           self._out_dims_flat * 2, flat)
        m = len(outs) // 2
        return (tree_util.tree_unflatten(inner.out_tree, outs[:m]),
                tree_util.tree_unflatten(inner.out_tree, outs[m:]))

    def vjp_fwd(self, nzs_in: Any, *args: Any) -> Any:
        inner: HiPrim = self.prim  # type: ignore[attr-defined]
        found: dict[str, Any] = {}

        def per_example(*xs: Any) -> list[Any]:
            out, res, *rest = inner.vjp_fwd(nzs_in, *tree_util.tree_unflatten(inner.in_tree, xs))
            res_flat, res_tree = tree_util.tree_flatten(res)
            found["res_tree"], found["rest"] = res_tree, rest
            return [*_flatten(out)[0], *res_flat]

        flat = _flatten(tuple(args))[0]
        n_out = inner.out_tree.num_leaves
        outs, dims = _vmapped(self.axis_data, per_example, self._in_dims_flat, None, flat)  # type: ignore[attr-defined]
        p_outs = [batching.match_axis(self.axis_data, o, d, w)  # type: ignore[attr-defined]
                  for o, d, w in zip(outs[:n_out], dims[:n_out], self._out_dims_flat)]
        res = tree_util.tree_unflatten(found["res_tree"], outs[n_out:])
        return (tree_util.tree_unflatten(inner.out_tree, p_outs),
                (res, Static((found["res_tree"], tuple(dims[n_out:])))), *found["rest"][:1])

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        """The cotangents and the logs of ``prim``'s backward rule (``vjp_bwd``
        or ``vjp_bwd_retval``) run under vmap: each log value batched along
        a new leading axis, as a ``custom_vjp`` rule's logs under vmap."""
        inner: HiPrim = self.prim  # type: ignore[attr-defined]
        res_vals, static = res
        res_tree, res_dims = static.val
        res_flat = tree_util.tree_flatten(res_vals)[0]
        g_flat = _leaves_up_to(inner.out_tree, g)
        r = len(res_flat)
        logged = ad.LoggedBody()

        def per_example(*xs: Any) -> list[Any]:
            rs = tree_util.tree_unflatten(res_tree, xs[:r])
            gs = tree_util.tree_unflatten(inner.out_tree, xs[r:])
            return _leaves_up_to(inner.in_tree, tuple(_example_bwd(inner, rs, gs)))

        body = logged.wrap(per_example)
        # The log leaves, known once the rule is traced, come out batched at 0.
        out_dims = list(self._in_dims_flat)
        n_in = len(out_dims)

        def with_log_dims(*xs: Any) -> list[Any]:
            outs = body(*xs)
            out_dims[n_in:] = [0] * logged.num_leaves
            return outs

        outs, _ = _vmapped(self.axis_data, with_log_dims,  # type: ignore[attr-defined]
                           [*res_dims, *self._out_dims_flat], out_dims, [*res_flat, *g_flat])
        cts, logs = logged.split(outs)
        return tree_util.tree_unflatten(self.in_tree, cts), logs or None

    def batch_dim_rule(self, axis_data: AxisData, in_dims: Any) -> Any:
        def fix(d: Any, d_: Any) -> Any:
            return d if (d is None or d_ is None) else d - (d_ < d)
        inner_dims = tree_util.tree_map(fix, in_dims, self.in_dims,  # type: ignore[attr-defined]
                                        is_leaf=lambda x: x is None)
        out_dim = self.prim.batch_dim_rule(axis_data, inner_dims)  # type: ignore[attr-defined]
        return tree_util.tree_map(lambda d, d_: d + (d_ < d) if d_ is not None else d,
                                  out_dim, self.out_dim,  # type: ignore[attr-defined]
                                  is_leaf=lambda x: x is None)


def _example_bwd(inner: HiPrim, res: Any, g: Any) -> Any:
    """One example's cotangents from ``inner``'s backward rule, its logs
    (if any) logged where the example runs."""
    if _overrides(inner, "vjp_bwd"):
        where = f"{type(inner).__name__} H7: vjp_bwd"
        accums = [ValAccum(ad.cotangent_aval(a), where) for a in inner.in_avals_flat]
        log = inner.vjp_bwd(res, g, *tree_util.tree_unflatten(inner.in_tree, accums))
        ad.add_logs(log, f"{type(inner).__name__}.vjp_bwd")
        return tree_util.tree_unflatten(inner.in_tree, [a.freeze() for a in accums])
    if inner.vjp_bwd_retval_logs:
        cts, log = inner.vjp_bwd_retval(res, g)
        ad.add_logs(log, f"{type(inner).__name__}.vjp_bwd_retval")
        return cts
    return inner.vjp_bwd_retval(res, g)


def vmap_rule(axis_data: AxisData, f: Callable[..., Any], in_axes: Any, out_axes: Any, *,
              sum_match: bool = False) -> Callable[..., Any]:
    """``f`` vmapped along ``axis_data``, as a ``batch`` rule needs it;
    symbolic zeros among the arguments and results pass through."""
    def batched(*args: Any) -> Any:
        flat_args, in_tree = _flatten(tuple(args))
        in_dims = _broadcast_flags(tuple(in_axes), in_tree)
        out_tree: list[Any] = []

        def per_example(*xs: Any) -> list[Any]:
            leaves, tree = _flatten(f(*tree_util.tree_unflatten(in_tree, xs)))
            out_tree[:] = [tree]
            return leaves

        first, natural = _vmapped(axis_data, per_example, in_dims, None, flat_args)
        out_dims = _broadcast_flags(out_axes, out_tree[0])
        outs = [batching.match_axis(axis_data, x, d, w) if w is not None
                else (x if d is None else _reduce_batch(x, d)) if sum_match else
                batching.match_axis(axis_data, x, d, w)
                for x, d, w in zip(first, natural, out_dims)]
        return tree_util.tree_unflatten(out_tree[0], outs)
    return batched


# ========================================= rules derived from other rules


class DerivedLinearization:
    """Residuals of ``linearize_from_jvp``: the values the linear map reads
    and the linear jaxpr."""

    __slots__ = ("consts", "linear")

    def __init__(self, consts: list[Any], linear: Jaxpr) -> None:
        self.consts = consts
        self.linear = linear


tree_util.register_pytree_node(
    DerivedLinearization, lambda r: ((r.consts,), r.linear),
    lambda linear, children: DerivedLinearization(list(children[0]), linear))


def _lin_from_jvp(self: HiPrim, nzs_in: Any, *primals: Any) -> Any:
    """The ``lin`` half of ``linearize_from_jvp``: the ``jvp`` rule traced
    with symbolic tangents and split by partial evaluation into the primal
    work (run now) and the linear map of the nonzero tangents."""
    if type(self).jvp is jvp_from_lin:
        raise TypeError(f"subclass {type(self)} can't set both `jvp = jvp_from_lin` and "
                        "`lin, linearized = linearize_from_jvp`, since each would be defined "
                        "in terms of the other")
    name = type(self).__name__
    p_flat = _flatten(tuple(primals))[0]
    nz = [bool(b) for b in _leaves_up_to(self.in_tree, tuple(nzs_in))]
    n = len(p_flat)
    t_avals = [a.tangent_type() for a in self.in_avals_flat]
    n_out = self.out_tree.num_leaves
    nzs_out: list[bool] = []

    def jvp_flat(*xs: Any) -> list[Any]:
        it = iter(xs[n:])
        ts = [next(it) if z else Zero(a) for z, a in zip(nz, t_avals)]
        p_out, t_out = self.jvp(tree_util.tree_unflatten(self.in_tree, xs[:n]),
                                tree_util.tree_unflatten(self.in_tree, ts))
        t_leaves = _leaves_up_to(self.out_tree, t_out)
        nzs_out[:] = [t is not None and not _is_zero(t) for t in t_leaves]
        return [*_leaves_checked(self.out_tree, p_out, "the primal output of jvp", name),
                *(instantiate(Zero(a.tangent_type())) if t is None else instantiate(t)
                  for t, a in zip(t_leaves, self.out_avals_flat))]

    in_avals = [canonical_aval_of(p) for p in p_flat] + [a for a, z in zip(t_avals, nz) if z]
    jaxpr, _ = trace_to_jaxpr(jvp_flat, in_avals)
    k = sum(nz)
    split = ad.partial_eval_jaxpr(jaxpr, [False] * n + [True] * k,
                                  [False] * n_out + [True] * n_out)
    known = eval_jaxpr(split.known, split.known.consts, *p_flat)
    outs, residuals = known[:n_out], known[n_out:]
    return (tree_util.tree_unflatten(self.out_tree, outs),
            DerivedLinearization(list(residuals), split.unknown),
            tree_util.tree_unflatten(self.out_tree, nzs_out))


def _linearized_from_jvp(self: HiPrim, residuals: DerivedLinearization, *tangents: Any) -> Any:
    """The ``linearized`` half of ``linearize_from_jvp``."""
    t_flat = [t for t in _leaves_up_to(self.in_tree, tuple(tangents))
              if t is not None and not _is_zero(t)]
    lin = residuals.linear
    outs = eval_jaxpr(lin, lin.consts, *residuals.consts, *t_flat)
    return tree_util.tree_unflatten(self.out_tree, outs)


def jvp_from_lin(self: HiPrim, primals: Any, tangents: Any) -> Any:
    """A ``jvp`` rule from the ``lin``/``linearized`` rules."""
    if type(self).lin is _lin_from_jvp:
        raise TypeError(f"subclass {type(self)} can't set both `jvp = jvp_from_lin` and "
                        "`lin, linearized = linearize_from_jvp`, since each would be defined "
                        "in terms of the other")
    t_flat = _leaves_up_to(self.in_tree, tuple(tangents))
    nzs_in = tree_util.tree_unflatten(self.in_tree, [t is not None and not _is_zero(t)
                                                     for t in t_flat])
    out, res, *rest = self.lin(nzs_in, *primals)
    if len(rest) < 2:
        return out, self.linearized(res, *tangents)
    return out, self.linearized(res, rest[1], *tangents)


def _vjp_fwd_from_jvp(self: HiPrim, nzs_in: Any, *primals: Any) -> Any:
    """The ``vjp_fwd`` half of ``vjp_from_jvp``: the primal inputs saved."""
    return self(*primals), (primals, Static(nzs_in))


def _transpose_jvp(self: HiPrim, res: Any, out_ct: Any) -> Any:
    """The ``vjp_bwd_retval`` half of ``vjp_from_jvp``: the ``jvp`` rule at
    the saved primals, transposed by ``linear_transpose`` in the tangents
    (its primal work runs on the enclosing trace, as JAX's does)."""
    primals, nzs = res
    nz = [bool(b) for b in _leaves_up_to(self.in_tree, tuple(nzs.val))]

    def tangent_map(*nz_tangents: Any) -> Any:
        it = iter(nz_tangents)
        ts = [next(it) if z else Zero(a.tangent_type()) for z, a in zip(nz, self.in_avals_flat)]
        _, t_out = self.jvp(primals, tree_util.tree_unflatten(self.in_tree, ts))
        return tree_util.tree_map(instantiate_zeros, t_out, is_leaf=_is_zero)

    ct = tree_util.tree_map(instantiate_zeros, out_ct, is_leaf=_is_zero)
    dummies = [zeros_like_aval(a.tangent_type())
               for a, z in zip(self.in_avals_flat, nz) if z]
    got = iter(linear_transpose(tangent_map, *dummies)(ct))
    return tree_util.tree_unflatten(
        self.in_tree, [next(got) if z else Zero(a.tangent_type())
                       for z, a in zip(nz, self.in_avals_flat)])


def _vjp_fwd_from_lin(self: HiPrim, nzs_in: Any, *primals: Any) -> Any:
    """The ``vjp_fwd`` half of ``vjp_from_lin``: the linearization's residuals."""
    out, res, *rest = self.lin(nzs_in, *primals)
    return (out, (res, Static(nzs_in)), *rest)


def _transpose_linearized(self: HiPrim, residuals: Any, out_ct: Any) -> Any:
    """The ``vjp_bwd_retval`` half of ``vjp_from_lin``: ``linearized``
    transposed."""
    res, nzs = residuals
    nz = [bool(b) for b in _leaves_up_to(self.in_tree, tuple(nzs.val))]

    def tangent_map(*nz_tangents: Any) -> list[Any]:
        it = iter(nz_tangents)
        ts = [next(it) if z else Zero(a.tangent_type()) for z, a in zip(nz, self.in_avals_flat)]
        t_out = self.linearized(res, *tree_util.tree_unflatten(self.in_tree, ts))
        return [instantiate(Zero(a.tangent_type())) if t is None else instantiate(t)
                for t, a in zip(_leaves_up_to(self.out_tree, t_out), self.out_avals_flat)]

    return _transposed(self, tangent_map, nz, out_ct)


def _transposed(self: HiPrim, tangent_map: Callable[..., list[Any]], nz: list[bool],
                out_ct: Any) -> Any:
    """The cotangents of the nonzero inputs of the linear ``tangent_map``
    (traced on their tangent types, then transposed)."""
    avals = [a.tangent_type() for a, z in zip(self.in_avals_flat, nz) if z]
    linear, _ = trace_to_jaxpr(tangent_map, avals)
    cts = [instantiate(c) if c is not None else instantiate(Zero(a.tangent_type()))
           for c, a in zip(_leaves_up_to(self.out_tree, out_ct), self.out_avals_flat)]
    got = iter(ad.linear_transpose_jaxpr(linear, cts))
    return tree_util.tree_unflatten(
        self.in_tree, [next(got) if z else Zero(a.tangent_type())
                       for z, a in zip(nz, self.in_avals_flat)])


class _LinearizeFromJVP(NamedTuple):
    lin: Callable[..., Any]
    linearized: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("`linearize_from_jvp` is a pair of rules, not a single rule; unpack "
                        "it in the class body: `lin, linearized = linearize_from_jvp`")


class _VJPFromJVP(NamedTuple):
    vjp_fwd: Callable[..., Any]
    vjp_bwd_retval: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("`vjp_from_jvp` is a pair of rules, not a single rule; unpack it in "
                        "the class body: `vjp_fwd, vjp_bwd_retval = vjp_from_jvp`")


class _VJPFromLin(NamedTuple):
    vjp_fwd: Callable[..., Any]
    vjp_bwd_retval: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("`vjp_from_lin` is a pair of rules, not a single rule; unpack it in "
                        "the class body: `vjp_fwd, vjp_bwd_retval = vjp_from_lin`")


linearize_from_jvp = _LinearizeFromJVP(_lin_from_jvp, _linearized_from_jvp)
vjp_from_jvp = _VJPFromJVP(_vjp_fwd_from_jvp, _transpose_jvp)
vjp_from_lin = _VJPFromLin(_vjp_fwd_from_lin, _transpose_linearized)


def instantiate_zeros(x: Any) -> Any:
    """A symbolic zero as an array of zeros; any other value unchanged."""
    return instantiate(x) if _is_zero(x) else x


__all__ = [
    "AbstractRef", "AbstractValue", "GradAccum", "HiPrim", "HiPspec", "HiType",
    "MappingSpec", "NullAccum", "RefAccum", "ShapedArray", "Static", "TransformedRef",
    "VJPHiPrimitive", "ValAccum", "VmapOf", "Zero", "aval_method", "aval_property",
    "bdims_at_front", "control_flow_allowed_effects", "hijax_linearized_p",
    "hijax_p", "instantiate_zeros", "is_undefined_primal", "jvp_from_lin",
    "linearize_from_jvp", "register_hitype", "unmap_avals", "vjp_from_jvp", "vjp_from_lin",
    "vmap_rule",
]
