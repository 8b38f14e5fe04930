"""``jax.make_array_from_single_device_arrays`` and
``Sharding.addressable_devices_indices_map`` against JAX run live on four
CPU devices (tests/support/twin.py): values, types, shardings, shard
indices, and JAX's errors for wrong counts, repeated devices and non-arrays.
Then memories and memory kinds: the devices' memories, ``device_put`` to
host memory (eager and staged, transposed, under vmap and jit), types in
host memory and JAX's errors for unknown kinds and mixed memories; jit's
in_shardings and out_shardings with memory kinds, as the staged jit
equation's params (through jvp, grad and vmap) and lowered; cotangents in
host memory."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lowering.xla_run import parsed
from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import numpy as np
jax, jnp = IMPL
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
jax.config.update('jax_num_cpu_devices', 4)
mesh = jax.make_mesh((2, 2), ('x', 'y'))
s = jax.NamedSharding(mesh, jax.P('x', None))
x = np.arange(16.).reshape(4, 4)
idx = s.addressable_devices_indices_map((4, 4))
record("indices", lambda: [[d.id, str(i)] for d, i in idx.items()])
arrs = [jax.device_put(x[i], d) for d, i in idx.items()]
def made(arrays, sharding=s, shape=(4, 4)):
    y = jax.make_array_from_single_device_arrays(shape, sharding, arrays)
    return [np.asarray(y).tolist(), str(jax.typeof(y)), str(y.sharding),
            [[sh.device.id, str(sh.index)] for sh in y.addressable_shards]]
record("made", lambda: made(arrs))
record("any order", lambda: made(list(reversed(arrs))))
record("too few", lambda: made(arrs[:2]))
record("same device", lambda: made([jax.device_put(np.ones((2, 4)), jax.devices()[0])] * 4))
record("numpy blocks", lambda: made([np.ones((2, 4))] * 4))
one = jax.sharding.SingleDeviceSharding(jax.devices()[1])
record("single device", lambda: made([jax.device_put(x, jax.devices()[1])], one))
# Memories and memory kinds.
d1 = jax.devices()[1]
record("memories", lambda: [[repr(m), str(m), m.kind, m.platform, m.process_index,
                             [d.id for d in m.addressable_by_devices()]]
                            for m in d1.addressable_memories()])
record("default memory", lambda: [str(d1.default_memory()),
                                  d1.memory("device") == d1.default_memory()])
record("unknown memory", lambda: d1.memory("hbm"))
record("unknown kind named", lambda: jax.NamedSharding(mesh, jax.P(), memory_kind="hbm"))
record("unknown kind single", lambda: jax.sharding.SingleDeviceSharding(d1, memory_kind="hbm"))
host = jax.memory.Space.Host
pinned = jax.NamedSharding(mesh, jax.P('x'), memory_kind='pinned_host')
unpinned = jax.sharding.SingleDeviceSharding(d1, memory_kind='unpinned_host')
v = jnp.arange(8.)
def placed(y):
    return [np.asarray(y).tolist(), str(jax.typeof(y)), repr(jax.typeof(y)), str(y.sharding),
            y.committed]
record("put in host", lambda: placed(jax.device_put(v, host)))
record("put pinned", lambda: placed(jax.device_put(v, pinned)))
record("put unpinned", lambda: placed(jax.device_put(v, unpinned)))
record("back to device", lambda: placed(jax.device_put(jax.device_put(v, host),
                                                       jax.memory.Space.Device)))
record("with kind", lambda: str(jax.NamedSharding(mesh, jax.P()).with_memory_kind('pinned_host')))
record("host arithmetic", lambda: placed(jax.device_put(v, host) * 2))
record("unpinned arithmetic", lambda: placed(jax.device_put(v, unpinned) * 2))
record("mixed memories", lambda: jax.device_put(v, host) + v)
jaxpr = lambda f, *a: str(jax.make_jaxpr(f)(*a))
record("staged host", lambda: jaxpr(lambda a, b: jax.device_put((a, b), host), v, 1.0))
record("staged kinds", lambda: jaxpr(lambda a: [jax.device_put(a, pinned),
                                                jax.device_put(a, unpinned),
                                                jax.device_put(a, d1), jax.device_put(a)], v))
record("staged sum", lambda: jaxpr(lambda a: jnp.sum(jax.device_put(a, host) + 1.0), v))
record("staged mixed", lambda: jaxpr(lambda a: a + jax.device_put(a, host), v))
record("staged vmap", lambda: jaxpr(jax.vmap(lambda a: jax.device_put(a, host)), x))
record("staged copies", lambda: jaxpr(lambda a: jax.device_put(a, host, donate=True)
                                      + jax.device_put(a, host, may_alias=False), v))
# Host scalars made while tracing live on no device: placed, they have no source.
record("staged host scalars", lambda: jaxpr(lambda a: jax.device_put(
    (a, jnp.zeros_like(a), jnp.zeros(()), jnp.float32(2) * a, jnp.ones(()))), np.float32(1)))
record("alias and donate", lambda: jax.device_put(v, host, donate=True, may_alias=True))
record("transposed", lambda: jaxpr(jax.linear_transpose(
    lambda a: -jax.device_put(a, unpinned), v), v))
record("jit on host", lambda: [placed(jax.jit(lambda a: a * 2)(jax.device_put(v, host))),
                               jaxpr(jax.jit(lambda a: a * 2), jax.device_put(v, host))])
# jit's in_shardings and out_shardings with memory kinds.
on_host = jax.NamedSharding(mesh, jax.P(), memory_kind='pinned_host')
split = jax.NamedSharding(mesh, jax.P('x'))
double = lambda a: a * 2
placements = lambda r: [placed(leaf) for leaf in jax.tree.leaves(r)]
record("jit out host", lambda: placements(jax.jit(double, out_shardings=on_host)(v)))
record("jit out tree", lambda: placements(jax.jit(lambda a: (a, a * 2),
                                                  out_shardings=(None, on_host))(v)))
record("jit in host", lambda: placements(jax.jit(double, in_shardings=on_host)(
    jax.device_put(v, on_host))))
record("jit in host mismatch", lambda: jax.jit(double, in_shardings=on_host)(v))
record("jit in device mismatch", lambda: jax.jit(double, in_shardings=split)(
    jax.device_put(v, on_host)))
record("jit in placed", lambda: placements(jax.jit(lambda a, b: a * b,
                                                   in_shardings=(split, None))(v, np.ones(8))))
record("jit in committed elsewhere", lambda: jax.jit(double, in_shardings=split)(
    jax.device_put(v, d1)))
record("jit out unpinned", lambda: placements(jax.jit(double, out_shardings=jax.NamedSharding(
    mesh, jax.P(), memory_kind='unpinned_host'))(v)))
# The staged jit equation carries in_shardings and out_shardings, and every
# transformation derives its calls' entries; lowered, they are annotations.
sine = jax.jit(lambda a, b: (jnp.sin(a) * b, b), in_shardings=(split, None),
               out_shardings=(split, on_host))
record("staged jit shardings", lambda: jaxpr(sine, v, v))
record("staged jit jvp", lambda: jaxpr(lambda a, b: jax.jvp(sine, (a, b), (a, b)), v, v))
record("staged jit grad", lambda: jaxpr(jax.grad(lambda a, b: sine(a, b)[0].sum()), v, v))
record("staged jit vmap", lambda: jaxpr(jax.vmap(sine, in_axes=(1, None)), x, v[:4]))
record("staged jit no entries", lambda: jaxpr(jax.jit(double, out_shardings=None), v))
record("linearized jit residuals", lambda: jaxpr(jax.linearize(lambda a: sine(a, a)[0], v)[1], v))
sharded = jax.jit(lambda a: jnp.sin(a) * 2, in_shardings=split, out_shardings=split)
record("lowered jit shardings", lambda: sharded.lower(v).as_text())
record("lowered nested jit shardings", lambda: jax.jit(lambda a: sharded(a) + a).lower(v).as_text())
on_d1 = jax.jit(double, in_shardings=jax.sharding.SingleDeviceSharding(d1),
                out_shardings=jax.sharding.SingleDeviceSharding(d1))
record("lowered jit device", lambda: on_d1.lower(v).as_text())
record("lowered nested jit device", lambda: jax.jit(lambda a: on_d1(a)).lower(v).as_text())
# Memory kinds in lowered programs: written on every argument and result
# once a program names a memory other than device memory.
pinned_split = split.with_memory_kind('pinned_host')
d0 = jax.devices()[0]
lowered = lambda f, *a: jax.jit(f).lower(*a).as_text() if not hasattr(f, 'lower') else \
    f.lower(*a).as_text()
record("lowered out pinned", lambda: lowered(jax.jit(double, out_shardings=pinned_split), v))
record("lowered out kinds tree", lambda: lowered(jax.jit(
    lambda a: (a * 2, a), out_shardings=(pinned_split, split.with_memory_kind('device'))), v))
record("lowered out unpinned single", lambda: lowered(jax.jit(
    double, out_shardings=jax.sharding.SingleDeviceSharding(d0, memory_kind='unpinned_host')), v))
record("lowered host argument", lambda: lowered(double, jax.device_put(v, host)))
record("lowered committed argument", lambda: lowered(double, jax.device_put(v, d1)))
record("lowered put pinned", lambda: lowered(lambda a: jax.device_put(a, pinned), v))
record("lowered put host and back", lambda: lowered(lambda a: jax.device_put(
    jax.device_put(a * 2, host), jax.memory.Space.Device), v))
record("lowered nested out pinned", lambda: lowered(lambda a: jax.jit(
    double, out_shardings=pinned_split)(a) * 3, v))
# A tangent of a primal in host memory: a jnp function's JVP (a jit call in
# JAX) takes it into its primal's memory; committed like the primal.
hv = jax.device_put(v, host)
tv = jnp.ones(8)
record("jvp host primal", lambda: [placements(jax.jvp(f, (hv,), (tv,))) for f in (
    lambda a: a, lambda a: a * 2, lambda a: a * a, jnp.square, jax.jit(lambda a: a * 2),
    lambda a: jax.lax.mul(a, 2.0))])
record("jvp host primal in jit", lambda: placements(jax.jit(
    lambda a, b: jax.jvp(lambda c: c * c, (a,), (b,)))(hv, tv)))
record("jvp committed primal", lambda: [placements(jax.jvp(f, (jax.device_put(v, d1),), (tv,)))
                                        for f in (lambda a: a * 2, lambda a: jax.lax.mul(a, 2.))])
record("linearize host primal", lambda: jax.linearize(lambda a: a * 2, hv)[1](tv))
def checked_jaxpr(f, *args):
    """The jaxpr, staged with jax_enable_checks (each equation type-checked)."""
    before = jax.config.jax_enable_checks
    jax.config.update("jax_enable_checks", True)
    try:
        return str(jax.make_jaxpr(f)(*args))
    finally:
        jax.config.update("jax_enable_checks", before)
record("jvp host primal staged", lambda: checked_jaxpr(
    lambda p, t: jax.jvp(lambda a: a * 2, (p,), (t,)), hv, tv))
record("linearize wrong shape", lambda: jax.linearize(lambda a: a * 2, v)[1](jnp.ones(3)))
record("linearize wrong tree", lambda: jax.linearize(lambda a: a * 2, v)[1](v, v))
# Cotangents live where their primals do.
record("grad into host", lambda: jax.grad(lambda a: jax.device_put(a, host).sum())(v))
record("vjp host cotangent", lambda: placements(jax.vjp(lambda a: jax.device_put(a, host), v)[1](
    jax.device_put(v, host))))
record("vjp device cotangent", lambda: jax.vjp(lambda a: jax.device_put(a, host), v)[1](v))
record("transpose into host", lambda: jaxpr(jax.linear_transpose(
    lambda a: jax.device_put(a, host) * 2, v), jax.device_put(v, host)))
record("transpose cotangent memory", lambda: jax.linear_transpose(
    lambda a: jax.device_put(a, host), v)(v))
record("grad from host", lambda: jaxpr(jax.grad(
    lambda a: jax.device_put(a, jax.memory.Space.Device).sum()), jax.device_put(v, host)))
'''


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=4)


@pytest.mark.parametrize("name", [
    "indices", "made", "any order", "too few", "same device", "numpy blocks", "single device",
    "memories", "default memory", "unknown memory", "unknown kind named", "unknown kind single",
    "put in host", "put pinned", "put unpinned", "back to device", "with kind",
    "host arithmetic", "unpinned arithmetic", "mixed memories", "staged host", "staged kinds",
    "staged sum", "staged mixed", "staged vmap", "staged copies", "staged host scalars",
    "alias and donate",
    "transposed", "jit on host", "jit out host", "jit out tree", "jit in host",
    "jit in host mismatch", "jit in device mismatch", "jit in placed",
    "jit in committed elsewhere", "jit out unpinned", "staged jit shardings", "staged jit jvp",
    "staged jit grad", "staged jit vmap", "staged jit no entries", "linearized jit residuals",
    "grad into host", "vjp host cotangent", "vjp device cotangent", "transpose into host",
    "transpose cotangent memory", "grad from host", "jvp host primal",
    "jvp host primal in jit", "jvp committed primal", "linearize host primal",
    "linearize wrong shape", "linearize wrong tree"])
def test_as_jax(results: tuple[dict[str, Any], dict[str, Any]], name: str) -> None:
    ours, theirs = results
    assert ours[name] == theirs[name]


def test_staged_tangent_move_is_typed(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """A device tangent of a host primal entering a jnp function (a jit in
    JAX): JAX's jaxpr inlines the body traced with a host tangent onto the
    device variable (``d:f32<host>[8] = mul b 2.0`` with ``b:f32[8]``),
    which JAX's own checker rejects; spec's moves the tangent with a
    ``device_put`` equation, and its jaxpr type-checks."""
    ours, theirs = results
    name, message = theirs["jvp host primal staged"]
    assert name == "JaxprTypeError" and "inconsistently typed as f32[8]" in message
    assert "d:f32<host>[8] = mul b 2.0:f32[]" in message
    text = ours["jvp host primal staged"]
    assert isinstance(text, str) and "device_put" in text
    assert "mul c 2.0:f32[]" in text and "c:f32<host>[8] = device_put" in text


@pytest.mark.parametrize("name", ["lowered jit shardings", "lowered nested jit shardings",
                                  "lowered jit device", "lowered nested jit device",
                                  "lowered out pinned", "lowered out kinds tree",
                                  "lowered out unpinned single", "lowered host argument",
                                  "lowered committed argument", "lowered put pinned",
                                  "lowered put host and back", "lowered nested out pinned"])
def test_jit_shardings_lower_as_jax(results: tuple[dict[str, Any], dict[str, Any]], name: str
                                    ) -> None:
    """The top-level call's shardings annotate its arguments and results; a
    nested call pins its operand and result with sharding constraints
    (compared as jaxlib's MLIR printer prints both modules)."""
    ours, theirs = results
    assert parsed(ours[name]) == parsed(theirs[name])


prefetch(PROGRAM, devices=4)
