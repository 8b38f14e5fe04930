"""spec.example_libraries.stax against JAX's own jax.example_libraries.stax, run live: the same
key gives the same initial parameters and output shapes, the same parameters and inputs the
same outputs and gradients, and pooling gives lax.reduce_window's values.

All layers run side by side as one ``parallel`` layer, under one jit per side: JAX compiles
every program (and eager operation) on its own, and compiling (random draws above all) is
most of its time here, so few layers draw parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.example_libraries.stax as jax_stax
import numpy as np
import pytest

import spec
import spec.example_libraries.stax as spec_stax

LIBS = {"jax": (jax, jax_stax), "spec": (spec, spec_stax)}

_rng = np.random.default_rng(1)
X = _rng.standard_normal((2, 9, 7, 3)).astype(np.float32)
TIED = np.maximum(X, 0.0)
TIED[:, :4, :4, :] = 0.0  # ReLU-like zeros: windows whose maximum is tied
NCHW = np.ascontiguousarray(X.transpose(0, 3, 1, 2))


def _leaves(lib: Any, tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in lib.tree.leaves(tree)]


def _init(lib: Any, init: Any, key: Any, shape: Any) -> tuple[Any, Any]:
    """``init(key, shape)`` with the parameters drawn under jit; the shape is Python data."""
    shapes = []

    def params_only(k: Any) -> Any:
        out_shape, params = init(k, shape)
        shapes.append(out_shape)
        return params

    params = lib.jit(params_only)(key)
    return shapes[0], params


def _ints(shape: Any) -> Any:
    """A shape, or a list of shapes, with every size a Python int (JAX's may be NumPy's)."""
    if shape and isinstance(shape[0], (tuple, list)):
        return [_ints(s) for s in shape]
    return tuple(int(d) for d in shape)


def _apply_and_grad(lib: Any, apply: Any, params: Any, inputs: Any, key: int
                    ) -> tuple[Any, Any, Any]:
    """Outputs, and gradients of the sum of squared outputs in params and inputs, jitted."""
    def loss(p: Any, x: Any) -> Any:
        outs = lib.tree.leaves(apply(p, x, rng=lib.random.key(key)))
        return sum((o.astype("float32") ** 2).sum() for o in outs)

    @lib.jit
    def run(p: Any, x: Any) -> Any:
        return apply(p, x, rng=lib.random.key(key)), lib.grad(loss, argnums=(0, 1))(p, x)

    out, (gp, gx) = run(params, inputs)
    return out, gp, gx


# name -> (layer maker of a stax module, input)
LAYERS: dict[str, tuple[Callable[[Any], Any], np.ndarray]] = {
    "dense": (lambda st: st.Dense(4), X[:, 0, 0]),
    "conv": (lambda st: st.Conv(4, (3, 2), (2, 1), "SAME"), X),
    "general_conv": (lambda st: st.GeneralConv(("NCHW", "OIHW", "NHWC"), 3, (2, 2), (1, 2)),
                     X),
    "conv1d_transpose": (lambda st: st.Conv1DTranspose(2, (3,), (2,), "SAME"), X[:, :, 0]),
    "batchnorm": (lambda st: st.BatchNorm(), X),
    "batchnorm_center": (lambda st: st.BatchNorm(axis=(0, 2), scale=False), X),
    "batchnorm_scale": (lambda st: st.BatchNorm(axis=1, center=False), X),
    "batchnorm_plain": (lambda st: st.BatchNorm(axis=(0, 1), center=False, scale=False), X),
    "shape_dependent": (lambda st: st.shape_dependent(
        lambda shape: st.Flatten if len(shape) > 2 else st.Identity), X),
    "activations": (lambda st: st.serial(st.Exp, st.Softplus, st.Sigmoid, st.Elu, st.Tanh,
                                         st.LeakyRelu, st.Selu, st.Gelu, st.Relu,
                                         st.Softmax, st.LogSoftmax), X),
    "flatten_identity": (lambda st: st.serial(st.Identity, st.Flatten), X),
    "fan_out_in": (lambda st: st.serial(st.FanOut(3), st.parallel(
        st.Tanh, st.Identity, st.Exp), st.FanOut(2),
        st.parallel(st.FanInSum, st.FanInConcat(axis=0))), X[:, 0]),
    "dropout": (lambda st: st.Dropout(0.6), X),
    "dropout_eval": (lambda st: st.Dropout(0.5, mode="test"), X),
    "max_pool": (lambda st: st.MaxPool((2, 2)), X),
    "max_pool_same": (lambda st: st.MaxPool((3, 2), (2, 1), "SAME"), X),
    "max_pool_same_lower": (lambda st: st.MaxPool((3, 3), (2, 2), "SAME_LOWER"), X),
    "max_pool_ties": (lambda st: st.MaxPool((3, 3), (1, 1), "SAME"), TIED),
    "max_pool_nchw": (lambda st: st.MaxPool((2, 3), (2, 2), "SAME", spec="NCHW"), NCHW),
    "sum_pool": (lambda st: st.SumPool((2, 3), (3, 2)), X),
    "sum_pool_same": (lambda st: st.SumPool((3, 2), (2, 1), "SAME"), X),
    "avg_pool": (lambda st: st.AvgPool((2, 2)), X),
    "avg_pool_same": (lambda st: st.AvgPool((3, 3), (2, 2), "SAME"), X),
    "avg_pool_nchw": (lambda st: st.AvgPool((2, 3), (2, 2), "SAME", spec="NCHW"), NCHW),
}
NAMES = sorted(LAYERS)
INPUTS = [LAYERS[name][1] for name in NAMES]


def _zoo(which: str) -> dict[str, Any]:
    """Every layer of LAYERS side by side: init shapes and params, outputs and gradients."""
    lib, st = LIBS[which]
    init, apply = st.parallel(*(LAYERS[name][0](st) for name in NAMES))
    shapes, params = _init(lib, init, lib.random.key(5), [x.shape for x in INPUTS])
    out, gp, gx = _apply_and_grad(lib, apply, params, INPUTS, 6)
    return {"shapes": shapes, "params": params, "out": out, "gp": gp, "gx": gx, "lib": lib}


@pytest.fixture(scope="module")
def zoo() -> dict[str, dict[str, Any]]:
    return {which: _zoo(which) for which in LIBS}


def _close(ours: list[np.ndarray], theirs: list[np.ndarray], rtol: float, atol: float) -> None:
    assert [a.shape for a in ours] == [b.shape for b in theirs]
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", NAMES)
def test_layer_init_matches_jax(zoo: dict[str, dict[str, Any]], name: str) -> None:
    k = NAMES.index(name)
    ours, theirs = zoo["spec"], zoo["jax"]
    assert _ints(ours["shapes"][k]) == _ints(theirs["shapes"][k])
    # spec's normal sampler (erf_inv) may round an ulp away from XLA's; near zero the ulp is
    # of the inverse error function's argument.
    _close(_leaves(spec, ours["params"][k]), _leaves(jax, theirs["params"][k]), 1e-6, 1e-7)


def _pooled_max(name: str) -> bool:
    return name.startswith("max_pool")


@pytest.mark.parametrize("name", NAMES)
def test_layer_outputs_and_gradients_match_jax(zoo: dict[str, dict[str, Any]], name: str
                                               ) -> None:
    k = NAMES.index(name)
    ours, theirs = zoo["spec"], zoo["jax"]
    if name != "fan_out_in":  # its output is a list of two arrays
        assert _ints(np.shape(theirs["out"][k])) == _ints(theirs["shapes"][k])
    got = [_leaves(spec, ours[part][k]) for part in ("out", "gp", "gx")]
    want = [_leaves(jax, theirs[part][k]) for part in ("out", "gp", "gx")]
    if _pooled_max(name):
        # A maximum is exact, and its gradient reaches the same (first) maximal element.
        for a, b in zip(sum(got, []), sum(want, [])):
            np.testing.assert_array_equal(a, b)
        return
    # Sums (XLA orders a window's additions its own way), transcendental kernels: rounding.
    for a, b in zip(got, want):
        _close(a, b, 2e-5, 2e-5)


def _network(st: Any) -> Any:
    """A small convolutional classifier over the kinds of layer above."""
    return st.serial(
        st.Conv(4, (3, 3), padding="SAME"), st.BatchNorm(), st.Relu,
        st.MaxPool((2, 2), (2, 2)), st.FanOut(2),
        st.parallel(st.AvgPool((3, 3), padding="SAME"), st.SumPool((2, 2), (1, 1), "SAME")),
        st.FanInConcat(), st.ConvTranspose(2, (2, 2), (2, 2)), st.Gelu, st.Flatten,
        st.Dense(5), st.Dropout(0.7), st.LogSoftmax)


def test_network_shapes_and_gradients_match_jax() -> None:
    """serial's key splitting and shape threading: JAX's shapes (traced, not compiled), and
    JAX's outputs and gradients at the same parameters."""
    ours = _network(spec_stax)
    shape, params = ours[0](spec.random.key(0), X.shape)
    theirs = _network(jax_stax)
    their_shape = []
    jax.eval_shape(lambda k: their_shape.append(theirs[0](k, X.shape)[0]), jax.random.key(0))
    assert _ints(shape) == _ints(their_shape[0])
    values = [np.asarray(p) for p in spec.tree.leaves(params)]
    their_params = jax.tree.unflatten(jax.tree.structure(jax.tree.map(np.asarray, params)),
                                      values)
    got = _apply_and_grad(spec, ours[1], params, X, 3)
    want = _apply_and_grad(jax, theirs[1], their_params, X, 3)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5, atol=1e-5)
    for a, b in zip(_leaves(spec, got[1:]), _leaves(jax, want[1:])):
        # The conv bias feeds BatchNorm, so its gradient is rounding noise around zero.
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3 * float(np.abs(b).max() + 1))


def test_dropout_needs_a_key_as_jax_says() -> None:
    errors = []
    for _, st in LIBS.values():
        with pytest.raises(ValueError) as info:
            st.Dropout(0.6)[1]((), X)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_aliases_are_the_nn_functions() -> None:
    assert spec_stax.glorot is spec_stax.glorot_normal
    assert spec_stax.randn is spec_stax.normal
    assert spec_stax.logsoftmax is spec.nn.log_softmax
    assert spec_stax.relu is spec.nn.relu and spec_stax.standardize is spec.nn.standardize
