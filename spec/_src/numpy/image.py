"""``jax.image``: ``resize``, ``scale_and_translate`` and ``ResizeMethod``, built as JAX
builds them.

Each spatial dimension (one whose size changes, for ``resize``) is resampled by a weight
matrix ``w[input, output]``: output sample j sits at ``(j + 0.5) / scale - translation /
scale - 0.5`` in input coordinates, the kernel (triangle for linear, Keys' cubic with a =
-0.5, OpenCV's cubic with a = -0.75 for ``cubic-pytorch``, Lanczos with radius 3 or 5, or the
overlap of output and input cells for ``area``) is evaluated at the distance to each input
index, stretched by ``1 / scale`` when downsampling with ``antialias``; each column is
normalised to sum to one (zero where the sum is below ``1000 eps_float32``) and zeroed where
the sample lies outside ``[-0.5, size - 0.5]``. ``cubic-pytorch`` without antialiasing
instead pads the edges: the kernel also runs over ``radius`` indices past each end, their
weights added to the edge index's. The image is contracted with every weight matrix in one
``einsum`` at ``precision`` (HIGHEST by default). ``nearest`` takes input index
``floor((j + 0.5) m / n)`` along each resized dimension (``resize`` only: ValueError in
``scale_and_translate``). Integer images are resampled as floats.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec._src.api.jit import jit
from spec._src.core.canonical import canonical_shape
from spec._src.lax import shaping as L
from spec._src.lax.dot import Precision
from spec._src.numpy import creation
from spec._src.numpy import dtypes as jdtypes
from spec._src.numpy import indexing as jnp_indexing
from spec._src.numpy import math as jm
from spec._src.numpy import reductions as jr
from spec._src.numpy.linalg import einsum
from spec._src.numpy.util import _concrete_or_error

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]

_where = jnp_indexing.where


def _lanczos(radius: float, x: Any) -> Any:
    y = radius * jm.sin(np.pi * x) * jm.sin(np.pi * x / radius)
    out = _where(x > 1e-3, jm.divide(y, _where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
    return _where(x > radius, 0., out)


def _keys_cubic(x: Any) -> Any:
    out = ((1.5 * x - 2.5) * x) * x + 1.
    out = _where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
    return _where(x >= 2., 0., out)


def _opencv_cubic(x: Any) -> Any:
    a = -0.75
    out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    out = _where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
    return _where(x >= 2.0, 0.0, out)


def _triangle(x: Any) -> Any:
    return jm.maximum(0, 1 - jm.abs(x))


_AREA = object()  # the area kernel: cell overlaps, not a function of distance


class ResizeMethod(enum.Enum):
    """The image resampling methods."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        names = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
                 "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
                 "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
                 "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
                 "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
                 "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
                 "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return names[s]


_KERNELS: dict[ResizeMethod, tuple[int, Any]] = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, lambda x: _lanczos(3., x)),
    ResizeMethod.LANCZOS5: (5, lambda x: _lanczos(5., x)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalised(weights: Any) -> Any:
    total = jr.sum(weights, axis=0, keepdims=True)
    return _where(jm.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                  jm.divide(weights, _where(total != 0, total, 1)), 0)


def _edge_padded(weights: Any, expanded: Any, input_size: int, output_size: int,
                 dtype: Any) -> Any:
    """The weights of indices past either end added to the edge index's."""
    clamped = jm.clip(expanded.astype(np.int32), 0, input_size - 1)
    outputs = L.broadcast_in_dim(creation.arange(output_size),
                                 (expanded.shape[0], output_size), (1,))
    mat = creation.zeros((input_size, output_size), dtype=dtype)
    return _normalised(mat.at[clamped[:, np.newaxis], outputs].add(weights))


def compute_weight_mat(input_size: int, output_size: int, scale: Any, translation: Any,
                       kernel: Any, antialias: bool, edge_padding: bool,
                       radius: int | None) -> Any:
    """The ``[input_size, output_size]`` resampling weights of one dimension."""
    dtype = jdtypes.result_type(scale, translation)
    inv_scale = 1. / scale
    kernel_scale = jm.maximum(inv_scale, 1.) if antialias else 1.
    sample_f = ((creation.arange(output_size, dtype=dtype) + 0.5) * inv_scale
                - translation * inv_scale - 0.5)
    k = 0
    if edge_padding:
        assert radius is not None
        k = radius
        if antialias:
            concrete = _concrete_or_error(scale, "Antialiasing with edge padding requires a "
                                                 "static scale.")
            k = math.ceil(radius * max(1.0 / float(concrete), 1.0))
    expanded = creation.arange(-k, input_size + k, dtype=dtype)
    if kernel is _AREA:
        left_i = creation.arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
        right_i = left_i + inv_scale
        left_j = creation.arange(input_size, dtype=dtype)
        right_j = left_j + 1.0
        weights = jm.maximum(0.0, jm.minimum(right_i[np.newaxis, :], right_j[:, np.newaxis])
                             - jm.maximum(left_i[np.newaxis, :], left_j[:, np.newaxis]))
    else:
        x = jm.abs(sample_f[np.newaxis, :] - expanded[:, np.newaxis]) / kernel_scale
        weights = kernel(x)
    if edge_padding:
        return _edge_padded(weights, expanded, input_size, output_size, dtype)
    weights = _normalised(weights)
    inside = jm.logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
    return _where(inside[np.newaxis, :], weights, 0)


def _scale_and_translate(x: Any, output_shape: Sequence[int], spatial_dims: Sequence[int],
                         scale: Sequence[Any], translation: Sequence[Any], kernel: Any,
                         antialias: bool, precision: Any, edge_padding: bool = False,
                         radius: int | None = None) -> Any:
    if len(spatial_dims) == 0:
        return x
    ndim = len(output_shape)
    contractions: list[Any] = []
    in_indices = list(range(ndim))
    out_indices = list(range(ndim))
    for i, d in enumerate(spatial_dims):
        d = d % x.ndim
        w = compute_weight_mat(x.shape[d], output_shape[d], scale[i], translation[i], kernel,
                               antialias, edge_padding=edge_padding, radius=radius)
        contractions += [w.astype(x.dtype), [d, ndim + i]]
        out_indices[d] = ndim + i
    contractions.append(out_indices)
    return einsum(x, in_indices, *contractions, precision=precision)


def _check_rank(shape: Sequence[int], image: Any) -> None:
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {tuple(shape)} vs {image.shape}")


def _method(method: str | ResizeMethod) -> ResizeMethod:
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: str | ResizeMethod,
                        antialias: bool = True, precision: Any = Precision.HIGHEST) -> Any:
    """The image resampled at ``shape`` with the given scale and translation per spatial
    dimension."""
    shape = canonical_shape(shape)
    _check_rank(shape, image)
    kind = _method(method)
    if kind == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    if kind == ResizeMethod.CUBIC_PYTORCH and antialias:
        kind = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[kind]
    (image,) = jm._promote_dtypes_inexact(image)
    scale, translation = jm._promote_dtypes_inexact(scale, translation)
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel,
                                antialias, precision,
                                edge_padding=kind == ResizeMethod.CUBIC_PYTORCH and not antialias,
                                radius=radius)


def _resize_nearest(x: Any, output_shape: Sequence[int]) -> Any:
    for d, (m, n) in enumerate(zip(x.shape, output_shape)):
        if m == n:
            continue
        offsets = (creation.arange(n, dtype=np.float32) + 0.5) * m / n
        offsets = jm.floor(offsets.astype(np.float32)).astype(np.int32)
        index: list[Any] = [slice(None)] * x.ndim
        index[d] = offsets
        x = x[tuple(index)]
    return x


def _resize_fn(image: Any, shape: tuple[int, ...], method: str | ResizeMethod,
               antialias: bool, precision: Any) -> Any:
    _check_rank(shape, image)
    kind = _method(method)
    if kind == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    (image,) = jm._promote_dtypes_inexact(image)
    spatial_dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
    if kind == ResizeMethod.CUBIC_PYTORCH and antialias:
        kind = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[kind]
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
    return _scale_and_translate(image, shape, spatial_dims, scale, [0.] * len(spatial_dims),
                                kernel, antialias, precision,
                                edge_padding=kind == ResizeMethod.CUBIC_PYTORCH and not antialias,
                                radius=radius)


_resize_fn.__name__ = _resize_fn.__qualname__ = "_resize"
_resize: Callable[..., Any] = jit(_resize_fn, static_argnums=(1, 2, 3, 4))


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = Precision.HIGHEST) -> Any:
    """The image resampled to ``shape`` (see the module docstring)."""
    return _resize(image, canonical_shape(shape), method, antialias, precision)
