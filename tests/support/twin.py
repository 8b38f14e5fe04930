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
without prefetching.

Under pytest-xdist every worker collects the whole session, so every worker
would prefetch every program. The workers of one session share a folder
(``SHARED_DIR_VARIABLE``, made by the controlling process): a job is claimed
there before it runs, its result is left there, and a worker that needs a job
another worker claimed waits for that result instead of repeating the work."""

from __future__ import annotations

import atexit
import copy
import functools
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_PRINT = "print(json.dumps(out))"
_JAX = "__import__('jax'), __import__('jax.numpy').numpy"
_SPEC = "__import__('spec'), __import__('spec.numpy').numpy"


SHARED_DIR_VARIABLE = "SPEC_TESTS_SHARED_DIR"
_OWN_DIR: list[str] = []


def make_shared_dir() -> str:
    """A fresh folder for this session's processes, named in the environment
    that pytest-xdist's workers inherit (called by the controlling process
    before the workers start; ``remove_shared_dir`` ends it)."""
    path = tempfile.mkdtemp(prefix="spec-tests-")
    os.environ[SHARED_DIR_VARIABLE] = path
    return path


def remove_shared_dir() -> None:
    path = os.environ.pop(SHARED_DIR_VARIABLE, None)
    if path:
        shutil.rmtree(path, True)


def shared_dir() -> str:
    """The session's shared folder (a private one when no controller made one)."""
    path = os.environ.get(SHARED_DIR_VARIABLE)
    if path and os.path.isdir(path):
        return path
    if not _OWN_DIR:
        _OWN_DIR.append(tempfile.mkdtemp(prefix="spec-tests-"))
        atexit.register(shutil.rmtree, _OWN_DIR[0], True)
    return _OWN_DIR[0]


_CELL_PROGRAM = r'''
import contextlib, io, re
import numpy as np
jax, jnp = IMPL
lax = jax.lax
SETUP
jax.config.update('jax_num_cpu_devices', 4)
out = {}
def cell(name, fn):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            r = fn()
            if r is not None:
                for leaf in jax.tree.leaves(r):
                    print(jax.typeof(leaf)); print(np.asarray(leaf).round(4))
        out[name] = buf.getvalue()
    except Exception as e:
        out[name] = buf.getvalue() + "raises " + RAISES
'''

# How a cell's exception is written, as an expression of ``e``: the builtin class it is;
# that or JAX's ShardingTypeError, alone or with the message's first line; its own class
# and message.
BUILTIN_CLASS = 'next(c for c in type(e).__mro__ if c.__module__ == "builtins").__name__'
CLASS = ('next(c for c in type(e).__mro__ if c.__module__ == "builtins" '
         'or c.__name__ == "ShardingTypeError").__name__')
CLASS_AND_FIRST_LINE = CLASS + ' + ": " + str(e).splitlines()[0]'
NAME_AND_MESSAGE = 'f"{type(e).__name__}: {e}"'


def cell_program(raises: str, setup: str = "") -> str:
    """The start of a twin program on 4 devices that records cells: ``cell(name, fn)``
    stores under ``out[name]`` what ``fn`` printed, then the type and rounded value of
    each leaf of its result, or ``raises`` and the exception as ``raises`` writes it."""
    return _CELL_PROGRAM.replace("SETUP\n", setup).replace("RAISES", raises)


def jax_env(devices: int) -> dict[str, str]:
    """The environment of a JAX subprocess on ``devices`` CPU devices. The
    subprocesses of one session share a persistent compilation cache: many
    programs compile the same small computations (a reshard, an elementwise
    op on the same sharded shape), and a cache hit is the executable that
    compiling gives."""
    cache = os.path.join(shared_dir(), "jax-compilation-cache")
    return dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(devices),
                JAX_COMPILATION_CACHE_DIR=cache,
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


def merged(base: str, groups: dict[str, str]) -> str:
    """Programs that all begin with ``base`` as one program (one JAX process start and
    one set of compilations for the module): ``base`` once, then each program's own text in
    the order given, its ``out`` collected under its group's name. Each program must set
    up the state (mesh, arrays) it needs, as it would in a process of its own."""
    parts = [base, "_GROUPS = {}\n"]
    for group, program in groups.items():
        # (A program that prints its own `out` would end the merged one's output early.)
        assert program.startswith(base) and _PRINT not in program, group
        parts += [program[len(base):], f"\n_GROUPS[{group!r}] = out\nout = {{}}\n"]
    return "".join(parts) + "out = _GROUPS\n"


def run_merged(program: str, groups: list[str], devices: int = 4
               ) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """``run_both`` of a ``merged`` program: each group's (spec's, JAX's) results."""
    ours, theirs = run_both(program, devices)
    return {group: (ours[group], theirs[group]) for group in groups}


def jax_group(groups: dict[str, str], group: str, devices: int = 4) -> dict[str, Any]:
    """JAX's ``out`` of the program ``groups[group]``, where all of ``groups`` run as one JAX
    process, ``merged("", groups)`` (the module prefetches that program). Each program is
    whole (imports, ``out = {}``) and sets up the state it uses; a caller gets its own copy."""
    return copy.deepcopy(_merged_jax(tuple(groups.items()), devices)[group])


@functools.cache
def _merged_jax(groups: tuple[tuple[str, str], ...], devices: int) -> dict[str, Any]:
    return run_jax(merged("", dict(groups)), devices)


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
    (each prefetched result is handed out once), or the result another worker
    of the session computed."""
    future = _FUTURES.pop(key, None)
    if future is None or future.cancel():  # not prefetched, or not started yet
        return _shared(key, job)
    value = future.result()
    return _shared(key, job) if value is _SKIPPED else value


# A worker waits this long for a job another worker claimed before running it
# itself (the claiming worker may have died).
_CLAIM_DEADLINE_S = 600.0


def _paths(key: Hashable) -> tuple[str, str]:
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    folder = os.path.join(shared_dir(), "jobs")
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, digest)
    return stem + ".claim", stem + ".result"


def _claim(claim: str) -> bool:
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    return True


def _claimer_alive(claim: str) -> bool:
    try:
        with open(claim) as f:
            pid = int(f.read() or "0")
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _run_claimed(claim: str, result: str, job: Callable[[], Any]) -> Any:
    """Run a job this process claimed and leave its result for the others; a
    failed job leaves no result (a waiting worker then runs it and gets the
    same error)."""
    try:
        value = job()
    except BaseException:
        os.unlink(claim)
        raise
    partial = f"{result}.{os.getpid()}"
    with open(partial, "wb") as f:
        pickle.dump(value, f)
    os.replace(partial, result)
    return value


def _load(result: str) -> Any:
    with open(result, "rb") as f:
        return pickle.load(f)  # noqa: S301 - written by this session's workers


def _shared(key: Hashable, job: Callable[[], Any]) -> Any:
    claim, result = _paths(key)
    if _claim(claim):
        return _run_claimed(claim, result, job)
    deadline = time.monotonic() + _CLAIM_DEADLINE_S
    while time.monotonic() < deadline:
        if os.path.exists(result):
            return _load(result)
        if not os.path.exists(claim) or not _claimer_alive(claim):
            break
        time.sleep(0.05)
    return job()


def _prefetched(key: Hashable, job: Callable[[], Any]) -> Any:
    """The prefetch thread's form of a job: one another worker claimed is
    skipped (``take`` waits for that worker's result)."""
    claim, result = _paths(key)
    if not _claim(claim):
        return _SKIPPED
    return _run_claimed(claim, result, job)


_SKIPPED = object()


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
            _FUTURES[key] = pool.submit(_gated, functools.partial(_prefetched, key, job))


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
