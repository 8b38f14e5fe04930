"""``jax.example_libraries.optimizers``: first-order optimizers as ``(init, update,
get_params)`` triples over pytrees of arrays, step-size schedules, and gradient utilities.

An optimizer is written for one array (its state a small pytree of arrays) and lifted by
:func:`optimizer` to any pytree of parameters: the parameters are flattened, each leaf gets its
own state, and the flattened states travel in an :class:`OptimizerState` together with the
tree structures needed to rebuild them.  Every update formula below follows JAX's operation
order, so float results agree bit for bit with JAX's library on the same inputs.
"""

from __future__ import annotations

import functools
from collections import namedtuple  # noqa: F401  (a name JAX's module has)
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

import spec as jax
import spec.numpy as jnp
from spec.example_libraries._util import safe_map, safe_zip, unzip2

map = safe_map
zip = safe_zip

Array = Any
Params = Any
State = Any
Updates = Params
Step = int
Schedule = Callable[[Step], float]


class OptimizerState(NamedTuple):
    """The per-leaf states, flattened, with the parameter tree and each state's own tree."""

    packed_state: Any
    tree_def: Any
    subtree_defs: Any


def _state_children(state: OptimizerState) -> tuple[tuple[Any], tuple[Any, Any]]:
    # Only the arrays are children: the two tree structures are static data.
    return (state.packed_state,), (state.tree_def, state.subtree_defs)


def _state_from(aux: tuple[Any, Any], children: tuple[Any, ...]) -> OptimizerState:
    return OptimizerState(children[0], aux[0], aux[1])


jax.tree_util.register_pytree_node(OptimizerState, _state_children, _state_from)

InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    """The three functions of an optimizer over pytrees."""

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


LeafTriple = tuple[Callable[[Array], State], Callable[[Step, Array, State], State],
                   Callable[[State], Array]]


def _mismatch(what: str, want: Any, got: Any) -> TypeError:
    return TypeError(what.format(want, got))


def optimizer(opt_maker: Callable[..., LeafTriple]) -> Callable[..., Optimizer]:
    """Lift a maker of per-array ``(init, update, get_params)`` to one over pytrees."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Params) -> OptimizerState:
            leaves, tree = jax.tree.flatten(x0_tree)
            flat_states, state_trees = unzip2(map(jax.tree.flatten, map(init, leaves)))
            return OptimizerState(flat_states, tree, state_trees)

        @functools.wraps(update)
        def tree_update(i: Step, grad_tree: Updates, opt_state: OptimizerState
                        ) -> OptimizerState:
            flat_states, tree, state_trees = opt_state
            grads, grad_tree_def = jax.tree.flatten(grad_tree)
            if grad_tree_def != tree:
                raise _mismatch(
                    "optimizer update function was passed a gradient tree that did not "
                    "match the parameter tree structure with which it was initialized: "
                    "parameter tree {} and grad tree {}.", tree, grad_tree_def)
            states = map(jax.tree.unflatten, state_trees, flat_states)
            new_flat, new_trees = unzip2(
                map(jax.tree.flatten, map(partial(update, i), grads, states)))
            for before, after in zip(state_trees, new_trees):
                if before != after:
                    raise _mismatch(
                        "optimizer update function produced an output structure that did "
                        "not match its input structure: input {} and output {}.",
                        before, after)
            return OptimizerState(new_flat, tree, state_trees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Params:
            flat_states, tree, state_trees = opt_state
            states = map(jax.tree.unflatten, state_trees, flat_states)
            return jax.tree.unflatten(tree, map(get_params, states))

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


def _first(state: State) -> Array:
    return state[0]


@optimizer
def sgd(step_size: float | Schedule) -> LeafTriple:
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    rate = make_schedule(step_size)

    def init(x0: Array) -> State:
        return x0

    def update(i: Step, g: Array, x: State) -> State:
        return x - rate(i) * g

    def get_params(x: State) -> Array:
        return x

    return init, update, get_params


def _with_zeros(count: int) -> Callable[[Array], State]:
    """The init of an optimizer whose state is the parameter and ``count`` zero arrays."""
    def init(x0: Array) -> State:
        return (x0, *(jnp.zeros_like(x0) for _ in range(count)))
    return init


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> LeafTriple:
    """SGD with momentum: the velocity ``mass * v + g`` moves the parameter."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, velocity = state
        velocity = mass * velocity + g
        return x - rate(i) * velocity, velocity

    return _with_zeros(1), update, _first


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> LeafTriple:
    """SGD with Nesterov momentum: the step looks ahead along the new velocity."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, velocity = state
        velocity = mass * velocity + g
        return x - rate(i) * (mass * velocity + g), velocity

    return _with_zeros(1), update, _first


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9) -> LeafTriple:
    """Adagrad (Duchi et al. 2011) with momentum on the scaled gradient."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        # A coordinate that has seen only zero gradients takes no step (not 0 * inf).
        inv_root = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * inv_root) + momentum * m
        return x - rate(i) * m, g_sq, m

    return _with_zeros(2), update, _first


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8
            ) -> LeafTriple:
    """RMSProp: the gradient over the root of a running mean of its square."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, mean_sq = state
        mean_sq = mean_sq * gamma + jnp.square(g) * (1. - gamma)
        return x - rate(i) * g / jnp.sqrt(mean_sq + eps), mean_sq

    return _with_zeros(1), update, _first


@optimizer
def rmsprop_momentum(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> LeafTriple:
    """RMSProp whose scaled steps accumulate in a momentum term."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, mean_sq, mom = state
        mean_sq = mean_sq * gamma + jnp.square(g) * (1. - gamma)
        mom = momentum * mom + rate(i) * g / jnp.sqrt(mean_sq + eps)
        return x - mom, mean_sq, mom

    return _with_zeros(2), update, _first


def _bias_correction(beta: float, dtype: Any, i: Step) -> Array:
    """``1 - beta ** (i + 1)`` with beta in the moment's dtype (step ``i`` counts from 0)."""
    return 1 - jnp.asarray(beta, dtype) ** (i + 1)


@optimizer
def adam(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
         ) -> LeafTriple:
    """Adam (Kingma and Ba 2015): bias-corrected first and second moment estimates."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / _bias_correction(b1, m.dtype, i)
        v_hat = v / _bias_correction(b2, m.dtype, i)
        return x - rate(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    return _with_zeros(2), update, _first


@optimizer
def adamax(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
           ) -> LeafTriple:
    """AdaMax: Adam with the second moment replaced by a decaying infinity norm."""
    rate = make_schedule(step_size)

    def update(i: Step, g: Array, state: State) -> State:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (rate(i) / _bias_correction(b1, m.dtype, i)) * m / (u + eps)
        return x, m, u

    return _with_zeros(2), update, _first


def _along(ndim: int, v: Array, axis: int) -> Array:
    """The vector ``v`` as an ``ndim``-dimensional array varying only along ``axis``.

    A scalar parameter's gradient has ``ndim`` 0 while its state is one-dimensional: the
    slice then replaces nothing and is appended, leaving ``v`` as it is.
    """
    index: list[slice | None] = [None] * ndim
    index[axis:axis + 1] = [slice(None)]
    return v[tuple(index)]


def _all_axes_but(ndim: int, axis: int) -> tuple[int, ...]:
    return tuple(a for a in range(ndim) if a != axis)


@optimizer
def sm3(step_size: float | Schedule, momentum: float = 0.9) -> LeafTriple:
    """SM3 (Anil et al. 2019): one accumulator vector per axis instead of one per entry."""
    rate = make_schedule(step_size)

    def init(x0: Array) -> State:
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        covers = [jnp.zeros(size, dtype=x0.dtype) for size in x0.shape]
        return x0, jnp.zeros_like(x0), covers, shape

    def update(i: Step, g: Array, state: State) -> State:
        x, m, covers, shape = state
        spread = [_along(g.ndim, v, axis) for axis, v in enumerate(covers)]
        accum = functools.reduce(jnp.minimum, spread) + jnp.square(g)
        inv_root = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
        m = (1. - momentum) * (g * inv_root) + momentum * m
        x = x - rate(i) * m
        covers = [accum.max(_all_axes_but(x.ndim, axis)) for axis in range(x.ndim)]
        return x, m, covers, shape

    def get_params(state: State) -> Array:
        x, _, _, shape = state
        return x.reshape(shape)

    return init, update, get_params


def constant(step_size: Any) -> Schedule:
    """The same step size at every step."""
    def schedule(i: Step) -> Any:
        return step_size
    return schedule


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    def schedule(i: Step) -> Any:
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)``, with ``i / decay_steps`` floored
    when ``staircase``."""
    def smooth(i: Step) -> Any:
        return step_size / (1 + decay_rate * i / decay_steps)

    def stairs(i: Step) -> Any:
        return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))

    return stairs if staircase else smooth


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` along ``(1 - i / decay_steps) ** power``,
    constant after ``decay_steps``."""
    def schedule(step_num: Step) -> Any:
        clipped = jnp.minimum(step_num, decay_steps)
        fraction_left = (1 - clipped / decay_steps) ** power
        return fraction_left * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for steps past exactly ``k`` of the ``boundaries``."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i: Step) -> Any:
        return values[jnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule as given, or a scalar as the constant schedule; TypeError otherwise."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


def l2_norm(tree: Any) -> Array:
    """The Euclidean norm of all of a pytree's leaves taken together."""
    leaves, _ = jax.tree.flatten(tree)
    # Python's sum starts from the integer 0, as JAX's library does: the dtype follows leaves.
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """Scale the gradients down to global norm ``max_norm`` when their norm reaches it."""
    norm = l2_norm(grad_tree)

    def clip(g: Array) -> Array:
        return jnp.where(norm < max_norm, g, g * (max_norm / norm))

    return jax.tree.map(clip, grad_tree)


class JoinPoint:
    """A leaf of the parameter tree that holds that parameter's own state tree.

    Iterable over its one subtree, so that serialisers which walk containers reach it.
    """

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self) -> Iterator[Any]:
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The state as the parameter tree with a :class:`JoinPoint` of state at each leaf."""
    flat_states, tree, state_trees = opt_state
    subtrees = map(jax.tree.unflatten, state_trees, flat_states)
    return jax.tree.unflatten(tree, [JoinPoint(subtree) for subtree in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of :func:`unpack_optimizer_state`."""
    joins, tree = jax.tree.flatten(marked_pytree)
    assert all(isinstance(j, JoinPoint) for j in joins)
    flat_states, state_trees = unzip2(map(jax.tree.flatten, [j.subtree for j in joins]))
    return OptimizerState(flat_states, tree, state_trees)


__all__ = [
    "Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn",
    "Schedule", "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax",
    "clip_grads", "constant", "exponential_decay", "inverse_time_decay", "l2_norm",
    "make_schedule", "momentum", "nesterov", "optimizer", "pack_optimizer_state",
    "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state",
]
