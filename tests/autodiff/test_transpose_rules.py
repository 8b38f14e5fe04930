"""Every primitive with a transpose rule passes the dot-product test.

For a linear map L built around the primitive, <ct, L t> must equal
<L^T ct, t> for random t and ct (mathematics, no oracle needed), on
hypothesis-drawn shapes. The registry is enumerated: a primitive with a
transpose rule that no case here (or the named mesh test) covers fails
``test_every_transposable_primitive_is_covered``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
from spec.experimental import xla_metadata
import spec.numpy as snp
from spec import lax
from spec._src.core.interpreter import NotApplicable, Pending
from spec._src.core.registry import REGISTRY

Case = tuple[Callable[..., Any], tuple[Any, ...], str]
Draw = Callable[..., Any]

_RNG_SEED = 7


def _shape(draw: Draw, min_dims: int = 0, max_dims: int = 3, min_side: int = 1) -> tuple[int, ...]:
    n = draw(st.integers(min_dims, max_dims))
    return tuple(draw(st.integers(min_side, 4)) for _ in range(n))


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float32) -> Any:
    v = rng.standard_normal(shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        v = v + 1j * rng.standard_normal(shape)
    return snp.asarray(np.asarray(v).astype(dtype))


def _vdot(a: Any, b: Any) -> float:
    total = 0.0
    for x, y in zip(spec.tree_util.tree_leaves(a), spec.tree_util.tree_leaves(b)):
        xa = np.asarray(x).astype(np.complex128)
        ya = np.asarray(y).astype(np.complex128)
        total += float(np.real(np.sum(np.conj(xa) * ya)))
    return total


def dot_product_sides(f: Callable[..., Any], args: tuple[Any, ...], mode: str,
                      seed: int = _RNG_SEED) -> tuple[float, float]:
    """(<ct, L t>, <L^T ct, t>) for the linear ``f`` at tangents ``args``:
    the transpose by ``linear_transpose`` ("lt") or by ``vjp`` ("vjp")."""
    rng = np.random.default_rng(seed)
    out = f(*args)
    ct = spec.tree_util.tree_map(
        lambda y: _rand(rng, np.shape(y), np.dtype(spec.typeof(y).dtype)), out)
    # JAX's cotangents of complex values pair bilinearly (no conjugation):
    # the adjoint in the real inner product Re <a, b> is conj . L^T . conj.
    if mode == "lt":
        back = spec.linear_transpose(f, *args)(_conj(ct))
    else:
        back = spec.vjp(f, *args)[1](_conj(ct))
    return _vdot(ct, out), _vdot(_conj(back), args)


def _conj(tree: Any) -> Any:
    return spec.tree_util.tree_map(
        lambda x: lax.conj(x) if np.issubdtype(np.dtype(spec.typeof(x).dtype),
                                               np.complexfloating) else x, tree)


def _assert_adjoint(f: Callable[..., Any], args: tuple[Any, ...], mode: str) -> None:
    lhs, rhs = dot_product_sides(f, args, mode)
    assert lhs == pytest.approx(rhs, rel=2e-4, abs=2e-4)


def _program_text(f: Callable[..., Any], args: tuple[Any, ...], mode: str) -> str:
    """The program whose transposition the case exercises: the traced linear
    function ("lt") or its linearization ("vjp")."""
    if mode == "lt":
        return str(spec.make_jaxpr(f)(*args))
    _, f_jvp = spec.linearize(f, *args)
    return str(spec.make_jaxpr(f_jvp)(*args))


# ------------------------------------------------------------------- cases


def _unary(fn: Callable[[Any], Any], dtype: Any = np.float32, min_dims: int = 0
           ) -> Callable[[Draw, np.random.Generator], Case]:
    def build(draw: Draw, rng: np.random.Generator) -> Case:
        return fn, (_rand(rng, _shape(draw, min_dims), dtype),), "lt"
    return build


def _binary_same(fn: Callable[[Any, Any], Any]) -> Callable[[Draw, np.random.Generator], Case]:
    def build(draw: Draw, rng: np.random.Generator) -> Case:
        s = _shape(draw)
        return fn, (_rand(rng, s), _rand(rng, s)), "lt"
    return build


def _scaled(fn: Callable[[Any, Any], Any]) -> Callable[[Draw, np.random.Generator], Case]:
    """Linear in the first operand, the second a fixed value."""
    def build(draw: Draw, rng: np.random.Generator) -> Case:
        s = _shape(draw)
        k = _rand(rng, s) + 3.0
        return (lambda x: fn(x, k)), (_rand(rng, s),), "lt"
    return build


def _broadcast(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, max_dims=2)
    lead = draw(st.integers(1, 3))
    return (lambda x: lax.broadcast_in_dim(x, (lead, *s), tuple(range(1, len(s) + 1))),
            (_rand(rng, s),), "lt")


def _concatenate(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    s2 = (draw(st.integers(1, 4)), *s[1:])
    return (lambda a, b: lax.concatenate([a, b], 0)), (_rand(rng, s), _rand(rng, s2)), "lt"


def _complex(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw)
    return lax.complex, (_rand(rng, s), _rand(rng, s)), "lt"


def _conv(draw: Draw, rng: np.random.Generator) -> Case:
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    h, w = draw(st.integers(3, 5)), draw(st.integers(3, 5))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    rhs = _rand(rng, (o, c, kh, kw))
    lhs_first = draw(st.booleans())
    if lhs_first:
        return (lambda x: lax.conv_general_dilated(x, rhs, (1, 1), "SAME")), \
            (_rand(rng, (n, c, h, w)),), "lt"
    lhs = _rand(rng, (n, c, h, w))
    return (lambda k: lax.conv_general_dilated(lhs, k, (1, 1), "VALID")), \
        (_rand(rng, (o, c, kh, kw)),), "lt"


def _convert(draw: Draw, rng: np.random.Generator) -> Case:
    to = draw(st.sampled_from([np.float16, np.complex64]))
    return (lambda x: lax.convert_element_type(x, to)), (_rand(rng, _shape(draw)),), "lt"


def _cumsum(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    axis = draw(st.integers(0, len(s) - 1))
    rev = draw(st.booleans())
    return (lambda x: lax.cumsum(x, axis, rev)), (_rand(rng, s),), "lt"


def _fft(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    kind = draw(st.sampled_from(["fft", "ifft"]))
    k = draw(st.integers(1, len(s)))
    return (lambda x: lax.fft(x, kind, s[len(s) - k:])), (_rand(rng, s, np.complex64),), "lt"


def _reduce_window_sum(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1, min_side=2)
    window = tuple(draw(st.integers(1, d)) for d in s)
    strides = tuple(draw(st.integers(1, 2)) for _ in s)
    padding = draw(st.sampled_from(["VALID", "SAME"]))
    return (lambda x: lax.reduce_window(x, 0.0, lax.add, window, strides, padding)), \
        (_rand(rng, s),), "lt"


def _custom_jvp(draw: Draw, rng: np.random.Generator) -> Case:
    @spec.custom_jvp
    def twice(x: Any) -> Any:
        return 2.0 * x
    twice.defjvp(lambda p, t: (twice(p[0]), 2.0 * t[0]))
    return twice, (_rand(rng, _shape(draw)),), "lt"


def _custom_lin(draw: Draw, rng: np.random.Generator) -> Case:
    @spec.custom_vjp
    def triple(x: Any) -> Any:
        return 3.0 * x
    triple.defvjp(lambda x: (3.0 * x, None), lambda _, ct: (3.0 * ct,))
    return triple, (_rand(rng, _shape(draw)),), "vjp"


def _custom_linear_solve(draw: Draw, rng: np.random.Generator) -> Case:
    """A diagonal system: linear in b, with its transpose solve."""
    n = draw(st.integers(1, 4))
    d = _rand(rng, (n,)) ** 2 + 1.0

    def solve(b: Any) -> Any:
        return lax.custom_linear_solve(lambda x: d * x, b, lambda mv, y: y / d,
                                       lambda vm, y: y / d)
    return solve, (_rand(rng, (n,)),), "lt"


def _dot(draw: Draw, rng: np.random.Generator) -> Case:
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    b = draw(st.integers(0, 2))
    batch = (b,) if b else ()
    dims = (((len(batch) + 1,), (len(batch),)), ((0,), (0,)) if b else ((), ()))
    if draw(st.booleans()):
        y = _rand(rng, (*batch, k, n))
        return (lambda x: lax.dot_general(x, y, dims)), (_rand(rng, (*batch, m, k)),), "lt"
    x0 = _rand(rng, (*batch, m, k))
    return (lambda y: lax.dot_general(x0, y, dims)), (_rand(rng, (*batch, k, n)),), "lt"


def _dynamic_slice(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    sizes = tuple(draw(st.integers(1, d)) for d in s)
    starts = tuple(draw(st.integers(-1, d)) for d in s)  # clamped, as XLA does
    return (lambda x: lax.dynamic_slice(x, starts, sizes)), (_rand(rng, s),), "lt"


def _dynamic_update_slice(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    sizes = tuple(draw(st.integers(1, d)) for d in s)
    starts = tuple(draw(st.integers(0, d)) for d in s)
    return (lambda x, u: lax.dynamic_update_slice(x, u, starts)), \
        (_rand(rng, s), _rand(rng, sizes)), "lt"


def _take_dnums() -> Any:
    return lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))


def _gather(draw: Draw, rng: np.random.Generator) -> Case:
    rows, cols, k = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    idx = snp.asarray(np.asarray([[draw(st.integers(0, rows - 1))] for _ in range(k)],
                                 np.int32))
    return (lambda x: lax.gather(x, idx, _take_dnums(), (1, cols))), \
        (_rand(rng, (rows, cols)),), "lt"


def _scatter_dnums() -> Any:
    return lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))


def _scatter(kind: str) -> Callable[[Draw, np.random.Generator], Case]:
    def build(draw: Draw, rng: np.random.Generator) -> Case:
        rows, cols, k = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
        # Distinct indices: plain scatter is linear only without collisions.
        picks = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=min(k, rows),
                              unique=True))
        idx = snp.asarray(np.asarray([[p] for p in picks], np.int32))
        upd_shape = (len(picks), cols)
        fn = {"scatter": lax.scatter, "scatter-add": lax.scatter_add,
              "scatter-sub": lax.scatter_sub}.get(kind)
        if kind == "scatter-mul":
            u = _rand(rng, upd_shape)
            return (lambda x: lax.scatter_mul(x, idx, u, _scatter_dnums())), \
                (_rand(rng, (rows, cols)),), "lt"
        assert fn is not None
        return (lambda x, u: fn(x, idx, u, _scatter_dnums(), unique_indices=True)), \
            (_rand(rng, (rows, cols)), _rand(rng, upd_shape)), "lt"
    return build


def _pad(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1, max_dims=2)
    cfg = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2)), draw(st.integers(0, 1)))
           for _ in s]
    cfg = [(lo, hi, it) if d + lo + hi + max(d - 1, 0) * it > 0 else (0, 0, it)
           for (lo, hi, it), d in zip(cfg, s)]
    return (lambda x, p: lax.pad(x, p, cfg)), (_rand(rng, s), _rand(rng, ())), "lt"


def _polynomial(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw)
    x = _rand(rng, s)
    n = draw(st.integers(2, 4))
    return (lambda c: lax.polynomial(x, c)), (_rand(rng, (n,)),), "lt"


def _ldexp(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw)
    e = snp.asarray(rng.integers(-3, 4, s).astype(np.int32))
    return (lambda x: snp.ldexp(x, e)), (_rand(rng, s),), "lt"


def _reduce_sum(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    axes = tuple(sorted(draw(st.sets(st.integers(0, len(s) - 1)))))
    return (lambda x: lax.reduce_sum(x, axes)), (_rand(rng, s),), "lt"


def _reshape(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw)
    return (lambda x: lax.reshape(x, (int(np.prod(s)),))), (_rand(rng, s),), "lt"


def _rev(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    dims = tuple(sorted(draw(st.sets(st.integers(0, len(s) - 1)))))
    return (lambda x: lax.rev(x, dims)), (_rand(rng, s),), "lt"


def _select_n(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw)
    which = snp.asarray(rng.integers(0, 2, s).astype(bool))
    return (lambda a, b: lax.select_n(which, a, b)), (_rand(rng, s), _rand(rng, s)), "lt"


def _stage(draw: Draw, rng: np.random.Generator) -> Case:
    return lax.stage_p.bind, (_rand(rng, _shape(draw)),), "lt"


def _window_select(name: str) -> Callable[[Draw, np.random.Generator], Case]:
    """select_and_gather_add (a window's tangent at its max) and its transpose
    select_and_scatter_add, linear in the tangents/source at a fixed operand
    with ties (small integers)."""
    def case(draw: Draw, rng: np.random.Generator) -> Case:
        x = snp.asarray(rng.integers(-2, 3, (4, 5)).astype(np.float32))
        params = dict(select_prim=lax.ge_p, window_dimensions=(2, 3), window_strides=(1, 2),
                      padding=((1, 0), (1, 1)))
        if name == "select_and_gather_add":
            params.update(base_dilation=(1, 1), window_dilation=(1, 1))
            return (lambda t: lax.select_and_gather_add_p.bind(t, x, **params)), \
                (_rand(rng, (4, 5)),), "lt"
        return (lambda src: lax.select_and_scatter_add_p.bind(src, x, **params)), \
            (_rand(rng, (4, 3)),), "lt"
    return case


def _slice(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    start = tuple(draw(st.integers(0, d - 1)) for d in s)
    limit = tuple(draw(st.integers(b + 1, d)) for b, d in zip(start, s))
    strides = tuple(draw(st.integers(1, 2)) for _ in s)
    return (lambda x: lax.slice(x, start, limit, strides)), (_rand(rng, s),), "lt"


def _split(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    cut = draw(st.integers(0, s[0]))
    return (lambda x: lax.split(x, (cut, s[0] - cut), 0)), (_rand(rng, s),), "lt"


def _squeeze(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, max_dims=2)
    return (lambda x: lax.squeeze(x, (0,))), (_rand(rng, (1, *s)),), "lt"


def _stack(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, max_dims=2)
    axis = draw(st.integers(0, len(s)))
    return (lambda a, b: lax.stack([a, b], axis)), (_rand(rng, s), _rand(rng, s)), "lt"


def _unstack(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1)
    return (lambda x: lax.unstack(x, 0)), (_rand(rng, s),), "lt"


def _tile(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=1, max_dims=2)
    reps = tuple(draw(st.integers(1, 3)) for _ in s)
    return (lambda x: lax.tile(x, reps)), (_rand(rng, s),), "lt"


def _transpose(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, min_dims=2)
    perm = tuple(draw(st.permutations(range(len(s)))))
    if perm == tuple(range(len(s))):  # the identity is no transpose at all
        perm = perm[::-1]
    return (lambda x: lax.transpose(x, perm)), (_rand(rng, s),), "lt"


def _jit(draw: Draw, rng: np.random.Generator) -> Case:
    return spec.jit(lambda x, y: 2.0 * x - y), \
        tuple(_rand(rng, s) for s in [_shape(draw)] * 2), "lt"


def _cond(draw: Draw, rng: np.random.Generator) -> Case:
    which = draw(st.integers(0, 1))
    return (lambda x: lax.cond(which, lambda v: -v, lambda v: 3.0 * v, x)), \
        (_rand(rng, _shape(draw)),), "lt"


def _scan(draw: Draw, rng: np.random.Generator) -> Case:
    s = _shape(draw, max_dims=2)
    n = draw(st.integers(1, 3))

    def f(c: Any, xs: Any) -> Any:
        return lax.scan(lambda a, x: (0.5 * a + x, 2.0 * a), c, xs)
    return f, (_rand(rng, s), _rand(rng, (n, *s))), "lt"


def _refs(draw: Draw, rng: np.random.Generator) -> Case:
    """A linear map through a ref: whole and indexed reads, writes (swap) and
    add-updates, then the final contents frozen (all five ref primitives)."""
    n = draw(st.integers(2, 5))
    mode = draw(st.sampled_from(["lt", "vjp"]))

    def f(x: Any, y: Any) -> Any:
        r = spec.new_ref(x)
        r[1:] += 2.0 * r[:-1]
        old = spec.ref.swap(r, 0, y)
        spec.ref.addupdate(r, snp.array([n - 1, 0]), snp.stack([old, y]))
        y3 = r[...] * 3.0
        return spec.freeze(r), y3
    return f, (_rand(rng, (n,)), _rand(rng, ())), mode


def _empty_ref(draw: Draw, rng: np.random.Generator) -> Case:
    """A linear map through an empty ref (written before it is read), freed at the
    end; jitted, since only a compiled program makes an empty ref."""
    n = draw(st.integers(2, 5))
    mode = draw(st.sampled_from(["lt", "vjp"]))

    @spec.jit
    def f(x: Any) -> Any:
        r = spec.empty_ref(x)
        r[...] = 2.0 * x
        r[1:] += r[:-1]
        y = r[...]
        spec.free_ref(r)
        return y
    return f, (_rand(rng, (n,)),), mode


def _linear_call(draw: Draw, rng: np.random.Generator) -> Case:
    """A matrix product given with its true transpose (the matrix a residual)."""
    n = draw(st.integers(1, 4))
    mode = draw(st.sampled_from(["lt", "vjp"]))
    a = _rand(rng, (n + 1, n))

    def f(x: Any) -> Any:
        return spec.custom_derivatives.linear_call(lambda m, v: m @ v, lambda m, ct: m.T @ ct,
                                                   a, x)
    return f, (_rand(rng, (n,)),), mode


def _user_scale_primitive() -> Any:
    """A linear user primitive declared as libraries declare one (jax.extend),
    its transpose registered with deflinear2."""
    from spec.extend.core import Primitive
    from spec.interpreters import ad
    p = Primitive("user_scale")
    p.def_impl(lambda x, *, k: x * k)
    p.def_abstract_eval(lambda x, *, k: spec.core.ShapedArray(x.shape, x.dtype))
    ad.deflinear2(p, lambda ct, x, *, k: [p.bind(ct, k=k)])
    return p


_USER_SCALE = _user_scale_primitive()


def _user_primitive(draw: Draw, rng: np.random.Generator) -> Case:
    mode = draw(st.sampled_from(["lt", "vjp"]))
    return (lambda x: _USER_SCALE.bind(x, k=1.5)), (_rand(rng, _shape(draw)),), mode


def _broadcast_to(draw: Draw, rng: np.random.Generator) -> Case:
    """NumPy-style broadcasting: new leading dims and stretched size-1 dims."""
    from spec._src.lax.state import broadcast_to_p
    shape = _shape(draw, 1, 3)
    operand = tuple(1 if draw(st.booleans()) else d for d in shape[draw(st.integers(0, 1)):])
    return (lambda x: broadcast_to_p.bind(x, shape=shape)), (_rand(rng, operand),), "lt"


def _remat(draw: Draw, rng: np.random.Generator) -> Case:
    return spec.checkpoint(lambda x: lax.neg(x) * 2.0), (_rand(rng, _shape(draw)),), "vjp"


def _eval_jaxpr(draw: Draw, rng: np.random.Generator) -> Case:
    """A call of a linear jaxpr (what a checkpointed scan's known side binds)."""
    from spec._src.lax.scan import eval_jaxpr_p
    x = _rand(rng, _shape(draw))
    call = spec.make_jaxpr(lambda v: 3.0 * v - lax.neg(v))(x)
    return (lambda v: eval_jaxpr_p.bind(v, call_jaxpr=call)[0]), (x,), "lt"


def _name(draw: Draw, rng: np.random.Generator) -> Case:
    from spec.ad_checkpoint import checkpoint_name
    return (lambda x: checkpoint_name(2.0 * x, "h")), (_rand(rng, _shape(draw)),), "lt"


def _xla_metadata_call(draw: Draw, rng: np.random.Generator) -> Case:
    call = xla_metadata.xla_metadata_call(lambda x, y: 2.0 * x - y, tag="t")
    return call, tuple(_rand(rng, s) for s in [_shape(draw)] * 2), "lt"


def _xla_metadata_value(draw: Draw, rng: np.random.Generator) -> Case:
    return (lambda x: xla_metadata.set_xla_metadata(3.0 * x, tag=True)), \
        (_rand(rng, _shape(draw)),), "lt"


def _triangular_solve(draw: Draw, rng: np.random.Generator) -> Case:
    """Linear in b, for every combination of the flags; a is a fixed,
    well-conditioned matrix (both triangles filled: one is ignored)."""
    n, k, nb = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(0, 2))
    batch = (nb,) if nb else ()
    left, lower, trans, conj, unit = (draw(st.booleans()) for _ in range(5))
    dtype = draw(st.sampled_from([np.float32, np.complex64]))
    a = _rand(rng, (*batch, n, n), dtype) * 0.2 + 3 * snp.eye(n, dtype=dtype)
    kw = dict(left_side=left, lower=lower, transpose_a=trans, conjugate_a=conj,
              unit_diagonal=unit)
    b = _rand(rng, (*batch, n, k) if left else (*batch, k, n), dtype)
    return (lambda y: spec.lax.linalg.triangular_solve(a, y, **kw)), (b,), "lt"


def _tridiagonal_solve(draw: Draw, rng: np.random.Generator) -> Case:
    """Linear in b; the diagonals fixed, diagonally dominant."""
    m, k, nb = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(0, 2))
    batch = (nb,) if nb else ()
    dtype = draw(st.sampled_from([np.float32, np.complex64]))
    dl, du = (_rand(rng, (*batch, m), dtype) * 0.3 for _ in range(2))
    d = _rand(rng, (*batch, m), dtype) * 0.3 + 3
    b = _rand(rng, (*batch, m, k), dtype)
    return (lambda y: spec.lax.linalg.tridiagonal_solve(dl, d, du, y)), (b,), "lt"


CASES: dict[str, Callable[[Draw, np.random.Generator], Case]] = {
    "Ldexp": _ldexp,
    "add": _binary_same(lax.add),
    "add_any": _binary_same(lambda a, b: REGISTRY["add_any"].bind(a, b)),
    "broadcast_in_dim": _broadcast,
    "complex": _complex,
    "concatenate": _concatenate,
    "cond": _cond,
    "conj": _unary(lax.conj, np.complex64),
    "conv_general_dilated": _conv,
    "convert_element_type": _convert,
    "copy": _unary(lambda x: REGISTRY["copy"].bind(x)),
    "cumsum": _cumsum,
    "custom_jvp_call": _custom_jvp,
    "custom_linear_solve": _custom_linear_solve,
    # Under a trace device_put stages its equation; its transpose moves the cotangent back.
    "device_put": _unary(lambda x: spec.device_put(x, spec.devices()[0])),
    "custom_lin": _custom_lin,
    "div": _scaled(lax.div),
    "dot_general": _dot,
    "optimization_barrier": _binary_same(lambda a, b: lax.optimization_barrier((a, b))[0] * 2
                                         + lax.optimization_barrier((a, b))[1]),
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "eval_jaxpr": _eval_jaxpr,
    "reduce_window_sum": _reduce_window_sum,
    "fft": _fft,
    "gather": _gather,
    "imag": _unary(lax.imag, np.complex64),
    "jit": _jit,
    "mul": _scaled(lax.mul),
    "name": _name,
    "xla_metadata_call": _xla_metadata_call,
    "xla_metadata_value": _xla_metadata_value,
    "neg": _unary(lax.neg),
    "pad": _pad,
    "polynomial": _polynomial,
    "real": _unary(lax.real, np.complex64),
    "reduce_precision": _unary(lambda x: lax.reduce_precision(x, 8, 23)),
    "reduce_sum": _reduce_sum,
    "remat2": _remat,
    "broadcast_to": _broadcast_to,
    "new_ref": _refs,
    "get": _refs,
    "swap": _refs,
    "addupdate": _refs,
    "freeze": _refs,
    "empty_ref": _empty_ref,
    "free_ref": _empty_ref,
    "linear_call": _linear_call,
    "user_primitive": _user_primitive,
    "reshape": _reshape,
    "rev": _rev,
    "scan": _scan,
    "scatter": _scatter("scatter"),
    "scatter-add": _scatter("scatter-add"),
    "scatter-mul": _scatter("scatter-mul"),
    "scatter-sub": _scatter("scatter-sub"),
    "select_and_gather_add": _window_select("select_and_gather_add"),
    "select_and_scatter_add": _window_select("select_and_scatter_add"),
    "select_n": _select_n,
    "slice": _slice,
    "split": _split,
    "squeeze": _squeeze,
    "stage": _stage,
    "stack": _stack,
    "sub": _binary_same(lax.sub),
    "tile": _tile,
    "transpose": _transpose,
    "triangular_solve": _triangular_solve,
    "tridiagonal_solve": _tridiagonal_solve,
    "unstack": _unstack,
}

# How the ref primitives appear in a printed jaxpr.
REF_SYNTAX = {"new_ref": r"= new_ref\[", "get": r":\S+ <- \w+\[", "swap": r", \w+\[\S*\] <- ",
              "addupdate": r"\] \+= ", "freeze": r"= freeze ", "empty_ref": r"= empty_ref\[",
              "free_ref": r"\bfree_ref \w",
              "user_primitive": r"= user_scale\[k=1\.5\] "}

# Transpose rules that exist only to raise JAX's error: no adjoint to test.
RAISES = {"while": ValueError, "ffi_call": ValueError,  # ffi_call: tests/ffi
          # tests/callbacks (JAX's errors, compared live)
          "pure_callback": ValueError, "io_callback": ValueError,
          "composite": ValueError,  # composite: tests/rules/test_lax_reduce_barrier_ann
          # remat_opt: JAX's higher-order error, tests/autodiff/test_remat_opt.py
          "remat_opt": NotImplementedError}

# Primitives without results: their transpose gives no cotangents (nothing
# flows through them), so there is no adjoint to test; tests/callbacks checks
# that they print in the forward pass only.
NO_RESULTS = {"debug_callback", "debug_print", "dce_sink"}

# Primitives that act on values laid out over a device mesh: their adjoint
# tests need a mesh of several devices and live with the other mesh tests.
MESH_TEST = Path(__file__).parents[1] / "shard_map" / "test_collectives.py"
MESH_ADJOINT = "test_transpose_is_the_adjoint_per_device"
ON_MESH = {
    "all_gather", "all_gather_reduced", "all_to_all", "pbroadcast", "ppermute", "preduced",
    "psum",
    "psum_invariant", "pvary", "reduce_scatter", "reduced_vary_cast", "unreduced_psum",
    "unreduced_reduce_scatter", "vary_unreduced_cast", "reshard", "sharding_constraint",
    "shard_map",
}
# ragged_all_to_all's adjoint test needs its offset operands laid out per device.
RAGGED_TEST = Path(__file__).parents[1] / "shard_map" / "test_ragged_all_to_all.py"
RAGGED_ADJOINT = "test_transpose_is_the_adjoint"


# User-defined (hijax) primitives, and those on hi values: their transposes
# run the user's rules (or need a user type), so their dot-product tests
# build user primitives and types and live with the hijax tests.
HIJAX_TEST = Path(__file__).parents[1] / "hijax" / "test_transpose.py"
HIJAX = {"hijax", "hijax_linearized", "hi_transpose", "hi_select_n", "hi_broadcast", "hi_sum"}


def _transposable() -> list[str]:
    return sorted(n for n, p in REGISTRY.items()
                  if not isinstance(p.transpose, (Pending, NotApplicable)))


def test_every_transposable_primitive_is_covered() -> None:
    uncovered = [n for n in _transposable()
                 if n not in CASES and n not in ON_MESH and n not in RAISES
                 and n not in HIJAX and n not in NO_RESULTS and n != "ragged_all_to_all"]
    assert uncovered == [], f"primitives with a transpose rule but no dot-product test: " \
                            f"{uncovered}"
    assert MESH_ADJOINT in MESH_TEST.read_text()
    assert RAGGED_ADJOINT in RAGGED_TEST.read_text()
    assert all(f'"{n}"' in HIJAX_TEST.read_text() for n in HIJAX)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_exercises_its_primitive(name: str) -> None:
    """The case's program (what gets transposed) contains the primitive."""
    @settings(max_examples=1, deadline=None, database=None)
    @given(st.data())
    def run(data: Any) -> None:
        f, args, mode = CASES[name](data.draw, np.random.default_rng(0))
        text = _program_text(f, args, mode)
        shown = name
        if name in REF_SYNTAX:  # ref primitives print as reads and writes
            assert re.search(REF_SYNTAX[name], text), text
            return
        assert re.search(rf"= {re.escape(shown)}(\[| )", text) or \
            re.search(rf"\b{re.escape(shown)}\[", text), text
    run()


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_dot_product(name: str, data: Any) -> None:
    f, args, mode = CASES[name](data.draw, np.random.default_rng(_RNG_SEED))
    _assert_adjoint(f, args, mode)


def test_dot_product_check_can_fail() -> None:
    """A wrong backward rule (2x where the forward is 3x) is caught."""
    @spec.custom_vjp
    def triple(x: Any) -> Any:
        return 3.0 * x
    triple.defvjp(lambda x: (3.0 * x, None), lambda _, ct: (2.0 * ct,))
    x = snp.ones(3)
    with pytest.raises(AssertionError):
        _assert_adjoint(triple, (x,), "vjp")


def _while_loop(lax_mod: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        n = lax_mod.convert_element_type(x[0] > 100.0, np.int32) + 2
        return lax_mod.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, 2.0 * c[1]),
                                  (0, x))[1]
    return f


def test_while_transpose_raises_as_jax() -> None:
    import jax
    x = np.ones(3, np.float32)
    with pytest.raises(ValueError) as theirs:
        jax.linear_transpose(_while_loop(jax.lax), x)(x)
    with pytest.raises(RAISES["while"]) as ours:
        spec.linear_transpose(_while_loop(lax), x)(x)
    assert "while_loop" in str(theirs.value) and "while_loop" in str(ours.value)
