"""``spec._src.random.keys``: JAX's PRNG keys on Threefry-2x32.

Keys are either typed (``key(seed)``: dtype ``key<fry>``, shape ``()``) or raw
(``PRNGKey(seed)``: ``uint32[2]``); raw keys are wrapped on entry (``random_wrap``) and the
key functions unwrap their results again, so a raw key in gives a raw key out. The
samplers (``spec._src.random.samplers``) take their keys through ``check_prng_key`` and
draw their bits with ``random_bits``.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.core import prng as R
from spec._src.core.array import Array
from spec._src.core.basearray import Array as PublicArray
from spec._src.core.interpreter import Tracer
from spec._src.lax.prng import (
    random_bits_p,
    random_clone_p,
    random_fold_in_p,
    random_seed_p,
    random_split_p,
    random_unwrap_p,
    random_wrap_p,
)
from spec._src.numpy import creation

__all__ = ["Key", "PRNGKey", "clone", "fold_in", "key", "key_data", "key_dtype", "key_impl",
           "split", "wrap_key_data"]

# The static type of typed key arrays (JAX's ``NewType`` over its Array).
Key = typing.NewType("Key", PublicArray)

Shape = tuple[int, ...]


def is_key(x: Any) -> bool:
    """Whether ``x`` is a typed key array (of dtype ``key<impl>``)."""
    return R.is_key_dtype(getattr(x, "dtype", None))


def _arraylike(x: Any) -> bool:
    return (isinstance(x, (np.ndarray, np.generic, Array, Tracer)) or bool(np.isscalar(x))
            or hasattr(x, "__jax_array__"))


def _check_key_data(impl: R.PRNGImpl, data: Any) -> None:
    """JAX's checks of raw key data (shape ending with the key shape, uint32)."""
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {data}")
    n = len(impl.key_shape)
    if data.ndim < 1:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                        f"got ndim={data.ndim}")
    if tuple(data.shape[-n:]) != impl.key_shape:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with {impl.key_shape}; got shape={tuple(data.shape)} for "
                        f"impl={impl!r}")
    if data.dtype != np.uint32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={data.dtype}")


def _random_wrap(data: Any, impl: R.PRNGImpl) -> Any:
    _check_key_data(impl, data)
    return random_wrap_p.bind(data, impl=impl)


def check_prng_key(name: str, key: Any, *, allow_batched: bool = False) -> tuple[Any, bool]:
    """A typed key (raw keys wrapped: the flag says so), single unless batched."""
    if is_key(key):
        typed, wrapped = key, False
    elif _arraylike(key):
        typed, wrapped = _random_wrap(key, R.THREEFRY), True
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and typed.ndim:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{np.shape(key)} != (). Use jax.vmap for batching.")
    return typed, wrapped


def _return_keys(wrapped: bool, keys: Any) -> Any:
    return random_unwrap_p.bind(keys) if wrapped else keys


def _resolve_impl(spec: Any) -> R.PRNGImpl:
    if spec is None:
        return R.THREEFRY
    if isinstance(spec, R.PRNGImpl):
        return spec
    if isinstance(spec, R.KeyTy):
        return spec.impl
    if type(spec) is str:
        if spec in R.PRNGS:
            return R.PRNGS[spec]
        if spec in R.UNSUPPORTED_PRNGS:
            raise NotImplementedError(f"spec implements the threefry2x32 PRNG only, not {spec}")
        names = ", ".join(f'"{s}"' for s in (*R.PRNGS, *R.UNSUPPORTED_PRNGS))
        raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: '
                         f"{names}?")
    raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


def _key(ctor_name: str, seed: Any, impl_spec: Any) -> Any:
    impl = _resolve_impl(impl_spec)
    if is_key(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    # A Python int goes through int64 first, so that large ints (hashes)
    # wrap instead of overflowing under x64-off, as in JAX.
    seeds = creation.asarray(np.int64(seed)) if isinstance(seed, int) else creation.asarray(seed)
    return random_seed_p.bind(seeds, impl=impl)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """A typed key (``key<fry>[]``) from an integer seed."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "jax.random.key")
        impl = dtype
    return _key("key", seed, impl)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802  (JAX's name)
    """A raw key (``uint32[2]``) from an integer seed."""
    return random_unwrap_p.bind(_key("PRNGKey", seed, impl))


def key_data(keys: Any) -> Any:
    """The uint32 words under a (possibly batched) key array."""
    typed, _ = check_prng_key("key_data", keys, allow_batched=True)
    return random_unwrap_p.bind(typed)


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """Key words (uint32, trailing shape ``(2,)``) as a typed key array."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "jax.random.wrap_key_data")
        impl = dtype
    return _random_wrap(key_bits_array, _resolve_impl(impl))


def key_impl(keys: Any) -> str:
    typed, _ = check_prng_key("key_impl", keys, allow_batched=True)
    return str(typed.dtype.impl.name)


def key_dtype(impl_spec: Any = None) -> R.KeyTy:
    """The key dtype of a PRNG implementation (the default one for None)."""
    return R.KeyTy(_resolve_impl(impl_spec))


def split_key(key: Any, num: Any = 2) -> Any:
    """``split`` of a typed key, unchecked but for its rank (JAX's ``_split``)."""
    if key.ndim:
        raise TypeError("split accepts a single key, but was given a key array of shape "
                        f"{key.shape} != (). Use jax.vmap for batching.")
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    return random_split_p.bind(key, shape=shape)


def split(key: Any, num: Any = 2) -> Any:
    """``num`` new keys (or an array of keys of shape ``num``)."""
    typed, wrapped = check_prng_key("split", key)
    return _return_keys(wrapped, split_key(typed, num))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and a 32-bit integer."""
    typed, wrapped = check_prng_key("fold_in", key)
    if np.ndim(data):
        raise TypeError("fold_in accepts a scalar, but was given an array of"
                        f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
    return _return_keys(wrapped,
                        random_fold_in_p.bind(typed, creation.asarray(data, dtype="uint32")))


def clone(key: Any) -> Any:
    """The key itself (JAX's key-reuse checker treats the clone as fresh)."""
    return random_clone_p.bind(key)


def random_bits(key: Any, bit_width: int, shape: Shape) -> Any:
    """``bit_width``-bit unsigned words of ``shape`` drawn from a typed key."""
    return random_bits_p.bind(key, bit_width=bit_width, shape=tuple(shape))
