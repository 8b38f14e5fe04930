"""Top-level names of JAX 0.12 for processes, meshes and the threefry
layout, twins run live: the same values, warnings and random bits."""

from __future__ import annotations

import warnings
from typing import Any

import jax
import numpy as np

import spec


def _processes(lib: Any) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = (lib.host_count(), lib.host_id(), lib.host_ids(), lib.process_indices())
    return values, [str(w.message) for w in caught], [w.category for w in caught]


def test_process_names_and_their_warnings() -> None:
    assert _processes(spec) == _processes(jax)


def _bits(lib: Any) -> tuple[Any, ...]:
    key = lib.random.key(0)
    with lib.threefry_partitionable(False):
        inside = (np.asarray(lib.random.bits(key, (4,))).tolist(),
                  lib.config.jax_threefry_partitionable)
    return inside, np.asarray(lib.random.bits(key, (4,))).tolist()


def test_threefry_partitionable_context() -> None:
    assert _bits(spec) == _bits(jax)


def _meshes(lib: Any) -> tuple[str, str]:
    mesh = lib.make_mesh((1,), ("a",))
    outside = repr(lib.get_abstract_mesh())
    with lib.use_abstract_mesh(mesh.abstract_mesh):
        return outside, repr(lib.get_abstract_mesh())


def test_abstract_mesh_names() -> None:
    assert _meshes(spec) == _meshes(jax)
