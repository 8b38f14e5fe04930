"""A user rule that returns the wrong type (shape, dtype, explicit sharding,
pytree structure, batch dimension) fails at trace time with a TypeError or
ValueError naming the primitive, the rule and the constraint (SPEC.md 9.8a,
H2..H9), never an internal error. Where JAX 0.12.0.1 checks the same thing,
the same program (``Base`` bound to each library's ``HiPrim``) raises the same
exception class there (``JAX_CHECKS``); ``JAX_DIFFERS`` lists where JAX
0.12.0.1 accepts the wrong value or fails inside itself, with what it does.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.experimental.hijax as jax_hijax
import jax.numpy as jnp
import pytest

import spec
import spec.experimental.hijax as spec_hijax
import spec.numpy as snp
from tests.support.twin import on_virtual_devices, prefetch, run_both

PRELUDE = '''
WRONG = {
  "shape": lambda v: jnp.concatenate([v, v]),
  "dtype": lambda v: v.astype(jnp.int32),
  "f16": lambda v: v.astype(jnp.float16),
  "tuple": lambda v: (v, v),
  "list": lambda v: [v],
}

def make(rule, how):
  """A primitive x * y whose rule `rule` returns the wrong value `how`."""
  w = WRONG.get(how, lambda v: v)
  class P(Base):
    def __init__(self, a):
      self.in_avals = (a, a)
      self.out_aval = a
      self.params = {}
      super().__init__()
    def expand(self, x, y):
      return w(x * y) if rule == "expand" else x * y
    def vjp_fwd(self, nzs, x, y):
      out = self(x, y)
      return (w(out) if rule == "vjp_fwd" else out), (x, y)
    def vjp_bwd_retval(self, res, g):
      x, y = res
      if rule == "vjp_bwd_retval_structure":
        return (g * y,) if how == "short" else ((g * y, g * x),)
      return ((w(g * y) if rule == "vjp_bwd_retval" else g * y), g * x)
    def jvp(self, p, t):
      (x, y), (dx, dy) = p, t
      out, tan = self(x, y), dx * y + x * dy
      return (w(out) if rule == "jvp_primal" else out), (w(tan) if rule == "jvp_tangent" else tan)
    def lin(self, nzs, x, y):
      out = self(x, y)
      return (w(out) if rule == "lin" else out), (x, y)
    def linearized(self, res, dx, dy):
      x, y = res
      t = dx * y + x * dy
      return w(t) if rule == "linearized" else t
    def batch(self, axis_data, args, dims):
      x, y = hijax.bdims_at_front(axis_data, args, dims)
      out = P(jax.typeof(x))(x, y)
      if rule == "batch_value":
        return w(out), 0
      if rule == "batch_dims":
        return out, {"tuple": (0, 0), "big": 5, "negative": -1, "float": 0.}[how]
      return out, 0
  P.__name__ = P.__qualname__ = "P"
  return P

def apply(cls):
  return lambda x, y: cls(jax.typeof(x))(x, y)

x = jnp.arange(3.) + 1
xs = jnp.stack([x, x])
grad_of = lambda c: jax.jit(jax.grad(lambda a: jnp.sum(apply(c)(a, x))))(x)
jvp_of = lambda c: jax.jit(lambda a: jax.jvp(apply(c), (a, a), (a, a)))(x)
lin_of = lambda c: jax.jit(lambda a: jax.linearize(apply(c), a, a)[1](a, a))(x)
vmap_of = lambda c: jax.jit(jax.vmap(apply(c)))(xs, xs)
CALL = {"expand": lambda c: jax.jit(apply(c))(x, x), "vjp_fwd": grad_of,
        "vjp_bwd_retval": grad_of, "vjp_bwd_retval_structure": grad_of,
        "jvp_primal": jvp_of, "jvp_tangent": jvp_of, "lin": lin_of, "linearized": lin_of,
        "batch_value": vmap_of, "batch_dims": vmap_of}
'''

TYPES = ("shape", "dtype", "f16")
STRUCTURES = ("tuple", "list")
# (rule, how) -> (exception class, the constraint its message cites)
CASES: dict[tuple[str, str], tuple[type[Exception], str]] = {
    **{("expand", h): (TypeError, "H5") for h in TYPES},
    **{("expand", h): (TypeError, "H4") for h in STRUCTURES},
    **{("vjp_fwd", h): (TypeError, "H5") for h in TYPES},
    **{("vjp_fwd", h): (TypeError, "H4") for h in STRUCTURES},
    **{("vjp_bwd_retval", h): (ValueError, "H7") for h in TYPES},
    **{("vjp_bwd_retval", h): (TypeError, "H7") for h in STRUCTURES},
    ("vjp_bwd_retval_structure", "short"): (ValueError, "H4"),
    ("vjp_bwd_retval_structure", "nested"): (ValueError, "H4"),
    **{("jvp_primal", h): (TypeError, "H5") for h in TYPES},
    **{("jvp_primal", h): (TypeError, "H4") for h in STRUCTURES},
    **{("jvp_tangent", h): (TypeError, "H8") for h in (*TYPES, *STRUCTURES)},
    **{("lin", h): (TypeError, "H5") for h in TYPES},
    **{("lin", h): (TypeError, "H4") for h in STRUCTURES},
    **{("linearized", h): (TypeError, "H8") for h in (*TYPES, *STRUCTURES)},
    **{("batch_value", h): (TypeError, "H9") for h in TYPES},
    **{("batch_value", h): (TypeError, "H4") for h in STRUCTURES},
    **{("batch_dims", h): (ValueError, "H9") for h in ("tuple", "big", "negative", "float")},
}

# Where JAX 0.12.0.1 raises the same class for the same mistake (for an
# integer primal from vjp_fwd: its grad's check of the output dtype).
JAX_CHECKS = {("vjp_bwd_retval", "shape"), ("vjp_bwd_retval", "tuple"),
              ("vjp_bwd_retval", "list"), ("vjp_bwd_retval_structure", "short"),
              ("vjp_bwd_retval_structure", "nested"), ("jvp_tangent", "tuple"),
              ("jvp_tangent", "list"), ("vjp_fwd", "dtype")}

# Where it does not: it runs on with the wrong value, or fails inside itself.
JAX_DIFFERS = {
    **{("expand", h): "runs on with expand's value" for h in TYPES},
    **{("expand", h): "AssertionError inside JAX" for h in STRUCTURES},
    **{(r, h): "runs on with the wrong primal" for r in ("vjp_fwd", "jvp_primal", "lin")
       for h in TYPES if (r, h) != ("vjp_fwd", "dtype")},
    **{(r, h): "AssertionError inside JAX" for r in ("vjp_fwd", "jvp_primal", "lin")
       for h in STRUCTURES},
    **{("vjp_bwd_retval", h): "accepts a cotangent of another dtype" for h in ("dtype", "f16")},
    **{("jvp_tangent", h): "runs on with the wrong tangent" for h in TYPES},
    **{("linearized", h): "runs on with the wrong tangent" for h in TYPES},
    **{("linearized", h): "RuntimeError (tree mismatch)" for h in STRUCTURES},
    **{("batch_value", h): "runs on with the wrong batched value" for h in TYPES},
    **{("batch_value", h): "AssertionError inside JAX" for h in STRUCTURES},
    ("batch_dims", "tuple"): "a bare Exception",
    ("batch_dims", "big"): "IndexError inside JAX",
    ("batch_dims", "negative"): "moves the axis from the end",
    ("batch_dims", "float"): "TypeError inside JAX",
}


def _ns(impl: str) -> dict[str, Any]:
    lib, np_mod, hijax = (jax, jnp, jax_hijax) if impl == "jax" else (spec, snp, spec_hijax)
    ns: dict[str, Any] = {"jax": lib, "jnp": np_mod, "Base": hijax.HiPrim, "hijax": hijax}
    exec(PRELUDE, ns)
    return ns


def _raised(impl: str, rule: str, how: str) -> BaseException | None:
    ns = _ns(impl)
    try:
        ns["CALL"][rule](ns["make"](rule, how))
    except Exception as err:  # noqa: BLE001 (the class is compared)
        return err
    return None


@pytest.mark.parametrize("rule,how", sorted(CASES))
def test_wrong_rule_output_names_primitive_rule_and_constraint(rule: str, how: str) -> None:
    exc, constraint = CASES[rule, how]
    with pytest.raises(exc) as info:
        ns = _ns("spec")
        ns["CALL"][rule](ns["make"](rule, how))
    message = str(info.value)
    assert message.startswith(f"P {constraint}: "), message
    shown = rule.split("_structure")[0].replace("_primal", "").replace("_tangent", "")
    shown = {"batch_value": "batch", "batch_dims": "batch", "vjp_bwd_retval": "vjp_bw"}.get(
        shown, shown)
    assert shown in message, message


@pytest.mark.parametrize("rule,how", sorted(JAX_CHECKS))
def test_same_exception_class_as_jax(rule: str, how: str) -> None:
    theirs = _raised("jax", rule, how)
    assert theirs is not None
    assert type(theirs) is CASES[rule, how][0]


def test_every_case_is_compared_with_jax_or_listed() -> None:
    assert set(CASES) == JAX_CHECKS | set(JAX_DIFFERS)
    assert not JAX_CHECKS & set(JAX_DIFFERS)


@pytest.mark.parametrize("rule,how", sorted(set(JAX_DIFFERS) - {("batch_dims", "tuple")}))
def test_listed_differences_hold_on_jax(rule: str, how: str) -> None:
    """Keeps JAX_DIFFERS true: JAX 0.12.0.1 does not raise spec's class
    (it raises none, or one of its own internal errors)."""
    theirs = _raised("jax", rule, how)
    assert theirs is None or type(theirs) is not CASES[rule, how][0]


# ---------------------------------------------------- batch_dim_rule (spec only)


class Doubled(spec_hijax.VJPHiPrimitive):
    """2 * x; its batch_dim_rule returns the param ``out_dim``."""

    def __init__(self, x_aval: Any, out_dim: Any) -> None:
        self.in_avals = (x_aval,)
        self.out_aval = x_aval
        self.params = dict(out_dim=out_dim)
        super().__init__()

    def expand(self, x: Any) -> Any:
        return 2.0 * x

    def batch_dim_rule(self, axis_data: Any, in_dims: Any) -> Any:
        return self.out_dim  # type: ignore[attr-defined]


@pytest.mark.parametrize("out_dim,exc,text", [
    (2, ValueError, "batch_dim_rule returned batch dimension 2 for result 0"),
    ((0,), ValueError, "batch_dim_rule returned batch dimension (0,) for result 0"),
    (None, ValueError, "batch_dim_rule returned None (unbatched) for result 0"),
])
def test_wrong_batch_dim_rule(out_dim: Any, exc: type[Exception], text: str) -> None:
    xs = snp.ones((2, 3))
    with pytest.raises(exc, match=r"^Doubled H[49]: ") as info:
        spec.vmap(lambda v: Doubled(spec.typeof(v), out_dim)(v))(xs)
    assert text in str(info.value)


def test_batch_dim_rule_one_dim_for_a_tuple_result() -> None:
    """A single dimension stands for every result (a prefix of the tree)."""
    class Pair(Doubled):
        def __init__(self, x_aval: Any, out_dim: Any) -> None:
            self.in_avals = (x_aval,)
            self.out_aval = (x_aval, x_aval)
            self.params = dict(out_dim=out_dim)
            spec_hijax.VJPHiPrimitive.__init__(self)

        def expand(self, x: Any) -> Any:
            return (2.0 * x, 3.0 * x)

    xs = snp.arange(6.0).reshape(2, 3)
    a, b = spec.vmap(lambda v: Pair(spec.typeof(v), 1)(v))(xs)
    assert a.shape == b.shape == (2, 3)
    assert snp.array_equal(b, 3.0 * xs)


# ------------------------------------------------------------ explicit sharding

SHARDING = r'''
import numpy as np
jax, jnp = IMPL
hijax = __import__(jax.__name__ + '.experimental.hijax', fromlist=['HiPrim'])
jax.config.update('jax_num_cpu_devices', 4)
out = {}
def cell(name, fn):
    try:
        r = fn()
        out[name] = "ok " + str(jax.typeof(r))
    except Exception as e:
        out[name] = type(e).__name__
class P(hijax.HiPrim):
    def __init__(self, a, b, mode):
        self.in_avals = (a, b)
        self.out_aval = a
        self.params = dict(mode=mode)
        super().__init__()
    def expand(self, x, y):
        return jax.reshard(x * y, jax.P()) if self.mode == "expand" else x * y
    def vjp_fwd(self, nzs, x, y):
        return self(x, y), (x, y)
    def vjp_bwd_retval(self, res, g):
        x, y = res
        gx = jax.reshard(g * y, jax.P()) if self.mode == "bwd" else g * y
        return gx, g * x
jax.set_mesh(jax.make_mesh((4,), ('X',)))
x = jax.device_put(jnp.arange(8.), jax.P('X'))
y = jnp.arange(8.) / 8
call = lambda a, b, m, t=None: P(jax.typeof(a) if t is None else t, jax.typeof(b), m)(a, b)
cell("expand", lambda: jax.jit(lambda a, b: call(a, b, "expand"))(x, y))
cell("bwd", lambda: jax.jit(jax.grad(lambda a, b: jnp.sum(call(a, b, "bwd"))))(x, y))
cell("operand", lambda: jax.jit(lambda a, b: call(a, b, "", jax.typeof(b)))(x, y))
cell("operand eager", lambda: call(x, y, "", jax.typeof(y)))
cell("right", lambda: jax.jit(jax.grad(lambda a, b: jnp.sum(call(a, b, ""))))(x, y))
'''
prefetch(SHARDING)


def test_sharding_of_rule_outputs() -> None:
    """A result or cotangent of another sharding than its type says, and an
    operand of another sharding than in_avals: H5, H7, H2 on spec; JAX
    0.12.0.1 raises ValueError for the cotangent and runs on otherwise."""
    ours, theirs = run_both(SHARDING)
    assert ours == {"expand": "TypeError", "bwd": "ValueError", "operand": "TypeError",
                    "operand eager": "TypeError", "right": "ok float32[8@X]"}
    assert theirs["bwd"] == ours["bwd"]
    assert theirs["right"] == ours["right"]
    assert theirs["expand"].startswith("ok") and theirs["operand"].startswith("ok")


def test_sharding_messages() -> None:
    """The messages name the primitive, the rule and the constraint."""
    def run() -> list[str]:
        ns: dict[str, Any] = {}
        exec(SHARDING.replace("IMPL", "__import__('spec'), __import__('spec.numpy').numpy"),
             ns)
        call, x, y = ns["call"], ns["x"], ns["y"]
        messages = []
        for fn in (lambda: spec.jit(lambda a, b: call(a, b, "expand"))(x, y),
                   lambda: spec.grad(lambda a, b: snp.sum(call(a, b, "bwd")))(x, y),
                   lambda: call(x, y, "", spec.typeof(y))):
            try:
                fn()
                messages.append("no error")
            except (TypeError, ValueError) as err:
                messages.append(str(err))
        return messages

    expand, bwd, operand = on_virtual_devices(4, run)
    assert expand == "P H5: expand returned f32[8] for result 0, out_aval says f32[8@X]"
    assert bwd.startswith("P H7: vjp_bwd produced a cotangent of type f32[8] where f32[8@X] "
                          "was expected")
    assert operand == "P H2: operand 0 has type f32[8@X], in_avals says f32[8]"
