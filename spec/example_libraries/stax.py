"""``jax.example_libraries.stax``: neural-network layers as ``(init_fun, apply_fun)`` pairs.

``init_fun(rng, input_shape)`` returns ``(output_shape, params)``; ``apply_fun(params, inputs,
**kwargs)`` computes the layer (a PRNG key comes in as ``rng=``).  Combinators (``serial``,
``parallel``, ``shape_dependent``) build layers from layers.  The initial parameters are drawn
with the same keys, samplers and splits as JAX's library, so they are JAX's bits.

The pooling layers are ``lax.reduce_window`` with ``lax.max`` or ``lax.add`` from their
identity, as JAX's library builds them: the reduce_window_max/sum primitives.  Max pooling
gives JAX's values exactly, and its gradient goes, as JAX's does, to the first maximal
element of each window; sums agree to rounding, since XLA fixes no order for the additions
within a padded window.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from spec import lax, random
import spec.numpy as jnp
from spec.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                     softplus, standardize)
from spec.nn.initializers import glorot_normal, normal, ones, zeros

InitFun = Callable[..., tuple[Any, Any]]
ApplyFun = Callable[..., Any]
Layer = tuple[InitFun, ApplyFun]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim: int, W_init: Callable[..., Any] = glorot_normal(),
          b_init: Callable[..., Any] = normal()) -> Layer:
    """A fully-connected layer ``inputs @ W + b``."""
    def init_fun(rng: Any, input_shape: tuple[int, ...]) -> tuple[Any, Any]:
        k1, k2 = random.split(rng)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return input_shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(rhs_spec: str, lhs_spec: str, input_shape: Sequence[int], out_chan: int,
                  filter_shape: Sequence[int]) -> list[int]:
    """The kernel's shape in ``rhs_spec`` order: O and I from the layer, spatial from the
    filter shape in the order the spatial letters appear."""
    spatial = iter(filter_shape)
    in_chan = input_shape[lhs_spec.index("C")]
    return [out_chan if c == "O" else in_chan if c == "I" else next(spatial)
            for c in rhs_spec]


def _conv_layer(shape_of: Callable[..., Any], apply_conv: Callable[..., Any],
                dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None, padding: Any,
                W_init: Callable[..., Any] | None, b_init: Callable[..., Any]) -> Layer:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    window_strides = strides or (1,) * len(filter_shape)
    kernel_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng: Any, input_shape: tuple[int, ...]) -> tuple[Any, Any]:
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape)
        output_shape = shape_of(input_shape, kernel_shape, window_strides, padding,
                                dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (kernel_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return apply_conv(inputs, W, window_strides, padding, dimension_numbers) + b

    return init_fun, apply_fun


def _dilated_conv(ndim: int) -> Callable[..., Any]:
    one = (1,) * ndim

    def conv(inputs: Any, W: Any, strides: Sequence[int], padding: Any,
             dimension_numbers: Any) -> Any:
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers)
    return conv


def _transposed_conv(inputs: Any, W: Any, strides: Sequence[int], padding: Any,
                     dimension_numbers: Any) -> Any:
    return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                padding: Any = "VALID", W_init: Callable[..., Any] | None = None,
                b_init: Callable[..., Any] = normal(1e-6)) -> Layer:
    """A convolution with the given ``(lhs, rhs, out)`` layout strings."""
    return _conv_layer(lax.conv_general_shape_tuple, _dilated_conv(len(filter_shape)),
                       dimension_numbers, out_chan, filter_shape, strides, padding, W_init,
                       b_init)


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding: Any = "VALID", W_init: Callable[..., Any] | None = None,
                         b_init: Callable[..., Any] = normal(1e-6)) -> Layer:
    """A transposed convolution with the given ``(lhs, rhs, out)`` layout strings."""
    return _conv_layer(lax.conv_transpose_shape_tuple, _transposed_conv, dimension_numbers,
                       out_chan, filter_shape, strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis: int | Sequence[int] = (0, 1, 2), epsilon: float = 1e-5,
              center: bool = True, scale: bool = True,
              beta_init: Callable[..., Any] = zeros,
              gamma_init: Callable[..., Any] = ones) -> Layer:
    """Standardise over ``axis``, then shift by ``beta`` (``center``) and scale by ``gamma``
    (``scale``), both shaped as the input without ``axis``."""
    axes: Sequence[int] = (axis,) if jnp.isscalar(axis) else axis  # type: ignore[assignment]

    def init_fun(rng: Any, input_shape: tuple[int, ...]) -> tuple[Any, Any]:
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axes)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params: Any, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        # The parameters lack the normalised axes: index them back in as size-one axes.
        spread = tuple(None if i in axes else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axes, epsilon=epsilon)
        if center and scale:
            return gamma[spread] * z + beta[spread]
        if center:
            return z + beta[spread]
        if scale:
            return gamma[spread] * z
        return z

    return init_fun, apply_fun


def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


_POOLS: dict[str, tuple[float, Callable[[Any, Any], Any]]] = {
    "max": (-math.inf, lax.max),
    "sum": (0.0, lax.add),
}


def _pool(x: Any, kind: str, window: Sequence[int], strides: Sequence[int],
          padding: str) -> Any:
    """``lax.reduce_window`` of ``x`` with the max or sum reducer from its identity."""
    init, reducer = _POOLS[kind]
    return lax.reduce_window(x, init, reducer, tuple(window), tuple(strides), padding)


def _window_counts(dims: Sequence[int], strides: Sequence[int], padding: str) -> Any:
    """How the average pool rescales: each output's count of real (unpadded) elements."""
    def rescale(outputs: Any, inputs: Any, spec: str | None) -> Any:
        non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"),
                                                                 spec.index("C"))
        spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
        counts = _pool(jnp.ones(spatial, inputs.dtype), "sum", dims, strides, padding)
        for i in sorted(non_spatial):
            counts = jnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


def _pooling_layer(kind: str, rescaler: Callable[..., Any] | None = None
                   ) -> Callable[..., Layer]:
    def PoolingLayer(window_shape: tuple[int, ...], strides: tuple[int, ...] | None = None,
                     padding: str = "VALID", spec: str | None = None) -> Layer:
        """A pooling layer over the spatial axes (all but N and C of ``spec``, by default
        the first and last)."""
        spatial_strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, spatial_strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"),
                                                                       spec.index("C"))
        window, steps = tuple(window_shape), tuple(spatial_strides)
        for i in sorted(non_spatial):
            window = window[:i] + (1,) + window[i:]
            steps = steps[:i] + (1,) + steps[i:]

        def init_fun(rng: Any, input_shape: tuple[int, ...]) -> tuple[Any, Any]:
            pads = lax.padtype_to_pads(input_shape, window, steps, padding)
            ones = (1,) * len(window)
            return lax.reduce_window_shape_tuple(input_shape, window, steps, pads, ones,
                                                 ones), ()

        def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
            out = _pool(inputs, kind, window, steps, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer("max")
SumPool = _pooling_layer("sum")
AvgPool = _pooling_layer("sum", _window_counts)


def _flatten() -> Layer:
    def init_fun(rng: Any, input_shape: tuple[int, ...]) -> tuple[Any, Any]:
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


def _identity() -> Layer:
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return inputs

    return init_fun, apply_fun


Flatten = _flatten()
"""Flatten all but the leading (batch) axis."""
Identity = _identity()
"""The identity layer."""


def FanOut(num: int) -> Layer:
    """Copy the input into a list of ``num`` inputs (for ``parallel``)."""
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        return [input_shape] * num, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        return input_shape[0], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return sum(inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum()
"""Sum a list of inputs (Python's ``sum``, from the integer 0)."""


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenate a list of inputs along ``axis``."""
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = input_shape[0]
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """In ``'train'`` mode keep each input with probability ``rate`` (scaled by
    ``1 / rate``) and zero the rest; in any other mode pass the inputs through."""
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. "
                "That is, instead of `apply_fun(params, inputs)`, call it like "
                "`apply_fun(params, inputs, rng)` where `rng` is a PRNG key (e.g. from "
                "`jax.random.key`).")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


def _layer_keys(rng: Any, count: int) -> Any:
    """One key per layer, or ``None`` for each when the caller passed none."""
    return random.split(rng, count) if rng is not None else (None,) * count


def serial(*layers: Layer) -> Layer:
    """The layers one after another; each gets its own split of the init and apply keys."""
    count = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rngs = _layer_keys(kwargs.pop("rng", None), count)
        for fun, param, rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """The layers side by side, the k-th applied to the k-th of a sequence of inputs.

    ``init_fun`` returns the pair (output shapes, params), each a tuple over the layers.
    """
    count = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng: Any, input_shape: Any) -> Any:
        results = [init(key, shape) for init, key, shape
                   in zip(init_funs, random.split(rng, count), input_shape)]
        return tuple(zip(*results))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rngs = _layer_keys(kwargs.pop("rng", None), count)
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Any], Layer]) -> Layer:
    """A layer built by ``make_layer(input_shape)`` once the input shape is known."""
    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun


__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "elu", "gelu",
    "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal", "ones",
    "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid", "softmax",
    "softplus", "standardize", "zeros",
]
