# The implementation under test arrives as `jax: Any`, so `@jax.jit` is an untyped decorator by
# design; the docs are restated with decorator syntax all the same.
# mypy: disable-error-code="untyped-decorator"
"""Examples of JAX's introductory documentation, restated as conformance cases.

Sources (jax-ml/jax docs): new_docs/101/arrays.md, new_docs/101/pytrees.md,
new_docs/101/transformations.md (tracing and jit parts), new_docs/101/errors.rst (the examples
in the docstrings of jax.errors), new_docs/201/jit.md, key-concepts.md, jit-compilation.md,
jaxpr.md, tracing.md, pytrees.md, custom_pytrees.md and notebooks/thinking_in_jax.md.
Each example is re-expressed as a small program; real JAX supplies the expected results.
Printed tracers (``print(x)`` inside jit) are recorded through ``str(jax.typeof(x))``, since the
tracer's own repr is an implementation detail.

Skipped here (covered by later issues or outside the scope of spec): everything using grad,
vmap, jacobian/jvp/vjp, random keys, sharding/devices (``x.sharding``, ``x.devices()``), refs
(``jax.new_ref``, 101/state.md), buffer donation, async-dispatch timing, ``jax.debug.print``,
``jax_explain_cache_misses`` logging, ``jax.checking_leaks``, callbacks, pallas, and the
control-flow primitives (cond/switch/while_loop/fori_loop/scan) of jaxpr.md.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from typing import Any, NamedTuple

import numpy as np

from conformance.registry import capture, case

# Module-level so that the printed treedefs name a stable class.
ATuple = collections.namedtuple("ATuple", ("name",))
Point = collections.namedtuple("Point", ["x", "y"])


class Params(NamedTuple):
    a: int
    b: float


class MyOtherContainer(NamedTuple):
    name: str
    a: Any
    b: Any


def _selu(jnp: Any) -> Any:
    def selu(x: Any, alpha: float = 1.67, lambda_: float = 1.05) -> Any:
        return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    return selu


# -- 101/arrays.md ------------------------------------------------------------------------------


@case
def arrays_numpy_like_ops(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(9.0).reshape(3, 3)
    y = jnp.ones(3)
    return x @ y, x.sum(axis=0), x[1, :2]


@case
def arrays_isinstance_and_typeof(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(9.0).reshape(3, 3)
    return isinstance(x, jax.Array), str(jax.typeof(x)), str(jax.typeof(jnp.arange(3)))


@case(raises=TypeError)
def arrays_item_assignment_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(10)
    x[0] = 10
    return x


@case
def arrays_at_set_is_functional(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(10)
    y = x.at[0].set(10)
    return x, y


@case
def arrays_at_add_and_max(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(10)
    return x.at[3].add(100), x.at[:3].max(5), x.at[2].multiply(3), x.at[5:].min(6)


@case
def arrays_default_float_dtype(jax: Any, jnp: Any, lax: Any) -> Any:
    return np.array([1.0, 2.0]).dtype, jnp.array([1.0, 2.0]).dtype, jnp.array([1.0, 2.0])


@case
def arrays_int_plus_python_float(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jnp.arange(3) + 1.5
    return r.dtype, r


@case
def arrays_out_of_bounds_read_clamps(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(10)
    return x[11], x[-12], x[jnp.array([0, 11, 20])]


@case
def arrays_out_of_bounds_write_dropped(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(10)
    return x.at[11].set(99), x.at[jnp.array([1, 12])].add(5)




@case(ulp=2)
def arrays_sin_via_lax(jax: Any, jnp: Any, lax: Any) -> Any:
    # jnp.sin as a thin wrapper: accept Python numbers, promote integers, then lax.sin.
    def my_sin(x: Any) -> Any:
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            x = x.astype(float)
        return lax.sin(x)

    xs = jnp.arange(4)
    return (my_sin(xs), jnp.sin(xs), my_sin(2), str(jax.make_jaxpr(jnp.sin)(xs)),
            str(jax.make_jaxpr(my_sin)(xs)))


@case
def arrays_jnp_add_promotes(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.add(1, 1.0)


@case(raises=TypeError)
def arrays_lax_add_requires_same_types(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.add(1, 1.0)


# -- key-concepts.md ----------------------------------------------------------------------------


@case(ulp=4)
def key_concepts_selu_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    selu = _selu(jnp)
    return jax.jit(selu)(1.0), jax.jit(selu)(jnp.arange(-2.0, 3.0))


@case
def key_concepts_tracer_inside_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    seen: list[str] = []

    @jax.jit
    def f(x: Any) -> Any:
        seen.append(str(jax.typeof(x)))  # what print(x) would reveal: the abstract type
        return x + 1

    return f(jnp.arange(5)), seen


@case
def key_concepts_selu_jaxpr(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(_selu(jnp))(jnp.arange(5.0)))


@case
def key_concepts_pytree_list(jax: Any, jnp: Any, lax: Any) -> Any:
    params = [1, 2, (jnp.arange(3), jnp.ones(2))]
    return str(jax.tree.structure(params)), jax.tree.leaves(params)


@case
def key_concepts_pytree_dict(jax: Any, jnp: Any, lax: Any) -> Any:
    params = {"n": 5, "W": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    return str(jax.tree.structure(params)), jax.tree.leaves(params)


@case
def key_concepts_pytree_namedtuple(jax: Any, jnp: Any, lax: Any) -> Any:
    params = Params(1, 5.0)
    return str(jax.tree.structure(params)), jax.tree.leaves(params)


@case
def key_concepts_lax_explicit_promotion(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.add(jnp.float32(1), 1.0)


@case
def key_concepts_jnp_convolve(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.convolve(jnp.array([1, 2, 1]), jnp.ones(10))


@case
def key_concepts_lax_conv_general_dilated(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.array([1, 2, 1])
    y = jnp.ones(10)
    out = lax.conv_general_dilated(
        x.reshape(1, 1, 3).astype(float), y.reshape(1, 1, 10),
        window_strides=(1,), padding=[(9, 9)])
    return out[0, 0]


# -- 101/transformations.md: tracing, jaxprs, jit -----------------------------------------------


@case
def transformations_trace_jaxpr(jax: Any, jnp: Any, lax: Any) -> Any:
    def g(x: Any) -> Any:
        return jnp.sin(x) * 2.0

    return str(jax.jit(g).trace(1.0).jaxpr)


def _convolve(jnp: Any) -> Any:
    def convolve(x: Any, w: Any) -> Any:
        output = []
        for i in range(1, len(x) - 1):  # unrolled at trace time
            output.append(jnp.dot(x[i - 1:i + 2], w))
        return jnp.array(output)

    return convolve


@case
def transformations_convolve_python_loop(jax: Any, jnp: Any, lax: Any) -> Any:
    convolve = _convolve(jnp)
    x = jnp.arange(5.0)
    w = jnp.array([2.0, 3.0, 4.0])
    return convolve(x, w), jax.jit(convolve)(x, w), str(jax.jit(convolve).trace(x, w).jaxpr)


@case
def transformations_manually_batched_convolve(jax: Any, jnp: Any, lax: Any) -> Any:
    convolve = _convolve(jnp)

    def manually_batched(xs: Any, ws: Any) -> Any:
        return jnp.stack([convolve(xs[i], ws[i]) for i in range(xs.shape[0])])

    x = jnp.arange(5.0)
    w = jnp.array([2.0, 3.0, 4.0])
    xs, ws = jnp.stack([x, x]), jnp.stack([w, w])
    return manually_batched(xs, ws), str(jax.jit(manually_batched).trace(xs, ws).jaxpr)



@case
def transformations_where_instead_of_branch(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: jnp.where(x > 0, x, -x))(jnp.arange(-2.0, 3.0))


@case
def transformations_sum_sq_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def sum_sq(x: Any) -> Any:
        return jnp.sum(x ** 2)

    return sum_sq(jnp.arange(3.0)), str(jax.make_jaxpr(sum_sq)(jnp.arange(3.0)))


# -- 201/jit.md and jit-compilation.md ----------------------------------------------------------


def _log2_if_rank_2(jnp: Any) -> Any:
    def log2_if_rank_2(x: Any) -> Any:
        if x.ndim == 2:
            return jnp.log(x) / jnp.log(2.0)
        return x

    return log2_if_rank_2


@case
def jit_rank_branch_jaxpr(jax: Any, jnp: Any, lax: Any) -> Any:
    f = _log2_if_rank_2(jnp)
    x1 = jnp.array([1, 2, 3])
    return (str(jax.jit(f).trace(x1).jaxpr), str(jax.make_jaxpr(f)(x1)),
            str(jax.make_jaxpr(f)(jnp.array([[1.0, 2.0], [4.0, 8.0]]))))


@case(ulp=2)
def jit_rank_branch_values(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(_log2_if_rank_2(jnp))
    return f(jnp.array([1, 2, 3])), f(jnp.array([[1.0, 2.0], [4.0, 8.0]]))


def _branchy(x: Any) -> Any:
    if x > 0:
        return x
    return 2 * x


def _count_up(x: Any, n: Any) -> Any:
    i = 0
    while i < n:
        i += 1
    return x + i


@case(raises="TracerBoolConversionError")
def jit_if_on_value_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(_branchy)(10)


@case(raises="TracerBoolConversionError")
def jit_while_on_value_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(_count_up)(10, 20)


@case
def jit_inner_loop_body(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def loop_body(prev_i: Any) -> Any:
        return prev_i + 1

    def g_inner_jitted(x: Any, n: Any) -> Any:
        i = 0
        while i < n:
            i = loop_body(i)
        return x + i

    return g_inner_jitted(10, 20)


@case
def jit_static_argnums(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(_branchy, static_argnums=0)
    return f(10), f(-3)


@case
def jit_static_argnames(jax: Any, jnp: Any, lax: Any) -> Any:
    g = jax.jit(_count_up, static_argnames=["n"])
    return g(10, 20), g(10, n=3)


@case
def jit_decorator_factory(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit(static_argnames=["n"])
    def g(x: Any, n: Any) -> Any:
        i = 0
        while i < n:
            i += 1
        return x + i

    return g(10, 20)


@case
def jit_fresh_partial_and_lambda(jax: Any, jnp: Any, lax: Any) -> Any:
    # Same values whichever way jit is applied inside the loop (only compile counts differ).
    def body(prev_i: Any) -> Any:
        return prev_i + 1

    def loop(make: Any) -> Any:
        i = 0
        while i < 4:
            i = make()(i)
        return 10 + i

    return (loop(lambda: jax.jit(functools.partial(body))),
            loop(lambda: jax.jit(lambda v: body(v))),
            loop(lambda: jax.jit(body)))


@case
def jit_cache_keyed_on_types(jax: Any, jnp: Any, lax: Any) -> Any:
    traces: list[str] = []

    @jax.jit
    def double(x: Any) -> Any:
        traces.append(str(jax.typeof(x)))
        return 2 * x

    outs = [double(jnp.arange(3)), double(jnp.arange(3)), double(jnp.arange(3.0))]
    return outs, traces


@case
def jit_compilation_side_effect_not_in_jaxpr(jax: Any, jnp: Any, lax: Any) -> Any:
    global_list: list[Any] = []

    def log2(x: Any) -> Any:
        global_list.append(x)
        return jnp.log(x) / jnp.log(2.0)

    text = str(jax.make_jaxpr(log2)(3.0))
    return text, len(global_list), str(jax.typeof(global_list[0]))


# -- jaxpr.md -----------------------------------------------------------------------------------


def _func1(jnp: Any) -> Any:
    def func1(first: Any, second: Any) -> Any:
        temp = first + jnp.sin(second) * 3.0
        return jnp.sum(temp)

    return func1


@case
def jaxpr_func1(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(_func1(jnp))(jnp.zeros(8), jnp.ones(8)))


@case
def jaxpr_python_calls_and_branches_inlined(jax: Any, jnp: Any, lax: Any) -> Any:
    def func2(inner: Any, first: Any, second: Any) -> Any:
        temp = first + inner(second) * 3.0
        return jnp.sum(temp)

    def inner(second: Any) -> Any:
        if second.shape[0] > 4:
            return jnp.sin(second)
        raise AssertionError("not reached for shape (8,)")

    def func3(first: Any, second: Any) -> Any:
        return func2(inner, first, second)

    t3 = str(jax.make_jaxpr(func3)(jnp.zeros(8), jnp.ones(8)))
    t1 = str(jax.make_jaxpr(_func1(jnp))(jnp.zeros(8), jnp.ones(8)))
    return t3, t3 == t1


@case
def jaxpr_pytree_argument_flattened(jax: Any, jnp: Any, lax: Any) -> Any:
    def func4(arg: Any) -> Any:
        temp = arg[0] + jnp.sin(arg[1]) * 3.0
        return jnp.sum(temp)

    return str(jax.make_jaxpr(func4)((jnp.zeros(8), jnp.ones(8))))


@case
def jaxpr_constvars_hoisted(jax: Any, jnp: Any, lax: Any) -> Any:
    c = jnp.array([1.0, 2.0, 3.0])
    return (str(jax.make_jaxpr(lambda x: x * c + 2.0)(jnp.ones(3))),
            str(jax.make_jaxpr(lambda x: x - np.array([0.5, 1.5, 2.5], np.float32))(jnp.ones(3))))


@case
def jaxpr_nested_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    def func12(arg: Any) -> Any:
        @jax.jit
        def inner(x: Any) -> Any:
            return x + arg * jnp.ones(1)

        return arg + inner(arg - 2.0)

    return str(jax.make_jaxpr(func12)(1.0)), func12(1.0)


# -- tracing.md ---------------------------------------------------------------------------------


_TR_X = np.arange(12, dtype=np.float64).reshape(3, 4) - 5.0
_TR_Y = np.array([1.0, -2.0, 0.5, 3.0])


@case
def tracing_dot_jit_and_jaxpr(jax: Any, jnp: Any, lax: Any) -> Any:
    seen: list[str] = []

    def f(x: Any, y: Any) -> Any:
        seen.append(f"{jax.typeof(x)} {jax.typeof(y)}")
        return jnp.dot(x + 1, y + 1)

    jf = jax.jit(f)
    r1 = jf(_TR_X, _TR_Y)
    r2 = jf(_TR_X * 2, _TR_Y)  # same types: no retrace
    traced_types = list(seen)  # make_jaxpr below may or may not reuse jit's trace cache
    return r1, r2, traced_types, str(jax.make_jaxpr(f)(_TR_X, _TR_Y))


@case(raises="TracerBoolConversionError")
def tracing_traced_flag_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x, neg: -x if neg else x)(1, True)


@case
def tracing_static_flag(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit(static_argnums=(1,))
    def f(x: Any, neg: Any) -> Any:
        return -x if neg else x

    return f(1, True), f(1, False)


@case(raises=TypeError)
def tracing_shape_from_jnp_is_traced(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def f(x: Any) -> Any:
        return x.reshape(jnp.array(x.shape).prod())

    return f(jnp.ones((2, 3)))


@case
def tracing_shape_from_np_is_static(jax: Any, jnp: Any, lax: Any) -> Any:
    seen: list[Any] = []

    @jax.jit
    def f(x: Any) -> Any:
        seen.append(x.shape)
        return x.reshape((np.prod(x.shape),))

    return f(jnp.ones((2, 3))), seen


@case
def tracing_divide_static_denominator(jax: Any, jnp: Any, lax: Any) -> Any:
    def divide(x: Any, y: Any) -> Any:
        return x / y if y >= 1.0 else 0.0

    d = jax.jit(divide, static_argnums=1)
    return d(3.0, 2.0), d(3.0, 0.5), capture(jax.jit(divide), 3.0, 2.0)


# -- notebooks/thinking_in_jax.md ---------------------------------------------------------------


@case(ulp=4)
def thinking_norm_eager_and_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    def norm(x: Any) -> Any:
        x = x - x.mean(0)
        return x / x.std(0)

    # Integer data over 4 rows keeps the column means exact, so only sqrt/divide round.
    data = jnp.array(np.random.default_rng(1701).integers(0, 10, (4, 3)), dtype=jnp.float32)
    return norm(data), jax.jit(norm)(data)


_NEG_X = np.array([0.5, -1.25, 2.0, -0.75, 0.0, -3.5], dtype=np.float32)


@case
def thinking_boolean_mask_eager(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.asarray(_NEG_X)
    return x[x < 0]


@case(raises="NonConcreteBooleanIndexError")
def thinking_boolean_mask_jit_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: x[x < 0])(jnp.asarray(_NEG_X))


@case(ulp=2)
def thinking_trace_time_print(jax: Any, jnp: Any, lax: Any) -> Any:
    seen: list[str] = []

    @jax.jit
    def f(x: Any) -> Any:
        seen.append(str(jax.typeof(x)))
        y = jnp.sin(x)
        seen.append(str(jax.typeof(y)))
        return y

    return f(2.0), f(3.0), seen


# -- new_docs/101/pytrees.md, pytrees.md, custom_pytrees.md ---------------------------------------


@case
def pytrees_leaf_counts(jax: Any, jnp: Any, lax: Any) -> Any:
    trees = [
        [1, "a", object()],
        (1, (2, 3), ()),
        [1, {"k1": 2, "k2": (3, 4)}, 5],
        {"a": 2, "b": (2, 3)},
        jnp.array([1, 2, 3]),
    ]
    leaves = [jax.tree.leaves(t) for t in trees]
    # object() itself cannot be compared across implementations: record only its type.
    leaves[0] = [leaves[0][0], leaves[0][1], type(leaves[0][2]).__name__]
    return [len(lv) for lv in leaves], leaves


@case
def pytrees_flatten_unflatten(jax: Any, jnp: Any, lax: Any) -> Any:
    params = {"W": jnp.zeros((2, 3)), "b": jnp.zeros(3)}
    leaves, treedef = jax.tree.flatten(params)
    return leaves, str(treedef), jax.tree.unflatten(treedef, leaves)


@case
def pytrees_map_single_and_multiple(jax: Any, jnp: Any, lax: Any) -> Any:
    lol = [[1, 2, 3], [1, 2], [1, 2, 3, 4]]
    return jax.tree.map(lambda x: x * 2, lol), jax.tree.map(lambda x, y: x + y, lol, lol)


@case
def pytrees_map_shapes(jax: Any, jnp: Any, lax: Any) -> Any:
    params = [
        {"weights": np.ones((1, 4)), "biases": np.ones((4,))},
        {"weights": np.ones((4, 4)), "biases": np.ones((4,))},
        {"weights": np.ones((4, 1)), "biases": np.ones((1,))},
    ]
    return jax.tree.map(lambda x: x.shape, params)


@case
def pytrees_reduce_and_structure(jax: Any, jnp: Any, lax: Any) -> Any:
    tree = {"a": 1, "b": (2, 3), "c": [jnp.float32(4.0)]}
    return (jax.tree.reduce(operator.add, tree), jax.tree.reduce(operator.add, tree, 10),
            str(jax.tree.structure(tree)))


@case
def pytrees_key_paths(jax: Any, jnp: Any, lax: Any) -> Any:
    tree = [1, {"k1": 2, "k2": (3, 4)}, ATuple("foo")]
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return ([(jax.tree_util.keystr(kp), v) for kp, v in flat],
            [repr(kp) for kp, _ in flat])


@case
def pytrees_map_with_path(jax: Any, jnp: Any, lax: Any) -> Any:
    tree = {"x": [1, 2], "y": ATuple(3)}
    return jax.tree_util.tree_map_with_path(
        lambda kp, v: f"{jax.tree_util.keystr(kp)}={v}", tree)


class _Special:
    def __init__(self, x: Any, y: Any) -> None:
        self.x = x
        self.y = y


@case
def pytrees_unregistered_class_is_leaf(jax: Any, jnp: Any, lax: Any) -> Any:
    leaves = jax.tree.leaves([_Special(0, 1), _Special(2, 4)])
    names = [type(v).__name__ for v in leaves]
    return len(leaves), names, str(jax.tree_util.tree_structure(object))


@case(raises=TypeError)
def pytrees_map_over_unregistered_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.tree.map(lambda x: x + 1, [_Special(0, 1), _Special(2, 4)])


@case
def pytrees_register_pytree_node(jax: Any, jnp: Any, lax: Any) -> Any:
    # A fresh class per run: each implementation keeps its own registry.
    class RegisteredSpecial(_Special):
        def __repr__(self) -> str:
            return f"RegisteredSpecial(x={self.x}, y={self.y})"

    def flatten(v: Any) -> Any:
        return (v.x, v.y), None

    def unflatten(aux: Any, children: Any) -> Any:
        return RegisteredSpecial(*children)

    jax.tree_util.register_pytree_node(RegisteredSpecial, flatten, unflatten)
    out = jax.tree.map(lambda x: x + 1, [RegisteredSpecial(0, 1), RegisteredSpecial(2, 4)])
    return repr(out), str(jax.tree.structure(out)), jax.tree.leaves(out)


@case
def pytrees_register_pytree_node_class(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.tree_util.register_pytree_node_class
    class RegisteredSpecial2(_Special):
        def __repr__(self) -> str:
            return f"RegisteredSpecial2(x={self.x}, y={self.y})"

        def tree_flatten(self) -> Any:
            return (self.x, self.y), None

        @classmethod
        def tree_unflatten(cls, aux: Any, children: Any) -> Any:
            return cls(*children)

    value = RegisteredSpecial2(1.0, 2.0)
    flat, tree = jax.tree_util.tree_flatten(value)
    back = jax.tree_util.tree_unflatten(tree, flat)
    return flat, str(tree), repr(back), repr(jax.tree.map(lambda v: v * 3, value))


@case
def pytrees_namedtuple_fields_are_children(jax: Any, jnp: Any, lax: Any) -> Any:
    tree = [MyOtherContainer("Alice", 1, 2), MyOtherContainer("Bob", 4, 5)]
    return jax.tree.leaves(tree), str(jax.tree.structure(tree))


@case
def pytrees_register_dataclass(jax: Any, jnp: Any, lax: Any) -> Any:
    @functools.partial(jax.tree_util.register_dataclass,
                       data_fields=["a", "b"], meta_fields=["name"])
    @dataclasses.dataclass
    class MyDataclassContainer:
        name: str
        a: Any
        b: Any

    tree = [MyDataclassContainer("apple", 5.3, 1.2),
            MyDataclassContainer("banana", jnp.zeros(4), -1.0)]
    leaves, treedef = jax.tree.flatten(tree)
    return leaves, treedef.num_leaves, treedef.num_nodes


@case
def pytrees_dataclass_meta_fields_static_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    @functools.partial(jax.tree_util.register_dataclass,
                       data_fields=["a", "b"], meta_fields=["name"])
    @dataclasses.dataclass
    class Container:
        name: str
        a: Any
        b: Any

    @jax.jit
    def f(c: Any) -> Any:
        return c.a + c.b if c.name == "add" else c.a * c.b

    return (f(Container("add", 1, 2)), f(Container("mul", 3, 4)),
            capture(f, MyOtherContainer("moc", 1, 2)))


@case
def pytrees_shape_tuples_become_nodes(jax: Any, jnp: Any, lax: Any) -> Any:
    a_tree = [jnp.zeros((2, 3)), jnp.zeros((3, 4))]
    shapes = jax.tree.map(lambda x: x.shape, a_tree)
    return shapes, jax.tree.map(jnp.ones, shapes)


@case
def pytrees_none_is_empty_node(jax: Any, jnp: Any, lax: Any) -> Any:
    return (jax.tree.leaves([None, None, None]),
            jax.tree.leaves([None, None, None], is_leaf=lambda x: x is None),
            str(jax.tree.structure([None, 1])))


@case(raises=ValueError)
def pytrees_unsortable_dict_keys_raise(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.tree.map(lambda x: x + 1, {1: 7, "y": 42})


@case
def pytrees_ordered_dict_keeps_insertion_order(jax: Any, jnp: Any, lax: Any) -> Any:
    od = collections.OrderedDict([("b", 1), ("a", 2), (3, 3)])
    return jax.tree.leaves(od), jax.tree.leaves({"b": 1, "a": 2})


@case
def pytrees_transpose_list_of_trees(jax: Any, jnp: Any, lax: Any) -> Any:
    steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
    manual = jax.tree.map(lambda *xs: list(xs), *steps)
    builtin = jax.tree.transpose(
        outer_treedef=jax.tree.structure([0 for _ in steps]),
        inner_treedef=jax.tree.structure(steps[0]),
        pytree_to_transpose=steps)
    return manual, builtin


@case
def pytrees_flatten_examples(jax: Any, jnp: Any, lax: Any) -> Any:
    examples = [(1.0, [2.0, 3.0]), (1.0, {"b": 2.0, "a": 3.0}), 1.0, None, jnp.zeros(2),
                Point(1.0, 2.0)]
    out = []
    for structured in examples:
        flat, tree = jax.tree_util.tree_flatten(structured)
        back = jax.tree_util.tree_unflatten(tree, [v * 2.0 for v in flat])
        out.append((flat, str(tree), back if not isinstance(back, Point) else tuple(back)))
    return out


# -- new_docs/101/errors.rst: examples from the jax.errors docstrings ----------------------------


@case(raises="ConcretizationTypeError")
def errors_traced_axis_argument(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x, axis: x.min(axis))(jnp.arange(4), 0)


@case
def errors_static_axis_argument(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x, axis: x.min(axis), static_argnums=1)(jnp.arange(4), 0)


@case(raises="ConcretizationTypeError")
def errors_nonzero_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: jnp.where(x < 0))(jnp.arange(4))


@case(raises="ConcretizationTypeError")
def errors_index_by_nonzero_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    def func(x: Any) -> Any:
        indices = jnp.where(x > 1)
        return x[indices].sum()

    return jax.jit(func)(jnp.arange(4))


@case
def errors_where_fixes(jax: Any, jnp: Any, lax: Any) -> Any:
    return (jax.jit(lambda x: jnp.where(x > 1, x, 0).sum())(jnp.arange(4)),
            jax.jit(lambda x: jnp.where(x > 0, x, 0).sum())(jnp.arange(-5, 5)),
            jax.jit(lambda x: jnp.where(x < 0, 0, x))(jnp.arange(-2, 2)))


@case(raises="NonConcreteBooleanIndexError")
def errors_boolean_mask_sum_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: x[x > 0].sum())(jnp.arange(-5, 5))


@case(raises="NonConcreteBooleanIndexError")
def errors_boolean_mask_update_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: x.at[x < 0].set(0))(jnp.arange(-2, 2))


@case(raises="TracerArrayConversionError")
def errors_numpy_function_on_tracer(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: np.sin(x))(np.arange(4))


@case(raises="TracerArrayConversionError")
def errors_numpy_array_indexed_by_tracer(jax: Any, jnp: Any, lax: Any) -> Any:
    x = np.arange(10)
    return jax.jit(lambda i: x[i])(0)


@case(ulp=2)
def errors_array_conversion_fixes(jax: Any, jnp: Any, lax: Any) -> Any:
    x = np.arange(10)
    return (jax.jit(lambda v: jnp.sin(v))(jnp.arange(4)),
            jax.jit(lambda i: jnp.asarray(x)[i])(0),
            jax.jit(lambda i: x[i], static_argnums=(0,))(0))


@case(raises="TracerIntegerConversionError")
def errors_traced_axis_to_numpy_split(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x, axis: np.split(x, 2, axis))(np.arange(4), 0)


@case(raises="TracerIntegerConversionError")
def errors_list_indexed_by_tracer(jax: Any, jnp: Any, lax: Any) -> Any:
    lst = [1, 2, 3]
    return jax.jit(lambda i: lst[i])(0)


@case
def errors_integer_conversion_fixes(jax: Any, jnp: Any, lax: Any) -> Any:
    lst = [1, 2, 3]
    return (jax.jit(lambda x, axis: np.split(x, 2, axis), static_argnums=1)(np.arange(10), 0),
            jax.jit(lambda arr: np.split(arr, 2, 0))(np.arange(4)),
            jax.jit(lambda i: jnp.array(lst)[i])(0),
            jax.jit(lambda i: lst[i], static_argnums=0)(0))


@case(raises="TracerBoolConversionError")
def errors_python_ternary_on_tracer(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x, y: x if x.sum() < y.sum() else y)(jnp.ones(4), jnp.zeros(4))


@case(raises="TracerBoolConversionError")
def errors_traced_flag_argument(jax: Any, jnp: Any, lax: Any) -> Any:
    def func(x: Any, normalize: Any = True) -> Any:
        if normalize:
            return x / x.sum()
        return x

    return jax.jit(func)(jnp.arange(5), True)


@case(raises="TracerBoolConversionError")
def errors_builtin_min_on_tracer(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: min(x, 0))(2)


@case
def errors_bool_conversion_fixes(jax: Any, jnp: Any, lax: Any) -> Any:
    def func(x: Any, normalize: Any = True) -> Any:
        if normalize:
            return x / x.sum()
        return x

    return (jax.jit(lambda x, y: jnp.where(x.sum() < y.sum(), x, y))(jnp.ones(4), jnp.zeros(4)),
            jax.jit(func, static_argnames=["normalize"])(jnp.arange(5), True),
            jax.jit(func, static_argnames=["normalize"])(jnp.arange(5), normalize=False),
            jax.jit(lambda x: jnp.minimum(x, 0))(2))


@case(raises="UnexpectedTracerError")
def errors_leaked_tracer(jax: Any, jnp: Any, lax: Any) -> Any:
    outs: list[Any] = []

    @jax.jit
    def side_effecting(x: Any) -> None:
        outs.append(x + 1)

    side_effecting(1)
    return outs[0] + 1


@case
def errors_no_leak_when_returned(jax: Any, jnp: Any, lax: Any) -> Any:
    outs: list[Any] = []

    @jax.jit
    def not_side_effecting(x: Any) -> Any:
        return x + 1

    outs.append(not_side_effecting(1))
    return outs[0] + 1
