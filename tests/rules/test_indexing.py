"""gather/scatter primitives, their lax wrappers and jnp indexing, against real JAX."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax as jlax

import spec
import spec.lax as slax
import spec.numpy as snp
from spec.errors import NonConcreteBooleanIndexError
from tests.lowering.xla_run import assert_bitwise, compile_and_run, lowered
from tests.support.pair import errors_alike, raises_as


def needs(*names: str) -> None:
    """The functions of other families a test relies on must exist (a missing
    one is a failure, not a skip)."""
    missing = [n for n in names if not hasattr(snp if n.startswith("np.") else slax,
                                               n.removeprefix("np."))]
    assert not missing, f"spec lacks {missing}"


def sarr(x: np.ndarray) -> Any:
    return snp.asarray(x)


def same(a: Any, b: Any) -> None:
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert a.aval.weak_type == b.weak_type
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def same_jaxpr(f: Callable[..., Any], *args: np.ndarray) -> None:
    assert str(spec.make_jaxpr(f)(*[sarr(a) for a in args])) == \
        str(jax.make_jaxpr(f)(*[jnp.asarray(a) for a in args]))


X = np.arange(120, dtype=np.float32).reshape(4, 5, 6)

STATIC = ["x[0]", "x[-1]", "x[:, 1]", "x[1:, ::2]", "x[::-1]", "x[::-2]", "x[..., None]",
          "x[None]", "x[:]", "x[...]", "x[1, 2, 3]", "x[1:3, None, 2]", "x[..., 1:4:2, -2]",
          "x[None, ..., None, 0]", "x[3:1]", "x[-10:10, ::-3]", "x.at[0].get()"]


@pytest.mark.parametrize("expr", STATIC)
def test_static_indexing_matches_jax(expr: str) -> None:
    f = eval("lambda x: " + expr)
    same(f(sarr(X)), f(jnp.asarray(X)))
    same_jaxpr(f, X)


# ------------------------------------------------------ hypothesis: static


@st.composite
def static_cases(draw: Any) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    n = draw(st.integers(0, len(shape) + 1))
    items: list[Any] = []
    ell = False
    for _ in range(n):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        if kind == "int":
            items.append(draw(st.integers(-5, 4)))
        elif kind == "slice":
            b = st.one_of(st.none(), st.integers(-6, 6))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)))
            items.append(slice(draw(b), draw(b), step))
        elif kind == "none":
            items.append(None)
        elif not ell:
            ell = True
            items.append(Ellipsis)
    return shape, tuple(items)


def _in_range(shape: tuple[int, ...], idx: tuple[Any, ...]) -> bool:
    """Whether NumPy accepts it (JAX clamps out-of-range ints instead)."""
    try:
        np.zeros(shape)[idx]
        return True
    except IndexError:
        return False


@settings(max_examples=50, deadline=None)
@given(static_cases())
def test_static_indices_property(case: tuple[tuple[int, ...], tuple[Any, ...]]) -> None:
    shape, idx = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    try:
        want = jnp.asarray(x)[idx]
    except Exception as err:  # spec raises the same class
        raises_as(lambda: sarr(x)[idx], err)
        return
    if not _in_range(shape, idx):
        needs("select_n", "lt", "np.less", "np.add")  # JAX clamps through dynamic_slice
    got = sarr(x)[idx]
    same(got, want)
    if _in_range(shape, idx):
        np.testing.assert_array_equal(np.asarray(got), x[idx])


# ------------------------------------------------------ gather / errors


def test_index_errors_match_jax() -> None:
    cases: list[Callable[[Any], Any]] = [
        lambda x: x[1.0], lambda x: x["a"], lambda x: x[[0, 1]], lambda x: x[..., ...],
        lambda x: x[0, 0, 0, 0], lambda x: x[object()], lambda x: x[np.array([1.5])],
    ]
    for f in cases:
        errors_alike(lambda: f(sarr(X)), lambda: f(jnp.asarray(X)))


def test_traced_boolean_mask_raises() -> None:
    m = np.array([True, False, True, True])
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError):
        jax.make_jaxpr(lambda x, m: x[m])(jnp.asarray(X), m)
    with pytest.raises(NonConcreteBooleanIndexError):
        spec.make_jaxpr(lambda x, m: x[m])(sarr(X), m)
    with pytest.raises(IndexError):
        sarr(X)[np.array([True, False])]


UNSIGNED = [
    "x[np.array([3, 0, 3], np.uint32)]",
    "x[:, np.array([[0, 1], [4, 4]], np.uint8)]",
    "x[np.array([0, 1], np.uint32), :, np.array([2, 5], np.uint32)]",
    "x[np.array([1], np.uint32), 1:3, np.array([0, 2], np.uint32)]",
    "x[..., np.array([5, 9], np.uint32)]",
    "x[np.array([1, 2], np.uint32), None]",
    "x.at[np.array([1, 9], np.uint32)].get(mode='fill', fill_value=-1.0)",
    "x.at[np.array([1, 9], np.uint32)].get(mode='fill')",
    "x.at[np.array([1, 9], np.uint32)].get(mode='clip')",
]


@pytest.mark.parametrize("expr", UNSIGNED)
def test_array_index_unsigned(expr: str) -> None:
    """Unsigned index arrays need no negative-index normalisation (no select_n)."""
    needs("concatenate")
    f = eval("lambda x: " + expr)
    same(f(sarr(X)), f(jnp.asarray(X)))
    same_jaxpr(f, X)


SIGNED = [
    "x[np.array([0, -2])]", "x[:, np.array([0, 1]), 2]",
    "x[np.array([0, 1]), :, np.array([2, 3])]", "x[np.array([True, False, True, False])]",
    "x[True]", "x[1, ::-2, 1:3]", "x[np.array([[0, -1]]), None, ::2]",
    "x.at[np.array([0, 9])].get(mode='fill', fill_value=-1.0)", "x[10]", "x[-7, 1]",
]


@pytest.mark.parametrize("expr", SIGNED)
def test_array_index_signed(expr: str) -> None:
    needs("select_n", "lt", "concatenate", "iota", "dynamic_slice", "np.less", "np.add")
    f = eval("lambda x: " + expr)
    same(f(sarr(X)), f(jnp.asarray(X)))
    same_jaxpr(f, X)


def test_traced_scalar_index() -> None:
    needs("select_n", "lt", "dynamic_slice", "np.less", "np.add")
    fs: list[Callable[[Any, Any], Any]] = [
        lambda x, i: x[i], lambda x, i: x[i, 2:4], lambda x, i: x[:, i]]
    for f in fs:
        same(f(sarr(X), sarr(np.asarray(-1, np.int32))), f(jnp.asarray(X), jnp.int32(-1)))
        assert str(spec.make_jaxpr(f)(sarr(X), 1)) == str(jax.make_jaxpr(f)(X, 1))


# ------------------------------------------------------------ .at updates


UPDATES = [
    "x.at[0].set(1.)", "x.at[1:3].mul(2.)", "x.at[::-1].set(np.float32(2.))",
    "x.at[np.array([1, 1, 3, 1], np.uint32)].add(1.)",
    "x.at[np.array([1, 1, 3], np.uint32)].set(np.arange(90, dtype=np.float32).reshape(3, 5, 6))",
    "x.at[np.array([2, 2], np.uint32), 1].mul(3.)",
    "x.at[np.array([0, 7, 2], np.uint32)].add(5., mode='drop')",
    "x.at[np.array([0, 7, 2], np.uint32)].set(5., mode='clip')",
    "x.at[:, np.array([4, 4], np.uint32), None].add(np.ones((4, 2, 1, 6), np.float32))",
]


@pytest.mark.parametrize("expr", UPDATES)
def test_at_updates(expr: str) -> None:
    needs("concatenate", "iota", "rev")
    f = eval("lambda x: " + expr)
    same(f(sarr(X)), f(jnp.asarray(X)))
    same_jaxpr(f, X)


@pytest.mark.parametrize("op", ["min", "max"])
def test_at_min_max(op: str) -> None:
    idx = np.array([1, 1, 0], np.uint32)
    vals = np.array([5., -3., 200.], np.float32)
    x = np.arange(4, dtype=np.float32)
    def f(x: Any) -> Any:
        return getattr(x.at[idx], op)(vals)

    same(f(sarr(x)), f(jnp.asarray(x)))
    if hasattr(slax, op):
        same_jaxpr(f, x)


def test_at_int_dtype_and_promotion() -> None:
    x = np.arange(6, dtype=np.int8)
    idx = np.array([0, 0, 5], np.uint32)
    fs: list[Callable[[Any], Any]] = [lambda x: x.at[idx].add(100), lambda x: x.at[idx].set(3),
                                      lambda x: x.at[idx].mul(7), lambda x: x.at[2].add(True)]
    for f in fs:
        same(f(sarr(x)), f(jnp.asarray(x)))


# --------------------------------------------------- direct lax gather/scatter


GATHERS: list[tuple[tuple[int, ...], np.ndarray, dict[str, Any], tuple[int, ...]]] = [
    ((10,), np.array([[8], [-1], [2]]), dict(offset_dims=(1,), collapsed_slice_dims=(),
                                             start_index_map=(0,)), (3,)),
    ((4, 5), np.array([[1, 2], [3, 4], [0, 9]]),
     dict(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)), (1, 1)),
    ((4, 5), np.array([[[1], [2]]]), dict(offset_dims=(0,), collapsed_slice_dims=(1,),
                                         start_index_map=(1,)), (4, 1)),
    ((3, 5, 2), np.array([[1], [4], [0]]),
     dict(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,),
          operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 1, 2)),
    ((4, 5), np.array([[2, 3]]), dict(offset_dims=(1, 2), collapsed_slice_dims=(),
                                      start_index_map=(1, 0)), (3, 2)),
]


@pytest.mark.parametrize("case", range(len(GATHERS)))
@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, np.bool_])
def test_lax_gather(case: int, mode: str | None, dtype: Any) -> None:
    shape, idx, dn, sizes = GATHERS[case]
    x = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    idx = idx.astype(np.int32)

    def run(lax_mod: Any, xv: Any) -> Any:
        return lax_mod.gather(xv, idx, lax_mod.GatherDimensionNumbers(**dn), sizes, mode=mode)

    same(run(slax, sarr(x)), run(jlax, jnp.asarray(x)))
    assert str(spec.make_jaxpr(lambda v: run(slax, v))(sarr(x))) == \
        str(jax.make_jaxpr(lambda v: run(jlax, v))(jnp.asarray(x)))


SCATTERS: list[tuple[tuple[int, ...], np.ndarray, tuple[int, ...], dict[str, Any]]] = [
    ((6,), np.array([[4], [-1], [2], [2]]), (4, 3),
     dict(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))),
    ((4, 5), np.array([[1, 2], [1, 2], [0, 9], [3, 0]]), (4,),
     dict(update_window_dims=(), inserted_window_dims=(0, 1),
          scatter_dims_to_operand_dims=(0, 1))),
    ((4, 5), np.array([[[1], [1]]]), (4, 1, 2),
     dict(update_window_dims=(0,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,))),
    ((3, 5, 2), np.array([[1], [4], [1]]), (3, 2),
     dict(update_window_dims=(1,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
          operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))),
]

SCATTER_OPS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]


@pytest.mark.parametrize("case", range(len(SCATTERS)))
@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("op", SCATTER_OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_lax_scatter(case: int, mode: str | None, op: str, dtype: Any) -> None:
    shape, idx, ushape, dn = SCATTERS[case]
    x = (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)
    upd = (np.arange(int(np.prod(ushape))) % 3 + 1).astype(dtype).reshape(ushape)
    idx = idx.astype(np.int32)

    def run(lax_mod: Any, xv: Any) -> Any:
        return getattr(lax_mod, op)(xv, idx, upd, lax_mod.ScatterDimensionNumbers(**dn),
                                    mode=mode)

    try:
        want = run(jlax, jnp.asarray(x))
    except TypeError:  # JAX's add/mul reject bool
        with pytest.raises(TypeError):
            run(slax, sarr(x))
        return
    same(run(slax, sarr(x)), want)
    if op in ("scatter", "scatter_add", "scatter_mul") or hasattr(slax, op[8:]):
        assert str(spec.make_jaxpr(lambda v: run(slax, v))(sarr(x))) == \
            str(jax.make_jaxpr(lambda v: run(jlax, v))(jnp.asarray(x)))


@pytest.mark.parametrize("case", range(len(SCATTERS)))
@pytest.mark.parametrize("mode", [None, "clip"])
def test_lax_scatter_apply(case: int, mode: str | None) -> None:
    """The function applied once per index (duplicates again, in order): values,
    jaxpr, the vmapped program and the lowering compiled by jaxlib."""
    shape, idx, ushape, dn = SCATTERS[case]
    x = (np.arange(int(np.prod(shape))) % 5).astype(np.float32).reshape(shape)
    idx = idx.astype(np.int32)

    def run(lax_mod: Any, xv: Any) -> Any:
        return lax_mod.scatter_apply(xv, idx, lambda v: v * 2 + 1,
                                     lax_mod.ScatterDimensionNumbers(**dn), update_shape=ushape,
                                     mode=mode)
    same(run(slax, sarr(x)), run(jlax, jnp.asarray(x)))
    assert str(spec.make_jaxpr(lambda v: run(slax, v))(x)) == \
        str(jax.make_jaxpr(lambda v: run(jlax, v))(x))
    if case == 0:
        batch = np.stack([x, x * 3])
        mapped = np.asarray(spec.vmap(lambda v: run(slax, v))(batch))
        assert mapped.tobytes() == np.stack([np.asarray(run(slax, b)) for b in batch]).tobytes()
        assert_bitwise([np.asarray(run(slax, x))],
                       compile_and_run(lowered(lambda v: run(slax, v), x), [x]))


BAD_GATHERS: list[tuple[tuple[int, ...], tuple[int, ...], Any, dict[str, Any], tuple[int, ...]]] = [
    ((4, 5), (3, 1), np.float32, dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                      start_index_map=(0,)), (1, 5)),
    ((4, 5), (3, 2), np.int32, dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,)), (1, 5)),
    ((4, 5), (3, 1), np.int32, dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,)), (2, 5)),
    ((4, 5), (3, 1), np.int32, dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,)), (1, 6)),
    ((4, 5), (3, 1), np.int32, dict(offset_dims=(2,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,)), (1, 5)),
    ((4, 5), (3, 1), np.int32, dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(3,)), (1, 5)),
    ((4, 5), (3, 1), np.int32, dict(offset_dims=(1,), collapsed_slice_dims=(),
                                    start_index_map=(0,)), (1, 5)),
    ((4, 5), (3, 1), np.int32, dict(offset_dims=(0, 1), collapsed_slice_dims=(0,),
                                    start_index_map=(0,)), (1, 5)),
]


@pytest.mark.parametrize("case", range(len(BAD_GATHERS)))
def test_gather_typing_errors(case: int) -> None:
    shape, ishape, idt, dn, sizes = BAD_GATHERS[case]
    x = np.zeros(shape, np.float32)
    idx = np.zeros(ishape, idt)
    got, _ = errors_alike(
        lambda: slax.gather(sarr(x), idx, slax.GatherDimensionNumbers(**dn), sizes),
        lambda: jlax.gather(jnp.asarray(x), idx, jlax.GatherDimensionNumbers(**dn), sizes))
    assert "gather C" in str(got)


def test_scatter_typing_errors() -> None:
    x = np.zeros((4, 5), np.float32)
    idx = np.zeros((3, 1), np.int32)
    dn = dict(update_window_dims=(1,), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    for upd in [np.zeros((3, 5), np.int32), np.zeros((3, 6), np.float32),
                np.zeros((2, 5), np.float32), np.zeros((3,), np.float32)]:
        errors_alike(
            lambda: slax.scatter_add(sarr(x), idx, upd, slax.ScatterDimensionNumbers(**dn)),
            lambda: jlax.scatter_add(jnp.asarray(x), idx, upd, jlax.ScatterDimensionNumbers(**dn)))


def test_reprs() -> None:
    assert str(slax.GatherScatterMode.PROMISE_IN_BOUNDS) == \
        str(jlax.GatherScatterMode.PROMISE_IN_BOUNDS)
    dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    assert repr(slax.GatherDimensionNumbers(**dn)) == repr(jlax.GatherDimensionNumbers(**dn))
    sd = dict(update_window_dims=(1,), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    assert repr(slax.ScatterDimensionNumbers(**sd)) == repr(jlax.ScatterDimensionNumbers(**sd))
    for m in ["clip", "fill", "drop", "promise_in_bounds", "one_hot"]:
        assert slax.GatherScatterMode.from_any(m).name == jlax.GatherScatterMode.from_any(m).name
    with pytest.raises(ValueError):
        slax.GatherScatterMode.from_any("wrap")


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("mode", [None, "fill", "clip"])
def test_take_values(axis: int | None, mode: str | None) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[0, 5], [-1, 2]])
    same(snp.take(sarr(x), i, axis=axis, mode=mode), jnp.take(x, i, axis=axis, mode=mode))
