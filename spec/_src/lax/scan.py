"""The ``scan`` primitive: a loop of ``length`` iterations of a body jaxpr.

Operands are grouped by the ``ft_in`` param into constants (read by every
iteration), carries (threaded from one iteration to the next) and extensive
inputs (sliced along their leading axis, one slice per iteration); outputs
by ``ft_out`` into the final carries and the stacked per-iteration outputs.
``ft_in``/``ft_out`` are small flat trees whose printed form is JAX's.

Autodiff and batching transform the body and bind ``scan`` again; carries
whose tangent (or batch axis) is nonzero are found by iterating the
body's nonzero pattern to a fixed point, as JAX does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.interpreters import ad, batching
from spec._src.core.hitypes import is_high, lower_value, raise_values
from spec._src.interpreters.hi_lowering import lower_jaxpr
from spec._src.core.state_types import RefEffect, is_ref_type
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, instantiate
from spec._src.interpreters.batching import AxisData
from spec._src.core.interpreter import (
    DropVar,
    Eqn,
    Jaxpr,
    Literal,
    Var,
    canonical_aval_of,
    canonical_value,
    dce_jaxpr,
    dce_of_call,
    dce_sub_jaxpr,
    eval_jaxpr,
    eval_jaxpr_values,
    literal_value,
    pp_eqn_default,
    set_current_trace,
    sharding_of_call,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.lowering import control as CL
from spec._src.lowering.emitter import LoweringContext, handles_keys
from spec._src.core.types import FLOAT0, ArrayType
from spec._src.core.interpreter import Primitive, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.lax.calls import call_effects
from spec._src.lax import hi_axes as HA
from spec._src.core.interpreter import VMA_FROM_TYPING
from spec._src.core.sharding import NamedSharding, P
from spec._src.interpreters.ad_util import zeros_like_aval
from spec._src.lax.calls import transpose_call
from spec._src.lax.remat import partial_eval_jaxpr_custom
from spec._src.lax.state import discharge_state

# ============================================================ flat trees


class Either:
    """A kept (right) or dropped (left) leaf of a filtered flat tree."""

    def __init__(self, is_right: bool, val: Any) -> None:
        self.is_right = is_right
        self.val = val

    def __repr__(self) -> str:
        return f"{'Right' if self.is_right else 'Left'}({self.val})"


class FlatTree:
    """A tree of leaves: tuples, single leaves and filtered subtrees."""

    def map(self, f: Callable[[Any], Any]) -> FlatTree:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def vals(self) -> list[Any]:
        out: list[Any] = []

        def collect(x: Any) -> Any:
            out.append(x)
            return x
        self.map(collect)
        return out

    def update(self, new: Iterable[Any]) -> FlatTree:
        it = iter(list(new))
        return self.map(lambda _: next(it))

    def void(self) -> FlatTree:
        return self.map(lambda _: None)

    def unpack(self) -> tuple[FlatTree, ...]:
        raise TypeError(f"Not a FlatTree tuple: {self}")

    def filter_with_mask(self, mask: Sequence[bool]) -> FlatTree:
        it = iter(list(mask))
        return _filtered(self.map(lambda x: Either(next(it), x)))

    def unfilter(self) -> FlatTree:
        raise TypeError("expected a tuple or a filtered flat tree")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))


class FTTuple(FlatTree):
    def __init__(self, *elts: FlatTree) -> None:
        self.elts = elts

    def map(self, f: Callable[[Any], Any]) -> FlatTree:
        return FTTuple(*(e.map(f) for e in self.elts))

    def __len__(self) -> int:
        return sum(len(e) for e in self.elts)

    def __repr__(self) -> str:
        return repr(self.elts)

    def unpack(self) -> tuple[FlatTree, ...]:
        return self.elts

    def unfilter(self) -> FlatTree:
        return FTTuple(*(e.unfilter() for e in self.elts))


class FTSingleton(FlatTree):
    def __init__(self, val: Any) -> None:
        self.val = val

    def map(self, f: Callable[[Any], Any]) -> FlatTree:
        return FTSingleton(f(self.val))

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return repr(self.val)


class FTFiltered(FlatTree):
    """A tree of ``Either`` leaves of which only the rights count."""

    def __init__(self, val: FlatTree) -> None:
        self.val = val

    def map(self, f: Callable[[Any], Any]) -> FlatTree:
        return FTFiltered(self.val.map(
            lambda e: Either(True, f(e.val)) if e.is_right else e))

    def __len__(self) -> int:
        return sum(1 for e in self.val.vals if e.is_right)

    def __repr__(self) -> str:
        return f"RightsOnly({self.val!r})"

    def unpack(self) -> tuple[FlatTree, ...]:
        return tuple(FTFiltered(t) for t in self.val.unpack())

    def unfilter(self) -> FlatTree:
        return self.val.map(lambda e: e.val)


class FTPyTree(FlatTree):
    """Leaves in a tree of tuples of lists (JAX flattens a tuple of lists of
    values this way); ``spec`` is a list's length or a tuple of specs."""

    def __init__(self, spec: Any, vals: Sequence[Any] | None = None) -> None:
        self.spec = spec
        self._vals = list(vals) if vals is not None else [None] * _spec_len(spec)

    def map(self, f: Callable[[Any], Any]) -> FlatTree:
        return FTPyTree(self.spec, [f(v) for v in self._vals])

    def __len__(self) -> int:
        return len(self._vals)

    def __repr__(self) -> str:
        return f"Pytree(vals={self._vals!r}, tree=PyTreeDef({_spec_text(self.spec)}))"

    def unpack(self) -> tuple[FlatTree, ...]:
        if not isinstance(self.spec, tuple):
            raise TypeError(f"Not a FlatTree tuple: {self}")
        out: list[FlatTree] = []
        start = 0
        for sub in self.spec:
            n = _spec_len(sub)
            out.append(FTPyTree(sub, self._vals[start:start + n]))
            start += n
        return tuple(out)


def _spec_len(spec: Any) -> int:
    return sum(_spec_len(s) for s in spec) if isinstance(spec, tuple) else int(spec)


def _spec_text(spec: Any) -> str:
    if isinstance(spec, tuple):
        inner = ", ".join(_spec_text(s) for s in spec)
        return f"({inner},)" if len(spec) == 1 else f"({inner})"
    return "[" + ", ".join(["*"] * int(spec)) + "]"


def _filtered(tree: FlatTree) -> FlatTree:
    if isinstance(tree, FTTuple):
        return FTTuple(*(_filtered(e) for e in tree.elts))
    return FTFiltered(tree)


def pack(tree: Any) -> FlatTree:
    if isinstance(tree, FlatTree):
        return tree
    return FTTuple(*(pack(t) for t in tree))


def nones(n: int) -> FlatTree:
    return FTTuple(*(FTSingleton(None) for _ in range(n)))


def zipstar(tree: FlatTree) -> FlatTree:
    groups = [t.unpack() for t in tree.unpack()]
    return pack(tuple(zip(*groups)))


def counts(ft_in: FlatTree, ft_out: FlatTree) -> tuple[int, int, int, int]:
    """(constants, carries, extensive inputs, extensive outputs)."""
    c, k, x = ft_in.unpack()
    _, y = ft_out.unpack()
    return len(c), len(k), len(x), len(y)


def scan_trees(n_consts: int, n_carry: int, n_xs: int, n_ys: int
               ) -> tuple[FlatTree, FlatTree]:
    """The plain ``ft_in``/``ft_out`` of a scan with these group sizes."""
    ys = nones(n_ys).filter_with_mask([True] * n_ys)
    return pack((nones(n_consts), nones(n_carry), nones(n_xs))), pack((nones(n_carry), ys))


# ================================================================ typing


def _same(a: ArrayType, b: ArrayType) -> bool:
    if is_high(a) or is_high(b):
        return bool(a == b)
    return a.shape == b.shape and a.dtype == b.dtype


def stacked_aval(aval: Any, length: int) -> Any:
    """The type of ``length`` per-iteration values of ``aval`` stacked: a
    leading axis, for a hi type its ``inc_rank`` along ``leading_axis_spec()``."""
    if is_high(aval):
        return aval.inc_rank(length, aval.leading_axis_spec())
    return aval.update(shape=(length, *aval.shape))


def _scan_type(*avals: ArrayType, reverse: bool, length: int, jaxpr: Jaxpr,
               ft_in: FlatTree, ft_out: FlatTree, unroll: int) -> list[ArrayType]:
    require(isinstance(length, int) and not isinstance(length, bool) and length >= 0,
            "scan", "C1", f"length must be a non-negative int; got {length!r}")
    require(isinstance(reverse, bool), "scan", "C1", f"reverse must be a bool; got {reverse!r}")
    require(isinstance(unroll, int) and unroll >= 0, "scan", "C1",
            f"unroll must be a non-negative int; got {unroll!r}")
    require(isinstance(ft_in, FlatTree) and isinstance(ft_out, FlatTree)
            and len(ft_in.unpack()) == 3 and len(ft_out.unpack()) == 2, "scan", "C2",
            f"ft_in must group operands as (consts, carry, xs) and ft_out outputs as "
            f"(carry, ys); got {ft_in} and {ft_out}")
    nc, nk, nx, ny = counts(ft_in, ft_out)
    require(len(avals) == nc + nk + nx == len(jaxpr.invars), "scan", "C3",
            f"called with {len(avals)} operands; ft_in groups {nc + nk + nx}, the body "
            f"takes {len(jaxpr.invars)}")
    require(len(jaxpr.outvars) == nk + ny, "scan", "C3",
            f"the body returns {len(jaxpr.outvars)} values; ft_out groups {nk + ny}")
    body_in, body_out = jaxpr.in_avals, jaxpr.out_avals
    for i, (got, want) in enumerate(zip(avals, body_in)):
        if i >= nc + nk:
            want = stacked_aval(want, length)
        require(_same(got, want), "scan", "C4",
                f"operand {i} has type {got.str_short(True)}, the body expects "
                f"{want.str_short(True)} (extensive inputs have a leading axis of length "
                f"{length})")
    for i in range(nk):
        a, b = body_in[nc + i], body_out[i]
        require(_same(a, b), "scan", "C5",
                f"carry {i} enters the body as {a.str_short(True)} and leaves it as "
                f"{b.str_short(True)}; carry input and output must have equal types")
    _check_ref_operands(avals, body_in, body_out, nc, nk)
    ys = [stacked_aval(a, length) for a in body_out[nk:]]
    return [*body_out[:nk], *ys]


def _check_ref_operands(avals: Sequence[ArrayType], body_in: Sequence[ArrayType],
                        body_out: Sequence[ArrayType], nc: int, nk: int) -> None:
    """C6: refs are constants (read and written by every iteration) or
    extensive inputs (iteration i sees the ref of row i); never carries nor
    results. An operand is a ref exactly where the body takes one."""
    for i, (got, want) in enumerate(zip(avals, body_in)):
        require(is_ref_type(got) == is_ref_type(want), "scan", "C6",
                f"operand {i} has type {got.str_short(True)}, the body takes "
                f"{want.str_short(True)}: an operand is a Ref exactly where the body takes one",
                ValueError)
        require(not (is_ref_type(got) and nc <= i < nc + nk), "scan", "C6",
                f"carry {i - nc} has type {got.str_short(True)}: a Ref cannot be a scan carry",
                ValueError)
    for i, b in enumerate(body_out):
        require(not is_ref_type(b), "scan", "C6",
                f"the body returns a Ref ({b.str_short(True)}) as output {i}: refs cannot be "
                "returned", ValueError)


# ============================================================== sharding


def _scan_sharding(*avals: ArrayType, reverse: bool, length: int, jaxpr: Jaxpr,
                   ft_in: FlatTree, ft_out: FlatTree, unroll: int) -> list[Any]:
    """Carries leave with the body's output shardings; each ys entry gets the
    body's per-step sharding with a replicated leading (stacking) axis. The
    scanned axis of every xs must be replicated (ValueError, as lax.scan)."""
    nc, nk, nx, _ = counts(ft_in, ft_out)
    # (a hi type's sharding is inside the type: its typing made it)
    xs = [a for a in avals[nc + nk:nc + nk + nx] if not is_high(a)]
    if any(a.sharding is not None and a.sharding.spec.partitions[:1] not in ((), (None,))
           for a in xs):
        shown = ", ".join(str(a.sharding.spec if a.sharding is not None
                              else P(*(None,) * a.ndim)) for a in xs)
        raise ValueError(f"0th dimension of all xs should be replicated. Got {shown}")
    outs = jaxpr.out_avals
    result: list[Any] = [getattr(a, "sharding", None) for a in outs[:nk]]
    for y in outs[nk:]:
        s = getattr(y, "sharding", None)
        if is_high(y):
            s = None
        result.append(None if s is None else NamedSharding(
            s.mesh, P(None, *s.spec.partitions, unreduced=s.spec.unreduced,
                      reduced=s.spec.reduced)))
    return result


# ================================================================== impl


def slice_aval(aval: ArrayType) -> ArrayType:
    """The type of one iteration's slice of an ``xs`` operand: the leading
    axis dropped, from the shape and from the sharding's spec (which must
    not shard that axis, as JAX requires)."""
    sharding = aval.sharding
    if sharding is None:
        return aval.update(shape=aval.shape[1:])
    parts = tuple(sharding.spec.partitions)
    if parts and parts[0] is not None:
        raise ValueError(f"0th dimension of all xs should be replicated. Got {sharding.spec}")
    spec = P(*parts[1:], unreduced=sharding.spec.unreduced, reduced=sharding.spec.reduced)
    return aval.update(shape=aval.shape[1:], sharding=NamedSharding(sharding.mesh, spec))


def _body_consts(jaxpr: Jaxpr) -> list[np.ndarray]:
    return [canonical_value(c)[0] for c in jaxpr.consts]


def _scan_impl(*args: np.ndarray, reverse: bool, length: int, jaxpr: Jaxpr,
               ft_in: FlatTree, ft_out: FlatTree, unroll: int) -> list[np.ndarray]:
    nc, nk, nx, ny = counts(ft_in, ft_out)
    consts, carry, xs = list(args[:nc]), list(args[nc:nc + nk]), args[nc + nk:]
    body_consts = _body_consts(jaxpr)
    ys = [np.empty((length, *a.shape), a.dtype) for a in jaxpr.out_avals[nk:]]
    # An extensive ref is handed to iteration i as a view of its row i (the
    # ``...`` keeps a 0-d row a writable view rather than a scalar copy), so
    # that the body's writes land in the caller's buffer.
    x_refs = [is_ref_type(a) for a in jaxpr.in_avals[nc + nk:]]
    # The loop over iterations is the semantics: each reads the previous carry.
    for step in range(length):
        i = length - 1 - step if reverse else step
        rows = [x[i, ...] if r else x[i] for x, r in zip(xs, x_refs)]
        outs = eval_jaxpr_values(jaxpr, body_consts, [*consts, *carry, *rows])
        carry = list(outs[:nk])
        for y, o in zip(ys, outs[nk:]):
            y[i] = o
    return [*carry, *ys]


@handles_keys  # CL.scan lowers key-typed values as their data
def _scan_lowering(ctx: LoweringContext, operands: Sequence[str], in_avals: Sequence[ArrayType],
                   out_avals: Sequence[ArrayType], *, ft_in: FlatTree, ft_out: FlatTree,
                   **params: Any) -> list[str]:
    nc, nk, _, _ = counts(ft_in, ft_out)
    return CL.scan(ctx, operands, in_avals, out_avals, num_consts=nc, num_carry=nk, **params)


def _pp_scan(eqn: Any, ctx: Any) -> Any:
    return pp_eqn_default(eqn, ctx, dict(eqn.params))


def _params(length: int, reverse: bool, unroll: int, jaxpr: Jaxpr, ft_in: FlatTree,
            ft_out: FlatTree) -> dict[str, Any]:
    return {"reverse": reverse, "length": length, "jaxpr": jaxpr, "ft_in": ft_in,
            "ft_out": ft_out, "unroll": unroll}


# =================================================================== JVP


def _differentiable(aval: ArrayType) -> bool:
    tangent = aval.tangent_type()
    return is_high(tangent) or tangent.dtype != FLOAT0  # (a hi tangent type is)


def _jvp_body(jaxpr: Jaxpr, nonzero: Sequence[bool], inst: Sequence[bool],
              recorded: list[Any] | None = None) -> tuple[Jaxpr, list[bool]]:
    """The JVP of the body: inputs primals then nonzero tangents; outputs
    primals then the tangents that are nonzero or instantiated. With
    ``recorded``, the body's structured residuals are recorded there and
    their distinct staged values are extra primal outputs (after the ys),
    ``recorded`` holding slots for them."""
    n = len(jaxpr.invars)
    t_avals = [v.aval.tangent_type() for v in jaxpr.invars]
    out_nz: list[bool] = []

    def fun(*args: Any) -> list[Any]:
        it = iter(args[n:])
        tangents = [next(it) if nz else Zero(a) for nz, a in zip(nonzero, t_avals)]
        p, t = ad.jvp_flat(lambda *xs: eval_jaxpr(jaxpr, jaxpr.consts, *xs), args[:n],
                           tangents, recorded, named=False)
        keep = [type(x) is not Zero or i for x, i in zip(t, inst)]
        out_nz.extend(keep)
        sres: list[Any] = []
        if recorded is not None:
            recorded[:], sres = ad.slotted_entries(recorded)
        return [*p, *sres, *(instantiate(x) for x, k in zip(t, keep) if k)]

    avals = [*jaxpr.in_avals, *(a for a, nz in zip(t_avals, nonzero) if nz)]
    new, _ = trace_to_jaxpr(fun, avals)
    return new, out_nz


@dataclass
class _Recorded:
    """A JVP body that also returns its structured residuals' values as
    extra ys (stacked by the scan): the body, its output trees and tangent
    pattern, and the entries with slots for the values."""

    body: Jaxpr
    ft_out: FlatTree
    out_nz: list[bool]
    template: list[Any]
    n_sres: int

    def fill(self, stacked: Sequence[Any]) -> None:
        ad.fill_call_entry(ad.filled_entries(self.template, stacked))


def _recorded_body(jaxpr: Jaxpr, ft_out: FlatTree, nc: int, nk: int, ny: int,
                   nz: list[bool]) -> _Recorded | None:
    """In reverse mode, the JVP body at tangent pattern ``nz`` recording its
    structured residuals; None when it records none."""
    if not ad.recording_call_entry():
        return None
    recorded: list[Any] = []
    body, out_nz = _jvp_body(jaxpr, nz, nz[nc:nc + nk] + [False] * ny, recorded)
    n_sres = len(body.outvars) - nk - ny - sum(out_nz)
    if n_sres == 0:
        return None
    carry_g, ys_g = ft_out.unpack()
    return _Recorded(body, pack((carry_g, (ys_g, nones(n_sres)))),
                     [*out_nz, *[False] * n_sres], recorded, n_sres)


def _carry_fixpoint(nk: int, ny: int, pattern: Callable[[list[bool]], list[bool]],
                    carry: list[bool]) -> list[bool]:
    """Carries flagged initially or by their output, iterated to a fixed point."""
    for _ in range(nk + 1):
        out = pattern(carry)[:nk]
        new = [a or b for a, b in zip(carry, out)]
        if new == carry:
            return carry
        carry = new
    raise AssertionError("scan: carry fixed point not reached")


def _nonzero_pattern(jaxpr: Jaxpr, nc: int, nk: int, ny: int,
                     nz: list[bool]) -> tuple[list[bool], Jaxpr, list[bool]]:
    """The carry tangent pattern at its fixed point, the JVP body for it, and
    the body's output tangent pattern."""
    const_nz, xs_nz = nz[:nc], nz[nc + nk:]
    found: dict[str, Any] = {}

    def pattern(carry_nz: list[bool]) -> list[bool]:
        body, out_nz = _jvp_body(jaxpr, const_nz + carry_nz + xs_nz,
                                 carry_nz + [False] * ny)
        found["body"], found["out"] = body, out_nz
        return out_nz

    carry_nz = _carry_fixpoint(nk, ny, pattern, nz[nc:nc + nk])
    pattern(carry_nz)
    return const_nz + carry_nz + xs_nz, found["body"], found["out"]


def _rearranged(body: Jaxpr, ft_in: FlatTree, ft_out: FlatTree, nz: list[bool],
                out_nz: list[bool]
                ) -> tuple[Jaxpr, FlatTree, FlatTree, Callable[[list[Any]], list[Any]]]:
    """The JVP body in scan order (each group's primals then its tangents)
    with JAX's flat trees; returns also the operand arranger."""
    n = len(nz)
    it = iter(body.invars[n:])
    tan_vars = [next(it) if z else None for z in nz]
    args_ft = pack((ft_in.update(body.invars[:n]),
                    ft_in.update(tan_vars).filter_with_mask(nz)))
    in_zip = zipstar(args_ft)
    m = len(out_nz)
    ot = iter(body.outvars[m:])
    out_ft = pack((ft_out.update(body.outvars[:m]),
                   ft_out.update([next(ot) if z else None for z in out_nz])
                   .filter_with_mask(out_nz)))
    out_zip = zipstar(out_ft)
    new = Jaxpr(list(body.constvars), list(in_zip.vals), list(out_zip.vals), body.eqns,
                body.effects, list(body.consts))

    def arrange(operands: list[Any]) -> list[Any]:
        it2 = iter(operands[n:])
        full = [next(it2) if z else None for z in nz]
        return list(zipstar(pack((ft_in.update(operands[:n]),
                                  ft_in.update(full).filter_with_mask(nz)))).vals)
    return new, in_zip.void(), out_zip.void(), arrange


def _scan_out_avals(jaxpr: Jaxpr, nk: int, length: int) -> list[ArrayType]:
    outs = jaxpr.out_avals
    return [*outs[:nk], *(stacked_aval(a, length) for a in outs[nk:])]


def _scan_jvp(primals: list[Any], tangents: list[Any], *, reverse: bool, length: int,
              jaxpr: Jaxpr, ft_in: FlatTree, ft_out: FlatTree, unroll: int
              ) -> tuple[list[Any], list[Any]]:
    nc, nk, nx, ny = counts(ft_in, ft_out)
    nz0 = [type(t) is not Zero and _differentiable(v.aval)
           for t, v in zip(tangents, jaxpr.invars)]
    with ad.jvp_of_bodies():
        nz, body, out_nz = _nonzero_pattern(jaxpr, nc, nk, ny, nz0)
        recorded = _recorded_body(jaxpr, ft_out, nc, nk, ny, nz)
    if recorded is not None:
        body, out_nz_ext, ft_out_ext = recorded.body, recorded.out_nz, recorded.ft_out
    else:
        out_nz_ext, ft_out_ext = out_nz, ft_out
    new, fin, fout, arrange = _rearranged(body, ft_in, ft_out_ext, nz, out_nz_ext)
    tans = [instantiate(t) for t, z in zip(tangents, nz) if z]
    outs = scan_p.bind(*arrange([*primals, *tans]),
                       **_params(length, reverse, unroll, new, fin, fout))
    # Back from scan order to (primals, tangents).
    pairs = fout.update(outs)
    groups = [g.unpack() for g in pairs.unpack()]
    p_outs = [*groups[0][0].vals, *groups[1][0].vals]
    if recorded is not None:
        recorded.fill(p_outs[nk + ny:])
        p_outs = p_outs[:nk + ny]
    t_flat = iter([*groups[0][1].vals, *groups[1][1].vals])
    out_avals = _scan_out_avals(jaxpr, nk, length)
    t_outs = [next(t_flat) if z else Zero(a.tangent_type()) for z, a in zip(out_nz, out_avals)]
    return p_outs, t_outs


# ========================================================= partial eval


@dataclass
class _Split:
    """A scan split into a known scan and an unknown scan.

    Residuals are the known values the unknown body reads: each comes from a
    body constant (``("const", value)``), an operand of the scan
    (``("in", index)``; intensive when a constant, extensive when an
    extensive input), is a stacked ``ys`` output of the known scan
    (``("ys", j)``, not stacked twice), is stacked by the known scan
    (``("out", j)``) or, on the linearize path, depends only on the known
    constants and is computed once outside the loop (``("hoist", j)``)."""

    known: Jaxpr
    unknown: Jaxpr
    unknowns: list[bool]
    out_unknowns: list[bool]
    residuals: list[tuple[str, Any]]
    intensive: list[bool]


def _split(jaxpr: Jaxpr, nc: int, nk: int, ny: int, unknowns: list[bool]) -> _Split:
    def pattern(carry_uk: list[bool]) -> list[bool]:
        uk = unknowns[:nc] + carry_uk + unknowns[nc + nk:]
        return ad.partial_eval_jaxpr(jaxpr, uk, carry_uk + [False] * ny).out_unknowns

    carry_uk = _carry_fixpoint(nk, ny, pattern, unknowns[nc:nc + nk])
    uk = unknowns[:nc] + carry_uk + unknowns[nc + nk:]
    pe = ad.partial_eval_jaxpr(jaxpr, uk, carry_uk + [False] * ny)
    n_known_out = len(pe.known.outvars) - pe.num_res
    res_vars = pe.known.outvars[n_known_out:]
    const_of = {id(v): c for v, c in zip(jaxpr.constvars, jaxpr.consts)}
    in_of = {id(v): i for i, v in enumerate(jaxpr.invars)}
    residuals: list[tuple[str, Any]] = []
    intensive: list[bool] = []
    stacked: list[Any] = []
    # Known ys outputs (after the known carries) that a residual may repeat.
    n_known_carry = nk - sum(carry_uk)
    ys_of = {id(v): j for j, v in enumerate(pe.known.outvars[:n_known_out])
             if j >= n_known_carry and isinstance(v, Var)}
    for r in res_vars:
        i = in_of.get(id(r))
        if id(r) in const_of:
            residuals.append(("const", const_of[id(r)]))
            intensive.append(True)
        elif i is not None and (i < nc or i >= nc + nk):
            residuals.append(("in", i))
            intensive.append(i < nc)
        elif id(r) in ys_of:
            residuals.append(("ys", ys_of[id(r)]))
            intensive.append(False)
        else:  # computed per iteration, or a carry's value at each iteration
            residuals.append(("out", len(stacked)))
            stacked.append(r)
            intensive.append(False)
    known = Jaxpr(list(pe.known.constvars), list(pe.known.invars),
                  [*pe.known.outvars[:n_known_out], *stacked], pe.known.eqns,
                  pe.known.effects, list(pe.known.consts))
    # Both sides get variables of their own (JAX traces them anew): the
    # known body may be printed next to the body it came from.
    return _Split(_fresh(known), _fresh(pe.unknown), uk, pe.out_unknowns, residuals,
                  intensive)


def _fresh(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` over fresh variables (same equations and sub-jaxprs)."""
    ren: dict[int, Var] = {}

    def new(v: Var) -> Var:
        w = ren.get(id(v))
        if w is None:
            w = ren[id(v)] = DropVar(v.aval) if isinstance(v, DropVar) else Var(v.aval)
        return w

    def atom(a: Any) -> Any:
        return new(a) if isinstance(a, Var) else a

    def effects(found: Iterable[Any]) -> frozenset[Any]:
        # (a write names the variable of its ref: renamed with it)
        return frozenset(RefEffect(e.kind, atom(e.ref)) if isinstance(e, RefEffect) else e
                         for e in found)

    constvars = [new(v) for v in jaxpr.constvars]
    invars = [new(v) for v in jaxpr.invars]
    eqns = [e.replace(invars=[atom(a) for a in e.invars], outvars=[new(v) for v in e.outvars],
                      effects=effects(e.effects))
            for e in jaxpr.eqns]
    return Jaxpr(constvars, invars, [atom(a) for a in jaxpr.outvars], eqns,
                 effects(jaxpr.effects), list(jaxpr.consts))


def _unknown_body(sp: _Split, nc: int, nk: int) -> Jaxpr:
    """The unknown body in scan order: constants (intensive residuals, then
    unknown constants), unknown carries, extensive (unknown xs, then
    extensive residuals)."""
    n_res = len(sp.residuals)
    res_in, uk_in = sp.unknown.invars[:n_res], sp.unknown.invars[n_res:]
    n_uc = sum(sp.unknowns[:nc])
    n_uk = sum(sp.unknowns[nc:nc + nk])
    int_res = [v for v, i in zip(res_in, sp.intensive) if i]
    ext_res = [v for v, i in zip(res_in, sp.intensive) if not i]
    invars = [*int_res, *uk_in[:n_uc], *uk_in[n_uc:n_uc + n_uk], *uk_in[n_uc + n_uk:],
              *ext_res]
    return Jaxpr(list(sp.unknown.constvars), invars, list(sp.unknown.outvars),
                 sp.unknown.eqns, sp.unknown.effects, list(sp.unknown.consts))


def _known_trees(sp: _Split, ft_in: FlatTree, ft_out: FlatTree, n_stacked: int
                 ) -> tuple[FlatTree, FlatTree]:
    known_in = ft_in.filter_with_mask([not u for u in sp.unknowns])
    c, k, x = known_in.unpack()
    _, ys = ft_out.filter_with_mask([not u for u in sp.out_unknowns]).unpack()
    return (pack((nones(len(c)), k, x)), pack((k, (ys, nones(n_stacked)))))


def _unknown_trees(sp: _Split, ft_in: FlatTree, ft_out: FlatTree
                   ) -> tuple[FlatTree, FlatTree]:
    n_int = sum(sp.intensive)
    n_ext = len(sp.intensive) - n_int
    c, k, x = ft_in.filter_with_mask(sp.unknowns).unpack()
    return (pack(((nones(n_int), c), k, (x, nones(n_ext)))),
            ft_out.filter_with_mask(sp.out_unknowns))


def _res_operands(sp: _Split, operands: Sequence[Any], stacked: Sequence[Any],
                  known_outs: Sequence[Any], hoisted: Sequence[Any],
                  const_wrap: Callable[[Any], Any]) -> tuple[list[Any], list[Any]]:
    int_res: list[Any] = []
    ext_res: list[Any] = []
    source = {"in": operands, "out": stacked, "ys": known_outs, "hoist": hoisted}
    for (kind, where), intens in zip(sp.residuals, sp.intensive):
        val = const_wrap(where) if kind == "const" else source[kind][where]
        (int_res if intens else ext_res).append(val)
    return int_res, ext_res


def _scan_linearize(trace: ad.LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                    reverse: bool, length: int, jaxpr: Jaxpr, ft_in: FlatTree,
                    ft_out: FlatTree, unroll: int) -> tuple[list[Any], list[Any]]:
    """Split the JVP body into a primal scan (also stacking the residuals)
    run now, and a tangent scan (reading them) staged into the linear jaxpr."""
    nc, nk, nx, ny = counts(ft_in, ft_out)
    nz0 = [type(t) is not Zero and _differentiable(v.aval)
           for t, v in zip(tangents, jaxpr.invars)]
    with ad.linearizing_bodies():
        nz, body, out_nz = _nonzero_pattern(jaxpr, nc, nk, ny, nz0)
        recorded = _recorded_body(jaxpr, ft_out, nc, nk, ny, nz)
    if recorded is not None:
        body, out_nz, ft_out = recorded.body, recorded.out_nz, recorded.ft_out
    new, fin, fout, arrange = _rearranged(body, ft_in, ft_out, nz, out_nz)
    n_t = sum(nz)
    t_in = [object()] * n_t  # placeholders: which arranged operands are tangents
    arranged = arrange([*primals, *t_in])
    is_tan = [any(a is t for t in t_in) for a in arranged]
    nc2, nk2, _, ny2 = counts(fin, fout)
    sp = _split(new, nc2, nk2, ny2, is_tan)
    if any(sp.unknowns[i] != is_tan[i] for i in range(len(is_tan))) or \
            any(u for u, o in zip(sp.out_unknowns, _primal_out_mask(fout)) if o):
        raise ValueError("Linearization of scan failed to separate its primal outputs")
    known_ops = [a for a, u in zip(arranged, sp.unknowns) if not u]
    n_kc = nc2 - sum(sp.unknowns[:nc2])
    with set_current_trace(trace.parent):
        sp, known_consts, hoisted = _hoist(sp, known_ops[:n_kc])
    known_ops = [*known_consts, *known_ops[n_kc:]]
    n_stacked = sum(1 for k, _ in sp.residuals if k == "out")
    # JAX's trees: the known scan has the original carries and extensive
    # inputs; the tangent scan the nonzero ones, framed by residuals.
    _, carry_g, xs_g = ft_in.unpack()
    _, ys_g = ft_out.unpack()
    k_in = pack((nones(len(known_consts)), carry_g, xs_g))
    k_out = pack((carry_g, (ys_g, nones(n_stacked))))
    with set_current_trace(trace.parent):
        outs = scan_p.bind(*known_ops, **_params(length, reverse, unroll, sp.known,
                                                 k_in, k_out))
    n_known_out = len(outs) - n_stacked
    known_outs, stacked = outs[:n_known_out], outs[n_known_out:]
    with set_current_trace(trace.tangent_trace):
        tans = [instantiate(t) for t, z in zip(tangents, nz) if z]
    t_arranged = iter(tans)
    full = [next(t_arranged) if t else None for t in is_tan]
    int_res, ext_res = _res_operands(sp, arranged, stacked, known_outs, hoisted,
                                     lambda c: c)
    uk_ops = [a for a, u in zip(full, sp.unknowns) if u]
    n_uc = sum(sp.unknowns[:nc2])
    n_uk = sum(sp.unknowns[nc2:nc2 + nk2])
    c_nz, k_nz, x_nz = ft_in.filter_with_mask(nz).unpack()
    u_in = pack(((nones(len(int_res)), c_nz), k_nz, (x_nz, nones(len(ext_res)))))
    u_out = ft_out.filter_with_mask(out_nz)
    ops = [*int_res, *uk_ops[:n_uc], *uk_ops[n_uc:n_uc + n_uk], *uk_ops[n_uc + n_uk:],
           *ext_res]
    t_outs_flat = trace.tangent_trace.process_primitive(
        scan_p, ops, _params(length, reverse, unroll, _unknown_body(sp, nc2, nk2),
                             u_in, u_out))
    carry_p = list(known_outs[:nk])
    ys_p = list(known_outs[nk:nk + ny])
    if recorded is not None:
        recorded.fill(known_outs[nk + ny:])
    it_t = iter(t_outs_flat)
    t_outs = [next(it_t) if z else Zero(a.tangent_type())
              for z, a in zip(out_nz, _scan_out_avals(jaxpr, nk, length))]
    return [*carry_p, *ys_p], t_outs


def _hoist(sp: _Split, consts: list[Any]) -> tuple[_Split, list[Any], list[Any]]:
    """Move out of the known scan what depends only on its constants: those
    equations run once now (binding under the current trace), stacked
    residuals they compute become intensive, and the known body reads the
    values it needs from them as its new constants. Returns the new split,
    the known scan's constants and the hoisted residual values."""
    n = len(consts)
    known = sp.known
    n_stacked = sum(1 for k, _ in sp.residuals if k == "out")
    n_out = len(known.outvars) - n_stacked
    # A constant ref is not loop-invariant (the loop may write it): what
    # reads it stays in the loop, and the ref stays a constant of the loop.
    is_ref = [is_ref_type(v.aval) for v in known.invars[:n]]
    pe = ad.partial_eval_jaxpr(known, [*is_ref, *[True] * (len(known.invars) - n)],
                               [True] * n_out + [False] * n_stacked)
    # Equations with no outputs (an emptied known side of a call) are dropped.
    hoist = dce_jaxpr(pe.known, rules=False)
    vals = eval_jaxpr(hoist, hoist.consts, *(c for c, r in zip(consts, is_ref) if not r))
    n_hoisted = len(pe.known.outvars) - pe.num_res
    hoisted = list(vals[:n_hoisted])
    new_consts = [*vals[n_hoisted:], *(c for c, r in zip(consts, is_ref) if r)]
    res_uk = pe.out_unknowns[n_out:]
    h_idx = iter(range(n_hoisted))
    s_idx = iter(range(n_stacked))
    moved = [("hoist", next(h_idx)) if not u else ("out", next(s_idx)) for u in res_uk]
    residuals: list[tuple[str, Any]] = []
    intensive: list[bool] = []
    for (kind, where), intens in zip(sp.residuals, sp.intensive):
        if kind == "out":
            kind, where = moved[where]
            intens = kind == "hoist"
        residuals.append((kind, where))
        intensive.append(intens)
    new = _Split(_inline_remat(pe.unknown), sp.unknown, sp.unknowns, sp.out_unknowns,
                 residuals, intensive)
    return new, new_consts, hoisted


def _inline_remat(jaxpr: Jaxpr) -> Jaxpr:
    """The primal loop body with checkpointed calls replaced by their
    equations: rematerialisation concerns only the tangent loop, and JAX's
    linearized primal body runs the checkpointed function's equations plainly."""
    if not any(e.primitive.name == "remat2" for e in jaxpr.eqns):
        return jaxpr

    def fun(*args: Any) -> list[Any]:
        env: dict[int, Any] = {id(v): c for v, c in zip(jaxpr.constvars, jaxpr.consts)}
        env.update((id(v), a) for v, a in zip(jaxpr.invars, args))

        def read(a: Any) -> Any:
            return literal_value(a) if isinstance(a, Literal) else env[id(a)]
        for eqn in jaxpr.eqns:
            ins = [read(a) for a in eqn.invars]
            if eqn.primitive.name == "remat2":
                sub = eqn.params["jaxpr"]
                outs = eval_jaxpr(sub, sub.consts, *ins)
            else:
                res = eqn.primitive.bind(*ins, **eqn.params)
                outs = res if eqn.primitive.multiple_results else [res]
            env.update((id(v), o) for v, o in zip(eqn.outvars, outs))
        return [read(a) for a in jaxpr.outvars]

    new, _ = trace_to_jaxpr(fun, jaxpr.in_avals)
    return new


def _primal_out_mask(fout: FlatTree) -> list[bool]:
    """Which outputs of a rearranged JVP scan are primals (scan order)."""
    carry, ys = fout.unpack()
    ck = [len(g) for g in carry.unpack()]
    yk = [len(g) for g in ys.unpack()]
    return [True] * ck[0] + [False] * ck[1] + [True] * yk[0] + [False] * yk[1]


def _scan_partial_eval(eqn: Eqn, ins_unknown: list[bool]
                       ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
    p = eqn.params
    ft_in, ft_out = p["ft_in"], p["ft_out"]
    nc, nk, nx, ny = counts(ft_in, ft_out)
    sp = _split(p["jaxpr"], nc, nk, ny, list(ins_unknown))
    n_stacked = sum(1 for k, _ in sp.residuals if k == "out")
    stacked_vars = [Var(v.aval.update(shape=(p["length"], *v.aval.shape)))
                    for v in sp.known.outvars[len(sp.known.outvars) - n_stacked:]]
    k_in, k_out = _known_trees(sp, ft_in, ft_out, n_stacked)
    known = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, sp.unknowns) if not u],
        outvars=[*(v for v, u in zip(eqn.outvars, sp.out_unknowns) if not u), *stacked_vars],
        params=_params(p["length"], p["reverse"], p["unroll"], sp.known, k_in, k_out))

    known_vars = [v for v, u in zip(eqn.outvars, sp.out_unknowns) if not u]
    int_res, ext_res = _res_operands(
        sp, eqn.invars, stacked_vars, known_vars, [],
        lambda c: Literal(c, canonical_aval_of(c)))
    uk = [a for a, u in zip(eqn.invars, sp.unknowns) if u]
    n_uc = sum(sp.unknowns[:nc])
    n_uk = sum(sp.unknowns[nc:nc + nk])
    u_in, u_out = _unknown_trees(sp, ft_in, ft_out)
    unknown = eqn.replace(
        invars=[*int_res, *uk[:n_uc], *uk[n_uc:n_uc + n_uk], *uk[n_uc + n_uk:], *ext_res],
        outvars=[v for v, u in zip(eqn.outvars, sp.out_unknowns) if u],
        params=_params(p["length"], p["reverse"], p["unroll"], _unknown_body(sp, nc, nk),
                       u_in, u_out))
    # As JAX, a known part with no outputs and no effects is not run.
    if not known.outvars and not sp.known.effects:
        return None, unknown, sp.out_unknowns
    return known, unknown, sp.out_unknowns


# ====================================================== remat partial eval


def _scan_partial_eval_custom(policy: Any, unks_in: list[bool], inst_in: list[bool], eqn: Eqn
                              ) -> tuple[Eqn | None, Eqn | None, list[bool], list[bool],
                                         list[Var]]:
    """Policy-aware split of a scan inside a checkpoint (JAX's custom rule).

    The body splits with the policy (carries unknown by fixpoint); the known
    side becomes an ``eval_jaxpr`` call that first computes, once, what
    depends only on the known constants (loop-invariant residuals included)
    and then runs a known scan stacking the per-iteration residuals. The
    staged side is the whole scan (every operand available) reading the
    loop-invariant residuals as leading constants and the stacked ones as
    trailing extensive inputs."""
    p = eqn.params
    jaxpr: Jaxpr = p["jaxpr"]
    ft_in, ft_out = p["ft_in"], p["ft_out"]
    length, reverse, unroll = p["length"], p["reverse"], p["unroll"]
    nc, nk, nx, ny = counts(ft_in, ft_out)
    const_uk, carry_uk, xs_uk = unks_in[:nc], unks_in[nc:nc + nk], unks_in[nc + nk:]
    for _ in range(1 + nk):
        unks = const_uk + carry_uk + xs_uk
        known, staged, unks_out, inst_out, num_res = partial_eval_jaxpr_custom(
            jaxpr, unks, True, carry_uk + [False] * ny, True, policy)
        carry_out = unks_out[:nk]
        if carry_out == carry_uk:
            break
        carry_uk = [a or b for a, b in zip(carry_uk, carry_out)]
    else:
        raise AssertionError("scan: carry fixed point not reached")
    res_avals = staged.in_avals[:num_res]
    n_in = len(staged.invars) - num_res
    ins_s, res_s = staged.invars[num_res:], staged.invars[:num_res]
    new_inst = [x for x, i in zip(eqn.invars, inst_in) if isinstance(x, Var) and not i]
    # Hoisting: what the known body computes from its constants alone runs
    # once, outside the loop.
    n_const_known = nc - sum(const_uk)
    n_known_outs = len(unks_out) - sum(unks_out)
    hoist = ad.partial_eval_jaxpr(
        known, [False] * n_const_known + [True] * (len(known.invars) - n_const_known),
        [True] * n_known_outs + [False] * num_res)
    loop_dep_res = hoist.out_unknowns[len(hoist.out_unknowns) - num_res:]
    int_s = [v for v, d in zip(res_s, loop_dep_res) if not d]
    ext_s = [v for v, d in zip(res_s, loop_dep_res) if d]
    staged = Jaxpr(list(staged.constvars), [*int_s, *ins_s, *ext_s], list(staged.outvars),
                   staged.eqns, staged.effects, list(staged.consts))
    assert len(ins_s) == n_in
    intensive_res = [Var(a) for a, d in zip(res_avals, loop_dep_res) if not d]
    extensive_res = [Var(a.update(shape=(length, *a.shape)))
                     for a, d in zip(res_avals, loop_dep_res) if d]
    n_int = len(intensive_res)
    known_mask = [not u for u in unks]
    ins_known = [x for x, u in zip(eqn.invars, unks) if not u]
    out_binders_known = [v for v, u in zip(eqn.outvars, unks_out) if not u]
    _, known_carry_g, known_xs_g = ft_in.filter_with_mask(known_mask).unpack()
    _, known_ys_g = ft_out.filter_with_mask([not u for u in unks_out]).unpack()
    # JAX traces the loop body anew: fresh variables.
    hoist_known, loop = hoist.known, _fresh(hoist.unknown)
    n_ext = sum(loop_dep_res)

    def known_fun(*ins: Any) -> list[Any]:
        out_hoist = eval_jaxpr(hoist_known, hoist_known.consts, *ins[:n_const_known])
        int_vals, consts_lp = out_hoist[:n_int], out_hoist[n_int:]
        k_in = pack((nones(len(consts_lp)), known_carry_g, known_xs_g))
        k_out = pack((known_carry_g, (known_ys_g, nones(n_ext))))
        out_loop = scan_p.bind(*consts_lp, *ins[n_const_known:],
                               **_params(length, reverse, unroll, loop, k_in, k_out))
        return [*int_vals, *out_loop]

    call_jaxpr, _ = trace_to_jaxpr(known_fun, [canonical_aval_of(x) if not isinstance(x, Var)
                                               else x.aval for x in ins_known])
    eqn_known = Eqn(ins_known, [*intensive_res, *out_binders_known, *extensive_res],
                    eval_jaxpr_p, {"call_jaxpr": call_jaxpr})
    consts_g, carry_g, xs_g = ft_in.unpack()
    ft_in_s = pack(((nones(n_int), consts_g), carry_g, (xs_g, nones(len(extensive_res)))))
    eqn_staged = eqn.replace(
        invars=[*intensive_res, *eqn.invars, *extensive_res],
        outvars=[v for v, i in zip(eqn.outvars, inst_out) if i],
        params=dict(p, jaxpr=staged, ft_in=ft_in_s))
    return eqn_known, eqn_staged, unks_out, inst_out, [*new_inst, *intensive_res,
                                                       *extensive_res]


# ============================================================ eval_jaxpr


def _eval_jaxpr_type(*avals: ArrayType, call_jaxpr: Jaxpr) -> list[ArrayType]:
    expected = call_jaxpr.in_avals
    require(len(avals) == len(expected), "eval_jaxpr", "C1",
            f"called with {len(avals)} operands, the jaxpr takes {len(expected)}")
    for i, (got, want) in enumerate(zip(avals, expected)):
        require(_same(got, want), "eval_jaxpr", "C2",
                f"operand {i} has type {got}, the jaxpr expects {want}")
    return call_jaxpr.out_avals


def _eval_jaxpr_impl(*args: np.ndarray, call_jaxpr: Jaxpr) -> Sequence[np.ndarray]:
    return eval_jaxpr_values(call_jaxpr, _body_consts(call_jaxpr), args)


def _eval_jaxpr_jvp(primals: list[Any], tangents: list[Any], *, call_jaxpr: Jaxpr
                    ) -> tuple[list[Any], list[Any]]:
    nonzero = tuple(type(t) is not Zero for t in tangents)
    new, out_nz = ad.jvp_jaxpr(call_jaxpr, nonzero)
    outs = eval_jaxpr_p.bind(*primals, *(t for t in tangents if type(t) is not Zero),
                             call_jaxpr=new)
    n_out = len(call_jaxpr.outvars)
    it = iter(outs[n_out:])
    return list(outs[:n_out]), [next(it) if nz else Zero(v.aval.tangent_type())
                                for nz, v in zip(out_nz, call_jaxpr.outvars)]


def _eval_jaxpr_transpose(cts: list[Any], *args: Any, call_jaxpr: Jaxpr) -> list[Any]:
    return transpose_call(lambda ops, t_jaxpr: eval_jaxpr_p.bind(*ops, call_jaxpr=t_jaxpr),
                          cts, args, call_jaxpr, "eval_jaxpr")


def _eval_jaxpr_batch(axis: AxisData, args: list[Any], dims: list[Any], *,
                      call_jaxpr: Jaxpr) -> tuple[list[Any], list[Any]]:
    new, out_dims = batching.batch_jaxpr(call_jaxpr, axis, dims)
    return list(eval_jaxpr_p.bind(*args, call_jaxpr=new)), out_dims


def _eval_jaxpr_partial_eval(eqn: Eqn, ins_unknown: list[bool]
                             ) -> tuple[Eqn | None, Eqn | None, list[bool]]:
    split = ad.partial_eval_jaxpr(eqn.params["call_jaxpr"], ins_unknown)
    n_known = len(split.known.outvars) - split.num_res
    res_vars = [Var(v.aval) for v in split.known.outvars[n_known:]]
    known = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, ins_unknown) if not u],
        outvars=[*(v for v, u in zip(eqn.outvars, split.out_unknowns) if not u), *res_vars],
        params={"call_jaxpr": split.known})
    unknown = eqn.replace(
        invars=[*res_vars, *(a for a, u in zip(eqn.invars, ins_unknown) if u)],
        outvars=[v for v, u in zip(eqn.outvars, split.out_unknowns) if u],
        params={"call_jaxpr": split.unknown})
    return known, unknown, split.out_unknowns


def _eval_jaxpr_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    """eval_jaxpr (a checkpointed loop's known side) takes the loop's refs."""
    return call_effects(atoms, {"jaxpr": params["call_jaxpr"]})


eval_jaxpr_p = declare("eval_jaxpr", lowering=CL.inline("call_jaxpr", "eval_jaxpr"),
                       typing=_eval_jaxpr_type, impl=_eval_jaxpr_impl,
                       multiple_results=True, jvp=_eval_jaxpr_jvp,
                       transpose=_eval_jaxpr_transpose, batch=_eval_jaxpr_batch,
                       sharding=sharding_of_call("call_jaxpr"),
                       doc="eval_jaxpr: call a jaxpr (the known side of a checkpointed scan)",
                       partial_eval=_eval_jaxpr_partial_eval, dce=dce_of_call("call_jaxpr"),
                       accepts_refs=True, effects_rule=_eval_jaxpr_effects,
                       per_device=from_primitive(PD.call_program("call_jaxpr")))


# ============================================================= transpose


def _scan_transpose(cts: list[Any], *args: Any, reverse: bool, length: int, jaxpr: Jaxpr,
                    ft_in: FlatTree, ft_out: FlatTree, unroll: int) -> list[Any]:
    """A reverse scan of the transposed body. Constants the scan is linear in
    get cotangents accumulated in extra carries (starting at zero);
    carries' cotangents are carried back; extensive linear inputs get
    stacked cotangents. Defined operands are residuals."""
    nc, nk, nx, ny = counts(ft_in, ft_out)
    undef = [type(a) is UndefinedPrimal for a in args]
    # Constant refs whose cotangents are refs (tangent refs the body reads
    # and writes): the transposed scan takes the cotangent refs as constants
    # and its body adds into them in place.
    accum = [isinstance(a, ad.RefAccum) for a in args]
    ct_refs = [a.inst() for a in args if isinstance(a, ad.RefAccum)]
    avals = jaxpr.in_avals
    lin_c = [undef[i] and _differentiable(avals[i]) for i in range(nc)]
    lin_x = [undef[i] and _differentiable(avals[i]) for i in range(nc + nk, nc + nk + nx)]
    res_c = [a for a, u, r in zip(args[:nc], undef[:nc], accum[:nc]) if not u and not r]
    res_x = [a for a, u in zip(args[nc + nk:], undef[nc + nk:]) if not u]
    n_lc, n_rc, n_rx, n_refs = sum(lin_c), len(res_c), len(res_x), len(ct_refs)

    ct_carry = [instantiate(c) for c in cts[:nk]]
    k_avals = [avals[nc + i].ct_type() for i in range(nk)]
    # Cotangents of ys that are symbolic zeros are not passed to the loop.
    y_live = [type(c) is not Zero for c in cts[nk:]]
    n_yl = sum(y_live)
    # The transposed body reads the linear constants as extra outputs whose
    # cotangents are the accumulators: each contribution is then added to the
    # accumulator as it is produced, in JAX's order.
    lin_vars = [v for v, lin in zip(jaxpr.invars[:nc], lin_c) if lin]
    seeded = Jaxpr(list(jaxpr.constvars), list(jaxpr.invars), [*lin_vars, *jaxpr.outvars],
                   jaxpr.eqns, jaxpr.effects, list(jaxpr.consts))

    def body(*xs: Any) -> list[Any]:
        rc = iter(xs[:n_rc])
        refs = iter(xs[n_rc:n_rc + n_refs])
        xs = xs[:n_rc] + xs[n_rc + n_refs:]
        acc = xs[n_rc:n_rc + n_lc]
        ct_carry = xs[n_rc + n_lc:n_rc + n_lc + nk]
        yl = iter(xs[n_rc + n_lc + nk:n_rc + n_lc + nk + n_yl])
        ct_y = [next(yl) if live else Zero(a.ct_type())
                for live, a in zip(y_live, jaxpr.out_avals[nk:])]
        rx = iter(xs[n_rc + n_lc + nk + n_yl:])
        full: list[Any] = []
        for i in range(nc + nk + nx):
            if accum[i]:
                full.append(ad.RefAccum(args[i].aval, next(refs)))
            elif nc <= i < nc + nk or undef[i]:
                full.append(UndefinedPrimal(avals[i]))
            else:
                full.append(next(rc) if i < nc else next(rx))
        got = ad.backward_pass(seeded, seeded.consts, full, [*acc, *ct_carry, *ct_y])
        inst = [instantiate(c) if c is not None else None for c in got]
        new_acc = [c for c, lin in zip(inst[:nc], lin_c) if lin]
        return [*new_acc, *inst[nc:nc + nk],
                *(c for c, lin in zip(inst[nc + nk:], lin_x) if lin)]

    c_avals = [avals[i].ct_type() for i in range(nc) if lin_c[i]]
    y_avals = [a.ct_type() for a, live in zip(jaxpr.out_avals[nk:], y_live) if live]
    in_avals = [*(canonical_aval_of(a) for a in [*res_c, *ct_refs]), *c_avals, *k_avals,
                *y_avals, *(slice_aval(canonical_aval_of(a)) for a in res_x)]
    # The body's logs come out as extra ys, stacked per iteration.
    logged = ad.LoggedBody()
    t_body, _ = trace_to_jaxpr(logged.wrap(body), in_avals)
    acc0 = [zeros_like_aval(a) for a in c_avals]
    ct_ys = [c for c in cts[nk:] if type(c) is not Zero]
    n_lx = sum(lin_x)
    # JAX's trees: ((residuals, refs), (const cts, carry cts), (refs, ys cts,
    # extensive residuals)) flattened; outputs (const and carry cts, xs cts).
    t_in: FlatTree = FTPyTree(((n_rc, n_refs), (n_lc, nk), (0, n_yl, n_rx)))
    t_out = pack((FTPyTree((n_lc, nk)), (FTPyTree(n_lx), nones(logged.num_leaves))))
    outs, logs = logged.split(scan_p.bind(
        *res_c, *ct_refs, *acc0, *ct_carry, *ct_ys, *res_x,
        **_params(length, not reverse, unroll, t_body, t_in, t_out)))
    ad.add_logs(logs, "the transpose rule for 'scan'")
    c_cts = iter(outs[:n_lc])
    k_cts = outs[n_lc:n_lc + nk]
    x_cts = iter(outs[n_lc + nk:])
    result: list[Any] = []
    for i, a in enumerate(args):
        if not undef[i]:  # (a residual, or a ref whose cotangent ref was written)
            result.append(None)
        elif i < nc:
            result.append(next(c_cts) if lin_c[i] else Zero(a.aval.ct_type()))
        elif i < nc + nk:
            result.append(k_cts[i - nc])
        else:
            result.append(next(x_cts) if lin_x[i - nc - nk] else Zero(a.aval.ct_type()))
    return result


# ============================================================== batching


def _scan_batch(axis: AxisData, args: list[Any], dims: list[Any], *, reverse: bool,
                length: int, jaxpr: Jaxpr, ft_in: FlatTree, ft_out: FlatTree, unroll: int
                ) -> tuple[list[Any], list[Any]]:
    """Batch the body: constants keep their batch axes, carries are batched
    at 0 (those whose output becomes batched too, to a fixed point),
    extensive inputs at 1 outside (0 inside the body). A hi value keeps its
    mapping spec: a batched hi carry is batched along it, and a batched hi
    extensive input or stacked result has its batch axis and its stacking
    axis reordered (``hi_transpose``), the stacking axis outermost."""
    nc, nk, nx, ny = counts(ft_in, ft_out)
    c_dims = list(dims[:nc])
    carry_avals, x_avals = jaxpr.in_avals[nc:nc + nk], jaxpr.in_avals[nc + nk:]
    x_dims = dims[nc + nk:]
    x_in = [None if d is None else d if is_high(a) else 0 for a, d in zip(x_avals, x_dims)]
    # A batched hi carry keeps its mapping spec (its values cannot be moved);
    # one the body batches from an unbatched start takes the body's spec.
    specs = {i: d for i, d in enumerate(dims[nc:nc + nk])
             if d is not None and is_high(carry_avals[i])}

    def homes(carry_b: list[bool]) -> list[Any]:
        return [specs.get(i, 0) if b else None for i, b in enumerate(carry_b)]

    def body_dims(carry_b: list[bool]) -> list[Any]:
        out = batching.batch_jaxpr(jaxpr, axis, c_dims + homes(carry_b) + x_in)[1]
        for i, d in enumerate(out[:nk]):
            if d is not None and is_high(carry_avals[i]):
                specs.setdefault(i, d)
        return out

    def pattern(carry_b: list[bool]) -> list[bool]:
        return [d is not None for d in body_dims(carry_b)]

    init_b = [d is not None for d in dims[nc:nc + nk]]
    carry_b = _carry_fixpoint(nk, ny, pattern, init_b)
    y_dims = body_dims(carry_b)[nk:]
    y_avals = jaxpr.out_avals[nk:]
    # (a batched hi result keeps the body's mapping spec; an array is at 0)
    y_want = [None if d is None else d if is_high(a) else 0 for a, d in zip(y_avals, y_dims)]
    in_dims = c_dims + homes(carry_b) + x_in
    body, _ = batching.batch_jaxpr(jaxpr, axis, in_dims, homes(carry_b) + y_want)
    init = [_carry_init(axis, x, a, d, h) if b else x
            for x, a, d, b, h in zip(args[nc:nc + nk], carry_avals, dims[nc:nc + nk], carry_b,
                                     homes(carry_b))]
    xs = [_stacking_first(axis, x, a, d, length) for x, a, d in zip(args[nc + nk:], x_avals,
                                                                    x_dims)]
    outs = scan_p.bind(*args[:nc], *init, *xs,
                       **_params(length, reverse, unroll, body, ft_in, ft_out))
    ys = [_batch_first(axis, y, a, d, length) for y, a, d in zip(outs[nk:], y_avals, y_want)]
    return [*outs[:nk], *ys], homes(carry_b) + [d if is_high(a) or d is None else 1
                                                for a, d in zip(y_avals, y_want)]


def _carry_init(axis: AxisData, x: Any, aval: Any, d: Any, home: Any) -> Any:
    """A batched carry's initial value at its home: an unbatched hi value
    broadcast along the spec the body batches it at (``hi_broadcast``)."""
    if is_high(aval) and d is None:
        return HA.broadcast(x, aval, (axis.size, home))
    return batching.match_axis(axis, x, d, home)


def _stacking_first(axis: AxisData, x: Any, elem: Any, d: Any, length: int) -> Any:
    """A batched extensive input with its stacking axis outermost (an array:
    the batch axis at 1; a hi value: its two mapped axes reordered)."""
    if d is None:
        return x
    if not is_high(elem):
        return x if d == 1 else batching.moveaxis(x, d, 1)
    return HA.reorder(x, elem, [(length, _leading_spec(axis, elem, d)), (axis.size, d)], (1, 0))


def _batch_first(axis: AxisData, y: Any, elem: Any, d: Any, length: int) -> Any:
    """A batched stacked hi result with its batch axis outermost again."""
    if d is None or not is_high(elem):
        return y
    return HA.reorder(y, elem, [(axis.size, d), (length, _leading_spec(axis, elem, d))], (1, 0))


def _leading_spec(axis: AxisData, elem: Any, d: Any) -> Any:
    """The spec a hi type is stacked along, per example and batched alike
    (the reordering keeps each axis's spec)."""
    spec = elem.leading_axis_spec()
    batched = elem.inc_rank(axis.size, d).leading_axis_spec()
    if spec != batched:
        raise NotImplementedError(
            f"vmap of a scan over values of type {elem.str_short(True)}: its leading_axis_spec "
            f"{spec!r} differs from its batched type's {batched!r}, so its stacking and batch "
            "axes cannot be reordered")
    return spec


# =================================================================== DCE


def _scan_dce(eqn: Eqn, used_outputs: list[bool]) -> tuple[list[bool], Eqn | None]:
    """Drop the stacked outputs nobody reads and the carries that neither the
    caller nor a kept part of the body reads, iterating to a fixed point (a
    kept carry may need another); the body loses the work that only fed what
    was dropped, and operands it no longer reads leave the loop."""
    p = eqn.params
    body: Jaxpr = p["jaxpr"]
    ft_in, ft_out = p["ft_in"], p["ft_out"]
    nc, nk, nx, _ = counts(ft_in, ft_out)
    used_carry, used_ys = list(used_outputs[:nk]), list(used_outputs[nk:])
    for _ in range(nk + 1):
        new, used_inputs = dce_sub_jaxpr(body, used_carry + used_ys,
                                         [False] * nc + used_carry + [False] * nx)
        carry_in = used_inputs[nc:nc + nk]
        if carry_in == used_carry:
            break
        used_carry = [u or c for u, c in zip(used_carry, carry_in)]
    used_out = used_carry + used_ys
    if new is body and all(used_inputs) and all(used_out):
        return used_inputs, eqn
    params = dict(p, jaxpr=new, ft_in=ft_in.filter_with_mask(used_inputs),
                  ft_out=ft_out.filter_with_mask(used_out))
    return used_inputs, eqn.replace(
        invars=[a for a, u in zip(eqn.invars, used_inputs) if u],
        outvars=[v for v, u in zip(eqn.outvars, used_out) if u], params=params)


# ================================================================== refs
#
# A scan takes refs as operands: constants (refs the body closes over, read
# and written by every iteration) and extensive inputs (iteration i gets the
# ref of row i). The equation writes the operands whose binders the body
# writes, so dead-code elimination keeps it.


def sub_jaxpr_effects(jaxpr: Jaxpr, atoms: Sequence[Any]) -> set[RefEffect]:
    """The writes ``jaxpr`` makes to its inputs, as writes to the atoms bound
    to them (``atoms[k]`` is the operand of ``jaxpr.invars[k]``)."""
    if not jaxpr.effects:
        return set()
    position = {id(v): k for k, v in enumerate(jaxpr.invars)}
    out: set[RefEffect] = set()
    for e in jaxpr.effects:
        k = position.get(id(getattr(e, "ref", None)))
        if k is not None and k < len(atoms) and isinstance(atoms[k], Var):
            out.add(RefEffect(e.kind, atoms[k]))
    return out


def _scan_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return frozenset(sub_jaxpr_effects(params["jaxpr"], atoms))


def no_aliased_refs(prim: str, atoms: Sequence[Any]) -> None:
    """Discharge gives each ref operand its own value: one ref passed at two
    positions would need them merged, which no rule here does."""
    seen: set[int] = set()
    for a in atoms:
        if is_ref_type(a.aval) and isinstance(a, Var):
            if id(a) in seen:
                raise NotImplementedError(
                    f"discharge_state: the same ref is passed to '{prim}' twice")
            seen.add(id(a))


def closed_to_operands(jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    """A traced jaxpr's constants as leading inputs (loop bodies take none)."""
    return (Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], list(jaxpr.outvars), jaxpr.eqns,
                  jaxpr.effects), list(jaxpr.consts))


def _scan_discharge(ins: list[Any], atoms: list[Any], params: dict[str, Any]
                    ) -> tuple[list[Any], list[tuple[int, Any]]]:
    """A scan over refs as a pure scan: constant refs become leading carries
    (their value in, their final value out); an extensive ref becomes an
    extensive input (its rows in) and a stacked output (each iteration's
    final row, the only row that iteration can touch)."""
    is_ref = [is_ref_type(a.aval) for a in atoms]
    if not any(is_ref):
        return list(scan_p.bind(*ins, **params)), []
    no_aliased_refs("scan", atoms)
    jaxpr: Jaxpr = params["jaxpr"]
    ft_in, ft_out = params["ft_in"], params["ft_out"]
    nc, nk, nx, ny = counts(ft_in, ft_out)
    ref_c, ref_x = is_ref[:nc], is_ref[nc + nk:]
    n_rc, n_rx = sum(ref_c), sum(ref_x)
    pure, pure_consts = discharge_state(jaxpr)
    consts, carry, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    plain_c = [c for c, r in zip(consts, ref_c) if not r]
    ref_vals = [c for c, r in zip(consts, ref_c) if r]
    n_pc = len(plain_c)

    def body(*args: Any) -> list[Any]:
        pc, rc = iter(args[:n_pc]), iter(args[n_pc:n_pc + n_rc])
        merged = [next(rc) if r else next(pc) for r in ref_c]
        outs = eval_jaxpr(pure, pure_consts, *merged, *args[n_pc + n_rc:])
        finals = outs[nk + ny:]
        return [*finals[:n_rc], *outs[:nk + ny], *finals[n_rc:]]

    avals = [*(canonical_aval_of(v) for v in (*plain_c, *ref_vals, *carry)),
             *(slice_aval(canonical_aval_of(x)) for x in xs)]
    new, hoisted = closed_to_operands(trace_to_jaxpr(body, avals)[0])
    _, _, xs_g = ft_in.unpack()
    _, ys_g = ft_out.unpack()
    new_in = pack((nones(len(hoisted) + n_pc), nones(n_rc + nk), xs_g))
    new_out = pack((nones(n_rc + nk), (ys_g, nones(n_rx).filter_with_mask([True] * n_rx))))
    outs = scan_p.bind(*hoisted, *plain_c, *ref_vals, *carry, *xs,
                       **_params(params["length"], params["reverse"], params["unroll"], new,
                                 new_in, new_out))
    finals = iter([*outs[:n_rc], *outs[n_rc + nk + ny:]])
    updates = [(k, next(finals)) for k, r in enumerate(is_ref) if r]
    return list(outs[n_rc:n_rc + nk + ny]), updates


# ------------------------------------------------------ per-device program


def _scan(prim: Primitive) -> PD.Program:
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], **params: Any
                ) -> list[Dist]:
        nc, nk, nx, ny = counts(params["ft_in"], params["ft_out"])
        jaxpr, length, reverse = params["jaxpr"], params["length"], params["reverse"]
        consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
        if any(S.parts_of(x.aval)[0] for x in xs):
            return fallback(geo, args, out_avals, **params)
        x_avals = jaxpr.in_avals[nc + nk:]
        ys: list[list[list[np.ndarray]]] = [[[] for _ in range(geo.n)] for _ in range(ny)]
        order = range(length - 1, -1, -1) if reverse else range(length)
        step = S.loop_runner(jaxpr, geo)
        local = geo.local
        for i in order:
            if xs:
                outs = step([*consts, *carry,
                             *(_step_slice(x, a, i, geo) for x, a in zip(xs, x_avals))])
            else:
                outs = step([*consts, *carry])
            carry = outs[:nk]
            for slot, y in zip(ys, outs[nk:]):
                bufs = y.bufs
                for k in local:
                    slot[k].append(S.held(bufs[k]))
        if reverse:
            for slot in ys:
                for column in slot:
                    column.reverse()
        stacked = [_stacked(slot, a, geo) for slot, a in zip(ys, out_avals[nk:])]
        return [*(Dist(a, c.bufs) for c, a in zip(carry, out_avals)), *stacked]
    return program


def _step_slice(x: Dist, aval: ArrayType, i: int, geo: Geometry) -> Dist:
    """Iteration i's slice of a scanned operand (one shared slice when every
    device shares the buffer: replicated work stays done once)."""
    if x.uniform:
        return S.uniform(x.any[i], aval, geo)
    return Dist(aval, S.each(lambda b: b[i], x.bufs))


def _stacked(columns: list[list[np.ndarray]], aval: ArrayType, geo: Geometry) -> Dist:
    """Per device, the iterations' outputs stacked (once when shared)."""
    held = [columns[k] for k in geo.local]
    if not held[0]:
        empty = np.empty(S.local_shape(aval, geo), aval.dtype)
        return S.uniform(empty, aval, geo)
    first = held[0]
    if all(all(a is b for a, b in zip(c, first)) for c in held[1:]):
        return S.uniform(np.stack(first), aval, geo)
    mine = set(geo.local)
    return Dist(aval, tuple(np.stack(c) if k in mine else None for k, c in enumerate(columns)))


def _scan_to_lojax(*args: Any, reverse: bool, length: int, jaxpr: Jaxpr, ft_in: FlatTree,
                   ft_out: FlatTree, unroll: int) -> list[Any]:
    """A scan with hi-typed operands or results: the scan of its lowered body
    over the values' components (a stacked hi value's components are stacked
    along their leading axes); the results raised again, stacked ones with
    their stacked types."""
    nc, nk, _, _ = counts(ft_in, ft_out)
    in_avals = [a if i < nc + nk else stacked_aval(a, length)
                for i, a in enumerate(jaxpr.in_avals)]
    lol = [lower_value(a, x) for a, x in zip(in_avals, args)]
    los = [lo for parts in lol for lo in parts]
    nc_lo, nk_lo = sum(map(len, lol[:nc])), sum(map(len, lol[nc:nc + nk]))
    # The body takes the components' own types (one slice of each scanned
    # one), as the values have them.
    lo_avals = [canonical_aval_of(lo) for lo in los]
    body_in = [a if i < nc_lo + nk_lo else slice_aval(a) for i, a in enumerate(lo_avals)]
    lowered = lower_jaxpr(jaxpr, body_in)
    lo_in, lo_out = scan_trees(nc_lo, nk_lo, len(los) - nc_lo - nk_lo,
                               len(lowered.outvars) - nk_lo)
    outs = scan_p.bind(*los, reverse=reverse, length=length, jaxpr=lowered, ft_in=lo_in,
                       ft_out=lo_out, unroll=unroll)
    out_avals = [a if i < nk else stacked_aval(a, length)
                 for i, a in enumerate(jaxpr.out_avals)]
    return raise_values(out_avals, outs)


scan_p = declare("scan", lowering=_scan_lowering,
                 typing=_scan_type, impl=_scan_impl, multiple_results=True,
                 pp_rule=_pp_scan, jvp=_scan_jvp, transpose=_scan_transpose,
                 batch=_scan_batch, sharding=_scan_sharding,
                 doc="scan: a loop carrying state, slicing and stacking along axis 0",
                 linearize=_scan_linearize, partial_eval=_scan_partial_eval, dce=_scan_dce,
                 remat_rule=_scan_partial_eval_custom, accepts_refs=True,
                 effects_rule=_scan_effects,
                 discharge=_scan_discharge, per_device=from_primitive(_scan),
                 vma_rule=VMA_FROM_TYPING, to_lojax=_scan_to_lojax)

__all__ = ["FlatTree", "closed_to_operands", "counts", "eval_jaxpr_p", "no_aliased_refs",
           "nones", "pack", "scan_p", "scan_trees", "stacked_aval",
           "sub_jaxpr_effects"]
