"""One program text run twice: on real JAX in a subprocess with several CPU
devices (JAX fixes its device count at first use, and the test process has
already used it), and on spec in-process. The program names its library
``IMPL`` (as ``jax, jnp = IMPL``) and fills a dict ``out``; both results come
back through JSON so that they compare alike.

JAX's side of a program is a pure function of its text and device count, and
it costs seconds of XLA compilation, so a test module may declare its programs
with ``prefetch`` at import: once pytest has collected the session, conftest
starts them, one at a time in test order, in a background thread (the second
core works while earlier tests run in this process). ``run_jax`` then takes
the finished result, waits for the running one, or runs the program itself
when it has not started yet; the result and any error are the same as
without prefetching."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_PRINT = "print(json.dumps(out))"
_JAX = "__import__('jax'), __import__('jax.numpy').numpy"
_SPEC = "__import__('spec'), __import__('spec.numpy').numpy"


_CACHE: list[str] = []


def jax_env(devices: int) -> dict[str, str]:
    """The environment of a JAX subprocess on ``devices`` CPU devices. The
    subprocesses of one session share a persistent compilation cache (a
    fresh folder, removed at exit): many programs compile the same small
    computations (a reshard, an elementwise op on the same sharded shape),
    and a cache hit is the executable that compiling gives."""
    if not _CACHE:
        _CACHE.append(tempfile.mkdtemp(prefix="spec-tests-jax-cache-"))
        atexit.register(shutil.rmtree, _CACHE[0], True)
    return dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(devices),
                JAX_COMPILATION_CACHE_DIR=_CACHE[0],
                JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1")


def _jax_process(program: str, devices: int) -> dict[str, Any]:
    env = jax_env(devices)
    code = program.replace("IMPL", _JAX)
    if _PRINT not in code:
        code += "\nimport json\n" + _PRINT + "\n"
    proc = run_process([sys.executable, "-c", code], env=env, timeout=300)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_jax(program: str, devices: int = 4) -> dict[str, Any]:
    result: dict[str, Any] = take(("jax", program, devices),
                                  functools.partial(_jax_process, program, devices))
    return result


def run_spec(program: str) -> dict[str, Any]:
    code = program.replace("IMPL", _SPEC).replace(_PRINT, "")
    scope: dict[str, Any] = {}
    exec(compile(code, "<twin program>", "exec"), scope)  # noqa: S102
    result: dict[str, Any] = json.loads(json.dumps(scope["out"]))
    return result


def run_both(program: str, devices: int = 4) -> tuple[dict[str, Any], dict[str, Any]]:
    """(spec's results, JAX's results) of one program; spec's device count
    and mesh are restored afterwards (the program may set them)."""
    import spec
    before = spec.config.jax_num_cpu_devices
    try:
        ours = run_spec(program)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)
    return ours, run_jax(program, devices)


def on_virtual_devices(n: int, fn: Any) -> Any:
    """``fn()`` with spec on n virtual devices (device count and mesh restored)."""
    import spec
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", n)
    try:
        return fn()
    finally:
        spec.config.update("jax_num_cpu_devices", before)
        spec.set_mesh(None)


# ------------------------------------------------------------ prefetching

# Jobs declared at import (module name, key, job), in declaration order.
_DECLARED: list[tuple[str, Hashable, Callable[[], Any]]] = []
_FUTURES: dict[Hashable, Future[Any]] = {}
_POOL: list[ThreadPoolExecutor] = []
_RUNNING: set[subprocess.Popen[str]] = set()
_OPEN = threading.Event()  # cleared while timing-sensitive tests run
_OPEN.set()
_STOPPED = threading.Event()


def prefetch(*programs: str, devices: int = 4) -> None:
    """Declare (at a test module's import) programs whose JAX side the
    module's tests will ask ``run_jax`` for."""
    module = str(sys._getframe(1).f_globals.get("__name__", ""))
    for program in programs:
        ahead(module, ("jax", program, devices),
              functools.partial(_jax_process, program, devices))


def ahead(module: str, key: Hashable, job: Callable[[], Any]) -> None:
    """Declare that ``module``'s tests will call ``take(key, job)``; ``job``
    must be a pure function of ``key`` (it may run earlier, in a thread)."""
    _DECLARED.append((module, key, job))


def take(key: Hashable, job: Callable[[], Any]) -> Any:
    """``job()``, or the prefetched result of the job declared under ``key``
    (each prefetched result is handed out once)."""
    future = _FUTURES.pop(key, None)
    if future is None or future.cancel():  # not prefetched, or not started yet
        return job()
    return future.result()


def start(modules: list[str]) -> None:
    """Run the jobs declared by these modules (listed in test order) in one
    background thread, in that order."""
    if _POOL:
        return
    rank = {m: i for i, m in enumerate(modules)}
    todo = sorted((d for d in _DECLARED if d[0] in rank), key=lambda d: rank[d[0]])
    if not todo:
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="jax-prefetch")
    _POOL.append(pool)
    for _, key, job in todo:
        if key not in _FUTURES:
            _FUTURES[key] = pool.submit(_gated, job)


def pause() -> None:
    """Start no new job (a job already running finishes)."""
    _OPEN.clear()


def resume() -> None:
    _OPEN.set()


def stop() -> None:
    """Cancel what has not started and kill what runs (end of session)."""
    _STOPPED.set()
    _OPEN.set()
    for future in _FUTURES.values():
        future.cancel()
    _FUTURES.clear()
    for proc in list(_RUNNING):
        proc.kill()
    for pool in _POOL:
        pool.shutdown(wait=True, cancel_futures=True)


def _gated(job: Callable[[], Any]) -> Any:
    _OPEN.wait()
    if _STOPPED.is_set():
        raise RuntimeError("prefetching stopped")
    return job()


def run_process(cmd: list[str], env: dict[str, str], timeout: float
                ) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, check=True, capture_output=True, text=True)``
    that ``stop`` can kill."""
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        _RUNNING.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        finally:
            _RUNNING.discard(proc)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, out, err)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
