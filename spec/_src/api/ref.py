"""``jax.ref``: mutable arrays (refs).

``new_ref(x)`` makes a ref holding a copy of ``x``. ``ref[idx]`` reads,
``ref[idx] = v`` writes, ``ref[idx] += v`` reads, adds and writes (Python's
augmented assignment is a get and a set, so it stages as get/add/swap).
``get``/``swap``/``addupdate``/``set`` are the functional forms, ``freeze``
gives the final contents as an array.

Eagerly a ref is a ``Ref``: a NumPy buffer that the primitives' impls update
in place. Traced, a ref is a tracer whose type is a ``RefType``; tracers
dispatch ``[]`` and ``[]=`` on that type (installed below).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from spec._src.core.hitypes import is_high
from spec._src.core.state_types import RefIndexError, RefType, indexer_tree, parse_index
from spec._src.core.array import Array
from spec._src.core.interpreter import (
    EvalTrace,
    hooks,
    JaxprTrace,
    Tracer,
    canonical_aval_of,
    current_trace,
)
from spec._src.lax.state import (addupdate_p, broadcast_to_p, empty_ref_p, free_ref_p, freeze_p,
                                 get_p, new_ref_p, swap_p)
from spec._src.core.types import Typed, is_float, is_int
from spec._src.lax import shaping as L
from spec._src.numpy.creation import asarray
# Array indexing on tracers (Tracer.__getitem__), installed by spec.numpy's
# indexing module: imported first so that it is the one the ref methods wrap.
from spec._src.numpy import indexing as _jnp_indexing  # noqa: F401

AbstractRef = RefType


class Ref(Typed):
    """An eager ref: a mutable buffer and its type ``Ref{dtype[shape]}``.

    A ref whose type is sharded over a mesh also records its placement
    (``_sharding``, over the concrete mesh, as Arrays do): the buffer holds the
    whole contents, and operations on the mesh's devices run on views of
    each device's block of it (spec/_src/interpreters/spmd.py), so their writes land here."""

    __slots__ = ("__weakref__", "_buf", "_sharding", "aval")
    _buf: np.ndarray
    aval: RefType
    _sharding: Any

    def __init__(self, buf: np.ndarray, aval: RefType, sharding: Any = None) -> None:
        self._buf = buf
        self.aval = aval
        self._sharding = sharding

    @property
    def _value(self) -> np.ndarray:
        """The buffer itself: impls given a ref write it in place."""
        return self._buf

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __getitem__(self, idx: Any) -> Any:
        return get(self, idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        set(self, idx, value)

    def __repr__(self) -> str:
        # The contents printed as an Array prints them, named Ref.
        snapshot = Array._from_checked(np.array(self._buf, copy=True), self.aval.inner_aval,
                                       "ref")
        return "Ref" + repr(snapshot)[len("Array"):]

    __str__ = __repr__


# ================================================================ functions


def _check_init(x: Any) -> None:
    if isinstance(x, (list, tuple, dict, str)) or x is None:
        raise TypeError(
            "Error interpreting argument to new_ref as a JAX value. The problematic value is "
            f"of type {type(x)} and was passed to new_ref at position 0.\n")


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None,
            pin: bool = False) -> Any:
    """A new ref holding a copy of ``init_val`` (weak types dropped)."""
    _check_init(init_val)
    return new_ref_p.bind(init_val, kind=kind, memory_space=memory_space, pin=pin)


def _ref_aval(ref: Any, fun: str) -> RefType:
    aval = getattr(ref, "aval", None)
    if type(aval) is not RefType:
        raise TypeError(f"{fun} requires a Ref, got {ref!r} of type {type(ref)}")
    assert isinstance(aval, RefType)
    return aval


def _indexing(ref: Any, idx: Any, fun: str) -> tuple[Any, list[Any]]:
    """The ``tree`` param and the integer operands of ``ref[idx]``."""
    aval = _ref_aval(ref, fun)
    if isinstance(idx, list):
        idx = tuple(idx)
    eager = type(current_trace()) is EvalTrace
    try:
        indexer, operands = parse_index(idx, aval.shape, canonical_aval_of, eager,
                                        _broadcast_to)
    except RefIndexError as err:
        raise NotImplementedError(f"{fun}: {err} are not supported by spec's refs yet") \
            from None
    trace = current_trace()
    if isinstance(trace, JaxprTrace):
        # JAX makes the indexer (capturing array indices) before it binds:
        # captured index arrays precede the ref among the constants.
        for x in operands:
            trace.to_atom(x)
    return indexer_tree(indexer), operands


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """An integer indexer broadcast to the indexers' common shape (JAX's
    ``broadcast_to`` primitive, as JAX stages it)."""
    return broadcast_to_p.bind(asarray(x), shape=tuple(shape))


def get(ref: Any, idx: Any = None) -> Any:
    """``ref[idx]``: a copy of (a part of) the ref's contents."""
    tree, operands = _indexing(ref, idx, "get")
    return get_p.bind(ref, *operands, tree=tree)


def swap(ref: Any, idx: Any, value: Any, _function_name: str = "ref_swap") -> Any:
    """Store ``value`` at ``ref[idx]``; returns what was there."""
    tree, operands = _indexing(ref, idx, "swap")
    return swap_p.bind(ref, _implicit_cast(_ref_aval(ref, "swap"), value), *operands, tree=tree)


def _implicit_cast(aval: RefType, value: Any) -> Any:
    """A written value as the ref's dtype, as JAX converts it: weak floats
    into float refs, any integer into integer refs (other mismatches are
    the typing rule's errors)."""
    try:
        v_aval = canonical_aval_of(value)
    except TypeError:
        return value
    if type(v_aval) is RefType:
        return value
    if (v_aval.weak_type and is_float(aval.dtype) and is_float(v_aval.dtype)) or (
            is_int(aval.dtype) and is_int(v_aval.dtype)):
        return L.convert_element_type(value, aval.dtype)
    return value


def set(ref: Any, idx: Any, value: Any) -> None:  # noqa: A001 (JAX's name)
    """``ref[idx] = value``."""
    swap(ref, idx, value)


def addupdate(ref: Any, idx: Any, x: Any) -> None:
    """``ref[idx] += x`` in one step (repeated integer indices accumulate)."""
    tree, operands = _indexing(ref, idx, "addupdate")
    addupdate_p.bind(ref, x, *operands, tree=tree)


def freeze(ref: Any) -> Any:
    """The ref's final contents as an (immutable) array."""
    _ref_aval(ref, "freeze")
    return freeze_p.bind(ref)


def empty_ref(ty: Any, memory_space: Any = None, pin: bool = False) -> Any:
    """A new ref whose contents have the type of ``ty`` (a ShapeDtypeStruct,
    an array or a tracer) and no value yet. Only a staged program makes one:
    eagerly it is JAX's NotImplementedError."""
    try:
        aval = canonical_aval_of(ty)
    except TypeError:
        raise TypeError(f"Argument '{ty}' of type {type(ty)} is not a valid JAX type") from None
    return empty_ref_p.bind(ty=aval, memory_space=memory_space, pin=pin)


def free_ref(ref: Any) -> tuple[()]:
    """End the life of ``ref`` (a staged ``free_ref``, which dead-code
    elimination keeps). As JAX, the operand is not checked to be a ref."""
    free_ref_p.bind(ref)
    return ()


# ================================================= traced refs: [] and []=


def _install_tracer_methods() -> None:
    """Tracers of ref type read and write the ref; other tracers keep array
    indexing (installed by spec.numpy, imported first so that it is the one
    wrapped) and refuse assignment as JAX arrays do."""
    array_getitem = builtins.getattr(Tracer, "__getitem__")

    def __getitem__(self: Tracer, idx: Any) -> Any:
        if type(self.aval) is RefType:
            return get(self, idx)
        if is_high(self.aval):  # forwarded to the hi type, as JAX's tracers do
            return getattr(self.aval, "_getitem")(self, idx)
        return array_getitem(self, idx)

    def __setitem__(self: Tracer, idx: Any, value: Any) -> None:
        if type(self.aval) is RefType:
            set(self, idx, value)
            return
        raise TypeError(
            "JAX arrays are immutable and do not support in-place item assignment. Instead "
            "of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

    builtins.setattr(Tracer, "__getitem__", __getitem__)
    builtins.setattr(Tracer, "__setitem__", __setitem__)


_install_tracer_methods()
hooks.eager_ref = Ref  # ref results of eager evaluation (new_ref), on a mesh or not

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref",
           "set", "swap"]
