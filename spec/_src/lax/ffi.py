"""``ffi_call``: a call of a foreign function through XLA's FFI (SPEC.md, "FFI").

The equation carries everything the call frame needs (target name, result
types, layouts, aliases, attributes); its impl runs the registered target
(``spec._src.lax.ffi_frame``). To JAX a foreign function is opaque, and so it
is here: the results' types are the declared ones, autodiff refuses the call
(JAX's message: wrap it in ``custom_jvp``/``custom_vjp`` or a hijax
primitive), vmap follows ``vmap_method``, and on a mesh the call runs
gathered (every device calls the target on the whole operands), as XLA runs
a custom call it cannot partition.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core.effects import Effect
from spec._src.core.interpreter import VMA_FROM_TYPING, Primitive, from_primitive
from spec._src.lowering import custom_call as LCC
from spec._src.lowering.effects import register_lowerable
from spec._src.core.registry import declare
from spec._src.core.sharding import NamedSharding, P
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    batched_aval,
    moveaxis,
)
from spec._src.lax import ffi_frame
from spec._src.lax.loops import scan
from spec._src.lax.shaping import broadcast
from spec._src.lax.sharding_kit import mesh_of

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


@dataclass(frozen=True)
class FfiEffect(Effect):
    """The effect of an ``ffi_call`` with ``has_side_effect=True``: dead-code
    elimination keeps the equation even when its results are unused."""

    def __str__(self) -> str:
        return "FFI"


FFI_EFFECT = FfiEffect()


# ------------------------------------------------------------ attributes


class HashableArray:
    """A NumPy array attribute, compared and hashed by value (JAX's class
    of the same name: attributes are static parameters of the equation)."""

    __slots__ = ("val",)

    def __init__(self, val: np.ndarray) -> None:
        self.val = np.array(val, copy=True)

    def __repr__(self) -> str:
        return f"HashableArray({self.val!r})"

    def __hash__(self) -> int:
        return hash((self.val.shape, self.val.dtype.str, self.val.tobytes()))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, HashableArray) and self.val.shape == other.val.shape
                and self.val.dtype == other.val.dtype and bool(np.all(self.val == other.val)))


class FrozenDict(Mapping[str, Any]):
    """A dictionary attribute, immutable and hashed by its items (JAX's
    ``FrozenDict``; hashing raises TypeError for unhashable values)."""

    __slots__ = ("_d",)

    def __init__(self, d: Mapping[str, Any]) -> None:
        self._d = dict(d)

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return f"FrozenDict({self._d!r})"

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._d.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrozenDict) and self._d == other._d


def hashable_attributes(kwargs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The call's keyword arguments as the equation's ``attributes`` param:
    sorted by name, arrays and dicts frozen, anything else hashable."""
    out: list[tuple[str, Any]] = []
    for k, v in sorted(kwargs.items()):
        if isinstance(v, np.ndarray):
            out.append((k, HashableArray(v)))
        elif isinstance(v, dict):
            out.append((k, FrozenDict(v)))
        else:
            try:
                hash(v)
            except TypeError as e:
                raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v}") from e
            out.append((k, v))
    return tuple(out)


def plain_attributes(attributes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The attributes as the target receives them (frozen values unwrapped)."""
    out: list[tuple[str, Any]] = []
    for k, v in attributes:
        if isinstance(v, HashableArray):
            v = v.val
        elif isinstance(v, FrozenDict):
            v = dict(v)
        out.append((k, v))
    return out


# ----------------------------------------------------------------- rules


def _ffi_type(*avals: ArrayType, result_avals: tuple[ArrayType, ...], **_: Any
              ) -> list[ArrayType]:
    # An opaque call: its results are what the call declares.
    return list(result_avals)


def _ffi_sharding(*avals: ArrayType, result_avals: tuple[ArrayType, ...], **_: Any
                  ) -> list[NamedSharding | None]:
    """Declared results keep their sharding; the others are replicated over
    the operands' mesh (JAX: the current mesh's sharding)."""
    mesh = mesh_of(avals)
    return [r.sharding if r.sharding is not None and not r.sharding.mesh.empty
            else NamedSharding(mesh, P()) for r in result_avals]


def _ffi_impl(*args: np.ndarray, target_name: str, result_avals: tuple[ArrayType, ...],
              input_layouts: tuple[tuple[int, ...], ...],
              output_layouts: tuple[tuple[int, ...], ...],
              input_output_aliases: tuple[tuple[int, int], ...],
              custom_call_api_version: int, legacy_backend_config: str | None,
              attributes: tuple[tuple[str, Any], ...], **_: Any) -> list[np.ndarray]:
    attrs = plain_attributes(attributes)
    for k, v in attrs:
        ffi_frame.check_attribute(k, v)
    if custom_call_api_version < 4 and attrs:
        raise ValueError("The use of ffi_call attributes requires a custom call API version "
                         f"of at least 4; got api_version={custom_call_api_version}.")
    spec = ffi_frame.CallSpec(
        target_name, attrs, [(r.shape, r.dtype) for r in result_avals], input_layouts,
        output_layouts, input_output_aliases, custom_call_api_version, legacy_backend_config)
    return ffi_frame.call(spec, args)


def _not_differentiable(target_name: str) -> ValueError:
    return ValueError(f"The FFI call to `{target_name}` cannot be differentiated. "
                      "You can use `jax.custom_jvp` or `jax.custom_vjp` to add support.")


def _ffi_jvp(primals: list[Any], tangents: list[Any], *, target_name: str, **_: Any
             ) -> tuple[list[Any], list[Any]]:
    raise _not_differentiable(target_name)


def _ffi_transpose(cts: list[Any], *args: Any, target_name: str, **_: Any) -> list[Any]:
    raise _not_differentiable(target_name)


def _shifted_layouts(layouts: tuple[Any, ...], which: Sequence[bool] | None = None
                     ) -> tuple[Any, ...]:
    """Layouts (minor-to-major) of operands that gained a leading batch
    axis: the new axis is the most major (``which``: the ones that did)."""
    return tuple(
        layout if (which is not None and not which[i]) or layout is None
        else (*(n + 1 for n in layout), 0)
        for i, layout in enumerate(layouts))


def _ffi_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], *,
               vmap_method: str | None, result_avals: tuple[ArrayType, ...], **params: Any
               ) -> tuple[list[Any], list[BatchDim]]:
    """JAX's ``vmap_method``s: ``sequential`` loops (a scan) over the batch;
    ``expand_dims`` gives unbatched operands a leading axis of size 1 and
    ``broadcast_all`` one of the batch size, then calls once with a leading
    batch axis on the results; ``legacy_vectorized`` calls once on the
    operands as they are (batched ones with the batch axis first)."""
    size = axis.size
    moved = [a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    batched_results = tuple(batched_aval(r, 0, size, axis.explicit_mesh_axis)
                            for r in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        outs = _sequential(moved, dims, vmap_method, result_avals, params)
    elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        params = dict(params, output_layouts=_shifted_layouts(params["output_layouts"]))
        if vmap_method == "legacy_vectorized":
            operands = moved
            params["input_layouts"] = _shifted_layouts(
                params["input_layouts"], [d is not None for d in dims])
        else:
            lead = size if vmap_method == "broadcast_all" else 1
            operands = [broadcast(a, (lead,)) if d is None else a
                        for a, d in zip(moved, dims)]
            params["input_layouts"] = _shifted_layouts(params["input_layouts"])
        outs = ffi_call_p.bind(*operands, vmap_method=vmap_method,
                               result_avals=batched_results, **params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the ffi_call primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got {vmap_method=}.")
    return list(outs), [0] * len(outs)


def _sequential(moved: list[Any], dims: list[BatchDim], vmap_method: str,
                result_avals: tuple[ArrayType, ...], params: dict[str, Any]) -> list[Any]:
    is_batched = [d is not None for d in dims]
    unbatched = [a for a, b in zip(moved, is_batched) if not b]

    def body(carry: tuple[()], xs: list[Any]) -> tuple[tuple[()], list[Any]]:
        it_u, it_b = iter(unbatched), iter(xs)
        merged = [next(it_b) if b else next(it_u) for b in is_batched]
        return carry, ffi_call_p.bind(*merged, vmap_method=vmap_method,
                                      result_avals=result_avals, **params)

    _, outs = scan(body, (), [a for a, b in zip(moved, is_batched) if b],
                   unroll=vmap_method == "sequential_unrolled")
    return list(outs)


def _unsplit(args: list[S.Dist], out_avals: list[ArrayType], **_: Any) -> bool:
    """No operand or result is split over the mesh: inside ``shard_map``
    (each device holds its own block) or with replicated operands."""
    return all(S.is_plain(a.aval) for a in args) and all(S.is_plain(o) for o in out_avals)


def _ffi_program(prim: Primitive) -> PD.Program:
    """The target runs on each device's buffers where nothing is split
    (inside shard_map: on the device's block); split operands are gathered
    first, the results laid out by their types (XLA gathers around a custom
    call it cannot partition)."""
    return PD.guarded(prim, _unsplit, PD.local(prim))


def _ffi_effects(atoms: list[Any], params: dict[str, Any]) -> frozenset[Any]:
    return frozenset({FFI_EFFECT}) if params["has_side_effect"] else frozenset()


register_lowerable(FfiEffect)

ffi_call_p = declare(
    "ffi_call", lowering=LCC.ffi_call, typing=_ffi_type, impl=_ffi_impl, multiple_results=True,
    sharding=_ffi_sharding, jvp=_ffi_jvp, transpose=_ffi_transpose, batch=_ffi_batch,
    effects_rule=_ffi_effects, vma_rule=VMA_FROM_TYPING,
    per_device=from_primitive(_ffi_program),
    doc="A call of an FFI target registered with register_ffi_target (SPEC.md, FFI).")
