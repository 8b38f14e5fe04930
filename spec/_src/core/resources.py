"""Arrays too large to compile or to hold: SPEC.md section "Arrays that cannot exist".

A type may name any shape; tracing (``make_jaxpr``, ``eval_shape``, ``jit(f).lower``) never
looks at its size. Compiling a program does: XLA sizes every buffer in a 64-bit byte count,
so a type whose dimensions or byte size do not fit one is refused when the program (an eager
operation, a jit call, ``Lowered.compile``) is compiled. Running it allocates its results, so
a result larger than the machine's memory is refused when it would be allocated, as XLA's CPU
allocator refuses it. spec checks both where it compiles (a new eager dispatch, a jit
program's first evaluation), so NumPy never attempts, or lazily fakes, the allocation.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from spec._src.core.errors import JaxRuntimeError
from spec._src.core.types import ArrayType

# The largest byte count (and dimension) a compiled shape holds: a signed 64-bit integer.
MAX_EXTENT = 2**63 - 1


@functools.cache
def physical_memory() -> int | None:
    """Bytes of memory of this machine, or None where the system does not say."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


_FAST_LIMIT = min(physical_memory() or MAX_EXTENT, MAX_EXTENT)


def _itemsize(aval: ArrayType) -> int | None:
    try:
        return int(np.dtype(aval.dtype).itemsize)
    except TypeError:  # an extended dtype (PRNG keys): sized by its own rules
        return None


def _dims_text(shape: Sequence[int]) -> str:
    return ", ".join(str(d) for d in shape)


def check_compilable(aval: Any) -> None:
    """TypeError for a dimension beyond 64 bits, RuntimeError for a byte size beyond 64 bits
    (JAX's classes: the first comes from building the program's types, the second from XLA's
    shape size computation)."""
    if not isinstance(aval, ArrayType):
        return
    shape = aval.shape
    for d in shape:
        if isinstance(d, int) and d > MAX_EXTENT:
            raise TypeError(
                f"cannot compile an array of type {aval}: its dimension {d} does not fit "
                f"in a signed 64-bit integer (at most {MAX_EXTENT})")
    itemsize = _itemsize(aval)
    if itemsize is None or not all(isinstance(d, int) for d in shape):
        return
    size = math.prod(shape) * itemsize
    if size > MAX_EXTENT:
        raise RuntimeError(
            f"INVALID_ARGUMENT: overflow in static extent product: "
            f"dimensions=[{_dims_text(shape)}]: an array of type {aval} takes {size} bytes, "
            f"more than a signed 64-bit size holds ({MAX_EXTENT})")


def check_allocatable(avals: Iterable[Any]) -> None:
    """Each of ``avals``, results about to be allocated, compiles and fits in memory (the
    block of each device, for a result laid out over a mesh); JaxRuntimeError
    RESOURCE_EXHAUSTED (JAX's CPU allocator's) for one that does not."""
    for aval in avals:
        # The common case, inline (every new eager dispatch comes here): an unsharded array
        # of a NumPy dtype, of a size below both limits; a nonzero size bounds each dimension.
        if type(aval) is ArrayType and aval.sharding is None:
            try:
                if 0 < math.prod(aval.shape) * aval.dtype.itemsize <= _FAST_LIMIT:
                    continue
            except (TypeError, AttributeError):  # a dimension or dtype of another kind
                pass
        _check_one(aval)


def _check_one(aval: Any) -> None:
    check_compilable(aval)
    memory = physical_memory()
    if memory is None or not isinstance(aval, ArrayType):
        return
    itemsize = _itemsize(aval)
    if itemsize is None or not all(isinstance(d, int) for d in aval.shape):
        return
    size = math.prod(_block_shape(aval)) * itemsize
    if size > memory:
        raise JaxRuntimeError(
            f"RESOURCE_EXHAUSTED: Out of memory allocating {size} bytes. "
            f"(a result of type {aval}; this machine has {memory} bytes of memory)")


def _block_shape(aval: ArrayType) -> tuple[int, ...]:
    """The shape of the block one device holds: each device allocates its own."""
    sharding = aval.sharding
    if sharding is None or getattr(sharding.mesh, "empty", True):
        return tuple(aval.shape)
    try:
        return tuple(sharding.shard_shape(tuple(aval.shape)))
    except (ValueError, TypeError):  # a layout the sharding cannot tile: sized whole
        return tuple(aval.shape)


def _jaxprs_within(value: Any) -> Iterable[Any]:
    # Duck-typed so this module stays below the interpreter: a Jaxpr has ``eqns``, a closed
    # jaxpr holds one as ``jaxpr``; params hold them alone or in tuples (branches).
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(getattr(value, "jaxpr", None), "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _jaxprs_within(v)


def check_program(jaxpr: Any) -> None:
    """Every type a program computes, in nested programs too, compiles (``check_compilable``);
    run once per program, when it is first compiled."""
    stack = [jaxpr]
    while stack:
        j = stack.pop()
        for v in (*j.invars, *j.constvars):
            check_compilable(getattr(v, "aval", None))
        for eqn in j.eqns:
            for v in eqn.outvars:
                check_compilable(getattr(v, "aval", None))
            for p in eqn.params.values():
                stack.extend(_jaxprs_within(p))
