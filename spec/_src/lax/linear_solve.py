"""``custom_linear_solve``: a matrix-free linear solve differentiated implicitly.

The primitive carries four jaxprs (``jaxprs``, a ``LinearSolveTuple``): the linear
map ``matvec``, its transpose ``vecmat``, ``solve`` (``x`` with ``matvec(x) == b``) and
``transpose_solve`` (the same for ``vecmat``); ``vecmat`` and ``transpose_solve`` are
``None`` when reverse mode was not provided for. Each jaxpr's closed-over values are its
leading operands (``const_lengths`` says how many, in the order of the tuple); the right
hand side ``b`` comes last. Evaluating it runs ``solve`` alone; derivatives never
differentiate ``solve`` but solve again: ``dx = solve(db - dA x)`` and the cotangent of
``b`` is ``transpose_solve(ct)``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from spec._src.core import tree_util
from spec._src.core.interpreter import (
    VMA_FROM_TYPING,
    Eqn,
    Jaxpr,
    JaxprTrace,
    PpContext,
    current_trace,
    eval_jaxpr,
    eval_jaxpr_values,
    from_primitive,
    pp_eqn_default,
    trace_to_jaxpr,
)
from spec._src.core.registry import declare, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import ad, batching
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.ad_util import UndefinedPrimal, Zero, add_tangents, instantiate
from spec._src.interpreters.batching import AxisData, BatchDim
from spec._src.interpreters.spmd import Dist, Geometry
from spec._src.lowering.emitter import LoweringContext, lower_body
from spec._src.lax.control_flow import _aval_of, _trace, hoist_consts


class LinearSolveTuple(NamedTuple):
    """One entry per jaxpr of a linear solve (a jaxpr, or how many operands it takes
    first); prints as JAX's ``_LinearSolveTuple``."""

    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self) -> LinearSolveTuple:
        """The entries of the transposed system: the map and its transpose swap, and so
        do the two solves."""
        return LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in zip(self._fields, self))
        return f"_LinearSolveTuple({fields})"


def _split(args: Sequence[Any], lengths: LinearSolveTuple
           ) -> tuple[LinearSolveTuple, list[Any]]:
    out: list[list[Any]] = []
    start = 0
    for n in lengths:
        out.append(list(args[start:start + n]))
        start += n
    return LinearSolveTuple(*out), list(args[start:])


def _flat(groups: LinearSolveTuple) -> list[Any]:
    return [x for g in groups for x in g]


def _pp_linear_solve(eqn: Eqn, ctx: PpContext) -> Any:
    """The params as JAX shows them: each jaxpr printed on its own (its own names, from
    the left margin) inside the tuple's text."""
    params = {k: repr(v) for k, v in eqn.params.items()}
    return pp_eqn_default(eqn, ctx, params)


# ------------------------------------------------------------------ typing


def _linear_solve_type(*avals: ArrayType, const_lengths: LinearSolveTuple,
                       jaxprs: LinearSolveTuple) -> list[ArrayType]:
    n_consts = sum(const_lengths)
    require(len(avals) >= n_consts, "custom_linear_solve", "C1",
            f"called with {len(avals)} operands, fewer than const_lengths={tuple(const_lengths)}")
    consts, b = _split(avals, const_lengths)
    for name, j, cs in zip(LinearSolveTuple._fields, jaxprs, consts):
        if j is None:
            require(not cs, "custom_linear_solve", "C2", f"{name} is None but takes {len(cs)} "
                    "operands")
            continue
        ins = [*cs, *b]
        require(len(j.in_avals) == len(ins) and all(
            a.shape == w.shape and a.dtype == w.dtype for a, w in zip(ins, j.in_avals)),
            "custom_linear_solve", "C2",
            f"{name} takes {list(j.in_avals)}, called with operands of type {ins}")
    num_aux = len(jaxprs.solve.out_avals) - len(jaxprs.matvec.out_avals)
    return [*b, *jaxprs.solve.out_avals[len(b):len(b) + max(num_aux, 0)]]


def _linear_solve_sharding(*avals: ArrayType, const_lengths: LinearSolveTuple,
                           jaxprs: LinearSolveTuple) -> list[Any]:
    """The solution has b's layout; auxiliary outputs, the solve's."""
    _, b = _split(avals, const_lengths)
    aux = jaxprs.solve.out_avals[len(b):]
    return [a.sharding for a in b] + [a.sharding for a in aux]


def _linear_solve_impl(*args: np.ndarray, const_lengths: LinearSolveTuple,
                       jaxprs: LinearSolveTuple) -> Sequence[np.ndarray]:
    consts, b = _split(args, const_lengths)
    return eval_jaxpr_values(jaxprs.solve, [], [*consts.solve, *b])


# ---------------------------------------------------------------- autodiff


def _map_tangent(matvec: Jaxpr, params: list[Any], params_dot: list[Any],
                 x: list[Any]) -> list[Any]:
    """``dA x``: the tangent of ``matvec(params, x)`` in its params alone (the map is
    linear in ``x``, whose tangent is taken as zero)."""
    nonzero = [type(t) is not Zero for t in params_dot] + [False] * len(x)
    jvp, out_nz = ad.jvp_jaxpr(matvec, nonzero)
    outs = eval_jaxpr(jvp, jvp.consts, *params, *x,
                      *(t for t in params_dot if type(t) is not Zero))
    it = iter(outs[len(matvec.outvars):])
    return [next(it) if nz else Zero(a.tangent_type())
            for nz, a in zip(out_nz, matvec.out_avals)]


def _linear_solve_jvp(primals: list[Any], tangents: list[Any], *,
                      const_lengths: LinearSolveTuple, jaxprs: LinearSolveTuple
                      ) -> tuple[list[Any], list[Any]]:
    # A x = b, so dA x + A dx = db: dx = solve(db - dA x).
    kwargs = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    x = linear_solve_p.bind(*primals, **kwargs)
    params, _ = _split(primals, const_lengths)
    params_dot, b_dot = _split(tangents, const_lengths)
    n = len(b_dot)
    rhs = list(b_dot)
    if any(type(t) is not Zero for t in params_dot.matvec):
        dax = _map_tangent(jaxprs.matvec, params.matvec, params_dot.matvec, list(x[:n]))
        rhs = [add_tangents(t, operator.neg(d) if type(d) is not Zero else d)
               for t, d in zip(rhs, dax)]
    rhs = [instantiate(t) for t in rhs]
    x_dot = linear_solve_p.bind(*_flat(params), *rhs, **kwargs)
    aux_dot = [Zero(a.tangent_type()) for a in jaxprs.solve.out_avals[n:]]
    return list(x), [*x_dot[:n], *aux_dot]


def _linear_solve_transpose(cts: list[Any], *primals: Any, const_lengths: LinearSolveTuple,
                            jaxprs: LinearSolveTuple) -> list[Any]:
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    params, b = _split(primals, const_lengths)
    if any(type(p) is UndefinedPrimal for p in _flat(params)):
        raise NotImplementedError(
            "custom_linear_solve is linear in b only: its matvec and solve operands cannot "
            "be transposed")
    if any(type(c) is not Zero for c in cts[len(b):]):
        raise NotImplementedError("custom_linear_solve's auxiliary outputs take no cotangent")
    x_ct = [instantiate(c) for c in cts[:len(b)]]
    b_ct = linear_solve_p.bind(*_flat(params.transpose()), *x_ct,
                               const_lengths=const_lengths.transpose(),
                               jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(b_ct[:len(b)])


# ---------------------------------------------------------------- batching


def _batched(j: Jaxpr | None, axis: AxisData, dims: list[BatchDim],
             wanted: list[BatchDim]) -> tuple[Jaxpr | None, list[Any], list[BatchDim]]:
    """``j`` batched (outputs at ``wanted`` where an int), its new constants hoisted to
    leading operands; the natural output dims."""
    if j is None:
        return None, [], []
    _, natural = batching.batch_jaxpr(j, axis, dims)
    want = [w if w is not None else d for w, d in zip(wanted, natural)]
    new, _ = batching.batch_jaxpr(j, axis, dims, want)
    (new,), consts = hoist_consts([new])
    return new, consts, want


def _linear_solve_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
                        const_lengths: LinearSolveTuple, jaxprs: LinearSolveTuple
                        ) -> tuple[list[Any], list[BatchDim]]:
    """Which parts of x and b are batched is a fixpoint over the four maps (each
    reads the other's space); batched parts sit at axis 0."""
    params, b = _split(args, const_lengths)
    pdims, bdims = _split(dims, const_lengths)
    params = LinearSolveTuple(*([batching.match_axis(axis, x, d, 0) if d is not None else x
                                 for x, d in zip(g, gd)] for g, gd in zip(params, pdims)))
    pbat = LinearSolveTuple(*([None if d is None else 0 for d in gd] for gd in pdims))
    n, n_out = len(b), len(jaxprs.solve.out_avals)
    b_bat = [d is not None for d in bdims]
    x_bat = [False] * n_out

    def at(bat: list[bool]) -> list[BatchDim]:
        return [0 if t else None for t in bat]

    for _ in range(2 + n + n_out):
        _, sx = batching.batch_jaxpr(jaxprs.solve, axis, pbat.solve + at(b_bat))
        new_x = [a or d is not None for a, d in zip(x_bat, sx)]
        if jaxprs.vecmat is not None:
            _, vx = batching.batch_jaxpr(jaxprs.vecmat, axis, pbat.vecmat + at(b_bat))
            new_x = [a or d is not None for a, d in zip(new_x, [*vx, *([0] * (n_out - n))])]
        _, mb = batching.batch_jaxpr(jaxprs.matvec, axis, pbat.matvec + at(new_x[:n]))
        new_b = [a or d is not None for a, d in zip(b_bat, mb)]
        if jaxprs.transpose_solve is not None:
            _, tb = batching.batch_jaxpr(jaxprs.transpose_solve, axis,
                                         pbat.transpose_solve + at(new_x[:n]))
            new_b = [a or d is not None for a, d in zip(new_b, tb[:n])]
        if new_x == x_bat and new_b == b_bat:
            break
        x_bat, b_bat = new_x, new_b
    xd, bd = at(x_bat), at(b_bat)
    # One batched jaxpr for one jaxpr batched alike (a symmetric map's matvec and
    # vecmat), as JAX's cached batching gives.
    done: dict[Any, tuple[Jaxpr | None, list[Any], list[BatchDim]]] = {}

    def batched(j: Jaxpr | None, dims: list[BatchDim], wanted: list[BatchDim]
                ) -> tuple[Jaxpr | None, list[Any], list[BatchDim]]:
        key = (id(j), tuple(dims), tuple(wanted))
        if key not in done:
            done[key] = _batched(j, axis, dims, wanted)
        return done[key]

    mv, mv_c, _ = batched(jaxprs.matvec, pbat.matvec + xd[:n], bd)
    vm, vm_c, _ = batched(jaxprs.vecmat, pbat.vecmat + bd, xd[:n])
    sv, sv_c, _ = batched(jaxprs.solve, pbat.solve + bd, xd)
    ts, ts_c, _ = batched(jaxprs.transpose_solve, pbat.transpose_solve + xd[:n], bd + xd[n:])
    groups = LinearSolveTuple(*(c + g for c, g in zip((mv_c, vm_c, sv_c, ts_c), params)))
    new_b_vals = [x if not t else batching.match_axis(axis, x, d, 0)
                  for x, d, t in zip(b, bdims, b_bat)]
    outs = linear_solve_p.bind(*_flat(groups), *new_b_vals,
                               const_lengths=LinearSolveTuple(*map(len, groups)),
                               jaxprs=LinearSolveTuple(mv, vm, sv, ts))
    return list(outs), xd


# ------------------------------------------------------- per device, lowering


def _per_device(prim: Any) -> PD.Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType], *,
                const_lengths: LinearSolveTuple, jaxprs: LinearSolveTuple) -> list[Dist]:
        consts, b = _split(args, const_lengths)
        outs = S.eval_jaxpr(jaxprs.solve, [], [*consts.solve, *b], geo)
        return [Dist(a, o.bufs) for o, a in zip(outs, out_avals)]
    return program


def _lower(ctx: LoweringContext, operands: Sequence[str], in_avals: Any, out_avals: Any, *,
           const_lengths: LinearSolveTuple, jaxprs: LinearSolveTuple) -> list[str]:
    """The solve's body in place (as JAX lowers the impl): the other maps are gone."""
    consts, b = _split(list(operands), const_lengths)
    return lower_body(ctx, jaxprs.solve, [*consts.solve, *b])


linear_solve_p = declare(
    "custom_linear_solve", lowering=_lower,
    pp_rule=_pp_linear_solve,
    typing=_linear_solve_type, impl=_linear_solve_impl, multiple_results=True,
    sharding=_linear_solve_sharding, jvp=_linear_solve_jvp,
    transpose=_linear_solve_transpose, batch=_linear_solve_batch,
    doc="A linear solve whose derivatives solve again instead of differentiating the solver.",
    per_device=from_primitive(_per_device), vma_rule=VMA_FROM_TYPING)


# ================================================================ wrapper


def _check_shapes(name: str, got: Sequence[ArrayType], want: Sequence[ArrayType]) -> None:
    gs, ws = [a.shape for a in got], [a.shape for a in want]
    if gs != ws:
        raise ValueError(f"{name}() output shapes must match b, got {gs} and {ws}")


def check_tree(name: str, expected_name: str, got: Any, want: Any, has_aux: bool
               ) -> tuple[Any, Any]:
    """The trees of a staged function's solution and auxiliary outputs (None without
    ``has_aux``), checked against ``want`` with JAX's errors."""
    aux = None
    if has_aux:
        children = got.children()
        if len(children) != 2:
            raise ValueError(f"{name}() produced a pytree with structure {got}, but a pytree "
                             "tuple with auxiliary output was expected because has_aux was "
                             "set to True.")
        got, aux = children
    if got != want:
        raise TypeError(f"{name}() output pytree structure must match {expected_name}, got "
                        f"{got} and {want}.")
    return got, aux


def _consts_first(j: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    (out,), consts = hoist_consts([j])
    return out, consts


def _vecmat_of(matvec: Jaxpr, avals: list[ArrayType]) -> Callable[..., list[Any]]:
    """The transpose of the (staged) linear map ``matvec``."""
    def vecmat(*ys: Any) -> list[Any]:
        args = [*(UndefinedPrimal(a) for a in avals)]
        cts = ad.backward_pass(matvec, matvec.consts, args, list(ys))
        return [instantiate(c) if type(c) is Zero else c for c in cts]
    return vecmat


def _stage_consts_first(consts: Sequence[Any]) -> None:
    """JAX applies the transposed map as a call of a transposed ``jit``, whose operands
    list the map's constants (its residuals) before the cotangent: staged, they become
    constants of the calling jaxpr ahead of a closed-over argument the map is applied to."""
    trace = current_trace()
    if isinstance(trace, JaxprTrace):
        for c in consts:
            trace.to_atom(c)


def custom_linear_solve(matvec: Callable[[Any], Any], b: Any,
                        solve: Callable[[Callable[[Any], Any], Any], Any],
                        transpose_solve: Callable[[Callable[[Any], Any], Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """``solve(matvec, b)``, differentiated as the solution of ``matvec(x) == b``."""
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    leaves, tree = tree_util.tree_flatten(b)
    in_tree = tree_util.tree_structure((b,))
    avals = [_aval_of(x, "custom_linear_solve b") for x in leaves]

    def traced(fun: Callable[[Any], Any], name: str, aux: bool) -> tuple[Jaxpr, Any]:
        """``fun`` staged on b's types; the tree of its auxiliary output (None without)."""
        j, out_tree = _trace(fun, in_tree, avals, name)
        # Shapes first, as JAX checks them while tracing, before the structure.
        parts = out_tree.children() if aux else []
        n_x = parts[0].num_leaves if len(parts) == 2 else len(j.outvars)
        _check_shapes(name, j.out_avals[:n_x], avals)
        _, aux_tree = check_tree(name, "b", out_tree, tree, aux)
        return j, aux_tree

    mv, _ = traced(matvec, "matvec", False)
    sv, aux_tree = traced(functools.partial(solve, matvec), "solve", has_aux)
    vm: Jaxpr | None = None
    ts: Jaxpr | None = None
    if transpose_solve is not None:
        if symmetric:
            vm = mv
            vecmat: Callable[[Any], Any] = matvec
        else:
            # JAX transposes matvec as linear_transpose does: traced anew by
            # partial evaluation, which keeps (and so transposes) an identity
            # applied to what depends on b.
            def flat_matvec(*xs: Any) -> list[Any]:
                return list(tree_util.tree_leaves(matvec(tree_util.tree_unflatten(tree, xs))))

            lin, _ = trace_to_jaxpr(flat_matvec, avals, forwards_identities=False)
            vm, _ = trace_to_jaxpr(_vecmat_of(lin, avals), avals)

            def vecmat(x: Any) -> Any:
                _stage_consts_first(vm.consts)
                outs = eval_jaxpr(vm, vm.consts, *tree_util.tree_leaves(x))
                return tree_util.tree_unflatten(tree, outs)
        ts, _ = traced(functools.partial(transpose_solve, vecmat), "transpose_solve", has_aux)
    # A symmetric map is one jaxpr serving as matvec and vecmat (printed once, as JAX's).
    closed = {id(j): _consts_first(j) for j in (mv, vm, sv, ts) if j is not None}
    hoisted = [(None, []) if j is None else closed[id(j)] for j in (mv, vm, sv, ts)]
    jaxprs = LinearSolveTuple(*(h[0] for h in hoisted))
    consts = LinearSolveTuple(*(h[1] for h in hoisted))
    outs = linear_solve_p.bind(*_flat(consts), *leaves,
                               const_lengths=LinearSolveTuple(*map(len, consts)),
                               jaxprs=jaxprs)
    x = tree_util.tree_unflatten(tree, outs[:len(leaves)])
    if not has_aux:
        return x
    return x, tree_util.tree_unflatten(aux_tree, outs[len(leaves):])


__all__ = ["check_tree", "custom_linear_solve", "linear_solve_p"]
