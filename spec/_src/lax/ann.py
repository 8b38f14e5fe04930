"""Approximate top-k: ``approx_top_k`` (``approx_max_k``, ``approx_min_k``).

``approx_top_k(x, k, reduction_dimension, recall_target, is_max_k,
reduction_input_size_override, aggregate_to_topk)`` is the k largest
(``is_max_k``) or smallest values of x along ``reduction_dimension`` and
their int32 indices. The approximation is a TPU algorithm; on CPU, the
platform spec is, XLA runs the exact fallback, a sort: the values in
descending (ascending) order, ties by increasing index, in XLA's total order
(NaN largest). ``recall_target`` and ``reduction_input_size_override`` only
tune the TPU algorithm. With ``aggregate_to_topk=False`` the result keeps
the TPU algorithm's partial output size, which equals the input size for a
reduction dimension no larger than the TPU tile (1024 elements for rank 1,
128 otherwise): the whole sorted dimension. Constraint numbering (cited in
error messages, see SPEC.md, section 9): C1 ``k > 0``; C2 rank >= 1; C3 k is
at most the size of the reduction dimension; C4 a floating dtype; C5
``aggregate_to_topk=False`` with a dimension larger than the tile is refused
(its output size is the TPU algorithm's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import canonical_aval_of, from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.interpreters.ad_util import Zero
from spec._src.interpreters.batching import AxisData
from spec._src.lax import sharding_kit as SK
from spec._src.lax.indexing import GatherDimensionNumbers, gather
from spec._src.lax.elementwise_kit import total_order_key
from spec._src.lax.shaping import asarray, reshape
from spec._src.lowering.emitter import LoweringContext, tensor_type

_NAME = "approx_top_k"


def _tile(rank: int) -> int:
    return 1024 if rank == 1 else 128


def _axis(x: ArrayType, reduction_dimension: int) -> int:
    return reduction_dimension + x.ndim if reduction_dimension < 0 else reduction_dimension


def _approx_top_k_type(x: ArrayType, *, k: int, reduction_dimension: int,
                       recall_target: float, is_max_k: bool,
                       reduction_input_size_override: int,
                       aggregate_to_topk: bool) -> list[ArrayType]:
    require(k > 0, _NAME, "C1", f"k must be positive, got {k}", ValueError)
    require(x.ndim >= 1, _NAME, "C2",
            f"approx_top_k operand must have >= 1 dimension, got {x.shape}")
    axis = _axis(x, reduction_dimension)
    size = x.shape[axis]
    require(size >= k, _NAME, "C3",
            f"k must be smaller than the size of reduction_dim {size}, got {k}", ValueError)
    require(T.is_float(x.dtype), _NAME, "C4", "operand must be a floating type", ValueError)
    shape = list(x.shape)
    if aggregate_to_topk:
        shape[axis] = k
    else:
        require(size <= _tile(x.ndim), _NAME, "C5",
                f"aggregate_to_topk=False for a reduction dimension of size {size} > "
                f"{_tile(x.ndim)} has the TPU algorithm's output size", NotImplementedError)
    return [ArrayType(tuple(shape), x.dtype, x.weak_type),
            ArrayType(tuple(shape), T.int32)]


def _approx_top_k_impl(x: np.ndarray, *, k: int, reduction_dimension: int,
                       recall_target: float, is_max_k: bool,
                       reduction_input_size_override: int,
                       aggregate_to_topk: bool) -> list[np.ndarray]:
    axis = reduction_dimension % x.ndim
    key = total_order_key(x)
    # ~key reverses the total order without overflow; a stable argsort keeps
    # tied elements in increasing index order.
    order = np.argsort(~key if is_max_k else key, axis=axis, kind="stable")
    count = k if aggregate_to_topk else x.shape[axis]
    idx = np.take(order, np.arange(count), axis=axis)
    return [np.ascontiguousarray(np.take_along_axis(x, idx, axis=axis)),
            np.ascontiguousarray(idx).astype(T.int32)]


def _take_along(tangent: Any, idxs: Any, axis: int) -> Any:
    shape = canonical_aval_of(idxs).shape
    rank = len(shape)
    batch = tuple(i for i in range(rank) if i != axis)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    return gather(tangent, reshape(idxs, (*shape, 1)), dnums, (1,) * rank)


def _approx_top_k_jvp(primals: list[Any], tangents: list[Any], **params: Any
                      ) -> tuple[list[Any], list[Any]]:
    """The tangents at the chosen indices (JAX's gather)."""
    values, idxs = approx_top_k_p.bind(primals[0], **params)
    idx_zero = Zero(canonical_aval_of(idxs).tangent_type())
    if type(tangents[0]) is Zero:
        return [values, idxs], [Zero(canonical_aval_of(values).tangent_type()), idx_zero]
    axis = _axis(canonical_aval_of(primals[0]), params["reduction_dimension"])
    return [values, idxs], [_take_along(tangents[0], idxs, axis), idx_zero]


def _approx_top_k_batch(axis_data: AxisData, args: list[Any], dims: list[Any],
                        **params: Any) -> tuple[list[Any], list[Any]]:
    (x,), (d,) = args, dims
    ndim = canonical_aval_of(x).ndim
    kept = [i for i in range(ndim) if i != d]
    along = kept[params["reduction_dimension"] % (ndim - 1)]
    outs = approx_top_k_p.bind(x, **{**params, "reduction_dimension": along})
    return list(outs), [d, d]


def _approx_top_k_parts(mesh: AbstractMesh, x: ArrayType, **params: Any) -> list[SK.Parts]:
    axis = _axis(x, params["reduction_dimension"])
    parts = SK.parts(x)
    if parts[axis] is not None:
        raise ShardingTypeError(f"reduction dimension {params['reduction_dimension']} in "
                                f"operand {x} should be unsharded i.e. the spec of that dim "
                                "should be `None`.")
    return [parts, parts]


def _approx_top_k_lowering(ctx: LoweringContext, operands: list[str],
                           in_avals: list[ArrayType], out_avals: list[ArrayType], *, k: int,
                           reduction_dimension: int, recall_target: float, is_max_k: bool,
                           reduction_input_size_override: int,
                           aggregate_to_topk: bool) -> list[str]:
    """XLA's ``ApproxTopK`` custom call in its CPU fallback form: operand,
    an iota of indices, the init values, and a comparator function."""
    (x,), (aval,) = operands, in_avals
    axis = _axis(aval, reduction_dimension)
    scalar, index = ArrayType((), aval.dtype), ArrayType((), T.int32)
    bool_ = ArrayType((), T.bool_)
    direction = "GT" if is_max_k else "LT"

    def compare(c: LoweringContext, args: list[str]) -> list[str]:
        return [c.line(f"stablehlo.compare {direction}, {args[0]}, {args[1]}, FLOAT : "
                       f"({tensor_type(scalar)}, {tensor_type(scalar)}) -> "
                       f"{tensor_type(bool_)}")]

    name = f"top_k_{'gt' if is_max_k else 'lt'}_{tensor_type(scalar)[7:-1]}_comparator"
    comparator = ctx.function(name, [scalar, scalar, index, index], [bool_], compare,
                              key=(name,))
    iota_aval = ArrayType(aval.shape, T.int32)
    iota = ctx.line(f"stablehlo.iota dim = {axis} : {tensor_type(iota_aval)}")
    init = ctx.constant(np.array(-np.inf if is_max_k else np.inf, aval.dtype), scalar)
    minus_one = ctx.constant(np.array(-1, np.int32), index)
    recall = float(np.float32(recall_target))
    config = (f"aggregate_to_topk = {str(aggregate_to_topk).lower()}, is_fallback = true, "
              f"recall_target = {recall:.9g} : f32, reduction_dim = {axis} : i64, "
              f"reduction_input_size_override = {reduction_input_size_override} : i64, "
              f"top_k = {k} : i64")
    ins = ", ".join(tensor_type(a) for a in (aval, iota_aval, scalar, index))
    outs = ", ".join(tensor_type(a) for a in out_avals)
    return ctx.results(
        f"stablehlo.custom_call @ApproxTopK({x}, {iota}, {init}, {minus_one}) "
        f'{{backend_config = "", called_computations = [@{comparator}], '
        f"mhlo.backend_config = {{{config}}}}} : ({ins}) -> ({outs})", len(out_avals))


approx_top_k_p = declare(
    _NAME, typing=_approx_top_k_type, impl=_approx_top_k_impl, multiple_results=True,
    sharding=SK.section(_NAME, _approx_top_k_parts), jvp=_approx_top_k_jvp,
    transpose=not_applicable("approx_top_k is not linear"), batch=_approx_top_k_batch,
    lowering=_approx_top_k_lowering, per_device=from_primitive(PD.local),
    doc="The k largest or smallest values along a dimension and their indices.")


def _bind(operand: Any, k: int, reduction_dimension: int, recall_target: float,
          is_max_k: bool, reduction_input_size_override: int,
          aggregate_to_topk: bool) -> list[Any]:
    return approx_top_k_p.bind(  # type: ignore[no-any-return]
        asarray(operand), k=k, reduction_dimension=reduction_dimension,
        recall_target=recall_target, is_max_k=is_max_k,
        reduction_input_size_override=reduction_input_size_override,
        aggregate_to_topk=aggregate_to_topk)


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> list[Any]:
    """The k largest values along ``reduction_dimension`` and their indices."""
    return _bind(operand, k, reduction_dimension, recall_target, True,
                 reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> list[Any]:
    """The k smallest values along ``reduction_dimension`` and their indices."""
    return _bind(operand, k, reduction_dimension, recall_target, False,
                 reduction_input_size_override, aggregate_to_topk)


__all__ = ["approx_max_k", "approx_min_k", "approx_top_k_p"]
