"""Callbacks and effects, twin-tested against JAX 0.12: ``jax.debug.print``,
``jax.debug.log``,
``jax.debug.callback``, ``jax.pure_callback``, ``io_callback`` eagerly and
under jit, vmap, grad, scan, cond, while_loop, checkpoint, custom_jvp/vjp and
shard_map.

One program of cells runs on JAX (a subprocess with 4 CPU devices) and on
spec; each cell's printed output (what its callbacks print, its results, a
raised exception's class and message) must be equal. A runtime error raised
through a callback is compared by its first line and its last (the Python
traceback between them names each side's own frames).
"""

from __future__ import annotations

import re

import pytest

from tests.support.twin import prefetch, run_both

PROGRAM = r'''
import contextlib, io
import numpy as np
jax, jnp = IMPL
lax = jax.lax
jax.config.update('jax_num_cpu_devices', 4)
from importlib import import_module
io_callback = import_module(jax.__name__ + '.experimental').io_callback
sds = jax.ShapeDtypeStruct
out = {}
def cell(name, fn):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            r = fn()
            jax.effects_barrier()
            if r is not None:
                print(jax.tree.map(lambda v: np.asarray(v).round(4).tolist(), r))
        out[name] = buf.getvalue()
    except Exception as e:
        msg = str(e).splitlines()
        short = msg[0] + (" ... " + msg[-1] if len(msg) > 1 else "") if msg else ""
        out[name] = buf.getvalue() + "raises " + type(e).__name__ + ": " + short

def pr(x):
    jax.debug.print("x={x}", x=x)
    return x * 2

# ---- debug.print
cell("eager", lambda: pr(1.5))
cell("eager_array", lambda: pr(jnp.arange(4.)))
cell("jit", lambda: jax.jit(pr)(jnp.arange(3)))
cell("positional", lambda: jax.debug.print("{} and {}", 1, jnp.float32(2.5)))
cell("format_spec", lambda: jax.jit(lambda x: jax.debug.print("{:.2f}", x))(
    jnp.float32(3.14159)))
cell("no_placeholders", lambda: jax.debug.print("hello", jnp.arange(2)))
cell("static_string_arg", lambda: jax.jit(lambda x: jax.debug.print("{} {}", "s", x))(1.0))
cell("pytree_arg", lambda: jax.jit(lambda d: jax.debug.print("{d}", d=d))(
    {'a': jnp.ones(2), 'b': 3.0}))
cell("two_call_form", lambda: jax.debug.print(ordered=True)("two {}", 7))

# ---- debug.log: records on JAX's debugging logger (handle() ignores its level)
import logging, re
class _Capture(logging.Handler):
    def emit(self, r):
        print("LOG", r.name, r.levelname, r.lineno, repr(r.funcName), r.args, r.getMessage())
@contextlib.contextmanager
def _logged(level=logging.INFO):
    lg = logging.getLogger("jax._src.debugging")
    h, old = _Capture(), (lg.level, lg.propagate)
    lg.addHandler(h); lg.setLevel(level); lg.propagate = False
    try:
        yield
    finally:
        lg.removeHandler(h); lg.setLevel(old[0]); lg.propagate = old[1]
def lg(x):
    jax.debug.log("x={x}", x=x)
    jax.debug.log("plain", x, skip_format_check=True)
    return x + 1
def _log_cell(fn, level=logging.INFO):
    with _logged(level):
        r = fn()
        jax.effects_barrier()
    return r
cell("log_eager", lambda: _log_cell(lambda: lg(jnp.arange(3.))))
cell("log_jit", lambda: _log_cell(lambda: jax.jit(lg)(jnp.float32(2.5))))
cell("log_jit_twice", lambda: _log_cell(lambda: [jax.jit(lg)(jnp.int32(i)) for i in (1, 2)]))
cell("log_vmap", lambda: _log_cell(lambda: jax.vmap(lg)(jnp.arange(2.))))
cell("log_level_warning", lambda: _log_cell(lambda: lg(1.0), logging.WARNING))
cell("log_two_call", lambda: _log_cell(lambda: jax.debug.log(ordered=True)("o {}", 3)))
cell("log_unused", lambda: _log_cell(lambda: jax.debug.log("{x}", 1, x=2)))
cell("log_jaxpr", lambda: print(re.sub(r"LogRecord: (\S+), (\d+), [^,]+,",
                                       r"LogRecord: \1, \2, FILE,",
                                       str(jax.make_jaxpr(lg)(jnp.arange(2.))))))
cell("unused_positional", lambda: jax.debug.print("a", 1))
cell("unused_keyword", lambda: jax.debug.print("a {x}", x=1, y=2))
cell("printoptions", lambda: [np.set_printoptions(precision=2),
                              jax.debug.print("{}", jnp.float32(1) / 3),
                              np.set_printoptions(precision=8)][0])
cell("vmap", lambda: jax.vmap(pr)(jnp.arange(3.)))
cell("vmap_in_axes", lambda: jax.vmap(lambda x, y: jax.debug.print("{} {}", x, y),
                                      in_axes=(1, None))(jnp.arange(6.).reshape(2, 3), 5.0))
cell("vmap_jit", lambda: jax.vmap(jax.jit(pr))(jnp.arange(2.)))
cell("nested_vmap", lambda: jax.vmap(jax.vmap(pr))(jnp.arange(4.).reshape(2, 2)))
cell("vmap_ordered", lambda: jax.vmap(lambda x: jax.debug.print("o {}", x, ordered=True))(
    jnp.arange(2.)))
cell("grad", lambda: jax.grad(lambda x: pr(x) ** 2)(3.0))
cell("grad_jit", lambda: jax.jit(jax.grad(lambda x: jnp.sin(pr(x))))(1.0))
cell("jvp", lambda: jax.jvp(pr, (1.0,), (1.0,)))
cell("vjp", lambda: jax.vjp(pr, 2.0)[1](1.0))
cell("value_and_grad", lambda: jax.value_and_grad(lambda x: pr(x).sum())(jnp.ones(2)))
cell("scan", lambda: jax.lax.scan(lambda c, x: (pr(c) + x, None), 0., jnp.arange(3.))[0])
cell("scan_jit", lambda: jax.jit(lambda xs: jax.lax.scan(lambda c, x: (c + pr(x), c), 0., xs))(
    jnp.arange(3.)))
cell("cond_true", lambda: jax.jit(lambda x: lax.cond(x > 0, pr, lambda y: y, x))(1.0))
cell("cond_false", lambda: jax.jit(lambda x: lax.cond(x > 0, pr, lambda y: y, x))(-1.0))
cell("switch", lambda: lax.switch(1, [pr, lambda y: pr(y + 1)], 2.0))
cell("while", lambda: jax.jit(lambda x: lax.while_loop(lambda c: c < 3,
                                                       lambda c: pr(c) // 2 + 1, x))(0))
cell("fori", lambda: lax.fori_loop(0, 3, lambda i, c: (jax.debug.print("i={}", i), c + i)[1],
                                   0))
cell("checkpoint_grad", lambda: jax.grad(jax.checkpoint(lambda x: jnp.sin(pr(x))))(1.0))
cell("custom_jvp", lambda: jax.grad(_cj)(2.0))
cell("custom_vjp", lambda: jax.grad(_cv)(2.0))
cell("dead_print_kept", lambda: jax.jit(lambda x: (jax.debug.print("kept {}", x), x)[1] * 0 + 1)(
    4.0))
cell("jaxpr_effects", lambda: print(sorted(map(str, jax.make_jaxpr(_effects_fn)(1.0).effects))))
cell("jaxpr_text", lambda: print(jax.make_jaxpr(
    lambda x: jax.debug.print("v {}", x, ordered=True))(1.0)))
def eqn_effects(f, *args):
    print([sorted(map(str, e.effects)) for e in jax.make_jaxpr(f)(*args).eqns])
cell("jit_eqn_effects", lambda: eqn_effects(jax.jit(_effects_fn), 1.0))
cell("cond_eqn_effects", lambda: eqn_effects(lambda x: lax.cond(x > 0, pr, lambda y: y, x), 1.0))
cell("scan_eqn_effects", lambda: eqn_effects(lambda xs: lax.scan(lambda c, x: (c, pr(x)), 0., xs),
                                             jnp.ones(2)))

def _traced_prints(x):
    jax.debug.print("traced")  # (no operands: printed while tracing, folded)
    with jax.ensure_compile_time_eval():
        jax.debug.print("compile time {}", jnp.arange(2) + 1)
    return x + 1
cell("compile_time_print_once", lambda: [jax.jit(_traced_prints)(1.0),
                                         jax.make_jaxpr(_traced_prints)(1.0),
                                         jax.jit(_traced_prints)(2.0)][-1])

# ---- debug.callback
cell("callback_eager", lambda: jax.debug.callback(lambda x, y: print("cb", x, y), 1,
                                                  y=jnp.arange(2)))
cell("callback_jit", lambda: jax.jit(lambda x: jax.debug.callback(
    lambda v: print("cb", isinstance(v, jax.Array), v), x))(2.0))
cell("callback_vmap", lambda: jax.vmap(lambda x: jax.debug.callback(print, x))(jnp.arange(3)))
cell("callback_grad", lambda: jax.grad(lambda x: (jax.debug.callback(print, x), x * x)[1])(
    2.0))
cell("callback_raises_eager", lambda: jax.debug.callback(_boom, 1.0))
cell("callback_raises_jit", lambda: jax.jit(lambda x: jax.debug.callback(_boom, x))(1.0))

# ---- pure_callback
f32 = sds((), jnp.float32)
cell("pure_eager", lambda: jax.pure_callback(lambda x: np.sin(x).astype(np.float32), f32,
                                              1.0))
cell("pure_jit", lambda: jax.jit(lambda x: jax.pure_callback(
    lambda v: np.cos(v), sds(x.shape, x.dtype), x))(jnp.arange(3.)))
cell("pure_pytree", lambda: jax.pure_callback(
    lambda d: {'s': d['a'] + d['b']}, {'s': sds((2,), jnp.float32)},
    {'a': jnp.ones(2), 'b': jnp.ones(2)}))
cell("pure_dce", lambda: jax.jit(lambda x: (jax.pure_callback(_loud, f32, x), x + 1)[1])(1.0))
cell("pure_used", lambda: jax.jit(lambda x: jax.pure_callback(_loud, f32, x) + 1)(1.0))
for method in ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
               "legacy_vectorized"]:
    cell("pure_vmap_" + method, lambda m=method: jax.vmap(lambda x, y: jax.pure_callback(
        _shapes, sds(x.shape, x.dtype), x, y, vmap_method=m), in_axes=(0, None))(
            jnp.arange(3.), jnp.ones(2)))
cell("pure_vmap_none", lambda: jax.vmap(lambda x: jax.pure_callback(np.sin, f32, x))(
    jnp.arange(2.)))
cell("pure_bad_method", lambda: jax.pure_callback(np.sin, f32, 1.0, vmap_method="loop"))
cell("pure_grad", lambda: jax.grad(lambda x: jax.pure_callback(np.sin, f32, x))(1.0))
cell("pure_custom_jvp", lambda: jax.grad(_csin)(1.0))
cell("pure_raises", lambda: jax.jit(lambda x: jax.pure_callback(_boom, f32, x))(1.0))
cell("pure_raises_eager", lambda: jax.pure_callback(_boom, f32, 1.0))
cell("pure_wrong_shape", lambda: jax.jit(lambda x: jax.pure_callback(
    lambda v: np.ones(3, np.float32), f32, x))(1.0))
cell("pure_wrong_dtype", lambda: jax.jit(lambda x: jax.pure_callback(
    lambda v: np.ones((), np.int32), f32, x))(1.0))
cell("pure_x64", lambda: jax.pure_callback(np.sin, sds((), np.float64), 1.0))
cell("pure_canonical_results", lambda: jax.pure_callback(
    lambda v: (1.0, np.zeros(2, np.int64)), (f32, sds((2,), jnp.int32)), 1.0))
cell("pure_wrong_count", lambda: jax.jit(lambda x: jax.pure_callback(
    lambda v: [1.0, 2.0], f32, x))(1.0))
cell("pure_wrong_int64", lambda: jax.pure_callback(lambda v: np.zeros((), np.int64), f32, 1.0))
cell("pure_jaxpr", lambda: print(jax.make_jaxpr(
    lambda x: jax.pure_callback(np.sin, f32, x, vmap_method="sequential"))(1.0)))

# ---- io_callback
cell("io_eager", lambda: io_callback(lambda x: print("io", x) or x, f32, 1.0))
def _io_print(v):
    print("io", v)
    return v
cell("io_jit_ordered", lambda: jax.jit(lambda x: [
    io_callback(_io_print, f32, x + i, ordered=True) for i in range(3)][-1])(1.0))
cell("io_unused_kept", lambda: jax.jit(lambda x: (io_callback(_loud, f32, x), x)[1])(1.0))
cell("io_vmap", lambda: jax.vmap(lambda x: io_callback(_io_print, f32, x))(jnp.arange(3.)))
cell("io_vmap_ordered", lambda: jax.vmap(lambda x: io_callback(lambda v: v, f32, x, ordered=True))(
    jnp.arange(3.)))
cell("io_grad", lambda: jax.grad(lambda x: io_callback(lambda v: v, f32, x))(1.0))
cell("io_scan_ordered", lambda: jax.lax.scan(
    lambda c, x: (c + io_callback(_io_print, f32, x, ordered=True), None), 0., jnp.arange(3.))[0])
cell("io_jaxpr", lambda: print(jax.make_jaxpr(
    lambda x: io_callback(np.sin, f32, x, ordered=True))(1.0)))

# ---- shard_map
mesh = jax.make_mesh((4,), ('i',))
def sm(f, i=jax.P('i'), o=jax.P('i')):
    return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o)
cell("shard_map_print", lambda: jax.jit(sm(pr))(jnp.arange(8.)))
cell("shard_map_print_eager", lambda: sm(pr)(jnp.arange(4.)))
auto = jax.make_mesh((4,), ('i',), axis_types=(jax.sharding.AxisType.Auto,))
cell("shard_map_replicated", lambda: jax.jit(jax.shard_map(
    pr, mesh=auto, in_specs=jax.P(), out_specs=jax.P()))(jnp.arange(2.)))
cell("shard_map_callback", lambda: jax.jit(sm(
    lambda x: (jax.debug.callback(lambda v: print("dev", v), x), x)[1]))(jnp.arange(4.)))
'''

# Helpers used by the cells, defined before them.
HELPERS = r'''
def _boom(*a):
    raise ValueError("boom")
def _loud(v):
    print("pure ran")
    return v
def _shapes(x, y):
    print("shapes", np.shape(x), np.shape(y))
    return np.asarray(x) * 2
def _effects_fn(x):
    jax.debug.print("a {}", x)
    jax.debug.print("b {}", x, ordered=True)
    io_callback(lambda v: v, sds((), jnp.float32), x)
    io_callback(lambda v: v, sds((), jnp.float32), x, ordered=True)
    return jax.pure_callback(lambda v: v, sds((), jnp.float32), x)
@jax.custom_jvp
def _cj(x):
    jax.debug.print("primal {}", x)
    return x * x
@_cj.defjvp
def _cj_jvp(p, t):
    jax.debug.print("jvp {}", p[0])
    return _cj(p[0]), 2 * p[0] * t[0]
@jax.custom_vjp
def _cv(x):
    return jnp.sin(x)
def _cv_fwd(x):
    jax.debug.print("fwd {}", x)
    return jnp.sin(x), x
def _cv_bwd(r, g):
    jax.debug.print("bwd {}", r)
    return (g * jnp.cos(r),)
_cv.defvjp(_cv_fwd, _cv_bwd)
@jax.custom_jvp
def _csin(x):
    return jax.pure_callback(np.sin, sds(jnp.shape(x), jnp.result_type(x)), x)
@_csin.defjvp
def _csin_jvp(p, t):
    cos = jax.pure_callback(np.cos, sds(jnp.shape(p[0]), jnp.result_type(p[0])), p[0])
    return _csin(p[0]), cos * t[0]
'''

SOURCE = PROGRAM.replace("# ---- debug.print", HELPERS + "\n# ---- debug.print", 1)
prefetch(SOURCE)


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, str], dict[str, str]]:
    return run_both(SOURCE)


def _cell_names() -> list[str]:
    names = [n for n in re.findall(r'cell\("([a-z_0-9]+)"', PROGRAM) if not n.endswith("_")]
    names += ["pure_vmap_" + m for m in ("sequential", "sequential_unrolled", "expand_dims",
                                          "broadcast_all", "legacy_vectorized")]
    return names


@pytest.mark.parametrize("name", _cell_names())
def test_cell(results: tuple[dict[str, str], dict[str, str]], name: str) -> None:
    ours, theirs = results
    assert name in theirs, f"JAX did not run cell {name}"
    assert ours.get(name) == theirs[name]
