"""Typed PRNG keys as ordinary array values, against JAX run live: selection,
stacking, indexing, scan/vmap/cond/fori over keys, pytrees, and the
operations JAX refuses on keys (same exception class)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec._src.core import prng as _prng
from tests.support.pair import errors_alike

Prog = Callable[[Any, Any, Any], Any]


def _host(x: Any, lib: Any) -> tuple[str, Any]:
    """An output as (type text, nested lists): keys as their words."""
    if lib is spec:
        is_key = _prng.is_key_dtype(x.dtype)
    else:
        is_key = jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
    text = str(lib.typeof(x))
    return (text, np.asarray(lib.random.key_data(x) if is_key else x).tolist())


def _run(prog: Prog, lib: Any, np_: Any) -> list[tuple[str, Any]]:
    out = prog(lib.random, np_, lib)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [_host(o, lib) for o in outs]


CASES: list[tuple[str, Prog]] = [
    ("where", lambda r, np_, j: np_.where(np.array([True, False, True]), r.split(r.key(0), 3),
                                          r.split(r.key(1), 3))),
    ("where scalar", lambda r, np_, j: np_.where(True, r.key(0), r.key(1))),
    ("select", lambda r, np_, j: j.lax.select(np.array([True, False]), r.split(r.key(0)),
                                              r.split(r.key(1)))),
    ("stack", lambda r, np_, j: np_.stack([r.key(0), r.key(1)])),
    ("stack axis 1", lambda r, np_, j: np_.stack([r.split(r.key(0)), r.split(r.key(1))], 1)),
    ("concatenate", lambda r, np_, j: np_.concatenate([r.split(r.key(0)),
                                                       r.split(r.key(1), 3)])),
    ("index", lambda r, np_, j: r.split(r.key(0), (3, 4))[1, 2:]),
    ("index array", lambda r, np_, j: r.split(r.key(0), 5)[np.array([4, 0, 2])]),
    ("index bool", lambda r, np_, j: r.split(r.key(0), 3)[np.array([True, False, True])]),
    ("index negative", lambda r, np_, j: r.split(r.key(0), 4)[-1]),
    ("at set", lambda r, np_, j: r.split(r.key(0), 3).at[1].set(r.key(9))),
    ("reshape T", lambda r, np_, j: r.split(r.key(0), 6).reshape(2, 3).T),
    ("broadcast_to", lambda r, np_, j: np_.broadcast_to(r.key(0), (2,))),
    ("expand_dims", lambda r, np_, j: np_.expand_dims(r.key(0), 0)),
    ("flip", lambda r, np_, j: np_.flip(r.split(r.key(0), 3))),
    ("take", lambda r, np_, j: np_.take(r.split(r.key(0), 3), np.array([2, 1]))),
    ("squeeze", lambda r, np_, j: r.split(r.key(0), (1, 2)).squeeze(0)),
    ("ravel", lambda r, np_, j: r.split(r.key(0), (2, 2)).ravel()),
    ("asarray", lambda r, np_, j: np_.asarray(r.key(0))),
    ("array", lambda r, np_, j: np_.array(r.split(r.key(0)))),
    ("size ndim", lambda r, np_, j: np_.array([r.split(r.key(0), (2, 3)).size,
                                               r.split(r.key(0), (2, 3)).ndim])),
    ("scan over keys", lambda r, np_, j: j.lax.scan(
        lambda c, k: (c + r.uniform(k), r.normal(k, (2,))), 0.0, r.split(r.key(0), 4))),
    ("scan key carry", lambda r, np_, j: j.lax.scan(
        lambda k, _: (r.split(k)[0], r.bits(r.split(k)[1])), r.key(3), None, length=3)),
    ("vmap sampler", lambda r, np_, j: j.vmap(lambda k: r.uniform(k, (2,)))(r.split(r.key(0), 3))),
    ("vmap key out", lambda r, np_, j: j.vmap(lambda k: r.split(k, 2))(r.split(r.key(0), 3))),
    ("vmap raw keys", lambda r, np_, j: j.vmap(lambda k: r.normal(k, (2,)))(
        r.split(r.PRNGKey(0), 3))),
    ("vmap where", lambda r, np_, j: j.vmap(lambda c, k: np_.where(c, k, r.key(7)))(
        np.array([True, False]), r.split(r.key(0)))),
    ("jit key out", lambda r, np_, j: j.jit(lambda k: r.split(k))(r.key(0))),
    ("jit index", lambda r, np_, j: j.jit(lambda k: k[None])(r.key(0))),
    ("cond", lambda r, np_, j: j.lax.cond(True, lambda k: r.split(k)[0], lambda k: k, r.key(0))),
    ("fori_loop", lambda r, np_, j: j.lax.fori_loop(0, 3, lambda i, k: r.fold_in(k, i),
                                                     r.key(0))),
    ("tree_map", lambda r, np_, j: j.tree_util.tree_map(lambda k: r.fold_in(k, 1),
                                                        {"a": r.key(0)})["a"]),
    ("device_put", lambda r, np_, j: j.device_put(r.key(0))),
]


@pytest.mark.parametrize("name, prog", CASES, ids=[n for n, _ in CASES])
def test_keys_as_values(name: str, prog: Prog) -> None:
    assert _run(prog, spec, snp) == _run(prog, jax, jnp)


JAXPRS: list[tuple[str, Callable[[Any, Any, Any, Any], Any]]] = [
    ("where", lambda r, np_, j, k: np_.where(np.array([True, False]), r.split(k),
                                             r.split(k)[::-1])),
    ("stack", lambda r, np_, j, k: np_.stack([k, r.fold_in(k, 1)])),
    ("concatenate", lambda r, np_, j, k: np_.concatenate([r.split(k), r.split(k, 3)])),
    ("index", lambda r, np_, j, k: r.split(k, 5)[np.array([4, 0])]),
    ("scan", lambda r, np_, j, k: j.lax.scan(lambda c, kk: (c, r.normal(kk)), 0.0,
                                             r.split(k, 3))),
    ("vmap", lambda r, np_, j, k: j.vmap(lambda kk: r.bits(kk, (2,)))(r.split(k, 3))),
]


@pytest.mark.parametrize("name, prog", JAXPRS, ids=[n for n, _ in JAXPRS])
def test_keys_as_values_jaxpr(name: str, prog: Callable[[Any, Any, Any, Any], Any]) -> None:
    ours = spec.make_jaxpr(lambda k: prog(spec.random, snp, spec, k))(spec.random.key(0))
    theirs = jax.make_jaxpr(lambda k: prog(jax.random, jnp, jax, k))(jax.random.key(0))
    assert str(ours) == str(theirs)


KEY_FILLS_AND_COMPARISONS: list[tuple[str, Prog]] = [
    ("zeros_like", lambda r, np_, j: np_.zeros_like(r.split(r.key(0), 3))),
    ("ones_like", lambda r, np_, j: np_.ones_like(r.key(0))),
    ("ones_like shape", lambda r, np_, j: np_.ones_like(r.key(0), shape=(2, 3))),
    ("full_like", lambda r, np_, j: np_.full_like(r.key(0), 1)),
    ("full_like key fill", lambda r, np_, j: np_.full_like(r.split(r.key(0), 2), r.key(5))),
    ("full_like jit", lambda r, np_, j: j.jit(lambda k: np_.full_like(k, 7))(r.split(r.key(0)))),
    ("eq", lambda r, np_, j: r.split(r.key(0), 3) == r.split(r.key(0), 3)[::-1]),
    ("ne", lambda r, np_, j: r.key(0) != r.key(1)),
    ("eq broadcast", lambda r, np_, j: r.split(r.key(0), 3) == r.split(r.key(0), 3)[1]),
    ("eq one word differs", lambda r, np_, j: r.wrap_key_data(np.uint32([[0, 1], [0, 2]]))
        == r.wrap_key_data(np.uint32([0, 1]))),
    ("ne one word differs", lambda r, np_, j: r.wrap_key_data(np.uint32([[0, 1], [3, 1]]))
        != r.wrap_key_data(np.uint32([0, 1]))),
    ("lax eq", lambda r, np_, j: j.lax.eq(r.key(0), r.key(0))),
    ("jit eq", lambda r, np_, j: j.jit(lambda a, b: a == b)(r.split(r.key(0)), r.key(0))),
    ("vmap ne", lambda r, np_, j: j.vmap(lambda a, b: a != b)(r.split(r.key(0)),
                                                              r.split(r.key(1)))),
]


@pytest.mark.parametrize("name, prog", KEY_FILLS_AND_COMPARISONS,
                         ids=[n for n, _ in KEY_FILLS_AND_COMPARISONS])
def test_key_fills_and_comparisons(name: str, prog: Prog) -> None:
    assert _run(prog, spec, snp) == _run(prog, jax, jnp)


KEY_JAXPRS: list[tuple[str, Callable[[Any, Any, Any, Any], Any]]] = [
    ("eq", lambda r, np_, j, k: r.split(k) == k),
    ("ne", lambda r, np_, j, k: k != r.fold_in(k, 1)),
    ("zeros_like", lambda r, np_, j, k: np_.zeros_like(r.split(k, 3))),
    ("full_like", lambda r, np_, j, k: np_.full_like(k, 3)),
    ("ones_like shape", lambda r, np_, j, k: np_.ones_like(k, shape=(2,))),
    ("full_like key fill", lambda r, np_, j, k: np_.full_like(r.split(k), k)),
]


@pytest.mark.parametrize("name, prog", KEY_JAXPRS, ids=[n for n, _ in KEY_JAXPRS])
def test_key_fills_and_comparisons_jaxpr(name: str,
                                         prog: Callable[[Any, Any, Any, Any], Any]) -> None:
    ours = spec.make_jaxpr(lambda k: prog(spec.random, snp, spec, k))(spec.random.key(0))
    theirs = jax.make_jaxpr(lambda k: prog(jax.random, jnp, jax, k))(jax.random.key(0))
    assert str(ours) == str(theirs)



ERRORS: list[Any] = [
    ("lt", lambda r, np_, j: r.key(0) < r.key(1)),
    ("lt jit", lambda r, np_, j: j.jit(lambda a, b: a < b)(r.key(0), r.key(1))),
    ("lax ge", lambda r, np_, j: j.lax.ge(r.key(0), r.key(1))),
    ("mul", lambda r, np_, j: r.key(0) * 2),
    ("add one", lambda r, np_, j: r.key(0) + 1),
    ("add keys", lambda r, np_, j: r.key(0) + r.key(1)),
    ("divide float", lambda r, np_, j: r.key(0) / 2.0),
    ("astype", lambda r, np_, j: r.key(0).astype(np.uint32)),
    ("astype jit", lambda r, np_, j: j.jit(lambda k: k.astype(np.uint32))(r.key(0))),
    ("jnp astype", lambda r, np_, j: np_.astype(r.key(0), np.float32)),
    ("eq int", lambda r, np_, j: j.jit(lambda k: k == 3)(r.key(0))),
    ("eq raw key", lambda r, np_, j: r.key(0) == r.PRNGKey(0)),
    ("sum", lambda r, np_, j: np_.sum(r.split(r.key(0)))),
    ("sort", lambda r, np_, j: np_.sort(r.split(r.key(0)))),
    ("convert_element_type jit", lambda r, np_, j: j.jit(
        lambda k: j.lax.convert_element_type(k, np.uint32))(r.key(0))),
    ("stack mixed", lambda r, np_, j: np_.stack([r.key(0), np.zeros((), np.uint32)])),
    ("where mixed", lambda r, np_, j: np_.where(True, r.key(0), 1)),
    ("result_type", lambda r, np_, j: np_.result_type(r.key(0), np.uint32)),
    ("sampler of batch", lambda r, np_, j: r.normal(np_.stack([r.key(0), r.key(1)]))),
]
# Cases whose message is JAX's word for word (the others raise from typing
# rules, whose messages cite spec's constraint numbers).
SAME_MESSAGE = {"add one", "mul", "divide float", "astype jit", "jnp astype", "eq int",
                "eq raw key", "stack mixed", "where mixed", "result_type"}
# (JAX lists sort's accepted dtypes from a set: their order varies run to run.)


@pytest.mark.parametrize("name, prog", ERRORS)
def test_key_misuse_raises_as_jax(name: str, prog: Prog) -> None:
    ours, theirs = errors_alike(lambda: prog(spec.random, snp, spec),
                                lambda: prog(jax.random, jnp, jax))
    if name in SAME_MESSAGE:
        assert str(ours) == str(theirs)


# ------------------------------------------------ shardings the samplers rely on
# (run on two CPU devices: JAX in a subprocess, spec in-process; tests/support/twin.py)

SHARDED = r'''
import numpy as np
jax, jnp = IMPL
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        kind = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
        out[name] = ["raises", kind.__name__, str(e)]
def show(v):
    return [str(jax.typeof(v)), np.asarray(v).tolist()]
jax.config.update('jax_num_cpu_devices', 2)
jax.set_mesh(jax.make_mesh((2,), ('X',)))
P = jax.P
x3 = np.arange(3.0, dtype=np.float32)
CASES = {
  "broadcast_to rows": lambda: jnp.broadcast_to(x3, (4, 3), out_sharding=P('X', None)),
  "broadcast_to same shape": lambda: jnp.broadcast_to(np.ones((4, 3)), (4, 3),
                                                      out_sharding=P('X')),
  "broadcast_to indivisible": lambda: jnp.broadcast_to(x3, (4, 3), out_sharding=P(None, 'X')),
  "broadcast_to conflicting": lambda: jnp.broadcast_to(
      jax.reshard(np.ones((2, 1)), P('X')), (2, 4), out_sharding=P(None, 'X')),
  "reshard indivisible": lambda: jax.reshard(x3, P('X')),
  "reshard indivisible 2d": lambda: jax.reshard(np.ones((4, 3)), P(None, 'X')),
  "bits indivisible": lambda: jax.random.bits(jax.random.key(0), (3,), out_sharding=P('X')),
  "geometric array p": lambda: jax.random.geometric(
      jax.random.key(1), np.float32([0.1, 0.5]), (2,), out_sharding=P('X')),
}
for name, fn in CASES.items():
    record(name + " value", lambda: show(fn()))
    record(name + " jaxpr", lambda: str(jax.make_jaxpr(fn)()))
jax.config.update('jax_enable_checks', True)
record("full_like under auto_axes", lambda: str(jax.make_jaxpr(jax.sharding.auto_axes(
    lambda x: jax.lax.full_like(x, 1), out_sharding=P('X')))(np.arange(2))))
'''
_SHARDED_NAMES = [line.split('"')[1] for line in SHARDED.splitlines()
                  if line.startswith('  "') and '": lambda' in line]
_SHARDED_KEYS = [f"{n} {w}" for n in _SHARDED_NAMES for w in ("value", "jaxpr")]


@pytest.fixture(scope="module")
def sharded() -> tuple[dict[str, Any], dict[str, Any]]:
    from tests.support.twin import run_both
    return run_both(SHARDED, devices=2)


@pytest.mark.parametrize("key", [*_SHARDED_KEYS, "full_like under auto_axes"])
def test_sharded_as_jax(sharded: tuple[dict[str, Any], dict[str, Any]], key: str) -> None:
    ours, theirs = sharded
    assert key in theirs and key in ours
    assert ours[key] == theirs[key]
