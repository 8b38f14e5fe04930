"""Dead-code elimination inside equations (the per-primitive ``dce`` hooks of
jit, cond, while, scan and remat2), checked live against real JAX: its
``pe.dce_jaxpr`` on the same program, and the linear jaxprs that linearize
(and so grad) produce."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.interpreters import partial_eval as pe

import spec
import spec.numpy as snp
from spec.config import use_direct_linearize
from spec._src.core.interpreter import dce_jaxpr, dce_sub_jaxpr, eval_jaxpr

Fn = Callable[[Any], Any]


def _programs(J: Any, N: Any) -> dict[str, Fn]:
    """The same functions written against jax or spec."""
    L = J.lax

    def fori(x: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            a, b = c
            return (a * 2.0 + N.sin(b), b + 1.0)
        return L.fori_loop(0, 3, body, (x, x))[0]

    def while_(x: Any) -> Any:
        def body(c: Any) -> Any:
            a, b, i = c
            return (N.sin(a) * b, b * 2.0, i + 1)
        return L.while_loop(lambda c: c[2] < 3, body, (x, x, 0))[0]

    def while_carry(x: Any) -> Any:
        # The tangent of the first carry needs neither the second carry's
        # tangent nor the loop's other outputs.
        def body(c: Any) -> Any:
            a, b = c
            return (a * 3.0, b + 1.0)
        return L.while_loop(lambda c: c[1] < 5.0, body, (x, x))[0]

    def scan(x: Any) -> Any:
        def body(c: Any, xs: Any) -> Any:
            a, b = c
            return (a * N.cos(b), b + xs), (a * xs, N.sin(b))
        (a, _), (y1, _) = L.scan(body, (x, x), N.arange(3.0))
        return N.sum(y1) + a

    def scan_carry(x: Any) -> Any:
        def body(c: Any, _: Any) -> Any:
            a, b = c
            return (N.sin(a), b * 2.0), (a, b)
        return L.scan(body, (x, x), None, length=3)[0][0]

    def cond(x: Any) -> Any:
        return L.cond(x > 0, lambda v: (N.sin(v), N.cos(v)),
                      lambda v: (v * 2.0, v + 1.0), x)[0]

    def jit(x: Any) -> Any:
        def g(v: Any) -> Any:
            return N.sin(v), N.cos(v) * v, v * 3.0
        a, b, _ = J.jit(g)(x)
        return a * b

    def ckpt(x: Any) -> Any:
        g = J.checkpoint(lambda v: (N.sin(v), N.cos(v) * v))
        return g(x)[0] * 2.0

    def nested(x: Any) -> Any:
        def g(v: Any) -> Any:
            def body(c: Any, xs: Any) -> Any:
                y, z = L.cond(c > 0, lambda u: (N.sin(u), u * 2.0),
                              lambda u: (u, N.cos(u)), c)
                return y + xs, (z, y)
            c, (zs, _) = L.scan(body, v, N.arange(2.0))
            return c, zs
        return J.jit(g)(x)[0]

    def scan_ckpt(x: Any) -> Any:
        def body(c: Any, _: Any) -> Any:
            return J.checkpoint(lambda u: (N.sin(u), N.cos(u)))(c)
        return L.scan(body, x, None, length=3)[0]

    return dict(fori=fori, while_=while_, while_carry=while_carry, scan=scan,
                scan_carry=scan_carry, cond=cond, jit=jit, ckpt=ckpt, nested=nested,
                scan_ckpt=scan_ckpt)


JAX_FNS = _programs(jax, jnp)
SPEC_FNS = _programs(spec, snp)
X = 0.7

# grad through a while loop is an error in JAX; those rows test linearize only.
NO_GRAD = {"while_", "while_carry"}
# Where the legacy path prints JAX's linear jaxpr except for the scan's
# ft_in/ft_out groupings (its partial evaluator nests them differently) or a
# forward checkpoint it keeps as a call: compared with those params removed.
LEGACY_FT_ONLY = {"fori", "scan", "scan_carry", "nested", "scan_ckpt"}
# Differences that DCE does not explain (see the report): skipped rows.
KNOWN = {("nested", "grad"): "a weak-typed convert_element_type JAX inserts in the transpose",
         ("ckpt", "lin", True): "the direct path keeps a literal 2.0 as a constant",
         ("jit", "grad", False): "legacy partial eval forwards an input as a residual",
         ("jit", "lin", False): "legacy partial eval stages a literal as a constant",
         ("ckpt", "grad", False): "legacy partial eval keeps a primal remat2 call",
         ("scan_ckpt", "grad", False): "legacy partial eval keeps a primal remat2 call"}


def _text(kind: str, name: str, which: str) -> str:
    if which == "jax":
        f: Fn = JAX_FNS[name]
        if kind == "grad":
            return str(jax.make_jaxpr(jax.grad(f))(X))
        return str(jax.make_jaxpr(jax.linearize(f, X)[1])(X))
    g: Fn = SPEC_FNS[name]
    if kind == "grad":
        return str(spec.make_jaxpr(spec.grad(g))(X))
    return str(spec.make_jaxpr(spec.linearize(g, X)[1])(X))


def _strip_ft(text: str) -> str:
    return re.sub(r"ft_(in|out)=.*", "", text)


CASES = [(n, k) for n in JAX_FNS for k in ("grad", "lin") if not (k == "grad" and n in NO_GRAD)]


@pytest.mark.parametrize("name,kind", CASES)
@pytest.mark.parametrize("direct", [True, False])
def test_linear_jaxpr_text_matches_jax(name: str, kind: str, direct: bool) -> None:
    if (name, kind) in KNOWN or (name, kind, direct) in KNOWN:
        pytest.skip(KNOWN.get((name, kind)) or KNOWN[(name, kind, direct)])
    want = _text(kind, name, "jax")
    with use_direct_linearize(direct):
        got = _text(kind, name, "spec")
    if not direct and name in LEGACY_FT_ONLY:
        want, got = _strip_ft(want), _strip_ft(got)
    assert got == want


@pytest.mark.parametrize("name", list(JAX_FNS))
def test_values_unchanged(name: str) -> None:
    want_lin = jax.linearize(JAX_FNS[name], X)[1](1.25)
    outs = []
    for direct in (True, False):
        with use_direct_linearize(direct):
            y, lin = spec.linearize(SPEC_FNS[name], X)
            outs.append(np.asarray(lin(1.25)))
            np.testing.assert_allclose(np.asarray(y), np.asarray(JAX_FNS[name](X)), rtol=1e-6)
            if name not in NO_GRAD:
                np.testing.assert_allclose(np.asarray(spec.grad(SPEC_FNS[name])(X)),
                                           np.asarray(jax.grad(JAX_FNS[name])(X)), rtol=1e-6)
    np.testing.assert_allclose(outs[0], np.asarray(want_lin), rtol=1e-6)
    np.testing.assert_array_equal(outs[0], outs[1])


def _many_outputs(J: Any, N: Any) -> Fn:
    L = J.lax

    def f(x: Any) -> Any:
        def body(c: Any, xs: Any) -> Any:
            a, b, k = c
            return (a + b, b * 2.0, k + 1.0), (N.sin(a), b * xs)
        (a, _, k), (y1, y2) = L.scan(body, (x, x, x), N.arange(3.0))

        def wbody(c: Any) -> Any:
            p, q, r, i = c
            return (p * q, q + 1.0, r * 3.0, i + 1)
        p, _, r, _ = L.while_loop(lambda c: c[3] < 3, wbody, (x, x, x, 0))
        u, v = L.cond(x > 0, lambda t: (N.sin(t), N.cos(t)), lambda t: (t, t * 2.0), x)
        g1, g2 = J.jit(lambda t: (N.exp(t), t * 5.0))(x)
        h1, h2 = J.checkpoint(lambda t: (N.sin(t), N.cos(t)))(x)
        return a, k, y1, y2, p, r, u, v, g1, g2, h1, h2
    return f


MASKS = [[True] * 12,
         [True, False, False, True, True, False, True, False, False, True, True, False],
         [False, True, True, False, False, True, False, True, True, False, False, True],
         [False] * 11 + [True]]


@pytest.mark.parametrize("mask", MASKS)
def test_dce_of_sub_jaxpr_matches_jax(mask: list[bool]) -> None:
    """Pruning outputs of a program with a scan (carry fixed point), a while
    (carry fixed point through the predicate), a cond, a jit and a
    checkpoint gives JAX's pe.dce_jaxpr text and used inputs."""
    want, want_used = pe.dce_jaxpr(jax.make_jaxpr(_many_outputs(jax, jnp))(X).jaxpr, mask)
    program = spec.make_jaxpr(_many_outputs(spec, snp))(X)
    got, got_used = dce_sub_jaxpr(program, mask)
    assert str(got) == str(want)
    assert got_used == want_used
    full = eval_jaxpr(program, program.consts, np.float32(X))
    pruned = eval_jaxpr(got, got.consts, *([np.float32(X)] if got_used[0] else []))
    kept = [v for v, m in zip(full, mask) if m]
    for a, b in zip(kept, pruned):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_make_jaxpr_keeps_dead_code_as_jax() -> None:
    """JAX does not dead-code-eliminate a traced program: unused call results,
    loop outputs and dead equations stay."""
    assert str(spec.make_jaxpr(_many_outputs(spec, snp))(X)) == \
        str(jax.make_jaxpr(_many_outputs(jax, jnp))(X))

    def dead(J: Any, N: Any) -> Fn:
        def f(x: Any) -> Any:
            a, _ = J.jit(lambda t: (N.sin(t), t * 2.0))(x)
            _ = J.lax.scan(lambda c, _: (c + 1.0, c * 2.0), x, None, length=2)
            _ = x * 3.0
            return a
        return f
    assert str(spec.make_jaxpr(dead(spec, snp))(X)) == str(jax.make_jaxpr(dead(jax, jnp))(X))


def test_dce_jaxpr_identity_and_opt_out() -> None:
    """Nothing to remove: the same object comes back. ``rules=False`` prunes
    only whole equations."""
    program = spec.make_jaxpr(_many_outputs(spec, snp))(X)
    assert dce_jaxpr(program) is program
    masked, _ = dce_sub_jaxpr(program, MASKS[1])
    # Only with rules does the scan lose outputs (k and y1; b stays: a needs it).
    shallow = dce_jaxpr(type(program)(program.constvars, program.invars,
                                      [o for o, m in zip(program.outvars, MASKS[1]) if m],
                                      program.eqns, program.effects, program.consts),
                        rules=False)
    scan_outs = [len(e.outvars) for e in shallow.eqns if e.primitive.name == "scan"]
    assert scan_outs == [5]
    assert [len(e.outvars) for e in masked.eqns if e.primitive.name == "scan"] == [3]
