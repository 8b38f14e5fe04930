"""The hijax API surface against JAX 0.12.0.1 run live (the same program
text on each library, ``Base`` bound to JAX's ``HiPrim`` and to spec's
``VJPHiPrimitive``): exported names, jaxpr text, values under jit, scan,
cond, nesting, and the errors of missing rules. Then the typing
constraints (H1..H9 of SPEC.md) that spec checks at trace time."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import jax
import jax.experimental.hijax as jax_hijax
import jax.numpy as jnp
import pytest

import spec
import spec.experimental.hijax as spec_hijax
import spec.numpy as snp

PRELUDE = '''
class Mul(Base):
  def __init__(self, x_aval, y_aval, tag='t'):
    self.in_avals = (x_aval, y_aval)
    self.out_aval = x_aval
    self.params = dict(tag=tag, n=3)
    super().__init__()
  def expand(self, x, y):
    return x * y
  def vjp_fwd(self, nzs_in, x, y):
    return self(x, y), (x, y)
  def vjp_bwd_retval(self, res, g):
    x, y = res
    return (g * y, x * g)

def mul(x, y):
  return Mul(jax.typeof(x), jax.typeof(y))(x, y)

class Nested(Base):
  def __init__(self, x_aval):
    self.in_avals = (x_aval,)
    self.out_aval = x_aval
    self.params = dict(inner=Mul(x_aval, x_aval), fn=named_function)
    super().__init__()
  def expand(self, x):
    return self.inner(x, x)
  def vjp_fwd(self, nzs, x):
    return self(x), x
  def vjp_bwd_retval(self, x, g):
    _, f = jax.vjp(self.inner, x, x)
    a, b = f(g)
    return (a + b,)

def named_function(x):
  return x

class Pair(Base):
  def __init__(self, x_aval):
    self.in_avals = ({'a': x_aval, 'b': [x_aval]},)
    self.out_aval = [x_aval, (x_aval,)]
    self.params = {}
    super().__init__()
  def expand(self, d):
    return [d['a'] * d['b'][0], (jnp.sin(d['a']),)]
  def vjp_fwd(self, nzs, d):
    return self(d), d
  def vjp_bwd_retval(self, d, g):
    g0, (g1,) = g
    return ({'a': g0 * d['b'][0] + jnp.cos(d['a']) * g1, 'b': [g0 * d['a']]},)
'''

PROGRAMS = {
    "jaxpr": "jax.make_jaxpr(mul)(2., 3.)",
    "grad_jaxpr": "jax.make_jaxpr(jax.grad(mul))(2., 3.)",
    "jit_trace": "jax.jit(mul).trace(2., 3.).jaxpr",
    "repr": "repr(Mul(jax.typeof(1.), jax.typeof(1.)))",
    "scan_jaxpr": "jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, x: (mul(c, x), None), 1., x)"
                  "[0])(jnp.arange(1., 4.))",
    "scan_grad": "jax.grad(lambda x: jax.lax.scan(lambda c, x: (mul(c, x), None), 1., x)[0])"
                 "(jnp.arange(1., 4.))",
    "cond_grad": "jax.grad(lambda x: jax.lax.cond(x > 0, lambda x: mul(x, x), lambda x: x, x))"
                 "(3.)",
    "jit_grad": "jax.jit(jax.grad(lambda x: mul(x, 2.)))(3.)",
    "nested_jaxpr": "jax.make_jaxpr(lambda x: Nested(jax.typeof(x))(x))(2.)",
    "nested_grad": "jax.grad(lambda x: Nested(jax.typeof(x))(x))(2.)",
    "pytree_jaxpr": "jax.make_jaxpr(lambda x: Pair(jax.typeof(x))({'a': x, 'b': [x]}))(2.)",
    "pytree_grad": "jax.grad(lambda x, y: sum(jax.tree.leaves(Pair(jax.typeof(x))("
                   "{'a': x, 'b': [y]}))), (0, 1))(2., 3.)",
    "vjp_of_jit": "jax.vjp(jax.jit(mul), 2., 3.)[1](1.)",
    "jvp_missing": "jax.jvp(mul, (2., 3.), (1., 1.))",
    "linearize_missing": "jax.linearize(mul, 2., 3.)",
    "jvp_jaxpr_missing": "jax.make_jaxpr(lambda x: jax.jvp(mul, (x, x), (x, x)))(2.)",
}


def _run(impl: str, expr: str) -> str:
    lib, np_mod, hijax = (jax, jnp, jax_hijax) if impl == "jax" else (spec, snp, spec_hijax)
    ns: dict[str, Any] = {"jax": lib, "jnp": np_mod, "Base": hijax.HiPrim}
    exec(PRELUDE, ns)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            print(eval(expr, ns))
        except Exception as err:  # noqa: BLE001 (the class and message are compared)
            print(f"raises {type(err).__name__}: {err}")
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_against_jax(name: str) -> None:
    assert _run("spec", PROGRAMS[name]) == _run("jax", PROGRAMS[name])


def test_every_jax_export_is_importable() -> None:
    theirs = {n for n in dir(jax_hijax) if not n.startswith("_")}
    missing = sorted(theirs - set(dir(spec_hijax)))
    assert not missing
    assert spec_hijax.VJPHiPrimitive is spec_hijax.HiPrim


def test_facade_objects_are_spec_objects() -> None:
    from spec._src.interpreters import ad, ad_util
    assert spec_hijax.Zero is ad_util.Zero
    assert spec_hijax.RefAccum is ad.RefAccum
    assert issubclass(spec_hijax.RefAccum, spec_hijax.GradAccum)
    assert isinstance(spec.typeof(1.), spec_hijax.ShapedArray)
    assert isinstance(spec.typeof(1.), spec_hijax.AbstractValue)
    assert spec_hijax.ShapedArray((), snp.float32.dtype).shape == ()


def test_zero_helpers() -> None:
    z = spec_hijax.Zero(spec.typeof(snp.ones(2)))
    assert snp.array_equal(spec_hijax.instantiate_zeros(z), snp.zeros(2))
    assert spec_hijax.instantiate_zeros(3.) == 3.
    from spec._src.interpreters.ad_util import UndefinedPrimal
    assert spec_hijax.is_undefined_primal(UndefinedPrimal(spec.typeof(1.)))
    assert not spec_hijax.is_undefined_primal(1.)


def test_accumulators() -> None:
    aval = spec.typeof(snp.ones(2))
    acc = spec_hijax.ValAccum(aval)
    assert type(acc.freeze()) is spec_hijax.Zero
    acc.accum(snp.ones(2))
    acc.accum(None)
    acc.accum(snp.ones(2))
    assert snp.array_equal(acc.freeze(), 2 * snp.ones(2))
    null = spec_hijax.NullAccum(aval)
    null.accum(snp.ones(2))
    with pytest.raises(ValueError, match="H7"):
        spec_hijax.ValAccum(aval, "Mul H7: vjp_bwd").accum(snp.ones(3))


# ------------------------------------------------- spec's typing constraints


def _ns() -> dict[str, Any]:
    ns: dict[str, Any] = {"jax": spec, "jnp": snp, "Base": spec_hijax.HiPrim}
    exec(PRELUDE, ns)
    return ns


def test_h2_operand_type() -> None:
    ns = _ns()
    with pytest.raises(TypeError, match=r"Mul H2: operand 0 has type f32\[3\], in_avals says "
                                        r"f32\[\]"):
        ns["Mul"](spec.typeof(1.), spec.typeof(1.))(snp.ones(3), 1.)


def test_h4_argument_structure() -> None:
    ns = _ns()
    with pytest.raises(TypeError, match="Pair H4"):
        ns["Pair"](spec.typeof(1.))({"a": 1.})


def test_h3_out_aval_leaf() -> None:
    class NotAType(spec_hijax.VJPHiPrimitive):
        def __init__(self) -> None:
            self.in_avals = ()
            self.out_aval = "f32[]"
            self.params = {}
            super().__init__()

    with pytest.raises(TypeError, match="NotAType H3"):
        NotAType()


def test_h5_expand_type() -> None:
    class Wrong(spec_hijax.VJPHiPrimitive):
        def __init__(self, a: Any) -> None:
            self.in_avals = (a,)
            self.out_aval = a
            self.params = {}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return snp.stack([x, x])

    with pytest.raises(TypeError, match=r"Wrong H5: expand returned f32\[2\]"):
        spec.jit(lambda x: Wrong(spec.typeof(x))(x))(1.)


def test_h6_and_h7_rule_results() -> None:
    class BadFwd(spec_hijax.VJPHiPrimitive):
        def __init__(self, a: Any) -> None:
            self.in_avals = (a,)
            self.out_aval = a
            self.params = {}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return x

        def vjp_fwd(self, nzs: Any, x: Any) -> Any:
            return self(x)

    with pytest.raises(TypeError, match="BadFwd H6"):
        spec.grad(lambda x: BadFwd(spec.typeof(x))(x))(1.)

    class BadBwd(BadFwd):
        def vjp_fwd(self, nzs: Any, x: Any) -> Any:
            return self(x), None

        def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
            return (snp.ones(3),)

    with pytest.raises(ValueError, match=r"BadBwd H7: vjp_bwd produced a cotangent of type "
                                        r"f32\[3\]"):
        spec.grad(lambda x: BadBwd(spec.typeof(x))(x))(1.)


def test_overriding_both_backward_rules_is_refused() -> None:
    class Both(spec_hijax.VJPHiPrimitive):
        def __init__(self) -> None:
            self.in_avals = ()
            self.out_aval = ()
            self.params = {}
            super().__init__()

        def vjp_bwd(self, res: Any, g: Any, *accs: Any) -> None:
            return None

        def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
            return ()

    with pytest.raises(AttributeError, match="should not override both"):
        Both()


def test_deriving_in_a_circle_is_refused() -> None:
    class Circle(spec_hijax.VJPHiPrimitive):
        def __init__(self, a: Any) -> None:
            self.in_avals = (a,)
            self.out_aval = a
            self.params = {}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return x

        jvp = spec_hijax.jvp_from_lin
        lin, linearized = spec_hijax.linearize_from_jvp

    with pytest.raises(TypeError, match="each would be defined in terms of the other"):
        spec.jvp(lambda x: Circle(spec.typeof(x))(x), (1.,), (1.,))


def test_a_derived_pair_is_not_a_rule() -> None:
    with pytest.raises(TypeError, match="is a pair of rules"):
        spec_hijax.vjp_from_lin()
