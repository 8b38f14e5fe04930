"""Lowering rules for primitives with sub-jaxprs: ``cond`` as
``stablehlo.case``, ``while`` as ``stablehlo.while``, ``scan`` as the
``stablehlo.while`` JAX's scan implementation lowers to, and the calls whose
body is emitted in place (custom derivatives, checkpoint, eval_jaxpr).

Bodies are emitted with ``emitter.lower_body`` into regions
(``LoweringContext.region``); a region refers freely to values defined
before its op, as ``case`` and ``while`` regions may.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core.interpreter import Jaxpr
from spec._src.core.types import ArrayType
from spec._src.lowering.emitter import (
    LoweringContext,
    LoweringRule,
    ints,
    keys_as_data,
    lower_body,
    physical_aval,
    tensor_type,
)

Avals = Sequence[ArrayType]
_BOOL = np.dtype(np.bool_)
_I32 = np.dtype(np.int32)


def _scalar_const(ctx: LoweringContext, value: int, dtype: Any) -> str:
    return ctx.constant(np.asarray(value, dtype), ArrayType((), dtype))


# =============================================================== cond

@keys_as_data
def cond(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
         branches: Sequence[Jaxpr], **params: Any) -> list[str]:
    """``stablehlo.case`` on the int32 index, one region per branch, each
    the branch's body on the operands (which its region uses from outside);
    ``case`` runs the last branch for an out-of-range index, and cond's
    index is already clamped."""
    ops = list(operands[1:])
    index = operands[0]
    platforms = params.get("branches_platforms")
    if platforms is not None:
        index, branches = _platform_branches(ctx, index, in_avals[0], branches, platforms)

    def branch(k: int, jaxpr: Jaxpr) -> Any:
        def body(ctx: LoweringContext, args: list[str]) -> list[str]:
            with ctx.scope(f"cond/branch_{k}_fun"):
                return lower_body(ctx, jaxpr, ops)
        return body
    regions = [ctx.region([], out_avals, branch(k, b)) for k, b in enumerate(branches)]
    return ctx.generic_op("stablehlo.case", [index], in_avals[:1], out_avals,
                          regions=regions)


def _platform_branches(ctx: LoweringContext, index: str, index_aval: ArrayType,
                       branches: Sequence[Jaxpr], platforms: Sequence[Any]
                       ) -> tuple[str, list[Jaxpr]]:
    """A platform-dependent cond keeps the branch of the platform lowered
    for (spec's: CPU, else the default); the index goes through a ``case``
    mapping every branch to its kept position (0 for the dropped), as JAX
    lowers it."""
    chosen = next((k for k, ps in enumerate(platforms) if ps is None or _PLATFORM in ps), None)
    if chosen is None:
        raise ValueError(f"Cannot lower a cond with branches_platforms={tuple(platforms)} "
                         f"for platform {_PLATFORM}")
    i32 = ArrayType((), _I32)

    def kept_index(k: int) -> Callable[[LoweringContext, list[str]], list[str]]:
        return lambda ctx, args: [_scalar_const(ctx, 0, _I32)]

    regions = [ctx.region([], [i32], kept_index(k)) for k in range(len(branches))]
    (kept,) = ctx.generic_op("stablehlo.case", [index], [index_aval], [i32], regions=regions)
    return kept, [branches[chosen]]


def platform_index(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                   out_avals: Avals, *, platforms: Sequence[Any]) -> list[str]:
    """The position of the lowering platform's entry, a constant."""
    chosen = next((k for k, ps in enumerate(platforms) if ps is not None and _PLATFORM in ps),
                  len(platforms) - 1 if platforms and platforms[-1] is None else None)
    if chosen is None:
        raise NotImplementedError(f"MLIR translation rule for primitive 'platform_index("
                                  f"platforms={tuple(platforms)})' not found for platform "
                                  f"{_PLATFORM}")
    return [_scalar_const(ctx, chosen, _I32)]


# The platform spec lowers for.
_PLATFORM = "cpu"


# ============================================================== while

def _any(ctx: LoweringContext, pred: str, aval: ArrayType) -> str:
    """A batched predicate reduced with ``or`` to one (the loop runs while
    any member's predicate holds)."""
    start = ctx.constant(np.asarray(False), ArrayType((), _BOOL))
    return ctx.line(
        f"stablehlo.reduce({pred} init: {start}) applies stablehlo.or across dimensions = "
        f"{ints(range(aval.ndim))} : ({tensor_type(aval)}, tensor<i1>) -> tensor<i1>")


def _keep_done(ctx: LoweringContext, pred: str, pred_aval: ArrayType, new: str, old: str,
               aval: ArrayType) -> str:
    """A batched loop's member whose predicate is false keeps its carry
    (a key's data along with it)."""
    aval = physical_aval(aval)
    wide = ArrayType(aval.shape, _BOOL)
    if aval.shape != pred_aval.shape:
        pred = ctx.broadcast(pred, pred_aval, wide, range(pred_aval.ndim))
    return ctx.line(f"stablehlo.select {pred}, {new}, {old} : {tensor_type(wide)}, "
                    f"{tensor_type(aval)}")


@keys_as_data
def while_loop(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
               out_avals: Avals, *, cond_nconsts: int, cond_jaxpr: Jaxpr, body_nconsts: int,
               body_jaxpr: Jaxpr) -> list[str]:
    """``stablehlo.while`` carrying the constants of both bodies with the
    loop state, as JAX lowers it: the cond region runs ``cond_jaxpr`` on
    (cond consts, state), the body region ``body_jaxpr`` on (body consts,
    state) and returns the constants unchanged."""
    nc, nb = cond_nconsts, body_nconsts
    pred_aval = cond_jaxpr.out_avals[0]
    batched = bool(pred_aval.shape)

    def cond_body(ctx: LoweringContext, args: list[str]) -> list[str]:
        with ctx.scope("while/cond"):
            (pred,) = lower_body(ctx, cond_jaxpr, [*args[:nc], *args[nc + nb:]])
            return [_any(ctx, pred, pred_aval) if batched else pred]

    def loop_body(ctx: LoweringContext, args: list[str]) -> list[str]:
        x, y, z = args[:nc], args[nc:nc + nb], args[nc + nb:]
        with ctx.scope("while/body"):
            new = lower_body(ctx, body_jaxpr, [*y, *z])
        if batched:
            with ctx.scope("while/body_pred"):
                (pred,) = lower_body(ctx, cond_jaxpr, [*x, *z])
            new = [_keep_done(ctx, pred, pred_aval, n, o, a)
                   for n, o, a in zip(new, z, body_jaxpr.out_avals)]
        return [*x, *y, *new]

    carried = list(in_avals)
    regions = [ctx.region(carried, [ArrayType((), _BOOL)], cond_body),
               ctx.region(carried, carried, loop_body)]
    outs = ctx.generic_op("stablehlo.while", operands, carried, carried, regions=regions)
    return outs[nc + nb:]


# =============================================================== scan

def _row(ctx: LoweringContext, xs: str, aval: ArrayType, i: str) -> str:
    """Row ``i`` of ``xs`` (``dynamic_index_in_dim`` in a private function,
    as JAX's scan emits it)."""
    row = ArrayType(aval.shape[1:], aval.dtype)

    def body(ctx: LoweringContext, args: list[str]) -> list[str]:
        with ctx.located(None):
            zero = [_scalar_const(ctx, 0, _I32) for _ in aval.shape[1:]]
        sizes = [1, *aval.shape[1:]]
        unit = ArrayType(tuple(sizes), aval.dtype)
        idx_types = ", ".join("tensor<i32>" for _ in aval.shape)
        with ctx.located("dynamic_slice"):
            piece = ctx.line(f"stablehlo.dynamic_slice {', '.join([args[0], args[1], *zero])}"
                             f", sizes = {ints(sizes)} : ({tensor_type(aval)}, {idx_types}) -> "
                             f"{tensor_type(unit)}")
        with ctx.located("squeeze"):
            out = ctx.op("stablehlo.reshape", [piece], [unit], row)
        ctx.location = "loc(unknown)"  # (the function's return)
        return [out]
    scalar = ArrayType((), _I32)
    return _call_function(ctx, "dynamic_index_in_dim", [xs, i], [aval, scalar], [row], body,
                          "row")


def _call_function(ctx: LoweringContext, name: str, operands: list[str],
                   in_avals: list[ArrayType], out_avals: list[ArrayType],
                   body: Callable[[LoweringContext, list[str]], list[str]], key: str) -> str:
    """A call of the private function ``name`` (emitted once per types),
    whose ops JAX names relative to the function; the call keeps the
    caller's location."""
    saved = ctx.location
    symbol = ctx.function(name, in_avals, out_avals, body, key=key)
    ctx.location = saved
    return ctx.call(symbol, operands, in_avals, out_avals)[0]


def _set_row(ctx: LoweringContext, ys: str, aval: ArrayType, y: str, i: str) -> str:
    """``ys`` with row ``i`` replaced by ``y`` (``dynamic_update_index_in_dim``)."""
    row = ArrayType(aval.shape[1:], aval.dtype)

    def body(ctx: LoweringContext, args: list[str]) -> list[str]:
        unit = ArrayType((1, *aval.shape[1:]), aval.dtype)
        with ctx.located("broadcast_in_dim"):
            piece = ctx.broadcast(args[1], row, unit, range(1, aval.ndim))
        with ctx.located(None):
            zero = [_scalar_const(ctx, 0, _I32) for _ in aval.shape[1:]]
        idx_types = ", ".join("tensor<i32>" for _ in aval.shape)
        with ctx.located("dynamic_update_slice"):
            out = ctx.line(f"stablehlo.dynamic_update_slice "
                           f"{', '.join([args[0], piece, args[2], *zero])} : "
                           f"({tensor_type(aval)}, {tensor_type(unit)}, {idx_types}) -> "
                           f"{tensor_type(aval)}")
        ctx.location = "loc(unknown)"  # (the function's return)
        return [out]
    scalar = ArrayType((), _I32)
    return _call_function(ctx, "dynamic_update_index_in_dim", [ys, y, i], [aval, row, scalar],
                          [aval], body, "set_row")


def _zeros(ctx: LoweringContext, aval: ArrayType) -> str:
    """A zero-filled stacked output (``empty2`` broadcast, as JAX's scan
    allocates it)."""
    scalar = ArrayType((), aval.dtype)
    with ctx.named("empty2"):
        zero = ctx.constant(np.zeros((), aval.dtype), scalar)
    with ctx.named("broadcast_in_dim"):
        return ctx.broadcast(zero, scalar, aval, ())


@keys_as_data
def scan(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals, *,
         num_consts: int, num_carry: int, jaxpr: Jaxpr, length: int, reverse: bool,
         unroll: int = 1, **params: Any) -> list[str]:
    """JAX's scan implementation lowered: zero-filled stacked outputs, then a
    ``stablehlo.while`` over (extensive inputs, constants, counter, carry,
    stacked outputs) whose body reads row i of each input, runs the body and
    writes row i of each output (i counts down when ``reverse``). With
    ``unroll`` > 1 the loop runs over blocks of ``unroll`` rows, the body
    emitted once per row of the block, and the rows left over run after it
    (``_unrolled_scan``)."""
    nc, nk = num_consts, num_carry
    consts, carry, xs = (operands[:nc], operands[nc:nc + nk], operands[nc + nk:])
    y_avals = out_avals[nk:]
    if length == 0:
        return [*carry, *(_zeros(ctx, a) for a in y_avals)]
    if unroll != 1:
        return _unrolled_scan(ctx, consts, carry, xs, in_avals, out_avals, nc, nk, jaxpr,
                              length, reverse, unroll)
    ys = [_zeros(ctx, a) for a in y_avals]
    with ctx.named("while"):
        return _scan_loop(ctx, consts, carry, xs, ys, in_avals, out_avals, nc, nk, jaxpr,
                          length, reverse)


def _scan_loop(ctx: LoweringContext, consts: Sequence[str], carry: Sequence[str],
               xs: Sequence[str], ys: Sequence[str], in_avals: Avals, out_avals: Avals,
               nc: int, nk: int, jaxpr: Jaxpr, length: int, reverse: bool) -> list[str]:
    """The ``stablehlo.while`` of ``scan``, its ops named as JAX names the
    functions its scan implementation lowers."""
    const_avals, carry_avals = in_avals[:nc], in_avals[nc:nc + nk]
    x_avals, y_avals = in_avals[nc + nk:], out_avals[nk:]
    with ctx.named("scan"):  # JAX locates the counter's start at the scan itself
        counter = _scalar_const(ctx, 0, _I32)
    scalar = ArrayType((), _I32)
    nx = len(xs)
    state = [*x_avals, *const_avals, scalar, *carry_avals, *y_avals]
    fixed = nx + nc

    def loop_body(ctx: LoweringContext, args: list[str]) -> list[str]:
        x_in, c_in = args[:nx], args[nx:fixed]
        i_, k_in, y_in = args[fixed], args[fixed + 1:fixed + 1 + nk], args[fixed + 1 + nk:]
        i = _iteration_row(ctx, i_, length, reverse)
        with ctx.named("while/body/jit(dynamic_index_in_dim)"):
            rows = [_row(ctx, x, a, i) for x, a in zip(x_in, x_avals)]
        with ctx.scope("while/body/eval_jaxpr"):
            outs = lower_body(ctx, jaxpr, [*c_in, *k_in, *rows],
                              literals_at_scope=True)
        with ctx.named("while/body/jit(dynamic_update_index_in_dim)"):
            new_ys = [_set_row(ctx, y, a, o, i) for y, a, o in zip(y_in, y_avals, outs[nk:])]
        one = _scalar_const(ctx, 1, _I32)
        with ctx.named("while/body/add"):
            step = ctx.op("stablehlo.add", [i_, one], [scalar, scalar], scalar)
        return [*x_in, *c_in, step, *outs[:nk], *new_ys]

    regions = [ctx.region(state, [ArrayType((), _BOOL)], _counter_below(length, fixed)),
               ctx.region(state, state, loop_body)]
    results = ctx.generic_op("stablehlo.while", [*xs, *consts, counter, *carry, *ys], state,
                             state, regions=regions)
    return results[fixed + 1:]


def _trips(length: int, unroll: int) -> tuple[int, int]:
    """(blocks the loop runs, rows left over), as JAX's scan splits them: a
    loop of one block is unrolled entirely, as is ``unroll=0``."""
    trips, rest = (0, length) if unroll == 0 else divmod(length, unroll)
    if trips == 1 and rest == 0:
        return 0, length
    return trips, rest


def _leading(ctx: LoweringContext, x: str, aval: ArrayType, start: int, stop: int
             ) -> tuple[str, ArrayType]:
    """Rows ``start:stop`` of ``x`` (``stablehlo.slice``)."""
    out = ArrayType((stop - start, *aval.shape[1:]), aval.dtype)
    ranges = ", ".join([f"{start}:{stop}", *(f"0:{d}" for d in aval.shape[1:])])
    return ctx.line(f"stablehlo.slice {x} [{ranges}] : ({tensor_type(aval)}) -> "
                    f"{tensor_type(out)}"), out


def _reshaped(ctx: LoweringContext, x: str, aval: ArrayType, shape: tuple[int, ...]
              ) -> tuple[str, ArrayType]:
    out = ArrayType(shape, aval.dtype)
    return ctx.op("stablehlo.reshape", [x], [aval], out), out


def _steps(ctx: LoweringContext, jaxpr: Jaxpr, consts: Sequence[str], carry: Sequence[str],
           blocks: Sequence[tuple[str, ArrayType]], n: int, nk: int, reverse: bool
           ) -> tuple[list[str], list[str]]:
    """The body run on each of the ``n`` rows of ``blocks`` in turn (from
    the last when ``reverse``): the carry it ends with, and each output's
    rows stacked in row order (``broadcast_in_dim`` of each to a leading
    unit axis, then ``concatenate``)."""
    y_avals = jaxpr.out_avals[nk:]
    rows_out: list[list[str]] = []
    carry = list(carry)
    for step in range(n):
        i = n - 1 - step if reverse else step
        rows = []
        for x, aval in blocks:
            with ctx.named("while/body/slice"):
                piece, unit = _leading(ctx, x, aval, i, i + 1)
            with ctx.named("while/body/squeeze"):
                rows.append(_reshaped(ctx, piece, unit, tuple(aval.shape[1:]))[0])
        with ctx.scope("while/body/eval_jaxpr"):
            outs = lower_body(ctx, jaxpr, [*consts, *carry, *rows],
                              literals_at_scope=True)
        carry = outs[:nk]
        rows_out.append(outs[nk:])
    if reverse:
        rows_out.reverse()
    stacked = []
    for j, aval in enumerate(y_avals):
        unit = ArrayType((1, *aval.shape), aval.dtype)
        with ctx.named("while/body/broadcast_in_dim"):
            pieces = [ctx.broadcast(r[j], aval, unit, range(1, unit.ndim)) for r in rows_out]
        stacked.append(pieces[0] if n == 1 else _concatenated(ctx, pieces, [unit] * n))
    return carry, stacked


def _concatenated(ctx: LoweringContext, parts: Sequence[str], avals: Sequence[ArrayType]
                  ) -> str:
    out = ArrayType((sum(a.shape[0] for a in avals), *avals[0].shape[1:]), avals[0].dtype)
    ins = ", ".join(tensor_type(a) for a in avals)
    with ctx.named("concatenate"):
        return ctx.line(f"stablehlo.concatenate {', '.join(parts)}, dim = 0 : ({ins}) -> "
                        f"{tensor_type(out)}")


def _unrolled_scan(ctx: LoweringContext, consts: Sequence[str], carry: Sequence[str],
                   xs: Sequence[str], in_avals: Avals, out_avals: Avals, nc: int, nk: int,
                   jaxpr: Jaxpr, length: int, reverse: bool, unroll: int) -> list[str]:
    """JAX's scan implementation for ``unroll`` > 1: each scanned operand
    split into the rows the loop covers and those left over (the leftover
    rows lead when ``reverse``), the covered ones reshaped to blocks of
    ``unroll`` rows; a ``stablehlo.while`` over the blocks whose body reads
    block i, runs the body on its rows and writes the stacked block of each
    output; then the leftover rows straight-line and each output the
    concatenation of the loop's rows and theirs."""
    trips, rest = _trips(length, unroll)
    x_avals, y_avals = list(in_avals[nc + nk:]), list(out_avals[nk:])
    const_avals, carry_avals = in_avals[:nc], in_avals[nc:nc + nk]
    covered, leftover = list(xs), list(xs)
    covered_avals, leftover_avals = list(x_avals), list(x_avals)
    if rest:
        cut = rest if reverse else trips * unroll
        for k, (x, a) in enumerate(zip(xs, x_avals)):
            first, first_aval = _leading(ctx, x, a, 0, cut)
            second, second_aval = _leading(ctx, x, a, cut, length)
            pair = [(first, first_aval), (second, second_aval)]
            (leftover[k], leftover_avals[k]), (covered[k], covered_avals[k]) = \
                pair if reverse else pair[::-1]
    stacked_ys: list[str] = []
    if trips:
        blocks = [_reshaped(ctx, x, a, (trips, unroll, *a.shape[1:]))
                  for x, a in zip(covered, covered_avals)]
        block_avals = [b for _, b in blocks]
        yss_avals = [ArrayType((trips, unroll, *a.shape[1:]), a.dtype) for a in y_avals]
        yss = [_zeros(ctx, a) for a in yss_avals]
        with ctx.named("while"):
            carry, yss = _block_loop(ctx, consts, carry, [b for b, _ in blocks], yss,
                                     const_avals, carry_avals, block_avals, yss_avals, nk,
                                     jaxpr, trips, unroll, reverse)
        stacked_ys = [_reshaped(ctx, y, a, (trips * unroll, *a.shape[2:]))[0]
                      for y, a in zip(yss, yss_avals)]
    else:
        stacked_ys = [_zeros(ctx, ArrayType((0, *a.shape[1:]), a.dtype)) for a in y_avals]
    if not rest:
        return [*carry, *stacked_ys]
    carry, tail = _steps(ctx, jaxpr, consts, carry, list(zip(leftover, leftover_avals)), rest,
                         nk, reverse)
    outs = []
    for y, t, a in zip(stacked_ys, tail, y_avals):
        done = ArrayType((trips * unroll, *a.shape[1:]), a.dtype)
        more = ArrayType((rest, *a.shape[1:]), a.dtype)
        pair = [(t, more), (y, done)] if reverse else [(y, done), (t, more)]
        outs.append(_concatenated(ctx, [p for p, _ in pair], [q for _, q in pair]))
    return [*carry, *outs]


def _block_loop(ctx: LoweringContext, consts: Sequence[str], carry: Sequence[str],
                blocks: Sequence[str], yss: Sequence[str], const_avals: Avals,
                carry_avals: Avals, block_avals: Avals, yss_avals: Avals, nk: int,
                jaxpr: Jaxpr, trips: int, unroll: int, reverse: bool
                ) -> tuple[list[str], list[str]]:
    """The ``stablehlo.while`` over blocks of an unrolled scan; returns the
    carry and the stacked outputs it ends with."""
    nx, nc = len(blocks), len(consts)
    with ctx.named("scan"):
        counter = _scalar_const(ctx, 0, _I32)
    scalar = ArrayType((), _I32)
    state = [*block_avals, *const_avals, scalar, *carry_avals, *yss_avals]
    fixed = nx + nc

    def loop_body(ctx: LoweringContext, args: list[str]) -> list[str]:
        x_in, c_in = args[:nx], args[nx:fixed]
        i_, k_in, y_in = args[fixed], args[fixed + 1:fixed + 1 + nk], args[fixed + 1 + nk:]
        i = _iteration_row(ctx, i_, trips, reverse)
        with ctx.named("while/body/jit(dynamic_index_in_dim)"):
            rows = [_row(ctx, x, a, i) for x, a in zip(x_in, block_avals)]
        row_avals = [ArrayType(a.shape[1:], a.dtype) for a in block_avals]
        new_carry, stacked = _steps(ctx, jaxpr, c_in, k_in, list(zip(rows, row_avals)),
                                    unroll, nk, reverse)
        with ctx.named("while/body/jit(dynamic_update_index_in_dim)"):
            new_ys = [_set_row(ctx, y, a, o, i) for y, a, o in zip(y_in, yss_avals, stacked)]
        one = _scalar_const(ctx, 1, _I32)
        with ctx.named("while/body/add"):
            step = ctx.op("stablehlo.add", [i_, one], [scalar, scalar], scalar)
        return [*x_in, *c_in, step, *new_carry, *new_ys]

    regions = [ctx.region(state, [ArrayType((), _BOOL)], _counter_below(trips, fixed)),
               ctx.region(state, state, loop_body)]
    results = ctx.generic_op("stablehlo.while", [*blocks, *consts, counter, *carry, *yss],
                             state, state, regions=regions)
    return results[fixed + 1:fixed + 1 + nk], results[fixed + 1 + nk:]


# ======================================================== inlined calls

def inline(param: str, scope: str = "") -> LoweringRule:
    """The ``lowering`` rule of a call whose body ``params[param]`` is emitted
    in place, its ops named under ``scope`` within the call's: custom_jvp and
    custom_vjp calls lower their primal body (the derivative rules are gone
    by lowering), linear_call, remat_opt and custom_vmap_call the jaxpr their
    impl evaluates (as JAX lowers them), eval_jaxpr its jaxpr under
    ``eval_jaxpr``. Key-typed operands pass as their key data: the body's
    own equations lower them."""
    @keys_as_data
    def rule(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
             out_avals: Avals, **params: Any) -> list[str]:
        with ctx.scope(scope):
            return lower_body(ctx, params[param], operands)
    return rule


@keys_as_data
def remat(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals, out_avals: Avals,
          *, jaxpr: Jaxpr, prevent_cse: bool | tuple[bool, ...], differentiated: bool,
          **params: Any) -> list[str]:
    """checkpoint's body in place; a differentiated one first passes the
    operands it keeps from CSE through ``stablehlo.optimization_barrier``
    (so XLA recomputes rather than reuses), as JAX lowers it."""
    flags = (prevent_cse,) * len(operands) if isinstance(prevent_cse, bool) else prevent_cse
    args = list(operands)
    kept = [k for k, f in enumerate(flags) if f]
    if differentiated and kept:
        avals = [in_avals[k] for k in kept]
        barred = ctx.generic_op("stablehlo.optimization_barrier", [args[k] for k in kept],
                                avals, avals)
        for k, b in zip(kept, barred):
            args[k] = b
    with ctx.scope("checkpoint"):
        return lower_body(ctx, jaxpr, args)


def scalar_zero(ctx: LoweringContext, operands: Sequence[str], in_avals: Avals,
                out_avals: Avals, **params: Any) -> list[str]:
    """An uninitialised scalar buffer: a zero constant, as JAX lowers it."""
    return [ctx.constant(np.zeros((), a.dtype), a) for a in out_avals]


def _counter_below(trips: int, at: int) -> Callable[[LoweringContext, list[str]], list[str]]:
    """The condition region of a counted loop: the counter (state element ``at``) < trips."""
    def cond_body(ctx: LoweringContext, args: list[str]) -> list[str]:
        bound = _scalar_const(ctx, trips, _I32)
        with ctx.named("while/cond/lt"):
            return [ctx.line(f"stablehlo.compare LT, {args[at]}, {bound}, SIGNED : "
                             f"(tensor<i32>, tensor<i32>) -> tensor<i1>")]
    return cond_body


def _iteration_row(ctx: LoweringContext, counter: str, trips: int, reverse: bool) -> str:
    """The row a scan iteration reads: the counter, or trips - counter - 1 in reverse (in
    JAX's two subtractions)."""
    if not reverse:
        return counter
    scalar = ArrayType((), _I32)
    top = _scalar_const(ctx, trips, _I32)
    with ctx.named("while/body/sub"):
        i = ctx.op("stablehlo.subtract", [top, counter], [scalar, scalar], scalar)
    one = _scalar_const(ctx, 1, _I32)
    with ctx.named("while/body/sub"):
        return ctx.op("stablehlo.subtract", [i, one], [scalar, scalar], scalar)
