"""PRNG primitives: the Threefry-2x32 hash and the typed-key primitives.

``threefry2x32`` hashes uint32 counters under uint32 key words. The key
primitives (``random_seed``, ``random_bits``, ``random_split``,
``random_fold_in``, ``random_wrap``, ``random_unwrap``, ``random_clone``)
take or make arrays of keys, whose dtype is a key dtype ``key<fry>``
(``spec._src.core.prng.KeyTy``); their impls see key arrays as NumPy record arrays of
the keys' shape (``spec._src.core.prng``). None of them is differentiable in a useful
sense: the outputs are integers or keys, so their tangents are zero
(float0), and none is linear.

XLA's own generators: ``rng_bit_generator`` (a uint32[4] or uint64[2] state
to a new state and random bits, by Threefry or Philox, XLA's CPU bits; C1 the
state's type, C2 an unsigned dtype for the bits, C3 non-negative sizes, C4 a
``RandomAlgorithm``) and the stateful ``rng_uniform`` (values in ``[a, b)``,
which ones unspecified; C1 one dtype, C2 scalars, C3 integer or float).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from spec._src.core import prng as R
from spec._src.core.config import config
from spec._src.core import types as T
from spec._src.interpreters.ad_util import defjvp2, zero_jvp
from spec._src.interpreters.batching import (
    AxisData,
    BatchDim,
    bdim_at_front,
    broadcasting,
    vectorized,
)
from spec._src.core.interpreter import canonical_aval_of, not_applicable
from spec._src.lax.elementwise import const_like
from spec._src.lax.elementwise import eq, exp, select
from spec._src.lax import elementwise as E
from spec._src.lax.slicing import concatenate, slice as slice_
from spec._src.lowering import prng as LP
from spec._src.lowering.emitter import LoweringContext, handles_keys
from spec._src.lowering.transcendental import lower_fun
from spec._src.lax.loops import scan
from spec._src.lax.special import random_gamma_grad
from spec._src.lax.shaping import (
    broadcast_in_dim,
    convert_element_type,
    full,
    full_like,
    iota,
    reshape,
)
from spec._src.lax import sharding_kit as SK
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.core.interpreter import from_primitive
from spec._src.interpreters import per_device as PD
from spec._src.interpreters import spmd as S
from spec._src.interpreters.spmd import Dist

_BIT_WIDTHS = (8, 16, 32, 64)


def _not_linear(name: str) -> Any:
    return not_applicable(f"{name} is not linear (its outputs are integers or keys)")


def _require_keys(name: str, c: str, aval: ArrayType) -> None:
    require(R.is_key_dtype(aval.dtype), name, c,
            f"operand must be an array of PRNG keys, got {aval}")


def _impl_of(keys: ArrayType) -> R.PRNGImpl:
    dt: Any = keys.dtype  # a KeyTy (checked by the caller's typing rule)
    impl: R.PRNGImpl = dt.impl
    return impl


def _extend_parts(mesh: AbstractMesh, keys: ArrayType, **params: Any) -> list[SK.Parts]:
    """Outputs that append unsharded trailing dims to the keys' dims."""
    return [SK.parts(keys) + (None,) * len(params.get("shape", ()))]


# ------------------------------------------------------------------ threefry2x32

def _threefry_type(k1: ArrayType, k2: ArrayType, x1: ArrayType, x2: ArrayType
                   ) -> list[ArrayType]:
    avals = (k1, k2, x1, x2)
    require(all(a.dtype == T.uint32 for a in avals), "threefry2x32", "C1",
            f"Arguments to threefry2x32 must have uint32 type, got "
            f"{', '.join(str(a) for a in avals)}")
    shape = _broadcast_shape("threefry2x32", avals)
    out = ArrayType(shape, T.uint32)
    return [out, out]


def _broadcast_shape(name: str, avals: tuple[ArrayType, ...]) -> T.Shape:
    """lax's implicit broadcasting: rank-0 operands stretch; the others share
    a rank and, per axis, a size (size 1 stretches)."""
    try:
        return T.broadcast_shapes(name, [a.shape for a in avals])
    except TypeError as err:
        raise TypeError(f"{name} C2: {err}") from None


def _threefry_impl(k1: np.ndarray, k2: np.ndarray, x1: np.ndarray, x2: np.ndarray
                   ) -> list[np.ndarray]:
    shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
    y1, y2 = R.threefry2x32(k1, k2, x1, x2)
    return [np.broadcast_to(y1, shape).copy(), np.broadcast_to(y2, shape).copy()]


def _leading_layout_kept(args: list[Dist], out_avals: list[ArrayType], **params: Any
                         ) -> bool:
    """The operand's and the result's common leading dimensions are laid out
    alike, and the dimensions only one of them has are whole."""
    src, dst = S.parts_of(args[0].aval), S.parts_of(out_avals[0])
    n = min(len(src), len(dst))
    return src[:n] == dst[:n] and not any(src[n:]) and not any(dst[n:]) and not (
        S.unreduced_of(args[0].aval) or S.unreduced_of(out_avals[0]))


threefry2x32_p = declare(
    "threefry2x32", typing=_threefry_type, impl=_threefry_impl, multiple_results=True,
    jvp=zero_jvp(), transpose=_not_linear("threefry2x32"), batch=broadcasting(),
    sharding=SK.section("threefry2x32", SK.broadcasting("threefry2x32", 2)),
    per_device=from_primitive(PD.aligned), lowering=LP.threefry2x32)


# ------------------------------------------------------------------ key data
# The lowering of the key primitives: each computes its results' uint32 key
# data (trailing axis of 2 words) from its operands' with lax functions, as
# the impls in spec._src.core.prng do with NumPy.

def _word(data: Any, i: int, extra_dims: int) -> Any:
    """Word ``i`` of each key, with ``extra_dims`` trailing axes of size 1."""
    shape = tuple(canonical_aval_of(data).shape)
    keys_shape = shape[:-1]
    start = (0,) * len(keys_shape) + (i,)
    word = slice_(data, start, (*keys_shape, i + 1))
    return reshape(word, (*keys_shape, *(1,) * extra_dims))


def _stack_words(y1: Any, y2: Any) -> Any:
    shape = tuple(canonical_aval_of(y1).shape)
    return concatenate([reshape(y1, (*shape, 1)), reshape(y2, (*shape, 1))], len(shape))


def _hash_counts(data: Any, n: int) -> Any:
    """The original scheme's stream: per key, the hash of the counters
    ``0..n-1``, even-padded with a zero and split into halves that are the
    two words of each block, the halves' results concatenated and cut to
    ``n`` (shape ``(*keys, n)``; ``core.prng._hash_counts``)."""
    if n >= 2 ** 32 - 1:
        raise NotImplementedError("lowering random bits of 2**32 - 1 or more words per key "
                                  "with jax_threefry_partitionable=False is not specified")
    half = (n + 1) // 2
    counts = iota(T.uint32, n)
    if 2 * half > n:
        counts = concatenate([counts, np.zeros((1,), np.uint32)], 0)
    ones = (1,) * (canonical_aval_of(data).ndim - 1)
    x1, x2 = (reshape(slice_(counts, (lo,), (lo + half,)), (*ones, half)) for lo in (0, half))
    y1, y2 = threefry2x32_p.bind(_word(data, 0, 1), _word(data, 1, 1), x1, x2)
    out = concatenate([y1, y2], canonical_aval_of(y1).ndim - 1)
    keys = tuple(canonical_aval_of(out).shape[:-1])
    return out if 2 * half == n else slice_(out, (0,) * (len(keys) + 1), (*keys, n))


def _original_bits(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """``core.prng.random_bits``'s original scheme in lax functions: one
    stream of words per key; 64-bit values take a word from each half of
    it, 8- and 16-bit values are the words' pieces, low bits first."""
    size = math.prod(shape)
    n = -(-bit_width * size // 32)
    bits = _hash_counts(data, n)
    keys = tuple(canonical_aval_of(bits).shape[:-1])
    dtype = R.UINT_DTYPES[bit_width]
    zeros = (0,) * len(keys)
    if bit_width == 64:
        hi = convert_element_type(slice_(bits, (*zeros, 0), (*keys, size)), dtype)
        lo = convert_element_type(slice_(bits, (*zeros, size), (*keys, n)), dtype)
        bits = E.bitwise_or(E.shift_left(hi, np.asarray(32, dtype)), lo)
    elif bit_width in (8, 16):
        per_word = 32 // bit_width
        wide = (*keys, n, per_word)
        shifts = E.mul(np.uint32(bit_width), iota(T.uint32, per_word))
        pieces = E.shift_right_logical(
            broadcast_in_dim(bits, wide, tuple(range(len(keys) + 1))),
            broadcast_in_dim(shifts, wide, (len(keys) + 1,)))
        pieces = E.bitwise_and(pieces, np.uint32(np.iinfo(dtype).max))
        pieces = reshape(pieces, (*keys, n * per_word))
        bits = slice_(convert_element_type(pieces, dtype), (*zeros, 0), (*keys, size))
    return reshape(bits, (*keys, *shape))


def _hash_iota(data: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """Each key's hash of the row-major counters of ``shape`` (high word 0)."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError("lowering random bits of 2**32 or more counters per key "
                                  "is not specified")
    keys_ndim = canonical_aval_of(data).ndim - 1
    lo = reshape(iota(T.uint32, size), (*(1,) * keys_ndim, *shape))
    hi = np.zeros((), np.uint32)
    k1, k2 = _word(data, 0, len(shape)), _word(data, 1, len(shape))
    y1, y2 = threefry2x32_p.bind(k1, k2, hi, lo)
    return y1, y2


def _seed_data(seeds: Any, *, impl: R.PRNGImpl) -> Any:
    """The seed's high 32 bits (0 for a narrower seed) and low 32 bits."""
    shift = np.asarray(32, canonical_aval_of(seeds).dtype)
    hi = convert_element_type(E.shift_right_logical(seeds, shift), T.uint32)
    return _stack_words(hi, convert_element_type(seeds, T.uint32))


def _bits_data(data: Any, *, bit_width: int, shape: tuple[int, ...]) -> Any:
    if not config.jax_threefry_partitionable:
        return _original_bits(data, bit_width, tuple(shape))
    y1, y2 = _hash_iota(data, tuple(shape))
    dtype = R.UINT_DTYPES[bit_width]
    if bit_width == 64:
        wide1, wide2 = (convert_element_type(y, dtype) for y in (y1, y2))
        return E.bitwise_or(E.shift_left(wide1, np.asarray(32, dtype)), wide2)
    out = E.bitwise_xor(y1, y2)
    return out if bit_width == 32 else convert_element_type(out, dtype)


def _split_data(data: Any, *, shape: tuple[int, ...]) -> Any:
    if not config.jax_threefry_partitionable:
        words = _hash_counts(data, 2 * math.prod(shape))
        keys = tuple(canonical_aval_of(words).shape[:-1])
        return reshape(words, (*keys, *shape, 2))
    return _stack_words(*_hash_iota(data, tuple(shape)))


def _fold_in_data(data: Any, msgs: Any) -> Any:
    y1, y2 = threefry2x32_p.bind(_word(data, 0, 0), _word(data, 1, 0),
                                 np.zeros((), np.uint32), msgs)
    return _stack_words(y1, y2)


# ------------------------------------------------------------------ random_seed

def _seed_type(seeds: ArrayType, *, impl: R.PRNGImpl) -> list[ArrayType]:
    require(T.is_int(seeds.dtype), "random_seed", "C1",
            f"PRNG key seed must be an integer; got {seeds}")
    return [R.key_type(seeds.shape, impl)]


def _seed_impl(seeds: np.ndarray, *, impl: R.PRNGImpl) -> list[np.ndarray]:
    return [R.seed(seeds)]


random_seed_p = declare(
    "random_seed", typing=_seed_type, impl=_seed_impl,
    jvp=zero_jvp(), transpose=_not_linear("random_seed"), batch=vectorized(),
    sharding=SK.section("random_seed", SK.same_as(0)),
    per_device=from_primitive(PD.aligned), lowering=LP.on_key_data(_seed_data))


# ------------------------------------------------------------------ random_bits

def _bits_type(keys: ArrayType, *, bit_width: int, shape: tuple[int, ...]) -> list[ArrayType]:
    _require_keys("random_bits", "C1", keys)
    require(bit_width in _BIT_WIDTHS, "random_bits", "C2",
            f"bit_width must be one of 8, 16, 32 or 64, got {bit_width}")
    T.check_shape(shape, "random_bits")
    return [ArrayType((*keys.shape, *shape), R.UINT_DTYPES[bit_width])]


def _bits_impl(keys: np.ndarray, *, bit_width: int, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [R.random_bits(keys, bit_width, tuple(shape))]


random_bits_p = declare(
    "random_bits", typing=_bits_type, impl=_bits_impl,
    jvp=zero_jvp(), transpose=_not_linear("random_bits"), batch=vectorized(),
    lowering=LP.on_key_data(_bits_data),
    sharding=SK.section("random_bits", _extend_parts),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _leading_layout_kept, PD.local(p))))


# ------------------------------------------------------------------ random_split

def _split_type(keys: ArrayType, *, shape: tuple[int, ...]) -> list[ArrayType]:
    _require_keys("random_split", "C1", keys)
    T.check_shape(shape, "random_split")
    return [keys.update(shape=(*keys.shape, *shape), weak_type=False)]


def _split_impl(keys: np.ndarray, *, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [R.split(keys, tuple(shape))]


random_split_p = declare(
    "random_split", typing=_split_type, impl=_split_impl,
    jvp=zero_jvp(), transpose=_not_linear("random_split"), batch=vectorized(),
    lowering=LP.on_key_data(_split_data),
    sharding=SK.section("random_split", _extend_parts),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _leading_layout_kept, PD.local(p))))


# ------------------------------------------------------------------ random_fold_in

def _fold_in_type(keys: ArrayType, msgs: ArrayType) -> list[ArrayType]:
    _require_keys("random_fold_in", "C1", keys)
    require(msgs.dtype == T.uint32, "random_fold_in", "C2",
            f"messages must have dtype uint32, got {msgs}")
    shape = _broadcast_shape("random_fold_in", (keys, msgs))
    return [R.key_type(shape, _impl_of(keys))]


def _fold_in_impl(keys: np.ndarray, msgs: np.ndarray) -> list[np.ndarray]:
    return [R.fold_in(keys, msgs)]


random_fold_in_p = declare(
    "random_fold_in", typing=_fold_in_type, impl=_fold_in_impl,
    jvp=zero_jvp(), transpose=_not_linear("random_fold_in"), batch=broadcasting(),
    sharding=SK.section("random_fold_in", SK.broadcasting("random_fold_in")),
    per_device=from_primitive(PD.aligned), lowering=LP.on_key_data(_fold_in_data))


# ------------------------------------------------------------------ random_wrap / unwrap

def _wrap_type(data: ArrayType, *, impl: R.PRNGImpl) -> list[ArrayType]:
    n = len(impl.key_shape)
    require(data.dtype == T.uint32, "random_wrap", "C1",
            f"key data must have dtype uint32, got {data}")
    require(data.ndim >= n and data.shape[data.ndim - n:] == impl.key_shape, "random_wrap",
            "C2", f"key data's shape must end with {impl.key_shape}, got {data}")
    return [R.key_type(data.shape[:data.ndim - n], impl)]


def _wrap_impl(data: np.ndarray, *, impl: R.PRNGImpl) -> list[np.ndarray]:
    return [R.from_words(data, impl)]


def _wrap_batch(axis: AxisData, args: Any, dims: list[BatchDim], *, impl: R.PRNGImpl
                ) -> tuple[list[Any], list[BatchDim]]:
    # The key words are the trailing axes: the batch axis goes first.
    x = bdim_at_front(args[0], dims[0], axis.size)
    return [random_wrap_p.bind(x, impl=impl)], [0]


def _wrap_parts(mesh: AbstractMesh, data: ArrayType, *, impl: R.PRNGImpl) -> list[SK.Parts]:
    return [SK.parts(data)[:data.ndim - len(impl.key_shape)]]


random_wrap_p = declare(
    "random_wrap", typing=_wrap_type, impl=_wrap_impl,
    jvp=zero_jvp(), transpose=_not_linear("random_wrap"), batch=_wrap_batch,
    lowering=LP.same_data,
    sharding=SK.section("random_wrap", _wrap_parts),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _leading_layout_kept, PD.local(p))))


def _unwrap_type(keys: ArrayType) -> list[ArrayType]:
    _require_keys("random_unwrap", "C1", keys)
    return [ArrayType((*keys.shape, *_impl_of(keys).key_shape), T.uint32)]


def _unwrap_impl(keys: np.ndarray) -> list[np.ndarray]:
    return [R.words(keys).copy()]


def _unwrap_parts(mesh: AbstractMesh, keys: ArrayType) -> list[SK.Parts]:
    return [SK.parts(keys) + (None,) * len(_impl_of(keys).key_shape)]


random_unwrap_p = declare(
    "random_unwrap", typing=_unwrap_type, impl=_unwrap_impl,
    jvp=zero_jvp(), transpose=_not_linear("random_unwrap"), batch=vectorized(),
    lowering=LP.same_data,
    sharding=SK.section("random_unwrap", _unwrap_parts),
    per_device=from_primitive(
        lambda p: PD.guarded(p, _leading_layout_kept, PD.local(p))))


# ------------------------------------------------------------------ random_clone

def _clone_type(keys: ArrayType) -> list[ArrayType]:
    _require_keys("random_clone", "C1", keys)
    return [keys]


random_clone_p = declare(
    "random_clone", typing=_clone_type, impl=lambda keys: [keys.copy()],
    jvp=zero_jvp(), transpose=_not_linear("random_clone"), batch=vectorized(),
    lowering=LP.same_data,
    sharding=SK.section("random_clone", SK.same_as(0)),
    per_device=from_primitive(PD.aligned))


def _broadcast_to(arr: Any, target: tuple[int, ...]) -> Any:
    """``jnp.broadcast_to(arr, target)`` (leading axes added, size-1 axes
    stretched), with its errors."""
    aval = canonical_aval_of(arr)
    if aval.shape == target:
        return arr
    if len(target) < aval.ndim:
        raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={aval.shape} shape={target}")
    lead = len(target) - aval.ndim
    ok = all(d in (1, t) for d, t in zip(aval.shape, target[lead:]))
    if not ok or any(t < 0 for t in target):
        wanted = T.ArrayType(target, aval.dtype)
        raise ValueError(f"Incompatible types for broadcasting: input type="
                         f"{aval} and requested type={wanted}")
    return broadcast_in_dim(arr, target, tuple(range(lead, len(target))))


def full_keys(shape: tuple[int, ...], fill_value: Any, dtype: Any) -> Any:
    """Keys of ``dtype`` filling ``shape`` (``full_like`` of a key dtype): a
    key ``fill_value`` broadcast, anything else filling each key word as a
    uint32, then ``random_wrap``, as JAX's key dtype rules do (shardings and
    weak types are not carried over)."""
    impl: R.PRNGImpl = dtype.impl
    physical = (*shape, *impl.key_shape)
    if R.is_key_dtype(getattr(fill_value, "dtype", None)):
        data = _broadcast_to(random_unwrap_p.bind(fill_value), physical)
    else:
        data = full(physical, fill_value, T.uint32)
    return random_wrap_p.bind(data, impl=impl)


__all__ = [
    "full_keys", "random_bits_p", "random_clone_p", "random_fold_in_p", "random_seed_p",
    "random_split_p", "random_unwrap_p", "random_wrap_p", "threefry2x32_p",
]


# ------------------------------------------------------------------ random_gamma

def _gamma_type(keys: ArrayType, a: ArrayType, *, log_space: bool) -> list[ArrayType]:
    _require_keys("random_gamma", "C1", keys)
    require(T.is_float(a.dtype), "random_gamma", "C2",
            f"the shape parameter must be a float array, got {a}")
    require(a.shape[:keys.ndim] == keys.shape, "random_gamma", "C3",
            f"the keys' shape must be a prefix of the shape parameter's, got {keys} and {a}")
    return [a]


GammaSampler = Callable[[np.ndarray, np.ndarray, bool], np.ndarray]
GammaProgram = Callable[[Any, Any, bool], Any]
_gamma_samplers: list[GammaSampler] = []
_gamma_programs: list[GammaProgram] = []


def register_gamma_sampler(sampler: GammaSampler, program: GammaProgram) -> None:
    """Install the program ``random_gamma``'s impl runs (``sampler``, on
    arrays) and lowers (``program``, traced on the operands' types): JAX's
    sampler is a jnp/vmap program, written in the random layer above this
    one, which registers it when it is imported (as spec's facade always
    does)."""
    _gamma_samplers[:] = [sampler]
    _gamma_programs[:] = [program]


def _gamma_impl(keys: np.ndarray, a: np.ndarray, *, log_space: bool) -> list[np.ndarray]:
    if not _gamma_samplers:
        raise NotImplementedError("random_gamma needs spec._src.random.samplers imported")
    return [_gamma_samplers[0](keys, a, log_space)]


@handles_keys
def _gamma_lowering(ctx: LoweringContext, operands: Sequence[str],
                    in_avals: Sequence[ArrayType], out_avals: Sequence[ArrayType], *,
                    log_space: bool) -> list[str]:
    """The sampler's program emitted in place, as JAX lowers
    ``random_gamma`` (``mlir.lower_fun`` of its vmapped sampler): keys are
    their data in every op it writes."""
    if not _gamma_programs:
        raise NotImplementedError("random_gamma needs spec._src.random.samplers imported")
    program = _gamma_programs[0]
    rule = lower_fun(lambda keys, a: program(keys, a, log_space))
    return rule(ctx, operands, in_avals, out_avals)


def _gamma_batch(axis: AxisData, args: Any, dims: list[BatchDim], *, log_space: bool
                 ) -> tuple[list[Any], list[BatchDim]]:
    # Keys and parameters batched at the front: each key then samples its
    # own row of parameters (the keys' shape is a prefix of theirs).
    keys = bdim_at_front(args[0], dims[0], axis.size)
    a = bdim_at_front(args[1], dims[1], axis.size)
    return [random_gamma_p.bind(keys, a, log_space=log_space)], [0]


def _finfo(dtype: Any) -> Any:
    return ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]


def _gamma_sample_grad(sample: Any, a: Any, *, log_space: bool) -> Any:
    """d(sample)/da, elementwise: ``random_gamma_grad`` mapped (``lax.map``,
    as JAX does on CPU) over the flattened parameters and samples. In log
    space the sample is exp'd first (a zero becomes the smallest normal
    float) and the derivative of its log is taken."""
    samples = reshape(sample, (canonical_aval_of(sample).size,))
    alphas = reshape(a, (canonical_aval_of(a).size,))
    one: Callable[[Any, Any], Any] = random_gamma_grad
    if log_space:
        samples = exp(samples)
        tiny = full_like(samples, _finfo(samples.dtype).tiny)
        samples = select(eq(samples, const_like(sample, 0)), tiny, samples)

        def one(alpha: Any, s: Any) -> Any:
            return random_gamma_grad(alpha, s) / s
    grads = scan(lambda _, pair: ((), one(*pair)), (), (alphas, samples))[1]
    return grads.reshape(np.shape(a))


def _gamma_jvp_a(t: Any, sample: Any, keys: Any, a: Any, *, log_space: bool) -> Any:
    return t * _gamma_sample_grad(sample, a, log_space=log_space)


random_gamma_p = declare(
    "random_gamma", typing=_gamma_type, impl=_gamma_impl,
    jvp=defjvp2(None, _gamma_jvp_a),
    transpose=_not_linear("random_gamma"), batch=_gamma_batch,
    sharding=SK.section("random_gamma", SK.same_as(1)),
    per_device=from_primitive(PD.aligned),
    lowering=_gamma_lowering)

__all__ += ["random_gamma_p"]


# ------------------------------------------------------------ rng_bit_generator
# XLA's RngBitGenerator on a u64[2] state: word 0 is the key, word 1 the
# counter (JAX passes u32[4], its little-endian halves). THREE_FRY hashes the
# counters ``state + i`` (split into low and high words) under the key with
# Threefry-2x32, two 32-bit results per counter interleaved; PHILOX (the CPU
# default) runs Philox-4x32-10 on the 128-bit counters ``(state + i, key)``,
# four results per counter. 64-bit bits take two words per value (low first),
# 8- and 16-bit bits truncate 32-bit ones; the counter advances by the number
# of counters used.

class RandomAlgorithm(enum.IntEnum):
    """The bit generator algorithm ``rng_bit_generator`` names."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


_BIT_DTYPES = (T.uint8, T.uint16, T.uint32, T.uint64)
_LOW = np.uint64(0xFFFFFFFF)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))


def _rbg_type(key: ArrayType, *, shape: tuple[int, ...], dtype: Any, algorithm: Any,
              out_sharding: Any) -> list[ArrayType]:
    require((key.shape, key.dtype) in (((4,), T.uint32), ((2,), T.uint64)),
            "rng_bit_generator", "C1",
            f"rng_bit_generator key must be uint32[4] or uint64[2], got {key}")
    require(np.dtype(dtype) in _BIT_DTYPES, "rng_bit_generator", "C2",
            f"rng_bit_generator: unsupported dtype {np.dtype(dtype)}")
    require(all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape),
            "rng_bit_generator", "C3",
            f"rng_bit_generator shape must be non-negative integers, got {shape}")
    require(algorithm in tuple(RandomAlgorithm), "rng_bit_generator", "C4",
            f"rng_bit_generator algorithm must be a RandomAlgorithm, got {algorithm!r}")
    return [ArrayType(key.shape, key.dtype, key.weak_type),
            ArrayType(tuple(int(d) for d in shape), np.dtype(dtype))]


def _u64_words(key: np.ndarray) -> tuple[np.uint64, np.uint64]:
    """The state's key and counter words."""
    if key.dtype == np.uint64:
        return np.uint64(key[0]), np.uint64(key[1])
    k = key.astype(np.uint64)
    return k[0] | (k[1] << np.uint64(32)), k[2] | (k[3] << np.uint64(32))


def _halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (x & _LOW).astype(np.uint32), (x >> np.uint64(32)).astype(np.uint32)


def _philox(key: np.uint64, counters: list[np.ndarray]) -> np.ndarray:
    """Philox-4x32-10 of the counters (four uint32 words, low first): shape (n, 4)."""
    c = [w.astype(np.uint64) for w in counters]
    k0, k1 = key & _LOW, key >> np.uint64(32)
    for _ in range(10):
        p0, p1 = _PHILOX_M[0] * c[0], _PHILOX_M[1] * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _LOW,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _LOW]
        k0, k1 = (k0 + _PHILOX_W[0]) & _LOW, (k1 + _PHILOX_W[1]) & _LOW
    return np.stack(c, 1).astype(np.uint32)


def _joined(words: np.ndarray) -> np.ndarray:
    """uint32 word pairs (trailing axis, low first) as uint64."""
    w = words.astype(np.uint64)
    return w[..., 0] | (w[..., 1] << np.uint64(32))


def _split_axis(shape: tuple[int, ...]) -> int | None:
    """The axis XLA's 32-bit Threefry generator halves: the one needing the
    fewest counters (the first even one, else the longest; the first on
    ties); None when no axis is longer than 1."""
    longer = [d for d, s in enumerate(shape) if s > 1]
    if not longer:
        return None
    return min(longer, key=lambda d: ((shape[d] + 1) // 2 / shape[d], d))


def _threefry_bits(k: np.uint64, state: np.uint64, shape: tuple[int, ...], wide: bool
                   ) -> tuple[np.ndarray, int]:
    """Threefry-2x32 bits of ``shape`` and the number of counters used. 64-bit:
    one counter per value (its two words). 32-bit: counters of ``shape`` with
    the split axis halved (rounded up), the two words of a counter
    neighbours along that axis."""
    d = None if wide else _split_axis(shape)
    counter_shape = list(shape)
    if d is not None:
        counter_shape[d] = (shape[d] + 1) // 2
    used = math.prod(counter_shape)
    lo, hi = _halves(state + np.arange(used, dtype=np.uint64))
    k_lo, k_hi = _halves(np.asarray(k))
    first, second = (w.reshape(counter_shape) for w in R.threefry2x32(k_lo, k_hi, lo, hi))
    if wide:
        return _joined(np.stack([first, second], -1)), used
    if d is None:
        return first, used
    doubled = list(counter_shape)
    doubled[d] *= 2
    both = np.stack([first, second], d + 1).reshape(doubled)
    return np.take(both, np.arange(shape[d]), axis=d), used


def _rbg_impl(key: np.ndarray, *, shape: tuple[int, ...], dtype: Any, algorithm: Any,
              out_sharding: Any) -> list[np.ndarray]:
    n, dt = math.prod(shape), np.dtype(dtype)
    wide = dt == np.uint64
    k, state = _u64_words(key)
    with np.errstate(over="ignore"):
        if algorithm == RandomAlgorithm.RNG_THREE_FRY:
            bits, used = _threefry_bits(k, state, shape, wide)
        else:
            used = (n + 1) // 2 if wide else (n + 3) // 4
            counters = state + np.arange(used, dtype=np.uint64)
            carry = (counters < state).astype(np.uint64)
            lo, hi = _halves(counters)
            k_lo, k_hi = _halves(k + carry)
            quads = _philox(k, [lo, hi, k_lo, k_hi])
            bits = (_joined(quads.reshape(used, 2, 2)).reshape(-1)[:n] if wide
                    else quads.reshape(-1)[:n])
        new_state = state + np.uint64(used)
    if key.dtype == np.uint64:
        new_key = np.array([k, new_state], np.uint64)
    else:
        new_key = np.concatenate([key[:2], np.stack(_halves(np.asarray(new_state)))])
    return [new_key.astype(key.dtype), bits.astype(dt).reshape(shape)]


def _rbg_parts(mesh: AbstractMesh, key: ArrayType, *, shape: tuple[int, ...], dtype: Any,
               algorithm: Any, out_sharding: Any) -> list[SK.Parts]:
    bits = ((None,) * len(shape) if out_sharding is None
            else SK.param_parts(SK.abstract(out_sharding), len(shape)))
    return [SK.parts(key), bits]


def _rbg_batch(axis: AxisData, args: list[Any], dims: list[BatchDim], **params: Any
               ) -> tuple[list[Any], list[BatchDim]]:
    """JAX's rule: the first key's generator makes the whole batch's bits (a
    leading batch axis), its new key replaces the first key."""
    (keys,), (bd,) = args, dims
    if bd is None:
        return list(rng_bit_generator_p.bind(keys, **params)), [None, None]
    keys = bdim_at_front(keys, bd, axis.size)
    first = reshape(slice_(keys, (0, 0), (1, canonical_aval_of(keys).shape[1])),
                    canonical_aval_of(keys).shape[1:])
    sharding = params["out_sharding"]
    grown = {**params, "shape": (axis.size, *params["shape"]),
             "out_sharding": None if sharding is None else sharding.update(
                 spec=(SK.parts(canonical_aval_of(keys))[0], *sharding.spec))}
    new_key, bits = rng_bit_generator_p.bind(first, **grown)
    rest = slice_(keys, (1, 0), canonical_aval_of(keys).shape)
    return [concatenate([broadcast_in_dim(new_key, (1, *canonical_aval_of(new_key).shape),
                                          (1,)), rest], 0), bits], [0, 0]


rng_bit_generator_p = declare(
    "rng_bit_generator", typing=_rbg_type, impl=_rbg_impl, multiple_results=True,
    jvp=zero_jvp(), transpose=_not_linear("rng_bit_generator"), batch=_rbg_batch,
    sharding=SK.section("rng_bit_generator", _rbg_parts),
    per_device=from_primitive(S.gathered), lowering=LP.rng_bit_generator,
    doc="XLA's RngBitGenerator: a new state and uniformly random bits")


def rng_bit_generator(key: Any, shape: Any, dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """The new key and random bits of ``shape`` and ``dtype`` (an unsigned
    integer type) from ``key`` (uint32[4]) by ``algorithm``."""
    dims = tuple(int(d) for d in ((shape,) if isinstance(shape, int) else shape))
    dt = T.to_dtype(dtype, "rng_bit_generator")
    if dt not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dt}")
    outs = rng_bit_generator_p.bind(
        key, shape=dims, dtype=dt, algorithm=algorithm,
        out_sharding=canonicalize_out_sharding(out_sharding, "rng_bit_generator"))
    return outs[0], outs[1]


__all__ += ["RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p"]


# ------------------------------------------------------------------ rng_uniform
# XLA's stateful Rng op: values uniform in [a, b) from a generator whose state
# the program does not see. Which values is not specified (XLA's depend on its
# own run-time state); spec draws them from one process-wide NumPy generator.

_RNG_UNIFORM_STATE = np.random.default_rng(0)


def _rng_uniform_type(a: ArrayType, b: ArrayType, *, shape: tuple[int, ...]
                      ) -> list[ArrayType]:
    require(a.dtype == b.dtype, "rng_uniform", "C1",
            f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} and "
            f"{b.dtype}.", ValueError)
    require(a.shape == () and b.shape == (), "rng_uniform", "C2",
            f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and {b.shape}.",
            ValueError)
    require(T.is_float(a.dtype) or T.is_int(a.dtype), "rng_uniform", "C3",
            f"rng_uniform draws integers or floats, got dtype {a.dtype}")
    return [ArrayType(tuple(int(d) for d in shape), a.dtype, a.weak_type and b.weak_type)]


def _rng_uniform_impl(a: np.ndarray, b: np.ndarray, *, shape: tuple[int, ...]
                      ) -> list[np.ndarray]:
    if T.is_int(a.dtype):
        low, high = int(a), max(int(b), int(a) + 1)
        return [_RNG_UNIFORM_STATE.integers(low, high, shape).astype(a.dtype)]
    lo, hi = np.float64(a), np.float64(b)
    with np.errstate(all="ignore"):
        drawn = (lo + (hi - lo) * _RNG_UNIFORM_STATE.random(shape)).astype(a.dtype)
        below = np.nextafter(np.asarray(b, a.dtype), np.asarray(a, a.dtype))
    # Rounding to the narrower dtype may reach b: the interval is half-open.
    return [np.where(drawn >= b, below, drawn).astype(a.dtype) if hi > lo else drawn]


rng_uniform_p = declare(
    "rng_uniform", typing=_rng_uniform_type, impl=_rng_uniform_impl,
    jvp=not_applicable("JAX defines no derivative of rng_uniform"),
    transpose=_not_linear("rng_uniform"),
    batch=not_applicable("JAX defines no batching rule for rng_uniform"),
    sharding=SK.section("rng_uniform", lambda mesh, a, b, *, shape: [(None,) * len(shape)]),
    per_device=from_primitive(S.gathered), lowering=LP.rng_uniform,
    doc="XLA's stateful Rng: uniform values in [a, b), unspecified which")


def rng_uniform(a: Any, b: Any, shape: Any) -> Any:
    """Values uniform in ``[a, b)`` (scalars of one dtype) of ``shape``, from a
    state the program does not see: which values is not specified."""
    return rng_uniform_p.bind(a, b, shape=tuple(shape))


__all__ += ["rng_uniform", "rng_uniform_p"]
