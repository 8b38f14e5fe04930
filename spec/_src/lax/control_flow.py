"""Control flow: the ``cond`` primitive (run one of several branch jaxprs)
and ``while`` (run a body jaxpr while a predicate jaxpr holds), and their
wrappers ``lax.cond``, ``lax.switch``, ``lax.while_loop``.

Their sub-jaxprs take no closed-over constants: whatever a branch or loop
closes over is an operand (``hoist_consts``), so that every transformation
sees it. Transformations transform the sub-jaxprs and bind the primitive
again, as jit's rules do (spec/_src/lax/calls.py). The wrappers trace their
functions to jaxprs (constants they close over become operands, shared
between branches), check the types JAX checks, with JAX's messages, and bind
``cond`` or ``while``.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.effects import io_effect, ordered_io_effect
from spec._src.core.errors import TracerArrayConversionError
from spec._src.core.debug_info import DebugInfo, func_src_info
from spec._src.core import types as T
from spec._src.core.hitypes import is_hi_value, is_high, lower_value, raise_values
from spec._src.core.config import config
from spec._src.core.interpreter import (
    Atom,
    DropVar,
    Eqn,
    EvalTrace,
    Jaxpr,
    Primitive,
    Tracer,
    Var,
    canonical_aval_of,
    canonical_value,
    current_trace,
    dce_jaxpr,
    dce_sub_jaxpr,
    eval_jaxpr,
    eval_jaxpr_values,
    from_primitive,
    not_applicable,
    set_current_trace,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.lowering import control as CL
from spec._src.core.sharding import _context as _mesh_context
from spec._src.core.sharding import get_abstract_mesh
from spec._src.core.source_info import current_xla_metadata
from spec._src.core.state_types import is_ref_type
from spec._src.core.types import FLOAT0, ArrayType, MemorySpace, result_type_and_weak
from spec._src.interpreters import ad, batching
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import Zero, instantiate, zero_jvp, zeros_like_aval
from spec._src.interpreters.batching import AxisData, BatchDim
from spec._src.interpreters.hi_lowering import bind_jaxpr, eval_lowering, lower_jaxpr
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.lax.ad_prims import stop_gradient
from spec._src.lax.calls import TransposedOperands
from spec._src.lax.elementwise import clamp, eq, select, select_n
from spec._src.lax.reductions import reduce_or
from spec._src.lax.remat import partial_eval_jaxpr_custom
from spec._src.lax.scan import closed_to_operands, no_aliased_refs, sub_jaxpr_effects
from spec._src.lax import hi_axes as HA
from spec._src.lax.shaping import asarray, broadcast_in_dim, convert_element_type
from spec._src.lax.state import discharge_state


def same_type(a: ArrayType, b: ArrayType) -> bool:
    """JAX's ``typematch``: shape and dtype agree (weak types may differ);
    hi types are equal."""
    if is_high(a) or is_high(b):
        return bool(a == b)
    return a.shape == b.shape and a.dtype == b.dtype


def _avals_text(avals: Sequence[ArrayType]) -> str:
    return "[" + ", ".join(a.str_short(True) for a in avals) + "]"


def hoist_consts(jaxprs: Sequence[Jaxpr]) -> tuple[list[Jaxpr], list[Any]]:
    """Jaxprs with their constants turned into leading inputs, shared by all
    of them (each constant once, by identity, in order of first appearance);
    a jaxpr gets an unused input for another's constant."""
    consts: list[Any] = []
    slot: dict[int, int] = {}
    for j in jaxprs:
        for c in j.consts:
            if id(c) not in slot:
                slot[id(c)] = len(consts)
                consts.append(c)
    if not consts and not any(j.constvars for j in jaxprs):
        return list(jaxprs), []  # nothing to hoist: the jaxprs themselves
    out = []
    for j in jaxprs:
        binders = [Var(canonical_aval_of(c)) for c in consts]
        for v, c in zip(j.constvars, j.consts):
            binders[slot[id(c)]] = v
        out.append(Jaxpr([], [*binders, *j.invars], list(j.outvars), list(j.eqns), j.effects))
    return out, consts


def _values(jaxpr: Jaxpr, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    consts = [canonical_value(c)[0] for c in jaxpr.consts]
    return list(eval_jaxpr_values(jaxpr, consts, args))


def _jvp_jaxpr(jaxpr: Jaxpr, nonzero: Sequence[bool],
               inst: Sequence[bool]) -> tuple[Jaxpr, list[bool]]:
    """``ad.jvp_jaxpr`` with the output tangents selected by ``inst``
    materialised (zeros) where they are symbolically zero."""
    new, out_nz = ad.jvp_jaxpr(jaxpr, nonzero)
    want = [nz or i for nz, i in zip(out_nz, inst)]
    if want == out_nz:
        return new, out_nz
    n_out = len(jaxpr.outvars)

    def padded(*xs: Any) -> list[Any]:
        outs = eval_jaxpr(new, new.consts, *xs)
        it = iter(outs[n_out:])
        ts = [next(it) if nz else zeros_like_aval(v.aval.tangent_type())
              for nz, w, v in zip(out_nz, want, jaxpr.outvars) if w]
        return [*outs[:n_out], *ts]

    wrapped, _ = trace_to_jaxpr(padded, [v.aval for v in new.invars])
    return wrapped, want


@dataclass
class _RecordedBranches:
    """JVP branches that also return every branch's structured residual
    values (each branch its own, zeros in the other branches' places), after
    the primal outputs: the branches, each one's entries with slots, and
    where each branch's values lie among the extra outputs."""

    jvps: list[Jaxpr]
    templates: list[list[Any]]
    offsets: list[int]
    n_sres: int

    def record(self, index: Any, values: Sequence[Any]) -> None:
        ends = [*self.offsets[1:], self.n_sres]
        entries = [ad.filled_entries(t, values[a:b])
                   for t, a, b in zip(self.templates, self.offsets, ends)]
        ad.add_structured_residual(CondSum(index, entries))


def _recorded_branches(branches: Sequence[Jaxpr], ops_nz: Sequence[bool],
                       out_nz: Sequence[bool]) -> _RecordedBranches | None:
    """In reverse mode, the branches' JVPs recording their structured
    residuals (a ``CondSum`` of them); None when no branch records a value."""
    if not ad.recording_structured():
        return None
    jvps = [ad.structured_jvp_jaxpr(b, ops_nz) for b in branches]
    if not any(j.n_sres for j in jvps):
        return None
    n_out = len(branches[0].outvars)
    sres_avals = [[v.aval for v in j.jaxpr.outvars[n_out:n_out + j.n_sres]] for j in jvps]
    offsets = [sum(len(a) for a in sres_avals[:i]) for i in range(len(jvps))]

    def padded(i: int, *xs: Any) -> list[Any]:
        j = jvps[i]
        outs = eval_jaxpr(j.jaxpr, j.jaxpr.consts, *xs)
        sres = [v for k, avals in enumerate(sres_avals)
                for v in (outs[n_out:n_out + j.n_sres] if k == i
                          else [zeros_like_aval(a) for a in avals])]
        it = iter(outs[n_out + j.n_sres:])
        ts = [next(it) if nz else zeros_like_aval(v.aval.tangent_type())
              for nz, w, v in zip(j.out_nonzero, out_nz, branches[i].outvars) if nz or w]
        return [*outs[:n_out], *sres, *ts]

    traced = [trace_to_jaxpr(functools.partial(padded, i), [v.aval for v in j.jaxpr.invars])[0]
              for i, j in enumerate(jvps)]
    return _RecordedBranches(traced, [j.template for j in jvps], offsets,
                             sum(len(a) for a in sres_avals))


# ==================================================================== empty2


def _empty2_type(*, dtype: Any, memory_space: Any) -> list[ArrayType]:
    ok = isinstance(dtype, np.dtype) and (dtype == FLOAT0 or T.is_valid_dtype(dtype))
    require(ok, "empty2", "C1", f"dtype {dtype!r} is not a JAX dtype")
    require(isinstance(memory_space, MemorySpace), "empty2", "C2",
            f"memory_space {memory_space!r} is not a MemorySpace")
    return [ArrayType((), dtype, False)]


def _empty2_impl(*, dtype: Any, memory_space: Any) -> list[np.ndarray]:
    # The contents are unspecified; XLA's CPU lowering materialises zeros.
    return [np.zeros((), dtype)]


empty2_p = declare(
    "empty2", lowering=CL.scalar_zero, typing=_empty2_type, impl=_empty2_impl, jvp=zero_jvp(),
    transpose=not_applicable("empty2 has no operands"),
    batch=not_applicable("empty2 has no operands, so vmap never batches it"),
    sharding=not_applicable("empty2 has no operands and no sharding param; the filler is "
                            "broadcast to its slot with the slot's sharding"))


# ============================================================ platform_index
# platform_index() -> int32[]: which of ``platforms`` (a tuple with one
# entry per branch of a platform-dependent cond: a tuple of platform names,
# or None for the default) the program runs on. C1 the default, if any, is
# the last entry. spec's programs run on CPU devices: the first entry
# naming "cpu", else the default's; neither is JAX's NotImplementedError
# (no lowering for the platform).

SPEC_PLATFORM = "cpu"


def platform_choice(platforms: tuple[tuple[str, ...] | None, ...]) -> int:
    """The index of the entry for spec's platform."""
    for i, ps in enumerate(platforms):
        if ps is not None and SPEC_PLATFORM in ps:
            return i
    if platforms and platforms[-1] is None:
        return len(platforms) - 1
    raise NotImplementedError(f"MLIR translation rule for primitive 'platform_index("
                              f"platforms={platforms})' not found for platform "
                              f"{SPEC_PLATFORM}")


def _platform_index_type(*, platforms: tuple[tuple[str, ...] | None, ...]
                         ) -> list[ArrayType]:
    require(all(ps is not None for ps in platforms[:-1]), "platform_index", "C1",
            f"only the last entry of platforms={platforms} may be the default (None)",
            ValueError)
    return [ArrayType((), np.dtype(np.int32), False)]


def _platform_index_impl(*, platforms: tuple[tuple[str, ...] | None, ...]
                         ) -> list[np.ndarray]:
    return [np.asarray(platform_choice(platforms), np.int32)]


platform_index_p = declare(
    "platform_index", lowering=CL.platform_index, typing=_platform_index_type,
    impl=_platform_index_impl, jvp=zero_jvp(),
    transpose=not_applicable("platform_index has no operands"),
    batch=not_applicable("platform_index has no operands, so vmap never batches it"),
    sharding=not_applicable("platform_index has no operands; its scalar result is "
                            "replicated"))


# ====================================================================== cond


def _cond_type(index: ArrayType, *ops: ArrayType, branches: tuple[Jaxpr, ...],
               **params: Any) -> list[ArrayType]:
    require(len(branches) >= 1, "cond", "C1", "cond requires at least one branch")
    require(index.shape == () and index.dtype == np.dtype(np.int32), "cond", "C2",
            f"the index has type {index}, expected int32[]")
    first = branches[0]
    for i, b in enumerate(branches):
        require(len(b.invars) == len(ops) and all(
            same_type(a, v) for a, v in zip(ops, b.in_avals)), "cond", "C3",
            f"branch {i} takes input types {_avals_text(b.in_avals)}, called with operands "
            f"of type {_avals_text(ops)}")
        require(len(b.outvars) == len(first.outvars) and all(
            same_type(a, o) for a, o in zip(first.out_avals, b.out_avals)), "cond", "C4",
            f"branches 0 and {i} have mismatching output types: "
            f"{_avals_text(first.out_avals)} vs {_avals_text(b.out_avals)}")
        _check_refs("cond", f"branch {i}", ops, b, ())
    return list(first.out_avals)


def _check_refs(prim: str, name: str, ops: Sequence[ArrayType], jaxpr: Jaxpr,
                carry: Sequence[ArrayType]) -> None:
    """C5 (cond) / C5 (while): an operand is a Ref exactly where the sub-jaxpr
    takes one; carries and results are never refs."""
    for k, (a, v) in enumerate(zip(ops, jaxpr.in_avals)):
        require(is_ref_type(a) == is_ref_type(v), prim, "C5",
                f"{name} takes {v.str_short(True)} for an operand of type {a.str_short(True)}: an "
                "operand is a Ref exactly where the jaxpr takes one", ValueError)
    for a in carry:
        require(not is_ref_type(a), prim, "C5",
                f"a carry has type {a.str_short(True)}: a Ref cannot be a loop carry", ValueError)
    for o in jaxpr.out_avals:
        require(not is_ref_type(o), prim, "C5",
                f"{name} returns a Ref ({o.str_short(True)}): refs cannot be returned",
                ValueError)


def _cond_impl(index: np.ndarray, *ops: np.ndarray, branches: tuple[Jaxpr, ...],
               **params: Any) -> list[np.ndarray]:
    # Out-of-range indices clamp, as XLA's conditional does.
    i = min(max(int(index), 0), len(branches) - 1)
    return _values(branches[i], ops)


def _cond_out_nonzero(branches: Sequence[Jaxpr], ops_nz: Sequence[bool]) -> list[bool]:
    per_branch = [ad.jvp_jaxpr(b, ops_nz)[1] for b in branches]
    return [any(col) for col in zip(*per_branch)]


def _cond_jvp(primals: list[Any], tangents: list[Any], *, branches: tuple[Jaxpr, ...],
              **params: Any) -> tuple[list[Any], list[Any]]:
    index, *ops = primals
    ops_t = tangents[1:]
    ops_nz = [type(t) is not Zero for t in ops_t]
    with ad.jvp_of_bodies():
        out_nz = _cond_out_nonzero(branches, ops_nz)
        recorded = _recorded_branches(branches, ops_nz, out_nz)
        jvps, consts = hoist_consts(recorded.jvps if recorded is not None else
                                    [_jvp_jaxpr(b, ops_nz, out_nz)[0] for b in branches])
    n_sres = 0 if recorded is None else recorded.n_sres
    outs = cond_p.bind(index, *consts, *ops, *(t for t in ops_t if type(t) is not Zero),
                       branches=tuple(jvps), **params)
    n_out = len(branches[0].outvars)
    if recorded is not None:
        recorded.record(index, outs[n_out:n_out + n_sres])
    it = iter(outs[n_out + n_sres:])
    t_outs = [next(it) if nz else Zero(a.tangent_type())
              for nz, a in zip(out_nz, branches[0].out_avals)]
    return list(outs[:n_out]), t_outs


def _cond_transpose(cts: list[Any], index: Any, *ops: Any, branches: tuple[Jaxpr, ...],
                    **params: Any) -> list[Any]:
    """A cond of the branches' transposes: the residual operands and the
    nonzero cotangents in, the linear operands' cotangents out."""
    # Refs whose cotangents are refs are passed after the defined operands
    # and written by the branches' transposes, as a transposed call does.
    t_ops = TransposedOperands.of(ops)
    logged = [ad.LoggedBody() for _ in branches]
    t_branches = [t_ops.transposed(b, cts, lg) for b, lg in zip(branches, logged)]
    if any(lg.raw for lg in logged):
        # The branches' logs differ: each key gets one slot per branch
        # (CondSum), and the branches are traced again to fill them alike.
        slots = _log_slots([lg.raw for lg in logged])
        logged = [ad.LoggedBody(functools.partial(_branch_logs, slots, k))
                  for k in range(len(branches))]
        t_branches = [t_ops.transposed(b, cts, lg) for b, lg in zip(branches, logged)]
    new, consts = hoist_consts(t_branches)
    outs, logs = logged[0].split(
        cond_p.bind(index, *consts, *t_ops.operands(cts), branches=tuple(new), **params))
    ad.add_logs({k: CondSum(index, v) for k, v in logs.items()},
                "the transpose rule for 'cond'")
    return [None, *t_ops.cotangents(outs)]


@tree_util.register_dataclass
@dataclass(frozen=True, slots=True)
class CondSum:
    """A cond-shaped sum, as a tagged product: ``index`` is the branch that
    ran; ``branches`` has one slot per branch: that branch's value if it ran,
    zeros if it has the slot but did not run, None if it has no slot (the
    backward-pass logs of a transposed ``cond``, one per key)."""

    index: Any
    branches: list[Any]


# Per logged key, per branch: the tree and types of what the branch logs
# under it, or None.
_LogSlots = tuple[tuple[Any, tuple[Any, ...]], ...]


def _log_slots(branch_logs: Sequence[dict[Any, Any]]) -> _LogSlots:
    keys = sorted({k for logs in branch_logs for k in logs})
    return tuple((k, tuple(logs.get(k) for logs in branch_logs)) for k in keys)


def _branch_logs(slots: _LogSlots, branch: int, raw: dict[Any, Any]) -> dict[Any, Any]:
    """Branch ``branch``'s logs in every key's slots: its own values where
    it ran, zeros in the other branches' slots."""
    return {k: [raw.get(k) if j == branch else
                None if slot is None else
                tree_util.tree_unflatten(slot[0], [zeros_like_aval(a) for a in slot[1]])
                for j, slot in enumerate(per_branch)]
            for k, per_branch in slots}


def _type_key(a: ArrayType) -> tuple[Any, ...]:
    return (a.shape, a.dtype, a.weak_type)


def _merge_residual_slots(per_branch: Sequence[Sequence[ArrayType]]
                          ) -> tuple[list[ArrayType], list[list[int]]]:
    """Residual slots shared between branches by type: a branch's k-th
    residual of some type takes the k-th slot of that type, so the slots
    are as few as the branch needing most of each type requires."""
    slots: list[ArrayType] = []
    where: list[list[int]] = []
    for avals in per_branch:
        taken: set[int] = set()
        mine = []
        for a in avals:
            k = next((i for i, b in enumerate(slots)
                      if i not in taken and _type_key(b) == _type_key(a)), None)
            if k is None:
                k = len(slots)
                slots.append(a)
            taken.add(k)
            mine.append(k)
        where.append(mine)
    return slots, where


def _empty_like(aval: ArrayType) -> Any:
    """Filler for a residual slot the taken branch does not produce: its
    contents are never read, so JAX stages an ``empty2`` (broadcast to the
    shape) rather than a zero."""
    if aval.dtype == FLOAT0:
        return zeros_like_aval(aval)
    e = empty2_p.bind(dtype=aval.dtype, memory_space=MemorySpace.Device)
    return e if aval.shape == () else broadcast_in_dim(e, aval.shape, ())


@dataclass
class _BranchSplit:
    """Every branch split alike. ``knowns`` take the known operands and
    return the known outputs then ``n_res`` residual slots; ``unknowns`` take
    those slots, then the known operands listed in ``forwarded`` (residuals
    that are simply a known operand travel as that operand, not through the
    known cond), then the unknown operands."""

    knowns: list[Jaxpr]
    unknowns: list[Jaxpr]
    n_res: int
    forwarded: list[int]
    out_unknowns: list[bool]


def _dce_branches(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` without dead equations, also inside the branches of its
    conds (whose outputs all stay): JAX cleans the known side of a
    partially evaluated branch so, which drops the fillers an inner cond's
    branches create but do not return."""
    eqns = [e.replace(params={**e.params, "branches": tuple(
        _dce_branches(b) for b in e.params["branches"])}) if e.primitive is cond_p else e
        for e in jaxpr.eqns]
    return dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, jaxpr.effects,
                           jaxpr.consts), rules=False)


def _split_branches(branches: Sequence[Jaxpr], ops_uk: Sequence[bool],
                    inst: Sequence[bool]) -> _BranchSplit:
    """Partial evaluation of every branch with the same unknown outputs, as
    JAX's cond partial evaluation joins them."""
    first = [ad.partial_eval_jaxpr(b, ops_uk, inst) for b in branches]
    out_uk = [any(col) for col in zip(*(s.out_unknowns for s in first))]
    splits = [ad.partial_eval_jaxpr(b, ops_uk, out_uk) for b in branches]
    for s in splits:
        s.known = _dce_branches(s.known)
    n_known_out = len(out_uk) - sum(out_uk)
    known_pos = [i for i, u in enumerate(ops_uk) if not u]
    # Per branch and residual: the operand it forwards, or None.
    fwd_of: list[list[int | None]] = []
    for s in splits:
        pos = {id(v): known_pos[j] for j, v in enumerate(s.known.invars)}
        fwd_of.append([pos.get(id(r)) for r in s.known.outvars[n_known_out:]])
    slots, where = _merge_residual_slots([
        [r.aval for r, f in zip(s.known.outvars[n_known_out:], fs) if f is None]
        for s, fs in zip(splits, fwd_of)])
    forwarded: list[int] = []
    for fs in fwd_of:
        forwarded.extend(f for f in fs if f is not None and f not in forwarded)
    known_in = [v.aval for v, u in zip(branches[0].invars, ops_uk) if not u]
    fwd_in = [branches[0].invars[i].aval for i in forwarded]
    shared = [Var(a) for a in [*slots, *fwd_in]]
    knowns, unknowns = [], []
    for s, mine, fs in zip(splits, where, fwd_of):
        # Where each of this branch's residuals comes from among the
        # unknown side's inputs (slots, then forwarded operands).
        it = iter(mine)
        src = [next(it) if f is None else len(slots) + forwarded.index(f) for f in fs]

        def known_fun(*xs: Any, s: Any = s, mine: list[int] = mine,
                      fs: list[int | None] = fs) -> list[Any]:
            outs = eval_jaxpr(s.known, s.known.consts, *xs)
            # Every slot gets a filler first (JAX's order of equations);
            # the branch's own residuals then take theirs.
            res = [_empty_like(a) for a in slots]
            own = [r for r, f in zip(outs[n_known_out:], fs) if f is None]
            for k, r in zip(mine, own):
                res[k] = r
            return [*outs[:n_known_out], *res]

        knowns.append(trace_to_jaxpr(known_fun, known_in)[0])
        # The unknown branch keeps its equations and takes every slot: its
        # own residuals bind their slots, the binders of the others are
        # shared by all branches (as JAX joins them; visible in the text).
        binders = list(shared)
        for k, v in zip(src, s.unknown.invars):
            binders[k] = v
        u = s.unknown
        unknowns.append(Jaxpr([], [*binders, *u.invars[len(src):]], list(u.outvars),
                              list(u.eqns), u.effects))
    return _BranchSplit(knowns, unknowns, len(slots), forwarded, out_uk)


def _cond_partial_eval(eqn: Eqn, ins_unknown: list[bool]
                       ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
    """Known index: a known cond computing the known outputs and the taken
    branch's residuals, and an unknown cond reading them. Unknown index:
    the whole cond is unknown."""
    branches: tuple[Jaxpr, ...] = eqn.params["branches"]
    n_out = len(eqn.outvars)
    if ins_unknown[0]:
        return None, eqn, [True] * n_out
    ops_uk = ins_unknown[1:]
    split = _split_branches(branches, ops_uk, [False] * n_out)
    out_uk = split.out_unknowns
    knowns, k_consts = hoist_consts(split.knowns)
    unknowns, u_consts = hoist_consts(split.unknowns)
    if k_consts or u_consts:  # constants only arise from tracing under a trace
        return None, eqn, [True] * n_out
    n_known_out = len(knowns[0].outvars) - split.n_res
    res_vars = [Var(v.aval) for v in knowns[0].outvars[n_known_out:]]
    index, *ops = eqn.invars
    known = eqn.replace(
        invars=[index, *(a for a, u in zip(ops, ops_uk) if not u)],
        outvars=[*(v for v, u in zip(eqn.outvars, out_uk) if not u), *res_vars],
        params={**eqn.params, "branches": tuple(knowns)})
    unknown = eqn.replace(
        invars=[index, *res_vars, *(ops[i] for i in split.forwarded),
                *(a for a, u in zip(ops, ops_uk) if u)],
        outvars=[v for v, u in zip(eqn.outvars, out_uk) if u],
        params={**eqn.params, "branches": tuple(unknowns)})
    return known, unknown, out_uk


def _cond_partial_eval_custom(policy: Any, unks_in: list[bool], inst_in: list[bool], eqn: Eqn
                              ) -> tuple[Eqn | None, Eqn | None, list[bool], list[bool],
                                         list[Var]]:
    """Policy-aware split of a cond inside a checkpoint (JAX's custom rule).

    An output is unknown if it is in some branch. Each branch splits with
    the policy (the staged branch has every operand and recomputes what is
    not saved); the residuals of all branches share typed slots. The known
    cond returns the known outputs and the slots (a branch fills the slots
    it does not produce with ``empty2``); the staged cond reads the index,
    the slots and every operand, and returns every output."""
    branches: tuple[Jaxpr, ...] = eqn.params["branches"]
    index_uk, ops_uk = unks_in[0], unks_in[1:]
    new_inst = [x for x, i in zip(eqn.invars, inst_in) if isinstance(x, Var) and not i]
    n_out = len(eqn.outvars)
    if index_uk:
        return None, eqn, [True] * n_out, [True] * n_out, new_inst
    unks_out = [False] * n_out
    for b in branches:
        _, _, uo, _, _ = partial_eval_jaxpr_custom(b, ops_uk, True, False, True, policy)
        unks_out = [x or y for x, y in zip(unks_out, uo)]
    n_known_out = n_out - sum(unks_out)
    knowns: list[Jaxpr] = []
    stageds: list[Jaxpr] = []
    res_avals: list[list[ArrayType]] = []
    inst_out = [True] * n_out
    for b in branches:
        known, staged, _, inst_out, num_res = partial_eval_jaxpr_custom(
            b, ops_uk, True, unks_out, True, policy)
        # Each branch is cleaned before the slots are shared: afterwards no
        # one could tell which branch reads a shared slot.
        staged, used = dce_sub_jaxpr(staged, [True] * len(staged.outvars),
                                     [False] * num_res + [True] * len(ops_uk))
        used_res = used[:num_res]
        known, _ = dce_sub_jaxpr(known, [True] * n_known_out + used_res, True)
        knowns.append(known)
        stageds.append(staged)
        res_avals.append(staged.in_avals[:sum(used_res)])
    slots, where = _merge_residual_slots(res_avals)
    joined_known: list[Jaxpr] = []
    for known, mine in zip(knowns, where):
        def aug(*xs: Any, known: Jaxpr = known, mine: list[int] = mine) -> list[Any]:
            outs = eval_jaxpr(known, known.consts, *xs)
            res = [_empty_like(a) for a in slots]
            for k, r in zip(mine, outs[n_known_out:]):
                res[k] = r
            return [*outs[:n_known_out], *res]
        joined_known.append(trace_to_jaxpr(aug, known.in_avals)[0])
    all_res = [Var(a) for a in slots]
    joined_staged: list[Jaxpr] = []
    for staged, mine in zip(stageds, where):
        binders = list(all_res)
        for k, v in zip(mine, staged.invars[:len(mine)]):
            binders[k] = v
        joined_staged.append(Jaxpr(list(staged.constvars),
                                   [*binders, *staged.invars[len(mine):]],
                                   list(staged.outvars), staged.eqns, staged.effects,
                                   list(staged.consts)))
    hoisted_k, k_consts = hoist_consts(joined_known)
    hoisted_s, s_consts = hoist_consts(joined_staged)
    if k_consts or s_consts:  # constants only arise from tracing under a trace
        return None, eqn, [True] * n_out, [True] * n_out, new_inst
    res_binders = [Var(a) for a in slots]
    ins_known = [x for x, u in zip(eqn.invars, unks_in) if not u]
    eqn_known = eqn.replace(
        invars=ins_known,
        outvars=[*(v for v, u in zip(eqn.outvars, unks_out) if not u), *res_binders],
        params={**eqn.params, "branches": tuple(hoisted_k)})
    eqn_staged = eqn.replace(
        invars=[eqn.invars[0], *res_binders, *eqn.invars[1:]],
        outvars=[v for v, i in zip(eqn.outvars, inst_out) if i],
        params={**eqn.params, "branches": tuple(hoisted_s)})
    return eqn_known, eqn_staged, unks_out, inst_out, [*new_inst, *res_binders]


def _cond_linearize(trace: ad.LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                    branches: tuple[Jaxpr, ...], **params: Any
                    ) -> tuple[list[Any], list[Any]]:
    """JVP branches split by partial evaluation: a primal cond returning the
    outputs and the taken branch's residuals, a tangent cond reading them."""
    index, *ops = primals
    ops_t = tangents[1:]
    ops_nz = [type(t) is not Zero for t in ops_t]
    with ad.linearizing_bodies():
        out_nz = _cond_out_nonzero(branches, ops_nz)
        recorded = _recorded_branches(branches, ops_nz, out_nz)
        jvps = (recorded.jvps if recorded is not None else
                [_jvp_jaxpr(b, ops_nz, out_nz)[0] for b in branches])
    n_sres = 0 if recorded is None else recorded.n_sres
    n_ops, n_out = len(ops), len(branches[0].outvars)
    n_t_in, n_t_out = sum(ops_nz), sum(out_nz)
    split = _split_branches(jvps, [False] * n_ops + [True] * n_t_in,
                            [False] * (n_out + n_sres) + [True] * n_t_out)
    knowns, k_consts = hoist_consts(split.knowns)
    unknowns, u_consts = hoist_consts(split.unknowns)
    with set_current_trace(trace.parent):
        outs = cond_p.bind(index, *k_consts, *ops, branches=tuple(knowns), **params)
    if recorded is not None:
        recorded.record(index, outs[n_out:n_out + n_sres])
    # Residuals: the known cond's, then the forwarded primal operands.
    residuals = [*outs[n_out + n_sres:], *(ops[i] for i in split.forwarded)]
    t_in = [t for t in ops_t if type(t) is not Zero]
    t_outs = trace.tangent_trace.process_primitive(
        cond_p, [index, *u_consts, *residuals, *t_in], {**params, "branches": tuple(unknowns)})
    it = iter(t_outs)
    tangents_out = [next(it) if nz else Zero(a.tangent_type())
                    for nz, a in zip(out_nz, branches[0].out_avals)]
    return list(outs[:n_out]), tangents_out


def _bcast_to(pred: Any, x: Any) -> Any:
    """``pred`` broadcast along the trailing axes of ``x``."""
    p, a = canonical_aval_of(pred), canonical_aval_of(x)
    if p.ndim == a.ndim:
        return pred
    return broadcast_in_dim(pred, a.shape, tuple(range(p.ndim)))


def _select_or_stop(chosen: Any, x: Any) -> Any:
    """``x`` where ``chosen``, else ``stop_gradient(x)``; the stop_gradient is
    bound before the predicate's broadcast, in JAX's order."""
    stopped = stop_gradient(x)
    return select(_bcast_to(chosen, x), x, stopped)


def _cond_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                branches: tuple[Jaxpr, ...], **params: Any) -> tuple[list[Any], list[BatchDim]]:
    if any(is_ref_type(v.aval) for b in branches for v in b.invars):
        # JAX refuses any branch with ref effects (reads included).
        raise NotImplementedError("State effect not supported in vmap-of-cond.")
    if any(e in b.effects for b in branches for e in (io_effect, ordered_io_effect)):
        # Whatever the predicate: JAX batches no cond whose branches call back
        # into Python through io_callback.
        raise NotImplementedError("IO effect not supported in vmap-of-cond.")
    in_avals = branches[0].in_avals
    if dims[0] is not None:
        return _select_branches(axis, args, dims, branches)
    index, *ops = args
    # Batched array operands move to axis 0; a batched hi one keeps its spec.
    op_dims = [None if d is None else d if is_high(a) else 0
               for d, a in zip(dims[1:], in_avals)]
    ops = [x if d is None or is_high(a) else batching.moveaxis(x, d, 0)
           for x, d, a in zip(ops, dims[1:], in_avals)]
    per_branch = [batching.batch_jaxpr(b, axis, op_dims)[1] for b in branches]
    wanted = [_branch_out_dim(a, col) for a, col in zip(branches[0].out_avals, zip(*per_branch))]
    new, consts = hoist_consts([batching.batch_jaxpr(b, axis, op_dims, wanted)[0]
                                for b in branches])
    outs = cond_p.bind(index, *consts, *ops, branches=tuple(new), **params)
    return list(outs), wanted


def _select_branches(axis: AxisData, args: list[Any], dims: list[BatchDim],
                     branches: tuple[Jaxpr, ...]) -> tuple[list[Any], list[BatchDim]]:
    """A batched index: every branch runs on the whole batch and select_n
    picks per example. Each branch sees its operands only where it is
    chosen (stop_gradient elsewhere), so that reverse mode through the
    unchosen branches contributes nothing. A hi operand keeps its mapping
    spec (or stays unbatched) and is passed whole; a hi result is selected
    along the spec the branches give it (``hi_select_n``)."""
    in_avals = branches[0].in_avals
    index = batching.bdim_at_front(args[0], dims[0], axis.size, axis.explicit_mesh_axis)
    hi = [is_high(a) for a in in_avals]
    ops = [x if h else batching.bdim_at_front(x, d, axis.size, axis.explicit_mesh_axis)
           for x, d, h in zip(args[1:], dims[1:], hi)]
    op_dims = [d if h else 0 for d, h in zip(dims[1:], hi)]
    out_avals = branches[0].out_avals
    hi_out = [is_high(a) for a in out_avals]
    # (a hi result stays where its branch batches it, arrays go to 0)
    found = [[d if h else 0 for h, d in zip(hi_out, batching.batch_jaxpr(b, axis, op_dims)[1])]
             for b in branches]
    specs = _selected_specs(out_avals, found)
    branch_outs = []
    for i, (b, got) in enumerate(zip(branches, found)):
        bj, _ = batching.batch_jaxpr(b, axis, op_dims, got)
        chosen = eq(index, np.array(i, np.int32))
        ops_i = [x if h else _select_or_stop(chosen, x) for x, h in zip(ops, hi)]
        outs_i = _run_branch(bj, ops_i, any(hi) or any(hi_out))
        # An unbatched hi result is broadcast along the spec the others give.
        branch_outs.append([HA.broadcast(o, a, (axis.size, s)) if h and d is None else o
                            for o, a, h, d, s in zip(outs_i, out_avals, hi_out, got,
                                                     specs)])
    outs = [HA.select(index, cases, a, (axis.size, s)) if is_high(a)
            else select_n(_bcast_to(index, cases[0]), *cases)
            for a, s, cases in zip(out_avals, specs, zip(*branch_outs))]
    return outs, [s if is_high(a) else 0 for a, s in zip(out_avals, specs)]


def _run_branch(jaxpr: Jaxpr, ops: list[Any], with_hi: bool) -> list[Any]:
    """A batched branch inlined: with hi values, each equation bound (on
    hi tracers it is staged) or, on concrete values, lowered as it runs
    (a primitive making a hi value from arrays runs its ``to_lojax``)."""
    if not with_hi:
        return list(eval_jaxpr(jaxpr, jaxpr.consts, *ops))
    if any(isinstance(x, Tracer) for x in (*ops, *jaxpr.consts)):
        return bind_jaxpr(jaxpr, jaxpr.consts, ops)
    return eval_lowering(jaxpr, jaxpr.consts, ops)


def _selected_specs(avals: Sequence[Any], per_branch: Sequence[Sequence[BatchDim]]
                    ) -> list[BatchDim]:
    """Where a cond with a batched predicate puts each result: an array at
    axis 0; a hi value at the mapping spec the branches that batch it agree
    on (NotImplementedError where they differ, or where none batches it: a
    per-example choice needs a spec to map it along)."""
    out: list[BatchDim] = []
    for a, col in zip(avals, zip(*per_branch)):
        if not is_high(a):
            out.append(0)
            continue
        batched = [d for d in col if d is not None]
        if not batched or any(d != batched[0] for d in batched):
            raise NotImplementedError(
                f"vmap of a cond with a batched predicate selects per example between "
                f"values of type {a.str_short(True)} that its branches give batched "
                f"{'along no mapping spec' if not batched else 'along different specs'} "
                f"({', '.join(map(repr, col))}), so there is no spec to select along")
        out.append(batched[0])
    return out


def _branch_out_dim(aval: Any, dims: Sequence[BatchDim]) -> BatchDim:
    """Where a batched cond puts a result the branches give at ``dims``: an
    array at axis 0 if any branch batches it; a hi value at the spec the
    branches agree on (NotImplementedError where one leaves it unbatched or
    they differ: a hi type is neither broadcast nor moved)."""
    batched = [d for d in dims if d is not None]
    if not batched:
        return None
    if not is_high(aval):
        return 0
    if len(batched) < len(dims) or any(d != batched[0] for d in batched):
        raise NotImplementedError(
            f"vmap of a cond whose branches give a result of type {aval.str_short(True)} "
            f"batched differently ({', '.join(map(repr, dims))}); a hi type is neither "
            "broadcast nor moved along the batch axis")
    return batched[0]


def _cond_dce(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
    """Every branch keeps only the results the caller reads; an operand stays
    if some branch still reads it (then all branches take it). The index is
    always read."""
    branches: tuple[Jaxpr, ...] = eqn.params["branches"]
    n_ops = len(eqn.invars) - 1
    used_ops = [False] * n_ops
    for b in branches:
        _, used = dce_sub_jaxpr(b, used_outputs)
        used_ops = [x or y for x, y in zip(used_ops, used)]
    new = tuple(dce_sub_jaxpr(b, used_outputs, used_ops)[0] for b in branches)
    used_inputs = [True, *used_ops]
    if all(used_ops) and all(used_outputs) and all(n is b for n, b in zip(new, branches)):
        return used_inputs, eqn
    return used_inputs, eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
        params=dict(eqn.params, branches=new))


def _explicit(a: ArrayType) -> bool:
    s = a.sharding
    return s is not None and not s.mesh.empty


def _cond_sharding(index: ArrayType, *ops: ArrayType, branches: tuple[Jaxpr, ...],
                   **params: Any) -> list[Any]:
    """The results have the first branch's output shardings. Where two
    branches give an output shardings on a mesh, they must be equal (JAX's
    ``typematch``: an output without a mesh matches any sharding)."""
    first = branches[0].out_avals
    for b in branches[1:]:
        for a, o in zip(first, b.out_avals):
            if _explicit(a) and _explicit(o) and a.sharding != o.sharding:
                raise TypeError(
                    "branches of cond must have identical output types, got "
                    f"{_avals_text(first)} and {_avals_text(b.out_avals)}")
    return [a.sharding for a in first]


# ===================================================================== while


def _split3(xs: Sequence[Any], n1: int, n2: int) -> tuple[list[Any], list[Any], list[Any]]:
    return list(xs[:n1]), list(xs[n1:n1 + n2]), list(xs[n1 + n2:])


def _while_type(*avals: ArrayType, cond_nconsts: int, cond_jaxpr: Jaxpr, body_nconsts: int,
                body_jaxpr: Jaxpr) -> list[ArrayType]:
    require(cond_nconsts >= 0 and body_nconsts >= 0
            and len(avals) >= cond_nconsts + body_nconsts, "while", "C1",
            f"called with {len(avals)} operands, fewer than cond_nconsts={cond_nconsts} plus "
            f"body_nconsts={body_nconsts}")
    cconsts, bconsts, carry = _split3(avals, cond_nconsts, body_nconsts)
    for name, jaxpr, ins in (("cond_jaxpr", cond_jaxpr, cconsts + carry),
                             ("body_jaxpr", body_jaxpr, bconsts + carry)):
        require(len(jaxpr.invars) == len(ins) and all(
            same_type(a, v) for a, v in zip(ins, jaxpr.in_avals)), "while", "C2",
            f"{name} takes input types {_avals_text(jaxpr.in_avals)}, called with operands "
            f"of type {_avals_text(ins)}")
    _check_refs("while", "cond_jaxpr", cconsts + carry, cond_jaxpr, carry)
    _check_refs("while", "body_jaxpr", bconsts + carry, body_jaxpr, carry)
    outs = body_jaxpr.out_avals
    require(len(outs) == len(carry) and all(same_type(a, o) for a, o in zip(carry, outs)),
            "while", "C3", f"body_fun output and input must have identical types, got "
            f"{_avals_text(outs)} for a carry of type {_avals_text(carry)}")
    preds = cond_jaxpr.out_avals
    ok = len(preds) == 1 and preds[0].dtype == np.dtype(np.bool_) and all(
        c.shape[:preds[0].ndim] == preds[0].shape for c in carry)
    require(ok, "while", "C4", f"cond_jaxpr must return one boolean scalar (or, batched, a "
            f"boolean array whose shape prefixes every carry's), got {_avals_text(preds)}")
    return list(outs)


def _select_carry(pred: np.ndarray, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    mask = pred.reshape(pred.shape + (1,) * (old.ndim - pred.ndim))
    return np.where(mask, new, old)


def _while_impl(*args: np.ndarray, cond_nconsts: int, cond_jaxpr: Jaxpr, body_nconsts: int,
                body_jaxpr: Jaxpr) -> list[np.ndarray]:
    cconsts, bconsts, carry = _split3(args, cond_nconsts, body_nconsts)
    while True:
        pred = np.asarray(_values(cond_jaxpr, [*cconsts, *carry])[0])
        if not pred.any():
            return carry
        new = _values(body_jaxpr, [*bconsts, *carry])
        if pred.ndim == 0:
            carry = new
        else:
            # A batched predicate (from vmap): finished examples keep their carry.
            carry = [_select_carry(pred, n, c) for n, c in zip(new, carry)]


def _while_jvp(primals: list[Any], tangents: list[Any], *, cond_nconsts: int,
               cond_jaxpr: Jaxpr, body_nconsts: int,
               body_jaxpr: Jaxpr) -> tuple[list[Any], list[Any]]:
    """A while over the carry and its tangent: the body is the body's JVP,
    the predicate ignores the tangents. Which carry tangents are nonzero is
    the fixpoint of the body's JVP."""
    nz = [type(t) is not Zero for t in tangents]
    _, bconst_nz, carry_nz = _split3(nz, cond_nconsts, body_nconsts)
    for _ in range(1 + len(carry_nz)):
        body_jvp, out_nz = _jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, carry_nz)
        if out_nz == carry_nz:
            break
        carry_nz = [a or b for a, b in zip(carry_nz, out_nz)]
    cconst, bconst, init = _split3(primals, cond_nconsts, body_nconsts)
    _, bconst_t, init_t = _split3(tangents, cond_nconsts, body_nconsts)
    bconst_dot = [t for t in bconst_t if type(t) is not Zero]
    init_dot = [instantiate(t) for t, n in zip(init_t, carry_nz) if n]
    n_carry = len(init)
    # The JVP body takes (bconst, carry, bconst_dot, carry_dot); while wants
    # the body constants first: (bconst, bconst_dot, carry, carry_dot).
    iv = body_jvp.invars
    nb, nbd = len(bconst), len(bconst_dot)
    order = [*iv[:nb], *iv[nb + n_carry:nb + n_carry + nbd], *iv[nb:nb + n_carry],
             *iv[nb + n_carry + nbd:]]
    body_new = Jaxpr(body_jvp.constvars, order, body_jvp.outvars, body_jvp.eqns,
                     body_jvp.effects, body_jvp.consts)
    (body_new,), b_consts = hoist_consts([body_new])
    cond_new = Jaxpr([], [*cond_jaxpr.invars, *(Var(canonical_aval_of(t)) for t in init_dot)],
                     cond_jaxpr.outvars, cond_jaxpr.eqns, cond_jaxpr.effects)
    outs = while_p.bind(*cconst, *b_consts, *bconst, *bconst_dot, *init, *init_dot,
                        cond_nconsts=cond_nconsts, cond_jaxpr=cond_new,
                        body_nconsts=len(b_consts) + nb + nbd, body_jaxpr=body_new)
    it = iter(outs[n_carry:])
    t_outs = [next(it) if n else Zero(a.tangent_type())
              for n, a in zip(carry_nz, body_jaxpr.out_avals)]
    return list(outs[:n_carry]), t_outs


def _while_linearize(trace: ad.LinearizeTrace, primals: list[Any], tangents: list[Any],
                     **params: Any) -> tuple[list[Any], list[Any]]:
    """Primal outputs from a primal loop; the tangent side reruns the JVP
    loop (its primal carry included) on the residual inputs: a loop is only
    forward-differentiable, so nothing is saved per iteration."""
    with set_current_trace(trace.parent):
        outs = while_p.bind(*primals, **params)
    split = ad._SplitTrace(trace.parent, trace.tangent_trace, trace.staged)
    with set_current_trace(split):
        _, t_outs = _while_jvp(primals, tangents, **params)
    return list(outs), t_outs


def _copy(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` retraced: the same equations over fresh variables."""
    return trace_to_jaxpr(lambda *xs: eval_jaxpr(jaxpr, jaxpr.consts, *xs), jaxpr.in_avals)[0]


def _while_partial_eval(eqn: Eqn, ins_unknown: list[bool]
                        ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
    """Carries that stay known (by fixpoint over the body) are computed by a
    known loop when the predicate depends on known values only; the unknown
    carries come from the whole loop, rerun on the unknown side (a loop
    saves no per-iteration residuals). Otherwise the whole loop is unknown."""
    cond_nconsts: int = eqn.params["cond_nconsts"]
    body_nconsts: int = eqn.params["body_nconsts"]
    cond_jaxpr: Jaxpr = eqn.params["cond_jaxpr"]
    body_jaxpr: Jaxpr = eqn.params["body_jaxpr"]
    cconst_uk, bconst_uk, carry_uk = _split3(ins_unknown, cond_nconsts, body_nconsts)
    n_carry = len(carry_uk)
    everything = None, eqn, [True] * n_carry
    for _ in range(1 + n_carry):
        body_split = ad.partial_eval_jaxpr(body_jaxpr, bconst_uk + carry_uk, carry_uk)
        out_uk = body_split.out_unknowns
        if out_uk == carry_uk:
            break
        carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
    cond_split = ad.partial_eval_jaxpr(cond_jaxpr, cconst_uk + carry_uk, False)
    if cond_split.out_unknowns[0] or all(carry_uk):
        return everything
    n_known = n_carry - sum(carry_uk)
    # The known sides return the known outputs first; their residuals (read
    # only by the unknown side, which recomputes them) are dropped.
    body_known = body_split.known
    body_known = Jaxpr(body_known.constvars, body_known.invars, body_known.outvars[:n_known],
                       body_known.eqns, body_known.effects, body_known.consts)
    cond_known = cond_split.known
    cond_known = Jaxpr(cond_known.constvars, cond_known.invars, cond_known.outvars[:1],
                       cond_known.eqns, cond_known.effects, cond_known.consts)
    # Fresh copies: the known sides share variables with the loop the
    # unknown side reruns, which would show in the jaxpr text.
    (cond_known,), c_consts = hoist_consts([_copy(cond_known)])
    (body_known,), b_consts = hoist_consts([_copy(body_known)])
    if c_consts or b_consts:  # constants only arise from tracing under a trace
        return everything
    cconsts, bconsts, init = _split3(eqn.invars, cond_nconsts, body_nconsts)
    known = eqn.replace(
        invars=[*(a for a, u in zip(cconsts, cconst_uk) if not u),
                *(a for a, u in zip(bconsts, bconst_uk) if not u),
                *(a for a, u in zip(init, carry_uk) if not u)],
        outvars=[v for v, u in zip(eqn.outvars, carry_uk) if not u],
        params={**eqn.params, "cond_nconsts": cond_nconsts - sum(cconst_uk),
                "cond_jaxpr": cond_known, "body_nconsts": body_nconsts - sum(bconst_uk),
                "body_jaxpr": body_known})
    unknown = eqn.replace(outvars=[v if u else DropVar(v.aval)
                                   for v, u in zip(eqn.outvars, carry_uk)])
    return known, unknown, carry_uk


def _while_partial_eval_custom(policy: Any, unks_in: list[bool], inst_in: list[bool],
                               eqn: Eqn) -> tuple[Eqn | None, Eqn | None, list[bool],
                                                  list[bool], list[Var]]:
    """Split of a while inside a checkpoint (JAX's custom rule): a loop
    saves nothing per iteration, so the known loop computes the carries
    that stay known (fixpoint over the body, nothing saveable) and the
    staged side reruns the whole loop. An unknown predicate stages it all."""
    del policy  # nothing can be saved from inside a loop of unknown length
    p = eqn.params
    cond_nconsts: int = p["cond_nconsts"]
    body_nconsts: int = p["body_nconsts"]
    cond_jaxpr: Jaxpr = p["cond_jaxpr"]
    body_jaxpr: Jaxpr = p["body_jaxpr"]
    cconst_uk, bconst_uk, carry_uk = _split3(unks_in, cond_nconsts, body_nconsts)
    n_carry = len(carry_uk)
    for _ in range(1 + n_carry):
        body_known, _, carry_out, _, num_res = partial_eval_jaxpr_custom(
            body_jaxpr, bconst_uk + carry_uk, True, carry_uk, True, None)
        if carry_out == carry_uk:
            break
        carry_uk = [a or b for a, b in zip(carry_uk, carry_out)]
    else:
        raise AssertionError("while: carry fixed point not reached")
    assert num_res == 0
    new_inst = [x for x, i in zip(eqn.invars, inst_in) if isinstance(x, Var) and not i]
    cond_known, _, (cond_uk,), _, _ = partial_eval_jaxpr_custom(
        cond_jaxpr, cconst_uk + carry_uk, True, False, True, None)
    if cond_uk:
        return None, eqn, [True] * n_carry, [True] * n_carry, new_inst
    unks = [*cconst_uk, *bconst_uk, *carry_uk]
    eqn_known = eqn.replace(
        invars=[x for x, u in zip(eqn.invars, unks) if not u],
        outvars=[v for v, u in zip(eqn.outvars, carry_uk) if not u],
        params={**p, "cond_jaxpr": cond_known, "body_jaxpr": body_known,
                "cond_nconsts": cond_nconsts - sum(cconst_uk),
                "body_nconsts": body_nconsts - sum(bconst_uk)})
    return eqn_known, eqn, carry_uk, [True] * n_carry, new_inst


def _while_transpose(cts: list[Any], *args: Any, **params: Any) -> list[Any]:
    raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                     "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                     "using fori_loop with static start/stop.")


def _while_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *, cond_nconsts: int,
                 cond_jaxpr: Jaxpr, body_nconsts: int,
                 body_jaxpr: Jaxpr) -> tuple[list[Any], list[BatchDim]]:
    """Carries that become batched are found by fixpoint. A batched
    predicate batches every carry (at axis 0) and the loop runs while any
    example's predicate holds; the primitive keeps finished examples'
    carries (see the impl). Otherwise batched carries sit after the
    predicate's own (batch) axes. Ordered io_callbacks in the loop cannot
    be batched, nor unordered ones when the predicate is batched (how often
    they run would depend on the batch): JAX's plain ``Exception``s."""
    if any(ordered_io_effect in j.effects for j in (body_jaxpr, cond_jaxpr)):
        raise Exception("Ordered IO effects not supported in vmap.")
    cconsts, bconsts, init = _split3(args, cond_nconsts, body_nconsts)
    cdims, bdims, idims = _split3(dims, cond_nconsts, body_nconsts)
    carry_avals = body_jaxpr.in_avals[body_nconsts:]
    # A batched hi carry keeps its mapping spec (it cannot be moved).
    specs = {i: d for i, d in enumerate(idims) if d is not None and is_high(carry_avals[i])}
    carry_bat = [d is not None for d in idims]
    for _ in range(1 + len(carry_bat)):
        trial: list[BatchDim] = [specs.get(i, 0) if b else None
                                 for i, b in enumerate(carry_bat)]
        _, out_dims = batching.batch_jaxpr(body_jaxpr, axis, bdims + trial)
        out_bat = [a or d is not None for a, d in zip(carry_bat, out_dims)]
        # A hi carry the body batches from an unbatched start takes its spec.
        for i, d in enumerate(out_dims):
            if d is not None and is_high(carry_avals[i]):
                specs.setdefault(i, d)
        if out_bat == carry_bat:
            break
        carry_bat = out_bat
    trial = [specs.get(i, 0) if b else None for i, b in enumerate(carry_bat)]
    _, (pred_dim,) = batching.batch_jaxpr(cond_jaxpr, axis, cdims + trial)
    carry_dims: list[BatchDim]
    if pred_dim is not None:
        if any(io_effect in j.effects for j in (body_jaxpr, cond_jaxpr)):
            raise Exception("Unordered IO effects not supported in while_loop with batched "
                            "predicate")
        if any(is_high(a) for a in carry_avals):
            return _selecting_while(axis, args, dims, specs, cond_nconsts=cond_nconsts,
                                    cond_jaxpr=cond_jaxpr, body_nconsts=body_nconsts,
                                    body_jaxpr=body_jaxpr)
        carry_dims = [0] * len(init)
        pred_wanted: BatchDim = 0
    else:
        rank = cond_jaxpr.out_avals[0].ndim
        carry_dims = [specs.get(i, rank) if b else None for i, b in enumerate(carry_bat)]
        pred_wanted = None
    body_b, _ = batching.batch_jaxpr(body_jaxpr, axis, bdims + carry_dims, carry_dims)
    cond_b, _ = batching.batch_jaxpr(cond_jaxpr, axis, cdims + carry_dims, [pred_wanted])
    (cond_b,), c_consts = hoist_consts([cond_b])
    (body_b,), b_consts = hoist_consts([body_b])
    new_init = [x if new is None else
                HA.broadcast(x, a, (axis.size, new)) if is_high(a) and old is None else
                batching.match_axis(axis, x, old, new)
                for x, a, old, new in zip(init, carry_avals, idims, carry_dims)]
    outs = while_p.bind(*c_consts, *cconsts, *b_consts, *bconsts, *new_init,
                        cond_nconsts=len(c_consts) + cond_nconsts, cond_jaxpr=cond_b,
                        body_nconsts=len(b_consts) + body_nconsts, body_jaxpr=body_b)
    return list(outs), carry_dims


def _selecting_while(axis: AxisData, args: list[Any], dims: list[BatchDim],
                     specs: dict[int, BatchDim], *, cond_nconsts: int, cond_jaxpr: Jaxpr,
                     body_nconsts: int, body_jaxpr: Jaxpr) -> tuple[list[Any], list[BatchDim]]:
    """A batched predicate with hi carries: the loop runs while any
    example's predicate holds, and its body keeps each finished example's
    carries by selecting per example between the old and the new ones (a
    hi carry by ``hi_select_n`` along its mapping spec, an array at axis 0),
    so the loop's own predicate is a scalar (the impl's selection for a
    batched predicate finds the batch axis of arrays only, in front)."""
    cconsts, bconsts, init = _split3(args, cond_nconsts, body_nconsts)
    cdims, bdims, idims = _split3(dims, cond_nconsts, body_nconsts)
    carry_dims = _selected_carry_dims(axis, bdims, specs, body_nconsts, body_jaxpr)
    carry_avals = body_jaxpr.in_avals[body_nconsts:]
    cond_b, _ = batching.batch_jaxpr(cond_jaxpr, axis, cdims + carry_dims, [0])
    body_b, out_dims = batching.batch_jaxpr(body_jaxpr, axis, bdims + carry_dims)
    (cond_b,), c_consts = hoist_consts([cond_b])
    (body_b,), b_consts = hoist_consts([body_b])
    nc = len(c_consts) + cond_nconsts

    def any_running(*xs: Any) -> list[Any]:
        (pred,) = _run_branch(cond_b, list(xs), True)
        return [reduce_or(pred, (0,))]

    def step(*xs: Any) -> list[Any]:
        (pred,) = _run_branch(cond_b, [*xs[:nc], *xs[len(xs) - len(init):]], True)
        old = xs[len(xs) - len(init):]
        new = _run_branch(body_b, list(xs[nc:]), True)
        return [_kept_where_finished(axis, pred, o, n, a, d, home) for o, n, a, d, home in
                zip(old, new, carry_avals, out_dims, carry_dims)]

    (cond_new,), cc = hoist_consts([trace_to_jaxpr(any_running, cond_b.in_avals)[0]])
    (body_new,), bc = hoist_consts([trace_to_jaxpr(
        step, [*cond_b.in_avals[:nc], *body_b.in_avals])[0]])
    new_init = [x if home is None else
                HA.broadcast(x, a, (axis.size, home)) if is_high(a) and d is None else
                batching.match_axis(axis, x, d, home)
                for x, a, d, home in zip(init, carry_avals, idims, carry_dims)]
    outs = while_p.bind(*cc, *c_consts, *cconsts, *bc, *c_consts, *cconsts, *b_consts,
                        *bconsts, *new_init, cond_nconsts=len(cc) + nc, cond_jaxpr=cond_new,
                        body_nconsts=len(bc) + nc + len(b_consts) + body_nconsts,
                        body_jaxpr=body_new)
    return list(outs), carry_dims


def _selected_carry_dims(axis: AxisData, bdims: list[BatchDim], specs: dict[int, BatchDim],
                         body_nconsts: int, body_jaxpr: Jaxpr) -> list[BatchDim]:
    """Where a loop with a batched predicate keeps each carry: an array at
    0; a hi value at the mapping spec it starts with or the body gives it
    (to a fixed point), else its type's ``leading_axis_spec()``; a hi carry
    the body passes through unchanged and that nothing batches stays
    unbatched (every example's is the same)."""
    carry_avals = body_jaxpr.in_avals[body_nconsts:]
    home = dict(specs)

    def dims_now() -> list[BatchDim]:
        return [home.get(i) if is_high(a) else 0 for i, a in enumerate(carry_avals)]

    for _ in range(1 + len(carry_avals)):
        _, out = batching.batch_jaxpr(body_jaxpr, axis, bdims + dims_now())
        found = {i: d for i, d in enumerate(out)
                 if d is not None and is_high(carry_avals[i]) and i not in home}
        if not found:
            break
        home.update(found)
    passed = [o is v for o, v in zip(body_jaxpr.outvars, body_jaxpr.invars[body_nconsts:])]
    for i, a in enumerate(carry_avals):
        if is_high(a) and i not in home and not passed[i]:
            home[i] = _spec_to_select_along(a)
    return dims_now()


def _spec_to_select_along(aval: Any) -> Any:
    try:
        return aval.leading_axis_spec()
    except NotImplementedError as e:
        raise NotImplementedError(
            f"vmap of a while_loop with a batched predicate selects per example between "
            f"values of type {aval.str_short(True)}, which nothing batches and whose type "
            "has no leading_axis_spec to batch them along") from e


def _kept_where_finished(axis: AxisData, pred: Any, old: Any, new: Any, aval: Any,
                         got: BatchDim, home: BatchDim) -> Any:
    """The new carry where the example's predicate held, else the old one."""
    if home is None:
        return new
    if not is_high(aval):
        new = batching.match_axis(axis, new, got, 0)
        return select_n(_bcast_to(pred, new), old, new)
    if got is None:
        new = HA.broadcast(new, aval, (axis.size, home))
    elif got != home:
        raise NotImplementedError(
            f"vmap of a while_loop with a batched predicate: its body gives a carry of type "
            f"{aval.str_short(True)} batched along {got!r}, which it takes batched along "
            f"{home!r}")
    return HA.select(pred, [old, new], aval, (axis.size, home))


def _while_dce(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
    """Keep a carry if the caller reads it, the predicate reads it, or the
    body needs it to compute a kept carry (a fixed point: keeping one carry
    may make others needed); the rest leave the loop, with the body work
    and the constants that served only them."""
    p = eqn.params
    cond_j: Jaxpr = p["cond_jaxpr"]
    body_j: Jaxpr = p["body_jaxpr"]
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    n_carry = len(eqn.outvars)
    _, cond_used = dce_sub_jaxpr(cond_j, [True])
    used_carry = [u or c for u, c in zip(used_outputs, cond_used[nc:])]
    for _ in range(n_carry + 1):
        body_new, body_used = dce_sub_jaxpr(body_j, used_carry, [False] * nb + used_carry)
        carry_in = body_used[nb:]
        if carry_in == used_carry:
            break
        used_carry = [u or c for u, c in zip(used_carry, carry_in)]
    cond_new, cond_used = dce_sub_jaxpr(cond_j, [True], [False] * nc + used_carry)
    used_inputs = [*cond_used[:nc], *body_used[:nb], *used_carry]
    if cond_new is cond_j and body_new is body_j and all(used_inputs):
        return used_inputs, eqn
    params = dict(p, cond_jaxpr=cond_new, body_jaxpr=body_new,
                  cond_nconsts=sum(cond_used[:nc]), body_nconsts=sum(body_used[:nb]))
    return used_inputs, eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_carry) if u], params=params)


def _while_sharding(*avals: ArrayType, cond_nconsts: int, cond_jaxpr: Jaxpr,
                    body_nconsts: int, body_jaxpr: Jaxpr) -> list[Any]:
    """The carries leave with the body's output shardings; a carry whose
    sharding the body changes is an error (JAX's carry ``typematch``)."""
    carry = avals[cond_nconsts + body_nconsts:]
    outs = body_jaxpr.out_avals
    for a, o in zip(carry, outs):
        if _explicit(a) and _explicit(o) and a.sharding != o.sharding:
            raise TypeError(
                "while_loop body function carry input and carry output must have equal "
                f"types, got {_avals_text(outs)} for a carry of type {_avals_text(carry)}")
    return [o.sharding for o in outs]


# ================================================================== refs
#
# cond and while take refs as operands: refs the branches, predicate or body
# close over (hoisted to operands like any constant), and refs passed to
# cond as explicit operands. Carries and results are never refs. The
# equation writes the operands whose binders a sub-jaxpr writes.


def _cond_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    out: set[Any] = set()
    for b in params["branches"]:
        out |= sub_jaxpr_effects(b, atoms[1:])
    return frozenset(out)


def _while_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    carry = atoms[nc + nb:]
    return frozenset(sub_jaxpr_effects(params["cond_jaxpr"], [*atoms[:nc], *carry])
                     | sub_jaxpr_effects(params["body_jaxpr"], [*atoms[nc:nc + nb], *carry]))


Discharged = tuple[list[Any], list[tuple[int, Any]]]


def _cond_discharge(ins: list[Any], atoms: list[Atom], params: dict[str, Any]) -> Discharged:
    """A cond given refs as a pure cond: every branch takes the refs' values
    (after the other operands) and returns their final values after its
    results; the branch not taken returns them unchanged."""
    index, *ops = ins
    is_ref = [is_ref_type(a.aval) for a in atoms[1:]]
    if not any(is_ref):
        return list(cond_p.bind(*ins, **params)), []
    no_aliased_refs("cond", atoms)
    branches: tuple[Jaxpr, ...] = params["branches"]
    plain = [x for x, r in zip(ops, is_ref) if not r]
    refs = [x for x, r in zip(ops, is_ref) if r]
    n_plain = len(plain)

    def discharged(b: Jaxpr) -> Jaxpr:
        pure, consts = discharge_state(b)

        def fun(*args: Any) -> list[Any]:
            it_p, it_r = iter(args[:n_plain]), iter(args[n_plain:])
            return eval_jaxpr(pure, consts, *(next(it_r) if r else next(it_p)
                                              for r in is_ref))

        return trace_to_jaxpr(fun, [canonical_aval_of(x) for x in (*plain, *refs)])[0]

    new, consts = hoist_consts([discharged(b) for b in branches])
    outs = cond_p.bind(index, *consts, *plain, *refs,
                       **{**params, "branches": tuple(new)})
    n_out = len(branches[0].outvars)
    finals = iter(outs[n_out:])
    return list(outs[:n_out]), [(1 + k, next(finals)) for k, r in enumerate(is_ref) if r]


def _while_discharge(ins: list[Any], atoms: list[Atom], params: dict[str, Any]
                     ) -> Discharged:
    """A while given refs as a pure while: each distinct ref (the predicate
    and the body may both read one) becomes a leading carry that the body
    updates with its final value and the predicate reads."""
    is_ref = [is_ref_type(a.aval) for a in atoms]
    if not any(is_ref):
        return list(while_p.bind(*ins, **params)), []
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cond_j: Jaxpr = params["cond_jaxpr"]
    body_j: Jaxpr = params["body_jaxpr"]
    if cond_j.effects:
        raise NotImplementedError(
            "discharge_state: a while_loop predicate that writes refs is not supported yet")
    slot: dict[int, int] = {}  # operand position -> its ref's carry
    first: dict[int, int] = {}  # ref atom -> its carry
    ref_vals: list[Any] = []
    for k in range(nc + nb):
        if is_ref[k]:
            key = id(atoms[k]) if isinstance(atoms[k], Var) else -k - 1
            if key not in first:
                first[key] = len(ref_vals)
                ref_vals.append(ins[k])
            slot[k] = first[key]
    n_u = len(ref_vals)
    carry = ins[nc + nb:]
    pure_c, c_consts = discharge_state(cond_j)
    pure_b, b_consts = discharge_state(body_j)

    def merged(args: Sequence[Any], start: int, n: int) -> tuple[list[Any], Sequence[Any]]:
        """A sub-jaxpr's constants, refs' values taken from the ref carries."""
        n_plain = sum(1 for k in range(start, start + n) if not is_ref[k])
        plain = iter(args[:n_plain])
        refs = args[n_plain:n_plain + n_u]
        vals = [refs[slot[k]] if is_ref[k] else next(plain) for k in range(start, start + n)]
        return vals, args[n_plain + n_u:]

    def cond_fun(*args: Any) -> list[Any]:
        vals, rest = merged(args, 0, nc)
        return eval_jaxpr(pure_c, c_consts, *vals, *rest)[:1]

    def body_fun(*args: Any) -> list[Any]:
        vals, rest = merged(args, nc, nb)
        outs = eval_jaxpr(pure_b, b_consts, *vals, *rest)
        n_carry = len(rest)
        refs = list(args[len(args) - n_carry - n_u:len(args) - n_carry])
        finals = iter(outs[n_carry:])
        for k in range(nc, nc + nb):
            if is_ref[k]:
                refs[slot[k]] = next(finals)
        return [*refs, *outs[:n_carry]]

    plain_c = [x for x, r in zip(ins[:nc], is_ref[:nc]) if not r]
    plain_b = [x for x, r in zip(ins[nc:nc + nb], is_ref[nc:nc + nb]) if not r]
    tail = [canonical_aval_of(x) for x in (*ref_vals, *carry)]
    cond_new, cond_h = closed_to_operands(trace_to_jaxpr(
        cond_fun, [*(canonical_aval_of(x) for x in plain_c), *tail])[0])
    body_new, body_h = closed_to_operands(trace_to_jaxpr(
        body_fun, [*(canonical_aval_of(x) for x in plain_b), *tail])[0])
    outs = while_p.bind(*cond_h, *plain_c, *body_h, *plain_b, *ref_vals, *carry,
                        cond_nconsts=len(cond_h) + len(plain_c), cond_jaxpr=cond_new,
                        body_nconsts=len(body_h) + len(plain_b), body_jaxpr=body_new)
    return list(outs[n_u:]), [(k, outs[slot[k]]) for k in range(nc + nb) if is_ref[k]]


# ========================================================== declarations
#
# Last in the module: each declaration names every rule of its primitive,
# from the typing rule to the ref discharge above.


def _cond(prim: Primitive) -> PD.Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                branches: Any, **params: Any) -> list[Dist]:
        index, *ops = args
        # The index is replicated (scalar): every device takes the same branch.
        i = min(max(int(index.any), 0), len(branches) - 1)
        outs = S.run_jaxpr(branches[i], branches[i].consts, ops, geo)
        return [Dist(a, o.bufs) for o, a in zip(outs, out_avals)]
    return program


def _while(prim: Primitive) -> PD.Program:
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                cond_nconsts: int, cond_jaxpr: Any, body_nconsts: int, body_jaxpr: Any
                ) -> list[Dist]:
        if cond_jaxpr.out_avals[0].ndim:  # a batched predicate (vmap)
            return fallback(geo, args, out_avals, cond_nconsts=cond_nconsts,
                            cond_jaxpr=cond_jaxpr, body_nconsts=body_nconsts,
                            body_jaxpr=body_jaxpr)
        cconsts = args[:cond_nconsts]
        bconsts = args[cond_nconsts:cond_nconsts + body_nconsts]
        carry = args[cond_nconsts + body_nconsts:]
        cond, body = S.loop_runner(cond_jaxpr, geo), S.loop_runner(body_jaxpr, geo)
        while True:
            (pred,) = cond([*cconsts, *carry])
            if not bool(pred.any):
                return [Dist(a, c.bufs) for c, a in zip(carry, out_avals)]
            carry = body([*bconsts, *carry])
    return program


# ------------------------------------------------------------- hi types


def _components(avals: Sequence[Any], xs: Sequence[Any]) -> list[Any]:
    """The values' components, in order."""
    return [lo for a, x in zip(avals, xs) for lo in lower_value(a, x)]


def _cond_to_lojax(index: Any, *ops: Any, branches: tuple[Jaxpr, ...]) -> list[Any]:
    """A cond with hi-typed operands or results: the cond of its lowered
    branches on the operands' components (the branches take the components'
    own types, as the values have them); the results raised again."""
    los = _components(branches[0].in_avals, ops)
    lo_in = [canonical_aval_of(lo) for lo in los]
    lowered = tuple(lower_jaxpr(b, lo_in) for b in branches)
    outs = cond_p.bind(index, *los, branches=lowered)
    return raise_values(branches[0].out_avals, outs)


def _while_to_lojax(*args: Any, cond_nconsts: int, cond_jaxpr: Jaxpr, body_nconsts: int,
                    body_jaxpr: Jaxpr) -> list[Any]:
    """A while loop with hi-typed constants or carries: the loop of its
    lowered predicate and body over the components; the carries raised
    again."""
    cconsts, bconsts, carry = _split3(args, cond_nconsts, body_nconsts)
    lo_c = _components(cond_jaxpr.in_avals[:cond_nconsts], cconsts)
    lo_b = _components(body_jaxpr.in_avals[:body_nconsts], bconsts)
    carry_avals = body_jaxpr.in_avals[body_nconsts:]
    lo_k = _components(carry_avals, carry)
    ty = [canonical_aval_of(lo) for lo in lo_k]
    lo_cond = lower_jaxpr(cond_jaxpr, [*map(canonical_aval_of, lo_c), *ty])
    lo_body = lower_jaxpr(body_jaxpr, [*map(canonical_aval_of, lo_b), *ty])
    outs = while_p.bind(*lo_c, *lo_b, *lo_k, cond_nconsts=len(lo_c), cond_jaxpr=lo_cond,
                        body_nconsts=len(lo_b), body_jaxpr=lo_body)
    return raise_values(carry_avals, outs)


cond_p = declare("cond", lowering=CL.cond,
                 typing=_cond_type, impl=_cond_impl, multiple_results=True,
                 sharding=_cond_sharding, jvp=_cond_jvp, transpose=_cond_transpose,
                 batch=_cond_batch, linearize=_cond_linearize,
                 partial_eval=_cond_partial_eval, dce=_cond_dce,
                 remat_rule=_cond_partial_eval_custom, accepts_refs=True,
                 effects_rule=_cond_effects, discharge=_cond_discharge,
                 per_device=from_primitive(_cond), to_lojax=_cond_to_lojax)
while_p = declare("while", lowering=CL.while_loop,
                  typing=_while_type, impl=_while_impl, multiple_results=True,
                  sharding=_while_sharding,
                  jvp=_while_jvp, transpose=_while_transpose, batch=_while_batch,
                  linearize=_while_linearize, partial_eval=_while_partial_eval,
                  dce=_while_dce, remat_rule=_while_partial_eval_custom, accepts_refs=True,
                  effects_rule=_while_effects, discharge=_while_discharge,
                  per_device=from_primitive(_while), to_lojax=_while_to_lojax)


# ================================================================ wrappers

_no_operand = object()


def _source(fun: Callable[..., Any]) -> str:
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def _aval_of(x: Any, what: str) -> ArrayType:
    try:
        return canonical_aval_of(x)
    except TypeError:
        raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type "
                        f"({what})") from None


def _trace(fun: Callable[..., Any], in_tree: Any, avals: Sequence[ArrayType],
           traced_for: str, leaves: Sequence[Any] = ()) -> tuple[Jaxpr, Any]:
    """``fun`` called on the pytree ``in_tree`` of arrays of ``avals``
    (the values ``leaves``), staged. It may not be passed a ref twice, close
    over a ref it is passed, nor return a ref (ValueError, JAX's messages
    naming ``traced_for``)."""
    check_ref_args(fun, traced_for, in_tree, leaves)
    out_trees: list[Any] = []

    def flat(*leaves: Any) -> list[Any]:
        args = tree_util.tree_unflatten(in_tree, leaves)
        leaves_out, tree = tree_util.tree_flatten(fun(*args))
        for leaf in leaves_out:
            _aval_of(leaf, "output of a control-flow function")
        out_trees.append(tree)
        return list(leaves_out)

    jaxpr, _ = trace_to_jaxpr(flat, avals, debug_info_of(fun, traced_for, in_tree))
    check_returned_refs(fun, traced_for, in_tree, jaxpr, out_trees[0])
    check_ref_consts(fun, traced_for, in_tree, leaves, jaxpr)
    return jaxpr, out_trees[0]


# ------------------------------------------------------------------ refs


def debug_info_of(fun: Callable[..., Any], traced_for: str, in_tree: Any) -> DebugInfo:
    """How errors name ``fun`` (or the user's function a lax wrapper stands
    for) and its flat arguments."""
    shown, what, names = getattr(fun, "__spec_debug_info__", (fun, traced_for, None))
    if names is None:
        names = arg_names(fun, in_tree)
    return DebugInfo(what, func_src_info(shown), tuple(names))


def with_debug_info(fun: Callable[..., Any], shown: Callable[..., Any], traced_for: str,
                    arg_names: Sequence[str] | None) -> Callable[..., Any]:
    """Mark a wrapper that lax builds around a user's function (fori_loop's
    loop bodies) so that errors name the user's function, what it was
    traced for and its arguments, as JAX's messages do."""
    fun.__spec_debug_info__ = (shown, traced_for, arg_names)  # type: ignore[attr-defined]
    return fun


def arg_names(fun: Callable[..., Any], args_tree: Any) -> list[str]:
    """The names of a function's flat arguments (``args_tree``: the structure
    of the tuple of its positional arguments), as JAX's error messages give
    them: the parameter name and the leaf's key path (``c``, ``c[1]``,
    ``c['a']``); ``args[k]...`` when the signature does not bind."""
    args = tree_util.tree_unflatten(args_tree, [0] * args_tree.num_leaves)
    try:
        bound = list(inspect.signature(fun).bind(*args).arguments.items())
    except (TypeError, ValueError):
        bound = [("args", tuple(args))]
    return [f"{name}{tree_util.keystr(path)}" for name, x in bound
            for path, _ in tree_util.tree_flatten_with_path(x)[0]]


def result_paths(out_tree: Any) -> list[str]:
    """``result[0][1]``-style paths of a function's flat results; none for a
    single bare result (JAX names no path then)."""
    out = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    paths = [f"result{tree_util.keystr(p)}" for p, _ in tree_util.tree_flatten_with_path(out)[0]]
    return [""] if paths == ["result"] else paths


def tuple_tree(*trees: Any) -> Any:
    """The structure of a tuple of pytrees of the given structures."""
    return tree_util.tree_structure(tuple(
        tree_util.tree_unflatten(t, [0] * t.num_leaves) for t in trees))


def check_returned_refs(fun: Callable[..., Any], traced_for: str, args_tree: Any,
                        jaxpr: Jaxpr, out_tree: Any) -> None:
    """A function traced for control flow returns no ref (ValueError, JAX's
    message): the caller would get a second name for a buffer. Says where
    the ref came from: an argument, a ref the function closed over, or one
    it created."""
    bad = [k for k, v in enumerate(jaxpr.outvars) if is_ref_type(v.aval)]
    if not bad:
        return
    k = bad[0]
    out = jaxpr.outvars[k]
    shown, what, names = getattr(fun, "__spec_debug_info__", (fun, traced_for, None))
    paths = result_paths(out_tree)
    loc = f" at output tree path {paths[k]}" if k < len(paths) and paths[k] else ""
    if any(out is v for v in jaxpr.invars):
        i = next(i for i, v in enumerate(jaxpr.invars) if out is v)
        names = list(names) if names is not None else arg_names(fun, args_tree)
        origin = f"was passed in as the argument {names[i] if i < len(names) else ''}"
    elif any(out is v for e in jaxpr.eqns for v in e.outvars):
        origin = "was created inside the function"
    else:
        origin = ("was closed over by the function, rather than passed in as an argument or "
                  "created inside it")
    raise ValueError(
        f"function {_source(shown)} traced for {what} returned a mutable array reference of "
        f"type {out.aval}{loc}, but mutable array references cannot be returned.\n\n"
        f"The returned mutable array {origin}.")


def _referent(x: Any) -> Any:
    """What a ref value stands for: a staged ref its variable, an eager ref
    itself."""
    return getattr(x, "jaxpr_var", x)


def check_ref_args(fun: Callable[..., Any], traced_for: str, args_tree: Any,
                   leaves: Sequence[Any]) -> None:
    """A ref may be passed to a traced function once: two arguments naming
    one buffer would alias (ValueError, JAX's message)."""
    seen: dict[int, int] = {}
    for i, x in enumerate(leaves):
        aval = getattr(x, "aval", None)
        if not is_ref_type(aval):
            continue
        first = seen.setdefault(id(_referent(x)), i)
        if first != i:
            names = arg_names(fun, args_tree)
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {_source(fun)} for {traced_for} the mutable "
                f"array reference of type {aval} appeared at both {names[first]} and "
                f"{names[i]}.")


def check_ref_consts(fun: Callable[..., Any], traced_for: str, args_tree: Any,
                     leaves: Sequence[Any], jaxpr: Jaxpr) -> None:
    """A ref may not be both closed over by a traced function and passed to
    it (ValueError, JAX's message)."""
    passed = {id(_referent(x)): i for i, x in enumerate(leaves)
              if is_ref_type(getattr(x, "aval", None))}
    if not passed:
        return
    for c in jaxpr.consts:
        i = passed.get(id(_referent(c)))
        if i is not None and is_ref_type(getattr(c, "aval", None)):
            raise ValueError(
                f"when tracing {_source(fun)} for {traced_for}, a mutable array reference of "
                f"type {c.aval} was both closed over and passed as the argument "
                f"{arg_names(fun, args_tree)[i]}")


def _check_eager_aliases(operands: Sequence[Any], prim: str) -> None:
    """Eagerly JAX runs a control-flow primitive as a jit of it, whose
    arguments may not name one ref twice (a while whose predicate and body
    both read a ref passes it twice); staged, the equation may."""
    if type(current_trace()) is not EvalTrace:
        return
    seen: dict[int, int] = {}
    for i, x in enumerate(operands):
        aval = getattr(x, "aval", None)
        if is_ref_type(aval) and seen.setdefault(id(_referent(x)), i) != i:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {prim} for jit the mutable array reference of "
                f"type {aval} appeared at both args[{seen[id(_referent(x))]}] and args[{i}].")


def _long(a: ArrayType) -> str:
    """A type as JAX's error messages show it: ``float32[3]``, with its
    varying manual axes (``float32[3]{V:i}``); a hi type by its ``str_short``."""
    if is_high(a):
        return str(a.str_short())
    suffix = a.update(sharding=None, munreduced=frozenset(), mreduced=frozenset())._suffix()
    return f"{a.dtype.name}[{','.join(map(str, a.shape))}]{suffix}"


def vma_hint(missing: Any, where: str, comma: bool = False) -> str:
    """JAX's advice for values whose varying manual axes differ."""
    order = list(get_abstract_mesh().axis_names)
    axes = tuple(sorted(missing, key=lambda a: order.index(a) if a in order else len(order)))
    return (f"\nThis might be fixed by applying `jax.lax.pcast(..., {axes}, to='varying')`"
            f"{',' if comma else ''} {where}.\nSee "
            "https://docs.jax.dev/en/latest/201/shard-map.html#scan-vma for more information.\n")


def _mismatch(a: ArrayType, b: ArrayType) -> str:
    """Which parts of two unequal types differ, listed as JAX lists them
    (nothing for hi types)."""
    if is_high(a) or is_high(b):
        return ""
    parts = []
    if a.dtype != b.dtype:
        parts.append("the dtypes do not match")
    if a.shape != b.shape:
        parts.append("the shapes do not match")
    if a.vma != b.vma:
        parts.append("the manual axis types do not match")
    if not parts:
        return ""
    if len(parts) == 1:
        return ", so " + parts[0]
    return ", so " + ", ".join(parts[:-1]) + ", and " + parts[-1]


class _Leaf:
    """A stand-in for a leaf when describing structural differences."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# How JAX names a leaf of its carry types (abstract arrays) and of a bare
# tree structure, in its structural-difference messages.
_CARRY_LEAF = "<class 'jax._src.core.ShapedArray'>"
_TREE_LEAF = "pytree leaf"


def _is_empty_node(x: Any) -> bool:
    try:
        tree_util.flatten_one_level(x)
    except ValueError:
        return False
    return True


def structure_differences(t1: Any, t2: Any, path: tuple[Any, ...] = ()
                          ) -> list[tuple[tuple[Any, ...], str, str, str]]:
    """Where two pytrees' structures differ: (key path, what the first has,
    what the second has, why they differ), as JAX's messages describe them.
    Leaves are ``_Leaf`` stand-ins (or anything that is a pytree leaf)."""
    if not _is_empty_node(t1) and not _is_empty_node(t2):
        return []  # two leaves
    leaf1, leaf2 = not _is_empty_node(t1), not _is_empty_node(t2)
    if type(t1) is not type(t2):
        name1 = t1.name if leaf1 and isinstance(t1, _Leaf) else str(type(t1))
        name2 = t2.name if leaf2 and isinstance(t2, _Leaf) else str(type(t2))
        return [(path, name1, name2, "their Python types differ")]
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        return [(path, f"{type(t1).__name__} of length {len(t1)}",
                 f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")]
    c1, m1 = tree_util.flatten_one_level(t1)
    c2, m2 = tree_util.flatten_one_level(t2)
    kids1, kids2 = tuple(c1), tuple(c2)
    keys1 = tuple(k for k, _ in tree_util.flatten_one_level_with_keys(t1)[0])
    keys2 = tuple(k for k, _ in tree_util.flatten_one_level_with_keys(t2)[0])
    if len(kids1) != len(kids2):
        try:
            diff = " ".join(repr(k.key) for k in set(keys1).symmetric_difference(keys2))
        except (AttributeError, TypeError):
            diff = ""
        def many(n: int) -> str:
            return "ren" if n > 1 else ""
        return [(path, f"{type(t1)} with {len(kids1)} child{many(len(kids1))}",
                 f"{type(t2)} with {len(kids2)} child{many(len(kids2))}",
                 "the numbers of children do not match"
                 + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))]
    if m1 != m2:
        return [(path, f"{type(t1)} with pytree metadata {m1}",
                 f"{type(t2)} with pytree metadata {m2}",
                 "the pytree node metadata does not match")]
    out: list[tuple[tuple[Any, ...], str, str, str]] = []
    for k, a, b in zip(keys1, kids1, kids2):
        out.extend(structure_differences(a, b, (*path, k)))
    return out


def _listing(diffs: Sequence[str], capitalize: bool = True) -> str:
    """One difference as a sentence; several as a bulleted list."""
    if len(diffs) == 1:
        d = diffs[0]
        return (d[0].upper() + d[1:] if capitalize else d) + ".\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def check_carry(what: str, body_fun: Callable[..., Any], in_tree: Any,
                in_avals: Sequence[ArrayType], out_tree: Any,
                out_avals: Sequence[ArrayType],
                layout: Callable[[ArrayType], Any] | None = None) -> None:
    """The carry a loop body returns has the structure and types of the one
    it takes (``what``: "scan body" or "while_loop body"); JAX's messages.
    ``layout``: also compare the types' sharding layouts by it."""
    try:
        params = list(inspect.signature(body_fun).parameters)
        carry_name: str | None = params[0] if params else None
    except (ValueError, TypeError):
        carry_name = None

    def component(path: str) -> str:
        if carry_name:
            return f"the input carry component {carry_name}{path}" if path else \
                f"the input carry {carry_name}"
        return f"the input carry at path {path}" if path else "the input carry"

    if in_tree != out_tree:
        try:
            t_out = tree_util.tree_unflatten(out_tree,
                                             [_Leaf(_CARRY_LEAF)] * out_tree.num_leaves)
        except Exception:
            t_out = None
        if t_out is None:
            differences = (f"the input tree structure is:\n{in_tree}\n"
                           f"the output tree structure is:\n{out_tree}\n")
        else:
            t_in = tree_util.tree_unflatten(in_tree, [_Leaf(_CARRY_LEAF)] * in_tree.num_leaves)
            diffs = [f"{component(tree_util.keystr(p))} is a {a} but the corresponding "
                     f"component of the carry output is a {b}, so {why}"
                     for p, a, b, why in structure_differences(t_in, t_out)]
            if not diffs:
                return
            differences = _listing(diffs)
        raise TypeError(
            f"{what} function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{differences}\nRevise the function so that "
            "the carry output has the same pytree structure as the carry input.")
    paths = _paths(in_tree, in_avals)

    def agree(a: ArrayType, b: ArrayType) -> bool:
        if is_high(a) or is_high(b):
            return same_type(a, b)  # (a hi type's layout is inside the type)
        return same_type(a, b) and a.vma == b.vma and \
            (layout is None or layout(a) == layout(b))

    diffs = [f"{component(p)} has type {_long(a)} but the corresponding output carry "
             f"component has type {_long(b)}{_mismatch(a, b)}"
             for p, a, b in zip(paths, in_avals, out_avals) if not agree(a, b)]
    if not diffs:
        return
    hints = [vma_hint(b.vma - a.vma, "to the initial carry value corresponding to "
                      f"{component(p)}", comma=True)
             for p, a, b in zip(paths, in_avals, out_avals) if same_type(a, b) and
             a.vma != b.vma]
    raise TypeError(f"{what} function carry input and carry output must have equal "
                    f"types, but they differ:\n\n{_listing(diffs)}{''.join(hints)}\nRevise "
                    "the function so that all output types match the corresponding input "
                    "types.")


def _paths(tree: Any, leaves: Sequence[Any]) -> list[str]:
    paths, _ = tree_util.tree_flatten_with_path(tree_util.tree_unflatten(tree, list(leaves)))
    return [tree_util.keystr(p) for p, _ in paths]


def _check_branch_outputs(api: str, name1: str, name2: str, f1: Callable[..., Any],
                          f2: Callable[..., Any], tree1: Any, avals1: Sequence[ArrayType],
                          tree2: Any, avals2: Sequence[ArrayType]) -> None:
    header = f"{name1} is {_source(f1)}\n{name2} is {_source(f2)}\n\n"
    if tree1 != tree2:
        t1 = tree_util.tree_unflatten(tree1, [_Leaf(_TREE_LEAF)] * tree1.num_leaves)
        t2 = tree_util.tree_unflatten(tree2, [_Leaf(_TREE_LEAF)] * tree2.num_leaves)

        def at(p: tuple[Any, ...]) -> str:
            return f" at path {tree_util.keystr(p)}" if p else ""
        diffs = [f"{name1} output{at(p)} is a {a} but {name2} output{at(p)} is a {b}, "
                 f"so {why}" for p, a, b, why in structure_differences(t1, t2)]
        if diffs:
            raise TypeError(
                f"{api} branch outputs must have the same pytree structure, but they "
                f"differ:\n\n{header}{_listing(diffs, capitalize=False)}\n"
                f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
    def agree(a: ArrayType, b: ArrayType) -> bool:
        return same_type(a, b) and a.vma == b.vma

    if all(agree(a, b) for a, b in zip(avals1, avals2)):
        return
    paths = _paths(tree1, avals1)
    diffs = [f"the output of {name1}{f' at path {p}' if p else ''} has type {_long(a)} "
             f"but the corresponding output of {name2} has type {_long(b)}"
             f"{_mismatch(a, b)}"
             for p, a, b in zip(paths, avals1, avals2) if not agree(a, b)]
    hints = [vma_hint(b.vma - a.vma, f"to the output of {name1}")
             for a, b in zip(avals1, avals2) if same_type(a, b) and a.vma != b.vma]
    body = diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1 else \
        "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
    raise TypeError(f"{api} branches must have equal output types but they differ.\n\n"
                    f"{header}{body}{''.join(hints)}\nRevise {name1} and/or {name2} so that "
                    "all output types match.")


def _forwarded(jaxprs: Sequence[Jaxpr]) -> list[int | None]:
    """Per output: the input index every jaxpr returns unchanged there, if any."""
    result: list[int | None] = []
    for k in range(len(jaxprs[0].outvars)):
        found: set[int | None] = set()
        for j in jaxprs:
            out = j.outvars[k]
            found.add(next((i for i, v in enumerate(j.invars) if v is out), None))
        only = found.pop() if len(found) == 1 else None
        result.append(only)
    return result


def _prune_outputs(j: Jaxpr, keep: Sequence[bool]) -> Jaxpr:
    # Shallow, as JAX's tracing of a cond: calls inside a branch keep their outputs.
    return dce_jaxpr(Jaxpr(j.constvars, j.invars, [o for o, k in zip(j.outvars, keep) if k],
                           j.eqns, j.effects, j.consts), rules=False)


# A function lax stages (a cond's or switch's branch, a while loop's predicate
# and body) is traced once per operand tree and types, purpose and tracing
# context (configuration, typing context, XLA metadata), as JAX's trace cache
# keeps it: two loops or conds of the same functions on the same types share
# their jaxprs (printed once, as `let` bindings). A trace that closes over
# values (constants, tracers, refs) is not kept.
_TRACES: weakref.WeakKeyDictionary[Callable[..., Any], dict[Any, tuple[Jaxpr, Any]]] = \
    weakref.WeakKeyDictionary()
_PRUNED: weakref.WeakKeyDictionary[Jaxpr, dict[tuple[bool, ...], Jaxpr]] = \
    weakref.WeakKeyDictionary()


def _trace_cached(fun: Callable[..., Any], in_tree: Any, avals: Sequence[ArrayType],
                  api: str, leaves: Sequence[Any] = ()) -> tuple[Jaxpr, Any]:
    """``_trace``, the same jaxpr for the same function, operands and context."""
    if any(is_ref_type(a) for a in avals):
        return _trace(fun, in_tree, avals, api, leaves)
    try:
        kept = _TRACES.setdefault(fun, {})
    except TypeError:  # not weakly referenceable: traced every time
        return _trace(fun, in_tree, avals, api, leaves)
    key = (in_tree, tuple(avals), api, config.values_key(), _mesh_context.typing_key,
           current_xla_metadata())
    hit = kept.get(key)
    if hit is not None:
        return hit
    traced = _trace(fun, in_tree, avals, api, leaves)
    if not traced[0].consts and not traced[0].constvars:
        kept[key] = traced
    return traced


def _pruned_once(j: Jaxpr, keep: Sequence[bool]) -> Jaxpr:
    """``_prune_outputs``, the same object for the same branch and outputs."""
    per_jaxpr = _PRUNED.setdefault(j, {})
    flags = tuple(keep)
    out = per_jaxpr.get(flags)
    if out is None:
        out = per_jaxpr[flags] = _prune_outputs(j, flags)
    return out


def _bind_cond(index: Any, funs: Sequence[Callable[..., Any]], names: Sequence[str],
               api: str, operands: Sequence[Any]) -> Any:
    leaves, in_tree = tree_util.tree_flatten(tuple(operands))
    avals = [_aval_of(x, f"{api} operand") for x in leaves]
    traced = [_trace_cached(f, in_tree, avals, api, leaves) for f in funs]
    for (j, tree), f, name in zip(traced[1:], funs[1:], names[1:]):
        _check_branch_outputs(api, names[0], name, funs[0], f, traced[0][1],
                              traced[0][0].out_avals, tree, j.out_avals)
    jaxprs, consts = hoist_consts([j for j, _ in traced])
    # Outputs that every branch takes unchanged from one input are that input.
    fwd = _forwarded(jaxprs)
    keep = [f is None for f in fwd]
    jaxprs = [_pruned_once(j, keep) for j in jaxprs]
    return jaxprs, consts, leaves, fwd, traced[0][1]


def _finish(outs: Sequence[Any], fwd: Sequence[int | None], inputs: Sequence[Any],
            out_tree: Any) -> Any:
    it = iter(outs)
    flat = [next(it) if f is None else _forwarded_value(inputs[f]) for f in fwd]
    return tree_util.tree_unflatten(out_tree, flat)


def _forwarded_value(x: Any) -> Any:
    """An input every branch returns unchanged: an array as an array; a hi
    value (or tracer of a hi type) as itself."""
    if is_hi_value(x) or (isinstance(x, Tracer) and is_high(x.aval)):
        return x
    return asarray(x)


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any, operand: Any = _no_operand) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``;
    both branches are traced, one runs."""
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand} and positional operands "
                            f"{operands}")
        operands = (operand,)
    if pred is None:
        raise TypeError("cond predicate is None")
    _refuse_hi_selector(pred, "Pred type must be either boolean or number, got {}.")
    if isinstance(pred, Sequence) or np.ndim(_shape_probe(pred)) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred} of " + (
            f"type {type(pred)}" if isinstance(pred, Sequence)
            else f"shape {np.shape(_shape_probe(pred))}."))
    try:
        dtype = _aval_of(pred, "cond predicate").dtype
    except TypeError as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if dtype.kind != "b":
        if dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")
        pred = pred != 0
    if config.jax_disable_jit and not isinstance(pred, Tracer):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    jaxprs, consts, leaves, fwd, out_tree = _bind_cond(
        pred, [true_fun, false_fun], ["true_fun", "false_fun"], "cond", operands)
    index = convert_element_type(pred, np.int32)
    outs = cond_p.bind(index, *consts, *leaves, branches=(jaxprs[1], jaxprs[0]))
    return _finish(outs, fwd, [*consts, *leaves], out_tree)


def _refuse_hi_selector(x: Any, message: str) -> None:
    """A hi value as a predicate or branch index: JAX reads its shape with
    NumPy, which a hi tracer refuses (TracerArrayConversionError) and a hi
    value passes, its dtype then failing (TypeError ``message``)."""
    if isinstance(x, Tracer) and is_high(x.aval):
        tail = x._tracing_sentence()
        raise TracerArrayConversionError(
            "The numpy.ndarray conversion method __array__() was called on traced array with "
            f"shape {x.aval.str_short()}" + (f"\n{tail}" if tail else ""))
    if is_hi_value(x):
        raise TypeError(message.format(x))


def _shape_probe(x: Any) -> Any:
    """Something ``np.shape`` understands, without reading a tracer's value."""
    if isinstance(x, Tracer) or hasattr(x, "aval"):
        return np.empty(canonical_aval_of(x).shape)
    return x


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any,
           operand: Any = _no_operand) -> Any:
    """``branches[clamp(0, index, len(branches) - 1)](*operands)``."""
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    if operand is not _no_operand:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can "
                            f"be passed, got operand={operand} and positional operands "
                            f"{operands}")
        operands = (operand,)
    _refuse_hi_selector(index, "Index type must be an integer, got {}.")
    shape = np.shape(_shape_probe(index))
    if len(shape) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {shape}.")
    try:
        dtype = _aval_of(index, "switch index").dtype
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {dtype}")
    funs = tuple(branches)
    if not funs:
        raise ValueError("Empty branch sequence")
    if len(funs) == 1:
        return funs[0](*operands)
    index = convert_element_type(index, np.int32)
    index = clamp(np.array(0, np.int32), index, np.array(len(funs) - 1, np.int32))
    if config.jax_disable_jit and not isinstance(index, Tracer):
        return funs[int(index)](*operands)
    names = ["branch 0", *(f"branch{i}" for i in range(1, len(funs)))]
    jaxprs, consts, leaves, fwd, out_tree = _bind_cond(index, funs, names, "switch", operands)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs))
    return _finish(outs, fwd, [*consts, *leaves], out_tree)


def platform_dependent(*args: Any, default: Callable[..., Any] | None = None,
                       **per_platform: Callable[..., Any]) -> Any:
    """``per_platform[platform](*args)``: every branch traced into a cond on
    ``platform_index`` (branches given for several platforms once, the
    default last), the choice made when the program is lowered; eagerly,
    the branch for spec's platform (CPU) runs."""
    grouped: list[tuple[list[str], Callable[..., Any]]] = []
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda', 'rocm', or 'oneapi' for lax.platform_dependent.")
        for names, b in grouped:
            if b == branch:
                names.append(name)
                break
        else:
            grouped.append(([name], branch))
    platforms: tuple[tuple[str, ...] | None, ...] = tuple(tuple(ns) for ns, _ in grouped)
    funs = [b for _, b in grouped]
    if default is not None:
        if not callable(default):
            raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
        funs.append(default)
        platforms = (*platforms, None)
    index = platform_index_p.bind(platforms=platforms)
    if not isinstance(index, Tracer):
        return funs[int(index)](*args)
    names = ["branch 0", *(f"branch{i}" for i in range(1, len(funs)))]
    jaxprs, consts, leaves, fwd, out_tree = _bind_cond(index, funs, names, "switch", args)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs),
                       branches_platforms=platforms)
    return _finish(outs, fwd, [*consts, *leaves], out_tree)


# ---------------------------------------------------------------- loops


def _reads(j: Jaxpr) -> set[int]:
    live = dce_jaxpr(j)
    read = {id(a) for e in live.eqns for a in e.invars}
    return read | {id(a) for a in live.outvars}


def _carry_array(x: Any) -> Any:
    """A carry of a loop run in Python as an array (JAX's ``lax.asarray``,
    which refuses a hi value: it is no ArrayLike)."""
    if is_hi_value(x) or (isinstance(x, Tracer) and is_high(x.aval)):
        raise TypeError(f"asarray: expected ArrayLike, got {x} of type {type(x)}.")
    return asarray(x)


_DERIVED: weakref.WeakKeyDictionary[Jaxpr, dict[Any, Jaxpr]] = weakref.WeakKeyDictionary()


def _once(derive: Callable[[Jaxpr, int, list[bool]], Jaxpr], j: Jaxpr, nconsts: int,
          move: list[bool]) -> Jaxpr:
    """``derive(j, nconsts, move)``, the same object for the same arguments (JAX caches
    these rewrites, so a loop jaxpr shared by several loops stays shared through them)."""
    per_jaxpr = _DERIVED.setdefault(j, {})
    key = (derive, nconsts, *move)
    out = per_jaxpr.get(key)
    if out is None:
        out = per_jaxpr[key] = derive(j, nconsts, move)
    return out


def _cond_without_moved(cond_j: Jaxpr, nc: int, move: list[bool]) -> Jaxpr:
    """The predicate without the carries moved to the body's constants (it reads none)."""
    return Jaxpr([], [v for i, v in enumerate(cond_j.invars) if i < nc or not move[i - nc]],
                 cond_j.outvars, dce_jaxpr(cond_j).eqns, cond_j.effects)


def _body_with_moved_first(body_j: Jaxpr, nb: int, move: list[bool]) -> Jaxpr:
    """The body taking the moved carries as its first constants, no longer returning them."""
    binders = body_j.invars
    front = [binders[nb + k] for k, m in enumerate(move) if m]
    rest = [v for i, v in enumerate(binders) if i < nb or not move[i - nb]]
    return Jaxpr([], [*front, *rest], [o for o, m in zip(body_j.outvars, move) if not m],
                 body_j.eqns, body_j.effects)


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """Apply ``body_fun`` to the carry while ``cond_fun`` of it is true."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if config.jax_disable_jit:
        val = tree_util.tree_map(_carry_array, init_val)
        while cond_fun(val):
            val = tree_util.tree_map(_carry_array, body_fun(val))
        return val
    leaves, tree = tree_util.tree_flatten(init_val)
    in_tree = tree_util.tree_structure((init_val,))

    def make(avals: Sequence[ArrayType]) -> tuple[Jaxpr, Jaxpr, Any]:
        cj, ctree = _trace_cached(cond_fun, in_tree, avals, "while_cond")
        bj, btree = _trace_cached(body_fun, in_tree, avals, "while_body")
        if not tree_util.treedef_is_leaf(ctree) or len(cj.outvars) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {ctree}.")
        p = cj.out_avals[0]
        if p.shape != () or p.dtype != np.dtype(np.bool_):
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"[{p!r}].")
        return cj, bj, btree

    avals = [_aval_of(x, "while_loop carry") for x in leaves]
    cond_j, body_j, out_tree = make(avals)
    if len(body_j.outvars) != len(avals) or out_tree != tree:
        check_carry("while_loop body", body_fun, tree, avals, out_tree, body_j.out_avals)
    # Weakly typed initial values take the type the body gives them.
    changed = False
    for i, (a, o) in enumerate(zip(avals, body_j.out_avals)):
        if a.weak_type and not same_type(a, o):
            dtype, _ = result_type_and_weak(leaves[i], o.dtype)
            leaves[i] = convert_element_type(leaves[i], dtype)
            changed = True
    if changed:
        avals = [_aval_of(x, "while_loop carry") for x in leaves]
        cond_j, body_j, out_tree = make(avals)
    check_carry("while_loop body", body_fun, tree, avals, out_tree, body_j.out_avals)
    (cond_j,), cconsts = hoist_consts([cond_j])
    (body_j,), bconsts = hoist_consts([body_j])
    # A carry the body returns unchanged and the predicate ignores is a body
    # constant (JAX does this so that vmap need not batch it).
    nb, nc = len(bconsts), len(cconsts)
    read = _reads(cond_j)
    move = [body_j.outvars[k] is body_j.invars[nb + k] and id(cond_j.invars[nc + k]) not in read
            for k in range(len(leaves))]
    init = list(leaves)
    moved: list[Any] = []
    if any(move):
        cond_j = _once(_cond_without_moved, cond_j, nc, move)
        body_j = _once(_body_with_moved_first, body_j, nb, move)
        moved = [x for x, m in zip(init, move) if m]
        init = [x for x, m in zip(init, move) if not m]
        bconsts = [*moved, *bconsts]
    _check_eager_aliases([*cconsts, *bconsts, *init], "while")
    outs = while_p.bind(*cconsts, *bconsts, *init, cond_nconsts=len(cconsts),
                        cond_jaxpr=cond_j, body_nconsts=len(bconsts), body_jaxpr=body_j)
    it, mv = iter(outs), iter(moved)
    flat = [next(mv) if m else next(it) for m in move]
    return tree_util.tree_unflatten(tree, flat)


__all__ = ["cond", "switch", "while_loop"]
