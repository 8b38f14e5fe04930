"""Buffer donation: which donated arguments of a compiled call give their
buffers to its results, as JAX plans it on one device and as XLA then
reuses the buffers, and what a run does to the donated arrays.

JAX first pairs each result, in order, with the earliest donated argument of
exactly its shape and dtype (the argument is aliased to that result,
``tf.aliasing_output``). A donated argument left over that has as many
elements as some result nothing aliases is handed to XLA as a buffer donor
(``jax.buffer_donor``); any other donated argument is reported once, when the
program is compiled, by JAX's UserWarning "Some donated buffers were not
usable". XLA then reuses a donor's buffer for the first unaliased result of
exactly its byte size; a donor it finds none for keeps its buffer.

A run deletes the arrays whose buffers it took (aliased arguments and reused
donors); the caller sees them as deleted arrays (``is_deleted()``, and JAX's
RuntimeError on any later read). An argument the program does not read is
pruned before any of this (unless ``keep_unused``): its donation is dropped.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spec._src.core.errors import JaxRuntimeError
from spec._src.core.interpreter import Jaxpr, Var, dce_jaxpr
from spec._src.core.sharding import AxisType
from spec._src.core.types import ArrayType
from spec._src.lowering.effects import discharged, ordered_effects, ref_arguments

DONATION_URL = "https://docs.jax.dev/en/latest/201/jit.html#jax-201-buffer-donation"


@dataclass(frozen=True)
class DonationPlan:
    """A compiled call's donation plan. ``kept``: the original positions of
    the arguments the compiled program takes; ``aliases``: kept position ->
    result index; ``donors``: kept positions handed to XLA as buffer donors;
    ``consumed``: the original positions whose buffers a run takes."""

    kept: tuple[int, ...]
    aliases: dict[int, int]
    donors: frozenset[int]
    consumed: frozenset[int]


def read_inputs(jaxpr: Jaxpr) -> list[int]:
    """The indices of the inputs an equation or the outputs read."""
    read = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in jaxpr.eqns:
        read.update(id(a) for a in eqn.invars if isinstance(a, Var))
    return [i for i, v in enumerate(jaxpr.invars) if id(v) in read]


def compiled_program(jaxpr: Jaxpr, keep_unused: bool) -> tuple[Jaxpr, list[int]]:
    """The program JAX compiles for a call of ``jaxpr``: refs discharged,
    dead code eliminated, and (without ``keep_unused``) the arguments
    nothing reads left out; with the original positions of those kept."""
    live = dce_jaxpr(discharged(jaxpr))
    if keep_unused:
        return live, list(range(len(live.invars)))
    kept = read_inputs(live)
    return Jaxpr(live.constvars, [live.invars[i] for i in kept], live.outvars, live.eqns,
                 live.effects, live.consts), kept


def shape_text(aval: ArrayType, shape: Sequence[int] | None = None) -> str:
    """``float32[2,3]``: the type that decides which buffers match (a weak
    type matches a strong one; the warning marks it ``~``)."""
    dims = aval.shape if shape is None else shape
    try:
        name = np.dtype(aval.dtype).name
    except TypeError:  # an extended dtype (keys, tokens) prints its own name
        name = str(aval.dtype)
    return f"{name}[{','.join(str(d) for d in dims)}]"


def local_shape(aval: ArrayType) -> tuple[int, ...]:
    """The shape of one device's buffer of a value of type ``aval``: its
    shard where the type lays it out over a mesh."""
    s = getattr(aval, "sharding", None)
    if s is None or s.mesh.empty:
        return tuple(aval.shape)
    return tuple(s.shard_shape(tuple(aval.shape)))


def results_placed_by_types(jaxpr: Jaxpr) -> bool:
    """Whether every result's type says how it is laid out (a sharding over a
    mesh whose axes are all Explicit): only then does JAX pair donated
    buffers with results itself when the program runs on several devices;
    otherwise it hands every donated buffer to XLA."""
    def explicit(aval: object) -> bool:
        s = getattr(aval, "sharding", None)
        return s is not None and not s.mesh.empty and all(
            t == AxisType.Explicit for t in s.mesh.axis_types)
    return all(explicit(v.aval) for v in jaxpr.outvars)


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _nbytes(aval: ArrayType, shape: Sequence[int]) -> int | None:
    try:
        return _size(shape) * np.dtype(aval.dtype).itemsize
    except TypeError:  # an extended dtype: its buffers are not reused across types
        return None


Shapes = tuple[tuple[int, ...], ...]


def _plan(jaxpr: Jaxpr, donated: Sequence[bool], keep_unused: bool,
          in_shapes: Shapes | None, out_shapes: Shapes | None, by_xla: bool
          ) -> tuple[DonationPlan, list[str]]:
    """The plan, and the types of the donated arguments no result can use.
    ``in_shapes``/``out_shapes``: each argument's and result's buffer shape
    on one device (their types' shapes when None); ``by_xla``: every
    donated buffer is handed to XLA (a program on several devices whose
    results' layouts its types do not give)."""
    ordered = ordered_effects(jaxpr)
    n_results = len(ordered) + len(jaxpr.outvars)
    # A ref argument's buffer goes to the result holding its final contents.
    ref_aliases = {i: n_results + k for k, i in enumerate(ref_arguments(jaxpr))}
    program, kept = compiled_program(jaxpr, keep_unused)
    aliases = {kept.index(i): k for i, k in ref_aliases.items() if i in kept}
    flags = [bool(donated[i]) if i < len(donated) else False for i in kept]
    ins = [(v.aval, tuple(v.aval.shape) if in_shapes is None else in_shapes[i])
           for v, i in zip(program.invars, kept)]
    outs = [(k + len(ordered), v.aval,
             tuple(v.aval.shape) if out_shapes is None else out_shapes[k])
            for k, v in enumerate(program.outvars)]
    taken = set(aliases.values())
    waiting = [i for i, d in enumerate(flags) if d and i not in aliases]
    donors = []
    if by_xla:
        donors, waiting = waiting, []
    for k, aval, shape in outs:
        if k in taken:
            continue
        text = shape_text(aval, shape)
        match = next((i for i in waiting if shape_text(*ins[i]) == text), None)
        if match is not None:
            aliases[match] = k
            taken.add(k)
            waiting.remove(match)
    free = [(k, aval, shape) for k, aval, shape in outs if k not in taken]
    by_size = list(free)
    for i in list(waiting):
        size = _size(ins[i][1])
        hit = next((o for o in by_size if _size(o[2]) == size), None)
        if hit is not None:
            by_size.remove(hit)
            donors.append(i)
            waiting.remove(i)
    # XLA reuses a donor for the first unaliased result of its byte size.
    reused = []
    open_donors = list(donors)
    for _, aval, shape in free:
        nbytes = _nbytes(aval, shape)
        donor = next((i for i in open_donors
                      if nbytes is not None and _nbytes(*ins[i]) == nbytes), None)
        if donor is not None:
            open_donors.remove(donor)
            reused.append(donor)
    consumed = frozenset(kept[i] for i in (*aliases, *reused) if flags[i])
    plan = DonationPlan(tuple(kept), aliases, frozenset(donors), consumed)
    return plan, [("~" if getattr(ins[i][0], "weak_type", False) else "") + shape_text(*ins[i])
                  for i in waiting]


# Plans per program, donation flags, keep_unused and buffer shapes: computed
# (and warned about) once per compilation, as JAX warns when it compiles.
_PlanKey = tuple[tuple[bool, ...], bool, "Shapes | None", "Shapes | None", bool]
_PLANS: weakref.WeakKeyDictionary[Jaxpr, dict[_PlanKey, DonationPlan]] = \
    weakref.WeakKeyDictionary()


def donation_plan(jaxpr: Jaxpr, donated: Sequence[bool], keep_unused: bool,
                  stacklevel: int = 2, in_shapes: Shapes | None = None,
                  out_shapes: Shapes | None = None, by_xla: bool = False) -> DonationPlan:
    """The call's plan (``_plan``); the first time it is made, JAX's
    UserWarning for donated arguments no result can use."""
    key: _PlanKey = (tuple(bool(d) for d in donated), keep_unused, in_shapes, out_shapes,
                     by_xla)
    known = _PLANS.setdefault(jaxpr, {})
    plan = known.get(key)
    if plan is None:
        plan, unusable = _plan(jaxpr, donated, keep_unused, in_shapes, out_shapes, by_xla)
        known[key] = plan
        if unusable:
            warnings.warn(f"Some donated buffers were not usable: {', '.join(unusable)}.\n"
                          f"See an explanation at {DONATION_URL}.", stacklevel=stacklevel + 1)
    return plan


def partitioned_plan(jaxpr: Jaxpr, donated: Sequence[bool], keep_unused: bool,
                     stacklevel: int = 2) -> DonationPlan | None:
    """The plan of a program on several devices as its types give it (each
    buffer one device's shard), or None where XLA alone decides (results
    whose layouts the types do not give): then nothing is warned of."""
    if not results_placed_by_types(jaxpr):
        return None
    return donation_plan(jaxpr, donated, keep_unused, stacklevel + 1,
                         tuple(local_shape(a) for a in jaxpr.in_avals),
                         tuple(local_shape(v.aval) for v in jaxpr.outvars))


def check_buffer_reuse(plan: DonationPlan, operands: Sequence[object]) -> None:
    """JAX's runtime error for one buffer passed twice to a call that takes
    it from one of the two (positions counted among the kept arguments)."""
    consumed = {plan.kept.index(i) for i in plan.consumed}
    first: dict[int, int] = {}
    for j, i in enumerate(plan.kept):
        x = operands[i]
        if not hasattr(x, "is_deleted"):
            continue  # a NumPy array or scalar is copied to a fresh buffer
        seen = first.setdefault(id(x), j)
        if seen == j:
            continue
        where = f"(flattened argument {j}, replica 0, partition 0, first use: {seen})"
        if seen in consumed:
            raise JaxRuntimeError(
                "INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the "
                f"same call to Execute() {where}. Toy example for this bug: `f(donate(a), a)`.")
        if j in consumed:
            raise JaxRuntimeError(
                "INVALID_ARGUMENT: Attempt to donate a buffer which is also used by the same "
                f"call to Execute() {where}. Toy example for this bug: `f(a, donate(a))`.")
