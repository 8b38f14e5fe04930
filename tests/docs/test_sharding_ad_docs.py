"""Every explicit-mode example of JAX's "Autodiff and sharding" page
(docs/new_docs/301/sharding-ad.md), run as written on JAX (a subprocess with 2
CPU devices) and on spec: what each cell prints must agree, output for output
(the manual-mode section is run by test_shard_map_docs.py). The capstone's
"exactly one AllReduce" is the page's ``print_all_reduces`` on both compiled
programs (the op names of the all-reduce lines of ``compile().as_text()``),
and is checked with the collective ledger in tests/sharding/test_execution.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.printed import assert_prints_match_up_to_rounding
from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import contextlib, io
import numpy as np
jax, jnp = IMPL
jax.config.update('jax_num_cpu_devices', 2)
out = {}
def cell(name, fn):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            fn()
        out[name] = buf.getvalue()
    except Exception as e:
        kind = next(c for c in type(e).__mro__
                    if c.__module__ == "builtins" or c.__name__ == "ShardingTypeError")
        out[name] = buf.getvalue() + "raises " + kind.__name__ + ": " + str(e).splitlines()[0]

jax.set_mesh(jax.make_mesh((2,), ('X',)))
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('X', None))
w = jax.device_put(jnp.arange(4 * 2.).reshape(4, 2) / 10., jax.P(None, None))

def loss(w, x):
  return jnp.sum((x @ w) ** 2)

def grads():
  dw, dx = jax.grad(loss, argnums=(0, 1))(w, x)
  print(jax.typeof(w), '->', jax.typeof(dw))
  print(jax.typeof(x), '->', jax.typeof(dx))
  print(dw)
cell("grad types", grads)
cell("grad jaxpr", lambda: print(jax.jit(jax.grad(loss)).trace(w, x).jaxpr))

a = jax.device_put(jnp.arange(4.).reshape(2, 2), jax.P(None, 'X'))
b = jax.device_put(jnp.arange(4., 8.).reshape(2, 2), jax.P('X', None))
cell("a b types", lambda: (print(jax.typeof(a)), print(jax.typeof(b))))
cell("a @ b", lambda: print(a @ b))
def all_reduced():
  c = jnp.einsum('ij,jk->ik', a, b, out_sharding=jax.P(None, None))
  print(jax.typeof(c))
  print(c)
cell("einsum replicated", all_reduced)
c = jnp.einsum('ij,jk->ik', a, b, out_sharding=jax.P(None, None, unreduced={'X'}))
cell("einsum unreduced", lambda: print(jax.typeof(c)))
def shards():
  for shard in c.addressable_shards:
    print(f'device {shard.device.id}:\n{shard.data}')
cell("unreduced shards", shards)
cell("reshard unreduced", lambda: print(jax.reshard(c, jax.P(None, None))))
c2 = jnp.einsum('ij,jk->ik', 2. * a, b, out_sharding=jax.P(None, None, unreduced={'X'}))
cell("c + c2", lambda: print(jax.typeof(c + c2)))
cell("cos of unreduced", lambda: jnp.cos(c))

w_ = jax.reshard(w, jax.P(None, None, reduced={'X'}))
cell("reduced type", lambda: print(jax.typeof(w_)))

def loss2(w, x):
  w = jax.reshard(w, jax.P(None, None, reduced={'X'}))
  return jnp.sum((x @ w) ** 2)
cell("loss2 jaxpr", lambda: print(jax.jit(jax.grad(loss2)).trace(w, x).jaxpr))
cell("loss2 grad", lambda: print(jax.grad(loss2)(w, x)))

def loss_fanout(w, x1, x2):
  w = jax.reshard(w, jax.P(None, None, reduced={'X'}))
  return jnp.sum(x1 @ w) + jnp.sum(x2 @ w)
x1 = jax.device_put(jnp.ones((8, 4)), jax.P('X', None))
x2 = jax.device_put(jnp.ones((8, 4)), jax.P('X', None))
cell("fanout jaxpr", lambda: print(jax.jit(jax.grad(loss_fanout)).trace(w, x1, x2).jaxpr))
cell("fanout grad", lambda: print(jax.grad(loss_fanout)(w, x1, x2)))

def predict(stacked_ws, xs):
  def apply_layer(xs, w):
    return jnp.tanh(xs @ w), None
  final_xs, _ = jax.lax.scan(apply_layer, xs, stacked_ws)
  return final_xs

def loss3(stacked_ws, batch):
  return jnp.sum(predict(stacked_ws, batch) ** 2)

@jax.jit
def step(stacked_ws, xs):
  def microbatch_step(grad_acc, xs_mb):
    grads = jax.grad(loss3)(stacked_ws, xs_mb)
    assert jax.typeof(grads).sharding.spec.unreduced == {'X'}
    return grad_acc + grads, None
  grad_acc = jax.reshard(jnp.zeros_like(stacked_ws), jax.P(unreduced={'X'}))
  grad_acc, _ = jax.lax.scan(microbatch_step, grad_acc, xs)
  grads = jax.reshard(grad_acc, jax.P())
  ws = jax.reshard(stacked_ws, jax.P())
  return ws - 0.01 * grads

stacked_ws = jax.device_put(jnp.stack([jnp.eye(4) / 2] * 3), jax.P(reduced={'X'}))
xs = jax.device_put(jnp.ones((5, 2, 4)), jax.P(None, 'X', None))
def capstone():
  new_ws = step(stacked_ws, xs)
  print(jax.typeof(new_ws))
  print(new_ws)
cell("capstone", capstone)
cell("capstone jaxpr", lambda: print(step.trace(stacked_ws, xs).jaxpr))

@jax.jit
def step_replicated(stacked_ws, xs):
  def microbatch_step(grad_acc, xs_mb):
    grads = jax.grad(loss3)(stacked_ws, xs_mb)
    return grad_acc + grads, None
  grad_acc = jnp.zeros_like(stacked_ws)
  grad_acc, _ = jax.lax.scan(microbatch_step, grad_acc, xs)
  return stacked_ws - 0.01 * grad_acc
ws_replicated = jax.reshard(stacked_ws, jax.P())
cell("replicated step", lambda: print(step_replicated(ws_replicated, xs)))
cell("replicated jaxpr", lambda: print(step_replicated.trace(ws_replicated, xs).jaxpr))

import re
def print_all_reduces(jitted, *args):
  hlo = jitted.lower(*args).compile().as_text()
  for line in hlo.splitlines():
    if 'all-reduce(' in line or 'all-reduce-start(' in line:
      print(re.search(r'op_name="([^"]*)"', line).group(1))
cell("capstone all-reduces", lambda: print_all_reduces(step, stacked_ws, xs))
cell("replicated all-reduces", lambda: print_all_reduces(step_replicated, ws_replicated, xs))
'''

CELLS = ["grad types", "grad jaxpr", "a b types", "a @ b", "einsum replicated",
         "einsum unreduced", "unreduced shards", "reshard unreduced", "c + c2",
         "cos of unreduced", "reduced type", "loss2 jaxpr", "loss2 grad", "fanout jaxpr",
         "fanout grad", "capstone", "capstone jaxpr", "replicated step", "replicated jaxpr",
         "capstone all-reduces", "replicated all-reduces"]

# Cells that print gradients of matrix products, compared under the contraction contract's
# rounding.
PRINTS_A_CONTRACTION = {"grad types", "loss2 grad"}


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any]]:
    return run_both(PROGRAM, devices=2)


@pytest.mark.parametrize("name", CELLS)
def test_cell_prints_what_jax_prints(both: tuple[dict[str, Any], dict[str, Any]],
                                     name: str) -> None:
    ours, theirs = both
    assert sorted(ours) == sorted(CELLS)
    if name in PRINTS_A_CONTRACTION:
        assert_prints_match_up_to_rounding(ours[name], theirs[name])
    else:
        assert ours[name] == theirs[name]


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
prefetch(PROGRAM, devices=2)
