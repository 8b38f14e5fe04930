"""Hi types under transformations the page on hijax types does not show,
run on spec and on JAX 0.12.0.1 (in a subprocess), cell by cell: after the
page's cells up to its mesh (the quantized array type, its primitives, its
mapping spec and leading-axis spec), ``scan`` over hi values inside ``jit``;
a pair type whose tangent type is itself a hi type (``vspace_zero`` /
``vspace_add``), under ``grad``, ``vjp`` and ``jit``; and how often a jitted
hi program runs its primitives' ``expand`` (once per compiled program, as
JAX lowers it once); and the errors for a hi value where an array is
required. Per cell, what it prints and any exception's class and message
must be equal."""

from __future__ import annotations

import functools

import pytest

from tests.hijax.test_types_page import CELLS, namespace
from tests.support.notebook import run_cell
from tests.hijax import jax_once

# The page's cells before it sets a mesh (cell 25).
SETUP = CELLS[:25]

PAIR_TYPE = '''
from typing import Any

@dataclass(frozen=True)
class Pair:
  a: Any
  b: Any

@dataclass(frozen=True)
class PairTy(HiType):
  a: Any
  b: Any
  def lo_ty(self): return [self.a, self.b]
  def lower_val(self, p): return [p.a, p.b]
  def raise_val(self, a, b): return Pair(a, b)
  # the tangent type is a pair of the components' tangent types: a hi type
  def to_tangent_aval(self):
    return PairTy(self.a.to_tangent_aval(), self.b.to_tangent_aval())
  def vspace_zero(self):
    return make_pair(jnp.zeros(self.a.shape, self.a.dtype),
                     jnp.zeros(self.b.shape, self.b.dtype))
  def vspace_add(self, x, y):
    return make_pair(first(x) + first(y), second(x) + second(y))
  def str_short(self, short_dtypes=False, mesh_axis_types=False):
    return f'Pair{{{self.a.str_short(short_dtypes)},{self.b.str_short(short_dtypes)}}}'
  __repr__ = str_short

register_hitype(Pair, lambda p: PairTy(jax.typeof(p.a), jax.typeof(p.b)))

class MakePair(VJPHiPrimitive):
  def __init__(self, a, b):
    self.in_avals = (a, b)
    self.out_aval = PairTy(a, b)
    self.params = {}
    super().__init__()
  def expand(self, a, b): return Pair(a, b)
  def vjp_fwd(self, nzs_in, a, b): return self(a, b), None
  def vjp_bwd_retval(self, _, g): return (first(g), second(g))

class Get(VJPHiPrimitive):
  def __init__(self, p, idx):
    self.in_avals = (p,)
    self.out_aval = (p.a, p.b)[idx]
    self.params = dict(idx=idx)
    super().__init__()
  def expand(self, p): return (p.a, p.b)[self.idx]
  def vjp_fwd(self, nzs_in, p): return self(p), None
  def vjp_bwd_retval(self, _, g):
    other = jnp.zeros((self.in_avals[0].b, self.in_avals[0].a)[self.idx].shape, 'float32')
    return (make_pair(g, other) if self.idx == 0 else make_pair(other, g),)

def make_pair(a, b): return MakePair(jax.typeof(a), jax.typeof(b))(a, b)
def first(p): return Get(jax.typeof(p), 0)(p)
def second(p): return Get(jax.typeof(p), 1)(p)

pr = make_pair(jnp.arange(3.), jnp.ones(3) * 2.)
'''

COUNTED = '''
COUNT = {'q': 0, 'd': 0}

class CountedQ(Quantize):
  def expand(self, x):
    COUNT['q'] += 1
    return super().expand(x)

class CountedD(Dequantize):
  def expand(self, q):
    COUNT['d'] += 1
    return super().expand(q)

def cq(x): return CountedQ(jax.typeof(x))(x)
def cd(q): return CountedD(jax.typeof(q))(q)
'''

SCAN = {
    "summed over hi xs: jaxpr": '''
jax.jit(lambda qxs: jax.lax.scan(sum_dequantized, 0., qxs, length=4)).trace(qxs).jaxpr
''',
    "summed over hi xs: value": '''
print(jax.jit(lambda qxs: jax.lax.scan(sum_dequantized, 0., qxs, length=4))(qxs))
''',
    "hi carry and hi ys: jaxpr": '''
jax.jit(lambda q0, xs: jax.lax.scan(accum_quantized, q0, xs)).trace(qzero, xs).jaxpr
''',
    "hi carry and hi ys: values": '''
qt, qy = jax.jit(lambda q0, xs: jax.lax.scan(accum_quantized, q0, xs))(qzero, xs)
print(jax.typeof(qt), jax.typeof(qy))
print(qt.qvalue, qt.scale)
print(qy.qvalue, qy.scale)
''',
    "reversed, unrolled": '''
qt, qy = jax.jit(lambda q0, xs: jax.lax.scan(accum_quantized, q0, xs, reverse=True,
                                             unroll=2))(qzero, xs)
print(qt.qvalue, qt.scale, qy.scale)
''',
    "closed-over hi xs forwarded": '''
f = jax.jit(lambda q: jax.lax.scan(lambda c, x: (c, x), q, qxs, length=4))
print(f.trace(qzero).jaxpr)
c, ys = f(qzero)
print(jax.typeof(c), jax.typeof(ys), ys.scale)
''',
    "hi carry read, array ys": '''
print(jax.jit(lambda q: jax.lax.scan(lambda c, x: (c, dequantize(c) * x), q, xs))(qzero)[1])
''',
    "no length for hi xs": '''
jax.jit(lambda q: jax.lax.scan(lambda c, x: (c, x), q, qxs))(qzero)
''',
    "carry changes type": '''
jax.jit(lambda q: jax.lax.scan(lambda c, x: (x, ()), q, xs))(qzero)
''',
    "eager scan making hi ys from arrays": '''
print(jax.typeof(jax.lax.scan(lambda c, x: (c, quantize(x)), 0., xs)[1]))
''',
    "grad through a jitted scan over hi xs": '''
print(jax.grad(lambda w: jax.jit(lambda w, qxs: jax.lax.scan(
    lambda t, q: (t + jnp.sum(dequantize(q) * w), ()), 0., qxs, length=4)[0])(w, qxs))(
    jnp.ones((2, 3))))
''',
}

VSPACE = {
    "pair type": '''
print(jax.typeof(pr))
''',
    "used twice: value": '''
g = jax.grad(lambda p: jnp.sum(first(p) * second(p)))(pr)
print(jax.typeof(g), g.a, g.b)
''',
    "used twice: jaxpr": '''
jax.make_jaxpr(jax.grad(lambda p: jnp.sum(first(p) * second(p))))(pr)
''',
    "used twice, jitted": '''
g = jax.jit(jax.grad(lambda p: jnp.sum(first(p)) + jnp.sum(first(p) * 3.)))(pr)
print(jax.typeof(g), g.a, g.b)
''',
    "no gradient path: value": '''
g = jax.grad(lambda p, x: jnp.sum(x), argnums=0)(pr, jnp.ones(3))
print(jax.typeof(g), g.a, g.b)
''',
    "no gradient path: jaxpr": '''
jax.make_jaxpr(jax.grad(lambda p, x: jnp.sum(x), argnums=0))(pr, jnp.ones(3))
''',
    "no gradient path, jitted": '''
g = jax.jit(jax.grad(lambda p, x: jnp.sum(x), argnums=0))(pr, jnp.ones(3))
print(jax.typeof(g), g.a, g.b)
''',
    "through jitted calls": '''
g = jax.grad(lambda p: jnp.sum(jax.jit(first)(p) * jax.jit(second)(p)))(pr)
print(jax.typeof(g), g.a, g.b)
''',
    "through a jit returning a pair": '''
print(jax.grad(lambda x: jnp.sum(second(jax.jit(lambda y: make_pair(y, y * y))(x))))(
    jnp.arange(3.)))
''',
    "vjp": '''
y, f_vjp = jax.vjp(lambda p: first(p) * 3., pr)
g, = f_vjp(jnp.ones(3))
print(jax.typeof(g), g.a, g.b)
''',
    "two pair arguments": '''
g = jax.grad(lambda p, q: jnp.sum(first(p) * second(q)), argnums=(0, 1))(pr, pr)
print([(jax.typeof(x), x.a, x.b) for x in g])
''',
    "jvp needs the rules' jvp": '''
jax.jvp(lambda p: first(p) * second(p), (pr,), (pr,))
''',
}

# Loops and branches with hi carries and operands: where JAX 0.12 runs them
# (while_loop, eagerly and jitted, and vmapped with a batched predicate where
# the body passes the hi carry through; cond eagerly, and jitted with array
# results), and the errors for a hi predicate, index or carry.
WHILE = {
    "hi carry, eagerly": '''
c = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, quantize(dequantize(c[1]) + 1.)),
                       (0, qzero))
print(jax.typeof(c[1]), c[1].qvalue, c[1].scale)
''',
    "hi carry: jaxpr": '''
jax.jit(lambda q: jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (
    c[0] + 1, quantize(dequantize(c[1]) + 1.)), (0, q))).trace(qzero).jaxpr
''',
    "hi carry, jitted": '''
c = jax.jit(lambda q: jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (
    c[0] + 1, quantize(dequantize(c[1]) + 1.)), (0, q)))(qzero)
print(jax.typeof(c[1]), c[1].qvalue, c[1].scale)
''',
    "predicate reads the hi carry": '''
c = jax.jit(lambda q: jax.lax.while_loop(lambda q: jnp.sum(dequantize(q)) < 20.,
                                         lambda q: quantize(dequantize(q) + 1.), q))(qzero)
print(c.qvalue, c.scale)
''',
    "fori_loop, rolled and unrolled": '''
for u in (1, True):
  c = jax.jit(lambda q: jax.lax.fori_loop(0, 3, lambda i, q: quantize(dequantize(q) + i), q,
                                          unroll=u))(qzero)
  print(c.qvalue, c.scale)
''',
    "hi constants": '''
print(jax.jit(lambda q, n: jax.lax.while_loop(
    lambda i: i < n, lambda i: i + jnp.sum(dequantize(q)).astype(int), 0))(qx, 50))
print(jax.lax.while_loop(lambda c: jnp.sum(dequantize(qx)) > c, lambda c: c + 5., 0.))
''',
    "vmapped, a batched predicate, the hi carry passed through": '''
k, q = jax.vmap(lambda n: jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1]),
                                             (0, qx)), out_axes=(0, None))(jnp.arange(4))
print(k, jax.typeof(q), q.scale)
''',
    "carry changes type": '''
jax.lax.while_loop(lambda q: True, lambda q: dequantize(q), qx)
''',
    "disable_jit": '''
with jax.disable_jit():
  jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]), (0, qzero))
''',
}

COND = {
    "hi operand and result, eagerly": '''
r = jax.lax.cond(True, lambda q: quantize(dequantize(q) * 2.), lambda q: q, qx)
print(jax.typeof(r), r.qvalue, r.scale)
''',
    "hi operand, array result, jitted": '''
print(jax.jit(lambda p, q: jax.lax.cond(p, lambda q: dequantize(q) * 2., lambda q: dequantize(q),
                                        q))(True, qx))
''',
    "grad to an array through a hi result": '''
print(jax.grad(lambda x, p: jnp.sum(dequantize(jax.lax.cond(
    p, lambda x: quantize(x * 3.), lambda x: quantize(x), x))))(x, True))
''',
    "grad to a hi operand": '''
f = lambda q, p: jnp.sum(jax.lax.cond(p, lambda q: dequantize(q) * 3.,
                                      lambda q: dequantize(q) ** 2, q))
print(jax.grad(f)(qx, False))
print(jax.jit(jax.grad(f))(qx, True))
''',
    "vjp to a hi operand": '''
y, f = jax.vjp(lambda q: jax.lax.cond(True, lambda q: dequantize(q) * 3., lambda q: dequantize(q),
                                      q), qx)
print(jax.typeof(f(jnp.ones((2, 3)))[0]), f(jnp.ones((2, 3))))
''',
    "pair gradients by branch": '''
for b in (True, False):
  g = jax.grad(lambda p, b: jnp.sum(jax.lax.cond(b, lambda p: first(p) * second(p),
                                                 lambda p: first(p), p)))(pr, b)
  print(jax.typeof(g), g.a, g.b)
''',
    "branches of different types": '''
jax.lax.cond(True, lambda q: q, lambda q: dequantize(q), qx)
''',
    "hi predicate": '''
jax.lax.cond(qx, lambda: 1., lambda: 2.)
''',
    "hi predicate, jitted": '''
jax.jit(lambda q: jax.lax.cond(q, lambda: 1., lambda: 2.))(qx)
''',
    "hi branch index": '''
jax.lax.switch(qx, [lambda: 1., lambda: 2.])
''',
    "disable_jit": '''
with jax.disable_jit():
  print(jax.lax.cond(True, lambda q: quantize(dequantize(q) * 2.), lambda q: q, qx).scale)
''',
}

EXPAND_COUNTS = {
    "a jitted program called three times": '''
f = jax.jit(lambda x: cd(cq(x)))
for _ in range(3): f(x)
print(COUNT)
''',
    "a hi result, then a hi argument": '''
g = jax.jit(cq)
for _ in range(3): q = g(x)
h = jax.jit(cd)
for i in range(3): h(g(x * i))
print(COUNT)
''',
    "an unused hi result is not expanded": '''
k = jax.jit(lambda x: CountedD(jax.typeof(cq(x)))(cq(x)))
for _ in range(2): k(x)
print(COUNT)
''',
    "a new jit of the same function": '''
for _ in range(2): jax.jit(lambda x: cd(cq(x)))(x)
print(COUNT)
''',
    "a jitted scan with hi carries": '''
s = jax.jit(lambda q0, xs: jax.lax.scan(lambda c, x: (cq(cd(c) + x), ()), q0, xs))
for _ in range(3): s(qzero, xs)
print(COUNT)
''',
}

# A hi value where an array is required: JAX's jnp functions check their
# operands inside their jit (the message names its tracer class), its ufunc
# objects before it; a tracer forwards operators and methods to its type.
BAD_INPUT = {
    "a jnp function, eagerly": "jnp.sin(qx)",
    "a ufunc, eagerly": "jnp.add(qx, 1.)",
    "a unary ufunc, eagerly": "jnp.negative(qx)",
    "a ufunc under jit": "jax.jit(lambda q: jnp.add(q, 1.))(qx)",
    "a ufunc under vmap": "jax.vmap(lambda q: jnp.add(q, 1.), in_axes=QArraySpec(), "
                          "axis_size=4)(qxs)",
    "a ufunc under grad": "jax.grad(lambda x: jnp.sum(jnp.multiply(quantize(x), 2.)))(x)",
    "a reduction under grad": "jax.grad(lambda x: jnp.sum(quantize(x)))(x)",
    "a jnp function under vmap": "jax.vmap(jnp.sin, in_axes=QArraySpec(), axis_size=4)(qxs)",
    "a reflected operator": "jax.jit(lambda q: 1 + q)(qx)",
    "a unary operator": "jax.jit(lambda q: -q)(qx)",
    "a comparison": "jax.jit(lambda q: q == q)(qx)",
    "matmul": "jax.jit(lambda q: q @ q)(qx)",
    "indexing": "jax.jit(lambda q: q[0])(qx)",
    "a method": "jax.jit(lambda q: q.sum())(qx)",
}

# On a mesh: the page's partition spec for quantized arrays (cells 30-31),
# then reshard of hi values (the type's ``reshard`` gives the result type;
# each component moves to its sharding there), device_put of a hi value
# (refused, JAX's message) and autodiff through shard_map of a spec without
# a tangent spec.
MESH_SETUP = [CELLS[30], CELLS[31], '''
mesh = jax.make_mesh((4,), ('i',))
rows = jnp.arange(24., dtype='float32').reshape(8, 3)
''']

SHARDING = {
    "reshard without a reshard method": '''
with jax.set_mesh(mesh):
  jax.sharding.reshard(quantize(rows), jax.P('i'))
''',
    "reshard by a PartitionSpec": '''
QArrayTy.reshard = lambda self, s: QArrayTy(self.shape, s)
with jax.set_mesh(mesh):
  q = jax.sharding.reshard(quantize(rows), jax.P('i'))
  print(jax.typeof(q), q.qvalue.sharding.spec, q.scale.sharding.spec, q.scale)
''',
    "reshard under jit": '''
with jax.set_mesh(mesh):
  f = jax.jit(lambda x: jax.sharding.reshard(quantize(x), jax.P('i')))
  print(f.trace(rows).jaxpr)
  q = f(rows)
  print(jax.typeof(q), q.qvalue.sharding.spec, q.scale.sharding.spec)
  q = jax.jit(lambda q: jax.sharding.reshard(q, jax.P('i')))(quantize(rows))
  print(jax.typeof(q), q.qvalue.sharding.spec)
''',
    "reshard by a NamedSharding": '''
with jax.set_mesh(mesh):
  q = jax.sharding.reshard(quantize(rows), jax.NamedSharding(mesh, jax.P('i')))
  print(jax.typeof(q), q.qvalue.sharding.spec)
''',
    "device_put": '''
with jax.set_mesh(mesh):
  jax.device_put(quantize(rows), jax.P('i'))
''',
    "device_put, no placement": "jax.device_put(qx)",
    "device_put under jit": "jax.jit(lambda q: jax.device_put(q))(qx)",
    "grad through shard_map, no tangent spec": '''
with jax.set_mesh(mesh):
  rows_i = jax.device_put(rows, jax.P('i'))
  f = jax.shard_map(quantize, in_specs=jax.P('i'), out_specs=QArrayP(jax.P('i')))
  jax.jit(jax.grad(lambda x: jnp.sum(dequantize(f(x)) ** 2)))(rows_i)
''',
    "grad through shard_map of a hi operand, no tangent spec": '''
with jax.set_mesh(mesh):
  g = jax.shard_map(dequantize, in_specs=QArrayP(jax.P('i')), out_specs=jax.P('i'))
  jax.jit(jax.grad(lambda q: jnp.sum(g(q) ** 2)))(quantize(jax.device_put(rows, jax.P('i'))))
''',
}

GROUPS = {"scan": SCAN, "while": WHILE, "cond": COND, "vspace": VSPACE,
          "expand": EXPAND_COUNTS, "bad input": BAD_INPUT, "sharding": SHARDING}
TWINS = [(group, name, cell) for group, cells in GROUPS.items() for name, cell in cells.items()]
_FIRST_ON_MESH = [g for g, _, _ in TWINS].index("sharding")
PROGRAM = [*SETUP, PAIR_TYPE, COUNTED, *(cell for _, _, cell in TWINS[:_FIRST_ON_MESH]),
           *MESH_SETUP, *(cell for _, _, cell in TWINS[_FIRST_ON_MESH:])]

_JAX_PROGRAM = """
import json
from tests.hijax.test_hitype_twins import PROGRAM
from tests.hijax.test_types_page import namespace
from tests.support.notebook import run_cell
ns = namespace("jax")
print(json.dumps([run_cell(c, ns) for c in PROGRAM]))
"""


jax_once.declare(__name__, _JAX_PROGRAM, 8)


@functools.cache
def run(impl: str) -> tuple[str, ...]:
    if impl == "jax":
        outs = list(jax_once.outputs(_JAX_PROGRAM, 8))
    else:
        import spec
        before = spec.config.jax_num_cpu_devices
        spec.config.update("jax_num_cpu_devices", 8)
        try:
            ns = namespace("spec")
            with spec.set_mesh(None):
                outs = [run_cell(c, ns) for c in PROGRAM]
        finally:
            spec.config.update("jax_num_cpu_devices", before)
    # The set-up cells run cleanly on both.
    head, mesh_at = len(SETUP) + 2, len(SETUP) + 2 + _FIRST_ON_MESH
    setup = [*outs[:head], *outs[mesh_at:mesh_at + len(MESH_SETUP)]]
    assert not any(o.startswith("raises") for o in setup), outs
    return tuple([*outs[head:mesh_at], *outs[mesh_at + len(MESH_SETUP):]])


@pytest.mark.parametrize("k", [pytest.param(k, id=f"{group}: {name}")
                               for k, (group, name, _) in enumerate(TWINS)])
def test_cell(k: int) -> None:
    assert run("spec")[k] == run("jax")[k]
