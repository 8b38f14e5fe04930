"""spec.sharding (meshes, PartitionSpec, NamedSharding) against real JAX 0.12, live.

JAX fixes its device count at first use, so the JAX side runs once, in a
subprocess with 4 CPU devices: every case below is a snippet evaluated there
and here with the same names bound (``S`` the sharding module, ``P``, ``D``
the device list, ``make_mesh``, ``set_mesh``, ``np``), and the reprs of the
results, or the exception class names and messages, must agree.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import spec
from spec import sharding as S

_CONSTRAINTS = (
    "m = make_mesh((2, 2), ('a', 'b'), (S.AxisType.Auto,) * 2)\n"
    "def f(v):\n"
    "    v = J.lax.with_sharding_constraint(v * 2, S.NamedSharding(m, P('a', None)))\n"
    "    v = J.lax.with_sharding_constraint(v + 1, S.NamedSharding(m, P(P.UNCONSTRAINED, 'b')))\n"
    "    return J.lax.with_sharding_constraint(v, S.NamedSharding(m, P('a'), "
    "memory_kind='device'))\n"
    "x = np.ones((4, 2), np.float32)\n"
    "xs = np.ones((4, 2, 2), np.float32)\n")

# A case is an expression, or statements that leave their result in `out`.
# ``J`` is the library itself (jax or spec).
CASES: dict[str, str] = {
    # AxisType
    "axistype_repr": "(repr(S.AxisType.Explicit), str(S.AxisType.Auto), list(S.AxisType))",
    "axistype_values": "[(a.name, a.value) for a in S.AxisType]",
    # make_mesh / Mesh
    "mesh_repr": "repr(make_mesh((2, 2), ('X', 'Y')))",
    "mesh_str": "str(make_mesh((2, 2), ('X', 'Y')))",
    "mesh_props": "m = make_mesh((2, 2), ('X', 'Y'))\n"
                  "out = (m.shape, m.axis_names, m.axis_types, m.size, m.devices, m.empty,"
                  " m.axis_sizes, m.shape_tuple, m.explicit_axes, m.auto_axes)",
    "mesh_abstract": "str(make_mesh((2, 2), ('X', 'Y')).abstract_mesh)",
    "mesh_abstract_props": "a = make_mesh((4,), ('X',)).abstract_mesh\n"
                           "out = (a.shape, a.size, a.empty, a.axis_sizes, a.abstract_mesh == a)",
    # Both kept alive: JAX interns meshes and hashes them by identity.
    "mesh_eq": "a, b = make_mesh((4,), 'X'), make_mesh((4,), 'X')\n"
               "out = (make_mesh((2, 2), ('X', 'Y')) == make_mesh((2, 2), ('X', 'Y')),"
               " hash(a) == hash(b),"
               " make_mesh((4,), 'X') == make_mesh((4,), 'Y'),"
               " make_mesh((4,), 'X') == S.Mesh(np.array(D), 'X'))",
    "mesh_str_name": "repr(make_mesh((4,), 'X'))",
    "mesh_fewer": "make_mesh((2,), ('X',)).devices",
    "mesh_devices_kw": "make_mesh((2,), ('X',), devices=D[2:]).devices",
    "mesh_types": "repr(make_mesh((2, 2), ('X', 'Y'), (S.AxisType.Auto, S.AxisType.Explicit)))",
    "mesh_too_big": "make_mesh((3, 3), ('X', 'Y'))",
    "mesh_names_short": "make_mesh((2, 2), ('X',))",
    "mesh_bad_size": "make_mesh((2, 'a'), ('X', 'Y'))",
    "mesh_one_type": "make_mesh((2, 2), ('X', 'Y'), S.AxisType.Auto)",
    "mesh_str_types": "make_mesh((2, 2), ('X', 'Y'), ('Auto', 'Auto'))",
    "mesh_none_name": "make_mesh((2, 2), ('X', None))",
    "mesh_ctor_default_auto": "repr(S.Mesh(np.array(D).reshape(2, 2), ('X', 'Y')))",
    "mesh_ctor_list": "str(S.Mesh(D, ('X',)))",
    "mesh_ctor_ndim": "S.Mesh(np.array(D), ('X', 'Y'))",
    "mesh_permuted": "m = S.Mesh(np.array([D[3], D[1], D[2], D[0]]).reshape(2, 2), ('X', 'Y'))\n"
                     "out = (m.devices, m.device_ids, m == make_mesh((2, 2), ('X', 'Y')))",
    "mesh_empty": "m = S.Mesh(np.empty((), dtype=object), ())\n"
                  "out = (repr(m), str(m), m.empty, m.size, str(m.abstract_mesh))",
    "mesh_rank0": "m = make_mesh((), ())\nout = (repr(m), str(m), m.empty, m.size)",
    # AbstractMesh
    "am_repr": "repr(S.AbstractMesh((2, 2), ('X', 'Y')))",
    "am_auto": "repr(S.AbstractMesh((2, 2), ('X', 'Y'), (S.AxisType.Auto,) * 2))",
    "am_one_type": "repr(S.AbstractMesh((4,), ('X',), S.AxisType.Manual))",
    "am_eq": "a, b = S.AbstractMesh((2,), ('X',)), S.AbstractMesh((2,), ('X',))\n"
             "out = (a == b, hash(a) == hash(b),"
             " S.AbstractMesh((2,), ('X',)) == make_mesh((2,), ('X',)).abstract_mesh)",
    "am_empty": "a = S.AbstractMesh((), ())\nout = (repr(a), a.size, a.empty)",
    "am_devices": "S.AbstractMesh((2,), ('X',)).devices",
    "am_types_len": "S.AbstractMesh((2, 2), ('X', 'Y'), (S.AxisType.Auto,))",
    "am_device_repr": "make_mesh((2,), ('X',)).abstract_mesh.abstract_device",
    # set_mesh / get_abstract_mesh / get_mesh / use_abstract_mesh
    "ctx_default": "(repr(S.get_abstract_mesh()), S.get_abstract_mesh().empty,"
                   " repr(S.get_mesh()), S.get_mesh().empty)",
    "ctx_global": "set_mesh(make_mesh((2, 2), ('X', 'Y')))\n"
                  "out = (str(S.get_abstract_mesh()), str(S.get_mesh()))",
    "ctx_with": "outer = make_mesh((2, 2), ('X', 'Y'))\nset_mesh(outer)\n"
                "with set_mesh(make_mesh((4,), ('A',))):\n"
                "    inner = (str(S.get_abstract_mesh()), str(S.get_mesh()))\n"
                "out = (inner, str(S.get_abstract_mesh()), S.get_mesh() == outer)",
    "ctx_none": "with set_mesh(make_mesh((4,), ('A',))):\n"
                "    with set_mesh(None):\n"
                "        inner = (repr(S.get_abstract_mesh()), repr(S.get_mesh()))\n"
                "out = (inner, str(S.get_abstract_mesh()))",
    "ctx_abstract": "with set_mesh(make_mesh((4,), ('A',))):\n"
                    "    with S.use_abstract_mesh(S.AbstractMesh((2, 2), ('B', 'C'))):\n"
                    "        inner = (repr(S.get_abstract_mesh()), str(S.get_mesh()))\n"
                    "out = (inner, str(S.get_abstract_mesh()))",
    "ctx_abstract_size": "with S.use_abstract_mesh(S.AbstractMesh((2, 2), ('B', 'C'))):\n"
                         "    with S.use_abstract_mesh(S.AbstractMesh((2,), ('B',))):\n"
                         "        pass",
    "ctx_abstract_type": "S.use_abstract_mesh(make_mesh((4,), ('A',)))",
    "ctx_bad_type": "set_mesh('X')",
    "ctx_abstract_arg": "set_mesh(S.AbstractMesh((4,), ('X',)))",
    "ctx_manual": "set_mesh(make_mesh((4,), ('X',), (S.AxisType.Manual,)))",
    "ctx_after_error": "try:\n    set_mesh(make_mesh((4,), ('X',), (S.AxisType.Manual,)))\n"
                       "except ValueError:\n    pass\nout = repr(S.get_abstract_mesh())",
    # PartitionSpec
    "p_repr": "[repr(p) for p in (P('X', None), P('X'), P(), P(None), P(('X', 'Y'), None),"
              " P(['X', 'Y']), P(('X',)), P(()), P([]), P('X', ('Y', 'Z')), P(P.UNCONSTRAINED),"
              " P(1))]",
    "p_str": "str(P('X', None))",
    "p_ur_repr": "[repr(p) for p in (P(None, None, unreduced={'X'}), P('X', reduced={'Y'}),"
                 " P('X', unreduced={'Z'}, reduced={'Y'}), P(unreduced={'X'}),"
                 " P(unreduced=frozenset({'X'}), unreduced_kind=S.UnreducedKind.max),"
                 " P('X', reduced={'Y'}, unreduced={'Z'}))]",
    "p_attrs": "p = P('X', unreduced={'Y'})\n"
               "out = (p.partitions, p.unreduced, p.reduced, p.unreduced_kind,"
               " P('X').unreduced_kind, P('X').reduced)",
    "p_eq": "a, b = P('X', None), P('X', None)\n"
            "out = (P('X') == P('X'), hash(a) == hash(b), P('X') == P(('X',)), P('X') == ('X',),"
            " P('X', None) == ('X', None),"
            " P('X') == P('X', None), P('X') == 'X',"
            " P(unreduced={'X'}) == P(unreduced={'X'}), P(unreduced={'X'}) == P(reduced={'X'}))",
    "p_seq": "p = P('X', ('Y', 'Z'), None)\n"
             "out = (len(p), p[0], p[1], p[-1], p[0:2], list(p), p.index('X'), p.count(('Y', 'Z')),"
             " p.index(['Y', 'Z']), len(P()), len(P(unreduced={'X'})))",
    "p_add": "(P('X') + P('Y'), P('X') + ('Y',), ('Y',) + P('X'),"
             " P(unreduced={'X'}) + P('Y', unreduced={'X'}), P(reduced={'X'}) + P('Y'))",
    "p_add_tuple_unreduced": "P(unreduced={'X'}) + ('Y',)",
    "p_radd_tuple_reduced": "('Y',) + P(reduced={'X'})",
    "p_add_kind": "P(unreduced={'X'}) + P('Y')",
    "p_getitem_unreduced": "P('X', unreduced={'Y'})[0]",
    "p_iter_unreduced": "list(P('X', reduced={'Y'}))",
    "p_dup_ok": "(P('X', 'X'), P(('X', 'X')))",
    "p_overlap_unreduced": "P('X', unreduced={'X'})",
    "p_overlap_reduced": "P(('Y', 'X'), reduced={'X'})",
    "p_overlap_ur": "P('Y', unreduced={'X'}, reduced={'X'})",
    "p_ur_list": "P(unreduced=['X'])",
    "p_reduced_str": "P(reduced='X')",
    "p_ur_none": "P(None, unreduced={None})",
    "p_r_none": "P(None, reduced={None})",
    "p_kind_without": "P('X', unreduced_kind=S.UnreducedKind.max)",
    "p_kind_type": "P(unreduced={'X'}, unreduced_kind='max')",
    "p_nested": "P(('X', ('Y',)))",
    "p_nested2": "P((('X', 'Y'),))",
    "p_setattr": "p = P('X')\np.unreduced = frozenset()",
    "p_subclass": "class Q(P):\n    pass",
    "p_alias": "(S.PartitionSpec is P, type(P('X')).__name__)",
    "p_ct_spec": "(P('X', unreduced={'Y'}).to_ct_spec(), P('X', reduced={'Y'}).to_ct_spec(),"
                 " P('X').to_ct_spec())",
    "p_update": "P('X', None).update(partitions=('Y',), reduced={'X'})",
    # NamedSharding
    "ns_repr": "m = make_mesh((2, 2), ('X', 'Y'))\n"
               "out = [repr(S.NamedSharding(m, p)) for p in (P('X', 'Y'), P(), P(('X', 'Y')),"
               " P(None, unreduced={'X'}), P('Y', reduced={'X'}))]",
    "ns_str": "str(S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X', 'Y')))",
    "ns_attrs": "m = make_mesh((2, 2), ('X', 'Y'))\nns = S.NamedSharding(m, P('X', 'Y'))\n"
                "out = (ns.mesh == m, ns.spec, ns.memory_kind, ns.num_devices,"
                " ns.is_fully_replicated, sorted(d.id for d in ns.device_set))",
    "ns_replicated": "m = make_mesh((2, 2), ('X', 'Y'))\n"
                     "out = [S.NamedSharding(m, p).is_fully_replicated"
                     " for p in (P(), P(None, None), P('X'), P(None, ('X', 'Y')),"
                     " P(None, unreduced={'X'}),"
                     " P(None, reduced={'X'}))]\n"
                     "out.append(S.NamedSharding(make_mesh((4, 1), ('X', 'Y')), P('Y'))"
                     ".is_fully_replicated)\n"
                     "out.append(S.NamedSharding(make_mesh((1,), ('X',)), P('X'))"
                     ".is_fully_replicated)",
    "ns_memory": "m = make_mesh((2, 2), ('X', 'Y'))\n"
                 "out = [repr(S.NamedSharding(m, P('X'), memory_kind=k))"
                 " for k in ('device', 'pinned_host', 'unpinned_host')]",
    "ns_memory_bad": "S.NamedSharding(make_mesh((4,), ('X',)), P('X'), memory_kind='bogus')",
    "ns_memory_bad_abstract": "S.NamedSharding(S.AbstractMesh((4,), ('X',)), P('X'),"
                              " memory_kind='bogus')",
    "ns_with_memory": "S.NamedSharding(make_mesh((4,), ('X',)), P('X'))"
                      ".with_memory_kind('pinned_host')",
    "ns_eq": "m = make_mesh((2, 2), ('X', 'Y'))\nns = S.NamedSharding(m, P('X'))\n"
             "out = (ns == S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X')),"
             " ns == S.NamedSharding(m, P('X', None)),"
             " ns == S.NamedSharding(m, P('X'), memory_kind='device'),"
             " hash(ns) == hash(S.NamedSharding(m, P('X'), memory_kind='device')),"
             " ns == S.NamedSharding(m, P('X'), memory_kind='pinned_host'),"
             " ns == S.NamedSharding(m.abstract_mesh, P('X')),"
             " ns == S.NamedSharding(make_mesh((2, 2), ('X', 'Y'), (S.AxisType.Auto,) * 2),"
             " P('X')))",
    "ns_abstract": "a = make_mesh((2, 2), ('X', 'Y')).abstract_mesh\n"
                   "ns = S.NamedSharding(a, P('X'))\n"
                   "out = (repr(ns), ns.memory_kind, ns.num_devices, ns.shard_shape((4, 2)),"
                   " repr(S.NamedSharding(a, P('X'), memory_kind='device')))",
    "ns_abstract_map": "S.NamedSharding(S.AbstractMesh((4,), ('X',)), P('X'))"
                       ".devices_indices_map((4,))",
    "ns_abstract_devset": "S.NamedSharding(S.AbstractMesh((4,), ('X',)), P('X')).device_set",
    "ns_dup": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X', 'X'))",
    "ns_dup2": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P(('Y', 'X'), 'X', 'Y'))",
    "ns_dup_mro": "try:\n    S.NamedSharding(make_mesh((4,), ('X',)), P('X', 'X'))\n"
                  "except Exception as e:\n    out = isinstance(e, ValueError)",
    "ns_unknown": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('Z'))",
    "ns_unknown_tuple": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P(('X', 'Z')))",
    "ns_unknown_int": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P(1))",
    "ns_unknown_unreduced": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')),"
                            " P(None, unreduced={'Z'}))",
    "ns_unknown_reduced": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P(None, reduced={'Z'}))",
    "ns_unreduced_auto": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y'), (S.AxisType.Auto,) * 2),"
                         " P(None, unreduced={'X'}))",
    "ns_reduced_auto": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y'),"
                       " (S.AxisType.Explicit, S.AxisType.Auto)), P(None, reduced={'Y'}))",
    "ns_unconstrained_auto": "repr(S.NamedSharding(make_mesh((4,), ('X',), (S.AxisType.Auto,)),"
                             " P(P.UNCONSTRAINED)))",
    "ns_unconstrained_explicit": "S.NamedSharding(make_mesh((4,), ('X',)), P(P.UNCONSTRAINED))",
    "ns_shard_indivisible": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X'))"
                            ".shard_shape((7, 6))",
    "ns_map_indivisible": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P(None, ('X', 'Y')))"
                          ".devices_indices_map((4, 6))",
    "ns_indivisible_mro": "try:\n    S.NamedSharding(make_mesh((4,), ('X',)), P('X'))"
                          ".shard_shape((3,))\n"
                          "except Exception as e:\n    out = isinstance(e, ValueError)",
    "ns_shard_unreduced": "m = make_mesh((2, 2), ('X', 'Y'))\n"
                          "out = (S.NamedSharding(m, P(None, unreduced={'X'})).shard_shape((4, 4)),"
                          " S.NamedSharding(m, P('X', unreduced={'Y'})).shard_shape((4, 4)))",
    "ns_map_unreduced": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X', unreduced={'Y'}))"
                        ".devices_indices_map((4, 4))",
    "ns_map_reduced": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X', reduced={'Y'}))"
                      ".devices_indices_map((4, 4))",
    "ns_map_permuted": "m = S.Mesh(np.array([D[3], D[1], D[2], D[0]]).reshape(2, 2), ('X', 'Y'))\n"
                       "out = S.NamedSharding(m, P('X', 'Y')).devices_indices_map((4, 2))",
    "ns_compatible": "S.NamedSharding(make_mesh((4,), ('X',)), P('X')).check_compatible_aval(())",
    "ns_update": "S.NamedSharding(make_mesh((2, 2), ('X', 'Y')), P('X')).update(spec=('Y',))",
    # SingleDeviceSharding
    "sds": "s = S.SingleDeviceSharding(D[1])\n"
           "out = (repr(s), str(s), s.memory_kind, s.num_devices, s.is_fully_replicated,"
           " s.device_set, s.shard_shape((3, 4)), s.devices_indices_map((3, 4)),"
           " s.devices_indices_map(()))",
    "sds_eq": "(S.SingleDeviceSharding(D[1]) == S.SingleDeviceSharding(D[1], memory_kind='device'),"
              " S.SingleDeviceSharding(D[1]) == S.SingleDeviceSharding(D[2]),"
              " hash(S.SingleDeviceSharding(D[0], memory_kind='device'))"
              " == hash(S.SingleDeviceSharding(D[0])),"
              " S.SingleDeviceSharding(D[0]) == S.NamedSharding(make_mesh((1,), ('X',)), P()))",
    "sds_memory": "S.SingleDeviceSharding(D[0], memory_kind='pinned_host')",
    "sds_memory_bad": "S.SingleDeviceSharding(D[0], memory_kind='bogus')",
    # The jaxpr text of with_sharding_constraint in Auto mode: the sharding as given
    # (concrete mesh, memory kind, spec unpadded, UNCONSTRAINED), the context mesh
    # (Mesh() outside any), and vmap's unconstrained batch dimension.
    "constraint_jaxpr": _CONSTRAINTS + "out = str(J.make_jaxpr(f)(x))",
    "constraint_jaxpr_vmap": _CONSTRAINTS + "out = str(J.make_jaxpr(J.vmap(f, in_axes=1))(xs))",
    "constraint_jaxpr_in_mesh": "m = make_mesh((2, 2), ('a', 'b'), (S.AxisType.Auto,) * 2)\n"
                                "with set_mesh(m):\n"
                                "    out = str(J.make_jaxpr(lambda v: "
                                "J.lax.with_sharding_constraint(v, P('a')))"
                                "(np.ones((4, 2), np.float32)))",
}


def _random_layout_cases(n: int, seed: int) -> dict[str, str]:
    """shard_shape / devices_indices_map / is_fully_replicated on random meshes and specs."""
    rng = np.random.default_rng(seed)
    meshes = [((4,), ("a",)), ((2, 2), ("a", "b")), ((1, 4), ("a", "b")), ((4, 1), ("a", "b")),
              ((2, 1, 2), ("a", "b", "c")), ((2,), ("a",)), ((1,), ("a",))]
    cases = {}
    for k in range(n):
        sizes, names = meshes[rng.integers(len(meshes))]
        rank = int(rng.integers(0, 4))
        entries: list[str] = []
        for _ in range(int(rng.integers(0, rank + 1))):
            pick = rng.permutation(len(names))[: int(rng.integers(0, len(names) + 1))]
            axes = [names[i] for i in pick]
            entries.append("None" if not axes else repr(axes[0]) if len(axes) == 1
                           else repr(tuple(axes)))
        shape = tuple(int(rng.choice([1, 2, 3, 4, 6, 8])) for _ in range(rank))
        cases[f"rand{k}"] = (
            f"ns = S.NamedSharding(make_mesh({sizes}, {names}), P({', '.join(entries)}))\n"
            f"out = (ns.is_fully_replicated, ns.shard_shape({shape}),"
            f" ns.devices_indices_map({shape}))")
    return cases


RANDOM_CASES = _random_layout_cases(120, seed=5)

_RUNNER = r"""
import json, sys
import numpy as np

def run_cases(cases, ns, reset):
    results = {}
    for name, src in cases.items():
        env = dict(ns)
        try:
            try:
                code = compile(src, name, "eval")
            except SyntaxError:
                exec(compile(src, name, "exec"), env)
                value = env.get("out")
            else:
                value = eval(code, env)
            results[name] = ["ok", repr(value)]
        except Exception as e:
            results[name] = ["err", type(e).__name__, str(e)]
        finally:
            reset()
    return results
"""

_JAX_MAIN = r"""
import jax
jax.config.update("jax_num_cpu_devices", 4)
from jax import P
ns = dict(S=jax.sharding, P=P, D=jax.devices(), np=np, make_mesh=jax.make_mesh,
          set_mesh=jax.set_mesh, J=jax)
cases = json.loads(sys.stdin.read())
print(json.dumps(run_cases(cases, ns, lambda: jax.set_mesh(None))))
"""


def _jax_results(cases: dict[str, str]) -> dict[str, list[str]]:
    """Run every case in one JAX subprocess with 4 CPU devices."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="4")
    proc = subprocess.run([sys.executable, "-c", _RUNNER + _JAX_MAIN], input=json.dumps(cases),
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    out: dict[str, list[str]] = json.loads(proc.stdout)
    return out


def _spec_results(cases: dict[str, str]) -> dict[str, list[str]]:
    scope: dict[str, Any] = {}
    exec(_RUNNER, scope)
    from spec._src.backends.devices import devices
    names = dict(S=S, P=S.P, D=devices(), np=np, make_mesh=S.make_mesh, set_mesh=S.set_mesh,
                 J=spec)
    out: dict[str, list[str]] = scope["run_cases"](cases, names, lambda: S.set_mesh(None))
    return out


def _normalized(result: list[str]) -> list[str]:
    # Messages that print a class name print its module path, which differs.
    return [re.sub(r"<class '(?:[\w]+\.)+(\w+)'>", r"<class '\1'>", t) for t in result]


@pytest.fixture(scope="module")
def four_devices() -> Iterator[None]:
    old = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 4)
    try:
        yield
    finally:
        spec.config.update("jax_num_cpu_devices", old)


@pytest.fixture(scope="module")
def both(four_devices: None) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    cases = {**CASES, **RANDOM_CASES}
    return _jax_results(cases), _spec_results(cases)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name: str, both: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    want, got = _normalized(both[0][name]), _normalized(both[1][name])
    assert got == want, f"{name}: {CASES[name]}"


def test_random_layouts_match_jax(
        both: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    kinds = {"ok": 0, "err": 0}
    for name in RANDOM_CASES:
        want, got = _normalized(both[0][name]), _normalized(both[1][name])
        assert got == want, f"{name}: {RANDOM_CASES[name]}"
        kinds[want[0]] += 1
    # The generator must exercise both the divisible and the indivisible path.
    assert kinds["ok"] > 30 and kinds["err"] > 5, kinds


@pytest.mark.parametrize("name", ["constraint_jaxpr", "constraint_jaxpr_vmap"])
def test_constraint_jaxpr_text_reads_back(
        name: str, both: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    """JAX's jaxpr text of the constraints (``Mesh()``, a concrete mesh, a
    memory kind, ``UNCONSTRAINED``) parses in spec and prints back as is."""
    kind, printed = both[0][name]
    assert kind == "ok"
    text = ast.literal_eval(printed)
    assert str(spec.parse_jaxpr(text)) == text


def test_global_mesh_state_is_restored(four_devices: None) -> None:
    assert S.get_abstract_mesh().empty and S.get_mesh().empty
    mesh = S.make_mesh((2, 2), ("X", "Y"))
    with S.set_mesh(mesh):
        assert S.get_abstract_mesh() == mesh.abstract_mesh
        assert S.get_concrete_mesh() is mesh
    assert S.get_abstract_mesh().empty and S.get_concrete_mesh().empty


def test_set_mesh_refused_under_jit(four_devices: None) -> None:
    mesh = S.make_mesh((4,), ("X",))

    def f(x: Any) -> Any:
        with pytest.raises(ValueError, match="only be used outside of `jax.jit`"):
            S.set_mesh(mesh)
        with pytest.raises(ValueError, match="get_abstract_mesh"):
            S.get_mesh()
        return x

    spec.jit(f)(1.0)
    assert S.get_abstract_mesh().empty


def test_make_mesh_follows_device_count() -> None:
    # Default config (1 device unless overridden): a 2-device mesh cannot be built.
    n = spec.device_count()
    with pytest.raises(ValueError, match=rf"Number of devices {n} must be >= the product "
                                         rf"of mesh_shape \({n + 1},\)"):
        S.make_mesh((n + 1,), ("X",))


# Where JAX fails with an internal error, spec raises a clean TypeError/ValueError.
_S: Any = S  # the calls below are ill-typed on purpose


@pytest.mark.parametrize("make, exc, text", [
    (lambda m: _S.NamedSharding(m, ("X",)), TypeError, "PartitionSpec"),
    (lambda m: _S.NamedSharding(m, "X"), TypeError, "'X'"),
    (lambda m: _S.NamedSharding("m", _S.P("X")), TypeError, "'m'"),
    (lambda m: _S.NamedSharding(m, _S.P("X"), memory_kind=3), TypeError, "memory_kind"),
    (lambda m: _S.NamedSharding(m, _S.P("X", "Y")).shard_shape((8,)), ValueError, "at least 2"),
    (lambda m: _S.NamedSharding(m, _S.P("X")).shard_shape([8]), TypeError, r"\[8\]"),
    (lambda m: _S.AbstractMesh((2, 2), ("X",)), ValueError, "axis_names"),
    (lambda m: _S.AbstractMesh([2], ("X",)), TypeError, r"\[2\]"),
    (lambda m: _S.make_mesh(4, ("X",)), TypeError, "axis_shapes"),
    (lambda m: _S.P({"X"}), TypeError, "unhashable"),
])
def test_clean_errors_where_jax_fails_internally(four_devices: None, make: Any, exc: type,
                                                 text: str) -> None:
    mesh = S.make_mesh((2, 2), ("X", "Y"))
    with pytest.raises(exc, match=text):
        make(mesh)
