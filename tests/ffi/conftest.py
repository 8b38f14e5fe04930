"""The compiled FFI handlers, built once per session (tests/ffi/build.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ffi.build import build_all, compiler


@pytest.fixture(scope="session")
def ffi_libs() -> dict[str, Path]:
    if compiler() is None:
        pytest.skip("no C++ compiler (g++ or c++) on PATH to build the FFI handlers")
    return build_all()
