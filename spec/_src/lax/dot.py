"""dot_general: batched tensor contraction, and the ``Precision`` enum.

Constraint numbering (see SPEC.md, section 9.4):
C1 every dimension number is an axis of its operand; C2 batch and contracting
lists are each distinct, disjoint, and lhs/rhs batch lists have equal length;
C3 contracting dimensions have equal sizes; C4 batch dimensions have equal
sizes; C5 the operand dtypes are ordered (XLA's "higher precision type");
C6 an integer/bool preferred_element_type is not narrower than the result
(not checked when the precision is a dot algorithm, as in JAX).

Precision: a pair of ``Precision`` levels (recorded, no effect on the
numbers) or a dot algorithm (spec/_src/lax/dot_algorithms.py), which the impl
follows as the ``spec_dot_algorithms`` flag says.

Autodiff: bilinear (JVP and transposes as JAX's, see the end of the module);
``bilinear_transpose`` is shared with conv_general_dilated.
"""

from __future__ import annotations

import enum
import functools
import math
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import types as T
from spec._src.lowering import rules as LR
from spec._src.lowering.emitter import LoweringContext
from spec._src.interpreters.ad_util import Zero, defjvp, is_undefined_primal
from spec._src.interpreters.batching import sharding_for_vmap
from spec._src.core.interpreter import canonical_aval_of, pp_eqn_default
from spec._src.core.denormals import flush, flush_all, flush_result, flushing
from spec._src.core.registry import declare, require
from spec._src.lax.sharding_reduce_dot import fit_out, make, mesh_of, parts_of
from spec._src.core.errors import ShardingTypeError
from spec._src.core.sharding import (
    UnreducedKind,
    forbid_moved_axes,
    forbid_unmarked_reduction,
)
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import Primitive, from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist, Geometry
from collections.abc import Callable, Sequence
from spec._src.core.config import config
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.lax.shaping import expand_dims, squeeze, transpose
from spec._src.lax import exact_matmul
from spec._src.lax import sharding_kit as SK
from spec._src.lax import dot_algorithms as DA
from spec._src.lax.dot_algorithms import DotAlgorithm, DotAlgorithmPreset
from spec._src.core.sharding import NamedSharding, P, get_abstract_mesh
from spec._src.lax.shaping import _convert_element_type

DimensionNumbers = tuple[tuple[tuple[int, ...], tuple[int, ...]],
                         tuple[tuple[int, ...], tuple[int, ...]]]


class Precision(enum.Enum):
    """Matmul precision hint. It changes nothing on CPU; it is recorded in
    the equation and printed as ``Precision.HIGHEST``."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        return PRECISION_STRINGS.get(value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name


PRECISION_STRINGS: dict[Any, Precision] = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
    None: Precision.DEFAULT,
}


# ------------------------------------------------------------------- typing

def _check_dims(side: str, x: ArrayType, contract: tuple[int, ...],
                batch: tuple[int, ...]) -> None:
    bad = [d for d in contract + batch if not 0 <= d < x.ndim]
    require(not bad, "dot_general", "C1",
            f"{side} dimension numbers must be axes of the {side} (rank {x.ndim}), got "
            f"{side}_batch {batch} and {side}_contracting {contract}")
    require(len(set(batch)) == len(batch), "dot_general", "C2",
            f"{side} batch dimensions must be distinct, got {side}_batch {batch}")
    require(len(set(contract)) == len(contract), "dot_general", "C2",
            f"{side} contracting dimensions must be distinct, got {side}_contracting {contract}")
    require(not set(batch) & set(contract), "dot_general", "C2",
            f"{side} batch dimensions must be disjoint from contracting dimensions, got "
            f"{side}_batch {batch} and {side}_contracting {contract}")


def _sizes_text(sizes: tuple[int, ...]) -> str:
    return str(sizes[0]) if len(sizes) == 1 else str(sizes)


def dot_general_shape(lhs: ArrayType, rhs: ArrayType, dims: DimensionNumbers) -> T.Shape:
    (lc, rc), (lb, rb) = dims
    _check_dims("lhs", lhs, lc, lb)
    _check_dims("rhs", rhs, rc, rb)
    require(len(lb) == len(rb), "dot_general", "C2",
            f"lhs and rhs must have equal numbers of batch dimensions, got lhs_batch {lb} "
            f"and rhs_batch {rb}")
    require(len(lc) == len(rc), "dot_general", "C3",
            f"lhs and rhs must have equal numbers of contracting dimensions, got "
            f"lhs_contracting {lc} and rhs_contracting {rc}")
    lcs, rcs = tuple(lhs.shape[d] for d in lc), tuple(rhs.shape[d] for d in rc)
    require(lcs == rcs, "dot_general", "C3",
            f"contracting dimensions must have equal sizes, got {_sizes_text(lcs)} and "
            f"{_sizes_text(rcs)}")
    lbs, rbs = tuple(lhs.shape[d] for d in lb), tuple(rhs.shape[d] for d in rb)
    require(lbs == rbs, "dot_general", "C4",
            f"batch dimensions must have equal sizes, got {lbs} and {rbs}")
    lfree = tuple(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    return lbs + lfree + rfree


def _finfo(dt: T.DType) -> Any:
    return ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call]


def _bits(dt: T.DType) -> int:
    if dt == T.bool_:
        return 1
    if T.is_inexact(dt):
        return int(_finfo(_real(dt)).bits)
    return T.iinfo_bits(dt)


def _real(dt: T.DType) -> T.DType:
    return np.dtype(np.float32) if dt == T.complex64 else (
        np.dtype(np.float64) if dt == T.complex128 else dt)


def _precision_rank(dt: T.DType) -> tuple[bool, int, int, int, bool]:
    """XLA's ordering of operand types: complex beats real; then exponent
    range, mantissa width, bit width; signed beats unsigned."""
    real = _real(dt)
    fl = T.is_float(real)
    info = _finfo(real) if fl else None
    return (T.is_complex(dt), int(info.maxexp) if info is not None else -1,
            int(info.nmant) if info is not None else -1, _bits(real),
            not T.is_unsigned_int(real))


def dot_general_dtype(lhs: T.DType, rhs: T.DType, preferred: T.DType | None,
                      check_width: bool = True) -> T.DType:
    lp, rp = _precision_rank(lhs), _precision_rank(rhs)
    if lp == rp:
        require(lhs == rhs, "dot_general", "C5",
                f"operand dtypes {lhs.name} and {rhs.name} are unordered (neither has higher "
                "precision); convert one of them")
    result = lhs if lp >= rp else rhs
    if preferred is None or preferred == result:
        return result
    require(not check_width or T.is_float(result) or _bits(preferred) >= _bits(result),
            "dot_general", "C6",
            f"preferred_element_type {preferred.name} must not be narrower than the result "
            f"type {result.name}")
    return preferred


def _dot_general_type(lhs: ArrayType, rhs: ArrayType, *, dimension_numbers: DimensionNumbers,
                      precision: Any, preferred_element_type: T.DType | None,
                      out_sharding: Any = None) -> list[ArrayType]:
    shape = dot_general_shape(lhs, rhs, dimension_numbers)
    dtype = dot_general_dtype(lhs.dtype, rhs.dtype, preferred_element_type,
                              check_width=not DA.is_algorithm(precision))
    return [ArrayType(shape, dtype, lhs.weak_type and rhs.weak_type)]


# --------------------------------------------------------------------- impl

def _compute_dtype(lhs: T.DType, rhs: T.DType, out: T.DType) -> T.DType:
    """Accumulation dtype. Integer (and bool) contractions are exact modulo
    2**64 and then wrap to the result width, which is what accumulating in
    the result type gives. Narrow floats accumulate in float32 and round
    once, as XLA's CPU backend does."""
    if not T.is_inexact(lhs) and not T.is_inexact(rhs):
        return np.dtype(np.uint64) if T.is_unsigned_int(out) else np.dtype(np.int64)
    if T.is_inexact(out):
        return out if out.itemsize >= 4 and out not in T.SMALL_FLOAT_TYPES else T.float32
    # A float contraction with an integer result: compute in the operands' float type.
    widest = max((d for d in (lhs, rhs) if T.is_inexact(d)), key=lambda d: d.itemsize)
    return widest if widest.itemsize >= 4 else T.float32


def _real_matmul(lhs: np.ndarray, rhs: np.ndarray, daz: bool = False) -> np.ndarray:
    """Batched ``lhs (..., m, k) @ rhs (..., k, n)`` of one real dtype (the
    accumulation type), under the numerical contract (SPEC.md 9.4): a float
    element is the exact sum of the exact products rounded once, so it does
    not depend on the BLAS build, kernel or thread count; integers wrap
    modulo 2**64 (NumPy's integer matmul is exact and uses no BLAS)."""
    if lhs.shape[-1] == 1:
        # A single product per output is not a sum: it keeps the sign of a
        # zero product (-0.0), as XLA's dot does; a sum starts from +0.0.
        if daz:
            lhs, rhs = flush(lhs), flush(rhs)
        return np.asarray(lhs * rhs)  # (..., m, 1) * (..., 1, n)
    if T.is_float(lhs.dtype):
        return exact_matmul.matmul(lhs, rhs, daz)
    return np.asarray(np.matmul(lhs, rhs))


RealMatmul = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _matmul(lhs: np.ndarray, rhs: np.ndarray, real: RealMatmul = _real_matmul) -> np.ndarray:
    """Batched matmul with XLA's rounding: a complex product is four real
    products, real = re·re - im·im and imag = re·im + im·re."""
    if not T.is_complex(lhs.dtype):
        return real(lhs, rhs)
    lr, li, rr, ri = lhs.real, lhs.imag, rhs.real, rhs.imag
    re = real(lr, rr) - real(li, ri)
    im = real(lr, ri) + real(li, rr)
    out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def _contract(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: DimensionNumbers,
              compute: T.DType | None, real: RealMatmul = _real_matmul) -> np.ndarray:
    """Both operands brought to (batch, free, contract) / (batch, contract,
    free), cast to ``compute`` (None: kept), and one batched matmul; the
    result in dot_general's axis order."""
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    # XLA CPU reads subnormal operands as zero: float32 ones of the exact
    # contraction as it widens them to float64, the others here.
    daz = real is _real_matmul and flushing() and lhs.dtype == rhs.dtype == T.float32 \
        and compute in (None, T.float32)
    if not daz:
        lhs, rhs = flush_all((lhs, rhs))
    lt = np.transpose(lhs, [*lb, *lfree, *lc])
    rt = np.transpose(rhs, [*rb, *rc, *rfree])
    if compute is not None:
        lt, rt = lt.astype(compute, copy=False), rt.astype(compute, copy=False)
    if daz:
        real = functools.partial(_real_matmul, daz=True)
    bshape = tuple(lhs.shape[d] for d in lb)
    lfs, rfs = [lhs.shape[d] for d in lfree], [rhs.shape[d] for d in rfree]
    k = math.prod(lhs.shape[d] for d in lc)
    m, n = math.prod(lfs), math.prod(rfs)
    with np.errstate(all="ignore"):
        res = _matmul(lt.reshape((*bshape, m, k)), rt.reshape((*bshape, k, n)), real)
    return np.asarray(res).reshape((*bshape, *lfs, *rfs))


def _to_result(res: np.ndarray, out: T.DType) -> np.ndarray:
    if out == T.bool_:
        return np.asarray(res != 0)
    with np.errstate(all="ignore"):
        if T.is_complex(res.dtype) and not T.is_complex(out):
            res = res.real
        return flush_result(np.asarray(res).astype(out, copy=False))


def _plain_dot(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: DimensionNumbers,
               out: T.DType) -> np.ndarray:
    cd = _compute_dtype(lhs.dtype, rhs.dtype, out)
    return _to_result(_contract(lhs, rhs, dimension_numbers, cd), out)


def _cast_operand(x: np.ndarray, dt: T.DType) -> np.ndarray:
    """XLA's convert: a complex value converted to a real type keeps its real part."""
    if T.is_complex(x.dtype) and not T.is_complex(dt):
        x = x.real
    with np.errstate(all="ignore"):
        return x.astype(dt, copy=False)


def _cpu_jax_dot(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: DimensionNumbers,
                 algorithm: DA.Algorithm, out: T.DType) -> np.ndarray:
    """As JAX's CPU backend: the supported presets only; the operands cast
    as JAX's lowering casts them, then a plain contraction in the
    accumulation type (the backend ignores the algorithm itself)."""
    DA.check_supported_on_cpu(algorithm)
    lt, rt, acc = DA.cpu_compute_types(algorithm, lhs.dtype, rhs.dtype, out)
    lhs, rhs = _cast_operand(lhs, lt), _cast_operand(rhs, rt)
    acc_out = dot_general_dtype(lt, rt, acc, check_width=False)
    return _to_result(_plain_dot(lhs, rhs, dimension_numbers, acc_out), out)


def _as_named_dot(lhs: np.ndarray, rhs: np.ndarray, dimension_numbers: DimensionNumbers,
                  algorithm: DA.Algorithm, out: T.DType) -> np.ndarray:
    """The algorithm's numerics as its name documents them (SPEC.md 9.4)."""
    recipe = DA.recipe(algorithm, lhs.dtype, rhs.dtype, out)
    if recipe is None:
        return _plain_dot(lhs, rhs, dimension_numbers, out)

    def real(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return DA.algorithm_matmul(a, b, recipe)
    return _to_result(_contract(lhs, rhs, dimension_numbers, None, real), out)


def _dot_general_impl(lhs: np.ndarray, rhs: np.ndarray, *, dimension_numbers: DimensionNumbers,
                      precision: Any, preferred_element_type: T.DType | None,
                      out_sharding: Any = None) -> list[np.ndarray]:
    algorithm = DA.is_algorithm(precision)
    out = dot_general_dtype(lhs.dtype, rhs.dtype, preferred_element_type,
                            check_width=not algorithm)
    if not algorithm:
        return [_plain_dot(lhs, rhs, dimension_numbers, out)]
    if config.spec_dot_algorithms == "cpu_jax":
        return [_cpu_jax_dot(lhs, rhs, dimension_numbers, precision, out)]
    return [_as_named_dot(lhs, rhs, dimension_numbers, precision, out)]


def _dot_general_lowering(ctx: LoweringContext, operands: Sequence[str],
                          in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                          precision: Any, **params: Any) -> list[str]:
    """As JAX lowers it on CPU: a dot algorithm (one of the presets the CPU
    backend compiles, else JAX's ValueError) casts the operands to its
    types, contracts in its accumulation type with its ``algorithm``
    attribute (none for DEFAULT) and casts the result to the equation's."""
    if not DA.is_algorithm(precision):
        return LR.dot_general(ctx, operands, in_avals, out_avals, precision=precision, **params)
    DA.check_supported_on_cpu(precision)
    out = out_avals[0]
    lt, rt, acc = DA.cpu_compute_types(precision, in_avals[0].dtype, in_avals[1].dtype, out.dtype)
    cast = [x if a.dtype == dt else ctx.op("stablehlo.convert", [x], [a], ArrayType(a.shape, dt))
            for x, a, dt in zip(operands, in_avals, (lt, rt))]
    typed = [ArrayType(a.shape, dt) for a, dt in zip(in_avals, (lt, rt))]
    wide = ArrayType(out.shape, acc)
    (result,) = LR.dot_general(ctx, cast, typed, [wide], precision=None,
                               algorithm=_algorithm_attr(precision), **params)
    return [result if acc == out.dtype else ctx.op("stablehlo.convert", [result], [wide], out)]


def _algorithm_attr(preset: DA.DotAlgorithmPreset) -> str | None:
    """The ``algorithm`` attribute of a preset, from its name (``BF16_BF16_F32_X3``:
    bf16 operands, f32 accumulation, three products); DEFAULT has none."""
    if preset is DA.DotAlgorithmPreset.DEFAULT:
        return None
    lhs, rhs, acc, *times = preset.name.lower().split("_")
    count = int(times[0][1:]) if times else 1
    return (f"<lhs_precision_type = {lhs}, rhs_precision_type = {rhs}, accumulation_type = "
            f"{acc}, lhs_component_count = 1, rhs_component_count = 1, "
            f"num_primitive_operations = {count}, allow_imprecise_accumulation = false>")


def _pp_dot_general(eqn: Any, ctx: Any) -> Any:
    params = {k: v for k, v in eqn.params.items() if v is not None and k != "out_sharding"}
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    params["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return pp_eqn_default(eqn, ctx, params)


# ----------------------------------------------------------------- autodiff

# dot_general is bilinear: its JVP is dot(t_lhs, rhs) + dot(lhs, t_rhs) with
# the same params, and each operand's transpose is again a dot_general (of
# the cotangent with the other operand) followed by a transpose that puts the
# axes back in the operand's order; both as JAX's.



def _remaining(n: int, *removed: tuple[int, ...]) -> list[int]:
    gone = {int(d) for r in removed for d in r}
    return [i for i in range(n) if i not in gone]


def _consecutive(*lengths: int) -> list[tuple[int, ...]]:
    """Consecutive ranges of the given lengths, starting at 0."""
    out, start = [], 0
    for n in lengths:
        out.append(tuple(range(start, start + n)))
        start += n
    return out


def _transpose_lhs(ct: Any, x: Any, y: Any, *, dimension_numbers: DimensionNumbers,
                   precision: Any, preferred_element_type: T.DType | None,
                   out_sharding: Any = None, swap_ans: bool = False) -> Any:
    """The cotangent of the lhs ``x`` (undefined) of ``dot_general(x, y)``:
    contract the output cotangent with ``y`` over y's free axes (and match
    the batch axes); the result has x's batch axes, then x's free axes, then
    x's contracting axes in the order of y's, which a transpose undoes.
    ``swap_ans``: x is really the rhs, whose free axes come last in the
    output."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_aval = x.aval
    x_kept = _remaining(x_aval.ndim, x_contract, x_batch)
    y_kept = _remaining(canonical_aval_of(y).ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _consecutive(len(x_batch), len(y_kept), len(x_kept))
    else:
        ans_batch, _, ans_y = _consecutive(len(x_batch), len(x_kept), len(y_kept))
    dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract, kind="stable")]
    unsorted = [*x_batch, *x_kept, *x_contract_by_y]
    out_axes = tuple(int(i) for i in np.argsort(unsorted, kind="stable"))
    out = dot_general(ct, y, dims, precision=precision,
                          preferred_element_type=preferred_element_type,
                          out_sharding=_transposed_sharding(x_aval, unsorted))
    x_bar = transpose(out, out_axes)
    if canonical_aval_of(x_bar).dtype != x_aval.dtype:
        x_bar = _convert_element_type(x_bar, x_aval.dtype, x_aval.weak_type,
                                      warn_on_complex_to_real_cast=False)
    return x_bar


def _transposed_sharding(x_aval: T.ArrayType, unsorted: list[int]) -> Any:
    """The sharding of the contraction that yields x's cotangent before its
    final transpose: x's cotangent sharding with the partitions in the
    contraction's axis order (so the cotangent ends up sharded as x is,
    whatever collective that needs). Without shardings: a replicated
    sharding on the current mesh, or None when no mesh is set."""
    ct_sharding = x_aval.ct_type().sharding
    if ct_sharding is None:
        mesh = get_abstract_mesh()
        return None if mesh.empty else NamedSharding(mesh, P(*[None] * x_aval.ndim))
    parts = list(ct_sharding.spec.partitions) + [None] * x_aval.ndim
    return ct_sharding.update(spec=ct_sharding.spec.update(
        partitions=[parts[o] for o in unsorted]))


def _transpose_rhs(ct: Any, x: Any, y: Any, *, dimension_numbers: DimensionNumbers,
                   precision: Any, preferred_element_type: T.DType | None,
                   out_sharding: Any = None) -> Any:
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _transpose_lhs(ct, y, x, dimension_numbers=swapped, precision=precision,
                          preferred_element_type=preferred_element_type, swap_ans=True)


def bilinear_transpose(lhs_rule: Any, rhs_rule: Any, name: str) -> Any:
    """The transpose rule of a primitive linear in each operand separately:
    exactly one operand is undefined (a product of two linear values is not
    linear)."""
    def rule(ct: Any, x: Any, y: Any, **params: Any) -> list[Any]:
        x_lin, y_lin = is_undefined_primal(x), is_undefined_primal(y)
        if x_lin == y_lin:
            raise TypeError(f"{name}: can transpose with respect to exactly one operand, "
                            f"got {'both' if x_lin else 'neither'}")
        if x_lin:
            out = lhs_rule(ct, x, y, **params)
            return [Zero(x.aval.ct_type()) if out is None else out, None]
        out = rhs_rule(ct, x, y, **params)
        return [None, Zero(y.aval.ct_type()) if out is None else out]

    return rule


def _jvp_lhs(g: Any, x: Any, y: Any, **params: Any) -> Any:
    return dot_general_p.bind(g, y, **params)


def _jvp_rhs(g: Any, x: Any, y: Any, **params: Any) -> Any:
    return dot_general_p.bind(x, g, **params)


# ----------------------------------------------------------------- batching

def _bump(dims: tuple[int, ...], b: int) -> tuple[int, ...]:
    """Axis numbers of an operand after a batch axis is inserted at ``b``."""
    return tuple(int(d) + 1 if d >= b else int(d) for d in dims)


def batch_dimension_numbers(ndims: tuple[int, int], bdims: tuple[int | None, int | None],
                            dimension_numbers: DimensionNumbers
                            ) -> tuple[DimensionNumbers, int]:
    """The dimension numbers of a dot_general whose operands carry vmap axes
    at ``bdims`` (positions in the batched operands), and where the vmap axis
    lands in its result. Both batched: the two vmap axes pair up as a new
    leading dot batch axis (result axis 0). One batched: its vmap axis is one
    more free axis of that operand, so it lands among that operand's free
    axes in the result."""
    lhs_ndim, _ = ndims
    lbd, rbd = bdims
    (lc, rc), (lb, rb) = dimension_numbers
    if lbd is not None and rbd is not None:
        return (((_bump(lc, lbd), _bump(rc, rbd)),
                 ((lbd, *_bump(lb, lbd)), (rbd, *_bump(rb, rbd)))), 0)
    if lbd is not None:
        lhs_free = [d for d in range(lhs_ndim) if d not in lb and d not in lc]
        out = len(lb) + sum(1 for d in lhs_free if d < lbd)
        return ((_bump(lc, lbd), tuple(rc)), (_bump(lb, lbd), tuple(rb))), out
    assert rbd is not None
    rhs_ndim = ndims[1]
    rhs_free = [d for d in range(rhs_ndim) if d not in rb and d not in rc]
    out = (lhs_ndim - len(lc)) + sum(1 for d in rhs_free if d < rbd)
    return ((tuple(lc), _bump(rc, rbd)), (tuple(lb), _bump(rb, rbd))), out


def _dot_general_batch(axis: Any, args: list[Any], dims: list[Any], *,
                       dimension_numbers: DimensionNumbers, **params: Any
                       ) -> tuple[list[Any], list[Any]]:
    """One dot_general on the batched operands (no transposes of its own):
    the vmap axes become dot batch axes or free axes as above. An
    ``out_sharding`` gains the result's batch axis, sharded over the vmap's
    explicit mesh axes."""
    lhs, rhs = args
    ndims = (canonical_aval_of(lhs).ndim, canonical_aval_of(rhs).ndim)
    dn, out_dim = batch_dimension_numbers(ndims, (dims[0], dims[1]), dimension_numbers)
    if params.get("out_sharding") is not None:
        params = dict(params, out_sharding=sharding_for_vmap(axis, params["out_sharding"],
                                                             out_dim))
    return [dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params)], [out_dim]


# ----------------------------------------------------------------- sharding
# The result's spec is the batch dims' entries (lhs and rhs must agree), then
# the lhs free dims', then the rhs free dims'. A contracting dimension
# sharded on both sides leaves open whether the result is all-reduced or
# kept unreduced, so JAX asks for ``out_sharding`` (which then wins as is).

def _dot_general_sharding(lhs: ArrayType, rhs: ArrayType, *,
                          dimension_numbers: DimensionNumbers, precision: Any,
                          preferred_element_type: T.DType | None,
                          out_sharding: Any = None) -> list[Any]:
    mesh = mesh_of([lhs, rhs])
    (lc, rc), (lb, rb) = dimension_numbers
    lp, rp = parts_of(lhs), parts_of(rhs)
    l_contract, r_contract = tuple(lp[d] for d in lc), tuple(rp[d] for d in rc)
    for a in (lhs, rhs):
        s = a.sharding
        if s is not None and s.spec.unreduced:
            raise ShardingTypeError(f"lhs or rhs passed to dot_general cannot be unreduced. "
                                    f"Got lhs={lhs!r} and rhs={rhs!r}")
    if out_sharding is not None:
        unreduced = out_sharding.spec.unreduced
        if unreduced:
            if l_contract != r_contract:
                raise ShardingTypeError(
                    "lhs and rhs contracting dims should be sharded identically when "
                    "out_sharding provided to dot_general mentions unreduced_axes. Got "
                    f"lhs_contracting_spec={l_contract}, rhs_contracting_spec={r_contract}")
            flat = {a for p in l_contract if p is not None
                    for a in (p if isinstance(p, tuple) else (p,))}
            if unreduced != frozenset(flat):
                raise ShardingTypeError(
                    "out_sharding's unreduced axes should be equal to the contracting specs. "
                    f"Got unreduced axes={unreduced} and contracting spec={l_contract}")
            if out_sharding.spec.unreduced_kind is not UnreducedKind.sum:
                raise ValueError("`out_sharding` passed to `dot_general` can only contain "
                                 f"unreduced of kind `sum`. Got out_sharding={out_sharding}")
        _forbid_collectives(lp, rp, dimension_numbers, out_sharding)
        out = _dot_general_type(lhs, rhs, dimension_numbers=dimension_numbers,
                                precision=precision,
                                preferred_element_type=preferred_element_type)[0]
        return [fit_out(out_sharding, out.shape)]
    l_batch, r_batch = tuple(lp[d] for d in lb), tuple(rp[d] for d in rb)
    if l_batch != r_batch:
        raise ShardingTypeError("dot_general requires lhs batch dimensions and rhs batch "
                                f"dimensions to have the same sharding, got {l_batch} and "
                                f"{r_batch}.")
    if any(lx is not None and rx is not None for lx, rx in zip(l_contract, r_contract)):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be "
            "sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={l_contract} and rhs_contracting_spec={r_contract}")
    l_free = tuple(p for i, p in enumerate(lp) if i not in lc and i not in lb)
    r_free = tuple(p for i, p in enumerate(rp) if i not in rc and i not in rb)
    out = _dot_general_type(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                            preferred_element_type=preferred_element_type)[0]
    return [make("dot_general", [lhs, rhs], out, mesh, l_batch + l_free + r_free)]


def _forbid_collectives(lp: Sequence[Any], rp: Sequence[Any],
                        dimension_numbers: DimensionNumbers, out_sharding: Any) -> None:
    """Under ``no_collectives`` (JAX's checks of a requested result): no
    contraction over a forbidden axis unless the result is unreduced over
    it, and no forbidden axis moved from where either operand puts it."""
    (lc, rc), (lb, rb) = dimension_numbers
    forbid_unmarked_reduction(
        [lp[d] for d in lc] + [rp[d] for d in rc], out_sharding.spec.unreduced,
        "`dot_general` contracts over axis '{r}' without marking it unreduced in the output.")
    l_free = [p for i, p in enumerate(lp) if i not in lc and i not in lb]
    r_free = [p for i, p in enumerate(rp) if i not in rc and i not in rb]
    for batch in ([lp[d] for d in lb], [rp[d] for d in rb]):
        forbid_moved_axes("dot_general", batch + l_free + r_free,
                          out_sharding.spec.partitions)


def _dot_general(prim: Primitive) -> PD.Program:
    fallback = S.gathered(prim)

    def program(geo: Geometry, args: list[Dist], out_avals: list[ArrayType],
                **params: Any) -> list[Dist]:
        lhs, rhs = args
        (out,) = out_avals
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        lp, rp = list(S.parts_of(lhs.aval)), list(S.parts_of(rhs.aval))
        # Contracted and batch dims must be split alike on both sides: an
        # unsplit side keeps only the other side's block (free).
        # When the split is taken by another dim of the unsplit side, or the
        # two sides disagree, both are gathered along that dim instead.
        for ld, rd in [*zip(lc, rc), *zip(lb, rb)]:
            if lp[ld] == rp[rd]:
                continue
            axes = lp[ld] or rp[rd]
            taken = {a for i, p in enumerate(lp) if i != ld for a in p} | \
                {a for i, p in enumerate(rp) if i != rd for a in p}
            if (lp[ld] and rp[rd]) or set(axes) & taken:
                axes = ()
            lp[ld] = rp[rd] = axes
        lhs = PD.cut(lhs, lp, geo, rhs.aval)
        rhs = PD.cut(rhs, rp, geo, lhs.aval)
        contracted = frozenset(a for d in lc for a in lp[d])
        free_l = [lp[d] for d in range(len(lp)) if d not in lc and d not in lb]
        free_r = [rp[d] for d in range(len(rp)) if d not in rc and d not in rb]
        parts = [lp[d] for d in lb] + free_l + free_r
        u = contracted | S.unreduced_of(lhs.aval) | S.unreduced_of(rhs.aval)
        if PD.has_duplicates(parts, u):
            return fallback(geo, args, out_avals, **params)
        nat = PD.laid_out(out, parts, u, out, lhs.aval, rhs.aval)
        (partial,) = S.run_local(prim, geo, [lhs, rhs], [nat], params)
        return [S.reshard(partial, out, geo, "sum")]
    return program


dot_general_p = declare("dot_general", typing=_dot_general_type, impl=_dot_general_impl,
                        lowering=_dot_general_lowering,
                        pp_rule=_pp_dot_general, jvp=defjvp(_jvp_lhs, _jvp_rhs),
                        batch=_dot_general_batch,
                        sharding=SK.auto_placed(_dot_general_sharding, SK.dot_placement),
                        transpose=bilinear_transpose(_transpose_lhs, _transpose_rhs,
                                                     "dot_general"),
                        per_device=from_primitive(_dot_general))


# ------------------------------------------------------------ lax wrappers

CanonicalPrecision = tuple[Precision, Precision] | DotAlgorithm | DotAlgorithmPreset | None


def _precision_error(precision: Any) -> ValueError:
    return ValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {list(PRECISION_STRINGS)},\n- a lax.Precision value,\n"
        "- a tuple of two lax.Precision values or strings,\n"
        "- a lax.DotAlgorithmPreset or the name of one of these presets, or\n"
        "- a lax.DotAlgorithm value;\n"
        f"but got {precision}.")


def _level_of(name: str) -> Precision:
    """One string of a pair: a level name (a preset's name is no level, and
    fails as it does in JAX)."""
    found = canonicalize_precision(name)
    if not isinstance(found, tuple):
        raise TypeError("'DotAlgorithmPreset' object is not subscriptable")
    return found[0]


def canonicalize_precision(precision: Any) -> CanonicalPrecision:
    """A precision spec as the primitive records it: None, a pair of
    Precision levels (from a level, a level name, or a pair of either), or a
    dot algorithm (a DotAlgorithm, a DotAlgorithmPreset, or a preset's
    name). None reads ``jax_default_matmul_precision``."""
    if precision is None:
        default = config.jax_default_matmul_precision
        if default is None:
            return None
        try:
            return canonicalize_precision(default)
        except ValueError:
            raise ValueError(
                "jax_default_matmul_precision flag must be set to None, a value in "
                f"{list(PRECISION_STRINGS)}, or the name of a lax.DotAlgorithmPreset, "
                f"but got {default}") from None
    if isinstance(precision, str):
        if precision in PRECISION_STRINGS:
            p = PRECISION_STRINGS[precision]
            return p, p
        if precision in DotAlgorithmPreset.__members__:
            return DotAlgorithmPreset[precision]
    elif isinstance(precision, Precision):
        return precision, precision
    elif isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return precision[0], precision[1]
        if all(isinstance(p, str) for p in precision):
            return _level_of(precision[0]), _level_of(precision[1])
    raise _precision_error(precision)


def _index_tuple(xs: Any) -> tuple[int, ...]:
    if isinstance(xs, int):
        return (int(xs),)
    return tuple(int(x) for x in xs)


def _canonical_dims(dimension_numbers: Any) -> DimensionNumbers:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError("dot_general dimension_numbers must be of the form "
                        "((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), got "
                        f"{dimension_numbers!r}") from None
    return ((_index_tuple(lc), _index_tuple(rc)), (_index_tuple(lb), _index_tuple(rb)))


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``dot_general``; without dimension numbers, a vector/matrix product."""
    if dimension_numbers is None:
        ls, rs = canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape
        if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
            dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
        else:
            raise ValueError(
                "jax.lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={ls} rhs_shape={rs}")
    pet = None if preferred_element_type is None else T.to_dtype(preferred_element_type, "dot")
    return dot_general_p.bind(lhs, rhs, dimension_numbers=_canonical_dims(dimension_numbers),
                              precision=canonicalize_precision(precision),
                              preferred_element_type=pet,
                              out_sharding=canonicalize_out_sharding(out_sharding,
                                                                     "dot_general"))


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None) -> Any:
    return dot(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
               preferred_element_type=preferred_element_type, out_sharding=out_sharding)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Matmul over the last two axes, batching over the leading ones."""
    la, ra = canonical_aval_of(lhs), canonical_aval_of(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise ValueError(f"batch_matmul requires arguments with the same number of "
                         f"dimensions, at least 2, got {la.ndim} and {ra.ndim}")
    batch: Sequence[int] = tuple(range(la.ndim - 2))
    dims = (((la.ndim - 1,), (ra.ndim - 2,)), (tuple(batch), tuple(batch)))
    return dot_general(lhs, rhs, dims, precision=precision)



# ------------------------------------------------- matmul as jnp stages it

DotGeneral = Callable[[Any, Any, Any], Any]


def staged_matmul(a: Any, b: Any, contract: DotGeneral) -> Any:
    """``a @ b`` as ``jnp.matmul`` stages it (JAX's rules write ``@`` too):
    a rank-1 operand is a vector; the leading axes broadcast NumPy's way,
    those of size 1 squeezed away and the others batch axes of one
    ``contract(a, b, dimension_numbers)`` (a ``dot_general``), whose result
    is transposed into place. ValueError for leading axes that do not
    broadcast."""
    a_aval, b_aval = canonical_aval_of(a), canonical_aval_of(b)
    sa, sb = a_aval.shape, b_aval.shape
    a_mat, b_mat = len(sa) > 1, len(sb) > 1
    a_bd: list[int | None] = list(sa[:-2]) if a_mat else []
    b_bd: list[int | None] = list(sb[:-2]) if b_mat else []
    nb = max(len(a_bd), len(b_bd))
    missing: list[int | None] = [None] * nb
    a_bd = missing[:nb - len(a_bd)] + a_bd
    b_bd = missing[:nb - len(b_bd)] + b_bd
    a_sq: list[int] = []
    b_sq: list[int] = []
    both_sq: list[int] = []
    a_batch: list[int] = []
    b_batch: list[int] = []
    idx_batch: list[int] = []
    idx_a: list[int] = []
    idx_b: list[int] = []
    # Classify each broadcast axis: missing on one side, size 1 on one or
    # both sides (squeezed away), or a true batch axis.
    for i, (ba, bb) in enumerate(zip(a_bd, b_bd)):
        if ba is None:
            idx_b.append(i)
        elif bb is None:
            idx_a.append(i)
        elif ba == 1 and bb == 1:
            a_sq.append(len(idx_batch) + len(idx_a) + len(a_sq))
            b_sq.append(len(idx_batch) + len(idx_b) + len(b_sq))
            both_sq.append(i)
        elif ba == 1:
            idx_b.append(i)
            a_sq.append(len(idx_batch) + len(idx_a) + len(a_sq))
        elif bb == 1:
            idx_a.append(i)
            b_sq.append(len(idx_batch) + len(idx_b) + len(b_sq))
        elif ba == bb:
            a_batch.append(len(idx_batch) + len(idx_a))
            b_batch.append(len(idx_batch) + len(idx_b))
            idx_batch.append(i)
        else:
            raise ValueError(f"Incompatible types for matmul arguments: {a_aval} and {b_aval}")
    if a_mat:
        idx_a.append(nb)
    if b_mat:
        idx_b.append(nb + int(a_mat))
    perm = tuple(int(p) for p in np.argsort(np.array(idx_batch + idx_a + idx_b, dtype=int)))
    if a_sq:
        a = squeeze(a, tuple(a_sq))
    if b_sq:
        b = squeeze(b, tuple(b_sq))
    a_nd, b_nd = canonical_aval_of(a).ndim, canonical_aval_of(b).ndim
    dims = (((a_nd - 1,), (b_nd - 1 - int(b_mat),)), (tuple(a_batch), tuple(b_batch)))
    out = contract(a, b, dims)
    if perm != tuple(range(len(perm))):
        out = transpose(out, perm)
    if both_sq:
        out = expand_dims(out, both_sq)
    return out

__all__ = [
    "DotAlgorithm", "DotAlgorithmPreset", "Precision", "batch_matmul",
    "canonicalize_precision", "dot", "dot_general",
]
