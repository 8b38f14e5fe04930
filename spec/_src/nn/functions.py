"""``jax.nn``'s activation and normalisation functions, written on spec.numpy
and spec.lax.

Each function is staged as JAX stages it (a named ``jit`` equation, an
inlined jit, or a ``custom_jvp`` around a jit), so that jaxprs, structured
residuals and the order of rounding steps are JAX's; the derivative rules
JAX gives some of them (``relu`` and ``relu6`` at 0, ``log1mexp``, the
softmax) are declared with ``custom_jvp`` the same way.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.nn import numpy_names as jnp
from spec._src.api.custom_derivatives import custom_jvp
from spec._src.api.vmap import vmap
from spec._src.core.canonical import listed_axes, reduction_axes
from spec._src.core import types as T
from spec._src.core.errors import ConcretizationTypeError
from spec._src.core.interpreter import Tracer, canonical_aval_of, to_concrete_value
from spec._src.lax import elementwise as lax_e
from spec._src.lax import shaping as lax_s
from spec._src.lax.ad_prims import stop_gradient
from spec._src.numpy.math import _promote_shapes
from spec._src.numpy.util import _ensure, _inline_jit, _jit, _promote_inexact

Axis = int | Sequence[int] | None


# ------------------------------------------------------------------ activations


def _relu(x: Any) -> Any:
    return jnp.maximum(x, 0)


relu = custom_jvp(_jit("relu", _relu))
# The derivative at 0 is 0 (JAX's convention).
relu.defjvps(lambda g, ans, x: lax_e.select(x > 0, g, lax_s.full_like(g, 0)))


def _relu6(x: Any) -> Any:
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6 = custom_jvp(_jit("relu6", _relu6))
# At 0 and at 6 the derivative is 0 (JAX's convention).
relu6.defjvps(lambda g, ans, x: lax_e.select((x > 0) & (x < 6), g, lax_s.full_like(g, 0)))


def _identity(x: Any) -> Any:
    return _ensure("identity", x)


identity = _jit("identity", _identity)


def _squareplus(x: Any, b: Any = 4) -> Any:
    x, b = _ensure("squareplus", x, b)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


squareplus = _jit("squareplus", _squareplus)


def _softplus(x: Any) -> Any:
    return jnp.logaddexp(x, 0)


softplus = _jit("softplus", _softplus)


def _sparse_plus(x: Any) -> Any:
    x = _ensure("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


sparse_plus = _jit("sparse_plus", _sparse_plus)


def _soft_sign(x: Any) -> Any:
    x = _ensure("soft_sign", x)
    return x / (jnp.abs(x) + 1)


soft_sign = _jit("soft_sign", _soft_sign)


@_inline_jit
def sigmoid(x: Any) -> Any:
    """The logistic function (``lax.logistic``), inlined as JAX inlines it."""
    return lax_e.logistic(x)


def _sparse_sigmoid(x: Any) -> Any:
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


sparse_sigmoid = _jit("sparse_sigmoid", _sparse_sigmoid)


def _silu(x: Any) -> Any:
    x = _ensure("silu", x)
    return x * sigmoid(x)


silu = _jit("silu", _silu)
swish = silu


def _mish(x: Any) -> Any:
    x = _ensure("mish", x)
    return x * jnp.tanh(softplus(x))


mish = _jit("mish", _mish)


def _log_sigmoid(x: Any) -> Any:
    x = _ensure("log_sigmoid", x)
    return -softplus(-x)


log_sigmoid = _jit("log_sigmoid", _log_sigmoid)


def _elu(x: Any, alpha: Any = 1.0) -> Any:
    x = _ensure("elu", x)
    # The inner where keeps expm1 away from large positive inputs (no inf
    # whose zero cotangent would still make NaN).
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


elu = _jit("elu", _elu)


def _leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    x = _ensure("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


leaky_relu = _jit("leaky_relu", _leaky_relu)


def _hard_tanh(x: Any) -> Any:
    x = _ensure("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


hard_tanh = _jit("hard_tanh", _hard_tanh)


def _celu(x: Any, alpha: Any = 1.0) -> Any:
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


celu = _jit("celu", _celu)

# SELU's constants (Klambauer et al. 2017), as float64 Python numbers: they
# enter as weak-typed literals.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _selu(x: Any) -> Any:
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


selu = _jit("selu", _selu)


def _gelu(x: Any, approximate: bool = True) -> Any:
    [x] = _promote_inexact(x)
    dtype = canonical_aval_of(x).dtype
    if approximate:
        # The tanh approximation (Hendrycks & Gimpel 2016, section 2).
        k = np.asarray(np.sqrt(2 / np.pi), dtype=dtype)
        return x * (0.5 * (1.0 + jnp.tanh(k * (x + 0.044715 * (x ** 3)))))
    half = np.asarray(np.sqrt(0.5), dtype=dtype)
    return jnp.array(0.5 * x * lax_e.erfc(-x * half), dtype=dtype)


def gelu(x: Any, approximate: bool = True) -> Any:
    """The Gaussian error linear unit: ``x * Phi(x)``, or its tanh
    approximation (not staged as a jit of its own, as in JAX)."""
    return _gelu(x, approximate)


def _glu(x: Any, axis: int = -1) -> Any:
    x = _ensure("glu", x)
    size = canonical_aval_of(x).shape[axis]
    if size % 2:
        raise AssertionError("axis size must be divisible by 2")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


glu = _jit("glu", _glu, ("axis",))


def _log1mexp(x: Any) -> Any:
    x = _ensure("log1mexp", x)
    c = jnp.log(2.0)
    # Two formulas, each accurate on its side of log 2 (Maechler 2012).
    return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


log1mexp = custom_jvp(_jit("log1mexp", _log1mexp))
log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


def _hard_sigmoid(x: Any) -> Any:
    return relu6(x + 3.0) / 6.0


hard_sigmoid = _jit("hard_sigmoid", _hard_sigmoid)


def _hard_silu(x: Any) -> Any:
    x = _ensure("hard_silu", x)
    return x * hard_sigmoid(x)


hard_silu = _jit("hard_silu", _hard_silu)
hard_swish = hard_silu


def tanh(x: Any) -> Any:
    """``jax.nn.tanh`` is ``jnp.tanh``."""
    return jnp.tanh(x)


# ----------------------------------------------------------------- reductions


def _reduction_axes(ndim: int, axis: Axis) -> tuple[int, ...]:
    """The reduced axes, normalised and sorted."""
    return tuple(sorted(reduction_axes(listed_axes(axis), ndim)))


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a))) over ``axis``, shifted by the maximum for
    stability (the shift carries no gradient); with ``return_sign`` the
    log of the absolute sum and its sign."""
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a_arr, b_arr = _promote_shapes("logsumexp", *_promote_inexact(*_ensure("logsumexp", a, b)))
        a_arr = jnp.where(b_arr != 0, a_arr, -np.inf)
    else:
        [a_arr] = _promote_inexact(_ensure("logsumexp", a))
        b_arr = a_arr
    dtype = canonical_aval_of(a_arr).dtype
    dims = _reduction_axes(canonical_aval_of(a_arr).ndim, axis)
    amax = jnp.max(jnp.real(a_arr), axis=dims, keepdims=keepdims, where=where,
                   initial=-np.inf)
    amax = stop_gradient(lax_e.select(jnp.isfinite(amax), amax, lax_s.full_like(amax, 0)))
    amax_with_dims = amax if keepdims else lax_s.expand_dims(amax, dims)
    exp_a = lax_e.exp(lax_e.sub(a_arr, amax_with_dims.astype(dtype)))
    if b is not None:
        exp_a = lax_e.mul(exp_a, b_arr)
    sumexp = exp_a.sum(axis=dims, keepdims=keepdims, where=where)
    sign = lax_e.sign(sumexp)
    complex_sum = T.is_complex(canonical_aval_of(sumexp).dtype)
    if return_sign or not complex_sum:
        sumexp = abs(sumexp)
    out = lax_e.add(lax_e.log(sumexp), amax.astype(canonical_aval_of(sumexp).dtype))
    if return_sign:
        return out, sign
    if b is not None and not T.is_complex(canonical_aval_of(out).dtype):
        out = jnp.where(sign < 0, jnp.array(np.nan, dtype=canonical_aval_of(out).dtype), out)
    return out


def _count(x: Any, axis: Axis, where: Any, keepdims: bool, dtype: T.DType) -> Any:
    """How many elements each reduction over ``axis`` sees."""
    shape = canonical_aval_of(x).shape
    if where is None:
        dims = _reduction_axes(len(shape), axis)
        n = int(np.prod([shape[d] for d in dims]))
        return jnp.asarray(n, dtype=dtype)
    return jnp.sum(jnp.broadcast_to(where, shape), axis=axis, keepdims=keepdims, dtype=dtype)


def _logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    count = _count(x, axis, where, keepdims, canonical_aval_of(lse).dtype)
    return lse - jnp.log(count)


logmeanexp = _jit("logmeanexp", _logmeanexp, ("axis", "keepdims"))


def _log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    x = _ensure("log_softmax", x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - stop_gradient(x_max)
    shifted_lse = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_lse
    return result if where is None else jnp.where(where, result, -np.inf)


log_softmax = _jit("log_softmax", _log_softmax, ("axis",))


def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """exp(x) normalised to sum 1 over ``axis`` (masked-out entries 0); the
    maximum subtracted first carries no gradient (JAX's default, the
    ``jax_softmax_custom_jvp`` flag off)."""
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    unnormalized = jnp.exp(x_safe - stop_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else jnp.where(where, result, 0)


def _standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                 epsilon: Any = 1e-5, where: Any = None, algorithm: str = "fast") -> Any:
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True,
                                where=where)
        elif algorithm == "fast":
            # E[x^2] - E[x]^2 can come out slightly negative: clipped at 0
            # before the reciprocal square root.
            variance = jnp.clip(jnp.mean(jnp.square(x), axis, keepdims=True, where=where)
                                - jnp.square(mean), 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return jnp.subtract(x, mean) * lax_e.rsqrt(variance + epsilon)


standardize = _jit("standardize", _standardize, ("axis", "algorithm"))


# -------------------------------------------------------------------- one_hot


def _one_hot_impl(x: Any, num_classes: int, *, dtype: Any, axis: int) -> Any:
    ndim = canonical_aval_of(x).ndim
    out_axis = lax_s.canonicalize_axis(axis, ndim + 1)
    lhs = lax_s.expand_dims(x, (out_axis,))
    rhs_shape = [1] * ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax_s.broadcasted_iota(canonical_aval_of(x).dtype, rhs_shape, out_axis)
    return (lhs == rhs).astype(dtype)


_one_hot = _jit("_one_hot", _one_hot_impl, ("num_classes", "dtype", "axis"))


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1,
            out_sharding: Any = None) -> Any:
    """Each index of ``x`` as a vector of ``num_classes`` zeros with a one
    at the index (all zeros for an index out of range), along ``axis``."""
    num_classes = _static_count(num_classes)
    x_arr = jnp.asarray(x)
    dtype = T.default_float() if dtype is None else dtype
    if out_sharding is not None:
        raise NotImplementedError("one_hot with out_sharding")
    return _one_hot(x_arr, num_classes, dtype=dtype, axis=_one_hot_axis(axis))


def _one_hot_axis(axis: Any) -> int:
    """An axis that is no integer is an axis name to JAX's one_hot, unbound
    here: the NameError JAX raises (``axis=1.0`` included)."""
    try:
        return operator.index(axis)
    except TypeError:
        raise NameError(f"Found an unbound axis name: {axis!r}. one_hot's axis is an "
                        "integer, or an axis name bound by shard_map or vmap.") from None


def _static_count(num_classes: Any) -> int:
    if isinstance(num_classes, Tracer):
        known = to_concrete_value(num_classes)
        if known is None:
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: "
                f"traced array with shape {num_classes.aval.str_short()}\n"
                "The error arose in jax.nn.one_hot argument `num_classes`.")
        num_classes = known
    return operator.index(num_classes)


# --------------------------------------------------------- dot_product_attention


def _large_negative(dtype: T.DType) -> Any:
    # Capped at float32's range: the softmax runs in float32.
    top = min(float(np.finfo(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * top, dtype=dtype)


def _combined_mask(T_: int, S: int, logits: Any, mask: Any, is_causal: bool, q_len: Any,
                   kv_len: Any, window: tuple[int, int] | None) -> Any:
    combined = jnp.ones_like(logits, dtype=bool)
    if mask is not None:
        combined = jnp.logical_and(combined, mask)
    if is_causal:
        combined = jnp.logical_and(combined, jnp.tril(jnp.ones((T_, S), dtype=bool))[None, None])
    if window is not None:
        q_pos, k_pos = jnp.array(range(T_)), jnp.array(range(S))
        left, right = window
        inside = jnp.logical_and(q_pos[..., None] >= k_pos[..., None, :] - right,
                                 q_pos[..., None] <= k_pos[..., None, :] + left)
        combined = jnp.logical_and(combined, inside[None, None])
    if q_len is not None or kv_len is not None:
        q_ok: Any = True
        kv_ok: Any = True
        if q_len is not None:
            q_ok = jnp.arange(0, T_)[None, :, None] < q_len[:, None, None]
        if kv_len is not None:
            kv_ok = jnp.arange(0, S)[None, None, :] < kv_len[:, None, None]
        combined = jnp.logical_and(combined, jnp.logical_and(q_ok, kv_ok)[:, None])
    return combined


def _attention_core(query: Any, key: Any, value: Any, bias: Any, mask: Any, is_causal: bool,
                    scale: float, q_len: Any, kv_len: Any, window: tuple[int, int] | None,
                    return_residual: bool) -> Any:
    """One group of query heads sharing a key/value head: BTNH x BSNH."""
    logits_dtype = jnp.promote_types(query.dtype, np.float32)
    logits = jnp.einsum("BTNH,BSNH->BNTS", query, key, preferred_element_type=logits_dtype)
    logits = logits * jnp.array(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    T_, S = logits.shape[2], logits.shape[3]
    if mask is not None or is_causal or q_len is not None or kv_len is not None \
            or window is not None:
        keep = _combined_mask(T_, S, logits, mask, is_causal, q_len, kv_len, window)
        logits = jnp.where(keep, logits, _large_negative(logits.dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(key.dtype)
    encoded = jnp.einsum("BNTS,BSNH->BTNH", probs, value)
    if q_len is not None:
        valid = (jnp.arange(0, encoded.shape[1])[None, :] < q_len[:, None])[:, :, None, None]
        encoded = encoded * valid.astype(encoded.dtype)
    if return_residual:
        lse = jnp.transpose(logsumexp(logits, axis=-1).astype(key.dtype), (0, 2, 1))
        return encoded, stop_gradient(lse)
    return encoded


def _grouped(t: Any, n_heads: int, k_heads: int) -> Any:
    """A B N T S bias or mask split as B K G T S (broadcast if one head)."""
    if t is None:
        return None
    b, n, tq, s = t.shape
    groups = n_heads // k_heads
    if n == 1:
        return jnp.broadcast_to(t[:, :, None], (b, n, groups, tq, s))
    return jnp.reshape(t, (b, k_heads, groups, tq, s))


def _as_4d(t: Any) -> Any:
    t = jnp.asarray(t)
    missing = 4 - t.ndim
    return jnp.expand_dims(t, tuple(range(missing))) if missing > 0 else t


def _check(t: Any, shape: Sequence[int], dtype: Any, name: str) -> None:
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    for i, want in enumerate(shape):
        if want != -1 and t.shape[i] != want:
            raise ValueError(f"{name} shape should be {list(shape)}: but got {t.shape}")


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: float | None = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention on BTNH (or TNH) arrays, with grouped
    key/value heads, a bias, a boolean mask, causal and sliding-window
    masks and per-batch sequence lengths; the XLA formulation (softmax in
    float32)."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("cuDNN attention needs a GPU; spec has CPU devices only")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out_shape = jnp.asarray(query).shape
    q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
    bias = None if bias is None else _as_4d(bias)
    mask = None if mask is None else _as_4d(mask)
    q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    window = (local_window_size, local_window_size) if isinstance(local_window_size, int) \
        else local_window_size
    B, S, K, H = k.shape
    _check(v, [B, S, K, H], k.dtype, "value")
    _check(q, [B, -1, -1, H], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(q_len, [B], np.dtype("int32"), "query_seq_lengths")
    _check(kv_len, [B], np.dtype("int32"), "key_value_seq_lengths")
    N = q.shape[-2]
    if N % K != 0:
        raise ValueError("The number of query heads must be a multiple of key/value heads, "
                         f"but got {N} vs {K}")
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale
    Tq = q.shape[1]
    grouped_q = jnp.reshape(q, (B, Tq, K, N // K, H))
    def core(q: Any, k: Any, v: Any, bias: Any, mask: Any, q_len: Any, kv_len: Any) -> Any:
        return _attention_core(q, k, v, bias, mask, is_causal, scale_val, q_len, kv_len, window,
                               return_residual)

    per_group = vmap(core, in_axes=(3, None, None, 2, 2, None, None), out_axes=3)
    out = per_group(grouped_q, k, v, _grouped(bias, N, K), _grouped(mask, N, K), q_len, kv_len)
    if return_residual:
        encoded, lse = out
        return (jnp.reshape(encoded, out_shape), jnp.reshape(lse, out_shape[:-1]))
    return jnp.reshape(out, out_shape)


__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
    "hard_swish", "hard_tanh", "identity", "leaky_relu", "log1mexp", "log_sigmoid",
    "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6", "selu",
    "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid",
    "squareplus", "standardize", "swish", "tanh",
]
