"""The corpus of programs that run over a mesh: explicit-mode sharding,
unreduced/reduced values, jit, grad, control flow and shard_map with every
collective kind.

Each program is a function of ``(jax, jnp, n)`` (n devices, 2 or 4) that
builds its inputs, runs, and returns a pytree of arrays. The same function
runs on spec's virtual devices, on MPI ranks (one device per rank) and on
JAX; tests/mpi/test_mpi.py checks that every device's block and the collective
ledger agree between spec's two backends, bit for bit, and
tests/sharding/test_mesh_programs.py checks the global values against JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Program = Callable[[Any, Any, int], Any]
PROGRAMS: dict[str, Program] = {}


def program(fn: Program) -> Program:
    PROGRAMS[fn.__name__] = fn
    return fn


def _mesh(jax: Any, n: int, two_d: bool = False) -> Any:
    if two_d and n == 4:
        return jax.make_mesh((2, 2), ("x", "y"))
    return jax.make_mesh((n,), ("x",))


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Deterministic float32 inputs, the same in every process."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------ explicit mode


@program
def elementwise_and_sum(jax: Any, jnp: Any, n: int) -> Any:
    with jax.set_mesh(_mesh(jax, n)):
        x = jax.device_put(_data((8, 4), 0), jax.P("x", None))
        y = jnp.sin(x) * 2.0 + x
        return [y, jnp.sum(y, axis=0), jnp.sum(y), jnp.max(y, axis=1)]


@program
def matmul_contracting_split(jax: Any, jnp: Any, n: int) -> Any:
    """The contraction runs over the split dimension: local partials, then an
    all-reduce (or a reduce-scatter into a split result)."""
    with jax.set_mesh(_mesh(jax, n)):
        a = jax.device_put(_data((4, 8), 1), jax.P(None, "x"))
        b = jax.device_put(_data((8, 4), 2), jax.P("x", None))
        return [jnp.matmul(a, b, out_sharding=jax.P()),
                jnp.matmul(a, b, out_sharding=jax.P("x", None)),
                jnp.einsum("ij,jk->ik", a, b, out_sharding=jax.P(None, None, unreduced={"x"}))]


@program
def reshard_moves(jax: Any, jnp: Any, n: int) -> Any:
    with jax.set_mesh(_mesh(jax, n, two_d=True)):
        x = jax.device_put(_data((8, 8), 3), jax.P("x", None))
        out = [jax.reshard(x, jax.P(None, "x")), jax.reshard(x, jax.P()),
               jax.reshard(x, jax.P(None, None, reduced={"x"}))]
        if n == 4:
            out += [jax.reshard(x, jax.P(("x", "y"), None)), jax.reshard(x, jax.P("y", "x"))]
        return out


@program
def unreduced_values(jax: Any, jnp: Any, n: int) -> Any:
    with jax.set_mesh(_mesh(jax, n)):
        a = jax.device_put(_data((4, 8), 4), jax.P(None, "x"))
        b = jax.device_put(_data((8, 4), 5), jax.P("x", None))
        u = jnp.einsum("ij,jk->ik", a, b, out_sharding=jax.P(None, None, unreduced={"x"}))
        return [u + u, jax.reshard(u, jax.P()), jax.reshard(u, jax.P("x")),
                jnp.sum(u, axis=0)]


@program
def jit_mlp_grad(jax: Any, jnp: Any, n: int) -> Any:
    """Data parallel: batch split, weights replicated."""
    with jax.set_mesh(_mesh(jax, n)):
        w1 = jax.device_put(_data((4, 8), 6) / 2, jax.P())
        w2 = jax.device_put(_data((8, 2), 7) / 2, jax.P())
        x = jax.device_put(_data((8, 4), 8), jax.P("x", None))

        def loss(ws: Any, x: Any) -> Any:
            h = jnp.tanh(x @ ws[0])
            return jnp.mean((h @ ws[1]) ** 2)

        value, grads = jax.jit(jax.value_and_grad(loss))((w1, w2), x)
        return [value, *grads]


@program
def capstone_reduced(jax: Any, jnp: Any, n: int) -> Any:
    """Microbatch gradient accumulation with {R:x} weights: one all-reduce."""
    with jax.set_mesh(_mesh(jax, n)):
        def predict(ws: Any, xs: Any) -> Any:
            final, _ = jax.lax.scan(lambda c, w: (jnp.tanh(c @ w), None), xs, ws)
            return final

        @jax.jit
        def step(ws: Any, xs: Any) -> Any:
            def micro(acc: Any, xs_mb: Any) -> Any:
                return acc + jax.grad(lambda w: jnp.sum(predict(w, xs_mb) ** 2))(ws), None
            acc = jax.reshard(jnp.zeros_like(ws), jax.P(unreduced={"x"}))
            acc, _ = jax.lax.scan(micro, acc, xs)
            return jax.reshard(ws, jax.P()) - 0.01 * jax.reshard(acc, jax.P())

        ws = jax.device_put(np.stack([np.eye(4, dtype=np.float32) / 2] * 3),
                            jax.P(reduced={"x"}))
        xs = jax.device_put(_data((3, 2 * n, 4), 9), jax.P(None, "x", None))
        return step(ws, xs)


@program
def control_flow(jax: Any, jnp: Any, n: int) -> Any:
    with jax.set_mesh(_mesh(jax, n)):
        x = jax.device_put(_data((8, 3), 10), jax.P("x", None))

        def body(c: Any, row: Any) -> Any:
            return c + jnp.sum(row), c * 2.0

        total, ys = jax.lax.scan(body, jnp.float32(0), x.T)
        c = jax.lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
        w = jax.lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v + 1.0, jnp.abs(x))
        return [total, ys, c, w]


@program
def indexing_and_creation(jax: Any, jnp: Any, n: int) -> Any:
    with jax.set_mesh(_mesh(jax, n)):
        x = jax.device_put(_data((8, 4), 11), jax.P("x", None))
        r = jnp.arange(8 * n, dtype=jnp.float32, out_sharding=jax.P("x"))
        z = jnp.zeros((8, 4), out_sharding=jax.P("x", None))
        return [x[:, 1:3], x.T, jnp.cumsum(x, axis=1), r, z + x, jnp.take(x, 2, axis=1)]


@program
def from_callback(jax: Any, jnp: Any, n: int) -> Any:
    mesh = _mesh(jax, n)
    sharding = jax.NamedSharding(mesh, jax.P("x"))
    whole = _data((4 * n, 2), 12)
    x = jax.make_array_from_callback(whole.shape, sharding, lambda idx: whole[idx])
    with jax.set_mesh(mesh):
        return [x * 2.0, jnp.sum(x, axis=0)]


@program
def sharded_keys(jax: Any, jnp: Any, n: int) -> Any:
    """Typed keys split over the mesh: sampling, folding and splitting run on
    each device's keys."""
    with jax.set_mesh(_mesh(jax, n)):
        keys = jax.device_put(jax.random.split(jax.random.key(7), 2 * n), jax.P("x"))
        u = jax.vmap(lambda k: jax.random.uniform(k, (3,)))(keys)
        ids = jnp.arange(2 * n, out_sharding=jax.P("x"))
        folded = jax.vmap(lambda k, i: jax.random.fold_in(k, i))(keys, ids)
        pairs = jax.vmap(lambda k: jax.random.split(k, 2))(folded)
        return [u, jax.random.key_data(folded), jax.random.key_data(pairs),
                jax.vmap(lambda k: jax.random.bits(k, (2,)))(keys)]


@program
def jit_called_again(jax: Any, jnp: Any, n: int) -> Any:
    """A sharded jit call repeated, its output fed back in: spec runs the
    first call's program interpreted and the later ones as generated
    per-device code (a shard_map body with its collectives included)."""
    mesh = _mesh(jax, n)
    x = jax.device_put(_data((4 * n, 4), 20), jax.NamedSharding(mesh, jax.P("x")))

    @jax.jit
    def step(v: Any) -> Any:
        w = jnp.tanh(v) * 0.5 + v
        mapped = jax.shard_map(lambda b: jax.lax.psum(b, "x") * b
                               + jax.lax.all_gather(b, "x", tiled=True)[:4], mesh=mesh,
                               in_specs=jax.P("x"), out_specs=jax.P("x"))
        return mapped(w) - jnp.sum(w)

    outs = [step(x)]
    for _ in range(3):
        outs.append(step(outs[-1] * 0.125))
    return outs


# --------------------------------------------------------------- shard_map


@program
def shard_map_collectives(jax: Any, jnp: Any, n: int) -> Any:
    mesh = _mesh(jax, n)
    x = jax.device_put(_data((4 * n, 4), 13), jax.NamedSharding(mesh, jax.P("x")))

    def body(b: Any) -> Any:
        perm = [(i, (i + 1) % n) for i in range(n)]
        return (jax.lax.psum(b, "x"), jax.lax.all_gather(b, "x", tiled=True),
                jax.lax.ppermute(b, "x", perm), jax.lax.psum_scatter(b, "x", tiled=True),
                jax.lax.all_to_all(b, "x", 0, 0, tiled=True), jax.lax.pmax(b, "x"),
                b * jax.lax.axis_index("x").astype(jnp.float32))

    specs = (jax.P(), jax.P("x"), jax.P("x"), jax.P("x"), jax.P("x"), jax.P(), jax.P("x"))
    return list(jax.shard_map(body, mesh=mesh, in_specs=jax.P("x"), out_specs=specs)(x))


@program
def shard_map_blocked_matmul(jax: Any, jnp: Any, n: int) -> Any:
    mesh = _mesh(jax, n)
    a = jax.device_put(_data((4, 4 * n), 14), jax.NamedSharding(mesh, jax.P(None, "x")))
    b = jax.device_put(_data((4 * n, 4), 15), jax.NamedSharding(mesh, jax.P("x", None)))

    @jax.jit
    def allreduce(a: Any, b: Any) -> Any:
        return jax.shard_map(lambda p, q: jax.lax.psum(p @ q, "x"), mesh=mesh,
                             in_specs=(jax.P(None, "x"), jax.P("x", None)), out_specs=jax.P())(a, b)

    @jax.jit
    def scattered(a: Any, b: Any) -> Any:
        return jax.shard_map(lambda p, q: jax.lax.psum_scatter(p @ q, "x", tiled=True),
                             mesh=mesh, in_specs=(jax.P(None, "x"), jax.P("x", None)),
                             out_specs=jax.P("x", None))(a, b)

    return [allreduce(a, b), scattered(a, b)]


@program
def shard_map_grad(jax: Any, jnp: Any, n: int) -> Any:
    mesh = _mesh(jax, n)
    w = jax.device_put(_data((4, 4), 16), jax.NamedSharding(mesh, jax.P()))
    x = jax.device_put(_data((4 * n, 4), 17), jax.NamedSharding(mesh, jax.P("x")))

    def loss(w: Any, x: Any) -> Any:
        local = jax.shard_map(lambda w, b: jax.lax.psum(jnp.sum(jnp.tanh(b @ w) ** 2), "x"),
                              mesh=mesh, in_specs=(jax.P(), jax.P("x")), out_specs=jax.P())
        return local(w, x)

    return list(jax.jit(jax.value_and_grad(loss))(w, x))





def shards_of(leaf: Any) -> list[dict[str, Any]]:
    """The blocks this process holds of one output: device (-1 for a value
    on no mesh: every process has it on its own device), index, bytes."""
    out = []
    on_mesh = len(leaf.sharding.device_set) > 1 or hasattr(leaf.sharding, "mesh")
    for s in leaf.addressable_shards:
        data = np.asarray(s.data)
        out.append({"device": int(s.device.id) if on_mesh else -1,
                    "index": [[sl.start, sl.stop] for sl in s.index],
                    "dtype": str(data.dtype), "shape": list(data.shape),
                    "bytes": np.ascontiguousarray(data).tobytes().hex()})
    return out


def run_all(jax: Any, jnp: Any, n: int, names: list[str] | None = None) -> dict[str, Any]:
    """Every program's outputs (this process's blocks, and the type of each)
    and the collectives it ran, or the error it raised."""
    results: dict[str, Any] = {}
    for name in names or list(PROGRAMS):
        try:
            with jax.collectives_log() as log:
                out = PROGRAMS[name](jax, jnp, n)
            leaves = jax.tree_util.tree_leaves(out)
            results[name] = {
                "types": [str(jax.typeof(x)) for x in leaves],
                "shards": [shards_of(x) for x in leaves],
                "ledger": [[e.kind, list(map(str, e.axes)), e.nbytes] for e in log.entries]}
        except Exception as e:  # recorded: the comparison names the program
            results[name] = {"error": f"{type(e).__name__}: {e}"}
    return results


def global_values(jax: Any, jnp: Any, n: int) -> dict[str, Any]:
    """Every program's output types and global values (single process)."""
    results: dict[str, Any] = {}
    for name, fn in PROGRAMS.items():
        leaves = jax.tree_util.tree_leaves(fn(jax, jnp, n))
        results[name] = {"types": [str(jax.typeof(x)) for x in leaves],
                         "values": [_global(jax, x) for x in leaves]}
    return results


def _global(jax: Any, x: Any) -> Any:
    """The value; an unreduced array's is the sum of its partials (no global
    value is printable for it, in JAX or spec)."""
    spec_ = getattr(getattr(x, "sharding", None), "spec", None)
    if spec_ is not None and spec_.unreduced:
        x = jax.reshard(x, jax.NamedSharding(x.sharding.mesh, jax.P(*spec_.partitions)))
    return np.asarray(x).tolist()


__all__ = ["PROGRAMS", "Program", "global_values", "run_all", "shards_of"]
