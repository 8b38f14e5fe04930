"""lax wrappers for convolutions, with JAX's signatures.

They turn the user-facing forms of the static arguments (padding strings,
string dimension numbers, ``None`` dilations, dtype specifiers, precision
names) into the canonical params of ``conv_general_dilated`` and bind it
once; ``conv_transpose`` may first flip the kernel with ``rev``/``transpose``
exactly as JAX does.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax.dot_api import canonicalize_precision
from spec._src.lax.structural_api import rev, transpose
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.lax.conv import ConvDimensionNumbers, conv_general_dilated_p, dilate_dim, stride_dim

__all__ = [
    "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv",
    "conv_dimension_numbers", "conv_general_dilated", "conv_general_permutations",
    "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
    "conv_transpose_shape_tuple", "conv_with_general_padding", "padtype_to_pads",
]

ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None
Pads = list[tuple[int, int]]

_PAD_STRINGS = ("VALID", "SAME", "SAME_LOWER")


# ------------------------------------------------------------ static helpers

def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: Any) -> Pads:
    """Explicit (low, high) pads for ``'VALID'``, ``'SAME'`` or ``'SAME_LOWER'``.

    SAME pads so that each output size is ceil(input / stride); an odd total
    puts the extra element at the end (SAME) or the start (SAME_LOWER).
    """
    if not isinstance(padding, str):
        raise TypeError(f"Unknown padding type: {padding!r}; expected 'VALID', 'SAME' or "
                        "'SAME_LOWER'.")
    mode = padding.upper()
    if mode not in _PAD_STRINGS:
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    if len(in_shape) != len(window_shape) or len(in_shape) != len(window_strides):
        raise ValueError(f"padtype_to_pads: in_shape {tuple(in_shape)}, window_shape "
                         f"{tuple(window_shape)} and window_strides {tuple(window_strides)} "
                         "must have equal lengths")
    pads: Pads = []
    for d, k, s in zip(in_shape, window_shape, window_strides):
        d, k, s = int(d), int(k), int(s)
        if s <= 0:
            raise ValueError(f"padtype_to_pads: window_strides must be positive, got "
                             f"{tuple(window_strides)}")
        total = max((-(-d // s) - 1) * s + k - d, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if mode == "SAME" else (large, small))
    return pads


def conv_general_permutations(dimension_numbers: Any
                              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Axis permutations (batch/out-feature, feature/in-feature, spatial...)
    for string dimension numbers such as ('NHWC', 'HWIO', 'NHWC'). Spatial
    axes are ordered as they appear in the rhs string."""
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        s = dimension_numbers[i]
        if not s.count(a) == s.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {s}.")
        if len(s) != len(set(s)):
            raise TypeError(f"convolution dimension_numbers[{i}] must not repeat a "
                            f"character, got {s}.")
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError("convolution dimension_numbers must name the same spatial characters "
                        f"in all three strings, got {tuple(dimension_numbers)}.")

    def perm(s: str, pair: tuple[str, str]) -> tuple[int, ...]:
        sp = sorted((i for i, c in enumerate(s) if c not in pair),
                    key=lambda i: rhs_s.index(s[i]))
        return (s.index(pair[0]), s.index(pair[1]), *sp)

    return perm(lhs_s, pairs[0]), perm(rhs_s, pairs[1]), perm(out_s, pairs[2])


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """``None``, a ConvDimensionNumbers, or three layout strings, as a
    ConvDimensionNumbers of axis permutations."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError("convolution dimension_numbers elements must be strings, got "
                        f"{tuple(type(s) for s in dimension_numbers)}.")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Any,
                     batch_group_count: int = 1) -> tuple[int, ...]:
    """Output shape of a convolution of canonical-layout shapes (no dilation)."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError("Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]="
                         f"{tuple(lhs_shape[2:])}")
    space = tuple(stride_dim(p, int(k), int(s))
                  for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0]), *space)


def _take(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"convolution dimension numbers {tuple(perm)} are not a permutation "
                         f"of the axes of shape {tuple(shape)}")
    return tuple(int(shape[i]) for i in perm)


def _unpermute(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    out = [0] * len(shape)
    for axis, size in zip(perm, shape):
        out[axis] = int(size)
    return tuple(out)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Any) -> tuple[int, ...]:
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(_take(lhs_shape, lp), _take(rhs_shape, rp), window_strides,
                           padding)
    return _unpermute(out, op)


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(low, high) padding of the dilated input of a transposed convolution
    whose forward convolution used ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        low, total = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return low, total - low


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Any) -> tuple[int, ...]:
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = _take(lhs_shape, lp), _take(rhs_shape, rp)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rt[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + int(sum(p))
             for i, k, s, p in zip(lt[2:], rt[2:], window_strides, padding)]
    return _unpermute((lt[0], rt[0], *space), op)


# ------------------------------------------------------------------ wrappers

def _explicit_padding(padding: Any) -> tuple[tuple[int, int], ...]:
    try:
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError) as err:
        raise ValueError("padding argument to conv_general_dilated should be a string or a "
                         f"sequence of (low, high) pairs, got {padding}") from err


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None,
                         out_sharding: Any = None) -> Any:
    """General n-dimensional convolution with lhs (input) and rhs (kernel)
    dilation, zero padding, and feature/batch grouping."""
    lshape, rshape = canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape
    dnums = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    # As JAX (which names dot_general here): a P takes the context mesh, and a
    # concrete mesh becomes abstract, so the param prints as JAX's.
    out_sharding = canonicalize_out_sharding(out_sharding, "dot_general")
    if lhs_dilation is None:
        lhs_dilation = (1,) * (len(lshape) - 2)
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not supported for transposed (lhs-dilated) "
                         "convolution with conv_general_dilated: give explicit padding "
                         "pairs or use conv_transpose.")
    if rhs_dilation is None:
        rhs_dilation = (1,) * (len(rshape) - 2)
    pads: Any
    if isinstance(padding, str):
        lhs_sp = _take(lshape, dnums.lhs_spec)[2:]
        rhs_sp = _take(rshape, dnums.rhs_spec)[2:]
        window = [dilate_dim(k, int(r)) for k, r in zip(rhs_sp, rhs_dilation)]
        pads = padtype_to_pads(lhs_sp, window, window_strides, padding)
    else:
        pads = _explicit_padding(padding)
    pet = (None if preferred_element_type is None
           else T.to_dtype(preferred_element_type, "conv_general_dilated"))
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(window_strides), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dnums, feature_group_count=feature_group_count,
        batch_group_count=batch_group_count, precision=canonicalize_precision(precision),
        preferred_element_type=pet, out_sharding=out_sharding)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Convolution in the NCHW/OIHW layout with string padding."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: Any, lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    """Convolution in the NCHW/OIHW layout with explicit padding and dilations."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_DNUMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                            4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def _flip_kernel(rhs: Any, dn: ConvDimensionNumbers) -> Any:
    """Reverse the kernel's spatial axes and swap its feature axes; on a
    NumPy kernel this stays NumPy (no equations), as in JAX."""
    spatial = [int(a) for a in dn.rhs_spec[2:]]
    o, i = int(dn.rhs_spec[0]), int(dn.rhs_spec[1])
    if isinstance(rhs, np.ndarray):
        return np.swapaxes(np.flip(rhs, tuple(spatial)), o, i)
    for axis in spatial:
        rhs = rev(rhs, (axis,))
    perm = list(range(len(canonical_aval_of(rhs).shape)))
    perm[o], perm[i] = perm[i], perm[o]
    return transpose(rhs, perm)


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """A fractionally strided convolution: the lhs is dilated by ``strides``
    and convolved with stride 1 (the kernel is not flipped unless
    ``transpose_kernel``)."""
    lshape, rshape = canonical_aval_of(lhs).shape, canonical_aval_of(rhs).shape
    ndims = len(lshape)
    if ndims != len(rshape) or ndims < 2:
        raise ValueError(f"conv_transpose needs lhs and rhs of equal rank >= 2, got shapes "
                         f"{lshape} and {rshape}")
    if dimension_numbers is None:
        if ndims not in _TRANSPOSE_DEFAULT_DNUMS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DNUMS[ndims]
    dn = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    k_spatial = _take(rshape, dn.rhs_spec)[2:]
    if rhs_dilation is None:
        rhs_dilation = (1,) * (ndims - 2)
    pads: Any
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_dim = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads = tuple(_conv_transpose_padding(dilate_dim(k, int(r)), int(s), p)
                     for k, r, s, p in zip(k_spatial, rhs_dilation, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = _flip_kernel(rhs, dn)
    return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)
