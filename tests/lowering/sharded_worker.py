"""Run in a subprocess with 8 CPU devices (JAX fixes its device count at
first use): lowers sharded programs with spec, compiles the text with
jaxlib over the mesh's devices, runs it, and prints, per case, whether the
results equal spec's own and ``jax.jit``'s bit for bit (JSON)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ["JAX_NUM_CPU_DEVICES"] = "8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax._src import compiler  # noqa: E402
from jax._src import xla_bridge  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402
from jax._src.sharding_impls import GSPMDSharding  # noqa: E402

import spec  # noqa: E402
from jax._src.lax import parallel as jax_parallel  # noqa: E402
from spec._src.lax import collectives as spec_collectives  # noqa: E402
from spec._src.lowering.emitter import lower_jaxpr  # noqa: E402
from tests.lowering.xla_run import canonical, parsed  # noqa: E402

spec.config.update("jax_num_cpu_devices", 8)


def _run_text(text: str, jmesh: Any, args: list[Any], out_shapes: list[tuple[int, ...]]
              ) -> list[np.ndarray]:
    devices = list(jmesh.devices.flat)
    opts = compiler.get_compile_options(num_replicas=1, num_partitions=len(devices),
                                        device_assignment=np.array(devices).reshape(1, -1))
    backend = xla_bridge.get_backend("cpu")
    exe = backend.compile_and_load(text, xla_client.DeviceList(tuple(devices)), opts)
    # Arguments placed as the compiled program expects them (in Auto mode
    # the partitioner chooses the layout of an unannotated argument).
    placed = [jax.device_put(np.asarray(a), GSPMDSharding(tuple(devices), s))
              for a, s in zip(args, exe.get_parameter_shardings())]
    shards = exe.execute_sharded(placed).disassemble_into_single_device_arrays()
    outs = []
    for per_device, op, shape in zip(shards, exe.get_output_shardings(), out_shapes):
        outs.append(np.asarray(jax.make_array_from_single_device_arrays(
            shape, GSPMDSharding(tuple(devices), op), per_device)))
    return outs


def case(name: str, shape: tuple[int, ...], axes: tuple[str, ...], explicit: bool,
         program: Callable[[Any, Any, Any], Callable[..., Any]], in_spec: tuple[Any, ...],
         text_check: bool = False) -> dict[str, Any]:
    """``program(api, lax, P)`` builds the function from either library."""
    x = (np.arange(64, dtype=np.float32).reshape(8, 8) * 0.25 - 3.0)
    st = spec.sharding.AxisType.Explicit if explicit else spec.sharding.AxisType.Auto
    jt = jax.sharding.AxisType.Explicit if explicit else jax.sharding.AxisType.Auto
    smesh = spec.make_mesh(shape, axes, axis_types=(st,) * len(axes))
    jmesh = jax.make_mesh(shape, axes, axis_types=(jt,) * len(axes))
    SP, JP = spec.sharding.PartitionSpec, jax.sharding.PartitionSpec
    sf, jf = program(spec, spec.lax, SP), program(jax, jax.lax, JP)
    with spec.set_mesh(smesh):
        sx = spec.device_put(x, spec.sharding.NamedSharding(smesh, SP(*in_spec)))
        jaxpr = spec.make_jaxpr(sf)(sx)
        text = lower_jaxpr(jaxpr, "f")
        ours = [np.asarray(o) for o in spec.tree_util.tree_leaves(spec.jit(sf)(sx))]
    with jax.set_mesh(jmesh):
        jx = jax.device_put(x, jax.sharding.NamedSharding(jmesh, JP(*in_spec)
                                                          if explicit else JP()))
        theirs = [np.asarray(t) for t in jax.tree.leaves(jax.jit(jf)(jx))]
        jtext = jax.jit(jf).lower(jx).as_text() if text_check else ""
    if text_check:
        with spec.set_mesh(smesh):
            full = spec.jit(sf).lower(sx).as_text()
        with jax.set_mesh(jmesh):
            jfull = jax.jit(jf).lower(jx).as_text()
    compiled = _run_text(text, jmesh, [jx], [tuple(v.aval.shape) for v in jaxpr.outvars])
    result = {
        "spec_equal": [o.tobytes() == c.tobytes() for o, c in zip(ours, compiled)],
        "jax_equal": [c.tobytes() == t.tobytes() for c, t in zip(compiled, theirs)],
        "text": text,
    }
    if text_check:
        result["text_equal"] = canonical(text) == canonical(jtext)
        result["jax_text"] = jtext
        # Lowered.as_text() with JAX's module and result attributes kept.
        result["full_text_equal"] = parsed(full) == parsed(jfull)
        result["full_text"], result["jax_full_text"] = full, jfull
    return result


def _shard_map_collectives(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    def body(b: Any) -> Any:
        return (lax.psum(b, "x"), lax.pmax(b, "y"), lax.pmin(b, ("x", "y")),
                b + lax.axis_index("x").astype(b.dtype) * 10
                + lax.axis_index("y").astype(b.dtype),
                lax.all_gather(b, "y", axis=0, tiled=True),
                lax.all_gather(b, "x", axis=1, tiled=False)[0],
                lax.ppermute(b, "x", [(0, 1), (1, 0)]),
                lax.psum_scatter(b, "y", scatter_dimension=0, tiled=True),
                lax.psum_scatter(b[:, :2], "y", scatter_dimension=1, tiled=False)[:, None],
                lax.all_to_all(b, "y", 0, 1, tiled=True))

    def fn(a: Any) -> Any:
        return api.shard_map(body, mesh=api.sharding.get_abstract_mesh(),
                             in_specs=P("x", "y"), out_specs=P("x", "y"),
                             check_vma=False)(a)
    return fn


def _shard_map_ring(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    def body(b: Any) -> Any:
        n = 8
        return lax.ppermute(b, "i", [(k, (k + 1) % n) for k in range(n)]) + lax.psum(b, "i")

    def fn(a: Any) -> Any:
        return api.shard_map(body, mesh=api.sharding.get_abstract_mesh(),
                             in_specs=P("i"), out_specs=P("i"))(a)
    return fn


def _explicit(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    def fn(a: Any) -> Any:
        b = a * a - a * 2.0  # (the literal's broadcast is pinned to the sharding too)
        return api.sharding.reshard(b, P(None, "x")), b
    return fn


def _auto_constraint(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    def fn(a: Any) -> Any:
        return lax.with_sharding_constraint(a * 2.0, P(None, "x")) + 1.0
    return fn


def _unreduced_casts(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    """Varying -> unreduced -> invariant, and varying -> reduced (gathered)
    -> varying, binding the primitives JAX's transposes bind."""
    prims = (spec_collectives if api is spec else jax_parallel)

    def body(b: Any) -> Any:
        pending = prims.vary_unreduced_cast_p.bind(b, axes=("x",))
        total = prims.unreduced_psum_p.bind(pending, axes=("x",))
        gathered = prims.all_gather_reduced_p.bind(b, all_gather_dimension=0,
                                                   axis_name=("y",), axis_size=2, tiled=True)
        scattered = prims.unreduced_reduce_scatter_p.bind(
            prims.vary_unreduced_cast_p.bind(b, axes=("y",)), axis_name=("y",),
            scatter_dimension=1, axis_size=2, tiled=True)
        return total, gathered, scattered

    def fn(a: Any) -> Any:
        return api.shard_map(body, mesh=api.sharding.get_abstract_mesh(),
                             in_specs=P("x", "y"),
                             out_specs=(P(None, "y"), P("x", None, reduced={"y"}),
                                        P("x", "y")))(a)
    return fn


def _partial_manual(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    """Manual over x only; y stays Explicit inside the body."""
    def body(b: Any) -> Any:
        return lax.psum(b * b, "x")

    def fn(a: Any) -> Any:
        return api.shard_map(body, mesh=api.sharding.get_abstract_mesh(), in_specs=P("x"),
                             out_specs=P(), axis_names={"x"})(a)
    return fn


def _simple_shard_map(api: Any, lax: Any, P: Any) -> Callable[..., Any]:
    def body(b: Any) -> Any:
        return lax.psum(b, "x")

    def fn(a: Any) -> Any:
        return api.shard_map(body, mesh=api.sharding.get_abstract_mesh(),
                             in_specs=P("x", None), out_specs=P(None, None))(a)
    return fn


def _auto_placed() -> dict[str, Any]:
    """Arguments placed on an Auto mesh, with no mesh in context: JAX
    annotates each placed argument with its sharding, counts the mesh's
    devices as the module's partitions and names the results by their
    paths."""
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    texts = []
    for api in (spec, jax):
        mesh = api.make_mesh((4, 2), ("x", "y"), axis_types=(api.sharding.AxisType.Auto,) * 2)
        P, NS = api.sharding.PartitionSpec, api.sharding.NamedSharding
        a = api.device_put(x, NS(mesh, P("x", None)))
        b = api.device_put(x, NS(mesh, P()))

        def f(a: Any, b: Any, c: Any) -> Any:
            return {"sum": a + b, "pair": (a * c, b)}
        texts.append(api.jit(f).lower(a, b, x).as_text())
    return {"full_text_equal": parsed(texts[0]) == parsed(texts[1]),
            "full_text": texts[0], "jax_full_text": texts[1]}


def _gspmd_programs(api: Any, numpy: Any) -> list[str]:
    """Lowered texts of an Explicit program (shardings, resharding, a
    broadcast literal) and an Auto constraint with an open dimension."""
    S = api.sharding
    P = S.PartitionSpec
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    mesh = api.make_mesh((2, 2), ("x", "y"), axis_types=(S.AxisType.Explicit,) * 2)
    placed = api.device_put(x, S.NamedSharding(mesh, P("x", "y")))
    with api.set_mesh(mesh):
        texts = [api.jit(lambda a: (numpy.sin(a) * 2.0, api.reshard(a, P(None, "x"))))
                 .lower(placed).as_text()]
    auto = api.make_mesh((2, 2), ("x", "y"), axis_types=(S.AxisType.Auto,) * 2)
    on_auto = api.device_put(x, S.NamedSharding(auto, P("x")))
    texts.append(api.jit(lambda a: api.lax.with_sharding_constraint(
        a * 2.0, S.NamedSharding(auto, P(P.UNCONSTRAINED, "y")))).lower(on_auto).as_text())
    return texts


def _gspmd() -> dict[str, Any]:
    """With ``jax_use_shardy_partitioner`` off, both libraries write GSPMD's
    ``mhlo.sharding`` strings and ``Sharding`` custom calls."""
    for api in (spec, jax):
        api.config.update("jax_use_shardy_partitioner", False)
    try:
        ours, theirs = _gspmd_programs(spec, spec.numpy), _gspmd_programs(jax, jax.numpy)
    finally:
        for api in (spec, jax):
            api.config.update("jax_use_shardy_partitioner", True)
    return {"full_text_equal": all(parsed(a) == parsed(b) for a, b in zip(ours, theirs)),
            "full_text": "\n".join(ours), "jax_full_text": "\n".join(theirs)}


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "gspmd_4": _gspmd,
    "auto_placed_8": _auto_placed,
    "collectives_2x2": lambda: case("collectives_2x2", (2, 2), ("x", "y"), True,
                                    _shard_map_collectives, ("x", "y")),
    "ring_8": lambda: case("ring_8", (8,), ("i",), True, _shard_map_ring, ("i",)),
    "explicit_2x4": lambda: case("explicit_2x4", (2, 4), ("x", "y"), True, _explicit,
                                 ("x", "y"), text_check=True),
    "auto_constraint_4": lambda: case("auto_constraint_4", (4,), ("x",), False,
                                      _auto_constraint, ()),
    "unreduced_2x2": lambda: case("unreduced_2x2", (2, 2), ("x", "y"), True,
                                  _unreduced_casts, ("x", "y"), text_check=True),
    "partial_manual_2x2": lambda: case("partial_manual_2x2", (2, 2), ("x", "y"), True,
                                       _partial_manual, ("x", None)),
    "psum_text_2": lambda: case("psum_text_2", (2,), ("x",), True, _simple_shard_map,
                                ("x", None), text_check=True),
}


if __name__ == "__main__":
    names = sys.argv[1:] or list(CASES)
    out: dict[str, Any] = {}
    for n in names:
        try:
            out[n] = CASES[n]()
        except Exception as err:  # reported to the test, which fails on it
            out[n] = {"error": f"{type(err).__name__}: {err}"}
    print(json.dumps(out))
