# mypy: allow-untyped-defs, allow-untyped-calls
# (the programs below are user code, written once for JAX and for spec)
"""Effects that JAX refuses to transform, and the neighbouring ones it
accepts, run with real JAX and with spec: the same exception class and
message, or the same values.

- ``vmap`` of an ordered ``io_callback`` (directly, under ``jit``, in a
  ``scan``): ValueError; ordered ``debug.print`` is batched.
- ``vmap`` of a ``cond`` whose branches call ``io_callback`` (ordered or not,
  whatever the predicate): NotImplementedError.
- ``vmap`` of a ``while_loop`` with an ordered ``io_callback`` in its body or
  condition: Exception; an unordered one with a batched predicate: Exception.
- Ordered effects inside ``cond`` branches, ``while_loop`` conditions and
  bodies, ``scan`` and ``shard_map`` (one device) run.
- A jitted program over two devices with an ordered ``debug.print``:
  ValueError (an ordered ``io_callback`` there runs, as does an eager
  ``shard_map``); JAX on two CPU devices runs in a subprocess.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import jax
import jax.experimental
import numpy as np
import pytest

import spec
import spec.experimental
from tests.support.twin import run_both

JAX = SimpleNamespace(jax=jax, io_callback=jax.experimental.io_callback,
                      P=jax.sharding.PartitionSpec, shard_map=jax.shard_map)
SPEC = SimpleNamespace(jax=spec, io_callback=spec.experimental.io_callback,
                       P=spec.sharding.PartitionSpec, shard_map=spec.shard_map)

XS = np.arange(3.0, dtype=np.float32)
ONE = np.float32(1)
ZERO = np.float32(0)


def _identity(x):
    return x


class Effects:
    """The effectful functions of one library."""

    def __init__(self, L: SimpleNamespace) -> None:
        self.L = L
        self.jax = L.jax
        self.lax = L.jax.lax

    def ordered_io(self, x):
        return self.L.io_callback(_identity, self.jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                  ordered=True)

    def unordered_io(self, x):
        return self.L.io_callback(_identity, self.jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                  ordered=False)

    def ordered_print(self, x):
        self.jax.debug.print("x={}", x, ordered=True)
        return x

    def in_cond(self, branch):
        return lambda p, x: self.lax.cond(p, branch, _identity, x)

    def in_while_body(self, f):
        return lambda x: self.lax.while_loop(lambda c: c < 3, lambda c: f(c) + 1, x)

    def in_while_cond(self, f):
        return lambda x: self.lax.while_loop(lambda c: f(c) < 3, lambda c: c + 1, x)

    def in_shard_map(self, f):
        mesh = self.jax.sharding.Mesh(np.array(self.jax.devices()[:1]), ("i",))
        return self.L.shard_map(f, mesh=mesh, in_specs=self.L.P("i"), out_specs=self.L.P("i"))


PREDS = np.array([True, False, True])

CASES: dict[str, Callable[[Effects], Any]] = {
    # vmap of the callbacks themselves
    "vmap ordered io_callback": lambda E: E.jax.vmap(E.ordered_io)(XS),
    "jit vmap ordered io_callback": lambda E: E.jax.jit(E.jax.vmap(E.ordered_io))(XS),
    "vmap jit ordered io_callback": lambda E: E.jax.vmap(E.jax.jit(E.ordered_io))(XS),
    "vmap unordered io_callback": lambda E: E.jax.vmap(E.unordered_io)(XS),
    "vmap ordered debug.print": lambda E: E.jax.vmap(E.ordered_print)(XS),
    "vmap scan ordered io_callback": lambda E: E.jax.vmap(lambda x: E.lax.scan(
        lambda c, _: (E.ordered_io(c) + 1, None), x, None, length=2))(XS),
    "vmap fori_loop unbatched ordered io_callback": lambda E: E.jax.vmap(
        lambda x: E.lax.fori_loop(0, 2, lambda i, c: E.ordered_io(ONE) + c, x))(XS),
    # vmap of cond
    "vmap cond ordered io_callback": lambda E: E.jax.vmap(E.in_cond(E.ordered_io))(PREDS, XS),
    "vmap cond unordered io_callback": lambda E: E.jax.vmap(E.in_cond(E.unordered_io))(
        PREDS, XS),
    "vmap cond unbatched predicate io_callback": lambda E: E.jax.vmap(
        lambda x: E.in_cond(E.ordered_io)(True, x))(XS),
    "vmap cond ordered debug.print": lambda E: E.jax.vmap(E.in_cond(E.ordered_print))(
        PREDS, XS),
    # vmap of while_loop
    "vmap while body ordered io_callback": lambda E: E.jax.vmap(
        E.in_while_body(E.ordered_io))(XS),
    "vmap while cond ordered io_callback": lambda E: E.jax.vmap(
        E.in_while_cond(E.ordered_io))(XS),
    "vmap while batched predicate unordered io_callback": lambda E: E.jax.vmap(
        E.in_while_body(E.unordered_io))(XS),
    "vmap while ordered debug.print": lambda E: E.jax.vmap(E.in_while_body(E.ordered_print))(XS),
    # ordered effects inside control flow, not batched: they run
    "cond ordered io_callback": lambda E: E.in_cond(E.ordered_io)(True, ONE),
    "jit cond ordered io_callback": lambda E: E.jax.jit(E.in_cond(E.ordered_io))(True, ONE),
    "jit switch ordered io_callback": lambda E: E.jax.jit(
        lambda i, x: E.lax.switch(i, [E.ordered_io, _identity], x))(0, ONE),
    "jit while body ordered io_callback": lambda E: E.jax.jit(E.in_while_body(E.ordered_io))(
        ZERO),
    "jit while cond ordered io_callback": lambda E: E.jax.jit(E.in_while_cond(E.ordered_io))(
        ZERO),
    "while cond ordered io_callback": lambda E: E.in_while_cond(E.ordered_io)(ZERO),
    "jit while cond ordered debug.print": lambda E: E.jax.jit(
        E.in_while_cond(E.ordered_print))(ZERO),
    "jit scan ordered io_callback": lambda E: E.jax.jit(lambda x: E.lax.scan(
        lambda c, _: (E.ordered_io(c) + 1, None), x, None, length=2))(ZERO),
    # shard_map over one device
    "shard_map ordered io_callback": lambda E: E.in_shard_map(E.ordered_io)(XS[:1]),
    "jit shard_map ordered io_callback": lambda E: E.jax.jit(E.in_shard_map(E.ordered_io))(
        XS[:1]),
    "shard_map ordered debug.print": lambda E: E.in_shard_map(E.ordered_print)(XS[:1]),
    "jit shard_map ordered debug.print": lambda E: E.jax.jit(E.in_shard_map(E.ordered_print))(
        XS[:1]),
    # differentiation
    "grad ordered io_callback": lambda E: E.jax.grad(E.ordered_io)(ONE),
}


def _outcome(L: SimpleNamespace, case: str) -> Any:
    try:
        out = CASES[case](Effects(L))
    except Exception as e:  # noqa: BLE001 (the class and message are compared)
        return type(e).__name__, str(e)
    return [np.asarray(x).tolist() for x in L.jax.tree_util.tree_leaves(out)]


@pytest.mark.parametrize("case", list(CASES))
def test_effect_outcome_matches_jax(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    theirs = _outcome(JAX, case)
    jax.effects_barrier()
    printed_by_jax = capsys.readouterr().out
    ours = _outcome(SPEC, case)
    spec.effects_barrier()
    assert ours == theirs
    assert capsys.readouterr().out == printed_by_jax


def test_some_cases_refuse_and_some_run() -> None:
    outcomes = [_outcome(JAX, c) for c in CASES]
    refused = [o for o in outcomes if isinstance(o, tuple)]
    assert refused and len(refused) < len(outcomes)


MULTI_DEVICE = r'''
import numpy as np
jax, jnp = IMPL
jax.config.update('jax_num_cpu_devices', 2)
io_callback = __import__(jax.__name__ + '.experimental').experimental.io_callback
P, NamedSharding = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
out = {}
def ordered_print(x):
    jax.debug.print("x={}", x, ordered=True)
    return x
def ordered_io(x):
    return io_callback(lambda v: v, jax.ShapeDtypeStruct(x.shape, x.dtype), x, ordered=True)
mesh = jax.make_mesh((2,), ("i",))
xs = np.arange(2.0, dtype=np.float32)
placed = jax.device_put(xs, NamedSharding(mesh, P("i")))
def mapped(f):
    return jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
cases = {
    "jit shard_map ordered print": lambda: jax.jit(mapped(ordered_print))(placed),
    "jit shard_map ordered io_callback": lambda: jax.jit(mapped(ordered_io))(placed),
    "shard_map ordered print": lambda: mapped(ordered_print)(placed),
    "jit ordered print, sharded input": lambda: jax.jit(ordered_print)(placed),
    "jit ordered print, one device": lambda: jax.jit(ordered_print)(xs),
    "jit unordered print, sharded input": lambda: jax.jit(
        lambda x: (jax.debug.print("{}", x), x)[1])(placed),
}
for name, case in cases.items():
    try:
        out[name] = np.asarray(case()).tolist()
    except Exception as e:
        # (the message ends listing the effects: JAX shows their object reprs)
        out[name] = type(e).__name__ + ": " + str(e).split(": [")[0]
'''


def test_ordered_effects_over_several_devices_as_jax() -> None:
    ours, theirs = run_both(MULTI_DEVICE, devices=2)
    assert ours == theirs
    assert any(str(v).startswith("ValueError") for v in theirs.values())
