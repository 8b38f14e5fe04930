"""``jax.export``: a jit-staged program with its argument and result types,
its module and JAX's descriptive fields, callable again on arguments of
those types."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Sequence
from typing import Any

from spec._src.api.jit import Compiled, Jitted, Traced, _module_text, _placement
from spec._src.api.placement import devices
from spec._src.core import tree_util
from spec._src.core.interpreter import Jaxpr, canonical_aval_of, jaxprs_in_params
from spec._src.core.sharding import (
    AbstractDevice,
    AbstractMesh,
    Mesh,
    NamedSharding,
    PartitionSpec,
    SingleDeviceSharding,
)
from spec._src.core.types import ArrayType
from spec._src.lowering.donation import compiled_program

# The calling conventions JAX 0.12 reads; it exports with the newest.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
CALLING_CONVENTION_VERSION = maximum_supported_calling_convention_version

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
        # Several platforms: the module takes the platform's index first.
        self.uses_global_constants = len(platforms) > 1
        self._in_named_shardings = _argument_shardings(traced, self.module_kept_var_idx)
        self._out_named_shardings = _result_shardings(traced)

    def __repr__(self) -> str:
        return f"Exported(fun_name={self.fun_name!r}, in_avals={self.in_avals})"

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    def mlir_module(self) -> str:
        """The module as JAX's export writes it: ``Lowered.as_text`` with
        locations, attributes at their default values left out (as the
        portable artifact JAX serialises reads back), and the
        ``jax.uses_shape_polymorphism`` module attribute
        (true where a platform index is passed: a global constant); for
        several platforms ``main`` takes that index as its first argument."""
        text = _constants_hoisted(_defaults_dropped(self._text))
        if self.uses_global_constants:
            text = _with_platform_index(text)
        head, sep, rest = text.partition(" attributes {")
        flag = "true" if self.uses_global_constants else "false"
        return head + sep + f"jax.uses_shape_polymorphism = {flag}, " + rest

    def in_shardings_jax(self, mesh: Mesh | AbstractMesh | None = None
                         ) -> tuple[NamedSharding | None, ...]:
        """The arguments' shardings over the export's abstract mesh, or over
        ``mesh`` (of the same axes) to place arguments for ``call``; None
        for an argument whose placement the program left open."""
        return tuple(_on_mesh(s, mesh) for s in self._in_named_shardings)

    def out_shardings_jax(self, mesh: Mesh | AbstractMesh | None
                          ) -> tuple[NamedSharding | None, ...]:
        return tuple(_on_mesh(s, mesh) for s in self._out_named_shardings)

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
        _require_flatbuffers()
        raise NotImplementedError("spec has no serialized form of an exported program")


def _require_flatbuffers() -> None:
    """Serialized exports are flatbuffers (JAX's error without the package)."""
    if importlib.util.find_spec("flatbuffers") is None:
        raise ImportError("Please install 'flatbuffers' in order to use Exported serialization")


def deserialize(blob: bytearray) -> Exported:
    """An exported program from its serialized form."""
    _require_flatbuffers()
    raise NotImplementedError("spec has no serialized form of an exported program")


def default_export_platform() -> str:
    """The platform an export is for when none is named: the one spec
    lowers for."""
    return "cpu"


def _abstract(mesh: Mesh | AbstractMesh) -> AbstractMesh:
    """A mesh's axes with the kind of device the export is for (JAX records
    an exported sharding's mesh abstractly)."""
    if isinstance(mesh, Mesh):
        return mesh.abstract_mesh
    if mesh.abstract_device is not None or not mesh.axis_names:
        return mesh
    first = devices()[0]
    return AbstractMesh(mesh.axis_sizes, mesh.axis_names, mesh.axis_types,
                        abstract_device=AbstractDevice(first.device_kind, None, first.platform))


def _recorded(sharding: Any, ndim: int) -> NamedSharding | None:
    """A placement as an export records it: a NamedSharding over the
    abstract mesh (one device's: over the empty mesh, every dimension
    whole); None for no placement."""
    if isinstance(sharding, SingleDeviceSharding):
        return NamedSharding(AbstractMesh((), ()), PartitionSpec(*[None] * ndim),
                             memory_kind=sharding.memory_kind or "device")
    if isinstance(sharding, NamedSharding) and not sharding.mesh.empty:
        return NamedSharding(_abstract(sharding.mesh), sharding.spec,
                             memory_kind=sharding.memory_kind or "device")
    return None


def _argument_shardings(traced: Traced, kept: Sequence[int]) -> tuple[NamedSharding | None, ...]:
    """Each argument's placement: jit's ``in_shardings``, else the one the
    argument (an array or a ShapeDtypeStruct) is committed to; None for an
    uncommitted argument and for one the module leaves out."""
    leaves, placed = traced._split.leaves, traced._in_placed
    return tuple(
        _recorded(p or _placement(leaf), aval.ndim) if i in kept else None
        for i, (leaf, p, aval) in enumerate(zip(leaves, placed, traced.jaxpr.in_avals)))


def _result_shardings(traced: Traced) -> tuple[NamedSharding | None, ...]:
    """Each result's placement: jit's ``out_shardings``, else its type's
    sharding when the type names an Explicit mesh axis (an Auto mesh's
    results are placed by the partitioner: None)."""
    return tuple(_recorded(p, aval.ndim) if p is not None else _typed_sharding(aval)
                 for p, aval in zip(traced._out_placed, traced.jaxpr.out_avals))


def _typed_sharding(aval: ArrayType) -> NamedSharding | None:
    sharding = getattr(aval, "sharding", None)
    if sharding is None or sharding.mesh.empty or not sharding.mesh.explicit_axes:
        return None
    spec = sharding.spec
    if sharding.mesh.auto_axes:
        # Dimensions over no Explicit axis stay open to the partitioner.
        spec = spec.update(partitions=[PartitionSpec.UNCONSTRAINED if p is None else p
                                       for p in spec.partitions])
    return NamedSharding(_abstract(sharding.mesh), spec, memory_kind="device")


def _on_mesh(sharding: NamedSharding | None, mesh: Mesh | AbstractMesh | None
             ) -> NamedSharding | None:
    """``sharding`` over ``mesh`` in place of the export's abstract mesh; the
    meshes must agree in axis names, sizes and types."""
    if sharding is None or mesh is None:
        return sharding
    ours, theirs = sharding.mesh, mesh.abstract_mesh
    if (theirs.axis_sizes, theirs.axis_names, tuple(theirs.axis_types)) != (
            ours.axis_sizes, ours.axis_names, tuple(ours.axis_types)):
        raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used for "
                         f"export {ours}.")
    return sharding.update(mesh=mesh)


_FUNC = "\n  func.func "
_ARG = re.compile(r"%arg(\d+)\b")
_CALL = re.compile(r'(call @(?:"[^"]*"|[\w.$-]+)\()([^)]*)(\) : \()([^)]*)(\))')
_INDEX_TYPE = "tensor<i32>"


def _with_platform_index(text: str) -> str:
    """Each function with the platform index as a new first argument (its
    other arguments renumbered), passed on by every call."""
    head, *functions = text.split(_FUNC)
    located = " loc(unknown)" if 'loc("' in text else ""
    index = f'%arg0: {_INDEX_TYPE} {{jax.global_constant = "_platform_index"}}{located}'
    return _FUNC.join([head, *(_function_with_index(f, index) for f in functions)])


def _function_with_index(function: str, index: str) -> str:
    start = _argument_list(function)
    body = _ARG.sub(lambda m: f"%arg{int(m.group(1)) + 1}", function[start:])
    body = _CALL.sub(_call_with_index, body)
    return function[:start] + index + ("" if body.startswith(")") else ", ") + body


def _argument_list(function: str) -> int:
    """Where a function's argument list begins (after its possibly quoted
    name)."""
    at = function.index("@") + 1
    if function[at] == '"':
        at = function.index('"', at + 1) + 1
    return function.index("(", at) + 1


def _call_with_index(m: re.Match[str]) -> str:
    call, operands, colon, types, close = m.groups()
    return (call + ", ".join(["%arg0", *filter(None, [operands])]) + colon
            + ", ".join([_INDEX_TYPE, *filter(None, [types])]) + close)


# Attributes StableHLO's portable artifact leaves out when they hold their
# default value, by the op whose line carries them (an op's attributes are
# printed on its first line).
_ONES = r"array<i64(?:: 1(?:, 1)*)?>"
_WINDOW_DEFAULTS = [rf"window_strides = {_ONES}", rf"base_dilations = {_ONES}",
                    rf"window_dilations = {_ONES}", r"padding = dense<0> : tensor<\d+x2xi64>"]
_INDEX_DEFAULTS = [r"indices_are_sorted = false", r"unique_indices = false"]
_DEFAULTS: dict[str, list[str]] = {
    '"stablehlo.reduce_window"': _WINDOW_DEFAULTS,
    '"stablehlo.select_and_scatter"': _WINDOW_DEFAULTS,
    '"stablehlo.gather"': _INDEX_DEFAULTS,
    '"stablehlo.scatter"': _INDEX_DEFAULTS,
    "stablehlo.convolution": [r"stride = \[1(?:, 1)*\]", r"pad = \[\[0, 0\](?:, \[0, 0\])*\]",
                              r"lhs_dilate = \[1(?:, 1)*\]", r"rhs_dilate = \[1(?:, 1)*\]",
                              r"reverse = \[false(?:, false)*\]",
                              r"precision_config = \[#stablehlo<precision DEFAULT>"
                              r"(?:, #stablehlo<precision DEFAULT>)*\]"],
    "stablehlo.dot_general": [r"precision = \[DEFAULT(?:, DEFAULT)*\]"],
    "stablehlo.custom_call": [r'backend_config = ""'],
}
_OP_NAME = re.compile(r'^\s*(?:%[^=]*= )?("?stablehlo\.\w+"?)')


def _defaults_dropped(text: str) -> str:
    """``text`` with the attributes at their default values left out, as
    the module reads back from StableHLO's portable artifact."""
    return "\n".join(_line_defaults_dropped(line) for line in text.split("\n"))


def _line_defaults_dropped(line: str) -> str:
    op = _OP_NAME.match(line)
    for default in _DEFAULTS.get(op.group(1), []) if op else []:
        # The attribute goes with the ", " that separates it from the next
        # or, last in its list, from the one before; alone, its list empties.
        line = re.sub(rf"(?<=[{{ ]){default}, ", "", line, count=1)
        line = re.sub(rf", {default}(?=[}}>]| :)", "", line, count=1)
        line = re.sub(rf"{{{default}}}", "{}", line, count=1)
    # (an empty attribute dictionary is not printed; an empty window is)
    return re.sub(r"(?<!=) \{\}(?= :)", "", line, count=1)


_CONSTANT = re.compile(r"^\s*(%[\w.]+) = (stablehlo\.constant [^\n]*?)(?: loc\(.*\))?$")


def _constants_hoisted(text: str) -> str:
    """The module as JAX's export writes it: each function's constants,
    those of its loops' and branches' regions included, once per value and
    type, at the top of the function, the last first."""
    head, *functions = text.split(_FUNC)
    return _FUNC.join([head, *(_function_constants_hoisted(f) for f in functions)])


def _function_constants_hoisted(function: str) -> str:
    if "sdy.manual_computation" in function:
        return function  # (its body is a region of its own: not done)
    header, *lines = function.split("\n")
    first: dict[str, str] = {}  # constant (value and type) -> its first name
    renamed: dict[str, str] = {}
    kept = []
    for line in lines:
        m = _CONSTANT.match(line)
        if m is None:
            kept.append(line)
            continue
        name, constant = m.groups()
        if constant in first:
            renamed[name] = first[constant]
        else:
            first[constant] = name
    if not first:
        return function
    hoisted = [f"    {name} = {constant}" for constant, name in reversed(first.items())]
    body = "\n".join(kept)
    if renamed:
        body = re.sub(r"%[\w.]+(?![\w.])", lambda m: renamed.get(m.group(0), m.group(0)), body)
    return "\n".join([header, *hoisted, body])


def _platform_dependent(jaxpr: Jaxpr) -> str | None:
    """The name of an equation whose lowering depends on the platform, if
    the program has one."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "platform_index" or eqn.params.get("branches_platforms") is not None:
            return str(name)
        for sub in jaxprs_in_params(eqn.params):
            inner = _platform_dependent(sub)
            if inner is not None:
                return inner
    return None


def _platforms(platforms: Any) -> tuple[str, ...]:
    """The export's platforms, the CPU among them: spec lowers for the CPU,
    and the module it exports runs on every platform named (a platform
    without spec's lowering is refused)."""
    if platforms is None:
        return ("cpu",)
    chosen = (platforms,) if isinstance(platforms, str) else tuple(platforms)
    if "cpu" not in chosen:
        raise NotImplementedError(
            f"exporting for platforms {chosen} is not specified; spec lowers for 'cpu'")
    return chosen


def export(fun_jit: Any, *, platforms: Any = None) -> Callable[..., Exported]:
    """Export a ``jit``-wrapped function: the returned function takes
    argument types (or values) and gives the ``Exported`` program."""
    if not isinstance(fun_jit, Jitted):
        raise ValueError(
            f"Function to be exported must be the result of `jit` but is: {fun_jit!r}")
    chosen = _platforms(platforms)

    def do_export(*args_specs: Any, **kwargs_specs: Any) -> Exported:
        traced = fun_jit.trace(*args_specs, **kwargs_specs)
        dependent = _platform_dependent(traced.jaxpr) if len(chosen) > 1 else None
        if dependent is not None:
            raise NotImplementedError(
                f"exporting {dependent} for platforms {chosen} is not specified: its lowering "
                "chooses by the platform index, and spec lowers for 'cpu' only")
        return Exported(traced, chosen)

    return do_export
