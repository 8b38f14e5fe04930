"""Run by tests/mpi/test_mpi.py and tests/mpi/test_faults.py (through
tests/support/mpiexec.py) under ``mpiexec -n N python -m mpi4py`` (never
pytest inside mpiexec): each rank runs one scenario and writes its results
to OUTDIR/rank<r>.json, which the test reads and checks."""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import spec as jax  # noqa: E402
import spec.numpy as jnp  # noqa: E402
from spec._src.backends import mpi as mesh_mpi  # noqa: E402


def corpus() -> dict[str, Any]:
    from conformance.mesh_programs import run_all
    n = jax.process_count()
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    from spec._src.interpreters import spmd as _spmd
    return {"programs": run_all(jax, jnp, n, names), "backend": _spmd.backend().name,
            "devices": [d.id for d in jax.local_devices()],
            "large all_reduce": large_all_reduce(n), "gather layouts": gather_layouts(n)}


def gather_layouts(n: int) -> dict[str, bool]:
    """All-gathers along each dimension of blocks with and without leading
    dimensions of size 1 (the blocks received in place, or concatenated):
    whether each is NumPy's concatenation of every rank's block in rank
    order, computed here from every rank's data."""
    from spec._src.interpreters import spmd as _spmd
    geo = _spmd.geometry(jax.make_mesh((n,), ("x",)))
    out = {}
    for shape in ((3, 5), (1, 4, 2), (1, 1, 3), (2, 1, 3)):
        blocks = [np.random.default_rng(r).standard_normal(shape).astype(np.float32)
                  for r in range(n)]
        mine = blocks[jax.process_index()]
        for dim in range(len(shape)):
            want = np.concatenate(blocks, axis=dim)
            got = _spmd.first(_spmd.all_gather(geo.place(mine), ("x",), dim, geo))
            out[f"{shape} dim {dim}"] = got.shape == want.shape and np.array_equal(got, want)
    # Element types MPI reads straight from the buffer, and those that travel as bytes.
    for dtype in (np.bool_, np.int8, np.float16, jnp.bfloat16, np.complex64, np.float64):
        blocks = [(np.random.default_rng(r).standard_normal((2, 3)) * 4).astype(dtype)
                  for r in range(n)]
        want = np.concatenate(blocks, axis=1)
        got = _spmd.first(_spmd.all_gather(geo.place(blocks[jax.process_index()]), ("x",), 1,
                                           geo))
        out[np.dtype(dtype).name] = got.dtype == want.dtype and got.tobytes() == want.tobytes()
    return out


def large_all_reduce(n: int) -> dict[str, bool]:
    """All-reduces of a block large enough to be split into parts (over more
    than two ranks), whose length does not divide by the ranks: whether each
    is bitwise the blocks combined one after another in rank order (the
    virtual backend's order), computed here from every rank's data."""
    from spec._src.interpreters import spmd as _spmd
    geo = _spmd.geometry(jax.make_mesh((n,), ("x",)))
    blocks = [np.random.default_rng(r).standard_normal((3, 7001)).astype(np.float32)
              for r in range(n)]
    mine = blocks[jax.process_index()]
    out = {}
    for op, combine in (("sum", np.add), ("max", np.maximum)):
        want = blocks[0]
        for b in blocks[1:]:
            want = combine(want, b)
        got = _spmd.first(_spmd.all_reduce(geo.place(mine), ("x",), op, geo))
        out[op] = got.dtype == want.dtype and got.tobytes() == want.tobytes()
    return out


def ragged(n: int | None = None) -> dict[str, Any]:
    """ragged_all_to_all over n members (two slices to each, some empty) and
    its transpose: this process's blocks of both and the collectives run."""
    from conformance.mesh_programs import shards_of
    n = jax.process_count() if n is None else n
    rng = np.random.RandomState(0)
    count, rows = 2 * n, 16
    sizes = rng.randint(0, 3, size=(n, count))
    starts = np.concatenate([np.zeros((n, 1), int), np.cumsum(sizes, 1)[:, :-1]], 1)
    # Receiver r takes the slices addressed to it in sender order, packed.
    incoming = sizes.reshape(n, n, 2).transpose(1, 0, 2).reshape(n, count)  # [r, j*2+m]
    at = np.concatenate([np.zeros((n, 1), int), np.cumsum(incoming, 1)[:, :-1]], 1)
    outputs_at = at.reshape(n, n, 2).transpose(1, 0, 2).reshape(n, count)  # [j, r*2+m]
    def put(v: np.ndarray, dtype: Any) -> Any:  # member-major blocks along "x"
        return jax.device_put(np.asarray(v, dtype).reshape(n * v.shape[1], *v.shape[2:]),
                              jax.P("x"))

    def body(o: Any, d: Any, *ix: Any) -> Any:
        return jax.lax.ragged_all_to_all(o, d, *ix, axis_name="x")

    with jax.set_mesh(jax.make_mesh((n,), ("x",))):
        index = [put(t, np.int32) for t in (starts, sizes, outputs_at, incoming)]
        data = rng.standard_normal((n, rows, 3))
        operand, output = put(data, np.float32), put(-data, np.float32)
        f = jax.shard_map(body, in_specs=jax.P("x"), out_specs=jax.P("x"))

        def g(o: Any, d: Any) -> Any:
            return f(o, d, *index)
        with jax.collectives_log() as log:
            y = g(operand, output)
            cts = jax.linear_transpose(g, operand, output)(y)
        return {"shards": [shards_of(v) for v in (y, *cts)],
                "ledger": [[e.kind, list(map(str, e.axes)), e.nbytes] for e in log.entries],
                "devices": [d.id for d in jax.local_devices()]}


def _error(fn: Any) -> str:
    try:
        fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return "no error"


def api() -> dict[str, Any]:
    """The multi-process API and the errors for bad input."""
    from spec._src.backends import multihost_utils as mh
    r, n = jax.process_index(), jax.process_count()
    mesh = jax.make_mesh((n,), ("x",))
    sharding = jax.NamedSharding(mesh, jax.P("x"))
    out: dict[str, Any] = {"rank": r, "count": n,
                           "devices": [d.id for d in jax.devices()],
                           "local": [d.id for d in jax.local_devices()]}
    whole = np.arange(4.0 * n, dtype=np.float32)
    calls: list[Any] = []
    x = jax.make_array_from_callback(whole.shape, sharding,
                                     lambda idx: calls.append(idx) or whole[idx])
    out["callback calls"] = len(calls)
    out["repr"] = repr(x)
    out["str"] = str(x)
    out["value error"] = _error(lambda: np.asarray(x))
    out["allgather"] = mh.process_allgather(x).tolist()
    out["allgather local"] = mh.process_allgather(np.float32(r)).tolist()
    out["allgather tiled"] = mh.process_allgather(np.full(2, r, np.float32), tiled=True).tolist()
    local = jax.make_array_from_process_local_data(sharding, whole[4 * r:4 * r + 4])
    out["local data"] = mh.process_allgather(local).tolist()
    out["local shape"] = list(local.shape)
    total = jnp.sum(x)
    out["replicated value"] = float(total)
    mh.sync_global_devices("api")
    out["mesh mismatch"] = _error(lambda: jax.make_mesh((n + 1,), ("x",)))
    out["mesh too small"] = _error(lambda: jax.make_mesh((1,), ("x",)))
    # Ranks disagree on the global shape: every rank names the difference.
    shape = (4 * n + (2 if r == 1 else 0),)
    out["shape mismatch"] = _error(lambda: jax.make_array_from_callback(
        shape, sharding, lambda idx: np.zeros(shape, np.float32)[idx]))
    out.update(repeats(x))
    # Rank 0 reaches a collective that rank 1 skips: at rank 1's next
    # collective, both find the other at a different one.
    if r == 0:
        out["skipped collective"] = _error(lambda: jnp.sum(x * 2.0).block_until_ready())
    else:
        out["skipped collective"] = _error(lambda: mh.sync_global_devices("after"))
    return out


def repeats(x: Any) -> dict[str, Any]:
    """Collectives whose blocks travel without a header (their description
    repeats one the two ranks exchanged before), then ranks that disagree:
    both repeating different earlier collectives (blocks of the same size),
    and one repeating while the other reaches a new one. live_devices makes
    the ranks start remembering afresh, before each case."""
    from spec.experimental.multihost_utils import live_devices
    r = jax.process_index()
    whole = np.asarray(jax.experimental.multihost_utils.process_allgather(x))
    out: dict[str, Any] = {}
    with live_devices(jax.devices()):
        pass
    out["repeated values"] = [float(f(x)) for f in (jnp.sum, jnp.max) * 3]
    out["repeated expected"] = [float(f(whole)) for f in (np.sum, np.max) * 3]
    out["both repeat, differently"] = _error(lambda: (jnp.sum if r == 0 else jnp.max)(x)
                                             .block_until_ready())
    with live_devices(jax.devices()):
        pass
    jnp.sum(x).block_until_ready()
    jnp.sum(x).block_until_ready()
    out["repeat against new"] = _error(lambda: (jnp.sum if r == 0 else jnp.min)(x)
                                       .block_until_ready())
    with live_devices(jax.devices()):
        pass
    out["after live_devices"] = float(jnp.sum(x))
    return out


def timeout() -> dict[str, Any]:
    """Rank 0 waits at a collective no other rank reaches."""
    import time
    n = jax.process_count()
    x = jax.device_put(np.arange(4.0 * n, dtype=np.float32),
                       jax.NamedSharding(jax.make_mesh((n,), ("x",)), jax.P("x")))
    if jax.process_index() == 0:
        start = time.monotonic()
        error = _error(lambda: jnp.sum(x))
        return {"error": error, "waited": time.monotonic() - start}
    time.sleep(mesh_mpi.timeout() + 1)
    return {"error": "no error"}


def train() -> dict[str, Any]:
    """Data-parallel training of y = alpha * x with live_devices around each
    step (the fault-tolerance page's first example). argv: a list of
    rank:step:how kills, how = sigkill | exit | collective (die inside the
    step's 64 MB all-reduce, its sends under way)."""
    import signal

    from spec.experimental.multihost_utils import ProcessFailureError, live_devices
    kills = {}
    for item in (sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else []):
        r, step, how = item.split(":")
        kills[(int(r), int(step))] = how
    me = jax.process_index()
    rng = np.random.default_rng(0)
    steps = 8
    xs = rng.standard_normal((steps, 12)).astype(np.float32)
    ys = 3.0 * xs
    alpha, step, log = np.float32(0.0), 0, []
    big = 16 * 2 ** 20  # float32 elements per device: a 64 MB all-reduce
    while step < steps:
        try:
            with live_devices(jax.devices()) as devices:
                n = len(devices)
                mesh = jax.make_mesh((n,), ("i",), devices=devices)
                how = kills.get((me, step))
                if how == "sigkill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if how == "exit":
                    os._exit(1)
                if how == "collective":
                    def die_in_big(number: int, nbytes: int) -> None:
                        if nbytes >= 4 * big:  # inside the 64 MB all-reduce
                            os.kill(os.getpid(), signal.SIGKILL)
                    mesh_mpi._after_sends = die_in_big
                with jax.set_mesh(mesh):
                    x = jax.device_put(xs[step], jax.P("i"))
                    y = jax.device_put(ys[step], jax.P("i"))
                    a = jax.device_put(np.float32(alpha), jax.P())
                    g = jax.grad(lambda a: jnp.mean((a * x - y) ** 2))(a)
                    if any(h == "collective" for (_, s), h in kills.items() if s == step):
                        block = jax.make_array_from_callback(
                            (n, big), jax.NamedSharding(mesh, jax.P("i")),
                            lambda idx: np.ones((1, big), np.float32))
                        total = jnp.sum(block, axis=0)[0]
                        g = g + 0.0 * total
                    new = float(a - np.float32(0.1) * g)
        except ProcessFailureError as e:
            log.append(["failed", step, sorted(d.id for d in e.failed_devices),
                        f"{type(e.__cause__).__name__}: {e.__cause__}"])
        else:
            alpha, step = np.float32(new), step + 1
            log.append(["ok", step, [d.id for d in devices]])
    return {"alpha": float(alpha), "log": log}


def main() -> None:
    outdir, scenario = sys.argv[1], sys.argv[2]
    rank = mesh_mpi.rank() if mesh_mpi.active() else 0
    try:
        result = {"corpus": corpus, "api": api, "timeout": timeout, "train": train,
                  "ragged": ragged}[scenario]()
    except Exception:
        result = {"crash": traceback.format_exc()}
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
