"""``reshard``: change an array's sharding, keeping its value (SPEC.md section 14.2).

The value is unchanged; only its layout moves. The per-device program
(``spec._src.interpreters.spmd.reshard``) realises any pair of layouts: pending reductions run
(all-reduce / reduce-scatter), new unreduced axes keep the value at position
0 and zeros elsewhere, re-split dimensions are gathered (all-gather /
all-to-all) and sliced; casts to or from reduced are free.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.interpreters.ad_util import (
    Zero,
    is_undefined_primal,
    linear_jvp,
    linear_transpose,
)
from spec._src.core.interpreter import check_divisible, hooks, pp_hiding
from spec._src.lax import sharding_kit as SK
from spec._src.lowering import collectives as LC
from spec._src.core.registry import declare, declaring
from spec._src.core.sharding import UnreducedKind, forbid_lost_axes, forbid_moved_axes
from spec._src.core.types import ArrayType, MemorySpace, memory_space_of_kind
from spec._src.core.hitypes import HiPspec, is_high, lo_types, lower_value, raise_values
from spec._src.core.interpreter import VMA_FROM_TYPING, Primitive, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
import functools
from spec._src.core import tree_util
from spec._src.core.array import Array
from spec._src.core.interpreter import Tracer, canonical_aval_of
from spec._src.core.sharding import (
    AbstractMesh,
    AxisType,
    Mesh,
    NamedSharding,
    P,
    SingleDeviceSharding,
    get_abstract_mesh,
    get_concrete_mesh,
    modify_spec_for_auto_manual,
    use_abstract_mesh,
)
from spec._src.interpreters import spmd as _spmd
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.core.interpreter import pp_eqn_default
from spec._src.interpreters.batching import sharding_for_vmap


def _target(dst_sharding: Any) -> Any:
    return None if dst_sharding is None else SK.abstract(dst_sharding)


def _reshard_type(x: ArrayType, *, dst_sharding: Any, concrete_mesh: Any) -> list[ArrayType]:
    # The typing step applies sharding sections only for operands with a
    # sharding or a `sharding`/`out_sharding` param; reshard's param has
    # another name, so the type carries the destination itself.
    if is_high(x):
        hi: Any = x  # (a hi type places its own components)
        return [hi.reshard(dst_sharding)]
    dst = _target(dst_sharding)
    if dst is not None:
        _check_unreduced(x, dst)
        forbid_lost_axes("reshard", [dst], [x])
        if x.sharding is not None:
            forbid_moved_axes("reshard", x.sharding.spec.partitions, dst.spec.partitions)
    out = x.update(sharding=dst)
    check_divisible(out)
    return [out]


def _check_unreduced(x: ArrayType, dst: Any) -> None:
    """C1: a max/min-unreduced destination cannot add unreduced axes (there
    is no identity to fill them with); C2: unreduced kinds must agree."""
    src = x.sharding.spec if x.sharding is not None else None
    src_u = frozenset() if src is None else src.unreduced
    spec = dst.spec
    if spec.unreduced and spec.unreduced_kind is not UnreducedKind.sum and \
            spec.unreduced - src_u:
        raise ValueError("out_sharding passed to `jax.reshard` cannot be more unreduced than"
                         f" the input. Got input pspec: {src}, out pspec: {spec}")
    if src_u and spec.unreduced and src is not None and \
            src.unreduced_kind != spec.unreduced_kind:
        raise ValueError("The unreduced_kind of input and output sharding passed to"
                         f" `jax.reshard` should be the same. Got input spec: {src} and"
                         f" output spec: {spec}")


def _reshard_impl(x: np.ndarray, *, dst_sharding: Any, concrete_mesh: Any) -> list[np.ndarray]:
    return [x]


def _reshard_sharding(x: ArrayType, *, dst_sharding: Any, concrete_mesh: Any) -> list[Any]:
    if is_high(x):
        return [None]
    return [_target(dst_sharding)]


def _reshard_to_lojax(x: Any, *, dst_sharding: Any, concrete_mesh: Any) -> Any:
    """A hi value resharded: its type's ``reshard`` gives the result type,
    and each component moves to the sharding of its type there."""
    aval: Any = canonical_aval_of(x)
    out = aval.reshard(dst_sharding)
    los = [lo if t.sharding is None else reshard_p.bind(
               lo, dst_sharding=NamedSharding(t.sharding.mesh,
                                              t.sharding.spec._normalized_spec_for_aval(t.ndim)),
               concrete_mesh=concrete_mesh)
           for lo, t in zip(lower_value(aval, x), lo_types(out))]
    return raise_values([out], los)[0]


def _reshard_transpose(ct: Any, operand: Any, *, dst_sharding: Any,
                       concrete_mesh: Any) -> Any:
    """Moving a value between layouts is linear; its transpose moves the
    cotangent back, to the operand's cotangent sharding."""
    return reshard_p.bind(ct, dst_sharding=operand.aval.ct_type().sharding,
                          concrete_mesh=concrete_mesh)


def _reshard_batch(axis: Any, args: list[Any], dims: list[Any], *, dst_sharding: Any,
                   concrete_mesh: Any) -> tuple[list[Any], list[Any]]:
    """Per example the destination layout; the batch dimension keeps the
    vmap's explicit mesh axes (unsharded when it has none), as JAX."""
    (x,), (d,) = args, dims
    dst = sharding_for_vmap(axis, dst_sharding, d)
    return [reshard_p.bind(x, dst_sharding=dst, concrete_mesh=concrete_mesh)], [d]


def _moved(x: Dist, out: ArrayType, geo: Geometry) -> Dist:
    """``x``'s blocks laid out as ``out`` says, on ``geo``'s devices."""
    src = x.aval.sharding
    if src is not None and not src.mesh.empty:
        src_geo = S.geometry(src.mesh, geo.procs)
        if src_geo != geo:  # onto another mesh of the same devices
            return S.moved_mesh(x, out, src_geo, geo)
    return S.reshard(x, out, geo)


def _reshard(prim: Primitive) -> PD.Program:
    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        return [_moved(x, out, geo) for x, out in zip(args, out_avals)]
    return program


def _reshard_placement(placed: Sequence[SK.Placed], out_shapes: Sequence[tuple[int, ...]],
                       params: dict[str, Any], sizes: SK.Sizes) -> list[SK.Parts | None]:
    """Over Auto axes a reshard to a type that names no Explicit axis
    constrains nothing: its result lies as its operand (JAX's compiler keeps
    the split); to an Explicit type, as that type says."""
    if AxisType.Explicit in params["dst_sharding"].mesh.axis_types:
        return [None]
    return SK.as_split_operands(placed, out_shapes, params, sizes)


reshard_p = declare("reshard", lowering=LC.reshard,
                    typing=_reshard_type, impl=_reshard_impl,
                    sharding=SK.auto_placed(_reshard_sharding, _reshard_placement),
                    jvp=linear_jvp(),
                    transpose=linear_transpose(_reshard_transpose), batch=_reshard_batch,
                    pp_rule=pp_hiding("dst_sharding", "concrete_mesh"),
                    per_device=from_primitive(_reshard), to_lojax=_reshard_to_lojax)


# ---------------------------------------------------------------- device_put
#
# ``jax.device_put`` under a trace stages one equation for all the leaves it
# places: ``devices`` (per operand: a Device, a Sharding, a MemorySpace or
# None), ``srcs`` (where each came from, None when traced) and
# ``copy_semantics``. Each result is its operand, retyped: a NamedSharding
# gives its sharding, a SingleDeviceSharding none, a memory kind or
# MemorySpace the memory space (only ``pinned_host`` is host memory).


class ArrayCopySemantics(enum.Enum):
    """Whether a placed array may share its operand's buffer (``may_alias``),
    must be a copy, or takes the donated buffer (``donate``)."""

    ALWAYS_COPY = 0
    REUSE_INPUT = 1
    DONATE_INPUT = 2

    def __repr__(self) -> str:
        return f"ArrayCopySemantics.{self.name}"


def placed_type(x: ArrayType, dst: Any) -> ArrayType:
    """The type of ``x`` placed by ``dst`` (C1: a NamedSharding's sharding
    divides the shape, with JAX's error)."""
    if isinstance(dst, MemorySpace):
        return x.update(memory_space=dst)
    if isinstance(dst, NamedSharding):
        out = x.update(sharding=SK.abstract(
            NamedSharding(dst.mesh.abstract_mesh, full_spec(dst, x.ndim))))
        check_divisible(out)
    elif isinstance(dst, SingleDeviceSharding):
        out = x.update(sharding=None)
    else:  # a device, or None: the type is kept
        return x
    kind = dst.memory_kind
    return out if kind is None else out.update(memory_space=memory_space_of_kind(kind))


def _device_put_type(*xs: ArrayType, devices: tuple[Any, ...], srcs: tuple[Any, ...],
                     copy_semantics: tuple[Any, ...]) -> list[ArrayType]:
    return [placed_type(x, d) for x, d in zip(xs, devices)]


def _device_put_impl(*xs: np.ndarray, **params: Any) -> list[np.ndarray]:
    return list(xs)


def _device_put_sharding(*xs: ArrayType, **params: Any) -> list[Any]:
    return [t.sharding for t in _device_put_type(*xs, **params)]


def _device_put_transpose(cts: list[Any], *args: Any, devices: tuple[Any, ...],
                          srcs: tuple[Any, ...], copy_semantics: tuple[Any, ...]) -> list[Any]:
    """Moving back: each cotangent goes from where the result was put to
    where its operand came from (host memory for an operand in host memory
    of unknown origin), always as a copy."""
    moved = [i for i, (ct, a) in enumerate(zip(cts, args))
             if is_undefined_primal(a) and type(ct) is not Zero]
    out: list[Any] = [Zero(a.aval.ct_type()) if is_undefined_primal(a) else None for a in args]
    if not moved:
        return out
    if any(copy_semantics[i] is ArrayCopySemantics.DONATE_INPUT for i in moved):
        raise ValueError("donate=True is not allowed during tranposition of device_put. Please"
                         " file an issue if you want this to be supported.")
    back = tuple(MemorySpace.Host if srcs[i] is None
                 and args[i].aval.memory_space is MemorySpace.Host else srcs[i] for i in moved)
    ys = device_put_p.bind(*[cts[i] for i in moved], devices=back,
                           srcs=tuple(devices[i] for i in moved),
                           copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,) * len(moved))
    for i, y in zip(moved, ys):
        out[i] = y
    return out


def _device_put_batch(axis: Any, args: list[Any], dims: list[Any], **params: Any
                      ) -> tuple[list[Any], list[Any]]:
    # Each result is its own operand placed: batched where it was.
    return list(device_put_p.bind(*args, **params)), list(dims)


def _device_put_lowering(ctx: Any, operands: Any, in_avals: Any, out_avals: Any,
                         **params: Any) -> list[str]:
    # On CPU a placement compiles to nothing: the values are the operands
    # (an explicit sharding is pinned by the walk after the equation; a
    # result in host memory is marked where it leaves the program).
    return list(operands)


# Evaluated eagerly (under jvp, vmap or grad, outside jit) ``device_put``
# places each operand as ``jax.device_put`` does on a concrete array:
# committed to the device or sharding it names. The API layer, which places
# arrays, installs that placement (spec/_src/backends/devices.py).
# The placement is given each operand, its placement and the memory space
# the equation's typing puts it in.
_EAGER_PUT: list[Callable[[Any, Any, MemorySpace], Any]] = []


def register_eager_put(put: Callable[[Any, Any, MemorySpace], Any]) -> None:
    _EAGER_PUT[:] = [put]


class _DevicePutPrimitive(Primitive):
    evaluates_eagerly = True

    def evaluate_eagerly(self, trace: Any, args: Sequence[Any], params: dict[str, Any]
                         ) -> list[Any] | None:
        if not _EAGER_PUT:
            return None
        put = _EAGER_PUT[0]
        return [put(x, d, placed_type(canonical_aval_of(x), d).memory_space)
                for x, d in zip(args, params["devices"])]


device_put_p = declaring(_DevicePutPrimitive)(
    "device_put", typing=_device_put_type, impl=_device_put_impl, multiple_results=True,
    sharding=_device_put_sharding, jvp=linear_jvp(), transpose=_device_put_transpose,
    batch=_device_put_batch, lowering=_device_put_lowering,
    # Each result's type is its operand's, placed (memory space included).
    vma_rule=VMA_FROM_TYPING, per_device=from_primitive(_reshard),
    doc="jax.device_put under a trace: each operand retyped by where it is put")


# ------------------------------------------------------- sharding_constraint
#
# In Auto mode a sharding is a hint for the compiler, not part of the type:
# ``with_sharding_constraint`` stages this identity, whose params carry the
# hint. (Under Explicit axes it is an assertion on the type instead, and
# stages nothing: spec/sharding.py.)


def _sc_type(x: ArrayType, *, sharding: Any, layout: Any, context_mesh: Any,
             unconstrained_dims: Any) -> list[ArrayType]:
    return [x]


def _sc_impl(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    return [x]


def _sc_sharding(x: ArrayType, **params: Any) -> list[Any]:
    return [x.sharding]


def _sc_transpose(ct: Any, operand: Any, **params: Any) -> Any:
    return sharding_constraint_p.bind(ct, **params)


def _sc_batch(axis: Any, args: list[Any], dims: list[Any], *, sharding: Any, layout: Any,
              context_mesh: Any, unconstrained_dims: Any) -> tuple[list[Any], list[Any]]:
    """The hint gains an unconstrained entry for the batch dimension: the
    spec, padded to the operand's rank, with every unconstrained dimension
    (the batch one and the shifted old ones) written ``UNCONSTRAINED``, as
    JAX's batching rule writes it (the memory kind is not carried)."""
    (x,), (d,) = args, dims
    shifted = frozenset(u + 1 if u >= d else u for u in unconstrained_dims) | {d}
    parts = list(sharding.spec.partitions)
    parts += [None] * (canonical_aval_of(x).ndim - 1 - len(parts))
    parts.insert(d, None)
    for u in shifted:
        parts[u] = P.UNCONSTRAINED
    hinted = NamedSharding(sharding.mesh, sharding.spec.update(partitions=parts))
    return [sharding_constraint_p.bind(x, sharding=hinted, layout=layout,
                                       context_mesh=context_mesh,
                                       unconstrained_dims=shifted)], [d]


class _Dims:
    """A frozenset of dims printed as JAX prints it (``frozenset({})`` when
    empty)."""

    def __init__(self, dims: frozenset[int]) -> None:
        self.dims = dims

    def __repr__(self) -> str:
        return "frozenset({" + ", ".join(map(str, sorted(self.dims))) + "})"


def _pp_sc(eqn: Any, ctx: Any) -> Any:
    params = dict(eqn.params)
    params["unconstrained_dims"] = _Dims(params["unconstrained_dims"])
    return pp_eqn_default(eqn, ctx, params)


sharding_constraint_p = declare(
    "sharding_constraint", lowering=LC.sharding_constraint,
    typing=_sc_type, impl=_sc_impl, sharding=_sc_sharding,
    pp_rule=_pp_sc,
    jvp=linear_jvp(), transpose=linear_transpose(_sc_transpose), batch=_sc_batch,
    doc="with_sharding_constraint in Auto mode: the identity, with a layout hint",
    per_device=from_primitive(PD.local))


__all__ = [
    "ArrayCopySemantics", "auto_axes", "device_put_p", "explicit_axes", "full_spec", "place",
    "placed_type", "reshard", "reshard_p", "sharding_constraint_p", "with_sharding_constraint",
]


# ------------------------------------------------------------ lax wrappers

def reshard(xs: Any, out_shardings: Any) -> Any:
    """Move each leaf of ``xs`` to a sharding (a P over the context mesh, or
    a NamedSharding): a ``reshard`` equation, whose per-device program runs
    the collectives the two layouts require (SPEC.md section 14.2)."""
    leaves, tree = tree_util.tree_flatten(xs)
    if isinstance(out_shardings, (P, NamedSharding, HiPspec)) or out_shardings is None:
        targets = [out_shardings] * len(leaves)
    else:
        targets = tree.flatten_up_to(out_shardings)
    outs = []
    for x, s in zip(leaves, targets):
        aval = canonical_aval_of(x)
        if isinstance(s, HiPspec):
            outs.append(reshard_p.bind(x, dst_sharding=s, concrete_mesh=None))
            continue
        dst = canonicalize_out_sharding(s, "reshard")
        if dst is None:
            raise ValueError("Reshard should only be used with out_shardings which are non-None"
                             f" and have a non-empty mesh. Got sharding {s}.")
        if not is_high(aval):  # (a hi type has no rank: its reshard reads the spec)
            dst = NamedSharding(dst.mesh, dst.spec._normalized_spec_for_aval(aval.ndim))
        concrete = s.mesh if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) else None
        outs.append(reshard_p.bind(x, dst_sharding=dst, concrete_mesh=concrete))
    return tree_util.tree_unflatten(tree, outs)


def _switched_mesh(axes: Any, axis_type: AxisType, who: str, shardings: Any = None
                   ) -> tuple[AbstractMesh, AbstractMesh, tuple[Any, ...]] | None:
    """(mesh in context, the same mesh with ``axes`` switched to
    ``axis_type``, the axes); None without any mesh."""
    current = get_abstract_mesh()
    given: AbstractMesh | None = None
    for s in tree_util.tree_leaves(shardings):
        if isinstance(s, NamedSharding):
            m = s.mesh.abstract_mesh
            if given is not None and given != m:
                raise ValueError(f"Shardings passed to {who} should have the same mesh. Got one"
                                 f" mesh {given} and another {s.mesh}")
            given = m
    if given is None and current.empty:
        return None
    if given is not None and not current.empty and given != current:
        raise ValueError(f"Context mesh {current} must match the mesh passed to shardings"
                         f" {given}. Recommended approach is to use `jax.set_mesh` context"
                         " manager.")
    mesh = current if not current.empty else given
    assert mesh is not None
    names = mesh.axis_names if axes is None else (axes if isinstance(axes, tuple) else (axes,))
    for a in names:
        if mesh._name_to_type[a] == AxisType.Manual:
            raise NotImplementedError("Going from `Manual` AxisType to `Auto` or `Explicit`"
                                      " AxisType is not allowed. Please file a bug at"
                                      " https://github.com/jax-ml/jax/issues with your use case")
    types = tuple(axis_type if n in names else t
                  for n, t in zip(mesh.axis_names, mesh.axis_types))
    return mesh, mesh.update(axis_types=types), tuple(names)


def auto_axes(f: Any = None, /, *, axes: Any = None, out_sharding: Any = None) -> Any:
    """Run ``f`` with ``axes`` (all by default) switched to Auto: its inputs
    are resharded to types that no longer name those axes, its outputs to
    ``out_sharding`` (given here or at the call)."""
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        target = _sharding_arg(out_sharding, kwargs, "out_sharding")
        switched = _switched_mesh(axes, AxisType.Auto, "auto_axes", target)
        if switched is None:
            return f(*args, **kwargs)
        before, after, names = switched
        if set(before.auto_axes) == set(names):
            return f(*args, **kwargs)
        with use_abstract_mesh(after):
            specs = tree_util.tree_map(lambda a: modify_spec_for_auto_manual(
                _spec_of(canonical_aval_of(a)), after), args)
            args = reshard(args, specs)
            out = f(*args, **kwargs)
        return reshard(out, target)
    return wrapped


def explicit_axes(f: Any = None, /, *, axes: Any = None, in_sharding: Any = None) -> Any:
    """Run ``f`` with ``axes`` (all by default) switched to Explicit: its
    inputs are resharded to ``in_sharding`` (given here or at the call), its
    outputs back to types without those axes."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        target = _sharding_arg(in_sharding, kwargs, "in_sharding")
        switched = _switched_mesh(axes, AxisType.Explicit, "explicit_axes")
        if switched is None:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to"
                             " enter into a mesh context when using `explicit_axes` API.")
        _, after, _ = switched
        with use_abstract_mesh(after):
            args = reshard(args, target)
            out = f(*args, **kwargs)
        specs = tree_util.tree_map(lambda o: modify_spec_for_auto_manual(
            _spec_of(canonical_aval_of(o)), get_abstract_mesh()), out)
        return reshard(out, specs)
    return wrapped


def _sharding_arg(given: Any, kwargs: dict[str, Any], name: str) -> Any:
    """The sharding given to the decorator, else the call's keyword."""
    if given is not None:
        return given
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def _spec_of(aval: Any) -> P:
    return P() if aval.sharding is None else aval.sharding.spec


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Under Explicit mesh axes an assertion that each leaf's type already
    has the sharding (AssertionError otherwise; the value is returned as
    is); under Auto axes a ``sharding_constraint`` hint, which eagerly also
    places the value that way."""
    leaves, tree = tree_util.tree_flatten(x)
    if isinstance(shardings, (P, NamedSharding)):
        targets = [shardings] * len(leaves)
    else:
        targets = tree.flatten_up_to(shardings)
    outs = []
    for leaf, s in zip(leaves, targets):
        wanted = _hint(s)
        if wanted is None:
            outs.append(leaf)
            continue
        aval = canonical_aval_of(leaf)
        spec = wanted.spec._normalized_spec_for_aval(aval.ndim)
        mesh = wanted.mesh
        if mesh.axis_types and all(t == AxisType.Explicit for t in mesh.axis_types):
            have = P() if aval.sharding is None else aval.sharding.spec
            if have._normalized_spec_for_aval(aval.ndim) != spec:
                raise AssertionError(
                    "`with_sharding_constraint` acts as an assert when all axes of mesh are"
                    f" of type `Explicit`. The array sharding: {have} did not match the"
                    f" sharding provided: {wanted.spec}. Please use `jax.sharding.reshard` to"
                    " shard your input to the sharding you want.")
            outs.append(leaf)
            continue
        # (read before normalizing, which makes an unconstrained entry None)
        free = frozenset(i for i, p in enumerate(wanted.spec.partitions)
                         if p is P.UNCONSTRAINED)
        # The param is the sharding as given (its concrete mesh, memory kind
        # and spec unpadded, UNCONSTRAINED kept): the jaxpr prints it as JAX's.
        given = s if isinstance(s, NamedSharding) else wanted
        out = sharding_constraint_p.bind(
            leaf, sharding=given, layout=None, context_mesh=_constraint_context_mesh(),
            unconstrained_dims=free)
        concrete = s.mesh if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) \
            else get_concrete_mesh()
        if not isinstance(out, Tracer) and not concrete.empty and not free:
            out = place(out, NamedSharding(concrete, spec))
        outs.append(out)
    return tree_util.tree_unflatten(tree, outs)


def _constraint_context_mesh() -> AbstractMesh | Mesh:
    """The mesh a constraint records as its context: the abstract mesh in
    context, else the empty concrete mesh (JAX's physical mesh outside any
    mesh context, printed ``Mesh()``)."""
    mesh = get_abstract_mesh()
    return mesh if not mesh.empty else get_concrete_mesh()


def _hint(s: Any) -> NamedSharding | None:
    """A with_sharding_constraint target over an abstract mesh (a P needs
    the context mesh); None for no constraint."""
    if s is None:
        return None
    if isinstance(s, P):
        mesh = get_abstract_mesh()
        if mesh.empty:
            raise ValueError("with_sharding_constraint requires a non-empty mesh in context"
                             " (jax.set_mesh) when passed a PartitionSpec. Got"
                             f" PartitionSpec: {s}")
        return NamedSharding(mesh, s)
    if isinstance(s, NamedSharding):
        return NamedSharding(s.mesh.abstract_mesh, s.spec)
    raise TypeError(f"with_sharding_constraint expects a NamedSharding or PartitionSpec, got"
                    f" {s!r} of type {type(s).__name__}")


def place(x: Any, sharding: Any) -> Any:
    """An Array laid out over ``sharding``'s mesh (virtual devices); staged,
    a reshard to that sharding."""
    if isinstance(x, Tracer):
        return reshard_p.bind(x, dst_sharding=NamedSharding(sharding.mesh.abstract_mesh,
                                                            full_spec(sharding, x.aval.ndim)),
                              concrete_mesh=sharding.mesh)
    assert isinstance(x, Array)
    same_mesh = x._sharding is not None and x._sharding.mesh == sharding.mesh
    if sharding.spec.unreduced and not (x._shards is not None and same_mesh):
        # As JAX: placing a host value indexes devices by blocks, which an
        # unreduced layout does not have (an array on the mesh is resharded).
        raise NotImplementedError("device_indices_map doesn't work with unreduced. Please file"
                                  " a bug at https://github.com/jax-ml/jax/issues")
    shape = x.aval.shape
    # The type's sharding: the abstract mesh, one spec entry per dimension.
    typed = NamedSharding(sharding.mesh.abstract_mesh, modify_spec_for_auto_manual(
        full_spec(sharding, len(shape)), sharding.mesh))
    sharding.shard_shape(shape)  # divisibility, with JAX's error
    aval = x.aval.update(sharding=typed)
    geo = _spmd.geometry(sharding.mesh)
    source = _spmd.from_value(x, geo) if x._shards is not None and same_mesh else None
    if source is not None:  # already on the mesh: move it (recorded collectives)
        placed = _spmd.reshard(source, aval, geo)
    else:
        placed = _spmd.Dist(aval, _spmd.split_value(x._value, aval, geo))
    out = _spmd.to_array(placed, sharding.mesh, geo)
    out._sharding = sharding  # x.sharding is the one asked for, as written
    return out


def _in_context_mesh(prim: Any, params: dict[str, Any], results: list[Any]) -> list[Any]:
    """Eager results computed from unplaced operands under a concrete
    context mesh: replicated over it and committed there, where JAX's
    computation in that context leaves them. (Key arrays and arrays in
    other memories keep their place.)"""
    mesh = get_concrete_mesh()
    placed = [_replicated(r, mesh) if type(r) is Array and r._sharding is None
              and r._val is not None and r._memory_kind is None else r for r in results]
    # (a jit program's sharding constraints and Explicit-typed values still
    # place its results over Auto axes)
    _spmd.keep_auto_placement(prim, params, [], placed)
    return placed


def _replicated(x: Array, mesh: Any) -> Any:
    """``x`` on every device of ``mesh``: its placement names every
    dimension where an Explicit axis makes the type's spec the placement,
    none where the compiler chose it (Auto axes)."""
    explicit = AxisType.Explicit in mesh.axis_types
    return place(x, NamedSharding(mesh, P(*(None,) * x.ndim) if explicit else P()))


hooks.in_context_mesh = _in_context_mesh


def full_spec(sharding: Any, ndim: int) -> Any:
    spec = sharding.spec
    parts = spec.partitions + (None,) * (ndim - len(spec.partitions))
    return P(*parts, unreduced=spec.unreduced, reduced=spec.reduced)
