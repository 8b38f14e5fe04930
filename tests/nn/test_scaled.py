"""jax.nn.scaled_matmul, scaled_dot_general and get_scaled_dot_general_config against
real JAX on CPU, run live in this process: jaxprs, values, gradients of JAX's custom
VJP, vmap, and errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.pair import both, error_of

LIBS = ((spec, snp), (jax, jnp))
DN = (((2,), (2,)), ((0,), (0,)))


def _matmul_operands(n: Any) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    a = n.asarray(rng.standard_normal((2, 3, 8)).astype(np.float32))
    b = n.asarray(rng.standard_normal((2, 4, 8)).astype(np.float32))
    sa = n.asarray(rng.uniform(0.5, 2.0, (2, 3, 2)).astype(np.float32))
    sb = n.asarray(rng.uniform(0.5, 2.0, (2, 4, 2)).astype(np.float32))
    return a, b, sa, sb


def test_scaled_matmul_jaxpr_values_and_vmap() -> None:
    def prog(j: Any, n: Any) -> Any:
        a, b, sa, sb = _matmul_operands(n)
        e4m3 = [x.astype(n.float8_e4m3fn) for x in (a, b)]
        e8m0 = [x.astype(n.float8_e8m0fnu) for x in (sa, sb)]
        batched = j.vmap(j.nn.scaled_matmul, in_axes=(0, None, 0, None))
        stack = (n.stack([a, 2 * a]), b, n.stack([sa, sa]), sb)
        return (str(j.make_jaxpr(j.nn.scaled_matmul)(a, b, sa, sb)),
                np.asarray(j.nn.scaled_matmul(a, b, sa, sb)),
                np.asarray(j.nn.scaled_matmul(*e4m3, *e8m0, preferred_element_type=n.bfloat16)
                           .astype(n.float32)),
                str(j.make_jaxpr(batched)(*stack)), np.asarray(batched(*stack)))
    ours, theirs = both(prog)
    assert ours[0] == theirs[0] and ours[3] == theirs[3]
    for o, t in zip(ours[1:], theirs[1:]):
        if isinstance(o, np.ndarray):
            np.testing.assert_allclose(o, t, rtol=2e-6)  # (XLA's dot sums in its own order)


@pytest.mark.parametrize("bad", [
    lambda a, b, sa, sb: (a[0], b, sa, sb),
    lambda a, b, sa, sb: (a, b[:, :, :4], sa, sb),
    lambda a, b, sa, sb: (a, b, sa, sb[:, :, :1]),
    lambda a, b, sa, sb: (a, b, sa[:, :1], sb),
])
def test_scaled_matmul_shape_errors(bad: Callable[..., tuple[Any, ...]]) -> None:
    ours, theirs = both(lambda j, n: error_of(
        lambda: j.nn.scaled_matmul(*bad(*_matmul_operands(n)))))
    assert type(ours) is type(theirs) is ValueError
    assert str(ours) == str(theirs)


def test_scaled_matmul_has_no_derivative_and_bad_dtype() -> None:
    ours, theirs = both(lambda j, n: error_of(lambda: j.grad(
        lambda a: j.nn.scaled_matmul(a, *_matmul_operands(n)[1:]).sum())(
            _matmul_operands(n)[0])))
    assert type(ours) is type(theirs) is NotImplementedError
    ours, theirs = both(lambda j, n: error_of(lambda: j.nn.scaled_matmul(
        *_matmul_operands(n), preferred_element_type="foo")))
    assert type(ours) is type(theirs) is TypeError and str(ours) == str(theirs)


def _config(j: Any, n: Any, mode: str) -> Any:
    scale = n.array([0.5], n.float32) if mode == "nvfp4" else None
    return j.nn.get_scaled_dot_general_config(mode, scale)


def test_configs() -> None:
    for mode in ("mxfp8", "mxfp4", "nvfp4"):
        ours, theirs = (_config(j, n, mode) for j, n in LIBS)
        assert (ours.mode, ours.block_size, ours.data_type, ours.scale_type, ours.infer_only) \
            == (theirs.mode, theirs.block_size, theirs.data_type, theirs.scale_type,
                theirs.infer_only)
        assert (ours.global_scale is None) == (theirs.global_scale is None)
    for bad in (lambda j: j.nn.get_scaled_dot_general_config("fp3"),
                lambda j: j.nn.get_scaled_dot_general_config("mxfp4", np.ones(1, np.float32))):
        o, t = error_of(lambda: bad(spec)), error_of(lambda: bad(jax))
        assert type(o) is type(t) is ValueError and str(o) == str(t)


def _dot_operands(n: Any) -> tuple[Any, Any]:
    rng = np.random.default_rng(1)
    return (n.asarray(rng.standard_normal((2, 32, 64)).astype(np.float32)),
            n.asarray(rng.standard_normal((2, 32, 64)).astype(np.float32)))


@pytest.mark.parametrize("mode", ["mxfp8", "mxfp4", "nvfp4"])
def test_scaled_dot_general_values_and_gradients(mode: str) -> None:
    """Values and the custom-VJP gradients agree to float32 rounding of the product sums
    (XLA's dot sums in its own order)."""
    def prog(j: Any, n: Any) -> Any:
        configs = [_config(j, n, mode)] * 3
        x, y = _dot_operands(n)

        def f(x: Any, y: Any) -> Any:
            return j.nn.scaled_dot_general(x, y, DN, configs=configs)
        gx, gy = j.jit(j.grad(lambda x, y: (f(x, y) ** 2).sum(), argnums=(0, 1)))(x, y)
        return np.asarray(j.jit(f)(x, y)), np.asarray(gx), np.asarray(gy)
    (out, gx, gy), (out_j, gx_j, gy_j) = both(prog)
    np.testing.assert_allclose(out, out_j, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, gx_j, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(gy, gy_j, rtol=1e-5, atol=1e-4)


def test_scaled_dot_general_jaxprs_without_batch_and_errors() -> None:
    def prog(j: Any, n: Any) -> Any:
        configs = [_config(j, n, "mxfp8")] * 3
        x, y = _dot_operands(n)
        x2, y2 = x[0], y[0].T  # (32, 64) @ (64, 32), no batch dimension

        def g(x: Any, y: Any) -> Any:
            return j.nn.scaled_dot_general(x, y, (((1,), (0,)), ((), ())), configs=configs,
                                           preferred_element_type=n.bfloat16)
        unbatched = g(x2, y2)
        bad = error_of(lambda: j.nn.scaled_dot_general(
            x, y, DN, preferred_element_type=n.int32, configs=configs))
        small = error_of(lambda: j.nn.scaled_dot_general(x[..., :16], y[..., :16], DN,
                                                         configs=configs))
        return (str(j.make_jaxpr(lambda x, y: j.nn.scaled_dot_general(x, y, DN,
                                                                      configs=configs))(x, y)),
                str(j.make_jaxpr(g)(x2, y2)), str(unbatched.dtype),
                np.asarray(unbatched.astype(n.float32)).tolist(),
                str(j.nn.scaled_dot_general(x2, y2, (((1,), (0,)), ((), ()))).dtype),
                type(bad).__name__, str(bad), type(small).__name__)
    ours, theirs = both(prog)
    assert ours == theirs


def test_scaled_matmul_lowering_compiles_to_spec_values() -> None:
    """spec's lowering of the primitive, compiled and run by XLA, gives spec's values (and
    JAX's, within the dot's rounding)."""
    from tests.lowering.xla_run import spec_and_compiled

    a, b, sa, sb = _matmul_operands(np)
    ours, compiled, _ = spec_and_compiled(spec.nn.scaled_matmul, a, b, sa, sb)
    np.testing.assert_allclose(ours[0], compiled[0], rtol=2e-6)
    np.testing.assert_allclose(compiled[0], np.asarray(jax.nn.scaled_matmul(a, b, sa, sb)),
                               rtol=2e-6)
