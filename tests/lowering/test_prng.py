"""The lowering of the PRNG primitives: keys are their uint32 key data, and
the compiled module's bits are spec's and ``jax.jit``'s, bit for bit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import spec
from jax._src.random import threefry2x32 as jax_threefry
from spec._src.lax.prng import threefry2x32_p
from tests.lowering.xla_run import bits, canonical, lowered, spec_and_compiled


def _key_arrays(m: Any, k: Any, i: Any) -> list[Any]:
    """Structural ops, control flow and dynamic slices on key arrays (one
    hash: XLA's compile time grows with each)."""
    rnd, jnp, lax = m.random, m.numpy, m.lax
    ks = rnd.split(k, 6).reshape(2, 3)
    row = ks[1]
    carry, ys = lax.scan(lambda c, kx: (kx, rnd.key_data(c)), k, row)
    outs = (ks.T, jnp.broadcast_to(ks[0], (2, 3)), jnp.concatenate([ks[0], row[::-1]]),
            lax.fori_loop(0, 3, lambda _, kk: kk[::-1], row), carry,
            lax.select(jnp.array([True, False, True]), ks[0], row),
            lax.cond(i > 0, lambda: ks[0, 1], lambda: row[2]), row[i],
            lax.dynamic_update_slice(row, ks[0, :1], (i,)),
            lax.dynamic_slice(ks, (i, 0), (1, 2)),
            # Gathers and scatters: whole keys at a time, a missing one all ones.
            ks[jnp.array([1, 0]), i], row[jnp.array([[2], [0]])], row.at[i].set(k),
            ks.at[jnp.array([0, 1]), jnp.array([2, 0])].set(row[:2]),
            jnp.take(row, jnp.array([2, 7, -1]), axis=0))
    return [rnd.key_data(x) for x in outs] + [ys]


def _program(m: Any) -> Callable[..., Any]:
    rnd, vmap = m.random, m.vmap

    def fn(seed: Any, data: Any, i: Any) -> Any:
        key = rnd.key(seed)
        wrapped = rnd.wrap_key_data(data)
        keys = rnd.split(wrapped, 3)
        return (rnd.key_data(key), rnd.bits(key, (5,)), rnd.key_data(keys),
                rnd.bits(rnd.fold_in(wrapped, 3), (2, 3), np.uint8),
                vmap(lambda k: rnd.bits(k, (2,), np.uint16))(keys),
                rnd.key_data(vmap(lambda k: rnd.fold_in(k, 9))(keys)),
                rnd.key_data(rnd.clone(wrapped)), rnd.key_data(rnd.split(key)),
                _key_arrays(m, wrapped, i))
    return fn


_DATA = np.array([123, 4567], np.uint32)


def test_key_primitives_bitwise() -> None:
    """The key primitives, and slicing, reshaping, transposing,
    broadcasting, selecting and looping over key arrays, lower their key
    data (JAX's physical types): XLA's bits are spec's and JAX's."""
    args = (np.int32(-3), _DATA, np.int32(1))
    ours, compiled, text = spec_and_compiled(_program(spec), *args)
    theirs = jax.tree.leaves(jax.jit(_program(jax))(*args))
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]
    assert [bits(c) for c in compiled] == [bits(np.asarray(t)) for t in theirs]
    # A key argument or result is its data: tensor<2xui32>.
    assert "tensor<2xui32>" in text and "key<" not in text
    assert "tensor<2x3x2xui32>" in text


def test_64_bit_bits_and_seed(x64: None) -> None:
    seed = np.int64(-(2 ** 40) - 5)

    def fn(m: Any) -> Callable[..., Any]:
        rnd = m.random

        def f(s: Any) -> Any:
            k = rnd.key(s)
            with m.threefry_partitionable(False):  # (the original scheme's 64-bit values)
                original = (rnd.bits(k, (3,), np.uint64),
                            m.vmap(lambda kk: rnd.bits(kk, (2,), np.uint64))(rnd.split(k, 2)))
            return rnd.key_data(k), rnd.bits(k, (4,), np.uint64), original
        return f
    ours, compiled, _ = spec_and_compiled(fn(spec), seed)
    theirs = jax.tree.leaves(jax.jit(fn(jax))(seed))
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]
    assert [bits(c) for c in compiled] == [bits(np.asarray(t)) for t in theirs]


@pytest.mark.parametrize("shapes", [((), (), (3,), (3,)), ((3,), (3,), (), (3,))])
def test_threefry2x32_text_is_jax_cpu_lowering(shapes: tuple[tuple[int, ...], ...]) -> None:
    """A call of @threefry2x32, whose stablehlo.while runs the five groups
    of rounds: JAX's CPU module, up to SSA names."""
    args = [np.arange(int(np.prod(s)), dtype=np.uint32).reshape(s) * 7 + k
            for k, s in enumerate(shapes)]
    ours = lowered(threefry2x32_p.bind, *args)
    theirs = jax.jit(jax_threefry.threefry2x32_p.bind).lower(*args).as_text()
    assert canonical(ours) == canonical(theirs)


def test_threefry2x32_broadcasts_rank0_operands() -> None:
    k1, k2 = np.uint32(0x13198A2E), np.uint32(0x03707344)
    x1 = np.arange(6, dtype=np.uint32).reshape(2, 3)
    x2 = np.full((2, 3), 0xDEADBEEF, np.uint32)

    ours, compiled, _ = spec_and_compiled(threefry2x32_p.bind, k1, k2, x1, x2)
    theirs = jax.jit(jax_threefry.threefry2x32_p.bind)(k1, k2, x1, x2)
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]
    assert [bits(c) for c in compiled] == [bits(np.asarray(t)) for t in theirs]


def _original_scheme(m: Any) -> Callable[..., Any]:
    """Bits and splits traced with ``jax_threefry_partitionable`` off and
    lowered (and, in JAX, run) after it is back on: each equation keeps
    the scheme it was traced under. Odd and even word counts, 8/16-bit
    pieces, batched keys."""
    r = m.random

    def fn(data: Any) -> Any:
        m.config.update("jax_threefry_partitionable", False)
        try:
            k = r.wrap_key_data(data)
            ks = r.split(k, 3)
            return (r.bits(k, (3,), np.uint8), r.bits(k, (5,), np.uint16), r.bits(k, (2, 2)),
                    r.key_data(ks), m.vmap(lambda kk: r.bits(kk, (3,), np.uint8))(ks),
                    r.key_data(m.vmap(lambda kk: r.split(kk, (2,)))(ks)))
        finally:
            m.config.update("jax_threefry_partitionable", True)
    return fn


def test_original_scheme_bitwise() -> None:
    ours, compiled, _ = spec_and_compiled(_original_scheme(spec), _DATA)
    theirs = jax.tree.leaves(jax.jit(_original_scheme(jax))(_DATA))
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]
    assert [bits(c) for c in compiled] == [bits(np.asarray(t)) for t in theirs]


_WORDS = st.lists(st.integers(0, 2 ** 32 - 1), min_size=8, max_size=8)


@settings(max_examples=6, deadline=None)
@given(_WORDS)
def test_threefry2x32_bitwise_on_drawn_words(words: list[int]) -> None:
    w = np.array(words, np.uint32)
    k1, k2, x1, x2 = w[0], w[1], w[2:5], w[5:8]
    ours, compiled, _ = spec_and_compiled(threefry2x32_p.bind, k1, k2, x1, x2)
    assert [bits(o) for o in ours] == [bits(c) for c in compiled]


def _indexing_keys(m: Any) -> list[Callable[..., Any]]:
    jnp = m.numpy
    return [lambda ks, i: ks[i], lambda ks, i: ks.at[i[:1]].set(ks[3]),
            lambda ks, i: jnp.take(ks, i, axis=0),
            lambda ks, i: m.vmap(lambda k, j: k.at[j].set(k[0]))(ks.reshape(2, 2), i)]


def test_indexing_key_arrays_is_jax_text() -> None:
    """Gathers and scatters of key arrays, in a jaxpr and as jit's module
    (key arguments and results pinned as JAX pins them): JAX's text."""
    data, i = np.arange(8, dtype=np.uint32).reshape(4, 2), np.array([2, 0], np.int32)
    for ours, theirs in zip(_indexing_keys(spec), _indexing_keys(jax)):
        sk, jk = spec.random.wrap_key_data(data), jax.random.wrap_key_data(data)
        assert str(spec.make_jaxpr(ours)(sk, i)) == str(jax.make_jaxpr(theirs)(jk, i))
        assert (canonical(spec.jit(ours).lower(sk, i).as_text())
                == canonical(jax.jit(theirs).lower(jk, i).as_text()))


def _calls_taking_keys(m: Any) -> Callable[..., Any]:
    @m.custom_batching.custom_vmap
    def data(k: Any) -> Any:
        return m.random.key_data(k)

    @data.def_vmap
    def _(size: int, batched: Any, k: Any) -> Any:
        return m.random.key_data(k), True

    def fn(k: Any, x: Any) -> Any:
        doubled = m.custom_derivatives.linear_call(lambda k, x: x * 2.0,
                                                   lambda k, ct: ct * 2.0, k, x)
        return data(k), doubled
    return fn


def test_inlined_calls_take_key_operands_as_jax() -> None:
    """custom_vmap_call and linear_call, whose bodies lower in place, take
    key operands (as their key data): jit's module is JAX's text."""
    x = np.float32(1.5)
    ours = spec.jit(_calls_taking_keys(spec)).lower(spec.random.key(3), x).as_text()
    theirs = jax.jit(_calls_taking_keys(jax)).lower(jax.random.key(3), x).as_text()
    assert canonical(ours) == canonical(theirs)


def test_gamma_lowers_its_sampler() -> None:
    """random_gamma lowers the vmapped Marsaglia-Tsang sampler (keys split
    per parameter, rejection loops carrying keys): XLA's samples are spec's
    within a few ulps (SPEC.md section 8, item 7: XLA contracts the uniforms' scaling into
    FMAs; a boosted sample, alpha < 1, raises a uniform to 1/alpha, which
    scales its error by as much)."""
    def fn(m: Any) -> Callable[..., Any]:
        return lambda data, a: m.vmap(m.random.gamma)(
            m.random.split(m.random.wrap_key_data(data)), a)
    a = np.array([[0.3, 4.5], [1.0, 0.05]], np.float32)
    (ours,), (compiled,), _ = spec_and_compiled(fn(spec), _DATA, a)
    np.testing.assert_array_max_ulp(ours, compiled, maxulp=8)
