"""An optax training loop (tests/example_libraries/optax_loop.py), unchanged, under
``python -m spec`` (so optax imports spec as its ``jax``) ends with the parameters the same
loop reaches on real JAX: adam, sgd with nesterov momentum, adamw and lion, under schedules
and ``clip_by_global_norm``, 20 jitted steps each.

Both sides run in a subprocess (optax binds whichever ``jax`` it imports first); real JAX's
side is prefetched while earlier tests run."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import numpy as np
import pytest

from tests.support import twin

WORKTREE = pathlib.Path(__file__).resolve().parents[2]
PROGRAM = pathlib.Path(__file__).with_name("optax_loop.py")


def _run(*launcher: str) -> dict[str, Any]:
    env = dict(twin.jax_env(1), PYTHONPATH=str(WORKTREE))
    done = twin.run_process([sys.executable, *launcher, str(PROGRAM)], env=env, timeout=300)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _run_jax_side() -> dict[str, Any]:
    return _run()


_KEY = ("optax training loop", PROGRAM.read_text())
twin.ahead(__name__, _KEY, _run_jax_side)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, Any], dict[str, Any]]:
    ours = _run("-m", "spec")
    theirs: dict[str, Any] = twin.take(_KEY, _run_jax_side)
    return ours, theirs


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "adamw", "lion"])
def test_optax_loop_ends_with_jax_parameters(
        results: tuple[dict[str, Any], dict[str, Any]], optimizer: str) -> None:
    ours, theirs = results
    assert (ours["backend"], theirs["backend"]) == ("spec", "jax")
    mine, jax_ = ours[optimizer], theirs[optimizer]
    assert mine.keys() == jax_.keys() == {"loss", "w", "b"}
    # 20 float32 steps from equal parameters: rounding differences stay near the ulp.
    np.testing.assert_allclose(mine["loss"], jax_["loss"], rtol=1e-5)
    for name in ("w", "b"):
        assert mine[name][0] == jax_[name][0]
        np.testing.assert_allclose(mine[name][1], jax_[name][1], rtol=1e-5, atol=1e-6)
