"""Arrays that cannot exist, against JAX: each snippet runs in real JAX and in spec in the same
test, and both must raise the same class (or both return the same type).

A shape whose byte size overflows 64 bits is refused when the program is compiled (an eager
operation, a jit call, ``Lowered.compile``), a dimension beyond 64 bits likewise, and a result
larger than this machine's memory when it would be allocated; tracing (``eval_shape``,
``make_jaxpr``, ``lower``) accepts every shape. The memory rows use 4 TiB results, more than any
machine that runs the tests has.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as slax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jlax = pytest.importorskip("jax.lax")

TIB4 = 2**40  # float32 elements: 4 TiB

SNIPPETS: list[tuple[str, str]] = [
    # (snippet, a fragment spec's message must contain)
    ("jnp.zeros(2**62)", "4611686018427387904"),
    ("jnp.ones((2**31, 2**31))", "2147483648, 2147483648"),
    ("jnp.full(2**61, 1.0)", "2305843009213693952"),
    ("jnp.zeros(2**63)", "9223372036854775808"),
    ("lax.iota(jnp.float32, 2**62)", "4611686018427387904"),
    # arange's bounds are read without converting them: the size is the error.
    ("jnp.arange(2**62)", "4611686018427387904"),
    ("jnp.arange(1, 2**62)", "4611686018427387903"),
    ("jnp.arange(2**64)", "18446744073709551616"),
    ("jnp.ones(3) + jnp.broadcast_to(1.0, (2**62, 3))", "4611686018427387904"),
    ("jax.jit(lambda: jnp.zeros(2**62))()", "4611686018427387904"),
    ("jax.jit(lambda: jnp.zeros(2**62)).lower().compile()", "4611686018427387904"),
    ("jax.jit(lambda x: x + jnp.zeros((2**62, 1)))(1.0)", "4611686018427387904"),
    (f"jnp.zeros({TIB4})", "4398046511104 bytes"),
    ("jnp.zeros(2**61, jnp.int8)", "2305843009213693952 bytes"),
    (f"jax.jit(lambda: jnp.ones({TIB4}))()", "4398046511104 bytes"),
    # Tracing never sizes a buffer.
    ("jax.eval_shape(lambda: jnp.zeros(2**64)).shape", ""),
    (f"jax.make_jaxpr(lambda: jnp.zeros({TIB4}) + 1)().out_avals[0].shape", ""),
    ("type(jax.jit(lambda: jnp.zeros(2**62)).lower()).__name__", ""),
    (f"type(jax.jit(lambda: jnp.zeros({TIB4})).lower().compile()).__name__", ""),
]


def _run(snippet: str, jax_mod: ModuleType, jnp_mod: ModuleType, lax_mod: ModuleType
         ) -> tuple[str, Any]:
    try:
        return "ok", eval(snippet, {"jax": jax_mod, "jnp": jnp_mod, "lax": lax_mod})
    except Exception as e:  # noqa: BLE001 - the exception is the result compared
        return "raised", e


@pytest.mark.parametrize("snippet,names", SNIPPETS, ids=[s for s, _ in SNIPPETS])
def test_unmaterialisable_arrays_raise_as_in_jax(snippet: str, names: str) -> None:
    j_kind, j_out = _run(snippet, jax, jnp, jlax)
    s_kind, s_out = _run(snippet, spec, snp, slax)
    assert s_kind == j_kind, (j_out, s_out)
    if j_kind == "ok":
        assert s_out == j_out
        return
    # JAX's own class: RuntimeError (a shape size overflow), TypeError (a dimension beyond 64
    # bits), JaxRuntimeError (out of memory), matched by name through spec's MRO.
    assert type(j_out).__name__ in [k.__name__ for k in type(s_out).__mro__], (j_out, s_out)
    assert names in str(s_out)
    if type(j_out).__name__ == "JaxRuntimeError":
        assert str(s_out).startswith(str(j_out).split(".")[0])  # RESOURCE_EXHAUSTED: ...


def test_unbounded_recursion_is_a_recursion_error_as_in_jax() -> None:
    def endless(lib: ModuleType) -> Any:
        def f(x: Any) -> Any:
            return f(x + 1.0)
        return lib.jit(f)

    # A low limit: JAX traces each level slowly (about 3 ms), the class is the same.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        with pytest.raises(RecursionError):
            endless(jax)(1.0)
        with pytest.raises(RecursionError):
            endless(spec)(1.0)
    finally:
        sys.setrecursionlimit(limit)


def _nested(depth: int) -> Any:
    x: Any = 1.0
    for _ in range(depth):
        x = [x]
    return x


def test_deep_pytrees_go_through_jit_as_in_jax() -> None:
    # Deeper than Python's recursion limit (1000), within JAX's flattening depth (1498).
    deep = _nested(1200)
    assert jax.jit(lambda t: jax.tree_util.tree_leaves(t)[0] + 1)(deep) == 2.0
    assert spec.jit(lambda t: spec.tree_util.tree_leaves(t)[0] + 1)(deep) == 2.0
    structure = spec.tree_util.tree_structure(deep)
    assert structure == spec.tree_util.tree_structure(_nested(1200))
    assert structure != spec.tree_util.tree_structure(_nested(1199))
    assert hash(structure) == hash(spec.tree_util.tree_structure(_nested(1200)))
    assert repr(structure) == repr(jax.tree_util.tree_structure(deep))
    assert structure.unflatten([3.0]) == jax.tree_util.tree_structure(deep).unflatten([3.0])
    doubled = spec.tree_util.tree_map(lambda a, b: a + b, deep, deep)
    assert doubled == jax.tree_util.tree_map(lambda a, b: a + b, deep, deep)
    (path, leaf), = spec.tree_util.tree_flatten_with_path(deep)[0]
    (jax_path, jax_leaf), = jax.tree_util.tree_flatten_with_path(deep)[0]
    assert leaf == jax_leaf and spec.tree_util.keystr(path) == jax.tree_util.keystr(jax_path)


def test_deep_mixed_pytrees_flatten_as_in_jax() -> None:
    deep: Any = 1.0
    for i in range(600):  # 1200 containers: dicts, lists and tuples, with Nones and leaves
        deep = {"a": [deep, None], "b": (i,)} if i % 2 else ({"z": deep}, 2.0)
    for lib in (spec, jax):
        tu = lib.tree_util
        leaves, structure = tu.tree_flatten(deep)
        assert tu.tree_unflatten(structure, leaves) == deep
        assert structure.flatten_up_to(deep) == leaves
    spec_paths = spec.tree_util.tree_flatten_with_path(deep)[0]
    jax_paths = jax.tree_util.tree_flatten_with_path(deep)[0]
    assert [x for _, x in spec_paths] == [x for _, x in jax_paths]
    # (the deepest leaf's path: every path's text would take seconds to build)
    assert spec.tree_util.keystr(spec_paths[0][0]) == jax.tree_util.keystr(jax_paths[0][0])
    assert repr(spec.tree_util.tree_structure(deep)) == repr(jax.tree_util.tree_structure(deep))


@pytest.mark.parametrize("depth", [1499, 10_000])
def test_pytrees_deeper_than_jax_flattens_are_refused(depth: int) -> None:
    # JAX's C++ flattening raises a SystemError from its recursion guard; spec RecursionError.
    too_deep = _nested(depth)
    with pytest.raises((SystemError, RecursionError)):
        jax.tree_util.tree_leaves(too_deep)
    with pytest.raises((SystemError, RecursionError)):
        jax.jit(lambda t: 0)(too_deep)
    with pytest.raises(RecursionError, match="1498"):
        spec.tree_util.tree_leaves(too_deep)
    with pytest.raises(RecursionError, match="1498"):
        spec.jit(lambda t: 0)(too_deep)
    assert len(spec.tree_util.tree_leaves(_nested(1498))) == 1


def test_a_cyclic_pytree_is_an_error_not_a_crash() -> None:
    cyclic: list[Any] = [1.0]
    cyclic.append(cyclic)
    # JAX's C++ flatten raises a SystemError from a RecursionError; spec the RecursionError.
    with pytest.raises((SystemError, RecursionError)):
        jax.tree_util.tree_leaves(cyclic)
    with pytest.raises(RecursionError):
        spec.tree_util.tree_leaves(cyclic)
    with pytest.raises(RecursionError):
        spec.jit(lambda t: 0)(cyclic)


def test_programs_longer_than_the_recursion_limit_run_under_every_transform() -> None:
    # 4,000 equations in one chain, four times Python's recursion limit: staging, printing,
    # compiling, differentiating and batching walk the chain without recursing along it.
    steps, a = 2000, np.float32(1.0001)

    def chain(x: Any) -> Any:
        for _ in range(steps):
            x = x * a + 1.0
        return x
    x = np.float32(1.0)
    want = np.asarray(chain(jnp.asarray(x)))  # eager JAX
    slope = np.float64(a) ** steps  # d chain / dx, within float32 rounding of each factor
    assert sys.getrecursionlimit() < 2 * steps
    closed = spec.make_jaxpr(chain)(x)
    assert len(closed.eqns) == 2 * steps and str(closed) == str(jax.make_jaxpr(chain)(x))
    np.testing.assert_allclose(np.asarray(spec.jit(chain)(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(spec.jit(spec.grad(chain))(x)), slope, rtol=1e-4)
    y, dy = spec.jvp(chain, (x,), (np.float32(1.0),))
    np.testing.assert_allclose([np.asarray(y), np.asarray(dy)], [want, slope], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(spec.vmap(chain)(snp.full(2, x))), [want, want],
                               rtol=1e-6)
