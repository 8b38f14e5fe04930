"""``lax.scan``, ``lax.fori_loop`` and ``lax.associative_scan``.

``scan`` traces the body once on the carry and per-iteration slice types,
checks that the carry keeps its structure and types, hoists the body's
constants to operands and binds the ``scan`` primitive. As JAX does, carries
the body returns unchanged become constants, and extensive outputs that are
just an extensive input are not stacked again (the input is returned).
``fori_loop`` with static bounds is a scan (else a while loop);
``associative_scan`` is the parallel prefix algorithm built from slices,
pads and the combining function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.core import tree_util
from spec._src.core.hitypes import is_high
from spec._src.core.interpreter import (
    Jaxpr,
    Tracer,
    canonical_aval_of,
    trace_to_jaxpr,
)
from spec._src.lax.scan import (
    FTFiltered, FTSingleton, FTTuple, Either, nones, pack, scan_p, slice_aval as _slice_aval)
from spec._src.core.types import ArrayType, default_int, result_type
from spec._src.lax.control_flow import (
    _aval_of, arg_names, check_carry, check_ref_consts, check_returned_refs, debug_info_of,
    tuple_tree, while_loop, with_debug_info)
from spec._src.lax.elementwise import add, bitwise_or, lt
from spec._src.lax.shaping import convert_element_type
from spec._src.lax.slicing import concatenate, pad, rev, slice_in_dim

__all__ = ["associative_scan", "fori_loop", "scan"]


# ------------------------------------------------------------------- scan


def _infer_length(xs: Sequence[Any], length: Any) -> int:
    for x in xs:  # every scanned leaf must be a JAX value, before any shape is read
        try:
            canonical_aval_of(x)
        except TypeError:
            raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type "
                            "(scanned-over value)") from None
    if xs and length is None and all(is_high(canonical_aval_of(x)) for x in xs):
        raise ValueError("must provide `length` to `scan`, since the leading-axis size of "
                         "non-array (hijax) types cannot be inferred")
    shapes = []
    for x in xs:
        if is_high(canonical_aval_of(x)):
            continue  # a hi value's leading size is not read off it: `length` gives it
        shape = getattr(canonical_aval_of(x), "shape", ())
        if not shape:
            raise ValueError(f"scan got value with no leading axis to scan over: {x}.")
        shapes.append(shape[0])
    if length is not None:
        length = int(length)
        if not all(length == n for n in shapes):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {shapes}.")
        return int(length)
    if len(set(shapes)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in shapes)}.")
    if not shapes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return int(shapes[0])


def _check_carry(f: Callable[..., Any], init: Any, in_tree: Any, out_tree: Any,
                 in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType]) -> None:
    """JAX's checks and messages: same pytree structure, then equal types
    (a sharding layout difference counts as a shape difference)."""
    check_carry("scan body", f, in_tree, in_avals, out_tree, out_avals, layout=_layout)


def _layout(aval: ArrayType) -> Any:
    """A type's sharding as a comparable value; unsharded and fully
    replicated are the same layout."""
    spec = getattr(aval.sharding, "spec", None)
    if spec is None:
        return None
    parts = tuple(spec.partitions)
    if all(p is None for p in parts) and not spec.unreduced and not spec.reduced:
        return None
    return (parts, frozenset(spec.unreduced), frozenset(spec.reduced))


def _trace_body(f: Callable[..., Any], carry_tree: Any, x_tree: Any,
                carry_avals: list[ArrayType], x_avals: list[ArrayType]
                ) -> tuple[Jaxpr, Any, Any]:
    trees: dict[str, Any] = {}
    nk = len(carry_avals)

    def flat(*args: Any) -> list[Any]:
        carry = tree_util.tree_unflatten(carry_tree, list(args[:nk]))
        x = tree_util.tree_unflatten(x_tree, list(args[nk:]))
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"scan body output must be a pair, got {out}.")
        c_leaves, trees["carry"] = tree_util.tree_flatten(out[0])
        y_leaves, trees["ys"] = tree_util.tree_flatten(out[1])
        return [*c_leaves, *y_leaves]

    info = debug_info_of(f, "scan", tuple_tree(carry_tree, x_tree))
    jaxpr, _ = trace_to_jaxpr(flat, [*carry_avals, *x_avals], info)
    check_returned_refs(f, "scan", tuple_tree(carry_tree, x_tree), jaxpr,
                        tuple_tree(trees["carry"], trees["ys"]))
    return jaxpr, trees["carry"], trees["ys"]


def scan(f: Callable[..., Any], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False) -> tuple[Any, Any]:
    """Loop ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``;
    returns the final carry and the stacked ``y``s."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    init_flat, carry_tree = tree_util.tree_flatten(init)
    xs_flat, x_tree = tree_util.tree_flatten(xs)
    n = _infer_length(xs_flat, length)
    x_avals = [_sliced_aval(canonical_aval_of(x), n) for x in xs_flat]
    init_avals = [canonical_aval_of(c) for c in init_flat]
    jaxpr, out_tree, y_tree = _trace_body(f, carry_tree, x_tree, init_avals, x_avals)
    check_ref_consts(f, "scan", tuple_tree(carry_tree, x_tree), [*init_flat, *xs_flat], jaxpr)
    nk = len(init_flat)
    out_avals = jaxpr.out_avals
    if out_tree == carry_tree:
        # Weakly typed initial carries take the type the body gives them.
        changed = False
        for i, (a, b) in enumerate(zip(init_avals, out_avals[:nk])):
            if a.weak_type and not is_high(b) and (a.shape != b.shape or a.dtype != b.dtype):
                init_flat[i] = convert_element_type(init_flat[i],
                                                        result_type(init_flat[i], b.dtype))
                changed = True
        if changed:
            init_avals = [canonical_aval_of(c) for c in init_flat]
            jaxpr, out_tree, y_tree = _trace_body(f, carry_tree, x_tree, init_avals, x_avals)
            out_avals = jaxpr.out_avals
    _check_carry(f, init, carry_tree, out_tree, init_avals, out_avals[:nk])
    if isinstance(unroll, bool):
        unroll = max(n, 1) if unroll else 1
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    consts = list(jaxpr.consts)
    nc = len(consts)
    invars = [*jaxpr.constvars, *jaxpr.invars]
    outvars = list(jaxpr.outvars)
    index = {id(v): i for i, v in enumerate(invars)}
    # Carries the body forwards unchanged are read-only: constants.
    to_const = [index.get(id(outvars[i])) == nc + i for i in range(nk)]
    moved = [c for c, m in zip(init_flat, to_const) if m]
    carry_in = [c for c, m in zip(init_flat, to_const) if not m]
    k_vars = [v for v, m in zip(jaxpr.invars[:nk], to_const) if m]
    body_invars = [*k_vars, *jaxpr.constvars,
                   *(v for v, m in zip(jaxpr.invars[:nk], to_const) if not m),
                   *jaxpr.invars[nk:]]
    # Extensive outputs that are an extensive input are not stacked again.
    ys_fwd = [index.get(id(v)) for v in outvars[nk:]]
    ys_fwd = [i - nc - nk if i is not None and i >= nc + nk else None for i in ys_fwd]
    keep = [i is None for i in ys_fwd]
    body_outvars = [*(v for v, m in zip(outvars[:nk], to_const) if not m),
                    *(v for v, k in zip(outvars[nk:], keep) if k)]
    body = Jaxpr([], body_invars, body_outvars, jaxpr.eqns, jaxpr.effects)
    n_carry = nk - len(moved)
    ys_g = FTTuple(*(FTFiltered(FTSingleton(Either(k, None))) for k in keep))
    outs = scan_p.bind(
        *moved, *consts, *carry_in, *xs_flat, reverse=reverse, length=n, jaxpr=body,
        ft_in=pack((nones(len(moved) + nc), nones(n_carry), nones(len(xs_flat)))),
        ft_out=pack((nones(n_carry), ys_g)), unroll=int(unroll))
    it_c = iter(outs[:n_carry])
    carry_out = [c if m else next(it_c) for c, m in zip(init_flat, to_const)]
    it_y = iter(outs[n_carry:])
    ys = [next(it_y) if i is None else xs_flat[i] for i in ys_fwd]
    return (tree_util.tree_unflatten(out_tree, carry_out),
            tree_util.tree_unflatten(y_tree, ys))


def _sliced_aval(aval: Any, n: int) -> Any:
    """One iteration's slice of a scanned-over value: for a hi value its
    type's ``dec_rank`` along ``leading_axis_spec()``."""
    if is_high(aval):
        return aval.dec_rank(n, aval.leading_axis_spec())
    return _slice_aval(aval)


# -------------------------------------------------------------------- map


# ------------------------------------------------------------ fori_loop


def _one_like(i: Any) -> Any:
    """1 for incrementing the counter i: a Python int (weak) when i is a weak scalar of the
    default integer type, as JAX's ``lax._const`` makes it, so a weak counter stays weak."""
    aval = canonical_aval_of(i)
    if aval.weak_type and aval.ndim == 0 and aval.dtype == default_int():
        return 1
    return np.array(1, aval.dtype)


def _fori_cond(loop_carry: Any) -> Any:
    # One function for every fori_loop, so that its trace is cached (one shared jaxpr per
    # carry types, as JAX's).
    i, upper, _ = loop_carry
    return lt(i, upper)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any,
              *, unroll: int | bool | None = None) -> Any:
    """``body_fun(i, x)`` for i from ``lower`` to ``upper``, threading x."""
    for bound, name in ((lower, "lower"), (upper, "upper")):
        if bound is None:  # JAX reads the bounds' dtypes first, and None has none
            raise ValueError(f"Invalid argument to dtype: None (fori_loop {name} bound; "
                             "the bounds must be integers).")
    lo_aval, hi_aval = _aval_of(lower, "fori_loop lower"), _aval_of(upper, "fori_loop upper")
    dtype = lo_aval.dtype
    if lo_aval.dtype != hi_aval.dtype:
        both_signed = lo_aval.dtype.kind == "i" and hi_aval.dtype.kind == "i"
        if both_signed and lo_aval.weak_type and not hi_aval.weak_type:
            dtype = hi_aval.dtype
        elif both_signed and hi_aval.weak_type and not lo_aval.weak_type:
            dtype = lo_aval.dtype
        else:
            raise TypeError("lower and upper arguments to fori_loop must have equal types, "
                            f"got {lo_aval.dtype.name} and {hi_aval.dtype.name}")
    static = not isinstance(lower, Tracer) and not isinstance(upper, Tracer)
    # Errors about the loop body name the user's function and its arguments.
    names = arg_names(body_fun, tree_util.tree_structure((0, init_val)))
    if static:
        # As JAX: static bounds run as a scan (reverse-differentiable).
        lo = int(lower)

        def scanned(loop_carry: Any, _: Any) -> Any:  # JAX's parameter name, for messages
            i, x = loop_carry
            return (i + 1, body_fun(i, x)), None
        with_debug_info(scanned, body_fun, "fori_loop", names)

        (_, result), _ = scan(scanned, (lo, init_val), None,
                              length=max(int(upper) - lo, 0),
                              unroll=False if unroll is None else unroll)
        return result
    if not static and unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if lo_aval.dtype != dtype:
        lower = convert_element_type(lower, dtype)
    if hi_aval.dtype != dtype:
        upper = convert_element_type(upper, dtype)

    def body(loop_carry: Any) -> Any:
        i, hi, x = loop_carry
        return add(i, _one_like(i)), hi, body_fun(i, x)
    with_debug_info(body, body_fun, "fori_loop", [names[0], "", *names[1:]])

    _, _, result = while_loop(_fori_cond, body, (lower, upper, init_val))
    return result



# ------------------------------------------------------- associative_scan


def associative_scan(fn: Callable[..., Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
    """Inclusive prefix combination of ``elems`` along ``axis`` with the
    associative ``fn``, in O(log n) rounds of elementwise work."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    flat, tree = tree_util.tree_flatten(elems)
    if reverse:
        flat = [rev(e, (axis % canonical_aval_of(e).ndim,)) for e in flat]
    ndim = canonical_aval_of(flat[0]).ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis = axis % ndim
    n = canonical_aval_of(flat[0]).shape[axis]
    if not all(canonical_aval_of(e).shape[axis] == n for e in flat[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[canonical_aval_of(e).shape for e in flat]})")

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        return list(tree_util.tree_leaves(out))

    def sl(xs: list[Any], start: int, stop: int | None, stride: int = 1) -> list[Any]:
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(a: Any, b: Any) -> Any:
        na, nb = canonical_aval_of(a).shape[axis], canonical_aval_of(b).shape[axis]
        pa = [(0, 0, 0)] * ndim
        pb = [(0, 0, 0)] * ndim
        pa[axis] = (0, 1 if na == nb else 0, 1)
        pb[axis] = (1, 0 if na == nb else 1, 1)
        dt = canonical_aval_of(a).dtype
        zero = convert_element_type(0, dt)
        op = bitwise_or if dt.kind == "b" else add
        return op(pad(a, zero, pa), pad(b, zero, pb))

    def go(xs: list[Any]) -> list[Any]:
        m = canonical_aval_of(xs[0]).shape[axis]
        if m < 2:
            return xs
        reduced = combine(sl(xs, 0, -1, 2), sl(xs, 1, None, 2))
        odd = go(reduced)
        if m % 2 == 0:
            even = combine(sl(odd, 0, -1), sl(xs, 2, None, 2))
        else:
            even = combine(odd, sl(xs, 2, None, 2))
        even = [concatenate([slice_in_dim(x, 0, 1, axis=axis), e], axis)
                for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = go(flat)
    if reverse:
        out = [rev(e, (axis,)) for e in out]
    return tree_util.tree_unflatten(tree, out)
