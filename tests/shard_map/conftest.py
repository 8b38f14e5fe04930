"""Fixtures shared by the shard_map tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import spec


@pytest.fixture()
def mesh() -> Iterator[Any]:
    """A 2x2 mesh of four virtual devices, in context; float64 enabled."""
    before = spec.config.jax_num_cpu_devices, spec.config.jax_enable_x64
    spec.config.update("jax_num_cpu_devices", 4)
    spec.config.update("jax_enable_x64", True)
    m = spec.make_mesh((2, 2), ("x", "y"))
    spec.set_mesh(m)
    try:
        yield m
    finally:
        spec.set_mesh(None)
        spec.config.update("jax_num_cpu_devices", before[0])
        spec.config.update("jax_enable_x64", before[1])
