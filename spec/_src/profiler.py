"""``jax.profiler`` as no-ops: spec has no device timeline, so tracing records nothing.

The entry points keep JAX's signatures, results and errors (one profile at a time, one
profiler server at a time, what an export of an unfinished session raises), so programs that
profile run unchanged: a profile's data has no planes, a device memory profile is an empty
pprof profile, the profiler server serves nothing.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import os
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

from spec._src.core.errors import JaxRuntimeError

F = TypeVar("F", bound=Callable[..., Any])


class ProfileOptions:
    """Options a profile would be taken with; spec records them and ignores them."""

    def __init__(self) -> None:
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.device_tracer_level = 1
        self.start_timestamp_ns = 0
        self.duration_ms = 0


class TraceAnnotation:
    """A named region of the host timeline; a context manager that does nothing here."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name = name
        self.metadata = kwargs

    def __enter__(self) -> TraceAnnotation:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


class StepTraceAnnotation(TraceAnnotation):
    """A TraceAnnotation marking one training step (``step_num`` among its keywords)."""


def annotate_function(func: F, name: str | None = None, **decorator_kwargs: Any) -> F:
    """Wrap ``func`` so each call runs inside a TraceAnnotation named after it."""
    label = name if name is not None else getattr(func, "__qualname__", repr(func))

    @functools.wraps(func)
    def annotated(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)

    return annotated  # type: ignore[return-value]


# ------------------------------------------------------------- profile data
#
# JAX's profile data are views of an XSpace proto. spec records no events, so the data it
# makes hold no planes; the classes keep JAX's names and accessors.


class ProfileEvent:
    """One event of a line (spec records none: there are no instances to take)."""

    def __init__(self) -> None:
        raise TypeError("jaxlib._profile_data.ProfileEvent: no constructor defined!")

    name: str
    start_ns: float
    duration_ns: float
    end_ns: float
    stats: Iterator[tuple[str, Any]]


class ProfileLine:
    """One line of a plane (spec records none)."""

    def __init__(self) -> None:
        raise TypeError("jaxlib._profile_data.ProfileLine: no constructor defined!")

    name: str
    events: Iterator[ProfileEvent]


class ProfilePlane:
    """One plane of a profile (spec records none)."""

    def __init__(self) -> None:
        raise TypeError("jaxlib._profile_data.ProfilePlane: no constructor defined!")

    name: str
    lines: Iterator[ProfileLine]
    stats: Iterator[tuple[str, Any]]


class ProfileData:
    """A captured profile, built from a serialized XSpace. spec reads only the empty one
    (what its sessions capture); any other is NotImplementedError, not a guess."""

    def __init__(self, serialized_xspace: bytes) -> None:
        if not isinstance(serialized_xspace, bytes):
            raise TypeError("__init__(): incompatible function arguments. The following "
                            "argument types are supported:\n    1. __init__(self, arg: "
                            "bytes, /) -> None\n\nInvoked with types: "
                            f"{type(self).__module__}.{type(self).__qualname__}, "
                            f"{type(serialized_xspace).__name__}")
        if serialized_xspace:
            raise NotImplementedError(
                f"ProfileData: spec reads no XSpace protos (got {len(serialized_xspace)} "
                "bytes); only the empty profile its sessions capture")
        self._planes: list[ProfilePlane] = []

    @staticmethod
    def from_serialized_xspace(serialized_xspace: bytes) -> ProfileData:
        return ProfileData(serialized_xspace)

    @staticmethod
    def from_file(proto_file_path: str) -> ProfileData:
        with open(proto_file_path, "rb") as f:
            return ProfileData(f.read())

    @property
    def planes(self) -> Iterator[ProfilePlane]:
        return iter(self._planes)

    def find_plane_with_name(self, name: str) -> ProfilePlane | None:
        return next((p for p in self._planes if p.name == name), None)


# ----------------------------------------------------------------- sessions


class _ProfileState:
    session: ProfileSession | None = None
    lock = threading.Lock()


class ProfileSession:
    """One profile: ``start``/``stop`` or a context manager. Stopping gives its (empty)
    ProfileData; with a ``log_dir`` the data are exported there, as JAX does."""

    def __init__(self, log_dir: os.PathLike[str] | str | None = None,
                 create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                 profiler_options: ProfileOptions | None = None) -> None:
        self.log_dir: str | None = str(log_dir) if log_dir is not None else None
        self.create_perfetto_link = create_perfetto_link
        self.create_perfetto_trace = create_perfetto_trace or create_perfetto_link
        self.profiler_options = profiler_options
        self._profile_data: ProfileData | None = None
        self._is_running = False

    def start(self) -> ProfileSession:
        with _ProfileState.lock:
            if _ProfileState.session is not None or self._is_running:
                raise RuntimeError("Profile has already been started. Only one profile may be "
                                   "run at a time.")
            self._is_running = True
            self._profile_data = None
            _ProfileState.session = self
        return self

    def stop(self) -> ProfileData | None:
        with _ProfileState.lock:
            if not self._is_running:
                raise RuntimeError("No profile started")
            self._profile_data = ProfileData(b"")
            self._is_running = False
            _ProfileState.session = None
        if self.log_dir is not None:
            self.export_profile_data(self.log_dir, self.create_perfetto_link,
                                     self.create_perfetto_trace)
        return self._profile_data

    def export_profile_data(self, log_dir: os.PathLike[str] | str,
                            create_perfetto_link: bool = False,
                            create_perfetto_trace: bool = False,
                            session_id: str | None = None) -> None:
        export_profile_data(self, log_dir, create_perfetto_link, create_perfetto_trace,
                            session_id)

    @property
    def is_running(self) -> bool:
        return self._is_running

    @property
    def profile_data(self) -> ProfileData | None:
        return self._profile_data

    def __enter__(self) -> ProfileSession:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._is_running:  # (a session stopped inside the block is left alone)
            self.stop()


def export_profile_data(profile_data: ProfileData | ProfileSession,
                        log_dir: os.PathLike[str] | str, create_perfetto_link: bool = False,
                        create_perfetto_trace: bool = False,
                        session_id: str | None = None) -> None:
    """Check what JAX checks of the data to export; there is nothing to write (the log
    directory is left as it is)."""
    if isinstance(profile_data, ProfileSession):
        if profile_data.is_running:
            raise RuntimeError("Cannot export a ProfileSession while it is running. Call "
                               "stop() first.")
        if profile_data.profile_data is None:
            raise RuntimeError("No profile data to export. Ensure the session has completed.")
    elif not isinstance(profile_data, ProfileData):
        raise TypeError("Expected ProfileData or ProfileSession, got "
                        f"{type(profile_data).__name__}")


def start_trace(log_dir: os.PathLike[str] | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> ProfileSession | None:
    """Begin a (no-op) profile and return its session; one may run at a time, as in JAX."""
    return ProfileSession(log_dir, create_perfetto_link, create_perfetto_trace,
                          profiler_options).start()


def stop_trace() -> ProfileData | None:
    """End the profile start_trace began and return its data; RuntimeError when none runs."""
    with _ProfileState.lock:
        session = _ProfileState.session
        if session is None:
            raise RuntimeError("No profile started")
    return session.stop()


@contextlib.contextmanager
def trace(log_dir: os.PathLike[str] | str | None = None, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None) -> Iterator[ProfileSession]:
    """A profile session over the block, yielded."""
    with ProfileSession(log_dir, create_perfetto_link, create_perfetto_trace,
                        profiler_options) as session:
        yield session


# ------------------------------------------------------------ server, memory


class ProfilerServer:
    """The profiler server start_server returns; spec's serves nothing."""

    def __init__(self, port: int) -> None:
        self.port = port


class _ServerState:
    server: ProfilerServer | None = None


def start_server(port: int, requires_backend: bool = True) -> ProfilerServer:
    """Start the (no-op) profiler server; one may run at a time (ValueError), as in JAX."""
    if _ServerState.server is not None:
        raise ValueError("Only one profiler server can be active at a time.")
    _ServerState.server = ProfilerServer(port)
    return _ServerState.server


def stop_server() -> None:
    if _ServerState.server is None:
        raise ValueError("No active profiler server.")
    _ServerState.server = None


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """Register a subprocess's profiler server; the result unregisters it. A process cannot
    register itself (JAX's INVALID_ARGUMENT, a JaxRuntimeError)."""
    if pid == os.getpid():
        raise JaxRuntimeError("INVALID_ARGUMENT: Cannot register subprocess with the same pid "
                              "as current process.")

    def unregister() -> None:
        return None
    return unregister


_GPU_LIKE = ("gpu", "cuda", "rocm", "tpu")


def _check_backend(backend: str | None) -> None:
    """spec has one platform, cpu: any other backend is JAX's RuntimeError."""
    if backend is None or backend == "cpu":
        return
    if backend in _GPU_LIKE:
        raise RuntimeError(f"Unknown backend: '{backend}' requested, but no platforms that are "
                           f"instances of {backend} are present. Platforms present are: cpu")
    raise RuntimeError(f"Unknown backend {backend}. Available backends are ['cpu']")


def device_memory_profile(backend: str | None = None) -> bytes:
    """A device memory profile, gzip-compressed pprof as JAX's: spec's is the empty
    profile (no allocation sites are recorded)."""
    _check_backend(backend)
    return gzip.compress(b"")


def save_device_memory_profile(filename: os.PathLike[str] | str,
                               backend: str | None = None) -> None:
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)
