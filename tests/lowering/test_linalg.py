"""Linear-algebra lowering: the LAPACK FFI custom calls spec emits run on
jaxlib's CPU client and give JAX's jitted results bit for bit (the same
kernels), and spec's NumPy evaluation to rounding; the calls' text is
JAX's, Shardy sharding rules included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import lax as jlax

import spec
from spec import lax as slax
from spec._src.lowering.emitter import lower_jaxpr
from tests.lowering.xla_run import assert_bitwise, canonical, spec_and_compiled

_rng = np.random.default_rng(3)
G = _rng.normal(size=(2, 4, 4))
SPD = (G @ G.transpose(0, 2, 1) + 4 * np.eye(4)).astype(np.float64)
SPD[1, 0, 0] = -50.0  # the second matrix is not positive definite: NaN
TALL = _rng.normal(size=(5, 3)).astype(np.float32)
WIDE = _rng.normal(size=(2, 3, 5)).astype(np.float64)
RHS = _rng.normal(size=(2, 4, 3)).astype(np.float64)


def _program(lax: Any) -> Callable[..., Any]:
    la = lax.linalg

    def fn(spd: Any, tall: Any, wide: Any, rhs: Any) -> Any:
        tri = la.cholesky(spd[:1], symmetrize_input=False)
        return (la.cholesky(spd, symmetrize_input=False),
                la.triangular_solve(tri, rhs[:1], left_side=True, lower=True),
                la.triangular_solve(tri[0], rhs[0].T, left_side=False, lower=True,
                                    transpose_a=True, unit_diagonal=True),
                *la.qr(tall, full_matrices=False), *la.qr(tall, full_matrices=True),
                *la.qr(wide), *la.eigh(spd[:1], symmetrize_input=False),
                *la.eigh(spd[:1], lower=False, symmetrize_input=False),
                *la.svd(tall, full_matrices=False), *la.svd(wide, full_matrices=True),
                la.svd(tall, compute_uv=False))
    return fn


ARGS = [SPD, TALL, WIDE, RHS]


def test_lapack_calls_run_and_match_jax_and_spec(x64: None) -> None:
    ours, compiled, text = spec_and_compiled(_program(slax), *ARGS)
    assert "lapack_dpotrf_ffi" in text and "lapack_sgesdd_ffi" in text
    theirs = [np.asarray(t) for t in jax.jit(_program(jlax))(*ARGS)]
    assert_bitwise(compiled, theirs)
    for a, b in zip(ours, compiled):
        tol = 1e-4 if a.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    assert np.isnan(compiled[0][1][np.tril_indices(4)]).all()
    assert not np.isnan(compiled[0][0]).any()


def test_lapack_text_matches_jax_with_its_sharding_rules(x64: None) -> None:
    theirs = jax.jit(_program(jlax)).lower(*ARGS).as_text()
    ours = lower_jaxpr(spec.make_jaxpr(_program(slax))(*ARGS), "f")
    assert canonical(ours) == canonical(theirs)
    assert "sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, l, m], [i])" in ours
