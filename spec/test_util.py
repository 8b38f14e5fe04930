"""Numerical checks of derivatives (``jax.test_util.check_grads``).

- ``check_jvp``: the JVP in a random direction against central finite
  differences, whose difference quotient is formed in float64 with a step
  sized for the argument dtype;
- ``check_vjp``: the VJP against finite differences, <J^T ct, t> against
  <ct, FD(t)> for random t and ct, then (where forward mode exists) the
  exact dot-product test <ct, J t> = <J^T ct, t> between JVP and VJP;
- ``check_grads``: both, recursively to ``order`` (derivatives of derivatives).

Complex arguments and outputs are handled as pairs of reals: directions are
complex, and inner products are real parts of conjugated sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api import autodiff as api
from spec._src.core import tree_util
from spec._src.core import types as T
from spec._src.numpy.creation import asarray, ones_like
from spec._src.numpy.math import conj

_STEP = {2: 3e-2, 4: 1e-3, 8: 1e-6}  # by float itemsize
_TOL = {2: 5e-2, 4: 2e-3, 8: 1e-7}


def _float_size(dt: np.dtype[Any]) -> int:
    """Bytes per real component of ``dt`` as spec computes with it (64-bit
    types are 32-bit unless x64 is enabled)."""
    dt = T.canonicalize_dtype(dt)
    if T.is_complex(dt):
        return dt.itemsize // 2
    return min(dt.itemsize, 8) if dt.itemsize != 1 else 2


def _inexact_leaves(tree: Any) -> list[Any]:
    return tree_util.tree_leaves(tree)


def _random_like(x: Any, rng: np.random.Generator) -> Any:
    dt = np.dtype(x.dtype)
    shape = np.shape(x)
    v = rng.standard_normal(shape)
    if T.is_complex(dt):
        v = v + 1j * rng.standard_normal(shape)
    return asarray(np.asarray(v).astype(dt))


def _vdot(a: Any, b: Any) -> complex:
    """Real inner product of two pytrees of arrays, accumulated in float64."""
    total = 0.0
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        xa = np.asarray(x).astype(np.complex128)
        ya = np.asarray(y).astype(np.complex128)
        total += float(np.real(np.sum(np.conj(xa) * ya)))
    return total


def _tolerance(trees: Sequence[Any], atol: float | None, rtol: float | None
               ) -> tuple[float, float]:
    sizes = [_float_size(np.dtype(x.dtype)) for t in trees for x in tree_util.tree_leaves(t)
             if T.is_inexact(np.dtype(x.dtype))]
    base = _TOL[min(sizes)] if sizes else _TOL[8]
    return (atol if atol is not None else base, rtol if rtol is not None else base)


def _assert_close(name: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        ga = np.asarray(g).astype(np.complex128)
        wa = np.asarray(w).astype(np.complex128)
        if not np.allclose(ga, wa, atol=atol, rtol=rtol, equal_nan=True):
            raise AssertionError(f"{name} mismatch (atol={atol}, rtol={rtol}):\n"
                                 f"got  {ga}\nwant {wa}")


def _axpy(a: float, x: Any, y: Any) -> Any:
    """y + a*x leafwise, in each leaf's dtype."""
    def combine(xi: Any, yi: Any) -> Any:
        dt = np.dtype(yi.dtype)
        return asarray((np.asarray(yi).astype(np.complex128 if T.is_complex(dt)
                                              else np.float64)
                        + a * np.asarray(xi)).astype(dt))
    return tree_util.tree_map(combine, x, y)


def _sub64(a: Any, b: Any, scale: float) -> Any:
    return tree_util.tree_map(
        lambda x, y: (np.asarray(x).astype(np.complex128)
                      - np.asarray(y).astype(np.complex128)) * scale, a, b)


def _with_msg(err_msg: str, what: str) -> str:
    return f"{err_msg} {what}" if err_msg else what


def _step(args: Sequence[Any], eps: float | None) -> float:
    sizes = [_float_size(np.dtype(x.dtype)) for x in tree_util.tree_leaves(args)]
    return eps if eps is not None else _STEP[min(sizes)] if sizes else _STEP[8]


def _numerical_jvp(f: Callable[..., Any], args: tuple[Any, ...], tangents: Any,
                   step: float) -> Any:
    """Central differences of ``f`` along ``tangents``, formed in float64."""
    plus = f(*_axpy(step, tangents, args))
    minus = f(*_axpy(-step, tangents, args))
    return _sub64(plus, minus, 0.5 / step)


def check_jvp(f: Callable[..., Any], f_jvp: Callable[..., Any], args: Sequence[Any],
              atol: float | None = None, rtol: float | None = None,
              eps: float | None = None, err_msg: str = "", seed: int = 0) -> None:
    """``f_jvp(args, tangents)`` against central differences of ``f``."""
    rng = np.random.default_rng(seed)
    args = tuple(args)
    tangents = tree_util.tree_map(lambda x: _random_like(x, rng), args)
    step = _step(args, eps)
    _, t_out = f_jvp(args, tangents)
    fd = _numerical_jvp(f, args, tangents, step)
    a, r = _tolerance([args], atol, rtol)
    _assert_close(_with_msg(err_msg, "JVP vs finite differences"), t_out, fd, max(a, step),
                  max(r, 10 * step))


def check_vjp(f: Callable[..., Any], f_vjp: Callable[..., Any], args: Sequence[Any],
              atol: float | None = None, rtol: float | None = None,
              eps: float | None = None, err_msg: str = "", seed: int = 1) -> None:
    """``f_vjp`` against finite differences of ``f``: <J^T ct, t> must equal
    <ct, (f(x + h t) - f(x - h t)) / 2h> for random t and ct. Where ``f``
    also has a forward mode (not a ``custom_vjp`` function), the exact
    dot-product test <ct, J t> = <J^T ct, t> against its JVP follows."""
    rng = np.random.default_rng(seed)
    args = tuple(args)
    tangents = tree_util.tree_map(lambda x: _random_like(x, rng), args)
    out, pullback = f_vjp(*args)
    cts = tree_util.tree_map(lambda y: _random_like(y, rng), out)
    # JAX's convention for complex values: the VJP of the conjugate cotangent,
    # conjugated, is the adjoint's action.
    ct_in = _conj(pullback(_conj(cts)))
    rhs = _vdot(ct_in, tangents)
    step = _step(args, eps)
    fd = _numerical_jvp(f, args, tangents, step)
    lhs_fd = _vdot(cts, fd)
    a, r = _tolerance([args, out], atol, rtol)
    scale = max(1.0, abs(lhs_fd), abs(rhs))
    a_fd, r_fd = max(a, step), max(r, 10 * step)
    if not abs(lhs_fd - rhs) <= a_fd + r_fd * scale:
        raise AssertionError(_with_msg(err_msg, "cotangent projection") +
                             f": <J^T ct, t> = {rhs} but by finite differences "
                             f"<ct, J t> = {lhs_fd}")
    try:
        _, t_out = api.jvp(f, args, tangents)
    except (TypeError, NotImplementedError):
        return  # no forward mode: the finite-difference check stands alone
    lhs = _vdot(cts, t_out)
    scale = max(1.0, abs(lhs), abs(rhs))
    if not abs(lhs - rhs) <= a + r * scale:
        raise AssertionError(_with_msg(err_msg, "VJP is not the transpose of the JVP") +
                             f": <ct, J t> = {lhs} but <J^T ct, t> = {rhs}")


def _conj(tree: Any) -> Any:
    def conj_leaf(x: Any) -> Any:
        if T.is_complex(np.dtype(x.dtype)):
            return conj(x)
        return x
    return tree_util.tree_map(conj_leaf, tree)


def check_grads(f: Callable[..., Any], args: Sequence[Any], order: int,
                modes: Sequence[str] | str = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
    """Check derivatives of ``f`` at ``args`` up to ``order`` against finite
    differences: "fwd" the JVP, "rev" the VJP (and its transposition of the
    JVP where forward mode exists), "lin" the linearized JVP. As in JAX,
    ``modes`` is tested by membership (a string like "rev" works) and other
    entries are ignored."""
    args = tuple(args)

    def check(fun: Callable[..., Any], at: tuple[Any, ...], k: int, msg: str) -> None:
        if "fwd" in modes:
            m = f"JVP of {msg}" if msg else "JVP"
            check_jvp(fun, lambda p, t: api.jvp(fun, p, t), at, atol, rtol, eps, m)
            if k > 1:
                check(lambda *xs: api.jvp(fun, xs, _ones_like(xs))[1], at, k - 1, m)
        if "rev" in modes:
            m = f"VJP of {msg}" if msg else "VJP"
            check_vjp(fun, lambda *xs: api.vjp(fun, *xs), at, atol, rtol, eps, m)
            if k > 1:
                rng = np.random.default_rng(2)
                out = fun(*at)
                ct = tree_util.tree_map(lambda y: _random_like(y, rng), out)
                check(lambda *xs: api.vjp(fun, *xs)[1](ct), at, k - 1, m)
        if "lin" in modes:
            m = f"LIN of {msg}" if msg else "LIN"
            check_jvp(fun, lambda p, t: _jvp_from_lin(fun, p, t), at, atol, rtol, eps, m)
            if k > 1:
                check(lambda *xs: _jvp_from_lin(fun, xs, _ones_like(xs))[1], at, k - 1, m)

    check(f, args, order, "")


def _jvp_from_lin(f: Callable[..., Any], primals: tuple[Any, ...], tangents: Any
                  ) -> tuple[Any, Any]:
    out, f_lin = api.linearize(f, *primals)
    return out, f_lin(*tangents)


def _ones_like(xs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tree_util.tree_map(ones_like, xs)  # type: ignore[no-any-return]


__all__ = ["check_grads", "check_jvp", "check_vjp"]
