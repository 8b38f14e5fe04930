"""spec.nn against jax.nn, run live: values (within a few ULPs where a
transcendental kernel is involved, as SPEC.md section 8 allows), types
with weak types, gradients, and the jaxpr each function stages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import spec
import spec.numpy as sjnp

X = np.array([-30.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 6.0, 30.0], np.float32)
M = np.linspace(-2.0, 3.0, 12, dtype=np.float32).reshape(3, 4)
B = np.array([0.0, 1.0, 2.0, 0.5], np.float32)
MASK = np.array([[True, False, True, True], [False, True, True, False], [True] * 4])

ELEMENTWISE = ["celu", "elu", "gelu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
               "identity", "leaky_relu", "log_sigmoid", "mish", "relu", "relu6", "selu",
               "sigmoid", "silu", "soft_sign", "softplus", "sparse_plus", "sparse_sigmoid",
               "squareplus", "swish", "tanh"]

# name -> program of (nn, jnp, x): one float32 matrix in, an array out.
PROGRAMS: dict[str, Callable[[Any, Any, Any], Any]] = {
    **{n: (lambda n: lambda nn, jnp, x: getattr(nn, n)(x))(n) for n in ELEMENTWISE},
    "gelu_exact": lambda nn, jnp, x: nn.gelu(x, approximate=False),
    "elu_alpha": lambda nn, jnp, x: nn.elu(x, 0.5),
    "celu_alpha": lambda nn, jnp, x: nn.celu(x, 2.0),
    "leaky_relu_slope": lambda nn, jnp, x: nn.leaky_relu(x, 0.2),
    "squareplus_b": lambda nn, jnp, x: nn.squareplus(x, 1.0),
    "log1mexp": lambda nn, jnp, x: nn.log1mexp(jnp.abs(x) + 0.1),
    "glu": lambda nn, jnp, x: nn.glu(x),
    "glu_axis0": lambda nn, jnp, x: nn.glu(x[:2], axis=0),
    "softmax": lambda nn, jnp, x: nn.softmax(x),
    "softmax_axis0": lambda nn, jnp, x: nn.softmax(x, axis=0),
    "softmax_where": lambda nn, jnp, x: nn.softmax(x, where=jnp.asarray(MASK)),
    "log_softmax": lambda nn, jnp, x: nn.log_softmax(x),
    "log_softmax_axes": lambda nn, jnp, x: nn.log_softmax(x, axis=(0, 1)),
    "log_softmax_where": lambda nn, jnp, x: nn.log_softmax(x, where=jnp.asarray(MASK)),
    "logsumexp": lambda nn, jnp, x: nn.logsumexp(x),
    "logsumexp_axis": lambda nn, jnp, x: nn.logsumexp(x, axis=1, keepdims=True),
    "logsumexp_b": lambda nn, jnp, x: nn.logsumexp(x, axis=0, b=jnp.asarray(B)),
    "logsumexp_sign": lambda nn, jnp, x: jnp.stack(nn.logsumexp(
        x, axis=1, b=jnp.asarray(M[:, :1]), return_sign=True)),
    "logsumexp_where": lambda nn, jnp, x: nn.logsumexp(x, axis=1, where=jnp.asarray(MASK)),
    "logmeanexp": lambda nn, jnp, x: nn.logmeanexp(x, axis=0),
    "logmeanexp_where": lambda nn, jnp, x: nn.logmeanexp(x, where=jnp.asarray(MASK)),
    "standardize": lambda nn, jnp, x: nn.standardize(x),
    "standardize_stable": lambda nn, jnp, x: nn.standardize(x, axis=0, algorithm="stable"),
    "standardize_given": lambda nn, jnp, x: nn.standardize(x, mean=1.0, variance=2.0),
}


def _lib(name: str) -> tuple[Any, Any]:
    return (jax, jjnp) if name == "jax" else (spec, sjnp)


def _input(name: str) -> np.ndarray:
    return np.tile(X, 2)[:12].reshape(3, 4) if name in ELEMENTWISE else M


def _close(got: Any, want: Any, ulps: int = 4) -> None:
    """Equal NaNs and infinities; finite values within ``ulps`` float32 ULPs
    relative to each value, plus as many of the largest one's (a sum's
    rounding differs between spec's exact reductions and XLA's order)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    eps = float(np.finfo(np.float32).eps)
    scale = float(np.max(np.abs(want[finite]), initial=1.0))
    np.testing.assert_allclose(got[finite], want[finite], rtol=ulps * eps,
                               atol=ulps * eps * scale)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_values_and_types_as_jax(name: str) -> None:
    x = _input(name)
    outs = {}
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        y = PROGRAMS[name](j.nn, jnp, jnp.asarray(x))
        outs[lib] = (np.asarray(y), str(j.typeof(y)))
    assert outs["spec"][1] == outs["jax"][1]
    _close(outs["spec"][0], outs["jax"][0])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jaxpr_as_jax(name: str) -> None:
    x = _input(name)
    texts = []
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        texts.append(str(j.make_jaxpr(lambda v: PROGRAMS[name](j.nn, jnp, v))(jnp.asarray(x))))
    assert texts[1] == texts[0]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradients_as_jax(name: str) -> None:
    x = _input(name)
    grads = []
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        grads.append(np.asarray(j.grad(lambda v: jnp.sum(jnp.where(
            jnp.isfinite(PROGRAMS[name](j.nn, jnp, v)), PROGRAMS[name](j.nn, jnp, v), 0.0)))(
                jnp.asarray(x))))
    _close(grads[1], grads[0], ulps=16)


@pytest.mark.parametrize("kwargs", [dict(), dict(dtype=np.int32), dict(axis=0),
                                    dict(num_classes=2)], ids=str)
def test_one_hot_as_jax(kwargs: dict[str, Any]) -> None:
    idx = np.array([[0, 2, -1], [3, 1, 1]], np.int32)
    n = kwargs.pop("num_classes", 4)
    outs = []
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        y = j.nn.one_hot(jnp.asarray(idx), n, **kwargs)
        outs.append((np.asarray(y).tolist(), str(j.typeof(y)),
                     str(j.make_jaxpr(lambda v: j.nn.one_hot(v, n, **kwargs))(idx))))
    assert outs[1] == outs[0]


def test_relu_derivative_at_zero_is_zero() -> None:
    assert float(spec.grad(spec.nn.relu)(0.0)) == float(jax.grad(jax.nn.relu)(0.0)) == 0.0
    assert float(spec.grad(spec.nn.relu6)(6.0)) == float(jax.grad(jax.nn.relu6)(6.0)) == 0.0


def test_vmap_of_softmax_equals_a_loop() -> None:
    rows = spec.vmap(spec.nn.softmax)(sjnp.asarray(M))
    for i in range(M.shape[0]):
        np.testing.assert_array_equal(np.asarray(rows[i]),
                                      np.asarray(spec.nn.softmax(sjnp.asarray(M[i]))))


def _attention_inputs(rng: np.random.Generator, b: int = 2, t: int = 3, s: int = 5, n: int = 4,
                      k: int = 2, h: int = 8) -> tuple[np.ndarray, ...]:
    q = rng.standard_normal((b, t, n, h)).astype(np.float32)
    kk = rng.standard_normal((b, s, k, h)).astype(np.float32)
    v = rng.standard_normal((b, s, k, h)).astype(np.float32)
    return q, kk, v


ATTENTION: dict[str, dict[str, Any]] = {
    "plain": {},
    "causal": dict(is_causal=True),
    "scale": dict(scale=0.5),
    "bias": dict(bias=np.linspace(-1, 1, 2 * 4 * 3 * 5, dtype=np.float32).reshape(2, 4, 3, 5)),
    "mask": dict(mask=(np.arange(2 * 1 * 3 * 5).reshape(2, 1, 3, 5) % 3 != 0)),
    "lengths": dict(query_seq_lengths=np.array([2, 3], np.int32),
                    key_value_seq_lengths=np.array([4, 2], np.int32)),
    "window": dict(local_window_size=(1, 1)),
}


@pytest.mark.parametrize("case", sorted(ATTENTION))
def test_dot_product_attention_as_jax(case: str) -> None:
    q, k, v = _attention_inputs(np.random.default_rng(0))
    outs = []
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        kwargs = {key: jnp.asarray(val) if isinstance(val, np.ndarray) else val
                  for key, val in ATTENTION[case].items()}
        y = j.nn.dot_product_attention(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v), **kwargs)
        outs.append(np.asarray(y))
    np.testing.assert_allclose(outs[1], outs[0], rtol=2e-6, atol=2e-6)


def test_dot_product_attention_residual_and_3d() -> None:
    q, k, v = _attention_inputs(np.random.default_rng(1), b=1)
    outs = []
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        enc, lse = j.nn.dot_product_attention(jnp.asarray(q[0]), jnp.asarray(k[0]),
                                              jnp.asarray(v[0]), return_residual=True)
        outs.append((np.asarray(enc), np.asarray(lse)))
    for a, b in zip(outs[1], outs[0]):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("bad", ["heads", "dtype", "implementation"])
def test_dot_product_attention_errors_as_jax(bad: str) -> None:
    q, k, v = _attention_inputs(np.random.default_rng(2), n=3)
    errors = []
    for lib in ("jax", "spec"):
        j, jnp = _lib(lib)
        args = [jnp.asarray(q), jnp.asarray(k), jnp.asarray(v)]
        kwargs: dict[str, Any] = {}
        if bad == "dtype":
            args[2] = args[2].astype(jnp.float16)
            args[0] = jnp.asarray(q[:, :, :2])
        if bad == "implementation":
            args[0] = jnp.asarray(q[:, :, :2])
            kwargs["implementation"] = "bogus"
        with pytest.raises(ValueError) as info:
            j.nn.dot_product_attention(*args, **kwargs)
        errors.append(str(info.value))
    assert errors[1] == errors[0]
