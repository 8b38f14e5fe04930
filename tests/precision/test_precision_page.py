"""The code cells of JAX's page docs/new_docs/201/precision.md ("Matmul
precision") run on spec and on JAX 0.12 (CPU), in order, in one namespace per
library; what each cell prints (a final expression by its repr) and any
exception's class and message must be equal. spec runs with
``spec_dot_algorithms="cpu_jax"``, so that it accepts and rejects the presets
JAX's CPU backend does. The page's cells use ``x`` and ``f`` without defining
them; a first cell defines both. The shell cell runs both libraries in a
fresh process with the environment variable set."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import spec
import spec.numpy as snp
from tests.support.notebook import run_cell

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    '''
x = jnp.arange(16.0).reshape(4, 4) / 8  # exact products: no rounding to differ in
f = lambda x: x @ x.T
''', '''
y = jnp.dot(x, x, precision="F32_F32_F32")                        # true float32
print(y)
y = jnp.dot(x, x, precision="BF16_BF16_F32")                      # bf16 inputs, f32 accumulation
print(y)
y = jnp.dot(x, x, precision=lax.DotAlgorithmPreset.TF32_TF32_F32) # TF32 tensor cores
''', '''
x16 = jnp.ones((4, 4), jnp.float16)
print(repr(jnp.dot(x16, x16, precision="F16_F16_F32")))                # f16 result
print(repr(jnp.dot(x16, x16, precision="F16_F16_F32",
          preferred_element_type=jnp.float32)))               # keep the f32 accumulator
''', '''
def loss(x, w):
  return jnp.sum(jnp.dot(x, w, precision='BF16_BF16_F32'))

x, w = jnp.ones((4, 8)), jnp.ones((8, 2))
print(jax.jit(jax.grad(loss, argnums=1)).trace(x, w).jaxpr)
''', '''
jnp.dot(x, x.T, precision="F16_F16_F32")
''', '''
jnp.dot(x, x.T, precision='highest')   # give me real float32, whatever it costs
''', '''
# scoped:
with jax.default_matmul_precision('highest'):
  result = f(x)
print(result)
print(jax.make_jaxpr(f)(x))
with jax.default_matmul_precision('highest'):
  print(jax.make_jaxpr(f)(x))
''', '''
# process-wide:
jax.config.update('jax_default_matmul_precision', 'BF16_BF16_F32_X3')
print(jax.make_jaxpr(f)(x))
print(f(x))
jax.config.update('jax_default_matmul_precision', None)
''',
]

GRAD_JAXPR = """{ lambda ; a:f32[4,8] b:f32[8,2]. let
    c:f32[4,2] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=BF16_BF16_F32
      preferred_element_type=float32
    ] a b
    _:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] c
    d:f32[4,2] = broadcast_in_dim 1.0:f32[]
    e:f32[2,8] = dot_general[
      dimension_numbers=(([0], [0]), ([], []))
      precision=BF16_BF16_F32
      preferred_element_type=float32
    ] d a
    f:f32[8,2] = transpose[permutation=(1, 0)] e
  in (f,) }
"""


@functools.cache
def run_page(impl: str) -> tuple[str, ...]:
    if impl == "jax":
        ns: dict[str, Any] = {"jax": jax, "jnp": jnp, "lax": jax.lax}
        return tuple(run_cell(cell, ns) for cell in CELLS)
    ns = {"jax": spec, "jnp": snp, "lax": spec.lax}
    spec.config.update("spec_dot_algorithms", "cpu_jax")
    try:
        return tuple(run_cell(cell, ns) for cell in CELLS)
    finally:
        spec.config.update("spec_dot_algorithms", "as_named")


@pytest.mark.parametrize("k", range(len(CELLS)))
def test_cell(k: int) -> None:
    assert run_page("spec")[k] == run_page("jax")[k]


def test_gradient_jaxpr_is_the_pages() -> None:
    assert run_page("spec")[3] == GRAD_JAXPR


def test_unsupported_preset_message_is_the_pages() -> None:
    assert "The precision 'F16_F16_F32' is not supported by dot_general on CPU" in \
        run_page("spec")[4]


SHELL_PROGRAM = """
import sys
lib = __import__(sys.argv[1])
np_ = __import__(sys.argv[1] + ".numpy", fromlist=["numpy"])
x = np_.ones((2, 2))
print(lib.make_jaxpr(lambda a: a @ a)(x))
"""


def _with_env(module: str) -> str:
    env = dict(os.environ, JAX_DEFAULT_MATMUL_PRECISION="highest", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SHELL_PROGRAM, module], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def test_environment_variable_sets_the_default() -> None:
    out = _with_env("spec")
    assert out == _with_env("jax")
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in out
