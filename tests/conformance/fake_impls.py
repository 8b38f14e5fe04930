"""Deliberately broken implementations, loaded by a conformance worker in a child interpreter
(``--impl python:PATH:tests.conformance.fake_impls:broken``): real JAX, except that
``jnp.sin`` kills the process as a segfault in C code would, and ``jnp.cos`` hangs with the
worker's own time-limit signal blocked, so only the runner's deadline can end it."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import jax
import jax.numpy


def _crash(*args: Any, **kwargs: Any) -> Any:
    os.abort()


def _hang(*args: Any, **kwargs: Any) -> Any:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    while True:
        time.sleep(60)


class _Proxy:
    def __init__(self, target: Any, overrides: dict[str, Any]) -> None:
        self._target, self._overrides = target, overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._target, name)


broken = _Proxy(jax, {"numpy": _Proxy(jax.numpy, {"sin": _crash, "cos": _hang})})
