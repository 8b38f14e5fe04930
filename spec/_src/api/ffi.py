"""``jax.ffi``: calling foreign functions (SPEC.md, "FFI").

``register_ffi_target`` registers a handler compiled against XLA's FFI
headers (a ``PyCapsule`` of its address, made with ``pycapsule``) or a
Python callable; ``ffi_call`` returns a function that binds ``ffi_call`` on
its operands, with its keyword arguments as the handler's attributes.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.sharding import NamedSharding
from spec._src.core.types import ArrayType
from spec._src.lax import ffi_frame
from spec._src.lax import sharding_kit as SK
from spec._src.lax.ffi import VMAP_METHODS, ffi_call_p, hashable_attributes

Layout = Sequence[int] | None


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
    """Register ``fn`` as the FFI target ``name``: a ``PyCapsule`` holding a
    handler's address (``pycapsule``), a dict of execution stage name
    (``"instantiate"``, ``"prepare"``, ``"initialize"``, ``"execute"``) to
    capsule, or a Python callable ``fn(*arrays, **attributes) -> array(s)``
    (spec's addition: JAX accepts capsules only). ``api_version=0``
    registers a legacy custom-call target."""
    ffi_frame.register_target(name, fn, platform, api_version)


def pycapsule(funcptr: Any) -> Any:
    """A ``PyCapsule`` wrapping a function pointer loaded with ``ctypes``."""
    address = funcptr if isinstance(funcptr, int) else ctypes.cast(funcptr, ctypes.c_void_p).value
    if not address:
        raise ValueError("pycapsule needs a non-null function pointer")
    return ffi_frame.make_capsule(address)


def include_dir() -> str:
    """The directory of the XLA FFI headers that jaxlib ships
    (``xla/ffi/api/c_api.h``, ``api.h``, ``ffi.h``); jaxlib is located, not
    imported."""
    found = importlib.util.find_spec("jaxlib")
    locations = list(found.submodule_search_locations or []) if found is not None else []
    if not locations:
        raise RuntimeError("Cannot determine jaxlib directory: jaxlib, which ships the XLA FFI "
                           "headers, is not installed")
    return os.path.join(os.path.abspath(locations[0]), "include")


def register_ffi_type(name: str, type_registration: Mapping[str, Any],
                      platform: str = "cpu") -> None:
    """Register a user type for FFI handlers (their state objects): the
    ``type_id`` capsule points to the ``XLA_FFI_TypeId`` to fill in, the
    optional ``type_info`` capsule to its ``XLA_FFI_TypeInfo`` (deleter)."""
    id_ptr = ctypes.cast(ffi_frame.capsule_pointer(type_registration["type_id"]),
                         ctypes.POINTER(ctypes.c_int64))
    info = type_registration.get("type_info")
    deleter = None
    if info is not None:
        words = ctypes.cast(ffi_frame.capsule_pointer(info), ctypes.POINTER(ctypes.c_void_p))
        deleter = words[2]
    id_ptr[0] = ffi_frame.register_type_id(name, int(id_ptr[0]), deleter)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


_BATCH_PARTITIONABLE: set[str] = set()


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Recorded only: spec runs every FFI call gathered on a mesh (a target
    runs per shard inside ``shard_map``, as the FFI page shows)."""
    _BATCH_PARTITIONABLE.add(name)


# --------------------------------------------------------------- ffi_call


def _result_avals(results: Sequence[Any]) -> tuple[ArrayType, ...]:
    """The declared result types; explicit 64-bit dtypes are kept (JAX
    abstractifies them with ``explicit_x64_dtypes("allow")``)."""
    avals: list[ArrayType] = []
    for idx, r in enumerate(results):
        if isinstance(r, ArrayType):
            avals.append(r)
            continue
        if not hasattr(r, "shape") or not hasattr(r, "dtype"):
            raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                             f"attributes. Got {r} at position {idx}.")
        sharding = getattr(r, "sharding", None)
        avals.append(ArrayType(tuple(int(d) for d in r.shape), np.dtype(r.dtype),
                               bool(getattr(r, "weak_type", False)),
                               SK.abstract(sharding) if isinstance(sharding, NamedSharding)
                               else None))
    return tuple(avals)


def _default_layout(aval: ArrayType) -> tuple[int, ...]:
    """Row-major, minor-to-major (XLA's order)."""
    return tuple(reversed(range(aval.ndim)))


def _layouts(avals: Sequence[ArrayType], layouts: Sequence[Layout]) -> tuple[tuple[int, ...], ...]:
    """``ffi_call``'s layouts (major-to-minor) in XLA's minor-to-major order."""
    return tuple(_default_layout(a) if layout is None else tuple(int(d) for d in layout)[::-1]
                 for a, layout in zip(avals, layouts))


def _check_aliases(aliases: Mapping[int, int], n_in: int, in_avals: Sequence[ArrayType],
                   result_avals: Sequence[ArrayType], in_layouts: Sequence[Any],
                   out_layouts: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    checked: list[tuple[int, int]] = []
    for i_idx, o_idx in sorted(aliases.items()):
        i_idx, o_idx = int(i_idx), int(o_idx)
        if i_idx >= n_in:
            raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' with "
                             f"input index {i_idx} outside the range [0, {n_in}).")
        if o_idx >= len(result_avals):
            raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' with "
                             f"output index {o_idx} outside the range [0, {len(result_avals)}).")
        a, b = in_avals[i_idx], result_avals[o_idx]
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' "
                             f"referring to an input with abstract value {a} and an output "
                             f"with a different abstract value {b}.")
        if in_layouts[i_idx] != out_layouts[o_idx]:
            raise ValueError(f"input_output_aliases contains the mapping '{i_idx}:{o_idx}' "
                             f"referring to an input with layout {in_layouts[i_idx]} and an "
                             f"output with a different layout {out_layouts[o_idx]}.")
        checked.append((i_idx, o_idx))
    return tuple(checked)


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts: Sequence[Layout] | None = None,
             output_layouts: Layout | Sequence[Layout] | None = None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None) -> Callable[..., Any]:
    """A function calling the FFI target ``target_name``: its positional
    arguments are the operands, its keyword arguments the handler's
    attributes; it returns one array per ``result_shape_dtypes`` entry (a
    single array when that is a single shape/dtype object)."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    multiple = isinstance(result_shape_dtypes, Sequence)
    result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
    out_layouts_given: Sequence[Layout] | None = (
        output_layouts if multiple else (output_layouts,))  # type: ignore[assignment]
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        in_avals = [canonical_aval_of(x) for x in args]
        if input_layouts is None:
            in_layouts = tuple(_default_layout(a) for a in in_avals)
        else:
            if len(input_layouts) != len(in_avals):
                raise ValueError(f"The number of input arguments ({len(in_avals)}) must equal "
                                 f"the number of input layouts ({len(input_layouts)}).")
            in_layouts = _layouts(in_avals, input_layouts)
        if out_layouts_given is None:
            out_layouts = tuple(_default_layout(a) for a in result_avals)
        else:
            if len(out_layouts_given) != len(result_avals):
                raise ValueError(f"The number of outputs ({len(result_avals)}) must equal the "
                                 f"number of output layouts ({len(out_layouts_given)}).")
            out_layouts = _layouts(result_avals, out_layouts_given)
        aliases = _check_aliases(input_output_aliases or {}, len(args), in_avals, result_avals,
                                 in_layouts, out_layouts)
        attributes = hashable_attributes(kwargs)
        hash(attributes)  # a dict attribute's values must be hashable too (JAX: TypeError)
        results = ffi_call_p.bind(
            *args, result_avals=result_avals, vmap_method=vmap_method,
            target_name=target_name, has_side_effect=has_side_effect,
            input_layouts=in_layouts, output_layouts=out_layouts,
            input_output_aliases=aliases, custom_call_api_version=custom_call_api_version,
            legacy_backend_config=legacy_backend_config, attributes=attributes)
        if not multiple:
            return results[0]
        return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)

    return wrapped


# --------------------------------------------------------------- lowering


@dataclass(frozen=True)
class LoweringRuleContext:
    """What an FFI lowering rule is given besides the operands: their types
    and the results' types."""

    avals_in: Sequence[ArrayType]
    avals_out: Sequence[ArrayType]


def build_ffi_lowering_function(
        call_target_name: str, *, operand_layouts: Sequence[Layout] | None = None,
        result_layouts: Sequence[Layout] | None = None,
        backend_config: Mapping[str, Any] | str | None = None,
        skip_ffi_layout_processing: bool = False,
        **lowering_args: Any) -> Callable[..., list[np.ndarray]]:
    """A rule ``rule(ctx, *operands, **params)`` that runs the FFI target on
    NumPy operands, with ``params`` (and a dict ``backend_config``) as its
    attributes. spec has no compiler: where JAX's rule emits a custom call,
    this one performs it, which is what a primitive's impl needs (layouts
    are minor-to-major here, as in JAX's lowering functions)."""
    api_version = int(lowering_args.get("api_version", 4))

    def rule(ctx: LoweringRuleContext, *operands: np.ndarray, **params: Any) -> list[np.ndarray]:
        attrs = dict(backend_config) if isinstance(backend_config, Mapping) else {}
        attrs.update(params)
        if api_version < 4 and params:
            raise ValueError("The use of ffi_call attributes requires a custom call API version "
                             f"of at least 4; got api_version={api_version}.")
        spec = ffi_frame.CallSpec(
            call_target_name, sorted(attrs.items()),
            [(a.shape, a.dtype) for a in ctx.avals_out],
            [None] * len(operands) if operand_layouts is None else list(operand_layouts),
            [None] * len(ctx.avals_out) if result_layouts is None else list(result_layouts),
            tuple(dict(lowering_args.get("operand_output_aliases") or {}).items()),
            api_version, backend_config if isinstance(backend_config, str) else None)
        return ffi_frame.call(spec, operands)

    return rule


def ffi_lowering(call_target_name: str, *, operand_layouts: Sequence[Layout] | None = None,
                 result_layouts: Sequence[Layout] | None = None,
                 backend_config: Mapping[str, Any] | str | None = None,
                 skip_ffi_layout_processing: bool = False,
                 **lowering_args: Any) -> Callable[..., list[np.ndarray]]:
    """``build_ffi_lowering_function``'s rule (JAX returns the custom call's
    results; spec's rule returns the computed arrays)."""
    return build_ffi_lowering_function(
        call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
        backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
        **lowering_args)
