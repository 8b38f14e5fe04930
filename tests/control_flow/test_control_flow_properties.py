"""Control flow under transforms, checked by mathematics: check_grads through
fori_loop, and vmap of scan/cond/while/fori equal to stacking the
per-example results of a Python loop (the loop is the oracle here only)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec import lax
from spec import lax as slax
from spec.test_util import check_grads


def fori_f(x: Any) -> Any:
    return lax.fori_loop(0, 4, lambda i, c: snp.sin(c) * x + c * 0.5, x)


def test_check_grads_through_fori_loop() -> None:
    check_grads(fori_f, (np.float32(0.7),), order=2, atol=2e-2, rtol=2e-2)
    check_grads(spec.jit(fori_f), (np.float64(0.3),), order=1)


def _programs(kind: str) -> Any:
    if kind == "scan":
        return lambda x: lax.scan(lambda c, v: (c * 0.5 + snp.sin(v), c * v), x[0], x)
    if kind == "cond":
        return lambda x: lax.cond(x[0] > 0, lambda v: snp.sin(v) * 2.0, lambda v: v - 1.0, x)
    if kind == "switch":
        return lambda x: lax.switch((x[0] > 0).astype(snp.int32) + (x[1] > 0).astype(snp.int32),
                                    [lambda v: v * 3.0, snp.cos, lambda v: -v], x)
    if kind == "while":
        return lambda x: lax.while_loop(lambda c: c[0] < 5.0, lambda c: c * 1.5 + 0.25,
                                        snp.abs(x) + 0.1)
    return lambda x: lax.fori_loop(0, (snp.abs(x[0]) * 3).astype(snp.int32),
                                   lambda i, c: c + snp.sin(c) * i, x)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["scan", "cond", "switch", "while", "fori"]), st.integers(1, 5),
       st.integers(2, 4), st.sampled_from([0, 1]), st.integers(0, 10_000))
def test_vmap_equals_loop(kind: str, batch: int, n: int, in_axis: int, seed: int) -> None:
    f = _programs(kind)
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((batch, n) if in_axis == 0 else (n, batch)).astype(np.float32)
    batched = spec.vmap(f, in_axes=in_axis)(xs)
    examples = [f(xs[i] if in_axis == 0 else xs[:, i]) for i in range(batch)]
    for b_leaf, leaves in zip(spec.tree_util.tree_leaves(batched),
                              zip(*[spec.tree_util.tree_leaves(e) for e in examples])):
        np.testing.assert_allclose(np.asarray(b_leaf), np.stack([np.asarray(v) for v in leaves]),
                                   rtol=1e-6, atol=1e-6)


# -------------------------------------- gradients through cond and switch


@settings(max_examples=10, deadline=None)
@given(st.floats(-2.0, 2.0).filter(lambda v: abs(v) > 0.05), st.integers(0, 2))
def test_check_grads_cond_switch(v: float, index: int) -> None:
    from spec.test_util import check_grads
    x = np.array([v, 0.5 * v + 0.3], np.float32)

    def f_cond(a: Any) -> Any:
        return slax.cond(a[0] > 0, lambda b: snp.sin(b) * b, lambda b: snp.cos(b) - b, a)

    def f_switch(a: Any) -> Any:
        return slax.switch(index, [lambda b: b * b, snp.sin, lambda b: snp.exp(b) * 0.5], a)

    check_grads(f_cond, (x,), order=2, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)
    check_grads(f_switch, (x,), order=2, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


# ------------------------------- linear_transpose of scan and cond: <ct, J t>


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.booleans(), st.integers(0, 2 ** 31 - 1))
def test_linear_transpose_dot_product(length: int, n: int, pred: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(n,)).astype(np.float32)

    def f_scan(v: Any) -> Any:
        return slax.scan(lambda c, a: (c * w + a, c * 3.0 - a), snp.zeros(n, np.float32), v)

    def f_cond(v: Any) -> Any:
        return slax.cond(pred, lambda a: a * w, lambda a: -a[::-1], v)

    for f, shape in ((f_scan, (length, n)), (f_cond, (n,))):
        t = rng.normal(size=shape).astype(np.float32)
        jt = f(t)  # linear: f(t) is J t
        ct = jax.tree_util.tree_map(
            lambda y: rng.normal(size=np.shape(y)).astype(np.float32), jt)
        (jct,) = spec.linear_transpose(f, t)(ct)
        lhs = sum(float(np.vdot(np.asarray(c), np.asarray(y)))
                  for c, y in zip(jax.tree_util.tree_leaves(ct),
                                  spec.tree_util.tree_leaves(jt)))
        rhs = float(np.vdot(np.asarray(jct), t))
        np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-4)
