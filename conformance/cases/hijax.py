"""Hijax primitives (``jax.experimental.hijax``): the API surface, the printed
jaxprs of user primitives (alone, differentiated, batched, under scan and
cond, nested), values through their rules and the derived rules, and the
exception classes of missing rules and of wrong rule outputs that JAX
0.12.0.1 checks. The user primitive subclasses each implementation's
``HiPrim`` (JAX 0.12's name for the documented ``VJPHiPrimitive``)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from conformance.registry import capture, case

# The names JAX 0.12.0.1's jax.experimental.hijax exports.
EXPORTS = (
    "AbstractRef", "AbstractValue", "GradAccum", "HiPrim", "HiPspec", "HiType", "MappingSpec",
    "NullAccum", "RefAccum", "ShapedArray", "TransformedRef", "ValAccum", "Zero", "aval_method",
    "aval_property", "bdims_at_front", "control_flow_allowed_effects", "instantiate_zeros",
    "is_undefined_primal", "jvp_from_lin", "linearize_from_jvp", "register_hitype",
    "unmap_avals", "vjp_from_jvp", "vjp_from_lin", "vmap_rule",
)


def _hijax(jax: Any) -> Any:
    return importlib.import_module(jax.__name__ + ".experimental.hijax")


class _Prims:
    """The user primitives of the cases, built on one implementation."""

    def __init__(self, jax: Any, jnp: Any) -> None:
        hijax = _hijax(jax)
        base = hijax.HiPrim
        self.hijax = hijax

        class Mul(base):  # type: ignore[misc, valid-type]
            def __init__(self, x_aval: Any, y_aval: Any, tag: str = "t") -> None:
                self.in_avals = (x_aval, y_aval)
                self.out_aval = x_aval
                self.params = dict(tag=tag, n=3)
                super().__init__()

            def expand(self, x: Any, y: Any) -> Any:
                return x * y

            def vjp_fwd(self, nzs_in: Any, x: Any, y: Any) -> Any:
                return self(x, y), (x, y)

            def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
                x, y = res
                return (g * y, x * g)

            def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
                x, y = hijax.bdims_at_front(axis_data, args, dims)
                return Mul(jax.typeof(x), jax.typeof(y), self.tag)(x, y), 0

        class Cube(base):  # type: ignore[misc, valid-type]
            """x**3 with only a jvp rule (which records its tangent's kind)."""

            seen: list[str] = []

            def __init__(self, x_aval: Any, y_aval: Any) -> None:
                self.in_avals = (x_aval, y_aval)
                self.out_aval = x_aval
                self.params = {}
                super().__init__()

            def expand(self, x: Any, y: Any) -> Any:
                return x * x * x + y

            def jvp(self, primals: Any, tangents: Any) -> Any:
                (x, y), (t, s) = primals, tangents
                Cube.seen.append("Zero" if isinstance(s, hijax.Zero) else "array")
                t, s = hijax.instantiate_zeros(t), hijax.instantiate_zeros(s)
                return self(x, y), 3. * x * x * t + s

        class CubeLin(Cube):
            lin, linearized = hijax.linearize_from_jvp
            vjp_fwd, vjp_bwd_retval = hijax.vjp_from_lin

        class CubeJvp(Cube):
            vjp_fwd, vjp_bwd_retval = hijax.vjp_from_jvp

        class Lin(base):  # type: ignore[misc, valid-type]
            """2 * x by lin/linearized; jvp derived."""

            def __init__(self, x_aval: Any) -> None:
                self.in_avals = (x_aval,)
                self.out_aval = x_aval
                self.params = {}
                super().__init__()

            def expand(self, x: Any) -> Any:
                return 2. * x

            def lin(self, nzs_in: Any, x: Any) -> Any:
                return self(x), None

            def linearized(self, res: Any, t: Any) -> Any:
                return 2. * t

            jvp = hijax.jvp_from_lin

        class Nested(base):  # type: ignore[misc, valid-type]
            def __init__(self, x_aval: Any) -> None:
                self.in_avals = (x_aval,)
                self.out_aval = x_aval
                self.params = dict(inner=Mul(x_aval, x_aval))
                super().__init__()

            def expand(self, x: Any) -> Any:
                return self.inner(x, x)

            def vjp_fwd(self, nzs: Any, x: Any) -> Any:
                return self(x), x

            def vjp_bwd_retval(self, x: Any, g: Any) -> Any:
                _, f = jax.vjp(self.inner, x, x)
                a, b = f(g)
                return (a + b,)

        class Pair(base):  # type: ignore[misc, valid-type]
            def __init__(self, x_aval: Any) -> None:
                self.in_avals = ({"a": x_aval, "b": [x_aval]},)
                self.out_aval = [x_aval, (x_aval,)]
                self.params = {}
                super().__init__()

            def expand(self, d: Any) -> Any:
                return [d["a"] * d["b"][0], (d["a"] + d["b"][0],)]

            def vjp_fwd(self, nzs: Any, d: Any) -> Any:
                return self(d), d

            def vjp_bwd_retval(self, d: Any, g: Any) -> Any:
                g0, (g1,) = g
                return ({"a": g0 * d["b"][0] + g1, "b": [g0 * d["a"] + g1]},)

        class WrongCt(Mul):
            """A backward rule with a cotangent of the wrong shape, or too few."""

            def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
                x, y = res
                if self.tag == "short":
                    return (g * y,)
                return (jnp.concatenate([g * y, g * y]), x * g)

        class WrongTangent(Cube):
            def jvp(self, primals: Any, tangents: Any) -> Any:
                return self(*primals), (tangents[0], tangents[1])

        self.Mul, self.Cube, self.CubeLin, self.CubeJvp = Mul, Cube, CubeLin, CubeJvp
        self.Lin, self.Nested, self.Pair = Lin, Nested, Pair
        self.WrongCt, self.WrongTangent = WrongCt, WrongTangent
        self.jax = jax

    def mul(self, x: Any, y: Any, tag: str = "t") -> Any:
        return self.Mul(self.jax.typeof(x), self.jax.typeof(y), tag)(x, y)

    def bind(self, cls: Any, *args: Any) -> Any:
        return cls(*(self.jax.typeof(a) for a in args))(*args)


def _x(jnp: Any) -> Any:
    return jnp.asarray(np.array([1., 2., 3.], np.float32))


@case(tags=("hijax", "api"))
def exported_names(jax: Any, jnp: Any, lax: Any) -> Any:
    hijax = _hijax(jax)
    return {n: hasattr(hijax, n) for n in EXPORTS}


@case(tags=("hijax", "api"))
def types_and_zeros(jax: Any, jnp: Any, lax: Any) -> Any:
    hijax = _hijax(jax)
    aval = jax.typeof(_x(jnp))
    zero = hijax.Zero(aval)
    return [isinstance(aval, hijax.ShapedArray), isinstance(aval, hijax.AbstractValue),
            str(hijax.ShapedArray((2,), np.dtype("float32"))), hijax.instantiate_zeros(zero),
            hijax.instantiate_zeros(3.), str(zero.aval),
            issubclass(hijax.RefAccum, hijax.GradAccum), hijax.is_undefined_primal(1.)]


@case(tags=("hijax", "api"))
def instance_repr_and_equality(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    a = jax.typeof(1.)
    return [repr(p.Mul(a, a)), repr(p.Mul(a, a, "u")), repr(p.Nested(a)),
            p.Mul(a, a) == p.Mul(a, a), p.Mul(a, a) == p.Mul(a, a, "u"),
            hash(p.Mul(a, a)) == hash(p.Mul(a, a))]


@case(tags=("hijax", "jaxpr"))
def jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    x = _x(jnp)
    return [
        str(jax.make_jaxpr(p.mul)(2., 3.)),
        str(jax.make_jaxpr(jax.grad(p.mul))(2., 3.)),
        str(jax.make_jaxpr(lambda v: jnp.sum(p.mul(v, v)))(x)),
        str(jax.jit(p.mul).trace(x, x).jaxpr),
        str(jax.make_jaxpr(jax.vmap(p.mul))(jnp.stack([x, x]), jnp.stack([x, x]))),
        str(jax.make_jaxpr(jax.vmap(p.mul, in_axes=(0, None)))(jnp.stack([x, x]), x)),
        str(jax.make_jaxpr(lambda v: p.bind(p.Nested, v))(2.)),
        str(jax.make_jaxpr(lambda v: p.Pair(jax.typeof(v))({"a": v, "b": [v]}))(2.)),
        str(jax.make_jaxpr(lambda v: jax.jvp(lambda a: p.bind(p.Cube, a, a), (v,), (v,)))(2.)),
        str(jax.make_jaxpr(lambda v: jax.jvp(lambda a: p.bind(p.Lin, a), (v,), (v,)))(2.)),
    ]


@case(tags=("hijax", "jaxpr", "control_flow"))
def jaxpr_text_under_control_flow(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    x = _x(jnp)
    return [
        str(jax.make_jaxpr(lambda v: lax.scan(lambda c, e: (p.mul(c, e), c), 1., v))(x)),
        str(jax.make_jaxpr(lambda v: lax.cond(v > 0, lambda a: p.mul(a, a), lambda a: a, v))(
            2.)),
        str(jax.make_jaxpr(lambda v: lax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, p.mul(c[1], c[1])), (0, v)))(2.)),
        str(jax.make_jaxpr(jax.grad(lambda v: lax.scan(
            lambda c, e: (p.mul(c, e), None), 1., v)[0]))(x)),
    ]


@case(tags=("hijax", "autodiff"))
def reverse_mode_values(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    x = _x(jnp)
    y = x + 1.
    out, f_vjp = jax.vjp(p.mul, x, y)
    pair_grad = jax.grad(lambda a, b: sum(jax.tree.leaves(
        p.Pair(jax.typeof(a))({"a": a, "b": [b]}))), (0, 1))(2., 3.)
    return [out, f_vjp(y), jax.grad(p.mul, (0, 1))(2., 3.),
            jax.jit(jax.grad(lambda a: jnp.sum(p.mul(a, y))))(x),
            jax.grad(lambda v: p.bind(p.Nested, v))(3.), pair_grad,
            jax.grad(lambda v: lax.scan(lambda c, e: (p.mul(c, e), None), jnp.float32(1.),
                                        v)[0])(x),
            jax.grad(lambda v: lax.cond(v > 0, lambda a: p.mul(a, a), lambda a: a, v))(3.),
            jax.vjp(jax.jit(p.mul), 2., 3.)[1](1.)]


@case(tags=("hijax", "autodiff"))
def forward_mode_and_derived_rules(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    p.Cube.seen.clear()
    x = _x(jnp)

    def cube(cls: Any) -> Any:
        return lambda a: p.bind(cls, a, jnp.float32(1.))

    out = [jax.jvp(cube(p.Cube), (x,), (x,)),
           jax.jvp(lambda a: p.bind(p.Cube, a, a), (x,), (jnp.ones(3, "float32"),)),
           jax.linearize(cube(p.CubeLin), x)[1](x),
           jax.grad(lambda a: jnp.sum(cube(p.CubeLin)(a)))(x),
           jax.grad(lambda a: jnp.sum(cube(p.CubeJvp)(a)))(x),
           jax.jvp(lambda a: p.bind(p.Lin, a), (x,), (x,)),
           jax.linearize(lambda a: p.bind(p.Lin, a), x)[1](x),
           jax.jit(lambda a: jax.jvp(cube(p.Cube), (a,), (a,)))(x)]
    return [out, list(p.Cube.seen)]


@case(tags=("hijax", "vmap"))
def batch_rule_values(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    x = _x(jnp)
    xs = jnp.stack([x, x * 2.])
    return [jax.vmap(p.mul)(xs, xs), jax.vmap(p.mul, in_axes=(0, None))(xs, x),
            jax.vmap(p.mul, in_axes=(1, 0))(xs.T, xs), jax.vmap(jax.grad(p.mul))(x, x),
            jax.jit(jax.vmap(p.mul))(xs, xs)]


@case(tags=("hijax", "errors"))
def missing_rules(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    return [capture(lambda: jax.jvp(p.mul, (2., 3.), (1., 1.))),
            capture(lambda: jax.linearize(p.mul, 2., 3.)),
            capture(lambda: jax.make_jaxpr(lambda v: jax.jvp(p.mul, (v, v), (v, v)))(2.)),
            capture(lambda: jax.grad(lambda v: p.bind(p.Cube, v, v))(2.)),
            capture(lambda: jax.linearize(lambda v: p.bind(p.Cube, v, v), 2.)),
            capture(lambda: jax.vmap(lambda v: p.bind(p.Nested, v))(_x(jnp))),
            capture(lambda: p.hijax.vjp_from_lin()),
            capture(lambda: p.hijax.linearize_from_jvp())]


@case(tags=("hijax", "errors"))
def wrong_rule_outputs(jax: Any, jnp: Any, lax: Any) -> Any:
    p = _Prims(jax, jnp)
    x = _x(jnp)

    def grad_of(tag: str) -> Any:
        return jax.jit(jax.grad(lambda a: jnp.sum(
            p.WrongCt(jax.typeof(a), jax.typeof(x), tag)(a, x))))(x)

    return [capture(grad_of, "shape"), capture(grad_of, "short"),
            capture(lambda: jax.jvp(lambda a: p.bind(p.WrongTangent, a, a), (x,), (x,)))]
