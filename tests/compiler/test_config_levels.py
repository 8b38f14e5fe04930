"""Enumerated configuration options (XLA's optimization and memory-fitting
levels, the NumPy rank-promotion mode): defaults, accepted values and the
errors for others, from ``config.update`` and from the environment at import,
against JAX."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jax
import pytest

import spec

OPTIONS = {
    "jax_optimization_level": ["O0", "O3", "UNKNOWN", "O9", "o1", 1],
    "jax_memory_fitting_level": ["O1", "UNKNOWN", "O7"],
    "jax_numpy_rank_promotion": ["warn", "raise", "allow", "x"],
}
CASES = [(name, value) for name, values in OPTIONS.items() for value in values]


@pytest.fixture
def restored() -> Iterator[None]:
    before = {name: (spec.config.read(name), getattr(jax.config, name)) for name in OPTIONS}
    yield
    for name, (ours, theirs) in before.items():
        spec.config.update(name, ours)
        jax.config.update(name, theirs)


def _outcome(config: Any, name: str, value: Any) -> tuple[str, str]:
    try:
        config.update(name, value)
    except Exception as e:  # noqa: BLE001 - the class and message are compared
        return type(e).__name__, str(e)
    return "ok", str(getattr(config, name))


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_defaults_as_jax(name: str) -> None:
    assert spec.config.read(name) == getattr(jax.config, name)


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_update_as_jax(name: str, value: Any, restored: None) -> None:
    assert _outcome(spec.config, name, value) == _outcome(jax.config, name, value)


def _import_with(module: str, env: dict[str, str]) -> tuple[int, str]:
    program = f"import {module} as jax; print(jax.config.jax_optimization_level)"
    done = subprocess.run([sys.executable, "-c", program], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


@pytest.mark.parametrize("level", ["O1", "bad"])
def test_environment_at_import_as_jax(level: str) -> None:
    env = {"JAX_OPTIMIZATION_LEVEL": level, "JAX_PLATFORMS": "cpu"}
    assert _import_with("spec", env) == _import_with("jax", env)
