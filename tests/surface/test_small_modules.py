"""jax.typing, jax.flatten_util and jax.profiler against real JAX run live."""

from __future__ import annotations

import gzip
import os

import jax
import jax.flatten_util
import jax.profiler
import numpy as np
import pytest

import spec
import spec.flatten_util
import spec.profiler
import spec.typing


def _tree(lib: object) -> object:
    jnp = lib.numpy  # type: ignore[attr-defined]
    return {"w": jnp.arange(6.0).reshape(2, 3), "b": (jnp.arange(3, dtype=jnp.int32),
                                                     jnp.float32(2.5))}


def test_typing_names() -> None:
    assert {"ArrayLike", "DTypeLike"} <= set(dir(spec.typing))


def test_ravel_pytree_matches_jax() -> None:
    flat_s, unravel_s = spec.flatten_util.ravel_pytree(_tree(spec))
    flat_j, unravel_j = jax.flatten_util.ravel_pytree(_tree(jax))
    assert flat_s.dtype == flat_j.dtype
    np.testing.assert_array_equal(np.asarray(flat_s), np.asarray(flat_j))
    back_s = spec.tree_util.tree_leaves(unravel_s(flat_s * 2))
    back_j = jax.tree_util.tree_leaves(unravel_j(flat_j * 2))
    for a, b in zip(back_s, back_j, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_profiler_context_managers_and_errors_match_jax(tmp_path: object) -> None:
    for lib in (jax.profiler, spec.profiler):
        with lib.TraceAnnotation("region", extra=1), lib.StepTraceAnnotation("s", step_num=3):
            pass
        assert lib.annotate_function(lambda x: x + 1, name="inc")(2) == 3
        with pytest.raises(RuntimeError, match="No profile started"):
            lib.stop_trace()
    spec.profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already been started"):
        spec.profiler.start_trace(str(tmp_path))
    spec.profiler.stop_trace()
    with spec.profiler.trace(str(tmp_path)):
        pass


def _session_outcomes(lib: object, log_dir: str) -> list[object]:
    """What a program sees of profile sessions: their state, what they return and the
    classes and messages of what they refuse."""
    prof = lib.profiler  # type: ignore[attr-defined]
    seen: list[object] = []

    def attempt(fn: object) -> None:
        try:
            seen.append(type(fn()).__name__)  # type: ignore[operator]
        except Exception as e:  # noqa: BLE001 (the error is the outcome)
            seen.append((type(e).__name__, str(e)))

    session = prof.ProfileSession()
    seen += [session.is_running, session.profile_data]
    attempt(lambda: prof.export_profile_data(session, log_dir))
    attempt(lambda: prof.export_profile_data(3, log_dir))
    session.start()
    seen.append(session.is_running)
    attempt(lambda: prof.export_profile_data(session, log_dir))
    attempt(lambda: prof.ProfileSession().start())
    attempt(lambda: prof.start_trace(log_dir))
    data = session.stop()
    seen += [type(data).__name__, session.is_running, data is session.profile_data]
    attempt(session.stop)
    with prof.trace() as inner:
        seen += [type(inner).__name__, inner.is_running]
    seen += [inner.is_running, type(inner.profile_data).__name__]
    started = prof.start_trace(log_dir)
    seen += [type(started).__name__, type(prof.stop_trace()).__name__]
    seen += [prof.ProfileData(b"").find_plane_with_name("x"),
             list(prof.ProfileData.from_serialized_xspace(b"").planes)]
    attempt(lambda: prof.ProfileData("text"))
    return seen


def test_profile_sessions_match_jax(tmp_path: object) -> None:
    ours, theirs = _session_outcomes(spec, str(tmp_path)), _session_outcomes(jax, str(tmp_path))
    assert ours[:-1] == theirs[:-1]
    # A bad ProfileData argument: the same TypeError, naming each library's own class.
    (cls, msg), (jax_cls, jax_msg) = ours[-1], theirs[-1]  # type: ignore[misc]
    assert cls == jax_cls == "TypeError"
    assert msg.rsplit(".", 1)[-1] == jax_msg.rsplit(".", 1)[-1] == "ProfileData, str"


def _server_and_memory_outcomes(lib: object, path: str) -> list[object]:
    prof = lib.profiler  # type: ignore[attr-defined]
    seen: list[object] = []

    def attempt(fn: object) -> None:
        try:
            fn()  # type: ignore[operator]
            seen.append("ok")
        except Exception as e:  # noqa: BLE001 (the error is the outcome)
            seen.append((type(e).__name__, str(e)))

    attempt(prof.stop_server)
    server = prof.start_server(0)
    seen.append(server is not None)
    attempt(lambda: prof.start_server(0))
    attempt(prof.stop_server)
    attempt(lambda: prof.register_subprocess(os.getpid(), 1))
    profile = prof.device_memory_profile()
    seen += [type(profile).__name__, profile[:2]]  # gzip's magic number
    attempt(lambda: prof.device_memory_profile("gpu"))
    attempt(lambda: prof.device_memory_profile("foo"))
    prof.save_device_memory_profile(path)
    with open(path, "rb") as f:
        seen.append(f.read()[:2])
    return seen


def test_profiler_server_and_memory_profile_match_jax(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "memory.prof")
    assert _server_and_memory_outcomes(spec, path) == _server_and_memory_outcomes(jax, path)


def test_spec_memory_profile_is_an_empty_pprof_profile() -> None:
    """An empty protobuf message is a valid (empty) pprof Profile."""
    assert gzip.decompress(spec.profiler.device_memory_profile()) == b""
