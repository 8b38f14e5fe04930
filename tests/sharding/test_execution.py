"""Per-device execution of sharded programs (SPEC.md sections 14.3-14.4):
unreduced and reduced values, reshard between layouts, and the collective
ledger. Values, types, shards and jaxprs are compared with JAX run live (a
subprocess with CPU devices); collective counts are compared with the
communication the documentation says the program performs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.twin import jax_group, merged, prefetch, run_spec


def _jax(program: str) -> dict[str, Any]:
    """JAX's side of one of the module's programs (all run in one process; each sets its
    mesh)."""
    return jax_group(JAX_PROGRAMS, next(k for k, v in JAX_PROGRAMS.items() if v == program))

UNREDUCED = r'''
import numpy as np
jax, jnp = IMPL
out = {}
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        kind = next(c for c in type(e).__mro__
                    if c.__module__ == "builtins" or c.__name__ == "ShardingTypeError")
        out[name] = "raises " + kind.__name__
def shards(v):
    return [[s.device.id, np.asarray(s.data).tolist()] for s in v.addressable_shards]
mesh = jax.make_mesh((2, 2), ("X", "Y"))
jax.set_mesh(mesh)
a = jax.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), jax.P(None, "X"))
b = jax.device_put(np.arange(16.0, 32.0, dtype=np.float32).reshape(4, 4), jax.P("X", None))
u = jnp.einsum("ij,jk->ik", a, b, out_sharding=jax.P(None, None, unreduced={"X"}))
u2 = jnp.einsum("ij,jk->ik", 2.0 * a, b, out_sharding=jax.P("Y", None, unreduced={"X"}))
record("u type", lambda: str(jax.typeof(u)))
record("u shards", lambda: shards(u))
record("u repr", lambda: repr(u))
record("u reshard", lambda: np.asarray(jax.reshard(u, jax.P())).tolist())
record("u reshard Y", lambda: [str(jax.typeof(jax.reshard(u, jax.P("Y")))),
                               shards(jax.reshard(u, jax.P("Y")))])
record("u + u", lambda: [str(jax.typeof(u + u)), np.asarray(jax.reshard(u + u, jax.P())).tolist()])
record("u + u2", lambda: str(jax.typeof(u + jax.reshard(u2, jax.P(None, None, unreduced={"X"})))))
record("u * 3", lambda: np.asarray(jax.reshard(u * 3.0, jax.P())).tolist())
record("u cos", lambda: jnp.cos(u))
record("u sum", lambda: [str(jax.typeof(u.sum(0))),
                         np.asarray(jax.reshard(u.sum(0), jax.P())).tolist()])
record("u transpose", lambda: np.asarray(jax.reshard(u.T, jax.P())).tolist())
record("u reshape", lambda: str(jax.typeof(u.reshape(16))))
r = jax.reshard(np.arange(8.0, dtype=np.float32).reshape(2, 4), jax.P(None, None, reduced={"X"}))
record("r type", lambda: str(jax.typeof(r)))
record("r shards", lambda: shards(r))
record("r * r", lambda: str(jax.typeof(r * r)))
record("to unreduced", lambda: shards(jax.reshard(r, jax.P(unreduced={"X", "Y"}))))
record("put unreduced", lambda: [str(jax.typeof(v := jax.device_put(
    np.arange(8.0, dtype=np.float32).reshape(4, 2), jax.P("X", None, unreduced={"Y"})))),
    shards(v)])
record("sum unreduced out", lambda: str(jax.typeof(jnp.sum(b, axis=0, out_sharding=jax.P(
    None, unreduced={"X"})))))
record("max unreduced", lambda: str(jax.typeof(jax.lax.reduce_max(
    u, (0,)))))
record("sum to Y", lambda: [str(jax.typeof(v := jnp.sum(b.reshape(2, 2, 4), axis=0,
                                                        out_sharding=jax.P("Y")))),
                            np.asarray(v).tolist()])
record("moves", lambda: [shards(jax.reshard(b, jax.P(None, "X"))),
                         shards(jax.reshard(b, jax.P(("Y", "X")))),
                         shards(jax.reshard(b, jax.P("Y", "X")))])
f = jax.jit(lambda x, y: jax.reshard(
    jnp.einsum("ij,jk->ik", x, y, out_sharding=jax.P(None, None, unreduced={"X"})) * 2.0,
    jax.P()))
record("jit jaxpr", lambda: str(f.trace(a, b).jaxpr))
record("jit value", lambda: np.asarray(f(a, b)).tolist())
record("grad reduced", lambda: np.asarray(jax.grad(
    lambda w, x: jnp.sum(jnp.sin(x @ jax.reshard(w, jax.P(None, None, reduced={"X"})))))(
        jax.device_put(np.ones((4, 3), np.float32) / 7, jax.P()), b)).tolist())
'''


@pytest.fixture(scope="module")
def unreduced_results() -> tuple[dict[str, object], dict[str, object]]:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        ours = run_spec(UNREDUCED)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)
    return ours, _jax(UNREDUCED)


KEYS = ["u type", "u shards", "u repr", "u reshard", "u reshard Y", "u + u", "u + u2", "u * 3",
        "u cos", "u sum", "u transpose", "u reshape", "r type", "r shards", "r * r",
        "to unreduced", "put unreduced", "sum unreduced out", "max unreduced", "sum to Y",
        "moves", "jit jaxpr", "jit value", "grad reduced"]

# sum(sin(x @ w)) with x @ w near 10: its gradient, x.T @ cos(x @ w), moves by about 1e-6
# relative when one element of x @ w moves by one float32 ulp, which is how far XLA's
# round-as-you-add product may sit from spec's correctly rounded one.
SENSITIVE_TO_CONTRACTION_ROUNDING = {"grad reduced"}
SENSITIVE_RTOL = 1e-5


@pytest.mark.parametrize("key", KEYS)
def test_unreduced_and_reduced_values_match_jax(
        unreduced_results: tuple[dict[str, object], dict[str, object]], key: str) -> None:
    ours, theirs = unreduced_results
    assert sorted(ours) == sorted(KEYS)
    if key in SENSITIVE_TO_CONTRACTION_ROUNDING:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=SENSITIVE_RTOL)
    else:
        assert ours[key] == theirs[key]


# ------------------------------------------------------------------ ledger

def _capstone(reduced: bool) -> tuple[spec.Array, int, list[str]]:
    """The microbatch gradient-accumulation step of the autodiff-and-sharding
    page, with {R:X} weights (reduced=True) or replicated ones."""
    jax, jnp = spec, snp

    def predict(ws: object, xs: object) -> object:
        final, _ = jax.lax.scan(lambda c, w: (jnp.tanh(c @ w), None), xs, ws)
        return final

    def loss(ws: object, batch: object) -> object:
        return jnp.sum(predict(ws, batch) ** 2)

    @jax.jit
    def step(ws: object, xs: object) -> object:
        def micro(acc: object, xs_mb: object) -> tuple[object, None]:
            grads = jax.grad(loss)(ws, xs_mb)
            want = {"X"} if reduced else set()
            assert set(jax.typeof(grads).sharding.spec.unreduced) == want
            return acc + grads, None
        acc = jnp.zeros_like(ws)
        if reduced:
            acc = jax.reshard(acc, jax.P(unreduced={"X"}))
        acc, _ = jax.lax.scan(micro, acc, xs)
        grads = jax.reshard(acc, jax.P()) if reduced else acc
        return jax.reshard(ws, jax.P()) - 0.01 * grads

    ws = spec.device_put(snp.stack([snp.eye(4) / 2] * 3),
                         jax.P(reduced={"X"}) if reduced else jax.P())
    xs = spec.device_put(snp.ones((5, 2, 4)), jax.P(None, "X", None))
    with spec.collectives_log() as log:
        new = step(ws, xs)
    return new, log.count("all_reduce"), [e.kind for e in log]


def test_capstone_reduces_once_per_step_with_reduced_weights() -> None:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        with spec.set_mesh(spec.make_mesh((2,), ("X",))):
            new_r, n_r, kinds_r = _capstone(True)
            new_p, n_p, kinds_p = _capstone(False)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    assert (n_r, kinds_r) == (1, ["all_reduce"])  # outside both loops
    assert (n_p, set(kinds_p)) == (3 * 5, {"all_reduce"})  # per layer per microbatch
    assert str(spec.typeof(new_r)) == "float32[3,4,4]"
    np.testing.assert_allclose(np.asarray(new_r), np.asarray(new_p), rtol=1e-6)


def test_fan_out_reduces_once() -> None:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        with spec.set_mesh(spec.make_mesh((2,), ("X",))):
            w = spec.device_put(snp.arange(8.0).reshape(4, 2) / 10, spec.P(None, None))
            x1 = spec.device_put(snp.ones((8, 4)), spec.P("X", None))
            x2 = spec.device_put(snp.ones((8, 4)) * 2, spec.P("X", None))

            def fan(w: object, a: object, b: object, reduced: bool) -> object:
                if reduced:
                    w = spec.reshard(w, spec.P(None, None, reduced={"X"}))
                return snp.sum(a @ w) + snp.sum(b @ w)
            counts = []
            for reduced in (True, False):
                g = spec.jit(spec.grad(lambda w, a, b: fan(w, a, b, reduced)))
                with spec.collectives_log() as log:
                    dw = g(w, x1, x2)
                counts.append(log.count("all_reduce"))
                # d/dw of sum(x @ w) is the column sums of x, for each use.
                np.testing.assert_allclose(np.asarray(dw), np.full((4, 2), 8.0 + 16.0))
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    # reduced: one all-reduce (the final reshard); replicated: one per backward
    # dot. (The forward sums are dead under grad: they run nowhere.)
    assert counts == [1, 2]


def test_free_layout_changes_record_nothing() -> None:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        with spec.set_mesh(spec.make_mesh((2, 2), ("X", "Y"))):
            x = spec.device_put(snp.arange(32.0).reshape(8, 4), spec.P())
            with spec.collectives_log() as log:
                a = spec.reshard(x, spec.P("X", "Y"))  # slicing a replica: free
                r = spec.reshard(x, spec.P(reduced={"X"}))  # a cast: free
                b = snp.sin(a) * 2 + 1  # elementwise on blocks: local
                s = spec.reshard(b, spec.P(("X", "Y")))  # Y moves into dim 0: all_to_all
                g = spec.reshard(a, spec.P())  # all-gather
                t = spec.reshard(a.sum(axis=0), spec.P())
            kinds = [e.kind for e in log]
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    want = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    np.testing.assert_array_equal(np.asarray(r), want)
    np.testing.assert_array_equal(np.asarray(g), want)
    np.testing.assert_array_equal(np.asarray(s), np.sin(want) * 2 + 1)
    np.testing.assert_array_equal(np.asarray(t), want.sum(0))
    # s: dim 1's Y is gathered and re-used by dim 0 (all_to_all); g gathers
    # both dims; the sum all-reduces over X, then gathers Y.
    assert kinds == ["all_to_all", "all_gather", "all_gather", "all_reduce", "all_gather"]


LAYOUT_PARAMS = r'''
import numpy as np
jax, jnp = IMPL
out = {}
def record(name, fn):
    try:
        r = fn()
        out[name] = r if isinstance(r, str) else [str(jax.typeof(r)), np.asarray(r).tolist(),
                                                 [np.asarray(s.data).tolist()
                                                  for s in r.addressable_shards]]
    except Exception as e:
        kind = next(c for c in type(e).__mro__
                    if c.__module__ == "builtins" or c.__name__ == "ShardingTypeError")
        out[name] = "raises " + kind.__name__
jax.set_mesh(jax.make_mesh((2, 2), ("X", "Y")))
x = jax.device_put(np.arange(32.0, dtype=np.float32).reshape(8, 4), jax.P("X", "Y"))
P = jax.P
record("bid", lambda: jax.lax.broadcast_in_dim(x, (2, 8, 4), (1, 2),
                                               out_sharding=P(None, "X", "Y")))
record("bid new dim", lambda: jax.lax.broadcast_in_dim(x, (2, 8, 4), (1, 2),
                                                       out_sharding=P("Y", "X", None)))
record("bid identity", lambda: jax.lax.broadcast_in_dim(x, (8, 4), (0, 1), out_sharding=P("X")))
record("bid identity jaxpr", lambda: str(jax.make_jaxpr(lambda a: jax.lax.broadcast_in_dim(
    a, (8, 4), (0, 1), out_sharding=P("X", None)))(x)))
record("reshape merge", lambda: jax.lax.reshape(x, (32,), out_sharding=P(("X", "Y"))))
record("reshape split", lambda: jax.lax.reshape(x, (2, 4, 4), out_sharding=P("X", None, "Y")))
record("jnp.reshape", lambda: jnp.reshape(x, (2, 4, 4), out_sharding=P("X", None, "Y")))
record("broadcast_to", lambda: jnp.broadcast_to(x, (2, 8, 4), out_sharding=P(None, "X", "Y")))
record("method reshape", lambda: x.reshape(2, 4, 4))
record("jit reshape", lambda: jax.jit(lambda a: jnp.reshape(a, (32,), out_sharding=P("X")))(x))
record("where", lambda: str(jax.make_jaxpr(lambda a: jnp.where(a > 3, a, 0.0))(x)))
record("where value", lambda: jnp.where(x > 3, x, 0.0))
'''


def test_layout_params_of_broadcast_and_reshape_match_jax(four_devices: None) -> None:
    try:
        ours = run_spec(LAYOUT_PARAMS)
    finally:
        spec.set_mesh(None)
    theirs = _jax(LAYOUT_PARAMS)
    assert sorted(ours) == sorted(theirs)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not differ, differ


def test_every_primitive_has_its_own_per_device_program() -> None:
    """Only these run the conservative gathered program: custom_lin and
    hijax_linearized (transposed away, never executed), empty2 and
    platform_index (no operands), the hi-value axis primitives (a hi value
    on a mesh is its components', and these act on whole values) and
    user_primitive (a jax.extend primitive has only its user's impl, which
    sees whole arrays)."""
    from spec._src.interpreters.per_device import gathered_names
    assert gathered_names() == ["custom_lin", "empty2", "hi_broadcast", "hi_select_n",
                                "hi_sum", "hi_transpose", "hijax_linearized", "platform_index",
                                "user_primitive"]


def test_local_gather_scatter_and_conv_move_nothing() -> None:
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        with spec.set_mesh(spec.make_mesh((2, 2), ("X", "Y"))):
            base = np.arange(32.0, dtype=np.float32).reshape(8, 4)
            x = spec.device_put(base, spec.P(None, "X"))
            idx = np.array([5, 0, 7], np.int32)
            lhs = np.arange(4 * 2 * 5 * 5, dtype=np.float32).reshape(4, 2, 5, 5) / 50
            rhs = np.ones((3, 2, 2, 2), np.float32)
            with spec.collectives_log() as log:
                got = x[idx]
                ones = spec.device_put(np.ones((3, 4), np.float32), spec.P(None, "X"))
                added = x.at[idx].add(ones)
                conv = spec.lax.conv(spec.device_put(lhs, spec.P("X")), rhs, (1, 1), "VALID")
            assert log.count() == 0, list(log)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    np.testing.assert_array_equal(np.asarray(got), base[idx])
    want = base.copy()
    np.add.at(want, idx, 1.0)
    np.testing.assert_array_equal(np.asarray(added), want)
    assert str(spec.typeof(conv)) == "float32[4@X,3,4,4]"
    direct = np.asarray(spec.lax.conv(lhs, rhs, (1, 1), "VALID"))
    np.testing.assert_array_equal(np.asarray(conv), direct)


# JAX's sides run as one process, ahead while earlier tests run (tests/support/twin.py).
JAX_PROGRAMS = {"unreduced": UNREDUCED, "layout params": LAYOUT_PARAMS}
prefetch(merged("", JAX_PROGRAMS))
