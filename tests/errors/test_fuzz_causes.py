"""Argument canonicalisation against JAX: axes, shapes and static integer
parameters.

Each row is a snippet run in real JAX and in spec in the same test. Where
JAX returns, spec must return the same values, dtype, shape and weak type;
where JAX raises, spec must raise the same class (a builtin class JAX
raises, or a subclass of it) with a message naming the rejected value.
The rows are the spellings a fuzzer of the public API found spec treating
differently from JAX, plus the neighbouring spellings both must accept.

Rows where JAX itself rejects a float parameter only inside a primitive's
evaluation (``lax.argmax(x, 1.0, ...)``, ``lax.reduce_sum(x, (1.0,))``) are
left out: JAX caches that failure under parameters equal to the integer
ones, and later integer calls in the same process then fail.
"""

from __future__ import annotations

import builtins
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as slax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jlax = pytest.importorskip("jax.lax")


class Case(NamedTuple):
    snippet: str
    # A fragment spec's error message must contain when JAX rejects the snippet
    # (spec names the value; JAX's own wording is not required).
    names: str | None = None


X = "jnp.arange(6.0).reshape(2, 3)"

CASES: list[Case] = [
    # Reductions read `axis` as None, an integer, or any iterable of integers.
    Case(f"jnp.sum({X}, axis=1.0)", "1.0"),
    Case(f"jnp.sum({X}, axis=5.0)", "5.0"),
    Case(f"jnp.sum({X}, axis={{0, 1}})"),
    Case(f"jnp.sum({X}, axis=np.array(1))"),
    Case(f"jnp.sum({X}, axis=np.int64(-1))"),
    Case(f"jnp.sum({X}, axis=[1])"),
    Case(f"jnp.sum({X}, axis=(0, 0))", "axis"),
    Case(f"jnp.sum({X}, axis=5)", "5"),
    Case(f"jnp.sum({X}, axis='0')", "0"),
    Case(f"jnp.prod({X}, axis='0')", "0"),
    Case(f"jnp.prod({X}, axis=1.0)", "1.0"),
    Case(f"jnp.max({X}, axis=1.0)", "1.0"),
    Case(f"jnp.min({X}, axis={{1}})"),
    Case(f"jnp.mean({X}, axis=1.0)", "1.0"),
    Case(f"jnp.mean({X}, axis={{1}})"),
    Case(f"jnp.var({X}, axis=1.0)", "1.0"),
    Case(f"jnp.var({X}, axis={{0}})"),
    Case(f"jnp.std({X}, axis=[0, 1])"),
    Case(f"jnp.any({X}, axis=1.0)", "1.0"),
    Case(f"jnp.all({X}, axis={{0}})"),
    Case(f"jnp.all({X}, axis='0')", "0"),
    Case(f"jnp.ptp({X}, axis=np.array(1))"),
    Case(f"jnp.average({X}, axis=np.array(1))"),
    Case(f"jax.nn.logsumexp({X}, axis={{0}})", "{0}"),
    Case(f"jax.nn.logsumexp({X}, axis=np.array(1))", "array"),
    Case(f"jax.nn.logsumexp({X}, axis='0')", "0"),
    Case(f"jax.nn.logsumexp({X}, axis=(0, 1))"),
    # Single-axis functions: operator.index, so a float or a set is a TypeError.
    Case(f"jnp.argmax({X}, axis=1.0)", "1.0"),
    Case(f"jnp.argmax({X}, axis={{0}})", "{0}"),
    Case(f"jnp.argmax({X}, axis=5)", "5"),
    Case(f"jnp.argmin({X}, axis='0')", "'0'"),
    Case(f"jnp.argmin({X}, axis=np.array(1))"),
    Case(f"jnp.cumsum({X}, axis=5)", "5"),
    Case(f"jnp.cumsum({X}, axis={{0}})", "{0}"),
    Case(f"jnp.sort({X}, axis=1.0)", "1.0"),
    Case(f"jnp.sort({X}, axis={{0}})", "{0}"),
    Case(f"jnp.argsort({X}, axis=1.0)", "1.0"),
    Case(f"jnp.take({X}, 0, axis=1.0)"),
    Case(f"jnp.take({X}, 0, axis={{0}})", "{0}"),
    Case(f"jnp.take({X}, 1, axis=-1)"),
    Case(f"jnp.take_along_axis({X}, jnp.zeros((2, 3), int), axis=1.0)", "1.0"),
    # Axes JAX hands straight to a jit's static argument: unhashable is a ValueError.
    Case(f"jnp.median({X}, axis=[1])", "[1]"),
    Case(f"jnp.median({X}, axis={{0}})", "{0}"),
    Case(f"jnp.quantile({X}, 0.5, axis=np.array(1))", "array"),
    Case(f"jnp.quantile({X}, 0.5, axis=(0, 1))"),
    Case(f"jnp.diff({X}, axis=[1])", "[1]"),
    Case(f"jnp.diff({X}, axis=1.0)"),
    Case(f"jnp.gradient({X}, axis=[1])", "[1]"),
    Case(f"jnp.unstack({X}, axis=np.array(1))", "array"),
    Case(f"jnp.append({X}, {X}, axis={{0}})", "{0}"),
    Case(f"jnp.partition({X}, 1, axis=[1])", "[1]"),
    Case(f"jnp.argpartition({X}, 1, axis=np.array(1))", "array"),
    Case(f"jnp.swapaxes({X}, 1.0, 0)"),
    Case(f"jnp.swapaxes({X}, [1], 0)", "[1]"),
    Case(f"jnp.swapaxes({X}, np.int32(1), 0)"),
    Case(f"jnp.rot90({X}, axes='0')", "'0'"),
    Case(f"jnp.rot90({X}, axes=[0, 1])", "[0, 1]"),
    Case(f"jnp.rot90({X}, axes=(1, 0))"),
    # Shapes: an integer or an ordered sequence of integers; a set, a dict,
    # bytes or a string is one (non-integer) dimension.
    Case("jnp.zeros({1, 2})", "{1, 2}"),
    Case("jnp.zeros({})", "{}"),
    Case("jnp.zeros(b'xy')", "b'xy'"),
    Case("jnp.zeros('2')", "'2'"),
    Case("jnp.zeros(2.0)", "2.0"),
    Case("jnp.zeros((2.0,))", "2.0"),
    Case("jnp.ones({2})", "{2}"),
    Case("jnp.full({2}, 1.0)", "{2}"),
    Case("jnp.empty({1: 2})", "{1: 2}"),
    Case("jnp.zeros(np.int64(2))"),
    Case("jnp.zeros(np.array([2, 1]))"),
    Case("jnp.zeros([2, np.int8(1)])"),
    Case("jnp.ones(range(1, 3))"),
    Case("jnp.broadcast_to(1.0, {2})", "{2}"),
    Case("jnp.broadcast_to(1.0, 2)"),
    # Static integer parameters.
    Case(f"jnp.round({X}, 1.5)", "1.5"),
    Case(f"jnp.round({X}, np.int32(1))"),
    Case(f"jnp.around({X}, 1.0)", "1.0"),
    Case(f"lax.integer_pow({X}, 2.0)"),
    Case(f"lax.integer_pow({X}, np.float32(3.0))"),
    Case(f"lax.integer_pow({X}, 2.5)", "2.5"),
    Case(f"lax.integer_pow({X}, '2')", "'2'"),
    Case(f"lax.cumsum({X}, axis=1.0)", "1.0"),
    Case("jnp.concatenate({1, 2})"),
    Case(f"jnp.split({X}, 2.0)"),
    Case(f"jnp.array_split({X}, 2.5, axis=1)"),
    Case(f"jnp.reshape({X}, {{6}})", "{6}"),
    Case(f"jnp.reshape({X}, (3.0, 2))"),
    Case(f"jnp.expand_dims({X}, {{1}})"),
    Case("jnp.squeeze(jnp.ones((1, 3)), axis=0.0)"),
    Case(f"jnp.transpose({X}, (1.0, 0))"),
    Case(f"jnp.moveaxis({X}, {{1}}, 0)"),
    Case(f"jnp.flip({X}, axis={{1}})"),
    Case(f"jnp.roll({X}, 1, axis=1.0)"),
    Case(f"jnp.repeat({X}, 2, axis=1.0)"),
    Case(f"jnp.concatenate([{X}, {X}], axis=1.0)"),
    Case(f"jnp.stack([{X}, {X}], axis=1.0)"),
    Case(f"jnp.count_nonzero({X}, axis={{1}})"),
    Case("jnp.eye(2.0)"),
    Case("jnp.zeros(2, dtype='float33')"),
    Case("jnp.zeros(2, dtype={})"),
    Case("jnp.zeros_like(jnp.ones(3), shape=2.0)"),
    Case("jnp.ones_like(jnp.ones(3), shape={2})"),
    Case("jax.random.normal(jax.random.key(0), {2})"),
    Case("jax.random.normal(jax.random.key(0), (2.0,))"),
    Case("jax.nn.one_hot(jnp.array([0, 2]), 3, axis=1.0)", "1.0"),
    Case("jax.nn.one_hot(jnp.array([0, 2]), 3, axis=0)"),
    Case(f"jnp.argmax(jax.nn.softmax({X}, axis={{1}}), axis=1)"),
    Case(f"jax.nn.softmax({X}, axis=1.0)"),
    Case(f"jnp.diff({X}, n={{1}})", "{1}"),
    Case(f"jnp.rot90({X}, 1.5)"),
    Case(f"jnp.rot90({X}, k={{1}})", "{1}"),
    Case(f"jnp.rot90({X}, k=-1)"),
    Case(f"jnp.resize({X}, {{6}})", "{6}"),
    Case(f"jnp.nonzero({X}, size=2.0)", "2.0"),
    Case(f"jnp.argwhere({X}, size=np.int8(2))"),
    Case("lax.full({2}, 1.0)"),
    Case("lax.full(2.0, 1.0)"),
    Case("lax.broadcast_in_dim(1.0, {2}, ())"),
    Case("lax.broadcasted_iota('int32', (2, 3), 1.0)"),
    Case(f"lax.reshape({X}, {{6}})"),
    Case(f"lax.reshape({X}, np.array(6))"),
    # jit's order: the dynamic arguments are abstracted before the static ones are hashed.
    Case("jnp.cumsum(object(), axis={0})", "object"),
    Case("jnp.sort([1, 'a'], axis={0, 1})", "str"),
    Case("jnp.round([[1], [2, 3]], [2])", "[2]"),
    Case(f"jnp.around({X}, [1])", "[1]"),
    # jit's cache tells equal static values of different types apart.
    Case(f"[jnp.sort({X}, axis=1), jnp.sort({X}, axis=1.0)]", "1.0"),
    Case("(lambda f: [f(1), f(1.0), f(True)])(jax.jit(lambda a: jnp.full(2, a), "
         "static_argnums=0))"),
    # A dimension read by indexing the shape: an out-of-range axis is an IndexError.
    Case(f"jnp.mean({X}, axis=5)", "5"),
    Case("jnp.mean(1.0, axis=True)", "1"),
    Case(f"jnp.mean({X}, axis=(0, -3))", "-3"),
    Case(f"jnp.var({X}, axis=-3)", "-3"),
    Case(f"jnp.std({X}, axis=np.array(2))", "2"),
    Case(f"jnp.mean({X}, axis=(0, 0))", "axis"),
    Case(f"jnp.mean({X}, axis=5, where={X} > 1)", "5"),
    Case(f"jnp.mean({X}, axis=(1, -2))"),
    Case("jnp.split(1.0, 2)", "0"),
    Case(f"jnp.split({X}, 2, axis=5)", "5"),
    Case(f"jnp.array_split({X}, 2, axis=-3)", "-3"),
    Case(f"jnp.split({X}, [1], axis=-2)"),
    # Operands are checked before the other arguments are read.
    Case("jnp.full('3', 2**70)", "'3'"),
    Case("jnp.full((2,), 2**70)", "1180591620717411303424"),
    Case("jnp.full((2, -1), 2**70)", "1180591620717411303424"),
    Case("lax.full('3', 2**70)", "'3'"),
    Case("jnp.where(None, 1.0, None)", "position 0"),
    Case(f"jnp.where({X} > 1, 1.0, None)", "position 2"),
    Case(f"jnp.where({X} > 1, 1.0, 2.0, size=3)", "size"),
    Case("jnp.clip(1.0, [1, 2], 1j)", "complex"),
    Case(f"jnp.clip({X}, None, 1j)", "complex"),
    Case(f"jnp.clip({X} * 1j, 0, 1)", "complex"),
    Case(f"jnp.take({X}, [0, 1])", "position 1"),
    Case("jnp.take(1.0, [2], axis=True)", "position 1"),
    Case("jnp.take([1, 2], 1)", "position 0"),
    # Boolean indices of take are promoted to integers, as JAX promotes them.
    Case(f"jnp.take({X}, True)"),
    Case(f"jnp.take({X}, jnp.array([True, False]), axis=1)"),
    # A negative size no operand dimension meets is broadcast_in_dim's TypeError.
    Case("jnp.broadcast_to(1.0, -1)", "-1"),
    Case("jnp.broadcast_to(jnp.ones(3), (-1, 3))", "-1"),
    Case("jnp.broadcast_to(jnp.ones(3), (2, -3))", "-3"),
    # jnp.reshape of a NumPy array is NumPy's reshape (any dtype; a NumPy result).
    Case("jnp.reshape(np.array(['a', 'b']), (2, 1))"),
    Case("jnp.reshape(np.array(['a']), (2, 3))", "(2,3)"),
    Case("jnp.reshape(np.arange(6), (3, 2), order='F')"),
    Case("np.asarray(isinstance(jnp.reshape(np.arange(6), -1), np.ndarray))"),
    Case("lax.reshape([[1], [2, 3]], (2, -1))"),
    Case(f"lax.reshape({X}, (2, -3))", "(2, -3)"),
    Case("jnp.concatenate([1.0, 'a'])", "'a'"),
    # A string is a scalar to the array check (NumPy's isscalar), refused where converted;
    # the *_like functions read the prototype's shape without converting it.
    Case("jnp.zeros_like('abc', dtype=bool)"),
    Case("jnp.ones_like(np.array(['a', 'b']), dtype=int)"),
    Case("jnp.zeros_like('abc')", "abc"),
    Case("lax.full(-1, None)", "None"),
    Case("lax.broadcast_in_dim(jnp.ones(3), np.array([2, 3]), ())", "array([2, 3])"),
    Case("lax.broadcast_in_dim(jnp.ones(3), np.array([3]), (0,))"),
    # lax.broadcast_in_dim's shape and dimensions are read as JAX's shape rules read them
    # (odd sizes: JAX's caches accept a float once an equal integer call filled them).
    Case(f"lax.broadcast_in_dim({X}, (7.0, 2, 3), (1, 2))", "shape must have every element"),
    Case(f"lax.broadcast_in_dim({X}, (7, 2, 3), (1.0, 2))", "broadcast_dimensions"),
    Case(f"lax.broadcast_in_dim({X}, (7, 2, None), (0, 1))", "NoneType"),
    Case("lax.broadcast_in_dim(jnp.ones(7), (1.5,), ())"),
    Case(f"lax.broadcast_in_dim({X}, [[7]], (0, 1))", "not hashable"),
    Case(f"lax.broadcast_in_dim({X}, (7, 2, 3), ((1, 2),))", "1-dimensional"),
    Case(f"lax.broadcast_in_dim({X}, ((7,), 3), None)"),
    Case(f"lax.broadcast_in_dim({X}, {{7, 2, 3}}, {{1, 2}})"),
    Case("lax.broadcast(jnp.ones(3), (2.5,))", "shape"),
    Case("jnp.nonzero(1.0, size='2')", "0d"),
    # A Python int beyond int32 converts to an inexact dtype; to an integer one it overflows.
    Case(f"jnp.full_like({X}, 2**70)"),
    Case("jnp.full(2, 2**70, dtype=jnp.float32)"),
    Case("lax.convert_element_type(2**70, jnp.float32)"),
    Case("jnp.full_like(jnp.ones(3, int), 2**70)", "1180591620717411303424"),
]


def _namespace(use_jax: bool) -> dict[str, Any]:
    if use_jax:
        return {"jax": jax, "jnp": jnp, "lax": jlax, "np": np}
    return {"jax": spec, "jnp": snp, "lax": slax, "np": np}


def _run(snippet: str, use_jax: bool) -> tuple[Any, BaseException | None]:
    try:
        return eval(snippet, _namespace(use_jax)), None  # noqa: S307 - the table above
    except Exception as err:  # the outcome under test
        return None, err


def _leaves(value: Any, tree: ModuleType) -> list[Any]:
    leaves: list[Any] = tree.tree_util.tree_leaves(value)
    return leaves


def _assert_same_values(expected: Any, got: Any) -> None:
    want, have = _leaves(expected, jax), _leaves(got, spec)
    assert len(want) == len(have)
    for w, h in zip(want, have):
        assert np.dtype(h.dtype) == np.dtype(w.dtype)
        assert tuple(h.shape) == tuple(w.shape)
        assert bool(getattr(h, "weak_type", False)) == bool(getattr(w, "weak_type", False))
        np.testing.assert_array_equal(np.asarray(h), np.asarray(w))


def _builtin_base(err: BaseException) -> type[BaseException]:
    """The builtin exception class a JAX error is (JAX's own classes derive
    from one; spec's twins derive from the same)."""
    for cls in type(err).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls
    return Exception


@pytest.mark.parametrize("case", CASES, ids=[c.snippet for c in CASES])
def test_argument_canonicalisation_matches_jax(case: Case) -> None:
    expected, jax_err = _run(case.snippet, use_jax=True)
    got, spec_err = _run(case.snippet, use_jax=False)
    if jax_err is None:
        assert spec_err is None, f"JAX accepts {case.snippet}; spec raised {spec_err!r}"
        _assert_same_values(expected, got)
        return
    assert spec_err is not None, f"JAX rejects {case.snippet} ({jax_err!r}); spec accepted it"
    assert isinstance(spec_err, _builtin_base(jax_err)), (
        f"{case.snippet}: JAX raises {type(jax_err).__name__}, spec {spec_err!r}")
    if case.names is not None:
        assert case.names in str(spec_err), (
            f"{case.snippet}: the message should name {case.names!r}: {spec_err}")


# A type (jax.typeof's value) or a ShapeDtypeStruct stands for a value of that type when
# tracing; calls that run on values refuse it with JAX's TypeError.
ABSTRACT_ARGUMENTS = [
    "str(jax.make_jaxpr(lambda a: a * 2)(jax.typeof(jnp.ones(3))))",
    "str(jax.make_jaxpr(lambda a: a * 2)(jax.typeof(2.0)))",
    "str(jax.jit(lambda a: jnp.sin(a)).trace(jax.typeof(jnp.ones(2))).jaxpr)",
    "str(jax.eval_shape(lambda a: a * 2, jax.typeof(jnp.ones(2))))",
    "jax.jit(lambda a: a * 2)(jax.typeof(1.0))",
    "jax.jit(lambda a: a * 2)(jax.ShapeDtypeStruct((3,), jnp.float32))",
    "jax.grad(lambda a: a * 2)(jax.typeof(1.0))",
    "jax.value_and_grad(lambda a: a * 2)('a')",
    "jax.vmap(lambda a: a * 2)(jax.typeof(1.0))",
    "jax.jvp(lambda a: a * 2, (jax.typeof(1.0),), (1.0,))",
    "jax.linearize(lambda a: a * 2, jax.typeof(1.0))",
]
_CLASS_NAMES = {"jax._src.core.ShapedArray": "spec._src.core.types.ArrayType",
                "jax.ShapeDtypeStruct": "spec._src.api.stages.ShapeDtypeStruct"}


def _outcome(snippet: str, use_jax: bool) -> str:
    value, err = _run(snippet, use_jax)
    text = f"{type(err).__name__}: {err}" if err is not None else str(value)
    for theirs, ours in _CLASS_NAMES.items():
        text = text.replace(theirs, ours)
    return text


@pytest.mark.parametrize("snippet", ABSTRACT_ARGUMENTS)
def test_types_stand_for_values_when_tracing(snippet: str) -> None:
    assert _outcome(snippet, use_jax=False) == _outcome(snippet, use_jax=True)


class Foreign:
    """Another library's array: ``__array__``, a shape and a dtype, no ``__jax_array__``."""

    shape = (3,)
    dtype = np.dtype(np.float32)
    ndim = 1

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.arange(3.0, dtype=np.float32)


# Only jnp.asarray and jnp.array convert another library's array; a transformation or an
# op given one raises TypeError. To spec, a real JAX array is such an array, committed
# to a device or not.
FOREIGN_ARGUMENTS = [
    "jax.jit(lambda a: a * 2)(F)", "jax.jit(lambda a, b: a * b)(jnp.ones(3), F)",
    "jax.grad(lambda a: a.sum())(F)", "jax.vmap(lambda a: a * 2)(F)", "jnp.sin(F)",
    "jnp.add(F, 1.0)", "jnp.asarray(F)", "jnp.array(F)", "jnp.asarray(F) * 2",
]


def _run_with(snippet: str, use_jax: bool, **names: Any) -> tuple[Any, BaseException | None]:
    try:
        return eval(snippet, dict(_namespace(use_jax), **names)), None  # noqa: S307
    except Exception as err:  # the outcome under test
        return None, err


@pytest.mark.parametrize("snippet", FOREIGN_ARGUMENTS)
def test_another_librarys_array_converts_only_by_asarray(snippet: str) -> None:
    expected, jax_err = _run_with(snippet, use_jax=True, F=Foreign())
    real = jnp.arange(3.0)
    for foreign in (Foreign(), real, jax.device_put(real, jax.devices()[0])):
        got, spec_err = _run_with(snippet, use_jax=False, F=foreign)
        if jax_err is None:
            assert spec_err is None, f"{snippet} with {type(foreign)}: spec raised {spec_err!r}"
            _assert_same_values(expected, got)
        else:
            assert type(spec_err) is type(jax_err), (
                f"{snippet} with {type(foreign)}: JAX raises {jax_err!r}, spec {spec_err!r}")
            assert type(foreign).__name__ in str(spec_err)  # names what it refused
