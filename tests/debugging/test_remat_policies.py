"""Checkpoint policies and print_saved_residuals on spec and on JAX 0.12,
live: the first cells of JAX's remat page
(docs/new_docs/301/remat.md, which turns jax_remat3 on) print the same
residual lines, and the offloading policies give JAX's gradients and errors
(tests/autodiff/test_checkpoint.py checks the policy names)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import jax
import jax.ad_checkpoint  # noqa: F401 (the submodule, as attribute)
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from tests.support.notebook import run_cell

REMAT_PAGE = [
    '''
jax.config.update('jax_remat3', True)
''',
    '''
def g(W, x):
  y = jnp.dot(W, x)
  return jnp.sin(y)

def f(W1, W2, W3, x):
  x = g(W1, x)
  x = g(W2, x)
  x = g(W3, x)
  return x

W1 = jnp.ones((5, 4))
W2 = jnp.ones((6, 5))
W3 = jnp.ones((7, 6))
x = jnp.ones(4)

from jax.ad_checkpoint import print_saved_residuals
print_saved_residuals(f, W1, W2, W3, x)
''',
    '''
def f2(W1, W2, W3, x):
  x = jax.checkpoint(g)(W1, x)
  x = jax.checkpoint(g)(W2, x)
  x = jax.checkpoint(g)(W3, x)
  return x

print_saved_residuals(f2, W1, W2, W3, x)
''',
    '''
from jax.ad_checkpoint import checkpoint_name

def f4(W1, W2, W3, x):
  x = checkpoint_name(g(W1, x), name='a')
  x = checkpoint_name(g(W2, x), name='b')
  x = checkpoint_name(g(W3, x), name='c')
  return x

f4 = jax.checkpoint(f4, policy=jax.checkpoint_policies.save_only_these_names('a'))
print_saved_residuals(f4, W1, W2, W3, x)
''',
]


def _page_outputs(lib: Any, np_mod: Any) -> list[str]:
    ns: dict[str, Any] = {"jax": lib, "jnp": np_mod}
    source_name = "jax.ad_checkpoint"
    outs = []
    for cell in REMAT_PAGE:
        if lib is spec:
            cell = cell.replace(f"from {source_name} import", "from spec.ad_checkpoint import")
        outs.append(run_cell(cell, ns))
    return outs


@pytest.fixture
def remat3_restored() -> Iterator[None]:
    before = (jax.config.jax_remat3, spec.config.jax_remat3)
    yield
    jax.config.update("jax_remat3", before[0])
    spec.config.update("jax_remat3", before[1])


def test_remat_page_cells(remat3_restored: None) -> None:
    want = _page_outputs(jax, jnp)
    got = _page_outputs(spec, snp)
    assert got == want
    assert spec.config.jax_remat3 is True


def _offloading(lib: Any, np_mod: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    """A function under each offloading policy, with its arguments."""
    policy = lib.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["y"], names_which_can_be_offloaded=["z"],
        offload_src="device", offload_dst="pinned_host")
    name = lib.ad_checkpoint.checkpoint_name

    @functools.partial(lib.checkpoint, policy=policy)
    def f(x: Any) -> Any:
        y = name(np_mod.sin(x), "y")
        z = name(np_mod.sin(y), "z")
        return np_mod.sum(name(np_mod.sin(z), "w"))

    dots = lib.checkpoint(lambda w, v: np_mod.sin(w @ v),
                          policy=lib.checkpoint_policies.offload_dot_with_no_batch_dims(
                              "device", "pinned_host"))
    return [(f, (np_mod.arange(4.0),)),
            (lambda w: dots(w, np_mod.ones(3)).sum(), (np_mod.ones((3, 3)),))]


def _offloaded(lib: Any, np_mod: Any) -> list[tuple[Any, str, str]]:
    """Per function: its gradient, the gradient's jaxpr (the copies to host
    memory and back) and the residuals it saves (the host copies)."""
    out = []
    for fn, args in _offloading(lib, np_mod):
        residuals = run_cell("print_saved_residuals(fn, *args)",
                             {"print_saved_residuals": lib.ad_checkpoint.print_saved_residuals,
                              "fn": fn, "args": args})
        out.append((lib.grad(fn)(*args), str(lib.make_jaxpr(lib.grad(fn))(*args)), residuals))
    return out


def test_offloading_policies_differentiate_as_jax() -> None:
    for got, want in zip(_offloaded(spec, snp), _offloaded(jax, jnp)):
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6)
        assert got[1:] == want[1:]
        assert "<host>" in got[1] and "f32<host>" in got[2]


def test_offload_names_must_not_overlap() -> None:
    def error(lib: Any) -> str:
        with pytest.raises(ValueError) as info:
            lib.checkpoint_policies.save_and_offload_only_these_names(
                names_which_can_be_saved=["a"], names_which_can_be_offloaded=["a"],
                offload_src="device", offload_dst="pinned_host")
        return str(info.value)
    assert error(spec) == error(jax)
