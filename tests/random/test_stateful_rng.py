"""The stateful generator of JEP 28845 (``jax.experimental.random``):
draw sequences, eager and under jit, compared bit for bit with real JAX
run live; its printed forms, jaxprs and errors (classes and messages)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import random as jxr

import spec
import spec.numpy as sjnp
from spec._src.random import stateful as sxr
from tests.support.twin import run_both
from tests.support.pair import class_and_message

SEEDS = [0, 1, 42, 2**31 - 1, -7]


# Uniforms over [0, 1) and integers and keys agree bit for bit. XLA fuses
# ``u * (hi - lo) + lo`` into one multiply-add, which spec does not (SPEC.md
# section 8), so other ranges agree to 1 ULP, and normals (erf_inv, steep
# near +-1) to a few: the tolerances of tests/random/test_random.py.
NORMAL_ULP = 8


def _same(ours: Any, theirs: Any, ulp: int = 0) -> None:
    """Equal values of equal dtype and shape (key arrays by their words;
    floats within ``ulp`` units in the last place)."""
    if jax.dtypes.issubdtype(theirs.dtype, jax.dtypes.prng_key):
        assert str(ours.dtype) == str(theirs.dtype)
        ours, theirs = spec.random.key_data(ours), jax.random.key_data(theirs)
    assert str(ours.dtype) == str(theirs.dtype)
    assert ours.shape == theirs.shape
    a, b = np.asarray(ours), np.asarray(theirs)
    if ulp and a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        np.testing.assert_array_max_ulp(a, b, maxulp=ulp)
    elif ulp and a.dtype.kind == "f" or str(a.dtype) == "bfloat16":
        # Narrow floats: within one step of their own precision.
        eps = float(jax.dtypes.finfo(a.dtype).eps)
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32),
                                   rtol=eps * (ulp or 0), atol=0)
    else:
        assert a.tobytes() == b.tobytes(), (a, b)


# The tolerance (in ULPs) of each draw of ``_draws``.
ULPS = [0, 0, 0, 0, 1, 1, NORMAL_ULP, NORMAL_ULP, NORMAL_ULP, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]


def _draws(rng: Any, jnp: Any) -> list[Any]:
    """A mixed sequence of draws, every method and several dtypes."""
    return [
        rng.random(), rng.random(3), rng.random((2, 2)),
        rng.uniform(), rng.uniform(-1, 2, (2, 2)),
        rng.uniform(jnp.zeros((2, 1)), jnp.ones(3)),
        rng.normal(), rng.normal(1., 2., 3), rng.normal(jnp.zeros(2), 1.),
        rng.integers(10, size=4), rng.integers(2, 5, (2,)), rng.integers(-3, 3),
        rng.key(), rng.key(3), rng.key((2, 2)),
        rng.random(dtype=jnp.float16), rng.uniform(size=2, dtype=jnp.bfloat16),
        rng.integers(5, size=3, dtype=jnp.int8), rng.integers(0, 1000, 2, dtype=jnp.uint16),
        rng._counter[...],
    ]


@pytest.mark.parametrize("seed", SEEDS)
def test_eager_sequence_matches_jax(seed: int) -> None:
    ours = _draws(sxr.stateful_rng(seed), sjnp)
    theirs = _draws(jxr.stateful_rng(seed), jjnp)
    for a, b, ulp in zip(ours, theirs, ULPS, strict=True):
        _same(a, b, ulp)


def test_eager_sequence_matches_jax_x64(x64: None) -> None:
    for seed in (0, 3, 2**40 + 5):
        for a, b, ulp in zip(_draws(sxr.stateful_rng(seed), sjnp),
                             _draws(jxr.stateful_rng(seed), jjnp), ULPS, strict=True):
            _same(a, b, ulp)


def _jit_program(lib: Any, xr: Any, seed: int) -> list[Any]:
    rng = xr.stateful_rng(seed)
    f = lib.jit(lambda r: r.random(2))
    g = lib.jit(rng.uniform)
    h = lib.jit(lambda r, x: (x + r.normal(size=x.shape), r.integers(7, size=2), r.key()))
    out: list[Any] = [f(rng), f(rng), g(), g(), rng.random(), *h(rng, lib.numpy.ones(3)),
                      f(rng), rng._counter[...]]

    @lib.jit
    def inner(s: Any) -> Any:
        r = xr.stateful_rng(s)
        return r.uniform(size=2), r.normal(), r.integers(3, 9)
    out.extend(inner(seed))
    return out


JIT_ULPS = [0, 0, 0, 0, 0, NORMAL_ULP, 0, 0, 0, 0, 0, NORMAL_ULP, 0]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_jit_sequence_matches_jax(seed: int) -> None:
    ours = _jit_program(spec, sxr, seed)
    theirs = _jit_program(jax, jxr, seed)
    for a, b, ulp in zip(ours, theirs, JIT_ULPS, strict=True):
        _same(a, b, ulp)


def test_jit_and_eager_draws_interleave() -> None:
    """One counter: eager and jitted draws continue each other's sequence."""
    ours, theirs = sxr.stateful_rng(5), jxr.stateful_rng(5)
    fs, fj = spec.jit(lambda r: r.random()), jax.jit(lambda r: r.random())
    for _ in range(3):
        _same(fs(ours), fj(theirs))
        _same(ours.random(), theirs.random())
    _same(ours._counter[...], theirs._counter[...])


def test_jaxprs_match_jax() -> None:
    cases: list[Callable[[Any], Any]] = [
        lambda r: r.random(2),
        lambda r: r.integers(3, 7, (2,)),
        lambda r: r.normal(1., 2.),
        lambda r: r.key(2),
    ]
    for fn in cases:
        ours = str(spec.make_jaxpr(fn)(sxr.stateful_rng(0)))
        theirs = str(jax.make_jaxpr(fn)(jxr.stateful_rng(0)))
        assert ours == theirs


def test_printed_forms_and_tree() -> None:
    for seed in (0, 42):
        assert repr(sxr.stateful_rng(seed)) == repr(jxr.stateful_rng(seed))
    assert repr(sxr.stateful_rng(9).split(3)) == repr(jxr.stateful_rng(9).split(3))
    assert str(spec.tree_util.tree_structure(sxr.stateful_rng(0))) == \
        str(jax.tree_util.tree_structure(jxr.stateful_rng(0)))
    ours = [str(p) for p, _ in spec.tree_util.tree_flatten_with_path(sxr.stateful_rng(0))[0]]
    theirs = [str(p) for p, _ in jax.tree_util.tree_flatten_with_path(jxr.stateful_rng(0))[0]]
    assert ours == theirs


def test_split_and_spawn_match_jax() -> None:
    ours, theirs = sxr.stateful_rng(123), jxr.stateful_rng(123)
    for a, b in zip(ours.spawn(3), theirs.spawn(3), strict=True):
        _same(a.integers(0, 10, 2), b.integers(0, 10, 2))
        _same(a.random(), b.random())
    s, j = ours.split((2, 2)), theirs.split((2, 2))
    _same(s._base_key, j._base_key)
    _same(s._counter[...], j._counter[...])
    _same(ours.random(), theirs.random())


def test_unseeded_generator_is_usable() -> None:
    rng = sxr.stateful_rng()
    a, b = rng.random(4), rng.random(4)
    assert a.dtype == np.float32 and not np.array_equal(np.asarray(a), np.asarray(b))
    assert int(rng._counter[...]) == 2




def _errors(lib: Any, xr: Any) -> list[Callable[[], Any]]:
    jnp = lib.numpy
    rng = xr.stateful_rng(42)
    return [
        lambda: lib.jit(lambda: xr.stateful_rng().uniform())(),
        lambda: xr.stateful_rng(1).split(3).key(),
        lambda: xr.stateful_rng(1).split(2).random(),
        lambda: xr.StatefulPRNG(1, 2),
        lambda: xr.StatefulPRNG(lib.random.key(0), 2),
        lambda: xr.StatefulPRNG(lib.random.PRNGKey(0), lib.new_ref(0)),
        lambda: lib.vmap(lambda x: x + rng.uniform())(jnp.zeros(3)),
        lambda: lib.jit(lib.vmap(lambda x: x + rng.normal()))(jnp.zeros(3)),
        lambda: rng.uniform(jnp.zeros(2), jnp.ones(3)),
        lambda: rng.random(2.5),
        lambda: rng.key((2, "a")),
        lambda: rng.integers(5, dtype=jnp.float32),
        lambda: rng.random(dtype=jnp.int32),
    ]


def test_errors_match_jax() -> None:
    ours, theirs = _errors(spec, sxr), _errors(jax, jxr)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        (ca, ma), (cb, mb) = class_and_message(a), class_and_message(b)
        assert ca is cb, (i, ma, mb)
        if i < 8:
            assert ma == mb, i


def test_returning_the_generator_from_jit_fails_as_in_jax() -> None:
    ca, _ = class_and_message(lambda: spec.jit(lambda r: r)(sxr.stateful_rng(0)))
    cb, _ = class_and_message(lambda: jax.jit(lambda r: r)(jxr.stateful_rng(0)))
    assert ca is cb is ValueError


def test_failed_vmap_draw_leaves_counter() -> None:
    rng = sxr.stateful_rng(0)
    with pytest.raises(Exception, match="unbatched array reference"):
        spec.vmap(lambda x: x + rng.uniform())(sjnp.zeros(3))
    assert int(rng._counter[...]) == 0


def _vmapped(lib: Any, xr: Any) -> list[Any]:
    s = xr.stateful_rng(123).split(3)
    f = lib.vmap(lambda r, x: x + r.uniform())
    g = lib.jit(lib.vmap(lambda r, x: (x + r.random(2), r.integers(9, size=2), r.key())))
    x = lib.numpy.zeros(3)
    return [f(s, x), f(s, x), *g(s, lib.numpy.zeros((3, 2))), s._counter[...],
            *lib.vmap(lambda r: r.split(2)._base_key)(s),
            *lib.vmap(lambda s: xr.stateful_rng(s).random())(lib.numpy.arange(3))]


def test_vmap_over_split_generator_matches_jax() -> None:
    ours, theirs = _vmapped(spec, sxr), _vmapped(jax, jxr)
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)


SHARD_MAP = r'''
import importlib
import numpy as np
jax, jnp = IMPL
jax.config.update('jax_num_cpu_devices', 4)
xr = importlib.import_module(jax.__name__ + '.experimental.random')
P = jax.P
out = {}
def cell(name, fn):
    try:
        out[name] = str(np.asarray(fn()).round(5))
    except Exception as e:
        out[name] = "raises " + type(e).__name__
jax.set_mesh(jax.make_mesh((4,), ('i',), axis_types=(jax.sharding.AxisType.Auto,)))
x = jnp.zeros(8)
rng = xr.stateful_rng(42)
sm = lambda f, i, o: jax.shard_map(f, in_specs=i, out_specs=o)
cell('arg jit', lambda: jax.jit(sm(lambda r, x: x + r.uniform(), (P(), P('i')), P('i')))(rng, x))
cell('inside jit', lambda: jax.jit(sm(lambda x: x + xr.stateful_rng(1).uniform(), P('i'),
                                      P('i')))(x))
cell('counter', lambda: rng._counter[...])
'''


def test_shard_map_matches_jax() -> None:
    ours, theirs = run_both(SHARD_MAP)
    assert ours == theirs


def test_module_surface() -> None:
    ours = importlib.import_module("spec.experimental.random")
    assert {"stateful_rng", "StatefulPRNG"} <= set(dir(ours))
    public = {n for n in dir(jxr.StatefulPRNG) if not n.startswith("_")}
    assert public <= set(dir(sxr.StatefulPRNG))
