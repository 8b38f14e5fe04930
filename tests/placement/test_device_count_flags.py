"""How many CPU devices a process has: ``jax_num_cpu_devices`` when set, else
XLA's ``--xla_force_host_platform_device_count`` flag (the last one given), else
one. Each setting runs in a fresh process under spec and under JAX."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = "import {module} as jax; print(jax.device_count(), jax.local_device_count())"

SETTINGS = [
    {},
    {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"},
    {"XLA_FLAGS": "--xla_force_host_platform_device_count=3 "
                  "--xla_force_host_platform_device_count=5"},
    {"XLA_FLAGS": "--xla_force_host_platform_device_count=3", "JAX_NUM_CPU_DEVICES": "2"},
    {"JAX_NUM_CPU_DEVICES": "4"},
]


def _counts(module: str, env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(module=module)],
                          env={**clean, **env, "JAX_PLATFORMS": "cpu"},
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("env", SETTINGS, ids=lambda e: " ".join(f"{k}={v}" for k, v in e.items())
                         or "nothing set")
def test_device_count_as_jax(env: dict[str, str]) -> None:
    assert _counts("spec", env) == _counts("jax", env)
