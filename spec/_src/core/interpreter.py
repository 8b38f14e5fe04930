"""The core: typed IR, primitives, traces, evaluation, type checking, printing.

Data flows one way: a user function calls ``Primitive.bind``; ``bind`` hands
the primitive to the *current trace*. The eval trace types the operands,
runs the typing rule and then the NumPy impl; the jaxpr trace runs only the
typing rule and records an equation. Transforms (later issues) are further
traces with the same interface.
"""

from __future__ import annotations

from dataclasses import replace as dc_replace

import contextlib
import functools
import math
import operator
import sys
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from spec._src.core import commitment, nan_checks
from spec._src.core import denormals as _denormals
from spec._src.core.config import config as _config, no_collectives
from spec._src.core import pretty as pp
from spec._src.core import source_info as si
from spec._src.core.effects import names_ref, world_effects
from spec._src.core.debug_info import DebugInfo
from spec._src.core.array import Array, on_device, weak_scalar
from spec._src.core.errors import (
    ConcretizationTypeError,
    JaxprTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from spec._src.core.hitypes import HI_VALUE_TYPES, hi_type_of, is_high, lower_value
from spec._src.core.literals import is_typed_scalar
from spec._src.core.sharding import _context as _mesh_context, forbid_lost_axes
from spec._src.core.state_types import RefType
from spec._src.core.tokens import is_token_type
from spec._src.core.resources import check_allocatable, check_program
from spec._src.core.types import (
    ArrayType,
    MemorySpace,
    Typed,
    canonicalize_dtype,
    dtype_of_value,
    is_python_scalar,
    python_scalar_dtype,
    refuse_jax_array,
)

# ============================================================ rule sections


@dataclass(frozen=True)
class Pending:
    """A rule section not written yet; ``missing_sections()`` lists it."""

    what: str


@dataclass(frozen=True)
class NotApplicable:
    """A rule section that cannot exist for this primitive, and why."""

    reason: str


def pending(what: str) -> Pending:
    return Pending(what)


def not_applicable(reason: str) -> NotApplicable:
    return NotApplicable(reason)


@dataclass(frozen=True)
class Default:
    """An optional hook left at its documented default behaviour (a choice,
    not a forgotten rule): ``behaviour`` says what happens without a rule."""

    behaviour: str


Section = Callable[..., Any] | Pending | NotApplicable
Hook = Callable[..., Any] | Default | NotApplicable
TypingRule = Callable[..., Sequence[ArrayType]]
PpRule = Callable[["Eqn", "PpContext"], pp.Doc]

# The default of each optional hook, named so that a declaration (and
# ``missing_sections()``) shows "default behaviour" apart from "forgotten".
GATHERED = Default("runs the gathered program on a mesh: operands replicated, the impl on "
                   "whole arrays, recorded in the ledger")
NO_DISCHARGE = Default("no discharge rule: refs given to it are refused by discharge_state; "
                       "without refs it runs as usual")
GENERIC_REMAT = Default("checkpoint's generic partial evaluation: known when every operand "
                        "is, its outputs saved or recomputed as the policy says")
NO_EFFECTS = Default("no effects: the equation writes no refs")
NOT_COLLECTIVE = Default("not an axis collective: vmap runs its batch rule only where an "
                         "operand is mapped")
ENCLOSING_CONTEXT = Default("its sub-jaxprs (if any) are type-checked in the enclosing "
                            "context")
JVP_THEN_PARTIAL_EVAL = Default("linearize runs the jvp rule and splits the result into "
                                "primal and tangent work")
WHOLE_PARTIAL_EVAL = Default("partial evaluation: known when every operand is known, else "
                             "staged whole")
NO_CONST_FOLD = Default("staged as usual even when every operand is a literal")
KEPT_OR_DROPPED_WHOLE = Default("no dce rule: the equation is kept whole or dropped whole")
STANDARD_VMA = Default("JAX's standard rule: results vary along every manual axis an operand "
                       "varies along; operands varying along fewer are first cast up with "
                       "pvary")
VMA_FROM_TYPING = Default("the typing rule already gives the results' varying manual axes "
                          "(calls, control flow, manual collectives)")
DEFAULT_PP = Default("printed as `outs = name[params] operands`")
NO_HI_TYPES = Default("takes no hi-typed operands: a hi value given to it is refused as "
                      "not a valid JAX type")


@dataclass(frozen=True)
class FromPrimitive:
    """A rule built from the primitive it belongs to (a per-device program
    that runs the primitive's own impl, a rule that binds it): the
    declaration passes the builder, ``Primitive`` calls it with itself."""

    build: Callable[[Primitive], Callable[..., Any]]

    def for_primitive(self, prim: Primitive) -> Callable[..., Any]:
        return self.build(prim)


def from_primitive(build: Callable[[Primitive], Callable[..., Any]]) -> FromPrimitive:
    return FromPrimitive(build)


# ================================================= hooks filled from above

# The traces here need a few operations that higher layers define; each layer
# fills its hook when it is imported (importing ``spec`` fills them all), so
# that the core never imports them.

VaryHook = Callable[[Any, tuple[Any, ...]], Any]
UnstackHook = Callable[[Any], tuple[Any, ...]]
EagerOnMeshHook = Callable[["Primitive", Sequence[Any], dict[str, Any], Sequence[ArrayType]],
                           list[Any]]
EagerRefHook = Callable[[np.ndarray, RefType, Any], Any]
EagerKernelHook = Callable[["Primitive", Sequence[ArrayType], dict[str, Any]],
                           Callable[..., Sequence[Any]] | None]
InContextMeshHook = Callable[["Primitive", dict[str, Any], list[Any]], list[Any]]


def _unregistered(what: str, where: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{what} is not registered: import {where} (importing spec does)")
    return missing


@dataclass
class CoreHooks:
    """``vary(x, axes)``: ``x`` cast to vary along manual ``axes``
    (spec._src.lax.shard_map). ``unstack(x)``: the slices of ``x`` along
    axis 0, what iterating over a tracer gives (spec._src.lax.slicing).
    ``eager_on_mesh(prim, args, params, out_avals)``: eager evaluation whose
    operands or results are laid out over a mesh (spec._src.interpreters.spmd).
    ``eager_ref(buf, aval, placement)``: a ref result as an eager ``Ref``
    (spec._src.api.ref). ``eager_kernel(prim, avals, params)``: a kernel
    computing exactly what ``prim.impl`` computes at these operand types
    and params, with less dispatch (spec._src.api.codegen), or None.
    ``in_context_mesh(prim, params, results)``: eager results computed on
    one device, placed on the concrete mesh in context (spec._src.lax.reshard)."""

    vary: VaryHook = field(default_factory=lambda: _unregistered(
        "casting to varying axes", "spec._src.lax.shard_map"))
    unstack: UnstackHook = field(default_factory=lambda: _unregistered(
        "iterating over a tracer", "spec._src.lax.slicing"))
    eager_on_mesh: EagerOnMeshHook = field(default_factory=lambda: _unregistered(
        "eager evaluation over a mesh", "spec._src.interpreters.spmd"))
    eager_ref: EagerRefHook = field(default_factory=lambda: _unregistered(
        "eager refs", "spec._src.api.ref"))
    eager_kernel: EagerKernelHook = field(default_factory=lambda: _no_eager_kernel)
    in_context_mesh: InContextMeshHook = field(default_factory=lambda: _unregistered(
        "placing results on the context mesh", "spec._src.lax.reshard"))


def _no_eager_kernel(prim: Primitive, avals: Sequence[ArrayType], params: dict[str, Any]
                     ) -> None:
    return None


hooks = CoreHooks()


class Primitive:
    """One primitive: a name and every rule it has, each a typed field set
    once, by its declaration (``registry.declare``).

    Rule sections (a rule, ``pending(what)`` or ``not_applicable(why)``):

    - ``typing(*in_types, **params)``: the output types (a sequence), or
      TypeError/ValueError citing a numbered constraint;
    - ``impl(*arrays, **params)``: computes on NumPy arrays of exactly the
      operand types, returns arrays of exactly the output types;
    - ``sharding(*in_types, **params) -> [NamedSharding | None]``: the
      results' shardings when an operand has one;
    - ``jvp``, ``transpose``, ``batch``: autodiff and vmap rules;
    - ``lowering(ctx, operands, in_avals, out_avals, **params)``: emits the
      equation's StableHLO ops into a ``spec._src.lowering`` context and
      returns its results' SSA names.

    Optional hooks (a rule, or the named ``Default`` saying what happens
    without one):

    - ``per_device(geo, args, out_avals, **params) -> [Dist]``: the
      primitive's program on a mesh (default ``GATHERED``);
    - ``discharge(ins, atoms, params) -> (outs, [(operand, contents)])``:
      the pure form of an equation given refs (``NO_DISCHARGE``);
    - ``remat_rule(policy, unknowns, instantiate, eqn)``: checkpoint's
      partial evaluation of the equation (``GENERIC_REMAT``);
    - ``effects_rule(atoms, params) -> frozenset``: the equation's effects
      (writes to refs), which dead-code elimination keeps (``NO_EFFECTS``);
    - ``axis_collective(params) -> names``: the axis names a collective acts
      over; vmap over one of them runs the batch rule even on unmapped
      operands (``NOT_COLLECTIVE``);
    - ``body_context(params)``: a context manager the sub-jaxprs are
      type-checked in (shard_map: its manual axes) (``ENCLOSING_CONTEXT``);
    - ``linearize(trace, primals, tangents, **params)``: the direct
      linearize trace's rule for primitives with sub-jaxprs
      (``JVP_THEN_PARTIAL_EVAL``);
    - ``partial_eval(eqn, unknowns) -> (known eqn, unknown eqn, outs
      unknown)``: partial evaluation of primitives with sub-jaxprs
      (``WHOLE_PARTIAL_EVAL``);
    - ``const_fold(*values, **params) -> [value] | None``: folds an
      equation whose operands are all literals away at staging, or None to
      stage as usual (``NO_CONST_FOLD``);
    - ``dce(eqn, used_outputs) -> (used inputs, eqn | None)``: dead-code
      elimination inside the equation (``KEPT_OR_DROPPED_WHOLE``);
    - ``vma_rule(*avals, **params) -> [frozenset]``: the results' varying
      manual axes inside shard_map (``STANDARD_VMA``, or
      ``VMA_FROM_TYPING`` where the typing rule gives them);
    - ``pp_rule(eqn, ctx) -> Doc``: how the equation prints (``DEFAULT_PP``);
    - ``to_lojax(*args, **params)``: the equation applied to hi values
      (registered value classes, holding arrays or tracers) in terms of
      their low-level components: what lowering a program with hi types
      runs, and what eager evaluation on hi values runs (``NO_HI_TYPES``).

    Flags: ``multiple_results`` (bind returns a list); ``accepts_refs`` (also: tokens)
    (only such primitives take ref operands: get/swap/..., calls, control
    flow); ``jvp_on_zero_tangents`` (autodiff runs the JVP rule even when no
    operand has a tangent: ``new_ref``, whose ref every later write of a
    differentiated value needs a tangent of); ``transpose_accumulates``
    (its transpose rule accepts a ``RefAccum`` for a value operand whose
    cotangent goes into a gradient ref, and adds into that ref only where it
    contributes: slicing; calls pass it on).

    A field given as ``from_primitive(build)`` is ``build(prim)``.
    """

    # A subclass whose eager evaluation may do more than typing and impl
    # (jit places its operands and results by its shardings) sets this and
    # overrides ``evaluate_eagerly``.
    evaluates_eagerly: ClassVar[bool] = False

    def evaluate_eagerly(self, trace: EvalTrace, args: Sequence[Any], params: dict[str, Any]
                         ) -> list[Any] | None:
        """The results of an eager evaluation done here, or None for the
        usual one."""
        return None

    SECTIONS: ClassVar[tuple[str, ...]] = (
        "typing", "impl", "sharding", "jvp", "transpose", "batch", "lowering")
    HOOKS: ClassVar[tuple[str, ...]] = (
        "per_device", "discharge", "remat_rule", "effects_rule", "axis_collective",
        "body_context", "linearize", "partial_eval", "const_fold", "dce", "vma_rule",
        "pp_rule", "to_lojax")
    FLAGS: ClassVar[tuple[str, ...]] = (
        "multiple_results", "accepts_refs", "jvp_on_zero_tangents", "transpose_accumulates")
    FIELDS: ClassVar[tuple[str, ...]] = (*SECTIONS, *HOOKS, *FLAGS)

    def __init__(self, name: str, *, typing: TypingRule, impl: Callable[..., Sequence[Any]],
                 multiple_results: bool = False, jvp: Section = Pending("the jvp rule"),
                 transpose: Section = Pending("the transpose rule"),
                 batch: Section = Pending("the batching rule"),
                 sharding: Section = Pending("the sharding rule"),
                 per_device: Hook | FromPrimitive = GATHERED,
                 discharge: Hook | FromPrimitive = NO_DISCHARGE,
                 remat_rule: Hook = GENERIC_REMAT,
                 effects_rule: Callable[[list[Any], dict[str, Any]], frozenset[Any]]
                 | Default = NO_EFFECTS,
                 axis_collective: Callable[[dict[str, Any]], Any] | Default = NOT_COLLECTIVE,
                 body_context: Callable[[dict[str, Any]], Any] | Default = ENCLOSING_CONTEXT,
                 linearize: Hook = JVP_THEN_PARTIAL_EVAL,
                 partial_eval: Hook = WHOLE_PARTIAL_EVAL,
                 const_fold: Callable[..., list[Any] | None] | Default = NO_CONST_FOLD,
                 dce: Callable[[Eqn, list[bool]], tuple[list[bool], Eqn | None]]
                 | Default = KEPT_OR_DROPPED_WHOLE,
                 vma_rule: Callable[..., list[frozenset[Any]]] | Default = STANDARD_VMA,
                 pp_rule: PpRule | Default = DEFAULT_PP,
                 lowering: Section = Pending("the lowering rule"),
                 to_lojax: Hook = NO_HI_TYPES,
                 accepts_refs: bool = False, jvp_on_zero_tangents: bool = False,
                 transpose_accumulates: bool = False, doc: str = "") -> None:
        self.name = name
        self.doc = doc
        self.typing = typing
        self.impl = impl
        self.sharding = sharding
        self.jvp = jvp
        self.transpose = transpose
        self.batch = batch
        self.per_device: Hook = _built(self, per_device)
        self.discharge: Hook = _built(self, discharge)
        self.remat_rule = remat_rule
        self.effects_rule = effects_rule
        self.axis_collective = axis_collective
        self.body_context = body_context
        self.linearize = linearize
        self.partial_eval = partial_eval
        self.const_fold = const_fold
        self.dce = dce
        self.vma_rule = vma_rule
        self.pp_rule = pp_rule
        self.lowering = lowering
        self.to_lojax = to_lojax
        self.multiple_results = multiple_results
        self.accepts_refs = accepts_refs
        self.jvp_on_zero_tangents = jvp_on_zero_tangents
        self.transpose_accumulates = transpose_accumulates
        for section in self.SECTIONS:
            setattr(self, section, _built(self, getattr(self, section)))

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        if HI_VALUE_TYPES and callable(self.to_lojax) and _on_hi_values(args):
            return self.to_lojax(*args, **params)
        if _mesh_context.in_manual and self.vma_rule is STANDARD_VMA:
            args = tuple(_insert_pvary(args))
        outs = current_trace().process_primitive(self, args, params)
        return outs if self.multiple_results else outs[0]

    def section(self, name: str) -> Section:
        return getattr(self, name)  # type: ignore[no-any-return]

    def field(self, name: str) -> Any:
        """The value of a declared field (``FIELDS``)."""
        return getattr(self, name)


def _built(prim: Primitive, value: Any) -> Any:
    """``value``, or the rule it builds for ``prim`` (``from_primitive``)."""
    attach = getattr(value, "for_primitive", None)
    return attach(prim) if attach is not None else value


def _insert_pvary(args: Sequence[Any]) -> Sequence[Any]:
    """Operands that vary along fewer manual axes than others are cast up
    with ``pvary`` (a free cast), so that every operand has the result's
    varying axes, as JAX's standard rule stages it."""
    vmas: list[frozenset[Any]] = [getattr(_aval_or_none(a), "vma", frozenset()) for a in args]
    union: frozenset[Any] = frozenset().union(*vmas)
    if not union or all(v == union for v in vmas):
        return args
    return [hooks.vary(a, tuple(union - v)) if v != union and _aval_or_none(a) is not None else a
            for a, v in zip(args, vmas)]


def _aval_or_none(x: Any) -> ArrayType | None:
    try:
        return canonical_aval_of(x)
    except TypeError:
        return None


# ===================================================================== IR


class Var:
    """A jaxpr variable. Identity is the variable; names are given at printing."""

    __slots__ = ("aval",)

    def __init__(self, aval: ArrayType) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short(True)})"


class DropVar(Var):
    """An equation output that nothing reads (printed ``_``)."""

    __slots__ = ()


class Literal:
    """A scalar constant inlined in an equation (printed ``2.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ArrayType) -> None:
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({_literal_text(self)})"


Atom = Var | Literal


@dataclass(eq=False)
class Eqn:
    invars: list[Atom]
    outvars: list[Var]
    primitive: Primitive
    params: dict[str, Any]
    effects: frozenset[Any] = frozenset()
    source_info: Any = None

    def replace(self, **changes: Any) -> Eqn:
        fields = dict(invars=self.invars, outvars=self.outvars, primitive=self.primitive,
                      params=self.params, effects=self.effects, source_info=self.source_info)
        if self.effects and "invars" in changes and "effects" not in changes \
                and len(changes["invars"]) == len(self.invars):
            # A write names its ref operand's variable: renamed operands carry it.
            fields["effects"] = _renamed_effects(self.effects, self.invars, changes["invars"])
        fields.update(changes)
        return Eqn(**fields)

    def __str__(self) -> str:
        return pp_eqn(self, PpContext()).format()


@dataclass(eq=False)
class Jaxpr:
    """A typed program. ``consts`` are the values of ``constvars`` when known
    (a closed jaxpr); ``str`` is JAX's jaxpr text."""

    constvars: list[Var]
    invars: list[Var]
    outvars: list[Atom]
    eqns: list[Eqn]
    effects: frozenset[Any] = frozenset()
    consts: list[Any] = field(default_factory=list)
    # The evaluation plan, built on first evaluation (see eval_jaxpr_values).
    _plan: Any = field(default=None, repr=False, compare=False)

    @property
    def in_avals(self) -> list[ArrayType]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ArrayType]:
        return [v.aval for v in self.outvars]

    @property
    def jaxpr(self) -> Jaxpr:
        """A closed jaxpr's open jaxpr; here one object plays both roles."""
        return self

    @property
    def literals(self) -> list[Any]:
        return self.consts

    def __str__(self) -> str:
        return pp_toplevel(self).format()

    __repr__ = __str__

    def pretty_print(self, width: int = 80, *, source_info: bool = False,
                     name_stack: bool = False, **_: Any) -> str:
        """The jaxpr text; ``source_info`` / ``name_stack`` annotate each
        equation with its user source line / its name stack, as comments."""
        return pp_toplevel(self, source_info=source_info, name_stack=name_stack).format(width)


ClosedJaxpr = Jaxpr


# ================================================================ tracers


class Trace:
    """Interprets primitives. Subclasses say what binding means."""

    name: ClassVar[str] = "Trace"

    def __init__(self) -> None:
        self.valid = True

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def invalidate(self) -> None:
        self.valid = False


class _Context(threading.local):
    def __init__(self) -> None:
        self.trace: Trace = EvalTrace()
        # The thread's own eager trace: evaluation on it is the top level,
        # outside every trace (an EvalTrace made while staging is not it).
        self.top: Trace = self.trace
        # ensure_compile_time_eval: staging evaluates operations on
        # concrete operands instead of recording them.
        self.compile_time_eval = False
        # The recorders of eager plans being made on this thread (innermost last).
        self.recorders: list[_Recorder] = []


def current_trace() -> Trace:
    return _context.trace


def context_mesh_placing() -> bool:
    """Whether results made now are placed on the ``set_mesh`` mesh, as JAX
    places them: at the top level (no trace active), under a concrete mesh
    whose axes are as it was set (not in shard_map bodies, auto_axes or
    explicit_axes)."""
    return _mesh_context.placing and _context.trace is _context.top


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Within the block, operations whose operands are all concrete (no
    tracers) are evaluated when traced, as outside any ``jit``; their
    results enter the staged program as constants."""
    previous = _context.compile_time_eval
    _context.compile_time_eval = True
    try:
        yield
    finally:
        _context.compile_time_eval = previous


@contextlib.contextmanager
def set_current_trace(trace: Trace) -> Iterator[None]:
    previous = _context.trace
    _context.trace = trace
    try:
        yield
    finally:
        _context.trace = previous


def _shape_text(aval: ArrayType) -> str:
    return str(aval)


class Tracer(Typed):
    """A value standing for an array inside a trace.

    Array methods and operators come from ``spec._src.api.array_methods``, which
    installs them on both Array and Tracer.
    """

    __array_priority__ = 1000
    _trace: Trace

    @property
    def aval(self) -> ArrayType:
        raise NotImplementedError

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.aval})"

    def to_concrete_value(self) -> Any:
        """The value this tracer stands for when it is known while tracing
        (an autodiff tracer's concrete primal), else None."""
        return None

    def _tracing_sentence(self) -> str:
        """JAX's sentence on the function being traced and the arguments this
        value depends on (empty where the trace knows no function)."""
        return ""

    def _concretization(self, detail: str) -> str:
        tail = self._tracing_sentence()
        return (f"Abstract tracer value encountered where concrete value is expected: "
                f"traced array with shape {self.aval.str_short()}\n{detail}\n"
                + (f"{tail}\n" if tail else ""))

    def _conversion(self, fun: str) -> str:
        return self._concretization(
            f"The problem arose with the `{fun}` function. If trying to convert the data type "
            f"of a value, try using `x.astype({fun})` or `jnp.array(x, {fun})` instead.")

    # A value known while tracing (an eager autodiff tracer's primal) converts
    # as the value would; otherwise the shape is checked before the tracer is
    # refused, as JAX does (``float``/``complex`` never look at the value).

    def _refuse_high(self, what: str) -> None:
        if is_high(self.aval):
            raise TypeError(f"Value of type {type(self)} is not convertible to {what}.")

    def __bool__(self) -> bool:
        known = self.to_concrete_value()
        if known is not None:
            return bool(known)
        self._refuse_high("bool")
        size = int(np.prod(self.aval.shape))
        if size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
        if size > 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        tail = self._tracing_sentence()
        raise TracerBoolConversionError(
            f"Attempted boolean conversion of traced array with shape {self.aval.str_short()}."
            + (f"\n{tail}" if tail else ""))

    def _check_scalar(self, what: str) -> None:
        self._refuse_high(what)
        ndim = len(self.aval.shape)
        if ndim > 0:
            raise TypeError("Only scalar arrays can be converted to Python scalars; "
                            f"got arr.ndim={ndim}")

    def __int__(self) -> int:
        known = self.to_concrete_value()
        if known is not None:
            return int(known)
        self._check_scalar("integer")
        raise ConcretizationTypeError(self._conversion("int"))

    def __float__(self) -> float:
        self._check_scalar("float")
        raise ConcretizationTypeError(self._conversion("float"))

    def __complex__(self) -> complex:
        self._check_scalar("complex")
        raise ConcretizationTypeError(self._conversion("complex"))

    def __index__(self) -> int:
        known = self.to_concrete_value()
        if known is not None:
            return operator.index(known)
        self._refuse_high("integer index")
        if self.aval.shape != () or not np.issubdtype(self.aval.dtype, np.integer):
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        tail = self._tracing_sentence()
        raise TracerIntegerConversionError(
            f"The __index__() method was called on traced array with shape {self.aval.str_short()}"
            + (f"\n{tail}" if tail else ""))

    def item(self, *args: Any) -> Any:
        raise ConcretizationTypeError(self._concretization(
            "This occurred in the item() method of jax.Array"))

    def tolist(self) -> Any:
        raise ConcretizationTypeError(self._concretization(
            "This occurred in the tolist() method of jax.Array"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TracerArrayConversionError(
            "The numpy.ndarray conversion method __array__() was called on traced array "
            f"with shape {self.aval}.\nNumPy functions cannot be applied to traced values; "
            "use the spec.numpy equivalent.")

    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: {type(self).__name__}")

    def __getattr__(self, name: str) -> Any:
        # A tracer of a hi type has the attributes its type declares with
        # ``aval_property``/``aval_method``; its value's own attributes are
        # not reachable under a trace (the value is not there).
        if name.startswith("_"):
            raise AttributeError(name)
        aval = self.aval
        declared = getattr(type(aval), name, None) if is_high(aval) else None
        kind = type(declared).__name__
        if kind == "aval_property":
            return declared.fget(self)  # type: ignore[union-attr]
        if kind == "aval_method":
            fun = declared.fun  # type: ignore[union-attr]
            return lambda *args, **kwargs: fun(self, *args, **kwargs)
        trace = getattr(self, "_trace", None)
        who = f"{trace.name}r" if trace is not None else type(self).__name__
        raise AttributeError(f"{who} has no attribute {name}")

    def __iter__(self) -> Iterator[Any]:
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return iter(hooks.unstack(self))


def check_tracer_alive(x: Tracer) -> None:
    if not x._trace.valid:
        raise UnexpectedTracerError(
            "Encountered an unexpected tracer. A function transformed by spec had a side "
            "effect, allowing for a reference to an intermediate value with type "
            f"{x.aval} wrapped in a {type(x).__name__} to escape the scope of the "
            "transformation.\nTransformed functions must return their outputs instead of "
            "storing traced values in outer scopes.")


# ========================================================= concrete values


def canonical_value(x: Any) -> tuple[np.ndarray, ArrayType]:
    """A concrete operand as (NumPy array of its canonical dtype, its type)."""
    if type(x) is Array:
        return x._value, x.aval  # the common case, first
    aval = getattr(x, "aval", None)
    if isinstance(aval, ArrayType):
        if isinstance(x, Tracer):
            check_tracer_alive(x)
            raise UnexpectedTracerError(
                f"A tracer of type {aval} from {type(x._trace).__name__} reached a "
                "computation outside its trace.")
        return x._value, aval
    if is_python_scalar(x):
        dt = python_scalar_dtype(type(x))
        return _scalar_array(x, dt), ArrayType((), dt, not isinstance(x, bool))
    if isinstance(x, (np.ndarray, np.generic)):
        dt = dtype_of_value(x)
        arr = np.asarray(x)
        if arr.dtype != dt:
            arr = arr.astype(dt)
        return arr, ArrayType(arr.shape, dt, False)
    refuse_jax_array(x)
    if isinstance(x, (list, tuple)) or x is None or isinstance(x, str):
        raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")
    if isinstance(x, ArrayType):  # a type where its value belongs
        raise TypeError(f"Argument '{x}' of type '{type(x)}' is not a valid JAX type")
    if hasattr(x, "__array__"):
        # Another library's array (a real JAX array among them): only
        # jnp.asarray and jnp.array convert one.
        raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type.")
    raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def _scalar_array(x: Any, dt: np.dtype[Any]) -> np.ndarray:
    if isinstance(x, int) and not isinstance(x, bool):
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {dt}")
    return np.asarray(x, dtype=dt)


# Typing rules are pure functions of (primitive, operand types, params) in a
# typing context (the mesh, check_vma, the named axes), so their results can
# be memoised; eager dispatch of a repeated operation then skips re-deriving
# types. Each context has its memo (``typing_memo``). Failures are not cached:
# they re-raise each time.
_TYPING_CACHE_LIMIT = 20_000


def apply_typing(prim: Primitive, avals: Sequence[ArrayType], params: dict[str, Any]
                 ) -> Sequence[ArrayType]:
    if no_collectives.value:  # (its checks run on every typing, cached or not)
        return _typed(prim, avals, params)
    memo = _mesh_context.typing_memo
    try:
        key = (prim, *avals, *params.items())
        cached: Sequence[ArrayType] | None = memo.get(key)
    except TypeError:  # an unhashable param: type without the cache
        return _typed(prim, avals, params)
    if cached is None:
        cached = _typed(prim, avals, params)
        if len(memo) >= _TYPING_CACHE_LIMIT:
            memo.clear()
        memo[key] = cached
    return cached


def _typed(prim: Primitive, avals: Sequence[ArrayType], params: dict[str, Any]
           ) -> Sequence[ArrayType]:
    """The typing rule's output types, with shardings when an operand has one:
    the sharding section ``sharding(*avals, **params) -> [NamedSharding | None]``
    gives them (raising ShardingTypeError where the operands' shardings do not
    combine). Until a primitive's section is written, sharded operands are
    refused rather than their shardings dropped."""
    if not prim.accepts_refs:
        # (the primitives that carry refs through, calls and loops, carry tokens too)
        for a in avals:
            if type(a) is RefType:
                raise ValueError(f"Attempting to pass a Ref {a} to a primitive: {prim.name} -- "
                                 "did you forget to unpack ([...]) the ref?")
            if is_token_type(a):
                raise ValueError(f"Attempting to pass an unexpected type {a} to a primitive: "
                                 f"{prim.name}")
    out = prim.typing(*avals, **params)
    if any(getattr(a, "memory_space", MemorySpace.Device) is not MemorySpace.Device
           for a in avals):
        out = _in_operands_memory(prim, avals, out)
    if not any(getattr(a, "sharding", None) is not None and not is_high(a)
               for a in avals) and not any(
            params.get(k) is not None for k in ("sharding", "out_sharding")):
        if not isinstance(prim.vma_rule, Default) or any(a.vma for a in avals):
            return _with_vma(prim, avals, out, params)
        return out
    rule = prim.sharding
    if isinstance(rule, (Pending, NotApplicable)):
        why = rule.what if isinstance(rule, Pending) else rule.reason
        raise NotImplementedError(
            f"the sharding rule of '{prim.name}' is pending ({why}): sharded operands "
            "cannot be used with it yet")
    shardings = rule(*avals, **params)
    if prim.vma_rule is not VMA_FROM_TYPING and prim.name not in _NOT_STANDARD:
        forbid_lost_axes(prim.name, shardings, avals)
    # (a hi type's sharding is inside the type, as its typing rule made it)
    typed = [a if is_high(a) else a.update(sharding=s) for a, s in zip(out, shardings)]
    for t in typed:
        if not is_high(t):
            check_divisible(t)
    return _with_vma(prim, avals, typed, params)


# Primitives whose sharding rule JAX does not check against ``no_collectives``
# (they are not its standard primitives: calls and control flow, refs and
# tokens, and placement, which reshard checks itself).
_NOT_STANDARD = frozenset({
    "addupdate", "after_all", "composite", "cond", "create_token", "dce_sink", "eval_jaxpr",
    "freeze", "get", "name", "new_ref", "optimization_barrier", "reshard",
    "sharding_constraint", "stage", "swap", "while", "xla_metadata_value"})


def check_divisible(aval: ArrayType) -> None:
    """C3: each sharded dimension of a type is a multiple of the number of pieces its mesh
    axes cut it into: JAX checks every sharded type it makes (ValueError, its message)."""
    s = aval.sharding
    if s is None:
        return
    sizes = dict(zip(s.mesh.axis_names, s.mesh.axis_sizes))
    for dim, (part, size) in enumerate(zip(s.spec.partitions, aval.shape)):
        if part is None:
            continue
        names = part if isinstance(part, tuple) else (part,)
        pieces = math.prod(sizes[n] for n in names)
        if size % pieces:
            raise ValueError(
                f"Sharding spec {names} implies that array axis {dim} is partitioned {pieces}"
                f" times, but does not evenly divide the dimension size {size}. Got shape:"
                f" {aval.shape} and sharding {s}")


def _in_operands_memory(prim: Primitive, avals: Sequence[ArrayType],
                        outs: Sequence[ArrayType]) -> Sequence[ArrayType]:
    """Results in the memory space of the operands: the ranked operands must
    share one (rank-0 operands, Python scalars among them, go anywhere), as
    JAX's standard rule requires. Calls and control flow, and rules that set
    a result's memory space themselves, keep their typing rule's types."""
    if prim.vma_rule is VMA_FROM_TYPING or any(
            getattr(o, "memory_space", MemorySpace.Device) is not MemorySpace.Device
            for o in outs):
        return outs
    spaces = [getattr(a, "memory_space", MemorySpace.Device) for a in avals]
    if all(s is MemorySpace.Any for s in spaces):
        space = MemorySpace.Any
    else:
        ranked = [a for a in avals if isinstance(a, ArrayType) and a.shape]
        for first, other in zip(ranked, ranked[1:]):
            if first.memory_space is not other.memory_space:
                raise ValueError(
                    f"memory_space of all inputs passed to `{prim.name}` must be the same."
                    f" Got one operand with type: {first.str_short()} and another operand"
                    f" with type: {other.str_short()}")
        space = ranked[0].memory_space if ranked else MemorySpace.Device
    if space is MemorySpace.Device:
        return outs
    return [o.update(memory_space=space) if isinstance(o, ArrayType) else o for o in outs]


def _with_vma(prim: Primitive, avals: Sequence[ArrayType], outs: Sequence[ArrayType],
              params: dict[str, Any]) -> Sequence[ArrayType]:
    """Results' varying manual axes: the primitive's own rule, the typing
    rule's (calls, control flow), or the union of the operands'."""
    if prim.vma_rule is VMA_FROM_TYPING:
        return outs
    if not isinstance(prim.vma_rule, Default):
        return [o.update(vma=v) for o, v in zip(outs, prim.vma_rule(*avals, **params))]
    union: frozenset[Any] = frozenset().union(*(a.vma for a in avals))
    if not union:
        return outs
    return [o.update(vma=union) for o in outs]


def _typed_on_mesh(out_avals: Sequence[ArrayType]) -> bool:
    """Whether a result's type is sharded over a mesh."""
    for o in out_avals:
        s = None if is_high(o) else o.sharding  # (a hi type's is inside the type)
        if s is not None and not s.mesh.empty:
            return True
    return False


class _HiLowering(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_hi_lowering = _HiLowering()


@contextlib.contextmanager
def lowering_hi_values() -> Iterator[None]:
    """While a program with hi types is evaluated on value classes (its
    lowering): a primitive bound on concrete hi values alone lowers them
    (runs ``to_lojax``) under any trace."""
    _hi_lowering.depth += 1
    try:
        yield
    finally:
        _hi_lowering.depth -= 1


def _on_hi_values(args: Sequence[Any]) -> bool:
    """Whether a primitive applies to hi values themselves (value classes),
    which it does as its ``to_lojax`` rule: eagerly or while lowering, and
    where a hi value holds tracers (a program being lowered). Under a
    trace, and next to a tracer, a hi value of concrete components is a
    constant of the trace, as an array is (its rules see it whole, as JAX's
    do)."""
    his = [a for a in args if type(a) in HI_VALUE_TYPES]
    if not his or any(isinstance(a, Tracer) and is_high(a.aval) for a in args):
        return False
    if any(isinstance(lo, Tracer) for h in his for lo in lower_value(hi_type_of(h), h)):
        return True
    if any(isinstance(a, Tracer) for a in args):
        return False
    return _hi_lowering.depth > 0 or isinstance(current_trace(), EvalTrace)


class _Dispatch:
    """What eager evaluation of ``prim`` at these operand types and params
    found: the result types, whether they lie on a mesh, and the kernel
    (the impl with its params bound, or the ``eager_kernel`` hook's). Valid
    for the typing context, configuration epoch and floating-point switch
    it was made under."""

    __slots__ = ("avals", "params", "kinds", "memo", "epoch", "hardware", "out_avals",
                 "on_mesh", "no_refs", "single", "kernel")

    def __init__(self, prim: Primitive, avals: tuple[ArrayType, ...], params: dict[str, Any],
                 out_avals: Sequence[ArrayType]) -> None:
        self.avals = avals
        self.params = params
        self.kinds = _kinds(params) if params else None
        self.memo = _mesh_context.typing_memo
        self.epoch = _config.epoch
        self.hardware = _denormals._use_hardware[0]
        self.out_avals = out_avals
        self.on_mesh = _typed_on_mesh(out_avals)
        self.no_refs = not any(type(a) is RefType for a in out_avals)
        check_allocatable(out_avals)  # compiling the operation sizes its results
        # One result that is an array: the common case, made without a loop.
        self.single = out_avals[0] if len(out_avals) == 1 and self.no_refs else None
        kernel = hooks.eager_kernel(prim, avals, params)
        if kernel is None:
            impl = prim.impl
            kernel = functools.partial(impl, **params) if params else impl
        self.kernel = kernel

    def answers(self, avals: tuple[ArrayType, ...], params: dict[str, Any]) -> bool:
        # (tuple and dict equality try identity first: the same type
        # objects, which results of one operation share, compare at once)
        if self.memo is not _mesh_context.typing_memo or self.epoch != _config.epoch \
                or self.hardware != _denormals._use_hardware[0] or self.avals != avals:
            return False
        if not params:
            return not self.params
        try:
            return bool(self.params == params) and self.kinds == _kinds(params)
        except (TypeError, ValueError):  # params that do not compare (arrays)
            return False


def _kinds(value: Any) -> Any:
    """The types within a param value: equal values of other types
    (``2.5`` and ``np.float32(2.5)``, an FFI call's attributes) are other
    params."""
    if isinstance(value, dict):
        return tuple((k, _kinds(v)) for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_kinds(v) for v in value))
    return type(value)


# The recent dispatches of each primitive, newest first: a loop repeating
# operations at a few operand types (``x * y`` then ``z * 0.5``) reuses them.
_RECENT_DISPATCHES: dict[Primitive, list[_Dispatch]] = {}
RECENT_LIMIT = 4  # entries kept per primitive (and plans per jnp function)


def _recent_dispatch(prim: Primitive, avals: tuple[ArrayType, ...], params: dict[str, Any]
                     ) -> _Dispatch | None:
    for entry in _RECENT_DISPATCHES.get(prim, ()):
        if entry.answers(avals, params):
            return entry
    return None


def _dispatch(prim: Primitive, avals: tuple[ArrayType, ...], params: dict[str, Any]
              ) -> _Dispatch:
    """A new dispatch entry (typing failures raise, and are not kept; nor is
    an entry whose params hold programs, which it would keep alive)."""
    entry = _Dispatch(prim, avals, params, apply_typing(prim, avals, params))
    if not jaxprs_in_params(params):
        recent = _RECENT_DISPATCHES.setdefault(prim, [])
        recent.insert(0, entry)
        del recent[RECENT_LIMIT:]
    return entry


_config_values = _config._values  # read directly: on every eager operation's path


class EvalTrace(Trace):
    """Eager evaluation: typing rule, then the NumPy impl."""

    name = "EvalTrace"

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        if prim.evaluates_eagerly:
            done: list[Any] | None = prim.evaluate_eagerly(self, args, params)
            if done is not None:
                return done
        recorders = _context.recorders
        if recorders:
            recorders[-1].dispatches += 1
        if HI_VALUE_TYPES and callable(prim.to_lojax):
            # (on concrete values, what the rule binds evaluates eagerly too, a
            # type's vspace_add included, whichever trace handed them on)
            if any(has_hi_types(j) for j in jaxprs_in_params(params)):
                # A call or loop whose body has hi types runs on their components.
                with set_current_trace(self):
                    return list(prim.to_lojax(*args, **params))
            if any(type(a) in HI_VALUE_TYPES for a in args):
                # (hi values handed on by a trace: evaluated on their components)
                with set_current_trace(self):
                    out = prim.to_lojax(*args, **params)
                return list(out) if prim.multiple_results else [out]
        array = Array
        values = []
        avals = []
        placed = False  # an operand laid out over a mesh: the op runs per device
        committed = False  # an operand placed explicitly: the op runs where it lives
        for a in args:
            if type(a) is array:  # the common case, inline
                values.append(a._val)
                avals.append(a.aval)
                if a._shards is not None:
                    placed = True
                if a._committed:
                    committed = True
            else:
                value, aval = canonical_value(a)
                values.append(value)
                avals.append(aval)
                # A Ref laid out over a mesh is placed as an Array is.
                placed = placed or (type(aval) is RefType
                                    and getattr(a, "_sharding", None) is not None)
        key = tuple(avals)
        entry = _recent_dispatch(prim, key, params)
        if entry is None:
            entry = _dispatch(prim, key, params)
        out_avals = entry.out_avals
        if HI_VALUE_TYPES and callable(prim.to_lojax) and any(map(is_high, out_avals)):
            # A hi result made from arrays (a type's vspace_zero under vmap):
            # the rule on the values, as an eager call of the primitive runs it.
            with set_current_trace(self):
                made = prim.to_lojax(*args, **params)
            return list(made) if prim.multiple_results else [made]
        device = (commitment.committed_device(args, commitment.positional_names(len(args)),
                                              prim.name) if committed else None)
        if placed or entry.on_mesh:
            placed_outs: list[Any] = hooks.eager_on_mesh(prim, args, params, out_avals)
            if nan_checks.active():
                nan_checks.check_results(prim.name, params, _local_buffers(placed_outs),
                                         lambda: _rerun_call(prim, args, params))
            return placed_outs
        outs = entry.kernel(*values)
        if _config_values["jax_debug_nans"] or _config_values["jax_debug_infs"]:
            nan_checks.check_results(prim.name, params, outs,
                                     lambda: _rerun_call(prim, args, params))
        made = array._from_checked
        single = entry.single
        placing = _mesh_context.placing and self is _context.top
        if single is not None and device is None and not placing:
            (o,) = outs
            result = made(o if type(o) is np.ndarray else np.asarray(o), single, prim)
            if recorders:
                recorders[-1].noted = (prim, args, entry, result)
            return [result]
        if entry.no_refs:
            results = [made(o if type(o) is np.ndarray else np.asarray(o), a, prim)
                       for o, a in zip(outs, out_avals)]
        else:
            results = [made(o if type(o) is np.ndarray else np.asarray(o), a, prim)
                       if type(a) is not RefType else hooks.eager_ref(o, a, None)
                       for o, a in zip(outs, out_avals)]
        if device is not None:
            for r in results:
                if type(r) is array and r._sharding is None:
                    r._device, r._committed = device, True
        if placing:
            return hooks.in_context_mesh(prim, params, results)
        return results


# ========================================================== eager plans
# A jnp function that JAX stages as ``jit(inline=True)`` computes, for given
# operand types and configuration, always the same primitives: JAX traces it
# with abstract operands, so its code cannot depend on their values. When
# its eager evaluation at some operand types was a single dispatch of one
# primitive on the function's own operands (and constants made from its
# Python scalar operands), that dispatch is its *plan* at those types: a
# later call with operands of the same types (and the same scalars) runs the
# dispatch's kernel directly, skipping the function's promotion and checks,
# which would find the same. The plan is valid while its dispatch is (the
# typing context, configuration epoch and floating-point switch), on
# uncommitted single-device arrays, outside NaN/Inf checking.


class _Recorder:
    """Counts the eager dispatches made while a function runs, and notes the
    last one made on the single-result path."""

    __slots__ = ("dispatches", "noted")

    def __init__(self) -> None:
        self.dispatches = 0
        self.noted: tuple[Primitive, Sequence[Any], _Dispatch, Array] | None = None



@dataclass(frozen=True)
class _ScalarKey:
    """A Python scalar operand of a plan: its type and value (a float's
    sign too, so that -0.0 is not 0.0)."""

    kind: type
    value: int | float
    negative: bool

    def fits(self, x: Any) -> bool:
        return type(x) is self.kind and x == self.value and (
            self.value != 0 or (math.copysign(1.0, x) < 0) == self.negative)


def _scalar_key(x: Any) -> _ScalarKey | None:
    if type(x) not in (int, float, bool):
        return None
    return _ScalarKey(type(x), x, math.copysign(1.0, x) < 0)


def _plain_array(x: Any) -> bool:
    """An uncommitted Array on one device (what a plan runs on)."""
    return type(x) is Array and not x._committed and x._sharding is None \
        and x._shards is None and x._val is not None


MISS: Any = object()  # a plan that does not apply to the call's operands


class EagerPlan:
    """One dispatch standing for a function's eager evaluation at given
    operand types (see above). ``keys``: per operand of the function, its
    ArrayType or a ``_ScalarKey``; ``sources``: per operand of the
    primitive, the position of the function operand it is, or a constant's
    value."""

    __slots__ = ("prim", "entry", "aval", "keys", "sources", "direct")

    def __init__(self, prim: Primitive, entry: _Dispatch, keys: tuple[Any, ...],
                 sources: tuple[Any, ...]) -> None:
        self.prim = prim
        self.entry = entry
        aval = entry.single
        assert aval is not None  # (plans are made of single-result dispatches)
        self.aval = aval
        self.keys = keys
        self.sources = sources
        # The primitive's operands are the function's, in order.
        self.direct = len(sources) == len(keys) and all(
            type(s) is int and s == i for i, s in enumerate(sources))

    def _valid(self) -> bool:
        entry = self.entry
        return entry.memo is _mesh_context.typing_memo and entry.epoch == _config.epoch \
            and not _mesh_context.placing \
            and entry.hardware == _denormals._use_hardware[0] \
            and not (_config_values["jax_debug_nans"] or _config_values["jax_debug_infs"]) \
            and type(_context.trace) is EvalTrace

    def apply1(self, x: Any) -> Any:
        """The function's result on ``x``, or MISS."""
        key = self.keys[0]
        if type(x) is not Array or x._committed or x._sharding is not None \
                or x._shards is not None or (x.aval is not key and x.aval != key) \
                or not self._valid():
            return MISS
        return self._run((x._val,))

    def apply2(self, x: Any, y: Any) -> Any:
        """The function's result on ``(x, y)``, or MISS."""
        kx, ky = self.keys
        if type(x) is Array:
            if x._committed or x._sharding is not None or x._shards is not None \
                    or (x.aval is not kx and x.aval != kx):
                return MISS
            vx = x._val
        elif type(kx) is not _ScalarKey or not kx.fits(x):
            return MISS
        else:
            vx = None
        if type(y) is Array:
            if y._committed or y._sharding is not None or y._shards is not None \
                    or (y.aval is not ky and y.aval != ky):
                return MISS
            vy = y._val
        elif type(ky) is not _ScalarKey or not ky.fits(y):
            return MISS
        else:
            vy = None
        if not self._valid():
            return MISS
        return self._run((vx, vy))

    def _run(self, values: tuple[Any, ...]) -> Any:
        entry = self.entry
        if self.direct:
            outs = entry.kernel(*values)
        else:
            outs = entry.kernel(*[values[s] if type(s) is int else s for s in self.sources])
        (o,) = outs
        return Array._from_checked(o if type(o) is np.ndarray else np.asarray(o), self.aval,
                                   self.prim)


def remember_plan(plans: list[EagerPlan], plan: EagerPlan | None) -> None:
    """Keep ``plan`` first among a function's recent ``plans`` (one per
    operand types; a plan it replaces, made under another configuration or
    mesh context, goes)."""
    if plan is None:
        return
    keys = plan.keys
    plans[:] = [plan, *(p for p in plans if p.keys != keys)][:RECENT_LIMIT]


def run_recorded(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, EagerPlan | None]:
    """``fn(*args)`` evaluated eagerly, and its plan at these operands' types
    (None where the evaluation was not one plannable dispatch)."""
    recorder = _Recorder()
    recorders = _context.recorders
    recorders.append(recorder)
    try:
        out = fn(*args)
    finally:
        recorders.pop()
    return out, _eager_plan_of(recorder, args, out)


def _eager_plan_of(recorder: _Recorder, args: tuple[Any, ...], out: Any) -> EagerPlan | None:
    noted = recorder.noted
    if recorder.dispatches != 1 or noted is None or noted[3] is not out:
        return None
    prim, operands, entry, _ = noted
    if entry.single is None or entry.on_mesh:
        return None
    keys: list[Any] = []
    for a in args:
        key = a.aval if _plain_array(a) else _scalar_key(a)
        if key is None:
            return None
        keys.append(key)
    # Every array operand of the function must be an operand of the
    # primitive itself: one converted on the way (to another weak type, say)
    # may have become a constant of its value, not of its type. And each
    # must be a different array, else which one an operand is is ambiguous.
    arrays = [a for a in args if type(a) is Array]
    if len({id(a) for a in arrays}) != len(arrays) \
            or any(not any(a is o for o in operands) for a in arrays):
        return None
    sources: list[Any] = []
    for operand in operands:
        position = next((i for i, a in enumerate(args) if a is operand), None)
        if position is not None and type(operand) is Array:
            sources.append(position)
        elif _plain_array(operand) and operand._py is not None:
            # A typed constant made from a Python scalar operand (which the
            # plan's key holds) or from nothing (determined by the types).
            sources.append(operand._val)
        else:
            return None
    return EagerPlan(prim, entry, tuple(keys), tuple(sources))


def _local_buffers(results: Sequence[Any]) -> list[Any]:
    """The values this process holds of eager results laid out over a mesh:
    the whole value where it has it, else its own blocks (each process checks
    what it computed, as each device does in JAX)."""
    buffers: list[Any] = []
    for r in results:
        if type(r) is not Array:
            continue
        if r._val is not None:
            buffers.append(r._val)
        elif r._shards is not None:
            buffers.extend(b for b in r._shards if b is not None)
    return buffers


def _rerun_call(prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> object:
    """A call primitive evaluated again equation by equation (each checked)."""
    jaxpr: Jaxpr = params["jaxpr"]
    return eval_jaxpr(jaxpr, jaxpr.consts, *args)


_context = _Context()


# =========================================================== jaxpr tracing


class JitTracer(Tracer):
    __slots__ = ("_trace", "jaxpr_var")

    def __init__(self, trace: JaxprTrace, var: Var) -> None:
        self._trace = trace
        self.jaxpr_var = var

    @property
    def aval(self) -> ArrayType:
        return self.jaxpr_var.aval

    def _tracing_sentence(self) -> str:
        trace = self._trace
        if not isinstance(trace, JaxprTrace) or trace.debug_info is None:
            return ""
        return trace.debug_info.tracing_sentence(trace.arguments_of(self.jaxpr_var))


class JaxprTrace(Trace):
    """Staging: every bind records a typed equation."""

    name = "DynamicJaxprTrace"

    def __init__(self) -> None:
        super().__init__()
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self._consts: dict[int, tuple[Var, Any]] = {}
        self.debug_info: DebugInfo | None = None
        # The name-stack depth when the program this trace stages started
        # (the tangent side of a linearization): its equations carry only
        # the names pushed since, as in JAX.
        self.name_stack_depth = 0
        # Whether an identity equation (broadcast_in_dim to its operand's
        # type) is forwarded to its operand, as JAX's staging does. JAX's
        # linear_transpose traces by partial evaluation instead, which
        # records the identities of what depends on the inputs.
        self.forwards_identities = True

    def forwards(self, x: Any) -> bool:
        """Whether an identity applied to ``x`` is ``x`` itself here."""
        return self.forwards_identities or not (
            isinstance(x, JitTracer) and x._trace is self and self.arguments_of(x.jaxpr_var))

    def arguments_of(self, var: Var) -> list[int]:
        """The positions of the arguments ``var`` depends on (through the
        equations recorded so far)."""
        needed = {id(var)}
        for eqn in reversed(self.eqns):
            if any(id(v) in needed for v in eqn.outvars):
                needed.update(id(v) for v in eqn.invars if isinstance(v, Var))
        return [i for i, v in enumerate(self.invars) if id(v) in needed]

    def new_arg(self, aval: ArrayType) -> JitTracer:
        var = Var(aval)
        self.invars.append(var)
        return JitTracer(self, var)

    def to_atom(self, x: Any) -> Atom:
        if isinstance(x, JitTracer) and x._trace is self:
            return x.jaxpr_var
        if isinstance(x, Tracer):
            check_tracer_alive(x)
            return self._const_var(x, x.aval)
        if type(x) is Array:  # (its value is not read: it may live elsewhere)
            # Host scalars (JAX's typed host values) are literals; the
            # tangent side of an eager linearize receives the primal side's
            # as device arrays (``ad._SplitTrace``), which are constants.
            py = x._py
            if py is not None and not x.aval.shape:
                return Literal(py, x.aval)
            return self._const_var(x, x.aval)
        if type(x) in HI_VALUE_TYPES:
            return self._hi_const_var(x)
        value, aval = canonical_value(x)
        if not aval.shape:
            # As in JAX: Python and NumPy scalars, and weak scalars made from
            # Python values, are inlined; computed arrays are constants.
            if is_python_scalar(x) or is_typed_scalar(x):
                return Literal(x, aval)
            py = getattr(x, "_py", None)
            if py is not None:
                return Literal(py, aval)
            if isinstance(x, (np.ndarray, np.generic)):
                return Literal(value, aval)
        return self._const_var(x, aval)

    def _hi_const_var(self, x: Any) -> Var:
        """A hi value closed over (or built from traced arrays outside any
        primitive, which the primitives' abstraction forbids: the value
        cannot be a constant then)."""
        aval = hi_type_of(x)
        for part in lower_value(aval, x):
            if isinstance(part, Tracer):
                raise TypeError("No constant handler for type: <class "
                                f"'jax._src.interpreters.partial_eval.{part._trace.name}r'>")
        return self._const_var(x, aval)

    def _const_var(self, x: Any, aval: ArrayType) -> Var:
        known = self._consts.get(id(x))
        if known is not None:
            return known[0]
        var = Var(aval)
        self._consts[id(x)] = (var, x)
        return var

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        if _context.compile_time_eval and not any(isinstance(a, Tracer) for a in args):
            with set_current_trace(EvalTrace()):
                return EvalTrace().process_primitive(prim, args, params)
        atoms = [self.to_atom(a) for a in args]
        if not isinstance(prim.const_fold, Default) and atoms and all(
                isinstance(a, Literal) for a in atoms):
            folded = prim.const_fold(*[literal_value(a) for a in atoms if isinstance(a, Literal)],
                                     **params)
            if folded is not None:
                return folded
        out_avals = apply_typing(prim, [a.aval for a in atoms], params)
        outvars = [Var(a) for a in out_avals]
        eqn = Eqn(atoms, outvars, prim, params, source_info=si.current(self.name_stack_depth))
        if not isinstance(prim.effects_rule, Default):
            eqn.effects = prim.effects_rule(atoms, params)
        inner = inherited_effects(params)
        if inner:
            eqn.effects = eqn.effects | inner
        self.eqns.append(eqn)
        return [JitTracer(self, v) for v in outvars]

    def to_jaxpr(self, outs: Sequence[Any]) -> Jaxpr:
        outvars = [self.to_atom(o) for o in outs]
        constvars = [v for v, _ in self._consts.values()]
        consts = [c for _, c in self._consts.values()]
        return Jaxpr(constvars, list(self.invars), outvars, list(self.eqns),
                     jaxpr_effects(constvars, self.invars, self.eqns), consts=consts)


def _renamed_effects(effects: frozenset[Any], old: Sequence[Any], new: Sequence[Any]
                     ) -> frozenset[Any]:
    to_new = {id(a): b for a, b in zip(old, new)}
    return frozenset(dc_replace(e, ref=to_new.get(id(e.ref), e.ref)) if hasattr(e, "ref")
                     else e for e in effects)


def jaxpr_effects(constvars: Sequence[Var], invars: Sequence[Var], eqns: Sequence[Eqn]
                  ) -> frozenset[Any]:
    """A jaxpr's effects: its equations' writes to refs it takes (as inputs
    or constants); writes to refs it creates are internal."""
    found = [e for eqn in eqns for e in eqn.effects]
    if not found:
        return frozenset()
    boundary = {id(v) for v in (*constvars, *invars)}
    return frozenset(e for e in found if not names_ref(e) or id(e.ref) in boundary)


def inherited_effects(params: dict[str, Any]) -> frozenset[Any]:
    """The effects on the world (prints, callbacks) of the sub-jaxprs in an
    equation's params: the equation has them too, whatever its own rule says
    about ref writes."""
    subs = jaxprs_in_params(params)
    if not subs:
        return frozenset()
    return world_effects(e for j in subs for eqn in j.eqns for e in eqn.effects)


def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ArrayType],
                   debug_info: DebugInfo | None = None, *, forwards_identities: bool = True
                   ) -> tuple[Jaxpr, Sequence[Any]]:
    """Stage ``fun`` (flat arrays in, flat arrays out) into a jaxpr.

    Returns the jaxpr, whose ``consts`` hold the values of its constvars
    (possibly tracers of an enclosing trace), and ``fun``'s raw outputs.
    ``debug_info`` names the function and its arguments in errors;
    ``forwards_identities`` is ``JaxprTrace.forwards_identities``.
    """
    trace = JaxprTrace()
    trace.debug_info = debug_info
    trace.forwards_identities = forwards_identities
    args = [trace.new_arg(a) for a in in_avals]
    try:
        with set_current_trace(trace), si.tracing_from(sys._getframe()):
            outs = fun(*args)
            jaxpr = trace.to_jaxpr(outs)
    finally:
        trace.invalidate()
    return jaxpr, outs


# ============================================================== evaluation


def _read(env: dict[Var, Any], atom: Atom) -> Any:
    if isinstance(atom, Literal):
        return np.asarray(atom.val, dtype=atom.aval.dtype)
    return env[atom]


@dataclass(frozen=True)
class _Step:
    impl: Callable[..., Sequence[Any]]
    params: dict[str, Any]
    inputs: tuple[tuple[bool, Any], ...]  # (is_slot, slot index or literal value)
    outputs: tuple[int, ...]
    release: tuple[int, ...]  # slots read for the last time here


@dataclass(frozen=True)
class _Plan:
    """A jaxpr compiled for repeated NumPy evaluation: variables become list
    slots, literals are converted once, and each value is released after its
    last use so large intermediates do not pile up."""

    n_slots: int
    const_slots: tuple[int, ...]
    in_slots: tuple[int, ...]
    steps: tuple[_Step, ...]
    outputs: tuple[tuple[bool, Any], ...]


def _plan_of(jaxpr: Jaxpr) -> _Plan:
    plan = jaxpr._plan
    if plan is None:
        plan = jaxpr._plan = _make_plan(jaxpr)
    return plan  # type: ignore[no-any-return]


def _make_plan(jaxpr: Jaxpr) -> _Plan:
    check_program(jaxpr)  # compiling the program sizes its buffers
    slot: dict[int, int] = {}

    def bind(v: Var) -> int:
        slot[id(v)] = len(slot)
        return slot[id(v)]

    def ref(a: Atom) -> tuple[bool, Any]:
        if isinstance(a, Literal):
            return (False, np.asarray(a.val, dtype=a.aval.dtype))
        return (True, slot[id(a)])

    const_slots = tuple(bind(v) for v in jaxpr.constvars)
    in_slots = tuple(bind(v) for v in jaxpr.invars)
    last_use: dict[int, int] = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if isinstance(a, Var):
                last_use[id(a)] = i
    kept = {id(a) for a in jaxpr.outvars if isinstance(a, Var)}
    steps = []
    for i, eqn in enumerate(jaxpr.eqns):
        inputs = tuple(ref(a) for a in eqn.invars)
        outputs = tuple(bind(v) for v in eqn.outvars)
        release = tuple(sorted({slot[id(a)] for a in eqn.invars if isinstance(a, Var)
                                and last_use[id(a)] == i and id(a) not in kept}))
        impl = eqn.primitive.impl
        info = eqn.source_info
        if info is not None and not info.threefry_partitionable:
            impl = under_traced_context(impl, info)
        steps.append(_Step(impl, eqn.params, inputs, outputs, release))
    outs = tuple(ref(a) for a in jaxpr.outvars)
    return _Plan(len(slot), const_slots, in_slots, tuple(steps), outs)


def under_traced_context(impl: Callable[..., Sequence[Any]], info: Any
                          ) -> Callable[..., Sequence[Any]]:
    """``impl`` run with the configuration its equation was traced under
    (an equation bound with ``jax_threefry_partitionable`` off draws by the
    original scheme wherever it is evaluated)."""
    def run(*args: Any, **params: Any) -> Sequence[Any]:
        with si.traced_context(info):
            return impl(*args, **params)
    return run


def eval_jaxpr_values(jaxpr: Jaxpr, consts: Sequence[np.ndarray],
                      args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run an already type-checked jaxpr on NumPy values (no re-typing)."""
    plan = _plan_of(jaxpr)
    env: list[Any] = [None] * plan.n_slots
    for i, c in zip(plan.const_slots, consts):
        env[i] = c
    for i, a in zip(plan.in_slots, args):
        env[i] = a
    for step in plan.steps:
        outs = step.impl(*[env[x] if is_slot else x for is_slot, x in step.inputs],
                         **step.params)
        for i, o in zip(step.outputs, outs):
            env[i] = o
        for i in step.release:
            env[i] = None
    return [env[x] if is_slot else x for is_slot, x in plan.outputs]


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any,
               propagate_source_info: bool = True) -> list[Any]:
    """Evaluate by binding every equation under the current trace, with the
    equation's source location (the caller's with ``propagate_source_info``
    off)."""

    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom: Atom) -> Any:
        return literal_value(atom) if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        with si.inherited(eqn.source_info if propagate_source_info else None):
            outs = current_trace().process_primitive(
                eqn.primitive, [read(a) for a in eqn.invars], eqn.params)
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def device_array(x: Any) -> Any:
    """``x`` as a user-facing array. Made eagerly, a host scalar (``_py``
    set) becomes a plain Array, which a later trace captures as a constant
    (JAX's eager jnp.array, jnp.zeros, ... return device arrays); made while
    tracing, it stays a host value, so it is a literal (JAX stages it so)."""
    if type(current_trace()) is EvalTrace:
        return on_device(x)
    return x


def literal_value(lit: Literal) -> Any:
    """A literal as an operand: a host scalar of exactly the literal's type
    (weak type included), which re-staging keeps a literal; a typed Python
    scalar is itself."""
    if is_typed_scalar(lit.val):
        return lit.val
    return weak_scalar(lit.val, np.asarray(lit.val, dtype=lit.aval.dtype), lit.aval)


# ============================================================ type checking


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Re-derive every equation's output types from its typing rule.

    Raises JaxprTypeError naming the equation on any mismatch, on a variable
    read before it is bound, or on a variable bound twice.
    """
    bound: set[int] = set()

    def bind(v: Var, where: str) -> None:
        if id(v) in bound:
            raise JaxprTypeError(f"{where}: variable {v} is bound more than once")
        bound.add(id(v))

    def read(a: Atom, where: str) -> ArrayType:
        if isinstance(a, Var) and id(a) not in bound:
            raise JaxprTypeError(f"{where}: variable {a} is read before it is bound")
        return a.aval

    for v in jaxpr.constvars + jaxpr.invars:
        bind(v, "binders")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i} ({eqn.primitive.name})"
        in_avals = [read(a, where) for a in eqn.invars]
        try:
            expected = list(_typed(eqn.primitive, in_avals, eqn.params))
        except (TypeError, ValueError) as err:
            raise JaxprTypeError(f"{where}: typing rule rejects operands: {err}") from err
        actual = [v.aval for v in eqn.outvars]
        if expected != actual:
            raise JaxprTypeError(f"{where}: typing rule gives {expected}, equation binds {actual}")
        # Sub-jaxprs are checked in the context their primitive traces them
        # in (shard_map: its manual axes).
        context = eqn.primitive.body_context
        with (contextlib.nullcontext() if isinstance(context, Default)
              else context(eqn.params)):
            for sub in jaxprs_in_params(eqn.params):
                check_jaxpr(sub)
        for v in eqn.outvars:
            if not isinstance(v, DropVar):
                bind(v, where)
    for out in jaxpr.outvars:
        read(out, "outputs")


def dce_jaxpr(jaxpr: Jaxpr, *, rules: bool = True) -> Jaxpr:
    """Drop equations whose outputs nothing reads and that have no effects
    (writes to refs), and constants nothing reads; inputs and outputs are kept. With
    ``rules``, equations with a ``dce`` rule are also pruned inside (unused
    outputs of calls, branches and loops, and the work that fed only them),
    as JAX's dead-code elimination does."""
    new, _ = _dce(jaxpr, [True] * len(jaxpr.outvars), [True] * len(jaxpr.invars), rules)
    return new


def dce_sub_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool],
                  instantiate: bool | Sequence[bool] = False) -> tuple[Jaxpr, list[bool]]:
    """Dead-code elimination of a sub-jaxpr, for ``dce`` rules: keeps the used
    outputs, the equations they need and the inputs they read (or that
    ``instantiate`` asks to keep); returns the jaxpr (the same object when
    nothing changed) and which inputs it still takes."""
    inst = [instantiate] * len(jaxpr.invars) if isinstance(instantiate, bool) \
        else list(instantiate)
    return _dce(jaxpr, list(used_outputs), inst, True)


def dce_of_call(param: str) -> Callable[[Eqn, list[bool]], tuple[list[bool], Eqn | None]]:
    """The ``dce`` rule of a call whose body is ``params[param]``: a call of
    the pruned body, without the unused results, the work only they needed
    and the operands nothing else reads."""
    def rule(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
        body: Jaxpr = eqn.params[param]
        new, used_inputs = dce_sub_jaxpr(body, used_outputs)
        if new is body:
            return used_inputs, eqn
        return used_inputs, eqn.replace(
            invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
            outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
            params={**eqn.params, param: new})
    return rule


def sharding_of_call(param: str) -> Callable[..., list[Any]]:
    """The ``sharding`` rule of a call whose body is ``params[param]``: the
    results have the shardings of the body's results (the body was traced
    from the operands' sharded types, so its results carry theirs)."""
    def rule(*avals: Any, **params: Any) -> list[Any]:
        body: Jaxpr = params[param]
        return [a.sharding for a in body.out_avals]
    return rule


def _asks_rule_unused(eqn: Eqn, rules: bool) -> bool:
    """An equation without results and sub-programs that has a ``dce`` rule
    exists for what it does to its operands (``free_ref``): its rule, not
    the absence of readers, decides whether it stays."""
    return (rules and not eqn.outvars and not isinstance(eqn.primitive.dce, Default)
            and not jaxprs_in_params(eqn.params))


def _dce(jaxpr: Jaxpr, used_outputs: list[bool], instantiate: list[bool], rules: bool
         ) -> tuple[Jaxpr, list[bool]]:
    live: set[int] = {id(a) for a, u in zip(jaxpr.outvars, used_outputs)
                      if u and isinstance(a, Var)}
    kept: list[Eqn] = []
    changed = False
    for eqn in reversed(jaxpr.eqns):
        used_outs = [id(v) in live for v in eqn.outvars]
        new: Eqn | None
        if eqn.effects:
            used_ins, new = [True] * len(eqn.invars), eqn
        elif not any(used_outs) and not _asks_rule_unused(eqn, rules):
            used_ins, new = [False] * len(eqn.invars), None
        elif rules and not isinstance(eqn.primitive.dce, Default):
            used_ins, new = eqn.primitive.dce(eqn, used_outs)
        else:
            used_ins, new = [True] * len(eqn.invars), eqn
        changed = changed or new is not eqn
        if new is not None:
            kept.append(new)
        live.update(id(a) for a, u in zip(eqn.invars, used_ins) if u and isinstance(a, Var))
    kept.reverse()
    used_inputs = [inst or id(v) in live for v, inst in zip(jaxpr.invars, instantiate)]
    used_consts = [id(v) in live for v in jaxpr.constvars]
    if not changed and all(used_inputs) and all(used_outputs) and all(used_consts):
        return jaxpr, used_inputs
    pairs = [(v, c) for v, c, u in zip(jaxpr.constvars, jaxpr.consts or [None] * len(
        jaxpr.constvars), used_consts) if u]
    consts = [c for _, c in pairs] if jaxpr.consts else []
    new_jaxpr = Jaxpr([v for v, _ in pairs], [v for v, u in zip(jaxpr.invars, used_inputs) if u],
                      [a for a, u in zip(jaxpr.outvars, used_outputs) if u], kept,
                      jaxpr.effects, consts)
    return new_jaxpr, used_inputs


_HAS_HI_TYPES: weakref.WeakKeyDictionary[Jaxpr, bool] = weakref.WeakKeyDictionary()


def has_hi_types(jaxpr: Jaxpr) -> bool:
    """Whether any value of ``jaxpr`` (or of a sub-jaxpr) has a hi type
    (remembered per program: eager calls ask it every time)."""
    known = _HAS_HI_TYPES.get(jaxpr)
    if known is None:
        known = any(is_high(v.aval) for v in (*jaxpr.constvars, *jaxpr.invars)) or any(
            eqn_has_hi_types(e) for e in jaxpr.eqns)
        _HAS_HI_TYPES[jaxpr] = known
    return known


def eqn_has_hi_types(eqn: Eqn) -> bool:
    if any(is_high(a.aval) for a in (*eqn.invars, *eqn.outvars)):
        return True
    return any(has_hi_types(j) for j in jaxprs_in_params(eqn.params))


def jaxprs_in_params(params: dict[str, Any]) -> list[Jaxpr]:
    found: list[Jaxpr] = []
    for value in params.values():
        if isinstance(value, Jaxpr):
            found.append(value)
        elif isinstance(value, tuple) and value and all(isinstance(j, Jaxpr) for j in value):
            found.extend(value)
    return found


# ================================================================ printing


def _alphabetic(n: int) -> str:
    """0 -> a, 25 -> z, 26 -> ba: base 26 with letters as digits."""
    s = ""
    while not s or n:
        n, digit = divmod(n, 26)
        s = chr(ord("a") + digit) + s
    return s


class PpContext:
    """Names variables in order of first printing, across nested jaxprs."""

    def __init__(self, *, source_info: bool = False, name_stack: bool = False) -> None:
        self.source_info = source_info
        self.name_stack = name_stack
        self.names: dict[int, str] = {}
        self.shared_names: set[str] = set()
        self.shared: dict[int, str] = {}
        self._counter = 0
        self._keep: list[Any] = []  # keeps named objects alive so ids stay unique

    def name(self, v: Var) -> str:
        known = self.names.get(id(v))
        if known is not None:
            return known
        while True:
            candidate = _alphabetic(self._counter)
            self._counter += 1
            if candidate not in self.shared_names:
                break
        self.names[id(v)] = candidate
        self._keep.append(v)
        return candidate

    def suggest_same_names(self, for_vars: Sequence[Atom], like_vars: Sequence[Atom]) -> None:
        """Let an inner jaxpr's binders reuse the names of the outer atoms they alias."""
        if len(for_vars) != len(like_vars):
            return
        used: set[int] = set()
        for inner, outer in zip(for_vars, like_vars):
            if (isinstance(outer, Var) and id(outer) not in used and isinstance(inner, Var)
                    and id(inner) not in self.names):
                used.add(id(outer))
                self.names[id(inner)] = self.atom_text(outer)
                self._keep.append(inner)

    def atom_text(self, a: Atom) -> str:
        if isinstance(a, Literal):
            return _literal_text(a)
        if isinstance(a, DropVar):
            return "_"
        return self.name(a)


def _literal_text(lit: Literal) -> str:
    return f"{np.asarray(lit.val).item()}:{lit.aval.str_short(True)}"


def pp_vars(vs: Sequence[Atom], ctx: PpContext, *, separator: str = "",
            print_shapes: bool = False) -> pp.Doc:
    if print_shapes:
        items = [pp.text(f"{ctx.atom_text(v)}:{v.aval.str_short(True)}") for v in vs]
    else:
        items = [pp.text(ctx.atom_text(v)) for v in vs]
    return pp.nest(2, pp.group(pp.join(pp.text(separator) + pp.group(pp.brk()), items)))


def pp_param_value(value: Any, ctx: PpContext) -> pp.Doc:
    if isinstance(value, Jaxpr):
        return pp_jaxpr(value, ctx)
    if isinstance(value, tuple) and value and all(isinstance(j, Jaxpr) for j in value):
        return pp.group(pp.concat([
            pp.nest(2, pp.concat([pp.text("("), pp.brk(""),
                                  pp.join(pp.brk(), [pp_jaxpr(j, ctx) for j in value])])),
            pp.brk(""), pp.text(")")]))
    return pp.text(str(value))


def pp_params(params: dict[str, Any], ctx: PpContext, sort: bool = True) -> pp.Doc:
    if not params:
        return pp.NIL
    keys = sorted(params) if sort else list(params)
    pairs = [pp.text(f"{k}=") + pp_param_value(params[k], ctx) for k in keys]
    return pp.group(pp.concat([
        pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), pairs)])),
        pp.brk(""), pp.text("]")]))


def pp_eqn_default(eqn: Eqn, ctx: PpContext, params: dict[str, Any] | None = None,
                   sort: bool = True) -> pp.Doc:
    """Print ``outs = name[params] ins``; ``params`` overrides what is shown,
    in sorted key order unless ``sort`` is False."""
    lhs = pp_vars(eqn.outvars, ctx, print_shapes=True)
    rhs = [pp.text(eqn.primitive.name),
           pp_params(eqn.params if params is None else params, ctx, sort),
           pp.text(" ") + pp_vars(eqn.invars, ctx)]
    if eqn.outvars:
        return pp.concat([lhs, pp.text(" = "), *rhs])
    return pp.concat(rhs)


def pp_eqn(eqn: Eqn, ctx: PpContext) -> pp.Doc:
    rule = eqn.primitive.pp_rule
    doc = pp_eqn_default(eqn, ctx) if isinstance(rule, Default) else rule(eqn, ctx)
    notes: list[pp.Doc] = []
    if ctx.source_info:
        notes.append(pp.annotation(si.summarize(eqn.source_info)))
    if ctx.name_stack:
        stack = eqn.source_info.name_stack if eqn.source_info is not None else ""
        notes.append(pp.annotation(f"[{stack}]"))
    return pp.concat([*notes, doc]) if notes else doc


def pp_jaxpr(jaxpr: Jaxpr, ctx: PpContext) -> pp.Doc:
    shared = ctx.shared.get(id(jaxpr))
    if shared is not None:
        return pp.text(shared)
    return _pp_skeleton(jaxpr, ctx)


def _pp_skeleton(jaxpr: Jaxpr, ctx: PpContext) -> pp.Doc:
    constvars = pp_vars(jaxpr.constvars, ctx, print_shapes=True)
    invars = pp_vars(jaxpr.invars, ctx, print_shapes=True)
    eqns = pp.join(pp.brk("; "), [pp_eqn(e, ctx) for e in jaxpr.eqns])
    close = ")" if len(jaxpr.outvars) != 1 else ",)"
    outvars = pp.concat([pp.text("("), pp_vars(jaxpr.outvars, ctx, separator=","), pp.text(close)])
    return pp.group(pp.nest(2, pp.concat([
        pp.text("{ "), pp.text("lambda "), constvars, pp.text("; "), invars, pp.text(". "),
        pp.text("let"), pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in "), outvars,
    ])) + pp.text(" }"))


def _subjaxprs(eqn: Eqn) -> list[tuple[str, Jaxpr]]:
    name = str(eqn.params.get("name", "jaxpr"))
    return [(name, j) for j in jaxprs_in_params(eqn.params)]


def _name_unread_outputs(jaxpr: Jaxpr, ctx: PpContext) -> None:
    """In the printed (top-level) jaxpr, equation outputs that nothing later
    reads are shown as ``_``; nested jaxprs keep their names."""
    read = {id(a) for a in jaxpr.outvars if isinstance(a, Var)}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if id(v) not in read:
                ctx.names[id(v)] = "_"
                ctx._keep.append(v)
        read.update(id(a) for a in eqn.invars if isinstance(a, Var))


def pp_toplevel(top: Jaxpr, *, source_info: bool = False, name_stack: bool = False
                ) -> pp.Doc:
    """Print a jaxpr; sub-jaxprs used more than once (or large ones used from
    a nested position) are hoisted into ``let name = {...} in`` headers."""
    ctx = PpContext(source_info=source_info, name_stack=name_stack)
    _name_unread_outputs(top, ctx)
    counts: Counter[int] = Counter()
    by_id: dict[int, Jaxpr] = {}
    names: dict[int, str] = {}
    queue = [top]
    while queue:
        j = queue.pop(0)
        counts[id(j)] += 1
        by_id[id(j)] = j
        if j is not top and len(j.eqns) > 10:
            counts[id(j)] += 1
        for eqn in j.eqns:
            for name, sub in _subjaxprs(eqn):
                queue.append(sub)
                names.setdefault(id(sub), name.strip("<>"))
    used_names: Counter[str] = Counter()
    docs: list[pp.Doc] = []
    hoisted: list[tuple[str, Jaxpr]] = []
    for jid, count in counts.items():
        if count == 1:
            continue
        name = names.get(jid, "jaxpr")
        seen = used_names[name]
        used_names[name] += 1
        if seen:
            name += str(seen)
            used_names[name] += 1
        ctx.shared_names.add(name)
        ctx.shared[jid] = name
        hoisted.append((name, by_id[jid]))
    for name, j in hoisted:
        docs.append(pp.concat([pp.text(f"let {name} = "), _pp_skeleton(j, ctx), pp.text(" in"),
                               pp.brk()]))
    docs.append(pp_jaxpr(top, ctx))
    return pp.concat(docs)


def pp_hiding(*hidden: str, when: Callable[[str, Any], bool] | None = None) -> PpRule:
    """A pp rule that omits the named params (or those ``when`` selects)."""

    def rule(eqn: Eqn, ctx: PpContext) -> pp.Doc:
        params = {k: v for k, v in eqn.params.items()
                  if k not in hidden and not (when is not None and when(k, v))}
        return pp_eqn_default(eqn, ctx, params)

    return rule


def canonical_aval_of(x: Any) -> ArrayType:
    """The type a value would have as an operand (tracers included)."""
    if isinstance(x, Tracer):
        check_tracer_alive(x)
        return x.aval
    aval = getattr(x, "aval", None)
    if isinstance(aval, ArrayType):
        return aval
    if type(x) in HI_VALUE_TYPES:
        hi: ArrayType = hi_type_of(x)  # (a hi type stands where array types do)
        return hi
    return canonical_value(x)[1]


def is_concrete(x: Any) -> bool:
    return not isinstance(x, Tracer)


def to_concrete_value(x: Any) -> Any:
    """``x``'s value if it is known while tracing (``x`` itself when it is no
    tracer), else None."""
    return x.to_concrete_value() if isinstance(x, Tracer) else x


__all__ = [
    "lowering_hi_values",
    "Atom", "ClosedJaxpr", "DropVar", "Eqn", "EvalTrace", "Jaxpr", "JaxprTrace", "JitTracer",
    "Literal", "NotApplicable", "Pending", "PpContext", "Primitive", "Trace", "Tracer", "Var",
    "canonical_aval_of", "canonical_value", "canonicalize_dtype", "check_jaxpr", "current_trace",
    "dce_jaxpr", "dce_sub_jaxpr", "literal_value",
    "eval_jaxpr", "eval_jaxpr_values", "not_applicable", "pending", "pp_eqn_default",
    "pp_hiding", "set_current_trace", "to_concrete_value", "trace_to_jaxpr",
]
