"""Refs of arrays laid out over a mesh (SPEC.md 17, "Refs over a mesh").

Each program runs on real JAX (a subprocess with CPU devices: JAX fixes its
device count at first use) and on spec in-process, and the printed types,
values, per-device shards, jaxpr texts and exceptions (class and message) are
compared. Both subprocesses start before spec runs, so that the wall time is
about that of the slower JAX run. A few spec-only checks cover what JAX has no
counterpart for (the collective ledger, the MPI refusal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import spec
from spec._src.interpreters import spmd as S
from tests.support.twin import run_spec

_PRELUDE = r'''
import numpy as np
jax, jnp = IMPL
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        kind = next(c for c in type(e).__mro__
                    if c.__module__ == "builtins" or c.__name__ == "ShardingTypeError")
        out[name] = "raises " + kind.__name__ + ": " + str(e)
def shards(v):
    return [[s.device.id, np.asarray(s.data).tolist()] for s in v.addressable_shards]
def value(v):
    return np.asarray(v).tolist()
AxisType, P = jax.sharding.AxisType, jax.sharding.PartitionSpec
'''

ONE_AXIS = _PRELUDE + r'''
mesh = jax.make_mesh((2,), ('x',), axis_types=(AxisType.Explicit,))
jax.set_mesh(mesh)
x = jax.device_put(jnp.arange(8.), P('x'))
r = jax.new_ref(x)
record("type", lambda: str(jax.typeof(r)))
record("repr", lambda: [repr(r), str(r)])
record("read", lambda: [str(jax.typeof(r[...])), shards(r[...])])
record("slice a sharded dim", lambda: r[2:4])
record("integer into a sharded ref", lambda: r[2])
def inc():
    r[...] += 1.
    return shards(r[...])
record("+=", inc)
record("jit read jaxpr", lambda: str(jax.make_jaxpr(lambda: r[...] * 2)()))
record("jit read", lambda: [str(jax.typeof(v := jax.jit(lambda: r[...] * 2)())), shards(v)])
def h(ref, v):
    ref[...] = v
    return ref[...] + 1
v10 = jax.device_put(jnp.arange(8.) * 10, P('x'))
record("jit write jaxpr", lambda: str(jax.make_jaxpr(h)(r, v10)))
record("jit write", lambda: [shards(jax.jit(h)(r, v10)), shards(r[...])])
record("jit write unplaced jaxpr", lambda: str(jax.make_jaxpr(h)(r, jnp.arange(8.))))
# (JAX's result here is typed float32[8] on one device, unlike the jaxpr's f32[8@x]:
# only the values are compared.)
record("jit write unplaced", lambda: [value(jax.jit(h)(r, -jnp.arange(8.))), shards(r[...])])
def closure(v):
    r[...] = v
record("closure jaxpr", lambda: str(jax.jit(closure).trace(jnp.ones(8)).jaxpr))
record("closure", lambda: [jax.jit(closure)(jnp.full(8, 2.)), shards(r[...])])
record("swap", lambda: [shards(jax.ref.swap(r, ..., jnp.ones(8))), shards(r[...]),
                        str(jax.typeof(r[...]))])
record("addupdate", lambda: [jax.ref.addupdate(r, ..., jax.device_put(jnp.ones(8) * 3, P('x'))),
                             shards(r[...])])
record("addupdate unplaced", lambda: jax.ref.addupdate(r, ..., jnp.ones(8)))
record("freeze", lambda: [str(jax.typeof(f := jax.ref.freeze(jax.new_ref(x)))), shards(f)])
record("freeze jaxpr", lambda: str(jax.make_jaxpr(lambda x: jax.ref.freeze(jax.new_ref(x)))(x)))
def pure(x):
    ref = jax.new_ref(x)
    ref[...] = ref[...] * 3.
    jax.ref.addupdate(ref, ..., jnp.sin(x))
    return jnp.sum(jax.ref.freeze(ref))
record("grad", lambda: np.round(np.asarray(jax.grad(pure)(x)), 5).tolist())
record("grad jaxpr", lambda: str(jax.make_jaxpr(jax.grad(pure))(x)))
record("jit grad", lambda: [str(jax.typeof(g := jax.jit(jax.grad(pure))(x))),
                            np.round(np.asarray(g), 5).tolist()])
def twice(v):
    r[...] = v * 2
    r[0:8] = v
record("whole slice of a sharded dim", lambda: [jax.jit(twice)(v10), shards(r[...])])
rr = jax.new_ref(jnp.zeros((8, 4)))
def refused_second(v):
    rr[...] = jnp.ones((8, 4))
    rr[:, 0:2] = v
record("refused before anything runs", lambda: jax.jit(refused_second)(
    jax.device_put(jnp.ones((8, 2)), P('x'))))
record("nothing written", lambda: value(rr[...]))
def into_block(v, ref):
    ref[...] += v
    return v * 2
sm = jax.shard_map(into_block, in_specs=(P('x'), P('x')), out_specs=P('x'))
rs = jax.new_ref(x)
record("eager shard_map of a ref", lambda: sm(x, rs))
record("jit shard_map of a ref", lambda: [shards(jax.jit(sm)(x, rs)), shards(rs[...])])
record("shard_map of a ref jaxpr", lambda: str(jax.make_jaxpr(sm)(x, rs)))
r0 = jax.new_ref(0.)
def closes(v):
    r0[...] += v.sum()
    return v
def raised_class(fn):
    try:
        fn()
    except Exception as e:
        return type(e).__name__
# (the class only: JAX's message names the primitive its trace first hands the ref to)
record("shard_map closing over a ref", lambda: raised_class(lambda: jax.shard_map(
    closes, in_specs=P('x'), out_specs=P('x'))(x)))
'''

TWO_AXES = _PRELUDE + r'''
mesh = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)
jax.set_mesh(mesh)
base = np.arange(32., dtype=np.float32).reshape(4, 8)
SPECS = {"x,-": ('x', None), "-,y": (None, 'y'), "x,y": ('x', 'y'),
         "xy,-": (('x', 'y'), None), "-,-": (None, None)}
INDICES = {"...": ..., ":,1:3": (slice(None), slice(1, 3)), "0:2": (slice(0, 2),),
           "1": 1, ":,2": (slice(None), 2), ":,::2": (slice(None), slice(None, None, 2)),
           "[0,3]": np.array([0, 3], np.int32)}
for sname, entries in SPECS.items():
    pspec = P(*entries)
    for iname, idx in INDICES.items():
        shape = base[idx].shape
        # A value laid out like the ref where that divides evenly, else replicated.
        like = pspec if len(shape) == 2 and all(
            e is None or shape[d] == base.shape[d] for d, e in enumerate(entries)) else P()
        key = f"{sname} [{iname}]"
        def get(pspec=pspec, idx=idx):
            ref = jax.new_ref(jax.device_put(base, pspec))
            got = ref[idx]
            return [str(jax.typeof(got)), shards(got)]
        record(key + " get", get)
        record(key + " get jaxpr", lambda pspec=pspec, idx=idx: str(jax.make_jaxpr(
            lambda ref: ref[idx])(jax.new_ref(jax.device_put(base, pspec)))))
        def swap(pspec=pspec, idx=idx, shape=shape):
            ref = jax.new_ref(jax.device_put(base, pspec))
            old = jax.ref.swap(ref, idx, jnp.full(shape, -1.))
            return [str(jax.typeof(old)), value(old), shards(ref[...])]
        record(key + " swap unplaced", swap)
        def swap_x(pspec=pspec, idx=idx, shape=shape):
            ref = jax.new_ref(jax.device_put(base, pspec))
            v = jax.device_put(jnp.full(shape, -2.), P('x') if shape else P())
            old = jax.ref.swap(ref, idx, v)
            return [str(jax.typeof(old)), shards(ref[...])]
        record(key + " swap split", swap_x)
        def add_like(pspec=pspec, idx=idx, shape=shape, like=like):
            ref = jax.new_ref(jax.device_put(base, pspec))
            jax.ref.addupdate(ref, idx, jax.device_put(jnp.full(shape, 0.5), like))
            return shards(ref[...])
        record(key + " addupdate like", add_like)
        record(key + " addupdate jaxpr", lambda pspec=pspec, idx=idx, shape=shape: str(
            jax.make_jaxpr(lambda ref, v: jax.ref.addupdate(ref, idx, v))(
                jax.new_ref(jax.device_put(base, pspec)), jnp.ones(shape))))
r = jax.new_ref(jax.device_put(base[:, :6], P('x', None)))
record("addupdate y", lambda: jax.ref.addupdate(
    r, (slice(None), slice(1, 3)), jax.device_put(jnp.ones((4, 2)), P('y', None))))
record("swap other layout", lambda: [
    str(jax.typeof(o := jax.ref.swap(r, ..., jax.device_put(jnp.ones((4, 6)) * 5, P(None, 'y'))))),
    value(o), shards(r[...])])
def jf(ref, v):
    old = jax.ref.swap(ref, (slice(None), slice(0, 2)), v)
    jax.ref.addupdate(ref, (slice(None), slice(4, 6)), old * 10)
    return jax.ref.freeze(jax.new_ref(old))
vy = jax.device_put(jnp.ones((4, 2)) * -1, P(None, 'y'))
vx = jax.device_put(jnp.ones((4, 2)) * -1, P('x', None))
record("jit jaxpr", lambda: str(jax.make_jaxpr(jf)(r, vy)))
record("jit refused", lambda: jax.jit(jf)(r, vy))
record("jit", lambda: [shards(jax.jit(jf)(r, vx)), shards(r[...])])
rb = jax.new_ref(jax.device_put(base[:, :2], P(None, None)))
ix = jax.device_put(np.array([0, 3, 1, 2], np.int32), P('x'))
record("split indexer read", lambda: rb[ix])
record("split indexer jaxpr", lambda: str(jax.make_jaxpr(lambda i: rb[i])(ix)))
record("split indexer addupdate", lambda: jax.ref.addupdate(rb, ix, jnp.ones((4, 2))))
record("split indexer swap", lambda: jax.ref.swap(rb, ix, jnp.ones((4, 2))))
record("replicated after", lambda: shards(rb[...]))
rc = jax.new_ref(jax.device_put(base[:, :2], P('x', 'y')))
def inc():
    rc[...] += 1
    return [repr(rc), shards(rc[...]), str(jax.typeof(jax.ref.freeze(rc)))]
record("x,y +=", inc)
xs = jax.device_put(base[:2], P('x', None))
def vf(x):
    ref = jax.new_ref(x)
    ref[...] += 1.
    return ref[...]
record("vmap", lambda: [str(jax.typeof(v := jax.vmap(vf)(xs))), shards(v)])
record("vmap jaxpr", lambda: str(jax.make_jaxpr(jax.vmap(vf))(xs)))
rr = jax.new_ref(xs)
def vg(row, ref_row):
    ref_row[...] += row
record("vmap ref arg", lambda: [jax.vmap(vg)(xs, rr), shards(rr[...])])
'''

_JAX = "__import__('jax'), __import__('jax.numpy').numpy"
_PRINT = "\nimport json\nprint(json.dumps(out))\n"


def _start_jax(program: str, devices: int) -> subprocess.Popen[str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(devices))
    return subprocess.Popen([sys.executable, "-c", program.replace("IMPL", _JAX) + _PRINT],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return result


def _on_spec(program: str, devices: int) -> dict[str, Any]:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", devices)
    try:
        return run_spec(program)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    procs = {"one": _start_jax(ONE_AXIS, 2), "two": _start_jax(TWO_AXES, 4)}
    ours = {"one": _on_spec(ONE_AXIS, 2), "two": _on_spec(TWO_AXES, 4)}
    return {k: (ours[k], _finish(p)) for k, p in procs.items()}


def _agree(got: Any, want: Any) -> bool:
    """Equal, or for errors: the same class and JAX's message, which spec's
    extends with the constraint it cites (``(get M3)``)."""
    if isinstance(want, str) and want.startswith("raises "):
        return isinstance(got, str) and got.startswith(want.rstrip())
    return bool(got == want)


def _compare(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert sorted(ours) == sorted(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if not _agree(ours[k], theirs[k])}
    assert not differ, json.dumps(differ, indent=1)[:6000]


def test_one_axis_refs_match_jax(results: Any) -> None:
    ours, theirs = results["one"]
    _compare(ours, theirs)
    # The program exercises what it should (not only errors).
    assert theirs["type"] == "Ref{float32[8@x]}"
    assert theirs["slice a sharded dim"].startswith("raises ValueError")


def test_two_axes_index_matrix_matches_jax(results: Any) -> None:
    ours, theirs = results["two"]
    _compare(ours, theirs)
    kinds = {str(v).split(":")[0] for v in theirs.values() if str(v).startswith("raises")}
    assert {"raises TypeError", "raises ValueError", "raises ShardingTypeError"} <= kinds
    assert sum(not str(v).startswith("raises") for v in theirs.values()) > 60


def _mesh_ref(pspec: Any) -> Any:
    mesh = spec.make_mesh((2, 2), ("x", "y"),
                          axis_types=(spec.sharding.AxisType.Explicit,) * 2)
    spec.set_mesh(mesh)
    base = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    return spec.new_ref(spec.device_put(base, pspec)), base


def test_ref_blocks_are_views_written_once_per_block() -> None:
    """Devices holding the same block write it once (an add is not repeated
    per replica); reads and slice writes move nothing; a write of another
    layout is one gather (spec-only: the ledger)."""
    def run() -> None:
        import spec.numpy as snp
        ref, base = _mesh_ref(spec.P("x", None))
        assert S.writers(ref.aval, S.geometry(ref._sharding.mesh)) == (0, 2)
        with spec.collectives_log() as log:
            ref[...] += 1.0
            spec.ref.addupdate(ref, (slice(None), slice(2, 4)),
                               spec.device_put(snp.ones((4, 2)), spec.P("x", None)))
            got = spec.jit(lambda r: r[:, 1:3] * 2)(ref)
        assert not list(log)
        want = base + 1
        want[:, 2:4] += 1
        np.testing.assert_array_equal(np.asarray(ref[...]), want)
        np.testing.assert_array_equal(np.asarray(got), want[:, 1:3] * 2)
        with spec.collectives_log() as log:
            spec.ref.swap(ref, ..., spec.device_put(snp.zeros((4, 8)), spec.P(None, "y")))
        assert [c.kind for c in log] == ["all_gather"]
        np.testing.assert_array_equal(ref._buf, np.zeros((4, 8), np.float32))

    _with_devices(4, run)


def test_refs_over_several_processes_and_unreduced_refs_are_refused() -> None:
    def run() -> None:
        ref, _ = _mesh_ref(spec.P("x", None))
        two_procs = S._geometry(("x", "y"), (2, 2), (0, 0, 1, 1), 0)
        with pytest.raises(NotImplementedError, match="refs of arrays laid out over a mesh"):
            S.from_value(ref, two_procs)
        u = ref.aval.inner_aval.update(sharding=spec.NamedSharding(
            ref.aval.sharding.mesh, spec.P(unreduced={"x"})), shape=())
        with pytest.raises(NotImplementedError, match="refs of unreduced arrays"):
            S.check_ref_layout(u, S.geometry(ref._sharding.mesh))

    _with_devices(4, run)


def test_a_ref_made_inside_shard_map_starts_from_each_device_s_block() -> None:
    """A ref of a per-device value, updated in place, holds each device's own
    result: ``r = new_ref(v); r[...] += v / 2`` is ``1.5 v`` on every device,
    over a varying axis and replicated along the other (written once there)."""
    def run() -> None:
        mesh = spec.make_mesh((2, 2), ("x", "y"),
                              axis_types=(spec.sharding.AxisType.Explicit,) * 2)
        x = np.arange(1.0, 9.0, dtype=np.float32).reshape(4, 2)

        def local(v: Any) -> Any:
            r = spec.new_ref(v)
            r[...] += v * 0.5
            return r[...]
        sm = spec.shard_map(local, mesh=mesh, in_specs=spec.P("x"), out_specs=spec.P("x"))
        placed = spec.device_put(x, spec.NamedSharding(mesh, spec.P("x")))
        for run_it in (sm, spec.jit(sm)):
            np.testing.assert_array_equal(np.asarray(run_it(placed)), x * 1.5)

    _with_devices(4, run)


def _with_devices(n: int, fn: Any) -> None:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", n)
    try:
        fn()
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)
