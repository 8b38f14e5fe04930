"""Automatic differentiation: the JVP trace, linearize (direct and legacy),
partial evaluation, and transposition of linear programs.

Forward mode is a trace whose tracers carry (primal, tangent) pairs; each
primitive's JVP rule maps them. Reverse mode is linearize followed by
transpose:

- *direct linearize* runs the function once under a ``LinearizeTrace``: each
  JVP rule runs with its primal computations sent to the enclosing trace and
  its tangent computations staged into a linear jaxpr; the values the tangent
  side reads from the primal side become that jaxpr's constants (residuals);
- the *legacy* path stages the whole JVP into one jaxpr, splits it by partial
  evaluation into a known (primal) jaxpr that also outputs residuals and an
  unknown (tangent) jaxpr that reads them, and evaluates the known part.

``config.jax_use_direct_linearize`` selects the path. ``backward_pass``
transposes a linear jaxpr equation by equation in reverse, checking that
every cotangent it produces has the cotangent type of its variable.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from spec._src.core import source_info as si
from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.core.state_types import RefType, indexer_tree
from spec._src.core.hitypes import is_high
from spec._src.interpreters.ad_util import (
    UndefinedPrimal,
    Zero,
    add_tangents,
    instantiate,
    zero_jvp,
    zeros_like_aval,
)
from spec._src.core.array import Array, on_device
from spec._src.interpreters.accumulators import GradAccum
from spec._src.core.config import config
from spec._src.core.sharding import _context as _typing_context
from spec._src.core.source_info import current_xla_metadata
from spec._src.core.registry import primitive
from spec._src.core.interpreter import (
    Atom,
    canonical_value,
    DropVar,
    Eqn,
    EvalTrace,
    Jaxpr,
    JaxprTrace,
    JitTracer,
    Literal,
    NotApplicable,
    Pending,
    Primitive,
    Trace,
    Tracer,
    Var,
    canonical_aval_of,
    check_tracer_alive,
    current_trace,
    dce_jaxpr,
    eval_jaxpr,
    jaxpr_effects,
    literal_value,
    set_current_trace,
    to_concrete_value,
    trace_to_jaxpr,
)
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.interpreters.batching import BatchTrace, BatchTracer

# ================================================================ rule lookup


def jvp_rule(prim: Primitive) -> Callable[..., tuple[list[Any], list[Any]]]:
    rule = prim.jvp
    if isinstance(rule, (Pending, NotApplicable)):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
    return rule


def transpose_rule(prim: Primitive) -> Callable[..., list[Any]]:
    rule = prim.transpose
    if isinstance(rule, (Pending, NotApplicable)):
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{prim.name}' not implemented")
    return rule


def _check_tangent(prim: Primitive, primal: Any, tangent: Any) -> None:
    """A rule's output tangent must have its primal's tangent type."""
    want = canonical_aval_of(primal).tangent_type()
    got = tangent.aval if type(tangent) is Zero else canonical_aval_of(tangent)
    differ = got != want if is_high(got) or is_high(want) else \
        got.shape != want.shape or got.dtype != want.dtype
    if differ:
        raise TypeError(f"JVP rule of {prim.name} produced a tangent of type {got} for a "
                        f"primal of type {canonical_aval_of(primal)}; expected {want}")


# ================================================================== forward


class JVPTracer(Tracer):
    __slots__ = ("_trace", "primal", "tangent")

    def __init__(self, trace: Trace, primal: Any, tangent: Any) -> None:
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ArrayType:
        return canonical_aval_of(self.primal)

    def __repr__(self) -> str:
        return f"JVPTracer(primal={self.primal}, tangent={self.tangent})"

    def to_concrete_value(self) -> Any:
        # A concrete primal is known: jnp functions that need a value while
        # tracing (nonzero, unique) work under jvp, vjp and linearize, as in JAX.
        return to_concrete_value(self.primal)


class JVPTrace(Trace):
    """Forward mode: tracers carry a primal and a tangent (or a symbolic zero)."""

    name = "JVPTrace"
    tracer_type: type[JVPTracer] = JVPTracer

    def __init__(self, parent: Trace, structured: list[Any] | None = None) -> None:
        super().__init__()
        self.parent = parent
        # Reverse mode records JAX's structured residuals here (see
        # "structured residuals" below); None: not recorded.
        self.structured = structured
        # How many calls JAX stages inline are open on this trace.
        self.inline_depth = 0

    def unpack(self, x: Any) -> tuple[Any, Any]:
        if isinstance(x, self.tracer_type) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            check_tracer_alive(x)
        return x, Zero(canonical_aval_of(x).tangent_type())

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        pairs = [self.unpack(a) for a in args]
        primals = [p for p, _ in pairs]
        # A float0 tangent (of an integer value) is zero whatever its form:
        # the rules see it as the symbolic Zero.
        tangents = [_symbolic_if_float0(t) for _, t in pairs]
        # A float0 tangent that is a value (a hijax primitive's, or a call's
        # passing one on) still counts for structured residuals, as JAX's
        # linearization keeps it nonzero up to the next primitive.
        nonzero = [type(t) is not Zero for _, t in pairs]
        if all(type(t) is Zero for t in tangents) and not prim.jvp_on_zero_tangents:
            # Nothing to differentiate: the primal computation alone.
            with self.recording(prim, nonzero, params), set_current_trace(self.parent):
                outs = prim.bind(*primals, **params)
            return list(outs) if prim.multiple_results else [outs]
        p_outs, t_outs = self.apply_rule(prim, primals, tangents, params, nonzero)
        return self.wrap(prim, p_outs, t_outs)

    def apply_rule(self, prim: Primitive, primals: list[Any], tangents: list[Any],
                   params: dict[str, Any], nonzero: list[bool] | None = None
                   ) -> tuple[list[Any], list[Any]]:
        nonzero = _nonzero_flags(tangents) if nonzero is None else nonzero
        with self.recording(prim, nonzero, params), set_current_trace(self.parent):
            return jvp_rule(prim)(primals, tangents, **params)

    @contextlib.contextmanager
    def recording(self, prim: Primitive, nonzero: Sequence[bool],
                  params: dict[str, Any]) -> Iterator[None]:
        """While ``prim``'s rule runs (with these inputs having tangents): its
        structured residual entry (a call or loop) recorded, and the rule
        able to add its own (a hijax primitive's ``vjp_fwd``, through
        ``add_structured_residual``)."""
        slot = None
        if self.structured is not None:
            entry = _structured_entry(prim, nonzero, params)
            if entry is not None:
                slot = entry[0]
                self.structured.append(slot)
        # A rule run by a trace that does not record (forward mode, the body
        # of a loop) records nothing into an enclosing trace's list.
        _recorders.stack.append(self.structured)
        _recorders.slots.append(slot)
        try:
            yield
        finally:
            _recorders.stack.pop()
            _recorders.slots.pop()

    def wrap(self, prim: Primitive, p_outs: Sequence[Any], t_outs: Sequence[Any]) -> list[Any]:
        result = []
        for p, t in zip(p_outs, t_outs):
            _check_tangent(prim, p, t)
            result.append(p if type(t) is Zero else self.tracer_type(self, p, t))
        return result


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any], structured: list[Any] | None = None,
             named: bool = True) -> tuple[list[Any], list[Any]]:
    """Primal and tangent outputs of ``fun`` (flat lists in and out); tangents
    may be ``Zero``; output tangents are ``Zero`` where nothing flowed.
    ``structured`` collects the structured residuals (reverse mode).
    ``named``: equations staged inside carry ``jvp`` on their name stacks (a
    user's transformation; a rule differentiating a body does not add it)."""
    trace = JVPTrace(current_trace(), structured)
    tracers = [JVPTracer(trace, x, t) for x, t in zip(primals, tangents)]
    try:
        with set_current_trace(trace), si.transform("jvp", named):
            outs = fun(*tracers)
        unpacked = [trace.unpack(o) for o in outs]
    finally:
        trace.invalidate()
    return [p for p, _ in unpacked], [t for _, t in unpacked]


# ============================================================ direct linearize


class LinearizeTracer(JVPTracer):
    """A primal value (of the enclosing trace) and its tangent, a variable of
    the linear jaxpr being staged (or a symbolic zero)."""

    __slots__ = ()

    def __repr__(self) -> str:
        t = self.tangent
        # JAX names this tracer ``GradTracer`` when printing it.
        return f"GradTracer(primal={self.primal}, typeof(tangent)={t.aval.str_short(True)})"


class _SplitTrace(Trace):
    """Runs one JVP rule for the linearize trace: operations that read a
    tangent are staged into the linear jaxpr, all others go to the primal
    (enclosing) trace."""

    name = "LinearizeTrace"

    def __init__(self, primal: Trace, tangent: JaxprTrace,
                 staged: dict[int, tuple[Any, Any]]) -> None:
        super().__init__()
        self.primal = primal
        self.tangent = tangent
        self.staged = staged
        # Host scalars the rule computed as JAX does with a bind (by id;
        # the values are kept so that ids are not reused).
        self.computed: dict[int, Any] = {}
        # Whether the rule is a custom_jvp rule, and how many jnp function
        # bodies JAX stages as inline jits enclose the code running now.
        # There JAX partially evaluates the rule, tracing each such body
        # with the whole name stack, and evaluates its tangent side under
        # the linearization: those tangent equations are named by the whole
        # stack under the whole stack, the names from before the
        # linearization began kept (``transpose(jvp(jvp()))/mul`` for
        # ``t * x`` in a rule under grad, ``vmap(transpose(vmap(jvp(vmap(
        # jvp())))))/mul`` under vmap of grad).
        self.custom_rule = False
        self.jnp_depth = 0

    def process_primitive(self, prim: Primitive, args: Sequence[Any],
                          params: dict[str, Any]) -> list[Any]:
        if any(isinstance(a, JitTracer) and a._trace is self.tangent for a in args):
            args = [self._staged(a) for a in args]
            if self.custom_rule and self.jnp_depth:
                with si.whole_name_stack_twice(self.tangent.name_stack_depth):
                    return self.tangent.process_primitive(prim, args, params)
            return self.tangent.process_primitive(prim, args, params)
        return self.primal.process_primitive(prim, args, params)

    def _staged(self, x: Any) -> Any:
        """A host scalar of the primal side as a device array, once per
        object (so the linear jaxpr captures it as one constant however
        often it is read). Staging, or in the body of an early-inlined jnp
        function (which JAX traces to a jaxpr first), only those the rule
        computed (see ``computed_on_primal_side``) are: the others stay
        literals."""
        if getattr(x, "_py", None) is None:
            return x
        if (not self.eager or inside_inline_body()) and id(x) not in self.computed:
            return x
        known = self.staged.get(id(x))
        if known is None:
            known = self.staged[id(x)] = (x, on_device(x))
        return known[1]

    @functools.cached_property
    def eager(self) -> bool:
        """Whether the primal side bottoms out in evaluation. JAX stages a
        host scalar into the primal side before the tangent side captures
        it: evaluated, it becomes a device array (a constant of the linear
        jaxpr, never a literal), so here too."""
        trace = self.primal
        while isinstance(trace, JVPTrace):
            trace = trace.parent
        return isinstance(trace, EvalTrace)


def run_jnp_body(trace: Trace, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, the body of a jnp function JAX stages as an inline
    jit, run where no trace records such calls (``trace``: the current
    one); counted in a custom_jvp rule's linearization (see
    ``_SplitTrace.custom_rule``)."""
    if type(trace) is not _SplitTrace or not trace.custom_rule:
        return fn(*args, **kwargs)
    trace.jnp_depth += 1
    try:
        return fn(*args, **kwargs)
    finally:
        trace.jnp_depth -= 1


def split_primal_side(trace: Trace, args: Sequence[Any]) -> Trace | None:
    """While a JVP rule runs for linearize (``trace``), the primal
    (enclosing) trace for a call none of whose ``args`` is a staged tangent;
    ``None`` for any other trace or call."""
    if not isinstance(trace, _SplitTrace):
        return None
    if any(isinstance(a, JitTracer) and a._trace is trace.tangent for a in args):
        return None
    return trace.primal


def computed_on_primal_side(x: Any) -> Any:
    """``x``, a value a rule computes where JAX binds a primitive to make it
    (``lax.full``: materialised zeros). Made while a JVP rule runs for
    linearize, a host scalar so made is a residual when the tangents read
    it, as JAX saves every known value its linearization of a rule reads;
    other host scalars (Python constants, literals of the jaxpr being
    linearized) stay literals of the linear jaxpr."""
    trace = current_trace()
    if isinstance(trace, _SplitTrace) and getattr(x, "_py", None) is not None:
        trace.computed[id(x)] = x
    return x


def in_linearize_rule() -> bool:
    """Whether a JVP rule is running for linearize: its primal operands are
    then concrete values where JAX's are tracers of the primal trace, so
    what JAX reads off their types (the sharding of a ``*_like``) is read
    off theirs."""
    return isinstance(current_trace(), _SplitTrace)


@contextlib.contextmanager
def tangent_side() -> Iterator[None]:
    """Binds in the block compute tangents: while a JVP rule runs for
    linearize, they are staged into the linear jaxpr even when no operand
    is a tangent (a materialised zero, a tangent ref of zeros)."""
    trace = current_trace()
    if not isinstance(trace, _SplitTrace):
        yield
        return
    with set_current_trace(trace.tangent):
        yield


def _nonzero_flags(tangents: Sequence[Any]) -> list[bool]:
    return [type(t) is not Zero for t in tangents]


def _symbolic_if_float0(t: Any) -> Any:
    if type(t) is Zero:
        return t
    aval = canonical_aval_of(t)
    # A hi tangent type has no dtype of its own: never float0.
    return Zero(aval) if getattr(aval, "dtype", None) == T.FLOAT0 else t


def instantiate_tangent(t: Any) -> Any:
    """A tangent as a value, made where tangents are computed."""
    if type(t) is not Zero:
        return t
    with tangent_side():
        return instantiate(t)


class LinearizeTrace(JVPTrace):
    """Direct linearize: primal outputs now, tangent equations staged."""

    name = "LinearizeTrace"
    tracer_type = LinearizeTracer

    def __init__(self, parent: Trace, tangent_trace: JaxprTrace) -> None:
        super().__init__(parent, [])
        self.tangent_trace = tangent_trace
        self.staged: dict[int, tuple[Any, Any]] = {}

    def apply_rule(self, prim: Primitive, primals: list[Any], tangents: list[Any],
                   params: dict[str, Any], nonzero: list[bool] | None = None
                   ) -> tuple[list[Any], list[Any]]:
        nonzero = _nonzero_flags(tangents) if nonzero is None else nonzero
        with self.recording(prim, nonzero, params):
            if callable(prim.linearize):
                return prim.linearize(self, primals, tangents, **params)  # type: ignore[no-any-return]
            split = _SplitTrace(self.parent, self.tangent_trace, self.staged)
            split.custom_rule = prim.name == "custom_jvp_call"
            with set_current_trace(split):
                return jvp_rule(prim)(primals, tangents, **params)


@dataclass
class Linearized:
    """The result of linearizing a flat function at a point: the primal
    outputs and a linear jaxpr from input tangents to output tangents whose
    ``consts`` are the residuals (values of the enclosing trace)."""

    primals_out: list[Any]
    jaxpr: Jaxpr
    # The shape of JAX's structured residuals (``VJP.structured_residuals``).
    structured: list[Any] = field(default_factory=list)
    # The host scalars of the primal side among the residuals: the id of
    # the device array ``consts`` holds for each, and the host value.
    host_residuals: dict[int, Any] = field(default_factory=dict)
    # Per output, whether its tangent is not a symbolic zero (None: all are).
    out_nonzero: list[bool] | None = None


def linearize_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any]) -> Linearized:
    """Linearize ``fun`` at ``primals``; the linear jaxpr has one input per
    primal (float0 for integer primals, which get no tangent)."""
    if config.jax_use_direct_linearize:
        return direct_linearize(fun, primals)
    return _legacy_linearize(fun, primals)


def direct_linearize(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
                     differentiate: Sequence[bool] | None = None, named: bool = True
                     ) -> Linearized:
    """Direct linearize; ``differentiate`` selects the primals that get a
    tangent input (default: all), the others are held constant and have no
    input in the linear jaxpr. ``named`` as for ``jvp_flat``."""
    tangent_trace = JaxprTrace()
    tangent_trace.name_stack_depth = si.name_stack_depth()
    trace = LinearizeTrace(current_trace(), tangent_trace)
    tracers = []
    for i, x in enumerate(primals):
        if differentiate is not None and not differentiate[i]:
            tracers.append(x)
            continue
        t_aval = canonical_aval_of(x).tangent_type()
        t_arg = tangent_trace.new_arg(t_aval)
        # Integer inputs have float0 tangents, symbolically zero throughout:
        # as in JAX, the function sees the value itself, not a tracer.
        if not _is_differentiable(t_aval):
            tracers.append(x)
            continue
        tracers.append(LinearizeTracer(trace, x, t_arg))
    try:
        with set_current_trace(trace), si.transform("jvp", named):
            outs = fun(*tracers)
        unpacked = [trace.unpack(o) for o in outs]
        out_nonzero = [type(t) is not Zero for _, t in unpacked]
        with set_current_trace(tangent_trace):
            t_outs = [instantiate(t) for _, t in unpacked]
        jaxpr = dce_jaxpr(tangent_trace.to_jaxpr(t_outs))
    finally:
        trace.invalidate()
        tangent_trace.invalidate()
    hosts = {id(device): host for host, device in trace.staged.values()}
    return Linearized([p for p, _ in unpacked], jaxpr, trace.structured or [], hosts,
                      out_nonzero)


def _is_differentiable(aval: ArrayType) -> bool:
    return is_high(aval) or aval.dtype != FLOAT0


# ===================================================== structured residuals

# JAX's linearization collects "structured residuals" (``VJP.structured_residuals``):
# one entry per application, with a nonzero input tangent, of a primitive
# whose linearization returns some. Here those are:
#
# - a ``jit``, ``shard_map`` or ``scan``: the entries of its body, recursively
#   (a list; a loop stacks its body's values, a map concatenates each
#   device's along their leading axis);
# - a ``cond``: only when one of its branches has entries with leaves;
# - a jnp function that JAX wraps in ``jit(inline=JAX_EARLY)`` (``inline_call``):
#   inlined where it is staged, so it adds an entry only when applied
#   outside any staging, the entries of what it calls inside it;
# - a hijax primitive whose ``vjp_fwd`` returns structured residuals
#   (``add_structured_residual``): those values, keeping their structure.
#
# Other primitives add nothing. The entries of calls and loops are computed
# from their bodies (``_structured_walk``) as empty nested lists.


class _Recorders(threading.local):
    """The structured-residual lists of the reverse-mode rules running now
    (innermost last): a rule adds its entry to the last one."""

    def __init__(self) -> None:
        self.stack: list[list[Any] | None] = []
        # The entry recorded for the call or loop whose rule runs now (its
        # body's shape, leaves unknown), which the rule may fill with values.
        self.slots: list[list[Any] | None] = []


_recorders = _Recorders()


def fill_call_entry(entries: list[Any]) -> None:
    """The entries, with values, of the call or loop whose linearization
    rule runs now (its body's hijax residuals, stacked by a loop); they
    replace the entry recorded from the body's shape alone."""
    slot = _recorders.slots[-1] if _recorders.slots else None
    if slot is not None:
        slot[:] = entries


def entries_with_values(tree: Any, values: dict[int, Any]) -> Any:
    """Structured residual entries with each leaf ``x`` replaced by
    ``values[id(x)]`` (leaves not in ``values`` kept)."""
    return _with_leaves(tree, values)


def add_structured_residual(entry: Any) -> None:
    """Record ``entry`` as the structured residual of the rule running now
    (a hijax primitive's linearization); outside reverse mode, nothing."""
    recorder = _recorders.stack[-1] if _recorders.stack else None
    if recorder is not None:
        recorder.append(entry)


def _recording_trace(trace: Trace, operands: list[Any]) -> JVPTrace | None:
    """The reverse-mode trace that a call of ``operands`` made under ``trace``
    reaches, if one of the operands has a nonzero tangent in it: through
    forward-mode and vmap traces, which bind a call on their parent."""
    while True:
        if isinstance(trace, JVPTrace) and trace.structured is not None:
            has_tangent = any(isinstance(x, JVPTracer) and x._trace is trace
                              and type(x.tangent) is not Zero for x in operands)
            return trace if has_tangent else None
        if isinstance(trace, JVPTrace):
            operands = [y for x in operands for y in (
                (x.primal, x.tangent) if isinstance(x, JVPTracer) and x._trace is trace else (x,))]
        elif isinstance(trace, BatchTrace):
            operands = [x.val if isinstance(x, BatchTracer) and x._trace is trace else x
                        for x in operands]
        else:
            return None
        trace = trace.parent


# The traces ``inline_call`` can record under (a JVP trace, or a batch trace
# above one): under any other, a caller skips the context manager, which
# costs more than an eager call of the function it wraps.
INLINE_RECORDING_TRACES = (JVPTrace, BatchTrace)


class _InlineBodies(threading.local):
    """How many early-inlined jnp function bodies run now under a JVP or
    batch trace. JAX traces such a body to a jaxpr before inlining it, so
    inside it no value is concrete (``inside_inline_body``)."""

    def __init__(self) -> None:
        self.depth = 0


_inline_bodies = _InlineBodies()


def inside_inline_body() -> bool:
    """Whether an early-inlined jnp function's body runs now under a JVP or
    batch trace: where JAX sees abstract values only, so a same-type
    conversion of an autodiff tracer is no copy there (``lax``'s
    ``_convert_element_type``)."""
    return _inline_bodies.depth > 0


@contextlib.contextmanager
def inline_call(operands: Any) -> Iterator[None]:
    """The body of a jnp function JAX stages as ``jit(inline=JAX_EARLY)``,
    called on ``operands`` (a pytree): one structured residual entry when a
    reverse-mode trace receives it with a nonzero tangent, holding the
    entries of the calls inside it; none when it runs inside another such
    function (there it is inlined)."""
    here = current_trace()
    if not isinstance(here, INLINE_RECORDING_TRACES):  # evaluation or staging: nothing
        yield
        return
    _inline_bodies.depth += 1
    try:
        with _recorded_inline_call(here, operands):
            yield
    finally:
        _inline_bodies.depth -= 1


def inline_operands_on_device(operands: Sequence[Any]) -> list[Any] | None:
    """The operands of an early-inlined jnp function called now, outside
    any other such body, under an eager JVP trace: its host scalars (Python
    scalars included) as device arrays, as JAX's ``jit`` passes them to the
    body, so that a linearization reading one saves it as a residual.
    None where nothing is to change."""
    if _inline_bodies.depth:
        return None
    trace = current_trace()
    while isinstance(trace, (JVPTrace, BatchTrace)):
        trace = trace.parent
    if not isinstance(trace, EvalTrace):
        return None
    if not any(_is_host_scalar(x) for x in operands):
        return None
    return [_device_operand(x) if _is_host_scalar(x) else x for x in operands]


def _is_host_scalar(x: Any) -> bool:
    return type(x) in (int, float, complex, bool) or (type(x) is Array and x._py is not None)


def _device_operand(x: Any) -> Array:
    if type(x) is Array:
        return on_device(x)  # type: ignore[no-any-return]
    value, aval = canonical_value(x)
    return Array._from_checked(value, aval, "device_array")


@contextlib.contextmanager
def _recorded_inline_call(here: Trace, operands: Any) -> Iterator[None]:
    trace = _recording_trace(here, tree_util.tree_leaves(operands))
    if trace is None or trace.inline_depth or trace.structured is None:
        yield
        return
    outer = trace.structured
    trace.structured = []
    trace.inline_depth += 1
    try:
        yield
    finally:
        trace.inline_depth -= 1
        entry, trace.structured = trace.structured, outer
        outer.append(entry)


def _structured_entry(prim: Primitive, nonzero: Sequence[bool], params: dict[str, Any]
                      ) -> tuple[list[Any], list[bool]] | None:
    """For a call or loop with these nonzero input tangents: its entry and
    which of its outputs have nonzero tangents; ``None`` for the others."""
    if not any(nonzero):
        return None
    if prim.name in ("jit", "shard_map"):
        jaxpr: Jaxpr = params["jaxpr"]
        return _structured_walk(jaxpr, list(nonzero))
    if prim.name == "scan":
        body: Jaxpr = params["jaxpr"]
        nc = len(params["ft_in"].unpack()[0])
        nk = len(params["ft_in"].unpack()[1])
        nz = list(nonzero)
        while True:  # carries are nonzero once any iteration makes them so
            entry, out_nz = _structured_walk(body, nz)
            grown = [a or b for a, b in zip(nz[nc:nc + nk], out_nz[:nk])]
            if grown == nz[nc:nc + nk]:
                return entry, [*grown, *out_nz[nk:]]
            nz[nc:nc + nk] = grown
    return None


def _structured_walk(jaxpr: Jaxpr, nonzero: Sequence[bool]) -> tuple[list[Any], list[bool]]:
    """The structured residuals of linearizing ``jaxpr`` with these nonzero
    input tangents, and which outputs get nonzero tangents (an output is
    nonzero when an equation of inexact result reads a nonzero tangent and its
    JVP is not identically zero)."""
    nz: dict[int, bool] = {id(v): bool(b) for v, b in zip(jaxpr.invars, nonzero)}
    entries: list[Any] = []
    for eqn in jaxpr.eqns:
        ins = [isinstance(a, Var) and nz.get(id(a), False) for a in eqn.invars]
        found = _structured_entry(eqn.primitive, ins, eqn.params)
        if found is not None:
            entries.append(found[0])
            outs = found[1]
        elif eqn.primitive.name == "hijax" and any(ins):
            # A hijax primitive's reverse-mode rule gives every output a
            # tangent (float0 ones for integers, which calls after it see).
            outs = [True] * len(eqn.outvars)
        else:
            live = any(ins) and not isinstance(eqn.primitive.jvp, zero_jvp)
            outs = [live and (is_high(v.aval) or T.is_inexact(v.aval.dtype))
                    for v in eqn.outvars]
        for v, b in zip(eqn.outvars, outs):
            nz[id(v)] = b
    out_nz = [isinstance(a, Var) and nz.get(id(a), False) for a in jaxpr.outvars]
    return entries, out_nz


def structured_residuals(jaxpr: Jaxpr, nonzero: Sequence[bool]) -> list[Any]:
    """The structured residuals of linearizing a closed ``jaxpr``."""
    return _structured_walk(jaxpr, nonzero)[0]


# ============================================================== JVP jaxprs

@dataclass(frozen=True)
class _SresSlot:
    """A leaf of a structured residual template: the ``index``-th extra
    primal output of the jaxpr it was traced with."""

    index: int


@dataclass(frozen=True)
class StructuredJVP:
    """A JVP jaxpr whose outputs are the primals, then ``n_sres`` values of
    the structured residuals its body records, then the nonzero tangents;
    ``template`` is those residuals' entries with slots for the values."""

    jaxpr: Jaxpr
    out_nonzero: list[bool]
    template: list[Any]
    n_sres: int

    def entries(self, values: Sequence[Any]) -> list[Any]:
        return _filled(self.template, values)  # type: ignore[no-any-return]


def _filled(tree: Any, values: Sequence[Any]) -> Any:
    if type(tree) is _SresSlot:
        return values[tree.index]
    if type(tree) is dict:
        return {k: _filled(v, values) for k, v in tree.items()}
    if type(tree) is list:
        return [_filled(v, values) for v in tree]
    if type(tree) is tuple:
        return tuple(_filled(v, values) for v in tree)
    leaves, treedef = tree_util.tree_flatten(tree)
    return tree_util.tree_unflatten(treedef, [_filled(x, values) if type(x) is _SresSlot else x
                                              for x in leaves])


# JVP jaxprs of sub-jaxprs (calls, checkpoints, loop and branch bodies), per
# jaxpr, per pattern of nonzero input tangents, per whether structured
# residuals are recorded and per everything else the trace reads, as for the
# jaxprs derived from calls (lax.calls): the configuration, the typing
# context (mesh, named axes), the ambient XLA metadata and the source context
# (the traced equations carry the last two). Differentiating the same body
# repeatedly in one context traces its JVP once.
_JVP_CACHE: weakref.WeakKeyDictionary[Jaxpr, dict[Any, StructuredJVP]] = \
    weakref.WeakKeyDictionary()


def jvp_jaxpr(jaxpr: Jaxpr, nonzero: Sequence[bool]) -> tuple[Jaxpr, list[bool]]:
    """The JVP of a closed ``jaxpr`` as a closed jaxpr: inputs are the primals
    and the nonzero tangents; outputs are the primals and the output tangents
    that are not symbolically zero (the returned mask says which)."""
    traced = _traced_jvp(jaxpr, nonzero, record=False)
    return traced.jaxpr, traced.out_nonzero


def structured_jvp_jaxpr(jaxpr: Jaxpr, nonzero: Sequence[bool]) -> StructuredJVP:
    """``jvp_jaxpr`` in reverse mode: the body's structured residuals (a
    hijax primitive's, nested calls') are recorded, their distinct staged
    values returned after the primal outputs."""
    return _traced_jvp(jaxpr, nonzero, record=True)


def _traced_jvp(jaxpr: Jaxpr, nonzero: Sequence[bool], record: bool) -> StructuredJVP:
    per_jaxpr = _JVP_CACHE.setdefault(jaxpr, {})
    key = (tuple(nonzero), record, linearizing(), config.values_key(),
           _typing_context.typing_key, current_xla_metadata(), si.current())
    try:
        known = per_jaxpr.get(key)
        hashable = True
    except TypeError:  # an unhashable axis name: traced every time
        known, hashable = None, False
    if known is not None:
        return known
    n = len(jaxpr.invars)
    t_avals = [v.aval.tangent_type() for v in jaxpr.invars]
    out_nonzero: list[bool] = []
    template: list[Any] = []

    def jvp_fun(*args: Any) -> list[Any]:
        it = iter(args[n:])
        tangents = [next(it) if nz else Zero(a) for nz, a in zip(nonzero, t_avals)]
        recorded: list[Any] | None = [] if record else None
        p_outs, t_outs = jvp_flat(lambda *xs: eval_jaxpr(jaxpr, jaxpr.consts, *xs),
                                  args[:n], tangents, recorded, named=False)
        out_nonzero.extend(type(t) is not Zero for t in t_outs)
        entries, values = slotted_entries(recorded or [])
        template.extend(entries)
        return [*p_outs, *values, *(t for t in t_outs if type(t) is not Zero)]

    avals = [v.aval for v in jaxpr.invars] + [a for a, nz in zip(t_avals, nonzero) if nz]
    new, _ = trace_to_jaxpr(jvp_fun, avals)
    n_sres = len(new.outvars) - len(jaxpr.outvars) - sum(out_nonzero)
    result = StructuredJVP(new, out_nonzero, template, n_sres)
    # Constants that are tracers belong to a trace that ends: not cached.
    if hashable and not any(isinstance(c, Tracer) for c in new.consts):
        per_jaxpr[key] = result
    return result


def slotted_entries(recorded: list[Any]) -> tuple[list[Any], list[Any]]:
    """Recorded structured residual entries with a slot for each distinct
    staged value, and those values in slot order."""
    slots: dict[int, _SresSlot] = {}
    values: list[Any] = []
    for leaf in tree_util.tree_leaves(recorded):
        if isinstance(leaf, Tracer) and id(leaf) not in slots:
            slots[id(leaf)] = _SresSlot(len(values))
            values.append(leaf)
    return _with_leaves(recorded, slots), values


def filled_entries(template: list[Any], values: Sequence[Any]) -> list[Any]:
    """Entries with slots (``slotted_entries``) filled with ``values``."""
    return _filled(template, values)  # type: ignore[no-any-return]


class _BodyLinearization(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_linearizing = _BodyLinearization()


@contextlib.contextmanager
def linearizing_bodies() -> Iterator[None]:
    """While cond's and scan's linearize rules differentiate their bodies:
    a hijax primitive there linearizes by its ``lin`` rule (as JAX's
    linearize trace runs the bodies), not its ``jvp``."""
    _linearizing.depth += 1
    try:
        yield
    finally:
        _linearizing.depth -= 1


def linearizing() -> bool:
    return _linearizing.depth > 0


_legacy_bodies = _BodyLinearization()


@contextlib.contextmanager
def jvp_of_bodies() -> Iterator[None]:
    """While cond's and scan's JVP rules differentiate their bodies: when the
    JVP is the legacy path's linearization (a trace recording structured
    residuals), the bodies' primitives linearize as that path's own do
    (``legacy_linearizing``); a plain ``jvp`` leaves them forward mode."""
    legacy = int(recording_structured())
    _legacy_bodies.depth += legacy
    try:
        yield
    finally:
        _legacy_bodies.depth -= legacy


def legacy_linearizing() -> bool:
    """Whether the JVP running now is the legacy path's linearization, or
    differentiates a body of a loop or cond inside it."""
    return recording_structured() or _legacy_bodies.depth > 0


def recording_structured() -> bool:
    """Whether the rule running now records structured residuals."""
    return bool(_recorders.stack) and _recorders.stack[-1] is not None


def recording_call_entry() -> bool:
    """Whether the call or loop whose rule runs now has a structured
    residual entry to fill (reverse mode records one)."""
    return bool(_recorders.slots) and _recorders.slots[-1] is not None


# ============================================================ legacy linearize


def _legacy_linearize(fun: Callable[..., Sequence[Any]],
                      primals: Sequence[Any]) -> Linearized:
    p_avals = [canonical_aval_of(x) for x in primals]
    t_avals = [a.tangent_type() for a in p_avals]
    n = len(primals)
    # The structured residuals recorded while tracing: their values are
    # outputs of the known side.
    recorded: dict[str, Any] = {}

    def jvp_fun(*args: Any) -> list[Any]:
        ps, ts = args[:n], args[n:]
        tangents = [t if _is_differentiable(a) else Zero(a) for t, a in zip(ts, t_avals)]
        structured: list[Any] = []
        p_outs, t_outs = jvp_flat(fun, ps, tangents, structured)
        leaves = tree_util.tree_leaves(structured)
        recorded["traced"], recorded["leaves"] = structured, leaves
        recorded["n_out"], recorded["n_leaves"] = len(p_outs), len(leaves)
        return [*p_outs, *leaves, *(instantiate(t) for t in t_outs)]

    jvp_jaxpr, _ = trace_to_jaxpr(jvp_fun, [*p_avals, *t_avals])
    n_out, n_leaves = recorded["n_out"], recorded["n_leaves"]
    split = partial_eval_jaxpr(jvp_jaxpr, [False] * n + [True] * n,
                               [False] * (n_out + n_leaves) + [True] * n_out)
    known_outs = eval_jaxpr(split.known, split.known.consts, *primals)
    primals_out, residuals = known_outs[:n_out], known_outs[n_out + n_leaves:]
    values = {id(t): v for t, v in zip(recorded["leaves"], known_outs[n_out:n_out + n_leaves])}
    structured = _with_leaves(recorded["traced"], values)
    unknown = split.unknown
    linear = Jaxpr(unknown.invars[:len(residuals)], unknown.invars[len(residuals):],
                   unknown.outvars, unknown.eqns, consts=list(residuals))
    return Linearized(primals_out, dce_jaxpr(linear), structured)


def _with_leaves(tree: Any, values: dict[int, Any]) -> Any:
    """``tree`` with each leaf replaced by ``values[id(leaf)]``, keeping its
    containers as built (a dict's keys in their insertion order)."""
    if type(tree) is dict:
        return {k: _with_leaves(v, values) for k, v in tree.items()}
    if type(tree) is list:
        return [_with_leaves(v, values) for v in tree]
    if type(tree) is tuple:
        return tuple(_with_leaves(v, values) for v in tree)
    leaves, treedef = tree_util.tree_flatten(tree)
    return tree_util.tree_unflatten(treedef, [values.get(id(x), x) for x in leaves])


def _refs_written_with_unknowns(jaxpr: Jaxpr, unknown: set[int]) -> set[int]:
    """The refs (variables) that equations reading unknown values write, to
    a fixed point (a ref written with unknowns makes its readers unknown)."""
    unknown = set(unknown)
    written: set[int] = set()
    while True:
        before = len(written)
        for eqn in jaxpr.eqns:
            ins = [isinstance(a, Var) and (id(a) in unknown or id(a) in written)
                   for a in eqn.invars]
            if not any(ins):
                continue
            unknown.update(id(v) for v in eqn.outvars)
            if eqn.effects:
                written.update(_written_operands(eqn, ins))
        if len(written) == before:
            return written


def _written_operands(eqn: Eqn, ins: Sequence[bool]) -> set[int]:
    """The ref operands an equation with unknown operands ``ins`` writes
    with unknown values: for an equation with a body (jit, scan, cond),
    those its body writes so (the body's inputs are its operands, after
    cond's index); for the others, every ref it writes."""
    bodies: list[tuple[Jaxpr, int]] = []
    if "jaxpr" in eqn.params and isinstance(eqn.params["jaxpr"], Jaxpr):
        bodies = [(eqn.params["jaxpr"], 0)]
    elif "branches" in eqn.params:
        bodies = [(b, 1) for b in eqn.params["branches"]]
    refs = {id(e.ref) for e in eqn.effects if isinstance(getattr(e, "ref", None), Var)}
    if not bodies:
        return refs
    out: set[int] = set()
    for body, skip in bodies:
        operands = eqn.invars[skip:]
        if len(body.invars) != len(operands):
            return refs
        inner = _refs_written_with_unknowns(
            body, {id(v) for v, u in zip(body.invars, ins[skip:]) if u})
        out.update(id(a) for v, a in zip(body.invars, operands)
                   if id(v) in inner and isinstance(a, Var))
    return out


@dataclass
class PartialEval:
    """A jaxpr split in two. ``known`` takes the known inputs and returns the
    known outputs followed by the residuals; ``unknown`` takes the residuals
    followed by the unknown inputs and returns the unknown outputs."""

    known: Jaxpr
    unknown: Jaxpr
    out_unknowns: list[bool]
    num_res: int


def partial_eval_jaxpr(jaxpr: Jaxpr, in_unknowns: Sequence[bool],
                       instantiate: Sequence[bool] | bool = False) -> PartialEval:
    """Split ``jaxpr`` into the equations computable from the known inputs and
    the rest. Equations with sub-jaxprs and a ``partial_eval`` hook (jit)
    split recursively; any other equation reading an unknown is unknown.
    Outputs listed in ``instantiate`` are produced by the unknown side even
    when known (their value travels as a residual)."""
    n_out = len(jaxpr.outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    unknown_vars: set[int] = {id(v) for v, u in zip(jaxpr.invars, in_unknowns) if u}
    written = _refs_written_with_unknowns(jaxpr, unknown_vars)
    known_eqns: list[Eqn] = []
    unknown_eqns: list[Eqn] = []
    for eqn in jaxpr.eqns:
        ins_unknown = [isinstance(a, Var) and id(a) in unknown_vars for a in eqn.invars]
        if any(id(v) in written for v in eqn.outvars):
            # A ref that unknown values are written into is itself unknown
            # (a tangent ref made from zeros): made on the unknown side.
            unknown_eqns.append(eqn)
            unknown_vars.update(id(v) for v in eqn.outvars)
            continue
        if not any(ins_unknown):
            known_eqns.append(eqn)
        elif callable(eqn.primitive.partial_eval):
            k_eqn, u_eqn, outs_unknown = eqn.primitive.partial_eval(eqn, ins_unknown)
            if k_eqn is not None:
                known_eqns.append(k_eqn)
            if u_eqn is not None:
                unknown_eqns.append(u_eqn)
            unknown_vars.update(id(v) for v, u in zip(eqn.outvars, outs_unknown) if u)
        else:
            unknown_eqns.append(eqn)
            unknown_vars.update(id(v) for v in eqn.outvars)

    def is_unknown(a: Atom) -> bool:
        return isinstance(a, Var) and id(a) in unknown_vars

    out_unknowns = [is_unknown(a) or i for a, i in zip(jaxpr.outvars, inst)]
    # Residuals: known variables the unknown side reads, in order of first read.
    residuals: dict[int, Var] = {}
    for eqn in unknown_eqns:
        for a in eqn.invars:
            if isinstance(a, Var) and not is_unknown(a):
                residuals.setdefault(id(a), a)
    for a, u in zip(jaxpr.outvars, out_unknowns):
        if u and isinstance(a, Var) and not is_unknown(a):
            residuals.setdefault(id(a), a)
    res_vars = list(residuals.values())
    known_invars = [v for v, u in zip(jaxpr.invars, in_unknowns) if not u]
    known_outs = [a for a, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = Jaxpr(list(jaxpr.constvars), known_invars, [*known_outs, *res_vars], known_eqns,
                  jaxpr_effects(jaxpr.constvars, known_invars, known_eqns),
                  consts=list(jaxpr.consts))
    # The unknown side binds fresh variables for the residuals.
    fresh = {id(v): Var(v.aval) for v in res_vars}

    def rename(a: Atom) -> Atom:
        return fresh.get(id(a), a) if isinstance(a, Var) else a

    renamed = [e.replace(invars=[rename(a) for a in e.invars]) for e in unknown_eqns]
    unknown_invars = [v for v, u in zip(jaxpr.invars, in_unknowns) if u]
    unknown_outs = [rename(a) for a, u in zip(jaxpr.outvars, out_unknowns) if u]
    u_invars = [*(fresh[id(v)] for v in res_vars), *unknown_invars]
    unknown = Jaxpr([], u_invars, unknown_outs, renamed, jaxpr_effects([], u_invars, renamed))
    return PartialEval(known, unknown, out_unknowns, len(res_vars))


# ================================================================ transpose

# Backward-pass logs (``VJP.with_logs``): a transpose rule (a hijax
# primitive's ``vjp_bwd`` or ``transpose``, a ``custom_vjp`` rule registered
# with ``defvjp_with_logs``) may return a dict of named pytrees. The dicts of
# one backward pass merge in backward execution order; a key logged twice is
# an error, also when the caller drops the logs. A transposed body (of a
# ``jit``, ``scan``, ``cond``) collects its own logs while it is traced and
# returns their leaves as extra outputs (``LoggedBody``); the transpose rule
# that binds it logs them, reshaped (stacked, per branch), one level up.


@dataclass
class _LogSink:
    logs: dict[Any, Any]
    trace: Trace  # where the backward pass runs
    wanted: bool


class _LogSinks(threading.local):
    def __init__(self) -> None:
        self.stack: list[_LogSink] = []


_log_sinks = _LogSinks()


@contextlib.contextmanager
def collecting_logs(wanted: bool) -> Iterator[dict[Any, Any]]:
    """The logs of the backward pass run in the block, merged into the dict
    yielded (``wanted``: the caller reads them)."""
    sink = _LogSink({}, current_trace(), wanted)
    _log_sinks.stack.append(sink)
    try:
        yield sink.logs
    finally:
        _log_sinks.stack.pop()


def logs_wanted() -> bool:
    """Whether the caller of the backward pass running now reads its logs."""
    return bool(_log_sinks.stack) and _log_sinks.stack[-1].wanted


def add_logs(logs: Any, rule: str) -> None:
    """Merge the dict of log entries that ``rule`` returned (None: nothing)
    into the backward pass running now."""
    if logs is None:
        return
    if type(logs) is not dict:
        raise TypeError(f"{rule} should return None or a dict of backward-pass log entries, "
                        f"got {type(logs).__name__}")
    if not _log_sinks.stack or not logs:
        return
    sink = _log_sinks.stack[-1]
    if current_trace() is not sink.trace:
        if sink.wanted:
            raise NotImplementedError(
                f"backward-pass logs of {rule} from inside a transposed body that does not "
                "return them (a hijax primitive's vmapped rules): spec collects logs only "
                "where the backward pass itself runs")
        return
    for key in logs:
        if key in sink.logs:
            raise ValueError(f"Duplicate backward-pass log key {key!r} from {rule}. Each key "
                             "must be unique within a backward pass.")
    sink.logs.update(logs)



class LoggedBody:
    """A traced backward pass whose logs become extra outputs: ``wrap(fun)``
    is ``fun`` returning ``[*outs, *log_leaves]`` (the logs, optionally
    reshaped by ``shape``, flattened with sorted keys as JAX's trees are);
    after tracing, ``split`` separates a call's results again."""

    def __init__(self, shape: Callable[[dict[Any, Any]], dict[Any, Any]] | None = None) -> None:
        self.shape = shape
        self.tree: Any = tree_util.tree_structure({})
        self.raw: dict[Any, tuple[Any, tuple[ArrayType, ...]]] = {}  # key: (tree, types)

    def wrap(self, fun: Callable[..., Sequence[Any]]) -> Callable[..., list[Any]]:
        def logged(*xs: Any) -> list[Any]:
            # Logs deeper down (under vmap inside the body) are wanted as
            # much as the caller of the whole backward pass wants them.
            with collecting_logs(logs_wanted()) as logs:
                outs = list(fun(*xs))
            # (the types while the body's values are alive: a cond's
            # transpose makes the other branches' slots of them)
            self.raw = {k: _log_types(v) for k, v in logs.items()}
            shaped = self.shape(logs) if self.shape is not None else logs
            leaves, self.tree = tree_util.tree_flatten(shaped)
            return [*outs, *leaves]
        return logged

    @property
    def num_leaves(self) -> int:
        return int(self.tree.num_leaves)

    def split(self, outs: Sequence[Any]) -> tuple[list[Any], dict[Any, Any]]:
        """The call's own results and its logs (a dict)."""
        n = len(outs) - self.num_leaves
        return list(outs[:n]), tree_util.tree_unflatten(self.tree, list(outs[n:]))


def _log_types(entry: Any) -> tuple[Any, tuple[ArrayType, ...]]:
    leaves, tree = tree_util.tree_flatten(entry)
    return tree, tuple(canonical_aval_of(x) for x in leaves)


def _is_linear_atom(a: Atom, linear: set[int]) -> bool:
    return isinstance(a, Var) and id(a) in linear


class RefAccum(GradAccum):
    """The cotangent of a ref: a ref that the transposes of its reads add
    into and its writes take from. It is allocated on first use (``new_ref``
    of the first contribution, or of zeros) unless the caller bound one
    (``VJP.with_refs``): a bound ref accumulates in place with ``+=``."""

    __slots__ = ("aval", "ref")

    def __init__(self, aval: ArrayType, ref: Any = None) -> None:
        self.aval = aval  # the cotangent type of the ref's contents
        self.ref = ref

    def __repr__(self) -> str:
        return f"RefAccum({self.aval})"

    def inst(self) -> Any:
        """The accumulating ref, allocated (holding zeros) if need be."""
        if self.ref is None:
            self.ref = primitive("new_ref").bind(zeros_like_aval(self.aval), kind=None,
                                                 memory_space=None, pin=False)
        return self.ref

    def accum(self, ct: Any) -> None:
        """Add a cotangent of the whole contents."""
        if ct is None or type(ct) is Zero:
            return
        _check_cotangent(self.aval, ct)
        if self.ref is None:
            self.ref = primitive("new_ref").bind(ct, kind=None, memory_space=None, pin=False)
        else:
            primitive("addupdate").bind(self.ref, ct, tree=indexer_tree(None))

    def freeze(self) -> Any:
        """The accumulated cotangent as a value (``Zero`` if nothing came)."""
        if self.ref is None:
            return Zero(self.aval)
        return primitive("freeze").bind(self.ref)


class Placeholder:
    """A value standing for an argument (``jax.ad``'s entries and results,
    VJP sentinels): all instances of one class are equal and print as
    ``Name()``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class GradValue(Placeholder):
    """A ``VJP.with_refs`` entry: return this argument's gradient as a value
    (the default)."""


class GradRef(Placeholder):
    """What a VJP call returns for an argument whose gradient went into a
    bound gradient ref."""


class DontWant(Placeholder):
    """A ``VJP.with_refs`` entry: do not compute this argument's gradient."""


class DidntWant(Placeholder):
    """What a VJP call returns for an argument given ``DontWant()``."""


def _register_placeholders() -> None:
    # The two results are pytree nodes without children (JAX's field-less
    # dataclasses): a tree of gradients has no leaves there. The two
    # entries stay leaves, so that ``with_refs`` arguments match the
    # arguments' structure.

    def no_children(_: Any) -> tuple[tuple[()], None]:
        return (), None
    tree_util.register_pytree_node(GradRef, no_children, lambda _, __: GradRef())
    tree_util.register_pytree_node(DidntWant, no_children, lambda _, __: DidntWant())


_register_placeholders()


class NotWanted:
    """An input of a linear jaxpr whose cotangent is not wanted
    (``jax.ad.DontWant``): equations that only it feeds are not transposed."""

    __slots__ = ("aval",)

    def __init__(self, aval: ArrayType) -> None:
        self.aval = aval


def cotangent_aval(aval: ArrayType) -> ArrayType:
    """What an accumulator of a variable of type ``aval`` holds: the
    cotangent type of a ref's contents, or of a value."""
    inner = aval.inner_aval if isinstance(aval, RefType) else aval
    return inner.ct_type()


def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any], *, named: bool = False) -> list[Any]:
    """Transpose ``jaxpr`` with respect to the ``args`` that are
    ``UndefinedPrimal`` (or ``RefAccum``, a ref input's cotangent ref;
    ``NotWanted``, an input whose cotangent is not computed): returns their
    cotangents (``Zero`` where none flowed, the accumulator for a ref).
    Equations that read no undefined value are evaluated forward first; the
    rest are transposed in reverse order. Operations bind under the current
    trace. ``named``: the transposition is a user's ``vjp`` / ``grad`` /
    ``linear_transpose``, whose equations' name stacks gain ``transpose``;
    a transpose rule transposing a body (traced afresh) keeps the body's.

    Refs: the cotangent of a ref variable is a ``RefAccum``, handed to the
    transpose rules of the ref primitives in place of the ref (a
    ``new_ref`` is always transposed: its ref is a tangent ref)."""
    env: dict[int, Any] = {}
    linear: set[int] = set()
    accums: dict[int, RefAccum] = {}
    unwanted: set[int] = set()
    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = c
    bound: dict[int, RefAccum] = {}  # value inputs whose cotangent goes into a ref
    for v, a in zip(jaxpr.invars, args):
        if isinstance(a, RefAccum) and type(v.aval) is not RefType:
            linear.add(id(v))
            bound[id(v)] = a
        elif isinstance(a, RefAccum):
            linear.add(id(v))
            accums[id(v)] = a
        elif type(a) is UndefinedPrimal or type(a) is NotWanted:
            linear.add(id(v))
            if type(v.aval) is RefType:
                accums[id(v)] = RefAccum(cotangent_aval(v.aval))
            elif type(a) is NotWanted:
                unwanted.add(id(v))
        else:
            env[id(v)] = a

    def read(a: Atom) -> Any:
        if isinstance(a, Literal):
            return literal_value(a)
        return env[id(a)]

    def touches_refs(eqn: Eqn) -> bool:
        return any(type(a.aval) is RefType for a in (*eqn.invars, *eqn.outvars))

    linear_eqns: list[Eqn] = []
    for eqn in jaxpr.eqns:
        lin_ins = [a for a in eqn.invars if _is_linear_atom(a, linear)]
        if lin_ins or eqn.primitive.jvp_on_zero_tangents:
            linear.update(id(v) for v in eqn.outvars)
            if lin_ins and all(id(a) in unwanted for a in lin_ins) and not touches_refs(eqn):
                # Fed only by unwanted inputs: its cotangents would be dropped.
                unwanted.update(id(v) for v in eqn.outvars)
                continue
            linear_eqns.append(eqn)
            for v in eqn.outvars:
                if type(v.aval) is RefType:
                    accums[id(v)] = RefAccum(cotangent_aval(v.aval))
        else:
            outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            for v, o in zip(eqn.outvars, outs):
                env[id(v)] = o

    cts: dict[int, Any] = {}

    def write_ct(v: Atom, ct: Any) -> None:
        if not isinstance(v, Var) or isinstance(v, DropVar) or id(v) not in linear:
            return
        if ct is None or type(ct) is Zero or id(v) in unwanted or id(v) in accums:
            return
        _check_cotangent(v.aval, ct)
        known = cts.get(id(v))
        cts[id(v)] = ct if known is None else add_tangents(known, ct)

    def read_ct(v: Var) -> Any:
        if id(v) in accums:
            return accums[id(v)]
        ct = cts.pop(id(v), None)
        return Zero(v.aval.ct_type()) if ct is None else ct

    def operand(a: Atom, prim: Primitive) -> Any:
        if not _is_linear_atom(a, linear):
            return read(a)
        if id(a) in bound and prim.transpose_accumulates:
            return bound[id(a)]  # a sparse add into the gradient ref
        return accums[id(a)] if id(a) in accums else UndefinedPrimal(a.aval)

    for out, ct in zip(jaxpr.outvars, cts_out):
        write_ct(out, ct)
    for eqn in reversed(linear_eqns):
        eqn_cts = [read_ct(v) for v in eqn.outvars]
        if all(type(c) is Zero for c in eqn_cts) and not touches_refs(eqn):
            continue
        invals = [operand(a, eqn.primitive) for a in eqn.invars]
        rule = transpose_rule(eqn.primitive)
        ct_arg = eqn_cts if eqn.primitive.multiple_results else eqn_cts[0]
        # Cotangents accumulate where they are produced: an ``add_any`` carries
        # the transposed equation's source line and name stack.
        with si.inherited(si.transposed(eqn.source_info) if named else eqn.source_info):
            cts_in = rule(ct_arg, *invals, **eqn.params)
            for a, ct in zip(eqn.invars, cts_in):
                write_ct(a, ct)
    for invar in jaxpr.invars:
        if id(invar) in bound:
            bound[id(invar)].accum(read_ct(invar))
    return [bound.get(id(invar)) or read_ct(invar) if type(a) in (UndefinedPrimal, RefAccum)
            else None for invar, a in zip(jaxpr.invars, args)]


def call_backward(jaxpr: Jaxpr, consts: Sequence[Any], undefined: Sequence[bool],
                  ct_nonzero: Sequence[bool], accums: Sequence[bool] = ()
                  ) -> Callable[..., list[Any]]:
    """The backward pass of a call-like jaxpr (jit, cond branch, checkpoint)
    as a function to trace: it takes the defined operands, then the refs
    that accumulate the cotangents of the inputs marked in ``accums``, then
    the nonzero output cotangents, and returns the cotangent of every input
    (``Zero`` where none flowed, None for defined ones)."""
    accums = list(accums) or [False] * len(undefined)
    n_defined = sum(not u and not r for u, r in zip(undefined, accums))
    n_refs = sum(accums)

    def backward(*xs: Any) -> list[Any]:
        res = iter(xs[:n_defined])
        refs = iter(xs[n_defined:n_defined + n_refs])
        ct_it = iter(xs[n_defined + n_refs:])
        full = [RefAccum(cotangent_aval(v.aval), next(refs)) if r
                else UndefinedPrimal(v.aval) if u else next(res)
                for v, u, r in zip(jaxpr.invars, undefined, accums)]
        cts = [next(ct_it) if nz else Zero(v.aval.ct_type())
               for nz, v in zip(ct_nonzero, jaxpr.outvars)]
        return backward_pass(jaxpr, consts, full, cts)

    return backward


# Set while ``linear_transpose`` transposes an integer -> integer function:
# integer values then have cotangents of their own dtype (not float0).
integer_cotangents = [False]


def _check_cotangent(aval: ArrayType, ct: Any) -> None:
    want = aval.ct_type()
    got = canonical_aval_of(ct)
    if is_high(want) or is_high(got):
        if got != want:
            raise TypeError(f"a transpose rule produced a cotangent of type "
                            f"{got.str_short(True)} for a value of type {aval.str_short(True)};"
                            f" its cotangent type is {want.str_short(True)}")
        return
    if got.memory_space is not want.memory_space:
        # (a cotangent lives where its primal does: moving it is device_put's transpose)
        raise ValueError(f"Expected cotangent type {want.str_short()} but got {got.str_short()}")
    if integer_cotangents[0] and got.dtype == aval.dtype and got.shape == aval.shape:
        return
    if (got.shape != want.shape or got.dtype != want.dtype
            or _layout(got) != _layout(want)):
        raise TypeError(f"a transpose rule produced a cotangent of type {got} for a value of "
                        f"type {aval}; its cotangent type is {want}")


def _layout(aval: ArrayType) -> Any:
    """What of a type's sharding a cotangent must match: the mesh and the
    normalised spec. No sharding and a fully replicated one (no partitions,
    unreduced or reduced axes) are the same layout: spec leaves values that
    were never placed on a mesh unsharded, where JAX gives them the mesh's
    replicated sharding."""
    s = aval.sharding
    if s is None:
        return None
    spec = s.spec._normalized_spec_for_aval(aval.ndim)
    if all(p is None for p in spec.partitions) and not spec.unreduced and not spec.reduced:
        return None
    return (s.mesh, spec)


def linear_transpose_jaxpr(jaxpr: Jaxpr, cts_out: Sequence[Any]) -> list[Any]:
    """Cotangents of all inputs of a linear jaxpr (consts are residuals)."""
    args = [UndefinedPrimal(v.aval) for v in jaxpr.invars]
    return backward_pass(jaxpr, jaxpr.consts, args, cts_out)


__all__ = [
    "JVPTrace", "JVPTracer", "LinearizeTrace", "LinearizeTracer", "Linearized",
    "DidntWant", "DontWant", "GradRef", "GradValue", "NotWanted", "PartialEval", "Placeholder",
    "RefAccum", "backward_pass", "call_backward", "cotangent_aval", "jvp_flat", "jvp_rule",
    "linear_transpose_jaxpr",
    "direct_linearize", "jvp_jaxpr", "jvp_of_bodies", "legacy_linearizing", "linearize_flat",
    "partial_eval_jaxpr", "transpose_rule",
]
