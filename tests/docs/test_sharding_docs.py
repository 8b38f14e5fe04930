"""JAX's sharding tutorial ("Distributed arrays and automatic parallelization",
docs/new_docs/201/sharding.md) run as written on spec and on real JAX.

The page's code cells are grouped into a few programs (one JAX subprocess each,
with 8 CPU devices, as the page configures). Each program fills ``out`` with
what its cells show: printed text (captured), typeof strings, values, reprs,
shard layouts, or ``"raises <builtin class>"``. One test per section of the
page, parametrized over its keys, compares spec's value with JAX's. A few
keys check claims of the page's prose (marked "From the prose" in the
programs), e.g. the other out_shardings it lists for an ambiguous dot.

Keys where spec does not (yet) agree carry ``xfail(strict=True)`` with the
difference: when spec is fixed the test XPASSes, fails, and the mark goes.
notes/SHARDING_DOCS_GAPS.md lists the same gaps with minimal reproducers.

Cells not turned into tests: the pseudo-code class definitions of
``AbstractMesh``/``AxisType``/``Mesh`` (they illustrate fields and call no
library). ``jax.debug.visualize_array_sharding``'s picture is compared
as printed (both draw it with ``rich``).
"""

from __future__ import annotations

import functools
import subprocess
from typing import Any

import pytest

import spec
from tests.support.twin import merged, prefetch, run_jax, run_spec

# Helpers every program shares: `record` one result under a key, `printed`
# captures what a cell prints, `step` records a cell's value and hands it on.
COMMON = r'''
import contextlib
import importlib
import io
import numpy as np
jax, jnp = IMPL
out = {}
def module(path):
    # The page's `from jax.sharding import ...`: the program's library's module
    # (a plain `from jax...` would load real JAX into spec's run).
    return importlib.import_module(jax.__name__ + path)
def decorator(path, name):
    # A decorator the library may lack: a missing one decorates to a function
    # that raises AttributeError when called, so the decorated cell records it.
    found = getattr(module(path), name, None)
    if found is not None:
        return found
    def stand_in(fn=None, **options):
        if fn is None:  # used as @name(option=...)
            return stand_in
        def call(*args, **kwargs):
            raise AttributeError(f"module {jax.__name__ + path!r} has no attribute {name!r}")
        return call
    return stand_in
def raised(e):
    # The builtin base class: spec may raise a subclass of JAX's class.
    kind = next(c for c in type(e).__mro__ if c.__module__ == "builtins")
    return "raises " + kind.__name__ + ("/sharding" if "Sharding" in type(e).__name__ else "")
def record(name, fn):
    try:
        out[name] = fn()
    except Exception as e:
        out[name] = raised(e)
def printed(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()
def show(a):
    return [str(jax.typeof(a)), np.asarray(a).tolist()]
def show4(a):
    # transcendental or random-derived values: four decimals, so that a few
    # ULPs (XLA's sin, summation order) cannot matter
    return [str(jax.typeof(a)), np.round(np.asarray(a), 4).tolist()]
def shards(a):
    return [[repr(s.device), str(s.index), np.asarray(s.data).tolist()]
            for s in a.addressable_shards]
def shard_data(a):
    # what the page prints for each shard: its device and data
    return [[str(s.device), np.asarray(s.data).tolist()] for s in a.addressable_shards]
def unreduced_total(a):
    # the logical value of an array unreduced over the mesh's last axis: the
    # sum of the shards held along it, stacked along the first mesh axis
    devs = a.sharding.mesh.devices
    blocks = {}
    for s in a.addressable_shards:
        i = int(np.argwhere(devs == s.device)[0][0])
        blocks[i] = blocks.get(i, 0) + np.asarray(s.data)
    return np.concatenate([blocks[i] for i in sorted(blocks)]).tolist()
def step(name, fn, how=show):
    try:
        v = fn()
    except Exception as e:
        out[name] = raised(e)
        return None
    record(name, lambda: how(v))
    return v
jax.config.update('jax_num_cpu_devices', 8)
'''

# Sections "intro", "A Mesh is a grid of devices", "A Sharding describes ...".
MESH_PROGRAM = COMMON + r'''
jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))  # explicit mode by default
x = jnp.arange(8 * 4.).reshape(8, 4)
x = step("intro/device_put P(X,Y)", lambda: jax.device_put(x, jax.P('X', 'Y')))
record("intro/print typeof", lambda: printed(lambda: print(jax.typeof(x))))
record("intro/visualize_array_sharding",
       lambda: printed(lambda: jax.debug.visualize_array_sharding(x)))
step("intro/sin.T", lambda: jnp.sin(x).T, how=show4)
record("intro/print typeof sin.T", lambda: printed(lambda: print(jax.typeof(jnp.sin(x).T))))

mesh = jax.make_mesh((4, 2), ('X', 'Y'))
record("mesh/print mesh", lambda: printed(lambda: print(mesh)))
record("mesh/repr mesh", lambda: repr(mesh))
record("mesh/axis_types", lambda: repr(mesh.axis_types))
jax.set_mesh(mesh)
record("mesh/get_mesh", lambda: repr(jax.get_mesh()))
record("mesh/get_mesh is mesh", lambda: jax.get_mesh() == mesh)
record("mesh/get_abstract_mesh", lambda: repr(jax.sharding.get_abstract_mesh()))
# (jax.sharding.get_mesh, the same function, keeps these two apart from
# the top-level export checked just above.)
m8 = jax.make_mesh((8,), ('A',))
def with_mesh():
    with jax.set_mesh(m8):
        inner = repr(jax.sharding.get_mesh())
    return [inner, repr(jax.sharding.get_mesh())]
record("mesh/with set_mesh", with_mesh)
def get_mesh_under_jit():
    jax.jit(lambda a: jax.sharding.get_mesh() and a)(x)
record("mesh/get_mesh under jit", get_mesh_under_jit)

@jax.jit
def f(x):
  abstract_mesh = jax.sharding.AbstractMesh((8,), ('A',), (jax.sharding.AxisType.Explicit,))
  with jax.sharding.use_abstract_mesh(abstract_mesh):
    y = jax.reshard(x, jax.P('A', None))
    return y * 2

z = step("mesh/use_abstract_mesh reshard", lambda: f(x))
record("mesh/print typeof z", lambda: printed(lambda: print(jax.typeof(z))))
record("mesh/z.sharding", lambda: repr(z.sharding))
record("mesh/jaxpr", lambda: str(jax.make_jaxpr(f)(x)))
def resize():
    with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((4,), ('A',))):
        pass
record("mesh/use_abstract_mesh size change", resize)

record("sharding/print x.sharding", lambda: printed(lambda: print(x.sharding)))
record("sharding/x shards", lambda: shards(x))
record("sharding/print x shards", lambda: printed(
    lambda: [print(s.device, s.data, sep='\n', end='\n\n') for s in x.addressable_shards]))
y = step("sharding/P(Y,X)", lambda: jax.device_put(x, jax.P('Y', 'X')))
record("sharding/P(Y,X) sharding", lambda: printed(lambda: print(y.sharding)))
record("sharding/P(Y,X) shards", lambda: shards(y))
y = step("sharding/P(X,None)", lambda: jax.device_put(x, jax.P('X', None)))
record("sharding/P(X,None) sharding", lambda: printed(lambda: print(y.sharding)))
record("sharding/P(X,None) shards", lambda: shards(y))
record("sharding/P(X) same as P(X,None)",
       lambda: show(jax.device_put(x, jax.P('X'))) + [repr(jax.device_put(x, jax.P('X')).sharding)])
y = step("sharding/P((X,Y))", lambda: jax.device_put(x, jax.P(('X', 'Y'))))
record("sharding/P((X,Y)) sharding", lambda: printed(lambda: print(y.sharding)))
record("sharding/P((X,Y)) shards", lambda: shards(y))
y = step("sharding/unreduced", lambda: jax.device_put(x, jax.P('X', None, unreduced={'Y'})),
         how=lambda a: str(jax.typeof(a)))
record("sharding/unreduced sharding", lambda: printed(lambda: print(y.sharding)))
record("sharding/unreduced shards", lambda: shard_data(y))
record("sharding/unreduced shards sum to x", lambda: [unreduced_total(y) == np.asarray(x).tolist(),
                                                     unreduced_total(y)])
mesh2 = jax.make_mesh((8,), ('A',))
z = step("sharding/mesh2", lambda: jax.device_put(x, jax.NamedSharding(mesh2, jax.P('A', None))))
# The cell also prints y.sharding: the unreduced one, compared above.
record("sharding/mesh2 print z.sharding", lambda: printed(lambda: print(z.sharding)))
record("sharding/mesh2 shards", lambda: shards(z))
'''

# Section "Explicit sharding mode makes sharding queryable at trace-time" and
# its subsections "Result shardings follow simple rules" and "auto_axes".
EXPLICIT_PROGRAM = COMMON + r'''
jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('X', 'Y'))
record("explicit/print typeof(x).sharding", lambda: printed(lambda: print(jax.typeof(x).sharding)))
record("explicit/print under jit",
       lambda: printed(lambda: jax.jit(lambda x: print(jax.typeof(x).sharding))(x)))
arg0 = step("explicit/arg0", lambda: jax.device_put(np.arange(4).reshape(4, 1), jax.P("X", None)))
arg1 = step("explicit/arg1", lambda: jax.device_put(np.arange(8).reshape(1, 8), jax.P(None, "Y")))
result = step("explicit/arg0 + arg1", lambda: arg0 + arg1)
def cell_typeofs():
    print(f"{jax.typeof(arg0)=!s}")
    print(f"{jax.typeof(arg1)=!s}")
    print(f"{jax.typeof(result)=!s}")
record("explicit/print typeofs", lambda: printed(cell_typeofs))

@jax.jit
def add_arrays(x, y):
  ans = x + y
  print(f"{jax.typeof(arg0)=!s}")
  print(f"{jax.typeof(arg1)=!s}")
  print(f"{jax.typeof(result)=!s}")
  return ans

record("explicit/add_arrays prints", lambda: printed(lambda: add_arrays(arg0, arg1)))
record("explicit/add_arrays cached", lambda: printed(lambda: add_arrays(arg0, arg1)))
record("explicit/add_arrays repr", lambda: repr(add_arrays(arg0, arg1)))
record("explicit/add_arrays value", lambda: show(add_arrays(arg0, arg1)))
record("explicit/add_arrays jaxpr", lambda: str(jax.make_jaxpr(add_arrays)(arg0, arg1)))
x = step("explicit/random.normal out_sharding",
         lambda: jax.random.normal(jax.random.key(0), (8, 4), out_sharding=jax.P('X', 'Y')),
         how=show4)
record("explicit/print typeof random", lambda: printed(lambda: print(jax.typeof(x))))
y = step("explicit/x.sum(0)", lambda: x.sum(0), how=show4)
record("explicit/print typeof sum", lambda: printed(lambda: print(jax.typeof(y))))
# Not on the page: the same reduction of a known array, so that a gap in
# jax.random does not hide the reduction rule.
xa = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('X', 'Y'))
step("explicit/arange.sum(0)", lambda: xa.sum(0))
record("explicit/sum jaxpr", lambda: str(jax.make_jaxpr(lambda x: x.sum(0))(xa)))
record("explicit/sum compiles to an all-reduce", lambda: 'all-reduce(' in jax.jit(
    lambda x: x.sum(0)).lower(xa).compile().as_text())

x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P(None, 'X'))
y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))
record("rules/dot ambiguous", lambda: show(jnp.dot(x, y)))
def dot_message():
    try:
        jnp.dot(x, y)
    except Exception as e:
        return "out_sharding" in str(e)
    return "no error"
record("rules/dot error asks for out_sharding", dot_message)
z = step("rules/dot out_sharding", lambda: jnp.dot(x, y, out_sharding=jax.P('X', None)))
record("rules/print typeof z", lambda: printed(lambda: print(jax.typeof(z))))
record("rules/dot out_sharding jaxpr",
       lambda: str(jax.make_jaxpr(lambda a, b: jnp.dot(a, b, out_sharding=jax.P('X', None)))(x, y)))
# From the prose (not code cells): the other reasonable results it lists are
# each available through out_sharding.
record("rules/dot all-reduce P()", lambda: show(jnp.dot(x, y, out_sharding=jax.P())))
record("rules/dot reduce-scatter P(None,X)",
       lambda: show(jnp.dot(x, y, out_sharding=jax.P(None, 'X'))))
record("rules/dot unreduced", lambda: str(jax.typeof(
    jnp.dot(x, y, out_sharding=jax.P(None, None, unreduced={'X'})))))
# ... a mesh axis may be mentioned at most once in a type ...
record("rules/axis named twice", lambda: show(jax.device_put(x, jax.P('X', 'X'))))
# ... and f32[8,4] . f32[4@X,16] -> f32[8,16] (all-gather of y).
record("rules/dot gathers y", lambda: show(jnp.dot(jnp.arange(8 * 4.).reshape(8, 4), y)))
# Nullary ops are unsharded unless given out_sharding.
record("rules/zeros", lambda: str(jax.typeof(jnp.zeros((8, 4)))))
record("rules/zeros out_sharding", lambda: show(jnp.zeros((8, 4), out_sharding=jax.P('X'))))
record("rules/arange", lambda: str(jax.typeof(jnp.arange(8))))

# from jax.sharding import auto_axes, explicit_axes
auto_axes = decorator(".sharding", "auto_axes")
explicit_axes = decorator(".sharding", "explicit_axes")

x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", None))
y = jax.device_put(np.arange(16).reshape(4, 4), jax.P(None, "X"))
record("auto_axes/x + y", lambda: show(x + y))

@auto_axes
def add2(x, y):
  print("We're in auto-sharding mode here. This is the current mesh:\n"
        f"{jax.sharding.get_abstract_mesh()}")
  return x + y

def cell_add2():
    result = add2(x, y, out_sharding=jax.P("X", None))
    print(f"Result type: {jax.typeof(result)}")
record("auto_axes/add2 prints", lambda: printed(cell_add2))
record("auto_axes/add2 value", lambda: show(add2(x, y, out_sharding=jax.P("X", None))))
record("auto_axes/add2 jaxpr", lambda: str(jax.make_jaxpr(
    lambda a, b: add2(a, b, out_sharding=jax.P("X", None)))(x, y)))

# From the prose: `axes=...` switches only some mesh axes to Auto.
@auto_axes(axes='X', out_sharding=jax.P('X', 'Y'))
def double(v):
    print(jax.sharding.get_abstract_mesh())
    print(jax.typeof(v))
    return v * 2

xy = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('X', 'Y'))
record("auto_axes/axes subset prints", lambda: printed(lambda: double(xy)))
record("auto_axes/axes subset value", lambda: show(double(xy)))
'''

# Sections "Auto sharding mode ..." and "Concrete array shardings can mention
# Auto mesh axis".
AUTO_PROGRAM = COMMON + r'''
# from jax.sharding import auto_axes, explicit_axes
auto_axes = decorator(".sharding", "auto_axes")
explicit_axes = decorator(".sharding", "explicit_axes")
Auto = jax.sharding.AxisType.Auto
auto_mesh = jax.make_mesh((4, 2), ('X', 'Y'), (Auto, Auto))
jax.set_mesh(auto_mesh)
record("auto/mesh", lambda: repr(auto_mesh))

x = step("auto/x", lambda: jax.device_put(jnp.arange(8 * 4. ).reshape(8, 4 ), jax.P(None, 'X')))
y = step("auto/y", lambda: jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None)))
record("auto/x.sharding", lambda: repr(x.sharding))
z = step("auto/dot", lambda: jnp.dot(x, y))  # not an error!
record("auto/print z.sharding", lambda: printed(lambda: print(z.sharding)))
record("auto/dot jaxpr", lambda: str(jax.make_jaxpr(jnp.dot)(x, y)))

@jax.jit
def f(x, y):
  z = jnp.dot(x, y)
  z = jax.lax.with_sharding_constraint(z, jax.P('X', None))
  return z

z = step("auto/with_sharding_constraint", lambda: f(x, y))
record("auto/print constrained z.sharding", lambda: printed(lambda: print(z.sharding)))
record("auto/with_sharding_constraint jaxpr", lambda: str(jax.make_jaxpr(f)(x, y)))

@explicit_axes
def explicit_g(y):
  print(f'mesh inside g: {jax.sharding.get_abstract_mesh()}')
  print(f'y.sharding inside g: {jax.typeof(y) = }')
  z = y * 2
  print(f'z.sharding inside g: {jax.typeof(z) = }', end='\n\n')
  return z

@jax.jit
def f(arr1):
  print(f'mesh inside f: {jax.sharding.get_abstract_mesh()}', end='\n\n')
  x = jnp.sin(arr1)
  z = explicit_g(x, in_sharding=jax.P("X", "Y"))
  return z + 1

x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", "Y"))
record("auto/explicit_axes prints", lambda: printed(lambda: f(x)))
# (The cell displays repr(f(x)): its digits depend on sin's last ULP, so the
# values are compared to four decimals instead.)
record("auto/explicit_axes value", lambda: show4(f(x)))
record("auto/explicit_axes sharding", lambda: repr(f(x).sharding))
record("auto/explicit_axes jaxpr", lambda: str(jax.make_jaxpr(f)(x)))

jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))  # Explicit mode

# From the prose: with Explicit axes, with_sharding_constraint is an assertion.
xy = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P('X', 'Y'))
record("auto/constraint asserts: same", lambda: show(jax.jit(
    lambda v: jax.lax.with_sharding_constraint(v, jax.P('X', 'Y')))(xy)))
record("auto/constraint asserts: different", lambda: show(jax.jit(
    lambda v: jax.lax.with_sharding_constraint(v, jax.P(None, 'X')))(xy)))

def compare_shardings(x):
  print(f"=== with mesh: {jax.sharding.get_abstract_mesh()} ===")
  print(f"Concrete value sharding: {x.sharding.spec}")
  print(f"Type-specified sharding: {jax.typeof(x).sharding.spec}\n")

my_array = step("concrete/my_array", lambda: jnp.sin(jax.device_put(np.arange(8), jax.P("X"))),
                how=show4)
record("concrete/explicit prints", lambda: printed(lambda: compare_shardings(my_array)))

@auto_axes
def check_in_auto_context(x):
  compare_shardings(x)
  return x

record("concrete/auto prints",
       lambda: printed(lambda: check_in_auto_context(my_array, out_sharding=jax.P("X"))))
record("concrete/auto value",
       lambda: show4(check_in_auto_context(my_array, out_sharding=jax.P("X"))))
'''

# Section "Manual mode lets you write explicit collectives ...".
MANUAL_PROGRAM = COMMON + r'''
mesh = jax.make_mesh((4, 2), ('X', 'Y'))
jax.set_mesh(mesh)

x = jax.device_put(jnp.arange(8 * 4. ).reshape(8, 4 ), jax.P(None, 'X'))
y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

def define():
    @jax.shard_map(out_specs=jax.P('X', None))
    def matmul(x_shard, y_shard):
      z_summand = jnp.dot(x_shard, y_shard)
      return jax.lax.psum_scatter(z_summand, 'X', tiled=True)
    return matmul
matmul = step("manual/define", define, how=lambda m: "ok")
z = step("manual/matmul", lambda: matmul(x, y))
record("manual/print typeof z", lambda: printed(lambda: print(jax.typeof(z))))
z_ref = step("manual/z_ref", lambda: jnp.dot(x, y, out_sharding=jax.P('X', None)))
record("manual/print allclose", lambda: printed(lambda: print(jnp.allclose(z_ref, z))))
record("manual/jaxpr", lambda: str(jax.make_jaxpr(matmul)(x, y)))
'''

# Section "Device-local layout". The page shows these cells with accelerator
# outputs and does not execute them: on CPU XLA picks row-major layouts, so
# the inferred layout of `y` is (0, 1) there and the committed column-major
# argument is the one refused. The program records what the cells do on CPU
# (the page's `assert`s on accelerator layouts become recorded values).
LAYOUT_PROGRAM = COMMON + r'''
def imports():
    global Layout, Format, SingleDeviceSharding, with_layout_constraint
    # from jax.experimental.layout import Layout, Format, with_layout_constraint
    # from jax.sharding import SingleDeviceSharding
    layout = module(".experimental.layout")
    Layout, Format = layout.Layout, layout.Format
    with_layout_constraint = layout.with_layout_constraint
    SingleDeviceSharding = module(".sharding").SingleDeviceSharding
    return "ok"
record("layout/imports", imports)

def init_fn(x, y):
  return x * 2, y * 3

def apply_fn(x, y):
  return x[0, :], y[:, 0]

shape = (4 * 128, 8 * 128)
duck = jax.ShapeDtypeStruct(shape, jnp.float32)

def layouts(formats):
    return [f.layout.major_to_minor for f in formats]
def compile_apply():
    return jax.jit(
        apply_fn,
        in_shardings=Format(Layout.AUTO),
        out_shardings=Format(Layout.AUTO),
    ).trace(duck, duck).lower().compile()
apply_exe = step("layout/compile apply", compile_apply,
                 how=lambda e: [len(e.input_formats[1]), layouts(e.input_formats[0])])
arg_formats = step("layout/arg_formats", lambda: apply_exe.input_formats[0], how=repr)
init_exe = step("layout/compile init", lambda: jax.jit(init_fn, out_shardings=arg_formats).trace(
    duck, duck).lower().compile(), how=lambda e: e.output_formats == arg_formats)

def test(x, y):
  try:
    apply_exe(x, y)
    called = "called"
  except ValueError as e:
    called = "raises ValueError"
  return [x.format.layout.major_to_minor, y.format.layout.major_to_minor, called]

dev = jax.devices()[0]
def case(name, make):
    try:
        x, y = make()
    except Exception as e:
        out[name] = raised(e)
        return
    record(name, lambda: test(x, y))
case("layout/uncommitted mismatched", lambda: (jnp.ones(shape),) * 2)
case("layout/uncommitted matching", lambda: init_exe(jnp.ones(shape), jnp.ones(shape)))
case("layout/committed column-major", lambda: (jnp.ones(shape), jax.device_put(
    np.ones(shape), Format(Layout(major_to_minor=(1, 0)), SingleDeviceSharding(dev)))))
case("layout/committed row-major", lambda: (jnp.ones(shape), jax.device_put(
    np.ones(shape), Format(Layout(major_to_minor=(0, 1)), SingleDeviceSharding(dev)))))

def make_f():
    @jax.jit
    def f(x):
      y = x.T
      # Enforce a specific layout on `y`
      y = with_layout_constraint(y, Layout(major_to_minor=(0, 1)))
      return y * 2
    return f
f = step("layout_constraint/define", make_f, how=lambda _: "ok")
record("layout_constraint/call", lambda: show(f(jnp.arange(6.).reshape(2, 3))))
'''

# The page's programs run as one (one JAX process start for the page), in this order:
# the layout cells use no mesh, each later program sets the one it uses.
PROGRAMS = {"layout": LAYOUT_PROGRAM, "mesh": MESH_PROGRAM, "explicit": EXPLICIT_PROGRAM,
            "auto": AUTO_PROGRAM, "manual": MANUAL_PROGRAM}
PROGRAM = merged(COMMON, PROGRAMS)


@functools.cache
def _outcome_all() -> dict[str, tuple[dict[str, Any], dict[str, Any]]] | str:
    """Each program's (spec's out, JAX's out), or why a side could not run them
    (kept, so that a broken program costs one run, not one per key).
    spec's device count and mesh are put back afterwards (the programs set
    them globally)."""
    try:
        theirs = run_jax(PROGRAM, devices=8)
    except subprocess.CalledProcessError as e:
        return f"the JAX side of the page failed:\n{e.stderr[-3000:]}"
    before = spec.config.jax_num_cpu_devices
    try:
        ours = run_spec(PROGRAM)
    except Exception as e:  # noqa: BLE001  (a crash outside the recorded cells)
        return f"the spec side of the page failed: {type(e).__name__}: {e}"
    finally:
        spec.sharding.set_mesh(None)
        spec.config.update("jax_num_cpu_devices", before)
    return {program: (ours[program], theirs[program]) for program in PROGRAMS}


def _outcome(program: str) -> tuple[dict[str, Any], dict[str, Any]] | str:
    got = _outcome_all()
    return got if isinstance(got, str) else got[program]


def _results(program: str) -> tuple[dict[str, Any], dict[str, Any]]:
    got = _outcome(program)
    if isinstance(got, str):
        pytest.fail(got)
    return got


AUTO_PLACEMENT = ("Auto mode: where XLA places a result over Auto axes is the compiler's "
                  "choice (sharding propagation); spec keeps such results replicated over "
                  "Auto axes (types, values and jaxprs agree; x.sharding does not)")
LAYOUT = ("jax.experimental.layout (Layout, Format, with_layout_constraint) and "
          "jit(...).trace(...).lower().compile() with input_formats/output_formats are not in spec")

_Keys = dict[str, str | None]
SECTIONS: dict[str, tuple[str, _Keys]] = {
    "intro": ("mesh", {
        "intro/device_put P(X,Y)": None,
        "intro/print typeof": None,
        "intro/visualize_array_sharding": None,
        "intro/sin.T": None,
        "intro/print typeof sin.T": None,
    }),
    "mesh": ("mesh", {
        "mesh/print mesh": None,
        "mesh/repr mesh": None,
        "mesh/axis_types": None,
        "mesh/get_mesh": None,
        "mesh/get_mesh is mesh": None,
        "mesh/get_abstract_mesh": None,
        "mesh/with set_mesh": None,
        "mesh/get_mesh under jit": None,
        "mesh/use_abstract_mesh reshard": None,
        "mesh/print typeof z": None,
        "mesh/z.sharding": None,
        "mesh/jaxpr": None,
        "mesh/use_abstract_mesh size change": None,
    }),
    "sharding": ("mesh", {
        "sharding/print x.sharding": None,
        "sharding/x shards": None,
        "sharding/print x shards": None,
        "sharding/P(Y,X)": None,
        "sharding/P(Y,X) sharding": None,
        "sharding/P(Y,X) shards": None,
        "sharding/P(X,None)": None,
        "sharding/P(X,None) sharding": None,
        "sharding/P(X,None) shards": None,
        "sharding/P(X) same as P(X,None)": None,
        "sharding/P((X,Y))": None,
        "sharding/P((X,Y)) sharding": None,
        "sharding/P((X,Y)) shards": None,
        "sharding/unreduced": None,
        "sharding/unreduced sharding": None,
        "sharding/unreduced shards": None,
        "sharding/unreduced shards sum to x": None,
        "sharding/mesh2": None,
        "sharding/mesh2 print z.sharding": None,
        "sharding/mesh2 shards": None,
    }),
    "explicit": ("explicit", {
        "explicit/print typeof(x).sharding": None,
        "explicit/print under jit": None,
        "explicit/arg0": None,
        "explicit/arg1": None,
        "explicit/arg0 + arg1": None,
        "explicit/print typeofs": None,
        "explicit/add_arrays prints": None,
        "explicit/add_arrays cached": None,
        "explicit/add_arrays repr": None,
        "explicit/add_arrays value": None,
        "explicit/add_arrays jaxpr": None,
        "explicit/arange.sum(0)": None,
        "explicit/sum jaxpr": None,
        "explicit/sum compiles to an all-reduce": None,
        "explicit/random.normal out_sharding": None,
        "explicit/print typeof random": None,
        "explicit/x.sum(0)": None,
        "explicit/print typeof sum": None,
    }),
    "rules": ("explicit", {
        "rules/dot ambiguous": None,
        "rules/dot error asks for out_sharding": None,
        "rules/dot out_sharding": None,
        "rules/print typeof z": None,
        "rules/dot out_sharding jaxpr": None,
        "rules/dot gathers y": None,
        "rules/dot all-reduce P()": None,
        "rules/dot reduce-scatter P(None,X)": None,
        "rules/dot unreduced": None,
        "rules/axis named twice": None,
        "rules/zeros": None,
        "rules/zeros out_sharding": None,
        "rules/arange": None,
    }),
    "auto_axes": ("explicit", {
        "auto_axes/x + y": None,
        "auto_axes/add2 prints": None,
        "auto_axes/add2 value": None,
        "auto_axes/add2 jaxpr": None,
        "auto_axes/axes subset prints": None,
        "auto_axes/axes subset value": None,
    }),
    "auto": ("auto", {
        "auto/mesh": None,
        "auto/x": None,
        "auto/y": None,
        "auto/x.sharding": None,
        "auto/dot": None,
        "auto/print z.sharding": None,
        "auto/dot jaxpr": None,
        "auto/with_sharding_constraint": None,
        "auto/print constrained z.sharding": None,
        "auto/with_sharding_constraint jaxpr": None,
        "auto/constraint asserts: same": None,
        "auto/constraint asserts: different": None,
        "auto/explicit_axes prints": None,
        "auto/explicit_axes value": None,
        "auto/explicit_axes sharding": None,
        "auto/explicit_axes jaxpr": None,
    }),
    "concrete": ("auto", {
        "concrete/my_array": None,
        "concrete/explicit prints": None,
        "concrete/auto prints": AUTO_PLACEMENT,
        "concrete/auto value": None,
    }),
    "manual": ("manual", {
        "manual/define": None,
        "manual/matmul": None,
        "manual/print typeof z": None,
        "manual/z_ref": None,
        "manual/print allclose": None,
        "manual/jaxpr": None,
    }),
    "layout": ("layout", {
        "layout/imports": LAYOUT,
        "layout/compile apply": LAYOUT,
        "layout/arg_formats": LAYOUT,
        "layout/compile init": LAYOUT,
        "layout/uncommitted mismatched": LAYOUT,
        "layout/uncommitted matching": LAYOUT,
        "layout/committed column-major": LAYOUT,
        "layout/committed row-major": LAYOUT,
    }),
    "layout_constraint": ("layout", {
        "layout_constraint/define": None,
        "layout_constraint/call": LAYOUT,
    }),
}


def _keys(section: str) -> list[Any]:
    program, keys = SECTIONS[section]
    return [pytest.param(program, key, id=key, marks=[] if reason is None else
                         [pytest.mark.xfail(strict=True, reason=reason)])
            for key, reason in keys.items()]


def _compare(program: str, key: str) -> None:
    ours, theirs = _results(program)
    assert key in theirs, f"{key!r} is not produced by the program any more"
    assert ours.get(key, "<missing>") == theirs[key]


def test_every_key_is_listed() -> None:
    """The sections list exactly the keys the programs fill (on JAX)."""
    for program in PROGRAMS:
        listed = {k for prog, keys in SECTIONS.values() if prog == program for k in keys}
        assert set(_results(program)[1]) == listed, program


# One test per section of the page.
@pytest.mark.parametrize(("program", "key"), _keys("intro"))
def test_intro(program: str, key: str) -> None:
    """Intro: device_put to P('X', 'Y'), typeof, sin(x).T keeps the shardings."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("mesh"))
def test_mesh_is_a_grid_of_devices(program: str, key: str) -> None:
    """A Mesh is a grid of devices with named axes: make_mesh, set_mesh,
    get_mesh, use_abstract_mesh under jit."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("sharding"))
def test_sharding_describes_layout(program: str, key: str) -> None:
    """A Sharding describes how array values are laid out over a Mesh."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("explicit"))
def test_explicit_mode_sharding_in_types(program: str, key: str) -> None:
    """Explicit sharding mode makes sharding queryable at trace-time."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("rules"))
def test_result_sharding_rules(program: str, key: str) -> None:
    """Result shardings follow simple rules, or error and require annotation."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("auto_axes"))
def test_auto_axes(program: str, key: str) -> None:
    """With @auto_axes the compiler chooses shardings within the function."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("auto"))
def test_auto_mode(program: str, key: str) -> None:
    """Auto sharding mode decides shardings automatically during compilation."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("concrete"))
def test_concrete_shardings_mention_auto_axes(program: str, key: str) -> None:
    """Concrete array shardings can mention Auto mesh axes."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("manual"))
def test_manual_mode(program: str, key: str) -> None:
    """Manual mode (shard_map) lets you write explicit collectives."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("layout"))
def test_device_local_layout(program: str, key: str) -> None:
    """Device-local layout: specifying and reading layouts (as on CPU)."""
    _compare(program, key)


@pytest.mark.parametrize(("program", "key"), _keys("layout_constraint"))
def test_layout_constraint(program: str, key: str) -> None:
    """Device-local layout: constraining intermediate layouts."""
    _compare(program, key)


# JAX's sides run ahead while earlier tests run (tests/support/twin.py).
prefetch(PROGRAM, devices=8)
