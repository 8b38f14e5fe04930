"""Compiling the FFI handlers of the tests with the machine's C++ compiler,
against the XLA FFI headers ``spec.ffi.include_dir()`` names, into
``build/ffi/`` under the repository root (reused while newer than its
source). ``rms_norm.cc`` is the FFI page's example source
(docs/new_docs/401/ffi/rms_norm.cc in JAX's repository); ``handlers.cc``
holds the tests' own handlers, ``examples.cc`` those of JAX's examples/ffi package."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import spec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = ROOT / "build"
OUT = BUILD / "ffi"
SOURCES = {"rms_norm": HERE / "rms_norm.cc", "handlers": HERE / "handlers.cc",
           "examples": HERE / "examples.cc"}


def compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++")


def library_path(name: str) -> Path:
    return OUT / f"lib{name}.so"


def _up_to_date(lib: Path, source: Path) -> bool:
    return lib.exists() and lib.stat().st_mtime >= source.stat().st_mtime


def build_all() -> dict[str, Path]:
    """Every test library, compiled where missing or stale. Test workers build under one
    lock, so the second finds the first's libraries instead of compiling them again."""
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _build_stale()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return {name: library_path(name) for name in SOURCES}


def _build_stale() -> None:
    """Compile the missing or stale libraries, in parallel. -O0: the handlers are small
    and the FFI headers' templates make optimised builds several times slower; without
    -ffast-math the float results are the same."""
    cxx = compiler()
    assert cxx is not None
    include = spec.ffi.include_dir()
    running = []
    for name, source in SOURCES.items():
        lib = library_path(name)
        if _up_to_date(lib, source):
            continue
        partial = lib.with_suffix(".so.partial")
        cmd = [cxx, "-O0", "-std=c++17", "-shared", "-fPIC", "-w", f"-I{include}",
               str(source), "-o", str(partial)]
        running.append((subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True), partial, lib))
    for proc, partial, lib in running:
        _, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"compiling {lib.name} failed:\n{err}")
        partial.replace(lib)
