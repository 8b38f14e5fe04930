"""jax_explain_cache_misses on spec and on JAX 0.12, live: the same call
sequence logs the same explanations (the function's id aside), captured
from each library's logger."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import jax
import pytest

import spec


def _calls_static(lib: Any) -> None:
    jnp = lib.numpy

    def f(x: Any, y: int = 1) -> Any:
        return x * y

    jf = lib.jit(f, static_argnums=1)
    jf(1.0)
    jf(2.0)                                # a hit: nothing logged
    jf(jnp.ones(3))                        # a weak type and a shape differ
    jf(jnp.ones(3, jnp.int32))             # the dtype differs from the closest key
    jf(1.0, 2)                             # a static argument added
    jf(1.0, 3)                             # only a static value differs
    jf(x=1.0)                              # keyword instead of positional


def _calls_trees(lib: Any) -> None:
    jnp = lib.numpy

    def k(p: Any, q: Any) -> Any:
        return p["a"] + q

    jk = lib.jit(k)
    jk({"a": jnp.ones(2)}, jnp.ones(2))
    jk({"a": jnp.ones(3)}, jnp.ones(3))
    jk({"a": jnp.ones(3)}, jnp.ones(3, jnp.int32))
    jk({"a": jnp.ones(3, jnp.float16)}, jnp.ones(3, jnp.int32))
    jk({"a": jnp.ones(3)}, (jnp.ones(3),))
    jk({"a": jnp.ones(3), "b": 1.0}, jnp.ones(3))


@pytest.fixture
def captured() -> Iterator[Callable[[Any, Callable[[Any], None]], str]]:
    def run(lib: Any, calls: Callable[[Any], None]) -> str:
        buf = io.StringIO()
        handler = logging.StreamHandler(buf)
        handler.setFormatter(logging.Formatter("%(levelname)s|%(message)s"))
        # Only the tracing cache: with a persistent compilation cache configured
        # (by another test in this process), JAX also logs that cache's misses.
        handler.addFilter(lambda r: r.getMessage().startswith("TRACING CACHE MISS"))
        logger = logging.getLogger(lib.__name__)
        logger.addHandler(handler)
        try:
            lib.config.update("jax_explain_cache_misses", True)
            try:
                calls(lib)
            except TypeError as e:  # (the tree cases may reject the function)
                buf.write(f"raises {type(e).__name__}\n")
        finally:
            lib.config.update("jax_explain_cache_misses", False)
            logger.removeHandler(handler)
        return re.sub(r" id=\d+", " id=<id>", buf.getvalue())
    yield run


@pytest.mark.parametrize("calls", [_calls_static, _calls_trees], ids=["static", "trees"])
def test_explanations_as_jax(captured: Any, calls: Callable[[Any], None]) -> None:
    # Twice: the second time the functions are new objects defined on lines
    # that have missed before, which JAX's explanation points out.
    for _ in range(2):
        want = captured(jax, calls)
        got = captured(spec, calls)
        assert got == want
        assert got.count("TRACING CACHE MISS") >= 5
    assert "re-defined repeatedly" in got


def test_silent_when_off(captured: Any) -> None:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    logging.getLogger("spec").addHandler(handler)
    try:
        spec.jit(lambda x: x + 1)(1.0)
    finally:
        logging.getLogger("spec").removeHandler(handler)
    assert buf.getvalue() == ""
