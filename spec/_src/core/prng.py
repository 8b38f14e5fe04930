"""PRNG keys: the key dtype, the key array class, and the Threefry-2x32 kernels.

A key array of shape ``s`` has type ``key<fry>[s]``: an ArrayType whose
dtype is a ``KeyTy`` (an extended dtype, not a NumPy dtype). Its value, as
primitives' impls see it, is a NumPy array of shape ``s`` whose elements are
records holding the key's two uint32 words (``KeyTy.physical``). Because the
record array has the *logical* shape, structural primitives (slice, reshape,
concatenate, gather, select_n, ...) run on key arrays unchanged; only the
PRNG primitives look inside the records (``words``/``from_words``).

The kernels below are vectorised NumPy over whole arrays of keys and
counters (uint32 arithmetic wraps modulo 2**32, as the hash requires); the
only Python loop is over the hash's 20 rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core import dtypes as D
from spec._src.core.array import Array, SpecInternalError
from spec._src.core.config import config
from spec._src.core.types import ArrayType

U32 = np.dtype(np.uint32)
UINT_DTYPES: dict[int, np.dtype[Any]] = {
    8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: U32, 64: np.dtype(np.uint64)}


# ------------------------------------------------------------------ the key type

@dataclass(frozen=True)
class PRNGImpl:
    """A PRNG implementation, as a primitive param: prints as its tag (so a
    jaxpr shows ``random_seed[impl=fry]``, as JAX's does)."""

    name: str
    tag: str
    key_shape: tuple[int, ...]

    def __str__(self) -> str:
        return self.tag

    def __repr__(self) -> str:
        return f"PRNGImpl(key_shape={self.key_shape}, name={self.name!r}, tag={self.tag!r})"


THREEFRY = PRNGImpl("threefry2x32", "fry", (2,))
PRNGS: dict[str, PRNGImpl] = {THREEFRY.name: THREEFRY}
# Implementations JAX also knows by name; spec provides Threefry only.
UNSUPPORTED_PRNGS = ("rbg", "unsafe_rbg")


class KeyTy(D.ExtendedDType):
    """The dtype of keys of one PRNG implementation: ``key<fry>``."""

    __slots__ = ("_impl", "physical")
    # numpy's kind letter for opaque data, so dtype predicates (is_float,
    # is_int, ...) answer False without special cases.
    kind = "V"

    def __init__(self, impl: PRNGImpl) -> None:
        self._impl = impl
        self.physical: np.dtype[Any] = np.dtype([("bits", U32, impl.key_shape)])

    @property
    def type(self) -> type:
        return D.prng_key

    @property
    def name(self) -> str:
        return f"key<{self._impl.tag}>"

    @property
    def impl(self) -> PRNGImpl:
        return self._impl

    @property
    def itemsize(self) -> int:
        return math.prod(self._impl.key_shape) * U32.itemsize

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return type(other) is KeyTy and self._impl == other._impl

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((KeyTy, self._impl))

    def _make_array(self, value: np.ndarray, aval: ArrayType) -> Array:
        """The Array for a primitive's output of this type (``Array._from_checked``
        calls this for extended dtypes)."""
        if value.dtype != self.physical or value.shape != aval.shape:
            raise SpecInternalError(f"a key value of dtype {value.dtype} and shape "
                                    f"{value.shape} does not hold keys of type {aval}")
        return PRNGKeyArray._make(value, aval)


def is_key_dtype(dt: Any) -> bool:
    return type(dt) is KeyTy


def key_type(shape: tuple[int, ...], impl: PRNGImpl = THREEFRY, **fields: Any) -> ArrayType:
    dt: Any = KeyTy(impl)
    return ArrayType(tuple(shape), dt, **fields)


def words(keys: np.ndarray) -> np.ndarray:
    """A key value's uint32 words: shape ``(*keys.shape, *key_shape)``."""
    return keys["bits"]


def from_words(bits: np.ndarray, impl: PRNGImpl = THREEFRY) -> np.ndarray:
    """uint32 words of shape ``(*s, *key_shape)`` as a key value of shape ``s``."""
    n = len(impl.key_shape)
    shape = bits.shape[:bits.ndim - n]
    out = np.empty(shape, KeyTy(impl).physical)
    out["bits"] = bits
    return out


# ------------------------------------------------------------------ key arrays

class PRNGKeyArray(Array):
    """A concrete array of keys: an Array whose dtype is a key dtype. It
    refuses conversion to NumPy and prints the words it overlays."""

    __slots__ = ()

    @classmethod
    def _make(cls, value: np.ndarray, aval: ArrayType) -> PRNGKeyArray:
        return cls._placed_nowhere(value, aval)

    def _words(self) -> np.ndarray:
        return words(self._value)

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._words()}"

    __str__ = __repr__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array."
                        " Use jax.random.key_data(arr) if you wish to extract the underlying"
                        " integer array.")

    def __bool__(self) -> bool:
        raise TypeError("key array cannot be converted to boolean.")

    def __iter__(self) -> Any:
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        row = self.aval.update(shape=self.shape[1:])
        return iter([PRNGKeyArray._make(np.array(r), row) for r in self._value])

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        # JAX's concrete key arrays leave the Array method abstract.
        raise NotImplementedError("Cannot call abstract method astype")

    def item(self, *args: Any) -> Any:
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a Python scalar.")

    def tolist(self) -> Any:
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a list.")

    def copy(self) -> PRNGKeyArray:
        return PRNGKeyArray._make(self._value.copy(), self.aval)


# ------------------------------------------------------------------ Threefry-2x32

# Rotation distances of the 2-word Threefry variant (Salmon et al., SC'11),
# one group of four rounds for even and one for odd injections.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(k1: np.ndarray, k2: np.ndarray, x1: np.ndarray, x2: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The Threefry-2x32 block cipher (20 rounds) of the counters ``(x1, x2)``
    under the key ``(k1, k2)``; all uint32, broadcast against each other."""
    k1, k2, x1, x2 = (np.asarray(a, U32) for a in (k1, k2, x1, x2))
    shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
    with np.errstate(over="ignore"):  # rank-0 sums are NumPy scalars, which warn
        ks = (k1, k2, k1 ^ k2 ^ _PARITY)
        a = np.broadcast_to(x1 + ks[0], shape).copy()
        b = np.broadcast_to(x2 + ks[1], shape).copy()
        for group in range(5):
            for r in _ROTATIONS[group % 2]:
                a += b
                b = _rotl(b, r)
                b ^= a
            # Key injection after every four rounds: the key schedule rotates
            # by one word each time; the injection count goes to word two.
            a += ks[(group + 1) % 3]
            b += ks[(group + 2) % 3] + np.uint32(group + 1)
    return a, b


def _key_words(keys: np.ndarray, extra_dims: int) -> tuple[np.ndarray, np.ndarray]:
    """The two words of each key, with ``extra_dims`` trailing axes of size 1
    so that they broadcast against per-key counter arrays."""
    w = words(keys)
    pad = (1,) * extra_dims
    return (w[..., 0].reshape(keys.shape + pad), w[..., 1].reshape(keys.shape + pad))


def _iota_hi_lo(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A row-major iota of ``shape`` counted in 64 bits, as (high, low) words."""
    size = math.prod(shape)
    if size < 2 ** 32:
        return np.zeros((), U32), np.arange(size, dtype=U32).reshape(shape)
    counts = np.arange(size, dtype=np.uint64).reshape(shape)
    return (counts >> np.uint64(32)).astype(U32), counts.astype(U32)


def _hash_counts(keys: np.ndarray, n: int) -> np.ndarray:
    """Per key, the hash of the counters ``0..n-1`` laid out as JAX's
    ``threefry_2x32`` does: the (even-padded) counters split into halves
    that form the two words of each block. Shape ``(*keys.shape, n)``."""
    half = (n + 1) // 2
    counts = np.arange(2 * half, dtype=U32)
    counts[n:] = 0
    k1, k2 = _key_words(keys, 1)
    y1, y2 = threefry2x32(k1, k2, counts[:half], counts[half:])
    return np.concatenate([y1, y2], axis=-1)[..., :n]


def seed(seeds: np.ndarray) -> np.ndarray:
    """Keys from integer seeds: the seed's high and low 32 bits (the high
    word is zero for seeds of 32 bits or fewer)."""
    lo = seeds.astype(U32)
    if seeds.dtype.itemsize == 8:
        hi = (seeds.view(np.uint64) >> np.uint64(32)).astype(U32)
    else:
        hi = np.zeros_like(lo)
    return from_words(np.stack([hi, lo], axis=-1))


def split(keys: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Each key split into ``shape`` new keys: shape ``(*keys.shape, *shape)``."""
    if config.jax_threefry_partitionable:
        hi, lo = _iota_hi_lo(shape)
        k1, k2 = _key_words(keys, len(shape))
        y1, y2 = threefry2x32(k1, k2, hi, lo)
        return from_words(np.stack([y1, y2], axis=-1))
    bits = _hash_counts(keys, 2 * math.prod(shape))
    return from_words(bits.reshape(keys.shape + tuple(shape) + (2,)))


def fold_in(keys: np.ndarray, msgs: np.ndarray) -> np.ndarray:
    """Each key hashed with its (uint32) message: the hash of the counters
    ``(0, msg)``. ``keys`` and ``msgs`` broadcast against each other."""
    w = words(keys)
    y1, y2 = threefry2x32(w[..., 0], w[..., 1], np.zeros((), U32), msgs)
    return from_words(np.stack([y1, y2], axis=-1))


def random_bits(keys: np.ndarray, bit_width: int, shape: tuple[int, ...]) -> np.ndarray:
    """Per key, uniform bits of ``bit_width`` and ``shape``: shape
    ``(*keys.shape, *shape)``, dtype ``uint<bit_width>``."""
    dtype = UINT_DTYPES[bit_width]
    size = math.prod(shape)
    out_shape = keys.shape + tuple(shape)
    if config.jax_threefry_partitionable:
        hi, lo = _iota_hi_lo(shape)
        k1, k2 = _key_words(keys, len(shape))
        y1, y2 = threefry2x32(k1, k2, hi, lo)
        if bit_width == 64:
            wide = (y1.astype(dtype) << np.uint64(32)) | y2.astype(dtype)
            return np.broadcast_to(wide, out_shape).copy()
        return np.broadcast_to((y1 ^ y2).astype(dtype), out_shape).copy()
    # The original scheme: one stream of 32-bit words per key, cut into
    # values (64-bit values take a word from each half of the stream).
    n_words = -(-bit_width * size // 32)
    if n_words >= 2 ** 32 - 1:
        raise NotImplementedError("spec: random bits beyond 2**32 words per key with "
                                  "jax_threefry_partitionable=False")
    bits = _hash_counts(keys, n_words)
    if bit_width == 64:
        hi, lo = bits[..., :size], bits[..., size:]
        flat = (hi.astype(dtype) << np.uint64(32)) | lo.astype(dtype)
    elif bit_width == 32:
        flat = bits
    else:
        # Little-endian order within each word: the low bits come first.
        flat = np.ascontiguousarray(bits.astype("<u4")).view(dtype)[..., :size]
    out: np.ndarray = flat.reshape(out_shape)
    return out


def threefry_2x32_counts(k1: np.ndarray, k2: np.ndarray, count: np.ndarray) -> np.ndarray:
    """JAX's ``threefry_2x32(keypair, count)`` on one key: the counters
    hashed in two halves (see ``_hash_counts``), shaped as ``count``."""
    flat = count.reshape(-1)
    n = flat.shape[0]
    half = (n + 1) // 2
    padded = np.concatenate([flat, np.zeros(2 * half - n, U32)])
    y1, y2 = threefry2x32(k1, k2, padded[:half], padded[half:])
    return np.concatenate([y1, y2])[:n].reshape(count.shape)


__all__ = [
    "KeyTy", "PRNGImpl", "PRNGKeyArray", "PRNGS", "THREEFRY", "UINT_DTYPES", "fold_in",
    "from_words", "is_key_dtype", "key_type", "random_bits", "seed", "split", "threefry2x32",
    "threefry_2x32_counts", "words",
]
