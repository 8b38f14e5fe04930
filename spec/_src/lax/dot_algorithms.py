"""Dot algorithms: ``DotAlgorithm``, ``DotAlgorithmPreset`` and their numerics.

A dot algorithm names how a contraction is computed: the types the operands
are rounded to (their *storage* types), the type the products are summed in,
and, for the ``_X3``/``_X6``/``_X9`` emulations, how many reduced-precision
products stand in for one full-precision product (SPEC.md 9.4, "Dot
algorithms"). Two behaviours, chosen by the ``spec_dot_algorithms`` flag:

- ``"as_named"`` (the default): each algorithm computes what its name
  documents, as an accelerator implementing it would, in a fixed,
  machine-independent way (:func:`algorithm_matmul`);
- ``"cpu_jax"``: as JAX's CPU backend: only the presets it accepts, with the
  casts JAX inserts and otherwise a plain contraction in the accumulation
  type (:func:`cpu_compute_types`); the others raise its ``ValueError``.

The functions here work on operands already laid out as ``(..., m, k)`` and
``(..., k, n)``; dot_general brings them there.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from spec._src.lax import exact_matmul

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)

# The float8 kinds the ANY_F8 presets take (both operands must be one).
FLOAT8_TYPES = tuple(np.dtype(getattr(ml_dtypes, n)) for n in (
    "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu"))

# The terms of the fast-accumulation model: blocks of this many products are
# summed exactly, the blocks' float32 sums then added one after the other.
FAST_ACCUM_BLOCK = 32


class DotAlgorithm(NamedTuple):
    """An explicit dot algorithm (the fields as JAX names them)."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """The named algorithms; ``precision="BF16_BF16_F32"`` names one by its name."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self) -> tuple[np.dtype[Any], ...] | None:
        """The operand types the algorithm takes as they are; any other is
        cast to the first (None: any type)."""
        return _SUPPORTED_TYPES.get(self.name, (F32,))

    @property
    def supported_rhs_types(self) -> tuple[np.dtype[Any], ...] | None:
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> np.dtype[Any] | None:
        """The type products are summed in (None: the result type)."""
        return _ACCUMULATION.get(self.name, F32)

    def supported_output_types(self, lhs: np.dtype[Any], rhs: np.dtype[Any]
                               ) -> tuple[np.dtype[Any], ...] | None:
        """The result types the algorithm delivers directly (JAX's table)."""
        if self.name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
            return (F32, F16, BF16, *(np.dtype(getattr(ml_dtypes, n)) for n in (
                "float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fnuz",
                "float8_e4m3b11fnuz")))
        if self.name in ("F16_F16_F32", "BF16_BF16_F32"):
            narrow = F16 if self.name.startswith("F16") else BF16
            both_narrow = lhs == narrow and rhs == narrow
            return (F32, narrow) if both_narrow else (F32,)
        acc = self.accumulation_type
        return None if acc is None else (acc,)


_SUPPORTED_TYPES: dict[str, tuple[np.dtype[Any], ...] | None] = {
    "DEFAULT": None, "ANY_F8_ANY_F8_F32": None, "ANY_F8_ANY_F8_F32_FAST_ACCUM": None,
    "ANY_F8_ANY_F8_ANY": None, "ANY_F8_ANY_F8_ANY_FAST_ACCUM": None,
    "F16_F16_F16": (F16,), "F16_F16_F32": (F16,),
    "BF16_BF16_BF16": (BF16, F32), "BF16_BF16_F32": (BF16, F32),
    "F64_F64_F64": (F64,),
}
_ACCUMULATION: dict[str, np.dtype[Any] | None] = {
    "DEFAULT": None, "ANY_F8_ANY_F8_ANY": None, "ANY_F8_ANY_F8_ANY_FAST_ACCUM": None,
    "F16_F16_F16": F16, "BF16_BF16_BF16": BF16, "F64_F64_F64": F64,
}

# The presets JAX's CPU backend compiles (it ignores the algorithm itself).
CPU_PRESETS = frozenset({
    DotAlgorithmPreset.DEFAULT, DotAlgorithmPreset.F16_F16_F16,
    DotAlgorithmPreset.F32_F32_F32, DotAlgorithmPreset.F64_F64_F64,
    DotAlgorithmPreset.BF16_BF16_F32, DotAlgorithmPreset.BF16_BF16_F32_X3,
    DotAlgorithmPreset.BF16_BF16_F32_X6,
})

Algorithm = DotAlgorithm | DotAlgorithmPreset


def is_algorithm(precision: Any) -> bool:
    return isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))


def _convert_if_unsupported(dt: np.dtype[Any],
                            supported: tuple[np.dtype[Any], ...] | None) -> np.dtype[Any]:
    if supported is None or dt in supported:
        return dt
    return supported[0]


def cpu_compute_types(algorithm: Algorithm, lhs: np.dtype[Any], rhs: np.dtype[Any],
                      out: np.dtype[Any]) -> tuple[np.dtype[Any], np.dtype[Any], np.dtype[Any]]:
    """The operand and accumulation types JAX's lowering casts to: an explicit
    algorithm's own types; a preset keeps a supported operand type and casts
    any other to its first supported type, and keeps the result type where
    the preset can deliver it."""
    if isinstance(algorithm, DotAlgorithm):
        return (np.dtype(algorithm.lhs_precision_type), np.dtype(algorithm.rhs_precision_type),
                np.dtype(algorithm.accumulation_type))
    lt = _convert_if_unsupported(lhs, algorithm.supported_lhs_types)
    rt = _convert_if_unsupported(rhs, algorithm.supported_rhs_types)
    return lt, rt, _convert_if_unsupported(out, algorithm.supported_output_types(lt, rt))


def check_supported_on_cpu(algorithm: Algorithm) -> None:
    if algorithm not in CPU_PRESETS:
        raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")


# ------------------------------------------------------ as-named numerics

class Recipe(NamedTuple):
    """What an algorithm computes: each operand rounded to its storage type
    (or, for ``components`` > 1, converted to float32 and split into that
    many terms of it); the products of the component pairs ``kept`` summed
    exactly and rounded once to ``accumulation`` (through float64 when that
    is narrower than float32); ``fast``: the fast-accumulation model
    instead."""

    lhs_storage: str
    rhs_storage: str
    accumulation: np.dtype[Any]
    components: int
    kept: tuple[tuple[int, int], ...]
    fast: bool


# Component pairs (lhs term, rhs term) each emulation keeps: the terms of
# order at most 1 (X3), at most 2 (X6), or all of them (X9).
_PAIRS = {
    1: ((0, 0),),
    3: ((0, 0), (0, 1), (1, 0)),
    6: ((0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (2, 0)),
    9: tuple((i, j) for i in range(3) for j in range(3)),
}
_COMPONENTS = {1: 1, 3: 2, 6: 3, 9: 3}

_PRESET_RECIPES: dict[str, tuple[str, str, int]] = {
    # name: (storage, accumulation, primitive operations)
    "F16_F16_F16": ("float16", "float16", 1), "F16_F16_F32": ("float16", "float32", 1),
    "BF16_BF16_BF16": ("bfloat16", "bfloat16", 1), "BF16_BF16_F32": ("bfloat16", "float32", 1),
    "BF16_BF16_F32_X3": ("bfloat16", "float32", 3), "BF16_BF16_F32_X6": ("bfloat16", "float32", 6),
    "BF16_BF16_F32_X9": ("bfloat16", "float32", 9),
    "TF32_TF32_F32": ("tf32", "float32", 1), "TF32_TF32_F32_X3": ("tf32", "float32", 3),
    "F32_F32_F32": ("float32", "float32", 1), "F64_F64_F64": ("float64", "float64", 1),
}


def _accumulation_for_any(out: np.dtype[Any]) -> np.dtype[Any]:
    return out if out in (F16, BF16, F32, F64) else F32


def recipe(algorithm: Algorithm, lhs: np.dtype[Any], rhs: np.dtype[Any],
           out: np.dtype[Any]) -> Recipe | None:
    """The recipe of a non-default algorithm for these operand and result
    types (None for DEFAULT: the plain contraction). ValueError for operands
    or parameters the algorithm cannot take."""
    if isinstance(algorithm, DotAlgorithm):
        return _explicit_recipe(algorithm)
    name = algorithm.name
    if name == "DEFAULT":
        return None
    if name.startswith("ANY_F8"):
        if lhs not in FLOAT8_TYPES or rhs not in FLOAT8_TYPES:
            raise ValueError(f"The dot algorithm '{algorithm}' requires both inputs to have "
                             f"float8 dtypes. Got {lhs} and {rhs} instead.")
        acc = F32 if "_F32" in name else _accumulation_for_any(out)
        return Recipe(lhs.name, rhs.name, acc, 1, _PAIRS[1], name.endswith("FAST_ACCUM"))
    storage, acc_name, ops = _PRESET_RECIPES[name]
    return Recipe(storage, storage, np.dtype(acc_name) if acc_name != "bfloat16" else BF16,
                  _COMPONENTS[ops], _PAIRS[ops], False)


def _storage_name(dt: Any) -> str:
    return str(np.dtype(dt).name)


def _explicit_recipe(algorithm: DotAlgorithm) -> Recipe:
    ops = algorithm.num_primitive_operations
    if ops not in _PAIRS:
        raise ValueError(f"DotAlgorithm num_primitive_operations must be 1, 3, 6 or 9 (the "
                         f"split-operand emulations spec defines), got {ops}")
    acc = np.dtype(algorithm.accumulation_type)
    if acc not in (F16, BF16, F32, F64):
        raise ValueError(f"DotAlgorithm accumulation_type must be float16, bfloat16, float32 "
                         f"or float64, got {acc}")
    lt, rt = _storage_name(algorithm.lhs_precision_type), _storage_name(
        algorithm.rhs_precision_type)
    return Recipe(lt, rt, acc, _COMPONENTS[ops], _PAIRS[ops],
                  bool(algorithm.allow_imprecise_accumulation))


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to TensorFloat32's 10 fraction bits, to nearest
    with ties to even; infinities and NaNs kept (the result is float32)."""
    bits = np.asarray(x, F32).view(np.uint32)
    dropped = np.uint32(13)
    half = np.uint32(1 << 12)
    lsb = (bits >> dropped) & np.uint32(1)
    rounded = ((bits + (half - np.uint32(1)) + lsb) >> dropped) << dropped
    finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    return np.where(finite, rounded, bits).view(F32)


def round_to_storage(x: np.ndarray, storage: str) -> np.ndarray:
    """``x`` rounded to the storage type, held exactly in float32 (float64
    for float64 storage)."""
    if storage == "float64":
        return x.astype(F64)
    if storage == "tf32":
        return round_to_tf32(x.astype(F32))
    if storage == "float32":
        return x.astype(F32)
    return x.astype(np.dtype(getattr(ml_dtypes, storage, storage))).astype(F32)


def split(x: np.ndarray, storage: str, count: int) -> list[np.ndarray]:
    """``count`` terms of the storage type (as float32) whose sum
    approximates the float32 value ``x``: each term rounds what the earlier
    ones left (the differences are exact in float32)."""
    rest = x.astype(F32)
    terms = []
    for _ in range(count):
        term = round_to_storage(rest, storage)
        terms.append(term)
        rest = (rest - term).astype(F32)
    return terms


def _operand_terms(x: np.ndarray, storage: str, components: int) -> list[np.ndarray]:
    if components == 1:
        return [round_to_storage(x, storage)]
    return split(x.astype(F32), storage, components)


def _exact_rounded(a: np.ndarray, b: np.ndarray, acc: np.dtype[Any]) -> np.ndarray:
    """Exact sums of exact products, rounded once to float32 or float64;
    narrower accumulation types through float64."""
    wide = F64 if acc in (F64, F16, BF16) else F32
    res = exact_matmul.matmul(a.astype(wide), b.astype(wide))
    return res if acc == wide else res.astype(acc)


def _fast_accumulated(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The fast-accumulation model: the contraction in blocks of
    FAST_ACCUM_BLOCK terms, each block's exact sum rounded to float32, the
    block sums then added in float32 from the first block to the last."""
    k = a.shape[-1]
    blocks = -(-k // FAST_ACCUM_BLOCK)
    pad = blocks * FAST_ACCUM_BLOCK - k
    a = np.concatenate([a, np.zeros((*a.shape[:-1], pad), a.dtype)], axis=-1)
    b = np.concatenate([b, np.zeros((*b.shape[:-2], pad, b.shape[-1]), b.dtype)], axis=-2)
    ab = a.reshape((*a.shape[:-1], blocks, FAST_ACCUM_BLOCK))
    ab = np.moveaxis(ab, -2, -3)  # (..., blocks, m, block)
    bb = b.reshape((*b.shape[:-2], blocks, FAST_ACCUM_BLOCK, b.shape[-1]))
    partial = exact_matmul.matmul(ab.astype(F32), bb.astype(F32))  # (..., blocks, m, n)
    # add.accumulate is strictly sequential: one rounding per block, in order.
    return np.add.accumulate(partial, axis=-3, dtype=F32)[..., -1, :, :]


def _grouped_terms(lhs_terms: list[np.ndarray], rhs_terms: list[np.ndarray],
                   kept: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Operands of one contraction whose exact value is the sum of the kept
    component products, laid side by side along the contraction. Pairs that
    share an lhs term share one product with the sum of their rhs terms
    where that sum is exact in the terms' type (X9's nine products become
    one), which is the same exact sum at a fraction of the cost."""
    lhs_parts, rhs_parts = [], []
    for i in sorted({i for i, _ in kept}):
        rhs_of_i = [rhs_terms[j] for li, j in kept if li == i]
        total = np.sum([t.astype(F64) for t in rhs_of_i], axis=0)
        narrow = total.astype(rhs_of_i[0].dtype)
        if np.array_equal(narrow, total):
            lhs_parts.append(lhs_terms[i])
            rhs_parts.append(narrow)
        else:
            lhs_parts.extend([lhs_terms[i]] * len(rhs_of_i))
            rhs_parts.extend(rhs_of_i)
    lhs_parts, rhs_parts = _merge_equal_rhs(lhs_parts, rhs_parts)
    return np.concatenate(lhs_parts, axis=-1), np.concatenate(rhs_parts, axis=-2)


def _merge_equal_rhs(lhs_parts: list[np.ndarray], rhs_parts: list[np.ndarray]
                     ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Parts with equal rhs operands merged into one, their lhs summed, where
    that sum is exact (t0 x + t1 x + t2 x = x x when the terms sum to x)."""
    merged_l: list[np.ndarray] = []
    merged_r: list[np.ndarray] = []
    for lp, rp in zip(lhs_parts, rhs_parts):
        for n, other in enumerate(merged_r):
            if other.shape == rp.shape and np.array_equal(other, rp):
                total = merged_l[n].astype(F64) + lp.astype(F64)
                narrow = total.astype(lp.dtype)
                if np.array_equal(narrow, total):
                    merged_l[n] = narrow
                    break
        else:
            merged_l.append(lp)
            merged_r.append(rp)
    return merged_l, merged_r


def algorithm_matmul(a: np.ndarray, b: np.ndarray, r: Recipe) -> np.ndarray:
    """``a (..., m, k) @ b (..., k, n)`` by the recipe, in its accumulation
    type: one exact contraction sums all kept component products."""
    lhs_terms = _operand_terms(a, r.lhs_storage, r.components)
    rhs_terms = _operand_terms(b, r.rhs_storage, r.components)
    with np.errstate(all="ignore"):
        lhs, rhs = _grouped_terms(lhs_terms, rhs_terms, r.kept)
    if r.fast:
        res = _fast_accumulated(lhs, rhs)
        return res if r.accumulation == F32 else res.astype(r.accumulation)
    if lhs.shape[-1] == 1:
        # One product per element is not a sum: it keeps a -0.0 (as dot_general does).
        return np.asarray(lhs * rhs).astype(r.accumulation)
    return _exact_rounded(lhs, rhs, r.accumulation)


__all__ = ["DotAlgorithm", "DotAlgorithmPreset"]
