"""``jax.experimental.random``: the stateful generator of JEP 28845.

A ``StatefulPRNG`` pairs a typed base key with a counter held in a ref
(``jax.new_ref``). Every draw reads the counter, folds it into the base
key, and adds one to the counter; so the n-th draw of a generator seeded
with ``s`` uses the key ``fold_in(key(s), n)``, whether it runs eagerly or
inside ``jit`` (where the read and the increment are staged as a ref get
and a ref addupdate, and the ref's new value is written back on return).
The methods then call the stateless samplers of ``spec._src.random.samplers`` on that
key, so the values are JAX's bit for bit.

The generator is a pytree (a dataclass of two leaves), so it can be passed
to jitted functions; like any ref it cannot be returned from one. Under
``vmap`` it inherits the rules of refs: a generator that is not itself
mapped (closed over) cannot be drawn from, since every example would
increment the one counter (JAX raises a bare ``Exception``); ``split(n)``
gives a generator whose key and counter carry a leading axis of size
``n``, to be passed to the vmapped function as a mapped argument.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec._src.api import ref as _ref
from spec._src.api.vmap import _PytreeLeaf
from spec._src.core import tree_util
from spec._src.core.array import Array
from spec._src.core.interpreter import EvalTrace, Tracer, current_trace
from spec._src.core.state_types import RefType
from spec._src.numpy import creation
from spec._src.random import keys, samplers

__all__ = ["StatefulPRNG", "stateful_rng"]

Shape = tuple[int, ...]
Size = int | Sequence[int] | None


def _canonicalize_size(size: Size, *args: Any) -> Shape:
    """The sample shape: ``size`` as a tuple of ints, or (when ``None``)
    the broadcast shape of the parameters, NumPy's rule (and error)."""
    if size is None:
        return tuple(int(d) for d in np.broadcast_shapes(*(np.shape(a) for a in args)))
    if isinstance(size, (int, np.number)):
        return (operator.index(size),)
    return tuple(operator.index(d) for d in size)


def _is_placeholder(x: Any) -> bool:
    """Whether ``x`` is a stand-in leaf that pytree utilities put in a
    rebuilt node (vmap's prefix-error reporting does), not real data."""
    return isinstance(x, _PytreeLeaf)


def _is_typed_key(x: Any) -> bool:
    return isinstance(x, (Array, Tracer)) and keys.is_key(x)


def _is_ref(x: Any) -> bool:
    return isinstance(x, _ref.Ref) or (isinstance(x, Tracer) and type(x.aval) is RefType)


@dataclasses.dataclass(frozen=True, slots=True)
class StatefulPRNG:
    """A stateful random generator: a typed base key and a counter ref.

    Make one with ``stateful_rng(seed)``; each method draws from a fresh
    key ``fold_in(_base_key, counter)`` and increments the counter.
    """

    _base_key: Any
    _counter: Any

    def __post_init__(self) -> None:
        if _is_placeholder(self._base_key):
            return
        if not _is_typed_key(self._base_key):
            raise ValueError(f"Expected base_key to be a typed PRNG key; got {self._base_key}")
        if not _is_ref(self._counter):
            raise ValueError(f"Expected counter to be a scalar integer ref; got {self._counter}")

    def key(self, shape: int | Sequence[int] = ()) -> Any:
        """A fresh key (or a ``shape`` array of keys); advances the counter."""
        if self._base_key.shape:
            raise ValueError("cannot operate on split stateful generator")
        # Read, then increment: the key depends on the value before the draw.
        new_key = keys.fold_in(self._base_key, _ref.get(self._counter, ...))
        _ref.addupdate(self._counter, ..., 1)
        shape_tuple = _canonicalize_size(shape)
        return keys.split(new_key, shape_tuple) if shape_tuple else new_key

    def random(self, size: Size = None, dtype: Any = float) -> Any:
        """Uniform floats in [0, 1)."""
        return samplers.uniform(self.key(), shape=_canonicalize_size(size), dtype=dtype)

    def uniform(self, low: Any = 0, high: Any = 1, size: Size = None, *,
                dtype: Any = float) -> Any:
        """Uniform floats in [low, high)."""
        return samplers.uniform(self.key(), _canonicalize_size(size, low, high),
                                minval=low, maxval=high, dtype=dtype)

    def normal(self, loc: Any = 0, scale: Any = 1, size: Size = None, *,
               dtype: Any = float) -> Any:
        """Normal floats of mean ``loc`` and standard deviation ``scale``."""
        norm = samplers.normal(self.key(), _canonicalize_size(size, loc, scale), dtype)
        return (creation.asarray(loc) + creation.asarray(scale) * norm).astype(dtype)

    def integers(self, low: Any, high: Any = None, size: Size = None, *,
                 dtype: Any = int) -> Any:
        """Uniform integers in [low, high) (in [0, low) when ``high`` is None)."""
        if high is None:
            low, high = 0, low
        return samplers.randint(self.key(), _canonicalize_size(size, low, high),
                                minval=low, maxval=high, dtype=dtype)

    def split(self, num: int | Sequence[int]) -> StatefulPRNG:
        """One generator whose key and counter have shape ``num``: children
        to be mapped over by ``vmap``."""
        return StatefulPRNG(_base_key=self.key(num),
                            _counter=_ref.new_ref(creation.zeros(num, dtype=int)))

    def spawn(self, n_children: int) -> list[StatefulPRNG]:
        """A list of ``n_children`` independent generators."""
        return [self.__class__(k, _ref.new_ref(0)) for k in self.key(n_children)]


tree_util.register_dataclass(StatefulPRNG)


def stateful_rng(seed: Any = None, *, impl: Any = None) -> StatefulPRNG:
    """A new ``StatefulPRNG`` seeded with ``seed`` (its counter at 0).

    Without a seed (allowed only outside transformations) the seed is
    fresh OS entropy, as NumPy's ``default_rng()`` draws it.
    """
    if seed is None:
        if type(current_trace()) is not EvalTrace:
            raise TypeError(
                "When used within transformed code, jax.experimental.random.stateful_rng()"
                " requires an explicit seed to be set.")
        entropy = np.random.SeedSequence().entropy
        assert isinstance(entropy, int)
        seed = np.int64(entropy & int(np.iinfo(np.int64).max))
    return StatefulPRNG(_base_key=keys.key(seed, impl=impl), _counter=_ref.new_ref(0))
