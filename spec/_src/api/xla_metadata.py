"""``jax.experimental.xla_metadata``: attaching XLA metadata to operations.

``xla_metadata_call`` / ``xla_metadata_call2`` stage a function as an
``xla_metadata_call`` equation whose call operation carries the metadata;
transformations keep it on every call they derive (see
``spec/_src/lax/xla_metadata.py``). ``set_xla_metadata(value, **kv)`` tags
the operation producing ``value``; ``set_xla_metadata(**kv)`` is a context
manager (or decorator) that tags every equation bound inside it, and is part
of jit's cache key.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from spec._src.core import source_info, tree_util
from spec._src.core.hitypes import HI_VALUE_TYPES
from spec._src.core.interpreter import (
    EvalTrace,
    Jaxpr,
    Tracer,
    canonical_aval_of,
    current_trace,
    trace_to_jaxpr,
)
from spec._src.interpreters.hi_lowering import has_hi_types
from spec._src.lax.xla_metadata import (
    MetadataKVs,
    attribute_text,
    canonical_metadata,
    xla_metadata_call_p,
    xla_metadata_value_p,
)

__all__ = ["fuse_limit", "must_fuse_call", "set_xla_metadata", "xla_metadata_call",
           "xla_metadata_call2"]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


# ============================================================ the call form

def xla_metadata_call(f: Callable[..., Any] | None = None, /, **meta: Any
                      ) -> Callable[..., Any]:
    """``f`` staged as one call whose operation carries ``meta`` (values
    str, bool, int or float, attached as strings); the tangent and
    backward-pass calls autodiff derives carry it too. Without ``f``, a
    decorator."""
    if f is None:
        return lambda g: _metadata_call(g, meta, "same")
    return _metadata_call(f, meta, "same")


def xla_metadata_call2(f: Any = None, /, metadata: Mapping[str, Any] | None = None, *,
                       ad_metadata: Any = "same") -> Callable[..., Any]:
    """``xla_metadata_call`` with the metadata as a dict; ``ad_metadata``
    tags the calls autodiff derives beyond the forward pass (the tangent and
    transposed calls): ``'same'`` (default) the metadata, ``'drop'``
    nothing, a dict that metadata. A dict as the first argument makes a
    decorator."""
    if isinstance(f, Mapping) and metadata is None:
        f, metadata = None, f
    if f is not None and not callable(f):
        raise TypeError(f"expected a callable to wrap, got {f!r}")
    if f is None:
        return lambda g: _metadata_call(g, metadata, ad_metadata)
    return _metadata_call(f, metadata, ad_metadata)


def must_fuse_call(identifier: str) -> Decorator:
    """A decorator: XLA must place all the operations of the decorated
    function in one fusion (metadata ``MUST_FUSE=identifier``)."""
    return xla_metadata_call(MUST_FUSE=identifier)


def _ad_metadata(ad_metadata: Any) -> MetadataKVs | str:
    if isinstance(ad_metadata, str) and ad_metadata == "same":
        return "same"
    if isinstance(ad_metadata, str) and ad_metadata == "drop":
        return ()
    if isinstance(ad_metadata, Mapping):
        return canonical_metadata(dict(ad_metadata), "xla_metadata_call")
    raise TypeError("ad_metadata must be 'same', 'drop', or a dict of metadata, got "
                    f"{ad_metadata!r}")


def _metadata_call(fun: Callable[..., Any], metadata: Any, ad_metadata: Any
                   ) -> Callable[..., Any]:
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {metadata!r}")
    kvs = canonical_metadata(dict(metadata or {}), "xla_metadata_call")
    ad_kvs = _ad_metadata(ad_metadata)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        out_trees: list[Any] = []

        def flat(*xs: Any) -> list[Any]:
            f_args, f_kwargs = tree_util.tree_unflatten(in_tree, list(xs))
            out_leaves, out_tree = tree_util.tree_flatten(fun(*f_args, **f_kwargs))
            out_trees.append(out_tree)
            return list(out_leaves)

        jaxpr, _ = trace_to_jaxpr(flat, [canonical_aval_of(x) for x in leaves])
        jaxpr, consts = _separate_traced_consts(jaxpr)
        bind: Any = xla_metadata_call_p.bind
        if HI_VALUE_TYPES and type(current_trace()) is EvalTrace and has_hi_types(jaxpr):
            bind = xla_metadata_call_p.to_lojax  # run on the hi values' components
        outs = bind(*consts, *leaves, jaxpr=jaxpr, xla_metadata=kvs, ad_metadata=ad_kvs)
        return tree_util.tree_unflatten(out_trees[0], list(outs))

    return wrapped


def _separate_traced_consts(jaxpr: Jaxpr) -> tuple[Jaxpr, list[Any]]:
    """A body closing over tracers of an enclosing trace takes all its
    constants as leading operands; one closing over concrete values only
    keeps them."""
    if not any(isinstance(c, Tracer) for c in jaxpr.consts):
        return jaxpr, []
    opened = Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                   jaxpr.effects)
    return opened, list(jaxpr.consts)


# ====================================================== the in-place form

class _TaggedFunction:
    """A function decorated with a metadata context: each call (and each
    call of a method such as a jitted function's ``lower``) runs inside it."""

    def __init__(self, fun: Callable[..., Any], context: XlaMetadataContextManager) -> None:
        # (the wrapped function's __dict__ first: a jitted function's own
        # private state must not replace this object's)
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._context = context

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._context:
            return self._fun(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._fun, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def within(*args: Any, **kwargs: Any) -> Any:
            with self._context:
                return attr(*args, **kwargs)

        return within


class XlaMetadataContextManager:
    """Within the block, every equation bound carries the metadata (a value
    of None removes the key); used on a function, a decorator."""

    def __init__(self, updates: dict[str, Any]) -> None:
        self.updates = {k: None if v is None else attribute_text(v) for k, v in updates.items()}
        self._exits: list[contextlib.ExitStack] = []

    def __enter__(self) -> None:
        stack = contextlib.ExitStack()
        if self.updates:
            stack.enter_context(source_info.xla_metadata(self.updates))
        self._exits.append(stack)

    def __exit__(self, *exc: Any) -> None:
        self._exits.pop().close()

    def __call__(self, fun: Callable[..., Any]) -> Any:
        return _TaggedFunction(fun, self)


def set_xla_metadata(x: Any = None, **kwargs: Any) -> Any:
    """With a value: the value, its producing operations tagged with
    ``kwargs`` (each leaf of a pytree; not carried into derivatives).
    Without: a context manager / decorator tagging every operation traced
    inside it."""
    if x is None:
        return XlaMetadataContextManager(kwargs)
    kvs = tuple(sorted(kwargs.items()))
    return tree_util.tree_map(lambda v: xla_metadata_value_p.bind(v, xla_metadata_kvs=kvs), x)


@contextlib.contextmanager
def fuse_limit() -> Iterator[None]:
    """Within the block, operations carry ``FUSE_LIMIT=true``: a boundary
    XLA does not fuse across."""
    with set_xla_metadata(FUSE_LIMIT=True):
        yield
