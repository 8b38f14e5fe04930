"""Reverse mode through shard_map on the legacy linearize path (its partial
evaluation rule) against the direct path and against finite differences in
float64: invariant and varying operands, rank-0 varying residuals (which
leave the known map as shape (1,)), a psum, check_vma off, under jit and
checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.twin import on_virtual_devices


def _programs() -> dict[str, Callable[..., Any]]:
    P = spec.P

    def smap(f: Any, in_specs: Any, out_specs: Any, **kw: Any) -> Any:
        return spec.shard_map(f, in_specs=in_specs, out_specs=out_specs, **kw)

    def block_scaled(b: Any, c: Any) -> Any:
        # a rank-0 varying residual: the block's own sum
        return b * snp.sin(snp.sum(b * c))

    return {
        "elementwise": lambda x, c: snp.sum(smap(lambda b: snp.sin(b) * b, P("X"), P("X"))(x)),
        "rank0_residual": lambda x, c: snp.sum(smap(block_scaled, (P("X"), P()), P("X"))(x, c)),
        "psum": lambda x, c: smap(lambda b, c: spec.lax.psum(snp.sum(snp.tanh(b * c)), "X"),
                                  (P("X"), P()), P())(x, c),
        "unchecked": lambda x, c: snp.sum(smap(block_scaled, (P("X"), P()), P("X"),
                                               check_vma=False)(x, c)),
        "jit": spec.jit(lambda x, c: snp.sum(smap(block_scaled, (P("X"), P()), P("X"))(x, c))),
        "checkpoint": spec.checkpoint(
            lambda x, c: snp.sum(smap(block_scaled, (P("X"), P()), P("X"))(x, c))),
    }


NAMES = sorted(_programs())


def _mesh() -> Any:
    return spec.set_mesh(spec.make_mesh((4,), ("X",),
                                        axis_types=(spec.sharding.AxisType.Auto,)))


def _grads(name: str, x: np.ndarray, c: np.ndarray, direct: bool) -> list[np.ndarray]:
    def run() -> list[np.ndarray]:
        with _mesh(), \
                spec.config.use_direct_linearize(direct):
            g = spec.grad(_programs()[name], (0, 1))(x, c)
            return [np.asarray(v) for v in g]
    return on_virtual_devices(4, run)  # type: ignore[no-any-return]


def _value(name: str, x: np.ndarray, c: np.ndarray) -> float:
    def run() -> float:
        with _mesh():
            return float(_programs()[name](x, c))
    return on_virtual_devices(4, run)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", NAMES)
def test_legacy_path_gradient_is_the_direct_paths_and_the_finite_difference(name: str) -> None:
    with spec.enable_x64(True):
        x = np.linspace(-1.0, 1.5, 8)
        c = np.float64(0.7)
        legacy = _grads(name, x, c, direct=False)
        direct = _grads(name, x, c, direct=True)
        for a, b in zip(legacy, direct):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        eps = 1e-6
        fd_x = [(_value(name, x + eps * e, c) - _value(name, x - eps * e, c)) / (2 * eps)
                for e in np.eye(8)]
        fd_c = (_value(name, x, c + eps) - _value(name, x, c - eps)) / (2 * eps)
        np.testing.assert_allclose(legacy[0], fd_x, rtol=1e-6, atol=1e-8)
        if name != "unchecked":
            # (without variance tracking an invariant operand's cotangent is
            # each device's own, not their sum: not the derivative)
            np.testing.assert_allclose(legacy[1], fd_c, rtol=1e-6, atol=1e-8)
