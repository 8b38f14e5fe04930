"""``shard_map``: per-device programming over manual mesh axes (SPEC.md
section 15; JEP 14273 and 17111).

``shard_map(f, mesh=..., in_specs=..., out_specs=..., axis_names=...,
check_vma=True)`` splits each argument into blocks by its in_spec, runs ``f``
on every device's blocks, and puts the results together by the out_specs.
Inside, the mesh's manual axes are named axes for collectives, and types
record along which of them a value varies (``{V:x}``).
"""

from __future__ import annotations

from spec._src.core.state_types import RefType

import functools
from collections.abc import Callable
from typing import Any

from spec._src.api import placement
from spec._src.api.shard_map_eager import run_eager
from spec._src.core import tree_util
from spec._src.core.config import config
from spec._src.core.interpreter import (
    EvalTrace,
    Tracer,
    canonical_aval_of,
    current_trace,
    trace_to_jaxpr,
)
from spec._src.core.hitypes import HiPspec, is_high
from spec._src.core.types import AXIS_ORDER
from spec._src.interpreters import spmd as S
from spec._src.lax.collectives import pvary
from spec._src.lax.shard_map import (
    _entry,
    _inside,
    _names_of,
    global_aval,
    leave_block,
    local_aval,
    shard_map_p,
)
import numpy as np

from spec._src.core.sharding import (
    AbstractMesh,
    AxisType,
    Mesh,
    P,
    concrete_mesh_for,
    get_abstract_mesh,
    get_concrete_mesh,
)


def shard_map(f: Callable[..., Any] | None = None, /, *, out_specs: Any,
              in_specs: Any = None, mesh: Mesh | AbstractMesh | None = None,
              axis_names: Any = frozenset(), check_vma: bool = True) -> Any:
    """Map ``f`` over the blocks of its arguments, one instance per device
    (usable as a decorator, with the mesh of ``set_mesh`` by default)."""
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")

    @functools.wraps(f)
    def mapped(*args: Any) -> Any:
        return _call(f, args, mesh, in_specs, out_specs, frozenset(axis_names), check_vma)
    return mapped


def _mesh_of(mesh: Mesh | AbstractMesh | None) -> tuple[AbstractMesh, Mesh | None]:
    if mesh is None:
        abstract = get_abstract_mesh()
        if abstract.empty:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context or pass a mesh to shard_map")
        concrete = get_concrete_mesh()
        return abstract, None if concrete.empty else concrete
    if isinstance(mesh, Mesh):
        return mesh.abstract_mesh, mesh
    if isinstance(mesh, AbstractMesh):
        return mesh, None
    raise TypeError(f"shard_map requires a `jax.sharding.Mesh` or `AbstractMesh` instance "
                    f"for its `mesh` argument, got {mesh!r} of type {type(mesh)}")


def _broadcast_prefix(prefix: Any, tree: Any) -> list[Any]:
    """One entry per leaf of ``tree``: each P (or None) of the prefix tree
    stands for the whole subtree at its position (P is a leaf here, as in
    JAX, not a tuple)."""
    # Walks the prefix and the arguments' tree structure together (never
    # rebuilding the arguments: a custom node may refuse stand-in leaves).
    out: list[Any] = []

    def walk(pre: Any, td: Any) -> None:
        if pre is None or isinstance(pre, (P, HiPspec)):
            out.extend([pre] * td.num_leaves)
            return
        kids = list(tree_util.flatten_one_level(pre)[0])
        td_kids = td.children()
        td_data = td.node_data()
        if td_data is None or len(kids) != len(td_kids) or type(pre) is not td_data[0]:
            raise ValueError(f"{pre!r} is not a prefix of a tree of structure {td}")
        for k, t in zip(kids, td_kids):
            walk(k, t)

    walk(prefix, tree)
    return out


def _inferred_spec(aval: Any, manual: frozenset[Any]) -> P:
    """Without in_specs, an argument enters split as its type says over the
    manual axes (JAX infers them from explicit shardings)."""
    if aval.sharding is None:
        return P()
    spec = aval.sharding.spec._normalized_spec_for_aval(aval.ndim)
    parts = [_entry([n for n in _names_of(e) if n in manual]) for e in spec.partitions]
    return P(*parts, unreduced=spec.unreduced & manual, reduced=spec.reduced & manual)


def _specs_for(specs: Any, tree: Any, n: int, what: str) -> list[Any]:
    """One spec per leaf: a PartitionSpec, or a hi type's HiPspec."""
    if isinstance(specs, (P, HiPspec)):
        return [specs] * n
    if specs is None:
        if n == 0:
            return []
        raise ValueError(f"shard_map {what} cannot be None when there are values to place")
    try:
        flat = _broadcast_prefix(specs, tree)
    except (ValueError, TypeError) as e:
        raise ValueError(f"shard_map {what} must be a tree prefix of the "
                         f"{'arguments' if what == 'in_specs' else 'outputs'}: {e}") from None
    for s in flat:
        if not isinstance(s, (P, HiPspec)) and s is not None:
            raise TypeError(f"shard_map {what} entries must be PartitionSpecs, got {s!r}")
    return [P() if s is None else s for s in flat]


def _call(f: Callable[..., Any], args: tuple[Any, ...], mesh_arg: Any, in_specs: Any,
          out_specs: Any, axis_names: frozenset[Any], check_vma: bool) -> Any:
    mesh, concrete = _mesh_of(mesh_arg)
    manual = axis_names or frozenset(mesh.axis_names)
    unknown = manual - frozenset(mesh.axis_names)
    if unknown:
        raise ValueError(f"shard_map axis_names {sorted(unknown, key=str)} are not axes of the"
                         f" mesh {mesh}")
    leaves, in_tree = tree_util.tree_flatten(args)
    if in_specs is None:
        specs = [_inferred_spec(canonical_aval_of(x), manual) for x in leaves]
    else:
        specs = _specs_for(in_specs, in_tree, len(leaves), "in_specs")
    name = getattr(f, "__name__", "<unnamed function>")
    who = f"shard_map applied to the function '{name}'"
    avals = [canonical_aval_of(x) for x in leaves]
    _check_in_specs(name, mesh, avals, specs, manual)
    local = [_block_type(a, s, mesh, manual, check_vma, who, i)
             for i, (a, s) in enumerate(zip(avals, specs))]
    # With hi values the map runs staged, on their components (op by op,
    # each device's block of a hi value would be no value of its class).
    hi = any(is_high(a) for a in avals) or _mentions_hi_spec(out_specs)
    if isinstance(current_trace(), EvalTrace) and not hi:
        if any(type(a) is RefType for a in avals):
            raise NotImplementedError(
                "Eager shard_map doesn't support `jax.Ref` arguments yet, including gradient "
                "refs from `with_refs`. Please use it under `jax.jit`.")
        return _call_eager(f, leaves, in_tree, local, specs, mesh, concrete, out_specs, who,
                           check_vma, manual)
    jaxpr, out_tree = _traced(f, in_tree, tuple(local), mesh, check_vma, manual, out_specs)
    o_specs = _out_specs(out_specs, out_tree, jaxpr.out_avals, who, manual, check_vma, mesh)
    # The equation holds the mesh the map was given (JAX prints a concrete
    # mesh as such); the rules read its abstract mesh.
    given = mesh_arg if isinstance(mesh_arg, Mesh) else mesh
    params = dict(mesh=given, in_specs=tuple(specs), out_specs=tuple(o_specs), jaxpr=jaxpr,
                  check_vma=check_vma, newly_manual_axes=manual)
    bind = shard_map_p.bind
    if concrete is not None and get_concrete_mesh().empty:
        # The devices to run on, for transforms that evaluate the map (also
        # while a jit traces around it, where set_mesh itself is refused).
        with concrete_mesh_for(concrete):
            outs = bind(*leaves, **params)
    else:
        outs = bind(*leaves, **params)
    return tree_util.tree_unflatten(out_tree, list(outs))


def _block_type(aval: Any, spec: Any, mesh: AbstractMesh, manual: frozenset[Any],
                check_vma: bool, who: str, index: int) -> Any:
    """One device's block type of an argument: a hi type's ``shard``."""
    if is_high(aval):
        return aval.shard(mesh, manual, check_vma, spec)
    if isinstance(spec, HiPspec):
        raise TypeError(f"{who} was given in_specs[{index}] = {spec!r}, a partition spec for "
                        f"values of a hi type, but args[{index}] is an array of type "
                        f"{aval.str_short(True)}: arrays take a PartitionSpec")
    return local_aval(aval, spec, mesh, manual, check_vma, who, index)


def _mentions_hi_spec(specs: Any) -> bool:
    return any(isinstance(s, HiPspec) for s in tree_util.tree_leaves(specs))


def _out_specs(out_specs: Any, out_tree: Any, out_avals: list[Any], who: str,
               manual: frozenset[Any], check_vma: bool, mesh: AbstractMesh,
               eager: bool = False) -> list[P]:
    o_specs = _specs_for(out_specs, out_tree, len(out_avals), "out_specs")
    # Eagerly, a bare P for a single output makes JAX wrap the function (its
    # messages then name the wrapper and the spec without an index).
    bare = eager and isinstance(out_specs, P) and out_tree.num_leaves == 1 and \
        out_tree.num_nodes == 1
    out_who = "shard_map applied to the function '_rem_singleton'" if bare else who
    _check_out_specs(out_who, out_avals, o_specs, manual, check_vma, mesh,
                     _spec_keys(out_specs, out_tree, len(out_avals)))
    return o_specs


def _spec_keys(specs: Any, tree: Any, n: int) -> list[str]:
    """Per output, the path of the out_specs entry that covers it (JAX's
    messages name it: ``out_specs[1]['a']``, or ``out_specs`` for one P)."""
    keys: list[str] = []

    def walk(pre: Any, td: Any, path: tuple[Any, ...]) -> None:
        if pre is None or isinstance(pre, (P, HiPspec)):
            keys.extend([tree_util.keystr(path)] * td.num_leaves)
            return
        kids, _ = tree_util.flatten_one_level_with_keys(pre)
        for (k, kid), t in zip(kids, td.children()):
            walk(kid, t, (*path, k))

    try:
        walk(specs, tree, ())
    except (ValueError, TypeError):  # (a prefix mismatch is reported before the keys matter)
        return [f"[{i}]" for i in range(n)]
    return keys if len(keys) == n else [f"[{i}]" for i in range(n)]


def _call_eager(f: Callable[..., Any], leaves: list[Any], in_tree: Any, local: list[Any],
                specs: list[P], mesh: AbstractMesh, concrete: Mesh | None, out_specs: Any,
                who: str, check_vma: bool, manual: frozenset[Any]) -> Any:
    """Eagerly the body runs op by op on every device's blocks."""
    devices = concrete if concrete is not None else _devices_for(mesh)
    dists, out_tree, out_local = run_eager(f, leaves, in_tree, local, specs, mesh, devices,
                                           check_vma, manual)
    o_specs = _out_specs(out_specs, out_tree, out_local, who, manual, check_vma, mesh,
                         eager=True)
    geo = S.geometry(mesh, S.procs_of(devices))
    explicit = bool(mesh.explicit_axes)
    outs = [S.to_array(leave_block(d, global_aval(d.aval, spec, mesh, explicit), spec, mesh,
                                   geo), devices, geo)
            for d, spec in zip(dists, o_specs)]
    return tree_util.tree_unflatten(out_tree, outs)


def _devices_for(mesh: AbstractMesh) -> Mesh:
    """The mesh in context, else the first devices in the mesh's shape."""
    context = get_concrete_mesh()
    if not context.empty:
        return context
    grid = np.asarray(placement.devices()[:mesh.size], dtype=object).reshape(mesh.axis_sizes)
    return Mesh(grid, mesh.axis_names, mesh.axis_types)


_TRACES: dict[Any, tuple[Any, Any]] = {}


def _traced(f: Callable[..., Any], in_tree: Any, local: tuple[Any, ...], mesh: AbstractMesh,
            check_vma: bool, manual: frozenset[Any], out_specs: Any) -> tuple[Any, Any]:
    """The body traced on the block types (cached, as JAX caches it, unless
    it closes over values of an enclosing trace). With ``check_vma``, a
    result that varies along fewer manual axes than its out_spec splits it
    over ends in a ``pvary`` to them (JAX's implicit cast)."""
    # Eagerly JAX runs the body op by op each call; staged, it reuses a trace.
    key: Any = None
    if not isinstance(current_trace(), EvalTrace):
        key = (f, in_tree, local, mesh, check_vma, manual, out_specs, config.values_key())
        try:
            hit = _TRACES.get(key)
        except TypeError:  # an unhashable function: trace every time
            key, hit = None, None
        if hit is not None:
            return hit
    out_tree_box: list[Any] = []

    def body(*xs: Any) -> list[Any]:
        out = f(*tree_util.tree_unflatten(in_tree, list(xs)))
        flat, tree = tree_util.tree_flatten(out)
        out_tree_box.append(tree)
        # (A hi operand's block does not record the axes its components vary
        # along, nor do values computed from it: such a body gets no cast.)
        if check_vma and not any(is_high(a) for a in local):
            specs = _specs_for(out_specs, tree, len(flat), "out_specs")
            flat = [_implicit_pvary(x, s, mesh, manual) for x, s in zip(flat, specs)]
        return flat

    for i, a in enumerate(mesh.axis_names):
        AXIS_ORDER.setdefault(a, i)
    with _inside(mesh, check_vma, manual):
        jaxpr, _ = trace_to_jaxpr(body, list(local))
    result = (jaxpr, out_tree_box[0])
    if key is not None and not any(isinstance(c, Tracer) for c in jaxpr.consts):
        _TRACES[key] = result
    return result


def _implicit_pvary(x: Any, spec: Any, mesh: AbstractMesh, manual: frozenset[Any]) -> Any:
    """``x`` cast to vary along the manual axes ``spec`` splits it over that
    it does not vary along yet (in mesh order); a hi type's spec is the
    type's own (its components vary as their blocks do)."""
    if not isinstance(spec, P):
        return x
    vma: frozenset[Any] = getattr(canonical_aval_of(x), "vma", frozenset())
    split = {n for e in spec.partitions if e is not None
             for n in ((e,) if isinstance(e, str) else e)}
    missing = tuple(n for n in mesh.axis_names if n in split and n in manual and n not in vma)
    return pvary(x, missing) if missing else x


def _names(spec: P) -> dict[int, tuple[Any, ...]]:
    return {d: (e,) if isinstance(e, str) else tuple(e)
            for d, e in enumerate(spec.partitions) if e is not None}


def _check_in_specs(name: str, mesh: AbstractMesh, avals: list[Any], specs: list[P],
                    manual: frozenset[Any]) -> None:
    """Ranks, divisibility, and (all axes Explicit) that each argument is
    already laid out by its in_spec, with JAX's messages."""
    sizes = mesh.shape
    # (a hi type's spec is the type's to check: its ``shard`` reads it)
    pairs = [(i, a, s) for i, (a, s) in enumerate(zip(avals, specs)) if not is_high(a)]
    for i, a, s in pairs:
        if len(s.partitions) > a.ndim:
            raise ValueError(
                f"shard_map applied to the function '{name}' was given an in_specs entry"
                f" which is too long to be compatible with the corresponding input value"
                f" from the function:\n\nin_specs[{i}] is {s} which has length"
                f" {len(s.partitions)}, but the passed args[{i}] has shape {a.str_short(True)},"
                f" which has rank {a.ndim} (and {a.ndim} < {len(s.partitions)})")
    msgs = []
    for i, a, s in pairs:
        for d, ns in _names(s).items():
            ways = int(np.prod([sizes[n] for n in ns]))
            if a.shape[d] % ways:
                axis = f"axes {ns}" if len(ns) > 1 else f"axis '{ns[0]}'"
                total = "total " if len(ns) > 1 else ""
                msgs.append(f"the passed args[{i}] of shape {a.str_short(True)} corresponds to"
                            f" in_specs[{i}] of value {s}, which maps array axis {d} (of size"
                            f" {a.shape[d]}) to mesh {axis} (of {total}size {ways}), but"
                            f" {ways} does not evenly divide {a.shape[d]}")
    if msgs:
        shown = msgs[0] if len(msgs) == 1 else "\n\n".join("* " + m for m in msgs)
        raise ValueError(
            f"shard_map applied to the function '{name}' was given argument arrays with axis"
            f" sizes that are not evenly divisible by the corresponding mesh axis sizes:\n\n"
            f"The mesh given has shape {tuple(sizes.values())} with corresponding axis names"
            f" {mesh.axis_names}.\n\n{shown}\n\nArray arguments' axis sizes must be evenly"
            f" divisible by the mesh axis or axes indicated by the corresponding elements of"
            f" the argument's in_specs entry. Consider checking that in_specs are correct, and"
            f" if so consider changing the mesh axis sizes or else padding the input and"
            f" adapting '{name}' appropriately.")
    if all(mesh._name_to_type[n] == AxisType.Explicit for n in manual):
        for _, a, s in pairs:
            want = s._normalized_spec_for_aval(a.ndim)
            have = P(*((None,) * a.ndim)) if a.sharding is None else \
                a.sharding.spec._normalized_spec_for_aval(a.ndim)
            if manual != frozenset(mesh.axis_names):  # only the manual axes must agree
                have = P(*(None if not [n for n in _names_of(e) if n in manual] else
                           _entry([n for n in _names_of(e) if n in manual])
                           for e in have.partitions),
                         unreduced=have.unreduced & manual, reduced=have.reduced & manual)
            if have != want:
                given = have if a.sharding is None else a.sharding.spec
                raise ValueError(
                    f"in_specs passed to shard_map: {want} does not match the specs of the"
                    f" input: {given} for arg: {a}. `in_specs` is an optional argument so you"
                    " can omit specifying it and shard_map will infer the in_specs from the"
                    " arguments. If you want to reshard your inputs, you can use"
                    " `jax.reshard` on the arguments and then pass those args to shard_map.")


def _check_out_specs(who: str, out_avals: list[Any], specs: list[P], manual: frozenset[Any],
                     check_vma: bool, mesh: AbstractMesh, keys: list[str]) -> None:
    bad: list[tuple[int, P, Any]] = []
    for i, (aval, spec) in enumerate(zip(out_avals, specs)):
        if is_high(aval):
            continue  # a hi type's spec is the type's to check: its ``unshard`` reads it
        if isinstance(spec, HiPspec):
            raise TypeError(f"{who} was given out_specs[{i}] = {spec!r}, a partition spec for "
                            f"values of a hi type, but f(*args)[{i}] is an array of type "
                            f"{aval.str_short(True)}: arrays take a PartitionSpec")
        if len(spec.partitions) > aval.ndim:
            raise ValueError(
                f"{who} was given an out_specs entry which is too long to be compatible with"
                f" the corresponding output value from the function:\n\nout_specs[{i}] is"
                f" {spec} which has length {len(spec.partitions)}, but f(*args)[{i}] has shape"
                f" {aval.str_short(True)}, which has rank {aval.ndim} (and {aval.ndim} <"
                f" {len(spec.partitions)})")
        named = {n for e in spec.partitions if e is not None
                 for n in ((e,) if isinstance(e, str) else e)}
        named |= set(spec.unreduced) | set(spec.reduced)
        if check_vma and not aval.vma <= named:
            bad.append((i, spec, aval))
        elif check_vma:
            for kind, have, want in (("unreduced", aval.munreduced, spec.unreduced),
                                     ("reduced", aval.mreduced, spec.reduced)):
                if have != frozenset(want) & manual:
                    raise ValueError(
                        f"out_specs passed to shard_map should be equal to the {kind} present"
                        f" on the out_aval. Got out_specs={spec} and"
                        f" out_aval={aval.str_short(True)}")
    if bad:
        msgs = [_vma_message(keys[i], spec, aval, mesh, named_of(spec))
                for i, spec, aval in bad]
        shown = msgs[0] if len(msgs) == 1 else "\n\n".join("* " + m for m in msgs)
        raise ValueError(
            f"{who} was given out_specs which require replication which can't be statically"
            f" inferred given the mesh:\n\nThe mesh given has shape"
            f" {tuple(mesh.shape.values())} with corresponding axis names {mesh.axis_names}."
            f"\n\n{shown}\n\nCheck if these output values are meant to be replicated over"
            " those mesh axes. If not, consider revising the corresponding out_specs entries."
            " If so, consider disabling the check by passing the check_vma=False argument to"
            " `jax.shard_map`.")


def named_of(spec: P) -> set[Any]:
    named = {n for e in spec.partitions if e is not None
             for n in ((e,) if isinstance(e, str) else e)}
    return named | set(spec.unreduced) | set(spec.reduced)


def _vma_message(key: str, spec: P, aval: Any, mesh: AbstractMesh, named: set[Any]) -> str:
    order = list(mesh.axis_names)
    unmentioned = [n for n in order if n not in named]
    if len(unmentioned) > 1:
        need = ",".join(str(n) for n in order if n in named)
        diff = ",".join(str(n) for n in unmentioned if n in aval.vma)
        got = ",".join(str(n) for n in order if n in aval.vma)
        return (f"out_specs{key} is {spec} which implies that the corresponding output value"
                f" is only varying across mesh axes {{{need}}} and not {{{diff}}}, but it was"
                f" inferred to be possibly varying over {{{got}}}")
    return (f"out_specs{key} is {spec} which implies that the corresponding output value is"
            f" replicated across mesh axis '{unmentioned[0]}', but could not infer replication"
            " over any axes")


__all__ = ["shard_map"]
