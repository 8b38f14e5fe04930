"""XLA's FFI calling convention, implemented with ctypes (SPEC.md, "FFI").

A handler compiled against XLA's FFI headers (``xla/ffi/api/c_api.h``) is a
function ``XLA_FFI_Error* handler(XLA_FFI_CallFrame*)``. This module builds
what such a handler expects from its runtime: the call frame (arguments and
results as ``XLA_FFI_Buffer``s over NumPy memory, attributes in XLA's typed
encoding, sorted by name), the ``XLA_FFI_Api`` table of runtime functions a
handler calls back into (errors, state, scratch memory, a thread pool, ...),
and the metadata probe XLA runs when a handler is registered. It also holds
the registry of FFI targets, which may be plain Python callables as well.

Errors cross the boundary the way XLA surfaces them: a handler's error (its
code and message) becomes ``JaxRuntimeError("CODE: message")``.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spec._src.core.errors import JaxRuntimeError

c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_int64 = ctypes.c_int64

# The version of the C API this runtime implements (c_api.h's
# XLA_FFI_API_MAJOR / XLA_FFI_API_MINOR).
API_MAJOR = 0
API_MINOR = 5

ERROR_CODES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED")
INVALID_ARGUMENT = 3
NOT_FOUND = 5
FAILED_PRECONDITION = 9
UNIMPLEMENTED = 12
INTERNAL = 13

# XLA_FFI_DataType codes of the dtypes whose buffers are byte-addressed
# (sub-byte types would need XLA's packed layout, which spec does not use).
DATA_TYPES: dict[str, int] = {
    "bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7,
    "uint32": 8, "uint64": 9, "float16": 10, "float32": 11, "float64": 12, "complex64": 15,
    "bfloat16": 16, "complex128": 18, "float8_e5m2": 19, "float8_e4m3fn": 20,
    "float8_e4m3b11fnuz": 23, "float8_e5m2fnuz": 24, "float8_e4m3fnuz": 25,
    "float8_e4m3": 28, "float8_e3m4": 29, "float8_e8m0fnu": 33,
}

ARG_BUFFER = 1
RET_BUFFER = 1
ATTR_ARRAY, ATTR_DICTIONARY, ATTR_SCALAR, ATTR_STRING = 1, 2, 3, 4
STAGES = ("instantiate", "prepare", "initialize", "execute")
STAGE_CODES = {"instantiate": 0, "prepare": 1, "initialize": 2, "execute": 3}
METADATA_EXTENSION = 1


# ======================================================== the C structures


class ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p),
                ("major_version", c_int), ("minor_version", c_int)]


class ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_size_t)]


class Scalar(ctypes.Structure):
    _fields_ = [("dtype", c_int), ("value", c_void_p)]


class FfiArray(ctypes.Structure):
    _fields_ = [("dtype", c_int), ("size", c_size_t), ("data", c_void_p)]


class Buffer(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("dtype", c_int),
                ("data", c_void_p), ("rank", c_int64), ("dims", ctypes.POINTER(c_int64))]


class Args(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("size", c_int64),
                ("types", ctypes.POINTER(c_int)), ("args", ctypes.POINTER(c_void_p))]


class Rets(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("size", c_int64),
                ("types", ctypes.POINTER(c_int)), ("rets", ctypes.POINTER(c_void_p))]


class Attrs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("size", c_int64),
                ("types", ctypes.POINTER(c_int)),
                ("names", ctypes.POINTER(ctypes.POINTER(ByteSpan))),
                ("attrs", ctypes.POINTER(c_void_p))]


class CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("api", c_void_p),
                ("ctx", c_void_p), ("stage", c_int), ("args", Args), ("rets", Rets),
                ("attrs", Attrs), ("future", c_void_p)]


class InternalExtension(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("type", c_int), ("next", c_void_p)]


class Metadata(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("api_version", ApiVersion),
                ("traits", ctypes.c_uint32), ("state_type_id", c_int64)]


class MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", InternalExtension),
                ("metadata", ctypes.POINTER(Metadata))]


def _args_struct(name: str, *fields: tuple[str, Any]) -> type[ctypes.Structure]:
    """The ``XLA_FFI_<name>_Args`` struct: size and extension, then ``fields``."""
    return type(f"{name}_Args", (ctypes.Structure,), {
        "_fields_": [("struct_size", c_size_t), ("extension_start", c_void_p), *fields]})


ErrorCreateArgs = _args_struct("Error_Create", ("message", ctypes.c_char_p), ("errc", c_int))
ErrorGetDetailsArgs = _args_struct("Error_GetDetails", ("error", c_void_p),
                                   ("message", c_void_p), ("errc", c_int))
ErrorDestroyArgs = _args_struct("Error_Destroy", ("error", c_void_p))
HandlerRegisterArgs = _args_struct(
    "Handler_Register", ("name", ByteSpan), ("platform", ByteSpan),
    ("instantiate", c_void_p), ("prepare", c_void_p), ("initialize", c_void_p),
    ("execute", c_void_p), ("record", c_void_p), ("traits", ctypes.c_uint32))
StreamGetArgs = _args_struct("Stream_Get", ("ctx", c_void_p), ("stream", c_void_p))
TypeRegisterArgs = _args_struct("Type_Register", ("name", ByteSpan),
                                ("type_id", ctypes.POINTER(c_int64)), ("type_info", c_void_p))
ContextGetArgs = _args_struct("InvokeContext_Get", ("ctx", c_void_p),
                              ("type_id", ctypes.POINTER(c_int64)), ("data", c_void_p))
StateSetArgs = _args_struct("State_Set", ("ctx", c_void_p), ("stage", c_int),
                            ("type_id", ctypes.POINTER(c_int64)), ("state", c_void_p))
StateGetArgs = _args_struct("State_Get", ("ctx", c_void_p), ("stage", c_int),
                            ("type_id", ctypes.POINTER(c_int64)), ("state", c_void_p))
AllocateArgs = _args_struct("DeviceMemory_Allocate", ("ctx", c_void_p), ("size", c_size_t),
                            ("alignment", c_size_t), ("data", c_void_p))
FreeArgs = _args_struct("DeviceMemory_Free", ("ctx", c_void_p), ("size", c_size_t),
                        ("data", c_void_p))
ScheduleArgs = _args_struct("ThreadPool_Schedule", ("ctx", c_void_p), ("task", c_void_p),
                            ("data", c_void_p))
NumThreadsArgs = _args_struct("ThreadPool_NumThreads", ("ctx", c_void_p),
                              ("num_threads", ctypes.POINTER(c_int64)))
FutureCreateArgs = _args_struct("Future_Create", ("future", c_void_p))
FutureSetAvailableArgs = _args_struct("Future_SetAvailable", ("future", c_void_p))
FutureSetErrorArgs = _args_struct("Future_SetError", ("future", c_void_p), ("error", c_void_p))
RunIdGetArgs = _args_struct("RunId_Get", ("ctx", c_void_p), ("run_id", c_int64))
DeviceOrdinalGetArgs = _args_struct("DeviceOrdinal_Get", ("ctx", c_void_p),
                                    ("device_ordinal", ctypes.c_int32))
FindExtensionArgs = _args_struct("InvokeContext_FindExtension", ("ctx", c_void_p),
                                 ("extension_type", c_int64), ("extension", c_void_p))
CustomOptionsGetArgs = _args_struct("CustomOptions_Get", ("ctx", c_void_p),
                                    ("attrs", c_void_p))

# The runtime functions, in the order of XLA_FFI_Api's fields; the two that
# return nothing (error details and destruction) are marked.
API_FUNCTIONS = (
    "Error_Create", "Error_GetDetails", "Error_Destroy", "Handler_Register", "Stream_Get",
    "Type_Register", "InvokeContext_Get", "State_Set", "State_Get", "DeviceMemory_Allocate",
    "DeviceMemory_Free", "ThreadPool_Schedule", "ThreadPool_NumThreads", "Future_Create",
    "Future_SetAvailable", "Future_SetError", "RunId_Get", "DeviceOrdinal_Get",
    "InvokeContext_FindExtension", "CustomOptions_Get")
_RETURNS_NOTHING = frozenset({"Error_GetDetails", "Error_Destroy"})
_ERROR_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p)
_VOID_FN = ctypes.CFUNCTYPE(None, c_void_p)
HANDLER_FN = ctypes.CFUNCTYPE(c_void_p, ctypes.POINTER(CallFrame))
_TASK_FN = ctypes.CFUNCTYPE(None, c_void_p)
_DELETER_FN = ctypes.CFUNCTYPE(None, c_void_p)


class Api(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p),
                ("api_version", ApiVersion), ("internal_api", c_void_p),
                *[(f"XLA_FFI_{n}", _VOID_FN if n in _RETURNS_NOTHING else _ERROR_FN)
                  for n in API_FUNCTIONS]]


def struct_size(struct: type[ctypes.Structure], last_field: str) -> int:
    """``XLA_FFI_STRUCT_SIZE(struct, last_field)``: the size up to and
    including ``last_field`` (what a handler checks ``struct_size`` against)."""
    desc = getattr(struct, last_field)
    return int(desc.offset + desc.size)


CALL_FRAME_SIZE = struct_size(CallFrame, "attrs")
API_SIZE = struct_size(Api, "XLA_FFI_CustomOptions_Get")
METADATA_SIZE = struct_size(Metadata, "traits")
METADATA_EXTENSION_SIZE = struct_size(MetadataExtension, "metadata")


def _args_of(pointer: int, struct: type[ctypes.Structure]) -> Any:
    return ctypes.cast(pointer, ctypes.POINTER(struct)).contents


# =================================================== the runtime's state


@dataclass
class _Future:
    done: bool = False
    error: int | None = None


@dataclass
class _Context:
    """One call's ``XLA_FFI_InvokeContext``: its device, run id, the
    handler's state objects and scratch allocations."""

    device_ordinal: int
    run_id: int
    state: dict[int, int] = field(default_factory=dict)
    scratch: dict[int, Any] = field(default_factory=dict)
    options: Any = None


@dataclass
class _Runtime:
    api: Api | None = None
    errors: dict[int, tuple[int, Any]] = field(default_factory=dict)
    contexts: dict[int, _Context] = field(default_factory=dict)
    futures: dict[int, tuple[_Future, Any]] = field(default_factory=dict)
    type_ids: dict[str, int] = field(default_factory=dict)
    type_deleters: dict[int, int] = field(default_factory=dict)
    callbacks: list[Any] = field(default_factory=list)
    runs: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_RT = _Runtime()


def new_error(code: int, message: str) -> int:
    """An ``XLA_FFI_Error*``: the address of its NUL-terminated message."""
    buf = ctypes.create_string_buffer(message.encode("utf-8", "replace"))
    address = ctypes.addressof(buf)
    with _RT.lock:
        _RT.errors[address] = (code, buf)
    return address


def take_error(address: int) -> tuple[int, str]:
    """The code and message of a handler's error, which is destroyed (the
    runtime owns errors handlers return). An error spec did not create is
    read as XLA would not: reported as INTERNAL without touching it."""
    with _RT.lock:
        entry = _RT.errors.pop(address, None)
    if entry is None:
        return INTERNAL, "FFI handler returned an error object not created by XLA_FFI_Error_Create"
    code, buf = entry
    return code, bytes(buf.value).decode("utf-8", "replace")


def runtime_error(code: int, message: str) -> JaxRuntimeError:
    name = ERROR_CODES[code] if 0 <= code < len(ERROR_CODES) else "UNKNOWN"
    return JaxRuntimeError(f"{name}: {message}")


def _guarded(name: str, fn: Callable[[Any], int | None]) -> Callable[[int], int | None]:
    """A runtime function as C calls it: an exception in spec becomes an
    INTERNAL error returned to the handler, never an unwinding through C."""
    def call(pointer: int) -> int | None:
        try:
            return fn(pointer)
        except Exception as err:  # noqa: BLE001 (reported to the handler as its error)
            return None if name in _RETURNS_NOTHING else new_error(
                INTERNAL, f"XLA_FFI_{name} failed: {type(err).__name__}: {err}")
    return call


def _context(pointer: int | None) -> _Context:
    ctx = _RT.contexts.get(pointer or 0)
    if ctx is None:
        raise ValueError("unknown XLA_FFI_ExecutionContext")
    return ctx


def _error_create(p: int) -> int:
    a = _args_of(p, ErrorCreateArgs)
    message = a.message.decode("utf-8", "replace") if a.message else ""
    return new_error(int(a.errc), message)


def _error_get_details(p: int) -> None:
    a = _args_of(p, ErrorGetDetailsArgs)
    entry = _RT.errors.get(a.error or 0)
    if entry is not None:
        a.errc = entry[0]
        a.message = ctypes.addressof(entry[1])


def _error_destroy(p: int) -> None:
    a = _args_of(p, ErrorDestroyArgs)
    with _RT.lock:
        _RT.errors.pop(a.error or 0, None)


def _handler_register(p: int) -> int | None:
    a = _args_of(p, HandlerRegisterArgs)
    name = ctypes.string_at(a.name.ptr, a.name.len).decode()
    platform = ctypes.string_at(a.platform.ptr, a.platform.len).decode()
    bundle = {s: getattr(a, s) for s in STAGES if getattr(a, s)}
    try:
        register_target(name, bundle, platform)
    except JaxRuntimeError as err:
        return new_error(INVALID_ARGUMENT, str(err).split(": ", 1)[-1])
    return None


def _stream_get(p: int) -> int:
    return new_error(UNIMPLEMENTED, "spec's host platform has no device stream")


def register_type_id(name: str, type_id: int, deleter: int | None) -> int:
    """XLA's type registration: a name gets a unique id (the one asked for,
    or a new one when ``type_id`` is 0); the same name keeps its id."""
    with _RT.lock:
        known = _RT.type_ids.get(name)
        if known is not None:
            if type_id not in (0, known):
                raise runtime_error(INVALID_ARGUMENT,
                                    f"Type name {name} already registered with type id {known}")
            return known
        if type_id == 0:
            type_id = max([*_RT.type_ids.values(), 0]) + 1
        elif type_id in _RT.type_ids.values():
            raise runtime_error(INVALID_ARGUMENT, f"Type id {type_id} already registered")
        _RT.type_ids[name] = type_id
        if deleter:
            _RT.type_deleters[type_id] = deleter
        return type_id


def _type_info_deleter(type_info: int | None) -> int | None:
    if not type_info:
        return None
    # XLA_FFI_TypeInfo: struct_size, extension_start, deleter.
    words = ctypes.cast(type_info, ctypes.POINTER(c_void_p))
    return words[2] or None


def _type_register(p: int) -> int | None:
    a = _args_of(p, TypeRegisterArgs)
    name = ctypes.string_at(a.name.ptr, a.name.len).decode()
    try:
        a.type_id[0] = register_type_id(name, int(a.type_id[0]), _type_info_deleter(a.type_info))
    except JaxRuntimeError as err:
        return new_error(INVALID_ARGUMENT, str(err).split(": ", 1)[-1])
    return None


def _context_get(p: int) -> int:
    return new_error(NOT_FOUND, "spec's FFI calls carry no user data in their context")


def _state_set(p: int) -> int | None:
    a = _args_of(p, StateSetArgs)
    ctx = _context(a.ctx)
    type_id = int(a.type_id[0])
    if type_id in ctx.state:
        return new_error(FAILED_PRECONDITION, "State is already set")
    ctx.state[type_id] = a.state or 0
    return None


def _state_get(p: int) -> int | None:
    a = _args_of(p, StateGetArgs)
    ctx = _context(a.ctx)
    type_id = int(a.type_id[0])
    if type_id not in ctx.state:
        return new_error(NOT_FOUND, f"State of type {type_id} is not set")
    a.state = ctx.state[type_id]
    return None


def _allocate(p: int) -> int | None:
    a = _args_of(p, AllocateArgs)
    ctx = _context(a.ctx)
    alignment = max(int(a.alignment), 1)
    raw = ctypes.create_string_buffer(int(a.size) + alignment)
    address = ctypes.addressof(raw)
    aligned = address + (-address % alignment)
    ctx.scratch[aligned] = raw
    a.data = aligned
    return None


def _free(p: int) -> int | None:
    a = _args_of(p, FreeArgs)
    _context(a.ctx).scratch.pop(a.data or 0, None)
    return None


def _schedule(p: int) -> int | None:
    # spec's thread pool is the calling thread: a task runs to completion
    # when it is scheduled (a handler waiting for its tasks finds them done).
    a = _args_of(p, ScheduleArgs)
    _TASK_FN(a.task)(a.data)
    return None


def _num_threads(p: int) -> int | None:
    a = _args_of(p, NumThreadsArgs)
    a.num_threads[0] = 1
    return None


def _future_create(p: int) -> int | None:
    a = _args_of(p, FutureCreateArgs)
    token = ctypes.create_string_buffer(1)
    address = ctypes.addressof(token)
    with _RT.lock:
        _RT.futures[address] = (_Future(), token)
    a.future = address
    return None


def _future_of(address: int | None) -> _Future:
    entry = _RT.futures.get(address or 0)
    if entry is None:
        raise ValueError("unknown XLA_FFI_Future")
    return entry[0]


def _future_set_available(p: int) -> int | None:
    _future_of(_args_of(p, FutureSetAvailableArgs).future).done = True
    return None


def _future_set_error(p: int) -> int | None:
    a = _args_of(p, FutureSetErrorArgs)
    future = _future_of(a.future)
    future.error = a.error or None
    future.done = True
    return None


def _run_id_get(p: int) -> int | None:
    a = _args_of(p, RunIdGetArgs)
    a.run_id = _context(a.ctx).run_id
    return None


def _device_ordinal_get(p: int) -> int | None:
    a = _args_of(p, DeviceOrdinalGetArgs)
    a.device_ordinal = _context(a.ctx).device_ordinal
    return None


def _find_extension(p: int) -> int | None:
    _args_of(p, FindExtensionArgs).extension = None  # spec's contexts carry no extensions
    return None


def _custom_options_get(p: int) -> int | None:
    a = _args_of(p, CustomOptionsGetArgs)
    ctx = _context(a.ctx)
    if ctx.options is None:
        ctx.options = Attrs(ctypes.sizeof(Attrs), None, 0, None, None, None)
    a.attrs = ctypes.addressof(ctx.options)
    return None


_IMPLEMENTATIONS: dict[str, Callable[[Any], int | None]] = {
    "Error_Create": _error_create, "Error_GetDetails": _error_get_details,
    "Error_Destroy": _error_destroy, "Handler_Register": _handler_register,
    "Stream_Get": _stream_get, "Type_Register": _type_register,
    "InvokeContext_Get": _context_get, "State_Set": _state_set, "State_Get": _state_get,
    "DeviceMemory_Allocate": _allocate, "DeviceMemory_Free": _free,
    "ThreadPool_Schedule": _schedule, "ThreadPool_NumThreads": _num_threads,
    "Future_Create": _future_create, "Future_SetAvailable": _future_set_available,
    "Future_SetError": _future_set_error, "RunId_Get": _run_id_get,
    "DeviceOrdinal_Get": _device_ordinal_get, "InvokeContext_FindExtension": _find_extension,
    "CustomOptions_Get": _custom_options_get,
}


def api() -> Api:
    """The ``XLA_FFI_Api`` table handed to every handler (built once)."""
    if _RT.api is None:
        fns = []
        for name in API_FUNCTIONS:
            kind = _VOID_FN if name in _RETURNS_NOTHING else _ERROR_FN
            fns.append(kind(_guarded(name, _IMPLEMENTATIONS[name])))
        _RT.callbacks.extend(fns)
        version = ApiVersion(ctypes.sizeof(ApiVersion), None, API_MAJOR, API_MINOR)
        _RT.api = Api(API_SIZE, None, version, None, *fns)
    return _RT.api


# ============================================================= targets


@dataclass(frozen=True)
class CTarget:
    """A handler bundle compiled against XLA's FFI headers: the address of
    each stage's handler, and what the metadata probe reported."""

    bundle: Mapping[str, int]
    traits: int = 0
    state_type_id: int = 0
    api_version: tuple[int, int] | None = None


@dataclass(frozen=True)
class PyTarget:
    """A Python callable as a target: ``fn(*arrays, **attributes)`` returns
    the result array (or a sequence of them, one per declared result)."""

    fn: Callable[..., Any]


Target = CTarget | PyTarget
_TARGETS: dict[tuple[str, str], Target] = {}
_LEGACY_TARGETS: dict[tuple[str, str], int] = {}

# XLA's canonical platform names (``register_ffi_target``'s platform is
# case-insensitive); spec executes on the host.
_CANONICAL_PLATFORMS = {"cpu": "host", "host": "host", "gpu": "cuda", "cuda": "cuda",
                        "rocm": "rocm"}
_PLATFORM_NAMES = {"host": "Host", "cuda": "CUDA", "rocm": "ROCM"}
HOST = "host"


def canonical_platform(platform: str) -> str:
    key = platform.lower()
    return _CANONICAL_PLATFORMS.get(key, key)


def platform_text(canonical: str) -> str:
    """``Host (canonical host)``, as XLA's messages name a platform."""
    return f"{_PLATFORM_NAMES.get(canonical, canonical)} (canonical {canonical})"


def capsule_pointer(capsule: object) -> int:
    """The pointer a ``PyCapsule`` holds."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return int(get_pointer(capsule, get_name(capsule)) or 0)


def make_capsule(address: int) -> object:
    """A ``PyCapsule`` (no name, no destructor) holding ``address``."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
    capsule: object = new(address, None, None)
    return capsule


def is_capsule(obj: object) -> bool:
    return type(obj).__name__ == "PyCapsule"


def register_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1) -> None:
    """Register ``fn`` as FFI target ``name`` on ``platform``: a capsule of a
    handler, a dict of stage name -> capsule (``execute`` required), an
    address-per-stage mapping (from ``XLA_FFI_Handler_Register``), or a
    Python callable. ``api_version=0`` registers a legacy custom-call target."""
    canonical = canonical_platform(platform)
    if api_version == 0:
        if not is_capsule(fn):
            raise runtime_error(INVALID_ARGUMENT,
                                "Unsupported custom call target type for api_version=0")
        _LEGACY_TARGETS[(name, canonical)] = capsule_pointer(fn)
        return
    if api_version != 1:
        raise runtime_error(UNIMPLEMENTED, f"API version {api_version} is not supported by "
                            "RegisterCustomCallTarget. Supported versions are 0 and 1.")
    target = _target_of(name, fn, canonical)
    known = _TARGETS.get((name, canonical))
    if known is not None:
        if _same_target(known, target):
            return
        raise runtime_error(
            INVALID_ARGUMENT, f"Duplicate FFI handler registration for {name} on platform "
            f"{platform_text(canonical)} with different bundle addresses")
    _TARGETS[(name, canonical)] = target


def _same_target(a: Target, b: Target) -> bool:
    if isinstance(a, CTarget) and isinstance(b, CTarget):
        return dict(a.bundle) == dict(b.bundle)
    return isinstance(a, PyTarget) and isinstance(b, PyTarget) and a.fn is b.fn


def _target_of(name: str, fn: Any, canonical: str) -> Target:
    if is_capsule(fn):
        bundle = {"execute": capsule_pointer(fn)}
    elif isinstance(fn, Mapping):
        bundle = {s: (capsule_pointer(fn[s]) if is_capsule(fn[s]) else int(fn[s]))
                  for s in STAGES if s in fn}
        if not bundle.get("execute"):
            raise runtime_error(
                INVALID_ARGUMENT, f"FFI handler for {name} on a platform "
                f"{_PLATFORM_NAMES.get(canonical, canonical)} must provide an execute "
                "implementation")
    elif callable(fn):
        return PyTarget(fn)
    else:
        raise runtime_error(INVALID_ARGUMENT, "Unsupported custom call target type for "
                            "api_version=1")
    traits, state_type_id, version = _probe_metadata(name, bundle)
    return CTarget(bundle, traits, state_type_id, version)


def _probe_metadata(name: str, bundle: Mapping[str, int]
                    ) -> tuple[int, int, tuple[int, int] | None]:
    """XLA's registration-time probe: each handler is called with a call
    frame carrying the metadata extension and fills in the API version it
    was compiled against, its traits and its state type. A version this
    runtime cannot serve is refused; a handler that cannot answer the probe
    (not built with XLA's binding macros) is registered without metadata."""
    traits, state_type_id = 0, 0
    api_version: tuple[int, int] | None = None
    for stage, address in bundle.items():
        metadata = Metadata(METADATA_SIZE)
        extension = MetadataExtension(
            InternalExtension(ctypes.sizeof(MetadataExtension), METADATA_EXTENSION, None),
            ctypes.pointer(metadata))
        frame = CallFrame(CALL_FRAME_SIZE, ctypes.addressof(extension),
                          ctypes.addressof(api()), None, STAGE_CODES[stage])
        error = HANDLER_FN(address)(ctypes.byref(frame))
        if error:
            take_error(error)
            continue
        version = metadata.api_version
        if version.major_version != API_MAJOR or version.minor_version > API_MINOR:
            raise runtime_error(
                INVALID_ARGUMENT,
                f"FFI handler registration for {name} failed because the handler's API "
                f"version ({version.major_version}.{version.minor_version}) is incompatible "
                f"with the framework's API version ({API_MAJOR}.{API_MINOR})")
        traits |= int(metadata.traits)
        state_type_id = state_type_id or int(metadata.state_type_id)
        api_version = (int(version.major_version), int(version.minor_version))
    return traits, state_type_id, api_version


def lookup(name: str, platform: str = HOST) -> Target:
    target = _TARGETS.get((name, platform))
    if target is None:
        raise runtime_error(NOT_FOUND, f"No FFI handler registered for {name} on a platform "
                            f"{platform_text(platform)}")
    return target


def lookup_legacy(name: str, platform: str = HOST) -> int:
    address = _LEGACY_TARGETS.get((name, platform))
    if address is None:
        raise runtime_error(NOT_FOUND, f"No registered implementation for untyped custom call "
                            f"to {name} for {_PLATFORM_NAMES.get(platform, platform)}")
    return address


# ========================================================== attributes


def dtype_code(dtype: np.dtype[Any]) -> int:
    code = DATA_TYPES.get(dtype.name)
    if code is None:
        raise runtime_error(UNIMPLEMENTED, f"spec's FFI has no buffer encoding for {dtype.name}")
    return code


_PYTHON_SCALARS: tuple[tuple[type, Any], ...] = (
    (bool, np.bool_), (int, np.int64), (float, np.float64), (complex, np.complex128))


def check_attribute(name: str, value: Any) -> None:
    """Raise where JAX's lowering finds no attribute handler for ``value``."""
    if isinstance(value, (str, bytes, np.ndarray, np.generic)):
        return
    if isinstance(value, Mapping):
        for v in value.values():
            check_attribute(name, v)
        return
    if isinstance(value, (tuple, list)):
        for v in value:
            check_attribute(name, v)
        return
    if any(isinstance(value, t) for t, _ in _PYTHON_SCALARS):
        return
    raise TypeError(f"No attribute handler defined for type: {type(value)}")


def _encode_value(name: str, value: Any, keep: list[Any]) -> tuple[int, int]:
    """(XLA_FFI_AttrType, address of its encoding) for one attribute."""
    if isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        text = ctypes.create_string_buffer(data, len(data) + 1)
        span = ByteSpan(ctypes.addressof(text), len(data))
        keep += [text, span]
        return ATTR_STRING, ctypes.addressof(span)
    if isinstance(value, Mapping):
        attrs = encode_attrs(sorted(value.items()), keep)
        return ATTR_DICTIONARY, ctypes.addressof(attrs)
    if isinstance(value, np.ndarray):
        flat = np.ascontiguousarray(value).reshape(-1)
        array = FfiArray(dtype_code(flat.dtype), flat.size, flat.ctypes.data)
        keep += [flat, array]
        return ATTR_ARRAY, ctypes.addressof(array)
    scalar = _scalar_array(value)
    if scalar is None:
        raise runtime_error(INVALID_ARGUMENT, f"Unsupported attribute type for attribute: {name}")
    encoded = Scalar(dtype_code(scalar.dtype), scalar.ctypes.data)
    keep += [scalar, encoded]
    return ATTR_SCALAR, ctypes.addressof(encoded)


def _scalar_array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.generic):
        return np.array([value])
    for python_type, dtype in _PYTHON_SCALARS:
        if isinstance(value, python_type):
            return np.array([value], dtype=dtype)
    return None


def encode_attrs(items: Sequence[tuple[str, Any]], keep: list[Any]) -> Attrs:
    """``XLA_FFI_Attrs`` for ``items`` (already sorted by name, as XLA
    passes them); everything it points to is appended to ``keep``."""
    n = len(items)
    types = (c_int * max(n, 1))()
    names = (ctypes.POINTER(ByteSpan) * max(n, 1))()
    values = (c_void_p * max(n, 1))()
    for i, (name, value) in enumerate(items):
        raw = name.encode()
        text = ctypes.create_string_buffer(raw, len(raw) + 1)
        span = ByteSpan(ctypes.addressof(text), len(raw))
        keep += [text, span]
        names[i] = ctypes.pointer(span)
        types[i], values[i] = _encode_value(name, value, keep)
    attrs = Attrs(ctypes.sizeof(Attrs), None, n, types, names, values)
    keep += [types, names, values, attrs]
    return attrs


# ============================================================== calls


@dataclass(frozen=True)
class CallSpec:
    """What one FFI call passes: the target, its operands' and results'
    physical layouts (minor-to-major), aliases (input -> output index) and
    attributes (sorted by name)."""

    target_name: str
    attributes: Sequence[tuple[str, Any]]
    result_types: Sequence[tuple[tuple[int, ...], np.dtype[Any]]]
    input_layouts: Sequence[Sequence[int] | None]
    output_layouts: Sequence[Sequence[int] | None]
    aliases: Sequence[tuple[int, int]] = ()
    api_version: int = 4
    backend_config: str | None = None
    device_ordinal: int = 0


def _major_to_minor(layout: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if layout is None:
        return tuple(range(ndim))
    order = tuple(reversed([int(d) for d in layout]))
    if sorted(order) != list(range(ndim)):
        raise runtime_error(INVALID_ARGUMENT, f"layout {tuple(layout)} is not a permutation of "
                            f"the dimensions of a rank-{ndim} array")
    return order


def _physical(x: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """A fresh, C-contiguous copy of ``x`` whose memory order is ``order``."""
    return np.array(np.transpose(x, order), order="C", copy=True)


def _logical(phys: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    # (np.asarray, not np.ascontiguousarray, which makes a rank-0 result rank 1)
    return np.asarray(np.transpose(phys, np.argsort(order)), order="C")


def call(spec: CallSpec, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run the FFI target ``spec.target_name`` on ``args``: the results, of
    exactly ``spec.result_types``; a target's failure raises JaxRuntimeError."""
    if spec.api_version < 4:
        return _call_legacy(spec, args)
    target = lookup(spec.target_name)
    if isinstance(target, PyTarget):
        return _call_python(spec, target, args)
    return _call_c(spec, target, args)


def _result_arrays(spec: CallSpec, ins: list[np.ndarray],
                   in_orders: list[tuple[int, ...]]) -> tuple[list[np.ndarray],
                                                               list[tuple[int, ...]]]:
    """The result buffers (aliased ones are their input's buffer) and their
    memory orders."""
    aliased = {o: i for i, o in spec.aliases}
    outs, orders = [], []
    for k, (shape, dtype) in enumerate(spec.result_types):
        if k in aliased:
            outs.append(ins[aliased[k]])
            orders.append(in_orders[aliased[k]])
            continue
        order = _major_to_minor(spec.output_layouts[k] if k < len(spec.output_layouts)
                                else None, len(shape))
        outs.append(np.zeros([shape[d] for d in order], dtype=dtype))
        orders.append(order)
    return outs, orders


def _call_c(spec: CallSpec, target: CTarget, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    keep: list[Any] = []
    in_orders = [_major_to_minor(spec.input_layouts[i] if i < len(spec.input_layouts)
                                 else None, np.ndim(a)) for i, a in enumerate(args)]
    ins = [_physical(np.asarray(a), o) for a, o in zip(args, in_orders)]
    outs, out_orders = _result_arrays(spec, ins, in_orders)
    # Physical buffers carry the logical dimensions (XLA passes a buffer's
    # shape; its layout is the one the call asked for).
    in_views = [_with_logical_dims(b, o) for b, o in zip(ins, in_orders)]
    out_views = [_with_logical_dims(b, o) for b, o in zip(outs, out_orders)]
    attrs = encode_attrs(list(spec.attributes), keep)
    arg_types = (c_int * max(len(ins), 1))(*([ARG_BUFFER] * len(ins)))
    ret_types = (c_int * max(len(outs), 1))(*([RET_BUFFER] * len(outs)))
    arg_ptrs = _buffers_with_dims(in_views, keep)
    ret_ptrs = _buffers_with_dims(out_views, keep)
    keep += [arg_types, ret_types]
    with _RT.lock:
        _RT.runs += 1
        run_id = _RT.runs
    token = ctypes.create_string_buffer(1)
    ctx = _Context(spec.device_ordinal, run_id)
    _RT.contexts[ctypes.addressof(token)] = ctx
    try:
        for stage in STAGES:
            address = target.bundle.get(stage)
            if not address:
                continue
            full = stage != "instantiate"  # instantiation sees the attributes only
            frame = CallFrame(
                CALL_FRAME_SIZE, None, ctypes.addressof(api()), ctypes.addressof(token),
                STAGE_CODES[stage],
                Args(ctypes.sizeof(Args), None, len(ins) if full else 0, arg_types, arg_ptrs),
                Rets(ctypes.sizeof(Rets), None, len(outs) if full else 0, ret_types, ret_ptrs),
                attrs, None)
            error = HANDLER_FN(address)(ctypes.byref(frame))
            if error:
                raise runtime_error(*take_error(error))
            if frame.future:
                _await(frame.future)
    finally:
        _release(ctx)
        del _RT.contexts[ctypes.addressof(token)]
    return [_logical(b, o) for b, o in zip(outs, out_orders)]


def _with_logical_dims(buf: np.ndarray, order: tuple[int, ...]
                       ) -> tuple[np.ndarray, tuple[int, ...]]:
    logical = tuple(buf.shape[list(order).index(d)] for d in range(buf.ndim))
    return buf, logical


def _buffers_with_dims(views: Sequence[tuple[np.ndarray, tuple[int, ...]]],
                       keep: list[Any]) -> Any:
    pointers = (c_void_p * max(len(views), 1))()
    for i, (a, dims_of) in enumerate(views):
        dims = (c_int64 * max(len(dims_of), 1))(*dims_of)
        buf = Buffer(ctypes.sizeof(Buffer), None, dtype_code(a.dtype), a.ctypes.data,
                     len(dims_of), dims)
        keep += [dims, buf]
        pointers[i] = ctypes.addressof(buf)
    keep.append(pointers)
    return pointers


def _await(future_address: int) -> None:
    """Wait for an asynchronous handler's future (its worker threads
    complete it), then surface its error, if any."""
    future = _future_of(future_address)
    while not future.done:
        time.sleep(0.0005)
    with _RT.lock:
        _RT.futures.pop(future_address, None)
    if future.error:
        raise runtime_error(*take_error(future.error))


def _release(ctx: _Context) -> None:
    """End of a call: state objects go to their type's deleter, scratch is freed."""
    for type_id, state in ctx.state.items():
        deleter = _RT.type_deleters.get(type_id)
        if deleter and state:
            _DELETER_FN(deleter)(state)
    ctx.state.clear()
    ctx.scratch.clear()


def _call_python(spec: CallSpec, target: PyTarget, args: Sequence[np.ndarray]
                 ) -> list[np.ndarray]:
    ins = []
    for a in args:
        view = np.asarray(a).view()
        view.flags.writeable = False
        ins.append(view)
    try:
        out = target.fn(*ins, **dict(spec.attributes))
    except Exception as err:
        raise runtime_error(INTERNAL, f"FFI target {spec.target_name} raised "
                            f"{type(err).__name__}: {err}") from err
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    declared = spec.result_types
    if len(results) != len(declared):
        raise runtime_error(INVALID_ARGUMENT, f"FFI target {spec.target_name} returned "
                            f"{len(results)} results; the call declares {len(declared)}")
    checked = []
    for k, (r, (shape, dtype)) in enumerate(zip(results, declared)):
        value = np.asarray(r)
        if value.shape != tuple(shape) or value.dtype != dtype:
            raise runtime_error(
                INVALID_ARGUMENT, f"FFI target {spec.target_name} returned result {k} of shape "
                f"{value.shape} and dtype {value.dtype}; the call declares shape "
                f"{tuple(shape)} and dtype {np.dtype(dtype)}")
        checked.append(np.array(value, copy=True))
    return checked


def _call_legacy(spec: CallSpec, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """XLA's CPU custom-call conventions before the typed FFI:
    ``void fn(void* out, const void** in)`` (version 1), with an
    ``XlaCustomCallStatus*`` (2), and with the opaque backend config before
    it (3). With several results ``out`` points to their buffers' array."""
    if spec.api_version not in (1, 2, 3):
        raise runtime_error(UNIMPLEMENTED, f"Unknown custom-call API version enum value: "
                            f"{spec.api_version}")
    address = lookup_legacy(spec.target_name)
    ins = [np.ascontiguousarray(a) for a in args]
    outs = [np.zeros(shape, dtype=dtype) for shape, dtype in spec.result_types]
    in_ptrs = (c_void_p * max(len(ins), 1))(*[a.ctypes.data for a in ins])
    out_ptrs = (c_void_p * max(len(outs), 1))(*[a.ctypes.data for a in outs])
    out = out_ptrs[0] if len(outs) == 1 else ctypes.addressof(out_ptrs)
    status = ctypes.create_string_buffer(64)  # a status the target may leave untouched
    if spec.api_version == 1:
        ctypes.CFUNCTYPE(None, c_void_p, c_void_p)(address)(out, ctypes.addressof(in_ptrs))
    elif spec.api_version == 2:
        ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)(address)(
            out, ctypes.addressof(in_ptrs), ctypes.addressof(status))
    else:
        opaque = (spec.backend_config or "").encode()
        ctypes.CFUNCTYPE(None, c_void_p, c_void_p, ctypes.c_char_p, c_size_t, c_void_p)(
            address)(out, ctypes.addressof(in_ptrs), opaque, len(opaque),
                     ctypes.addressof(status))
    return outs
