"""``jax.export``: a jit-staged program with its argument and result types,
its module and JAX's descriptive fields, callable again on arguments of
those types."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.api.jit import Compiled, Jitted, Traced, _module_text
from spec._src.core import tree_util
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.types import ArrayType
from spec._src.lowering.donation import compiled_program

# The calling convention JAX 0.12 exports with (its default version).
CALLING_CONVENTION_VERSION = 10

# The custom call a host callback lowers to (SPEC.md 6.1.5).
_HOST_CALLBACK_TARGET = "xla_ffi_python_cpu_callback"


class Exported:
    """A program exported for the CPU platform: its types, its module text,
    JAX's fields describing it, and a call on arguments of the exported
    types."""

    def __init__(self, traced: Traced, platforms: tuple[str, ...]) -> None:
        self._traced = traced
        text = _module_text(traced, "stablehlo", debug_info=True)
        if _HOST_CALLBACK_TARGET in text:
            raise NotImplementedError("serialization of host_callbacks is not yet implemented")
        self._text = text
        self._compiled: Compiled = traced.lower().compile()
        self.fun_name = traced.fun_name
        self.in_tree = traced.in_tree
        self.out_tree = traced.out_tree
        self.in_avals: tuple[ArrayType, ...] = tuple(traced.jaxpr.in_avals)
        self.out_avals: tuple[ArrayType, ...] = tuple(traced.jaxpr.out_avals)
        # JAX 0.12 no longer fills the HLO shardings: one None per value.
        self.in_shardings_hlo: tuple[None, ...] = (None,) * len(self.in_avals)
        self.out_shardings_hlo: tuple[None, ...] = (None,) * len(self.out_avals)
        self.nr_devices: int = traced._devices
        self.platforms = platforms
        # Host callbacks are refused above; no other effect survives lowering.
        self.ordered_effects: tuple[Any, ...] = ()
        self.unordered_effects: tuple[Any, ...] = ()
        self.disabled_safety_checks: tuple[Any, ...] = ()
        self.calling_convention_version = CALLING_CONVENTION_VERSION
        _, kept = compiled_program(traced.jaxpr, traced._jitted._keep_unused)
        self.module_kept_var_idx: tuple[int, ...] = tuple(sorted(kept))
        # (no shape polymorphism and one platform: no dimension variables)
        self.uses_global_constants = False

    def __repr__(self) -> str:
        return f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals})"

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    def mlir_module(self) -> str:
        """The module as JAX's export writes it: ``Lowered.as_text`` with
        locations and the ``jax.uses_shape_polymorphism = false`` module
        attribute."""
        head, sep, rest = self._text.partition(" attributes {")
        return head + sep + "jax.uses_shape_polymorphism = false, " + rest

    def in_shardings_jax(self, mesh: Any = None) -> tuple[None, ...]:
        """The arguments' shardings: None each for a one-device export (JAX's
        value there); those of a sharded export are not specified."""
        return self._shardings(self.in_avals)

    def out_shardings_jax(self, mesh: Any = None) -> tuple[None, ...]:
        return self._shardings(self.out_avals)

    def _shardings(self, avals: Sequence[ArrayType]) -> tuple[None, ...]:
        if self.nr_devices != 1:
            raise NotImplementedError(
                f"the shardings of an export over {self.nr_devices} devices are not specified")
        return (None,) * len(avals)

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


def _platforms(platforms: Any) -> tuple[str, ...]:
    """The export's platforms: spec lowers for the CPU only (a module for
    several platforms takes a platform index argument spec does not emit)."""
    if platforms is None:
        return ("cpu",)
    chosen = (platforms,) if isinstance(platforms, str) else tuple(platforms)
    if chosen != ("cpu",):
        raise NotImplementedError(
            f"exporting for platforms {chosen} is not specified; spec lowers for ('cpu',)")
    return chosen


def export(fun_jit: Any, *, platforms: Any = None) -> Callable[..., Exported]:
    """Export a ``jit``-wrapped function: the returned function takes
    argument types (or values) and gives the ``Exported`` program."""
    if not isinstance(fun_jit, Jitted):
        raise ValueError(
            f"Function to be exported must be the result of `jit` but is: {fun_jit!r}")
    chosen = _platforms(platforms)

    def do_export(*args_specs: Any, **kwargs_specs: Any) -> Exported:
        return Exported(fun_jit.trace(*args_specs, **kwargs_specs), chosen)

    return do_export
