"""shard_map (SPEC.md section 15): manual axes, varying types,
pvary/psum_invariant/ppermute/pmax/axis_index/all_gather inside a body,
eager and under jit, grad and vmap of shard_map. One program per group runs
on JAX (a subprocess with 4 CPU devices) and on spec; what each cell prints
(types, jaxprs, values, error classes) must agree."""

from __future__ import annotations

from typing import Any

import pytest

import spec
from tests.support.twin import CLASS_AND_FIRST_LINE, cell_program, merged, prefetch, run_merged

PRELUDE = cell_program(CLASS_AND_FIRST_LINE)

TWO_AXES = PRELUDE + r'''
mesh = jax.make_mesh((2, 2), ('x', 'y'))
jax.set_mesh(mesh)
a = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('x', 'y'))
def f(blk, c):
  print('in', jax.typeof(blk), jax.typeof(c))
  s = jax.lax.psum(c, 'y')
  t = jax.lax.psum(blk, ('x', 'y'))
  m = jax.lax.pmax(blk, 'x')
  i = jax.lax.axis_index('x')[None]
  p = jax.lax.ppermute(blk, 'x', [(0, 1), (1, 0)])
  q = blk * c
  g = jax.lax.all_gather(blk, 'y', axis=1, tiled=True)
  print('types', jax.typeof(s), jax.typeof(t), jax.typeof(m), jax.typeof(i), jax.typeof(p),
        jax.typeof(q), jax.typeof(g))
  return s, t, m, i, p, g
specs = dict(in_specs=(jax.P('x', 'y'), jax.P()),
             out_specs=(jax.P(), jax.P(), jax.P(None, 'y'), jax.P('x'), jax.P('x', 'y'),
                        jax.P('x', 'y')))
g = jax.shard_map(f, **specs)
cell("jaxpr", lambda: print(jax.make_jaxpr(g)(a, jnp.float32(2.))))
g2 = jax.shard_map(f, **specs, check_vma=False)
cell("jaxpr no check_vma", lambda: print(jax.make_jaxpr(g2)(a, jnp.float32(2.))))
def run():
  for v in g(a, jnp.float32(2.)):
    print(jax.typeof(v)); print(np.asarray(v))
cell("eager values", run)
cell("jit value", lambda: jax.jit(g)(a, jnp.float32(2.))[1])
cell("pmean", lambda: jax.shard_map(lambda v: jax.lax.pmean(v, 'x'), in_specs=jax.P('x', 'y'),
                                    out_specs=jax.P(None, 'y'))(a))
cell("in_specs mismatch", lambda: jax.shard_map(lambda v: v, in_specs=jax.P('y'),
                                                out_specs=jax.P('y'))(a))
# Along a tuple of axes: the position in mixed radix, the first axis major.
pos = jax.shard_map(lambda: (jax.lax.axis_index(('x', 'y'))[None],
                             jax.lax.axis_index(('y', 'x'))[None]),
                    in_specs=(), out_specs=(jax.P(('x', 'y')), jax.P(('y', 'x'))))
cell("axis_index of axes jaxpr", lambda: print(jax.make_jaxpr(pos)()))
cell("axis_index of axes", lambda: print(*(np.asarray(v) for v in pos())))
cell("axis_index of axes jit", lambda: print(*(np.asarray(v) for v in jax.jit(pos)())))
def uneven():  # a result type whose split dimension the mesh axis does not divide
  try:
    jax.jit(lambda v: jnp.fft.rfft(v))(jax.device_put(jnp.arange(8.), jax.P('x')))
  except ValueError as e:
    print(str(e).split(" Got shape")[0])
cell("uneven result sharding", uneven)
'''

ONE_AXIS = PRELUDE + r'''
mesh = jax.make_mesh((4,), ('i',))
jax.set_mesh(mesh)
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('i'))
w = jax.device_put(jnp.arange(4 * 3.).reshape(4, 3) / 10, jax.P())
@jax.shard_map(in_specs=(jax.P(), jax.P('i')), out_specs=jax.P())
def loss(w, x):
  return jax.lax.psum(jnp.sum(jnp.tanh(x @ w)), 'i')
cell("loss", lambda: loss(w, x))
cell("grad", lambda: jax.grad(loss)(w, x))
cell("grad jaxpr", lambda: print(jax.make_jaxpr(jax.grad(loss))(w, x)))
cell("jit grad", lambda: jax.jit(jax.grad(loss))(w, x))
cell("grad x", lambda: jax.grad(loss, argnums=1)(w, x))
cell("jvp", lambda: jax.jvp(loss, (w, x), (w, x))[1])
ring = jax.shard_map(lambda v: jax.lax.ppermute(v, 'i', [(k, (k + 1) % 4) for k in range(4)]),
                     in_specs=jax.P('i'), out_specs=jax.P('i'))
cell("ring", lambda: ring(x))
cell("ring grad", lambda: jax.grad(lambda v: jnp.sum(ring(v) * jnp.arange(4.)))(x))
cell("out vma error", lambda: jax.jit(jax.shard_map(lambda v: v, in_specs=jax.P('i'),
                                                    out_specs=jax.P()))(x))
cell("divisibility error", lambda: jax.shard_map(lambda v: v, in_specs=jax.P('i'),
                                                 out_specs=jax.P('i'))(jnp.ones(6)))
cell("rank error", lambda: jax.shard_map(lambda v: v, in_specs=jax.P('i', None, None),
                                         out_specs=jax.P('i'))(x))
Auto = jax.sharding.AxisType.Auto
jax.set_mesh(jax.make_mesh((4,), ('i',), (Auto,)))
def check_shmap(f, y):
  ans = jax.shard_map(f, in_specs=jax.P('i'), out_specs=jax.P('i'))(y)
  expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, 4)])
  print(bool(jnp.allclose(ans, expected)))
cell("docs check_shmap", lambda: check_shmap(lambda v: v.T @ v, jnp.arange(32.).reshape(8, 4)))
cell("auto vmap", lambda: jax.vmap(jax.shard_map(
    lambda a: a * 2 + jax.lax.axis_index('i'), in_specs=jax.P('i'), out_specs=jax.P('i')))(
        jnp.arange(12.).reshape(3, 4)))
'''

DOCS = PRELUDE + r'''
mesh = jax.make_mesh((2, 2), ('x', 'y'))
jax.set_mesh(mesh)
a = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('x', 'y'))
b = jax.device_put(jnp.arange(16 * 4.).reshape(16, 4), jax.P('y', None))
@jax.shard_map(in_specs=(jax.P('x', 'y'), jax.P('y', None)), out_specs=jax.P('x', None))
def matmul_basic(a_block, b_block):
  c_partialsum = jnp.dot(a_block, b_block)
  c_block = jax.lax.psum(c_partialsum, 'y')
  return c_block
cell("matmul_basic", lambda: matmul_basic(a, b))
cell("matmul_basic allclose", lambda: print(bool(jnp.allclose(
    matmul_basic(a, b), jnp.dot(a, b, out_sharding=jax.P('x', None))))))
cell("matmul_basic jaxpr", lambda: print(jax.make_jaxpr(matmul_basic)(a, b)))
@jax.shard_map(in_specs=jax.P('x', None), out_specs=jax.P('x', 'y'))
def f1(x_block):
  print(x_block.shape)
  return x_block
cell("f1", lambda: f1(jax.device_put(jnp.arange(12 * 12.).reshape(12, 12), jax.P('x', None))))
auto = jax.make_mesh((2, 2), ('x', 'y'), (jax.sharding.AxisType.Auto,) * 2)
given = jax.shard_map(lambda v: jax.lax.psum(v, 'x'), mesh=auto, in_specs=jax.P('x', 'y'),
                      out_specs=jax.P(None, 'y'))
with jax.set_mesh(auto):
  cell("concrete mesh jaxpr", lambda: print(jax.make_jaxpr(given)(jnp.ones((4, 4)))))
  cell("concrete mesh vmap jaxpr", lambda: print(jax.make_jaxpr(jax.vmap(given))(
      jnp.ones((3, 4, 4)))))
'''


PARTIAL = PRELUDE + r'''
jax.set_mesh(jax.make_mesh((2, 2), ('x', 'y')))
a = jax.device_put(jnp.arange(32.).reshape(8, 4), jax.P('x', 'y'))
def f(v):
  print(jax.typeof(v), jax.sharding.get_abstract_mesh())
  s = jax.lax.psum(v, 'x')
  print(jax.typeof(s))
  return (v * 2).sum(1), s
g = jax.shard_map(f, in_specs=jax.P('x'), out_specs=(jax.P('x'), jax.P()), axis_names={'x'})
cell("partial jaxpr", lambda: print(jax.make_jaxpr(g)(a)))
def run():
  r = g(a)
  print(jax.typeof(r[0]), jax.typeof(r[1])); print(r[0]); print(r[1])
cell("partial eager", run)
quiet = jax.shard_map(lambda v: ((v * 2).sum(1), jax.lax.psum(v, 'x')), in_specs=jax.P('x'),
                      out_specs=(jax.P('x'), jax.P()), axis_names={'x'})
cell("partial grad", lambda: jax.jit(jax.grad(lambda v: quiet(v)[0].sum()))(a))
cell("partial mismatch", lambda: jax.shard_map(lambda v: v, in_specs=jax.P('y'),
                                               out_specs=jax.P('y'), axis_names={'y'})(a))
'''


NESTED = PRELUDE + r'''
jax.set_mesh(jax.make_mesh((4,), ('i',)))
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('i'))
def body(v):
  def step(c, _):
    return c + jax.lax.psum(v.sum(), 'i'), None
  c, _ = jax.lax.scan(step, jnp.zeros(()), None, length=3)
  return v * c
sm = jax.shard_map(body, in_specs=jax.P('i'), out_specs=jax.P('i'))
cell("scan inside", lambda: sm(x))
cell("scan inside jaxpr", lambda: print(jax.make_jaxpr(sm)(x)))
def body2(v):
  def step(c, _):
    return c + v, None
  c, _ = jax.lax.scan(step, jnp.zeros_like(v), None, length=3)
  return c
sm2 = jax.shard_map(body2, in_specs=jax.P('i'), out_specs=jax.P('i'))
cell("scan carry varying", lambda: sm2(x))
cell("scan carry varying jaxpr", lambda: print(jax.make_jaxpr(sm2)(x)))
def outer(xs):
  return jax.lax.scan(lambda c, v: (c + sm2(v).sum(), None), 0., xs)[0]
cell("shard_map in scan", lambda: outer(jnp.stack([x, x])))
sm3 = jax.shard_map(lambda v: jax.lax.cond(v.sum() > 0, lambda: v * 2, lambda: v),
                    in_specs=jax.P('i'), out_specs=jax.P('i'))
cell("cond inside", lambda: sm3(x))
cell("jit inside", lambda: jax.shard_map(jax.jit(lambda v: jnp.sin(v) * 2), in_specs=jax.P('i'),
                                         out_specs=jax.P('i'))(x))
cell("grad of scan inside", lambda: jax.grad(lambda v: sm2(v).sum())(x))
def concrete(v):
  s = jax.lax.psum(v.sum(), 'i')
  n = jax.lax.psum(jnp.int32(1), 'i')
  for name, fn in [('bool', lambda: bool(s > 10)), ('int', lambda: int(n)),
                   ('index', lambda: range(10)[n]), ('float', lambda: float(s)),
                   ('item', lambda: s.item()), ('varying', lambda: bool(v.sum() > 0))]:
    try:
      print(name, fn())
    except Exception as e:
      print(name, type(e).__name__)
  return v
cell("invariant values are concrete eagerly", lambda: jax.shard_map(
    concrete, in_specs=jax.P('i'), out_specs=jax.P('i'))(x))
cell("zeros_like inside", lambda: print(jax.make_jaxpr(jax.shard_map(
    lambda v: (jnp.zeros_like(v), jnp.full_like(v, 2.), jnp.zeros_like(v, shape=(3,))),
    in_specs=jax.P('i'), out_specs=(jax.P('i'),) * 3))(x)))
# Results varying along fewer axes than their out_specs split them over end
# in an implicit pvary (with check_vma).
widen = jax.shard_map(lambda v, c: (v, c * 2., jnp.ones(4), jax.lax.psum(v, 'i')),
                      in_specs=(jax.P('i'), jax.P()), out_specs=(jax.P('i'),) * 4)
cell("implicit pvary jaxpr", lambda: print(jax.make_jaxpr(widen)(x, jnp.arange(4.))))
cell("implicit pvary value", lambda: print(*jax.jit(widen)(x, jnp.arange(4.))))
def full_message(f):
  try:
    f()
  except ValueError as e:
    print(str(e))
cell("out_specs entry named by its path", lambda: full_message(lambda: jax.make_jaxpr(
    jax.shard_map(lambda v: (v, {'a': jnp.sum(v)}), in_specs=jax.P('i'),
                  out_specs=(jax.P('i'), {'a': jax.P()})))(x)))
cell("a bare out_specs named without a path", lambda: full_message(lambda: jax.make_jaxpr(
    jax.shard_map(lambda v: jnp.sum(v), in_specs=jax.P('i'), out_specs=jax.P()))(x)))
'''


# One JAX process for the module; each group sets the mesh it uses.
GROUPS = {"two": TWO_AXES, "one": ONE_AXIS, "docs": DOCS, "partial": PARTIAL,
          "nested": NESTED}
PROGRAM = merged(PRELUDE, GROUPS)


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    return run_merged(PROGRAM, list(GROUPS))


CASES = [("two", k) for k in ["jaxpr", "jaxpr no check_vma", "eager values", "jit value",
                             "pmean", "in_specs mismatch", "axis_index of axes jaxpr",
                             "axis_index of axes", "axis_index of axes jit",
                             "uneven result sharding"]] + \
    [("one", k) for k in ["loss", "grad", "grad jaxpr", "jit grad", "grad x", "jvp", "ring",
                         "ring grad", "out vma error", "divisibility error", "rank error",
                         "docs check_shmap", "auto vmap"]] + \
    [("docs", k) for k in ["matmul_basic", "matmul_basic allclose", "matmul_basic jaxpr",
                          "f1", "concrete mesh jaxpr", "concrete mesh vmap jaxpr"]] + \
    [("partial", k) for k in ["partial jaxpr", "partial eager", "partial grad",
                             "partial mismatch"]] + \
    [("nested", k) for k in ["scan inside", "scan inside jaxpr", "scan carry varying",
                            "scan carry varying jaxpr", "shard_map in scan", "cond inside",
                            "jit inside", "grad of scan inside", "zeros_like inside",
                            "invariant values are concrete eagerly", "implicit pvary jaxpr",
                            "implicit pvary value", "out_specs entry named by its path",
                            "a bare out_specs named without a path"]]


@pytest.mark.parametrize("group,name", CASES)
def test_cell_prints_what_jax_prints(results: dict[str, tuple[dict[str, Any], dict[str, Any]]],
                                     group: str, name: str) -> None:
    ours, theirs = results[group]
    assert ours[name] == theirs[name]


def test_reduced_weights_layer_has_no_collective_in_its_backward_pass() -> None:
    """JEP 17111 and the manual-mode section of the autodiff-and-sharding
    page: with {R:X} weights the gradient comes out {U:X} and the backward
    pass moves nothing; with replicated weights the types require one
    all-reduce (the transpose of the implicit pvary)."""
    import numpy as np

    import spec.numpy as snp
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        with spec.set_mesh(spec.make_mesh((2,), ("X",))):
            x = spec.device_put(snp.arange(8 * 4.0).reshape(8, 4) / 32, spec.P("X", None))
            w = spec.device_put(snp.arange(4 * 2.0).reshape(4, 2) / 10.0, spec.P(None, None))
            w_r = spec.reshard(w, spec.P(None, None, reduced={"X"}))

            def layer(w_spec: spec.P) -> Any:
                return spec.shard_map(lambda x, w: snp.tanh(x @ w),
                                      in_specs=(spec.P("X", None), w_spec),
                                      out_specs=spec.P("X", None))

            reduced = layer(spec.P(None, None, reduced={"X"}))
            replicated = layer(spec.P())
            # jit: the forward loss value is dead under grad, so the only
            # collectives left are the backward pass's.
            with spec.collectives_log() as log_r:
                dw_r = spec.jit(spec.grad(lambda w, x: snp.sum(reduced(x, w) ** 2)))(w_r, x)
            with spec.collectives_log() as log_p:
                dw_p = spec.jit(spec.grad(lambda w, x: snp.sum(replicated(x, w) ** 2)))(w, x)
            summed = spec.reshard(dw_r, spec.P())
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    assert str(spec.typeof(dw_r)) == "float32[4,2]{U:X}"
    assert len(log_r) == 0, list(log_r)
    assert [e.kind for e in log_p] == ["all_reduce"]
    np.testing.assert_allclose(np.asarray(summed), np.asarray(dw_p), rtol=1e-6)


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
prefetch(PROGRAM)
