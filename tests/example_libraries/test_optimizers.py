"""spec.example_libraries.optimizers against JAX's own jax.example_libraries.optimizers, run
live: the same gradients give the same parameters and states, schedules the same step sizes,
and misuse raises JAX's exception classes with its messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.example_libraries.optimizers as jax_opt
import numpy as np
import pytest
from jax._src import util as jax_util

import spec
import spec.example_libraries.optimizers as spec_opt
from spec.example_libraries import _util as spec_util
from tests.support.pair import class_and_message

LIBS = {"jax": (jax, jax_opt), "spec": (spec, spec_opt)}

# name -> maker(optimizers module) of the optimizer under test
OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "sgd": lambda o: o.sgd(0.1),
    "sgd_schedule": lambda o: o.sgd(o.exponential_decay(0.1, 2, 0.5)),
    "momentum": lambda o: o.momentum(0.1, 0.9),
    "nesterov": lambda o: o.nesterov(o.inverse_time_decay(0.1, 2, 0.5, staircase=True), 0.8),
    "adagrad": lambda o: o.adagrad(0.1),
    "rmsprop": lambda o: o.rmsprop(0.01, gamma=0.8),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.01),
    "adam": lambda o: o.adam(o.polynomial_decay(0.01, 3, 0.001)),
    "adamax": lambda o: o.adamax(0.01),
    "sm3": lambda o: o.sm3(0.1),
}

_rng = np.random.default_rng(0)


def _tree() -> dict[str, Any]:
    """Parameters with a matrix, a vector and a scalar leaf (sm3 treats ranks differently)."""
    return {"w": _rng.standard_normal((3, 4)).astype(np.float32),
            "b": [_rng.standard_normal(4).astype(np.float32), np.float32(0.5)]}


PARAMS = _tree()
# Gradients with a zero entry, so adagrad's and sm3's "never seen a gradient" branch runs.
GRADS = [_tree() for _ in range(4)]
GRADS[0]["w"][0, 0] = 0.0


def _leaves(lib: Any, tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in lib.tree.leaves(tree)]


def _train(which: str, name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    lib, opt = LIBS[which]
    init, update, get_params = OPTIMIZERS[name](opt)
    state = init(PARAMS)
    for i, g in enumerate(GRADS):
        state = update(i, g, state)
    return _leaves(lib, get_params(state)), _leaves(lib, state)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_same_gradients_give_jax_parameters_and_state(name: str) -> None:
    (ours, our_state), (theirs, their_state) = _train("spec", name), _train("jax", name)
    assert len(our_state) == len(their_state)
    for a, b in zip(ours + our_state, theirs + their_state):
        assert a.dtype == b.dtype and a.shape == b.shape
        # Equal bits but for an ulp where XLA's pow rounds differently from NumPy's.
        np.testing.assert_allclose(a, b, rtol=3e-7, atol=0)


def _jitted_steps(which: str) -> list[np.ndarray]:
    lib, opt = LIBS[which]
    init, update, get_params = opt.adam(opt.piecewise_constant([1, 2], [0.1, 0.01, 0.001]))

    def loss(p: Any) -> Any:
        return lib.numpy.sum(p["w"] ** 2) + lib.numpy.sum(p["b"][0] * 3.0) + p["b"][1] ** 2

    @lib.jit
    def step(i: Any, state: Any) -> Any:
        return update(i, lib.grad(loss)(get_params(state)), state)

    state = init(PARAMS)
    for i in range(4):
        state = step(i, state)
    return _leaves(lib, get_params(state))


def test_jitted_training_with_traced_step_index() -> None:
    for a, b in zip(_jitted_steps("spec"), _jitted_steps("jax")):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


SCHEDULES: dict[str, Callable[[Any], Any]] = {
    "constant": lambda o: o.constant(0.3),
    "exponential_decay": lambda o: o.exponential_decay(0.3, 4, 0.5),
    "inverse_time_decay": lambda o: o.inverse_time_decay(0.3, 4, 0.5),
    "inverse_time_staircase": lambda o: o.inverse_time_decay(0.3, 4, 0.5, staircase=True),
    "polynomial_decay": lambda o: o.polynomial_decay(0.3, 5, 0.01, power=2.0),
    "piecewise_constant": lambda o: o.piecewise_constant([2, 5], [1.0, 0.5, 0.25]),
    "make_schedule_scalar": lambda o: o.make_schedule(0.2),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_give_jax_step_sizes(name: str) -> None:
    ours = SCHEDULES[name](spec_opt)
    theirs = SCHEDULES[name](jax_opt)
    for i in range(8):
        a, b = np.asarray(ours(i)), np.asarray(theirs(i))
        assert a.dtype == b.dtype, (i, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_make_schedule_passes_callables_through() -> None:
    schedule = spec_opt.exponential_decay(1.0, 2, 0.5)
    assert spec_opt.make_schedule(schedule) is schedule




@pytest.mark.parametrize("case", [
    "vector_step_size", "boundaries_matrix", "boundaries_length", "wrong_grad_tree",
    "state_structure_changed",
])
def test_misuse_raises_jax_errors(case: str) -> None:
    def make(o: Any) -> Callable[[], Any]:
        if case == "vector_step_size":
            return lambda: o.make_schedule(np.ones(2))
        if case == "boundaries_matrix":
            return lambda: o.piecewise_constant([[1, 2]], [1.0, 2.0, 3.0])
        if case == "boundaries_length":
            return lambda: o.piecewise_constant([1, 2], [1.0, 2.0])
        if case == "wrong_grad_tree":
            init, update, _ = o.sgd(0.1)
            return lambda: update(0, [np.ones(2)], init((np.ones(2),)))

        @o.optimizer
        def growing(step_size: float) -> Any:
            return (lambda x: (x,), lambda i, g, s: (s[0], s[0]), lambda s: s[0])
        init, update, _ = growing(0.1)
        return lambda: update(0, np.ones(2), init(np.ones(2)))

    assert class_and_message(make(spec_opt)) == class_and_message(make(jax_opt))


def test_l2_norm_and_clip_grads() -> None:
    for max_norm in (0.5, 100.0):
        ours = spec_opt.clip_grads(GRADS[1], max_norm)
        theirs = jax_opt.clip_grads(GRADS[1], max_norm)
        for a, b in zip(_leaves(spec, ours), _leaves(jax, theirs)):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    a, b = np.asarray(spec_opt.l2_norm(GRADS[1])), np.asarray(jax_opt.l2_norm(GRADS[1]))
    assert a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_optimizer_state_is_a_pytree_of_its_packed_state() -> None:
    for lib, opt in LIBS.values():
        state = opt.momentum(0.1, 0.9).init_fn(PARAMS)
        leaves, treedef = lib.tree.flatten(state)
        assert len(leaves) == 6 and treedef.num_leaves == 6
        rebuilt = lib.tree.unflatten(treedef, leaves)
        assert isinstance(rebuilt, opt.OptimizerState)
        assert rebuilt.tree_def == state.tree_def
        assert opt.Optimizer._fields == ("init_fn", "update_fn", "params_fn")
        assert opt.OptimizerState._fields == ("packed_state", "tree_def", "subtree_defs")


def test_unpack_then_pack_restores_the_state_and_marks_joins() -> None:
    for lib, opt in LIBS.values():
        state = opt.adam(0.1).init_fn(PARAMS)
        marked = opt.unpack_optimizer_state(state)
        joins = lib.tree.leaves(marked, is_leaf=lambda x: isinstance(x, opt.JoinPoint))
        assert [type(j).__name__ for j in joins] == ["JoinPoint"] * 3
        assert len(list(joins[0])) == 1
        packed = opt.pack_optimizer_state(marked)
        assert packed.tree_def == state.tree_def
        assert packed.subtree_defs == state.subtree_defs
        for a, b in zip(_leaves(lib, packed), _leaves(lib, state)):
            np.testing.assert_array_equal(a, b)


def test_list_helpers_behave_as_jax_util() -> None:
    for ours, theirs in [(spec_util, jax_util), (spec_opt, jax_opt)]:
        assert ours.safe_map(lambda a, b: a + b, [1, 2], (3, 4)) == \
            theirs.safe_map(lambda a, b: a + b, [1, 2], (3, 4))
        assert ours.safe_zip([1, 2], "ab") == theirs.safe_zip([1, 2], "ab")
        assert ours.unzip2([(1, "a"), (2, "b")]) == theirs.unzip2([(1, "a"), (2, "b")])
        assert ours.unzip2([]) == theirs.unzip2([])
    assert class_and_message(lambda: spec_util.safe_zip([1], [1, 2])) == \
        class_and_message(lambda: jax_util.safe_zip([1], [1, 2]))
    assert class_and_message(lambda: spec_util.safe_zip())[0] is \
        class_and_message(lambda: jax_util.safe_zip())[0]
    assert class_and_message(lambda: spec_util.safe_map(print, [1], [1, 2]))[0] is ValueError
    assert spec_opt.map is spec_util.safe_map and spec_opt.zip is spec_util.safe_zip
