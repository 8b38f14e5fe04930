"""XLA metadata lowers to ``mhlo.frontend_attributes`` as JAX attaches it:
the text equals JAX's, and the tags change nothing that is computed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.experimental.xla_metadata as jax_meta
import jax.numpy as jnp
import numpy as np

import spec
import spec.experimental.xla_metadata as spec_meta
import spec.numpy as snp
from tests.lowering.xla_run import bits, canonical, spec_and_compiled

_X = np.linspace(-1, 1, 5, dtype=np.float32)


def _program(api: Any, numpy: Any, meta: Any) -> Callable[..., Any]:
    def fn(x: Any) -> Any:
        with meta.set_xla_metadata(a="1", b=True):
            y = numpy.sin(x) * 2
        z = meta.xla_metadata_call(lambda v: v * 3.0 + 1.0, k="v")(y)
        w = meta.set_xla_metadata(numpy.cos(z) - 1.0, tag=7)
        return w + 1
    return fn


def test_frontend_attributes_match_jax() -> None:
    ours, compiled, text = spec_and_compiled(_program(spec, snp, spec_meta), _X)
    theirs = jax.jit(_program(jax, jnp, jax_meta))
    assert canonical(text) == canonical(theirs.lower(_X).as_text())
    assert bits(compiled[0]) == bits(np.asarray(theirs(_X)))
    assert 'mhlo.frontend_attributes = {tag = "7"}' in text
