"""``jax.export``: a jit-staged program with its argument and result types,
callable again on arguments of those types."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from spec._src.api.jit import Compiled, Jitted, Traced, _module_text
from spec._src.core import tree_util
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.types import ArrayType


class Exported:
    """A program exported for the CPU platform: its types, its module text,
    and a call on arguments of the exported types."""

    def __init__(self, traced: Traced) -> None:
        self._traced = traced
        self._compiled: Compiled = traced.lower().compile()
        self.fun_name = traced.fun_name
        self.in_tree = traced.in_tree
        self.out_tree = traced.out_tree
        self.in_avals: tuple[ArrayType, ...] = tuple(traced.jaxpr.in_avals)
        self.out_avals: tuple[ArrayType, ...] = tuple(traced.jaxpr.out_avals)
        self.nr_devices = 1
        self.platforms = ("cpu",)

    def __repr__(self) -> str:
        return f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals})"

    def mlir_module(self) -> str:
        return _module_text(self._traced, "stablehlo")

    def call(self, *args: Any, **kwargs: Any) -> Any:
        paths_leaves, _ = tree_util.tree_flatten_with_path((args, kwargs))
        for (path, leaf), want in zip(paths_leaves, self.in_avals):
            got = canonical_aval_of(leaf)
            for axis, (g, w) in enumerate(zip(got.shape, want.shape)):
                if g != w:
                    where = ["args", "kwargs"][path[0].idx] + tree_util.keystr(tuple(path[1:]))
                    raise ValueError(
                        f"Shape mismatch for {where}.shape[{axis}] (expected same constant): "
                        f"expected {tuple(want.shape)} and called with {tuple(got.shape)}")
        return self._compiled(*args, **kwargs)

    def serialize(self) -> bytes:
        if importlib.util.find_spec("flatbuffers") is None:
            raise ImportError("Please install 'flatbuffers' in order to use Exported "
                              "serialization")
        raise NotImplementedError("spec has no serialized form of an exported program")


def export(fun_jit: Any, *, platforms: Any = None) -> Callable[..., Exported]:
    """Export a ``jit``-wrapped function: the returned function takes
    argument types (or values) and gives the ``Exported`` program."""
    if not isinstance(fun_jit, Jitted):
        raise ValueError(
            f"Function to be exported must be the result of `jit` but is: {fun_jit!r}")

    def do_export(*args_specs: Any, **kwargs_specs: Any) -> Exported:
        return Exported(fun_jit.trace(*args_specs, **kwargs_specs))

    return do_export
