"""Whole-module text of differentiated programs: ``jit(grad(f)).lower(...)
.as_text()`` is JAX's own module, attributes and result names kept, after
jaxlib's MLIR printer normalises SSA names (an MLP loss, a scan, a cond, a
custom_vjp and custom_jvp, checkpoint, a Hessian, loops under jvp)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as snp
from spec import lax as slax
from tests.lowering.xla_run import compile_and_run, parsed

Program = Callable[[Any, Any, Any], Callable[..., Any]]


def _mlp(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def loss(params: Any, x: Any, y: Any) -> Any:
        (w1, b1), (w2, b2) = params
        out = numpy.tanh(x @ w1 + b1) @ w2 + b2
        return numpy.mean((out - y) ** 2)
    return lib.grad(loss)


def _scan(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def f(w: Any, xs: Any) -> Any:
        def step(c: Any, a: Any) -> Any:
            c = numpy.tanh(c @ w + a)
            return c, numpy.sum(c)
        c, ys = lax.scan(step, xs[0], xs)
        return numpy.sum(c) + numpy.sum(ys)
    # Two argnums and the value: the transposed loop reads rows of several
    # shapes (private functions renamed with the module's one counter).
    return lib.value_and_grad(f, argnums=(0, 1))


def _cond(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def f(x: Any, y: Any) -> Any:
        return numpy.sum(lax.cond(numpy.sum(x) > 0, lambda a, b: numpy.sin(a) * b,
                                  lambda a, b: a - numpy.cos(b), x, y))
    return lib.grad(f, argnums=(0, 1))


def _switch(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def f(x: Any, i: Any) -> Any:
        return numpy.sum(lax.switch(i, [numpy.sin, numpy.cos, lambda v: v * v], x))
    return lib.grad(f)


def _custom_vjp(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    @lib.custom_vjp
    def g(v: Any) -> Any:
        return numpy.sin(v) * v

    def fwd(v: Any) -> Any:
        return numpy.sin(v) * v, (v, numpy.cos(v))

    def bwd(r: Any, ct: Any) -> Any:
        return (ct * (r[1] * r[0] + numpy.sin(r[0])),)
    g.defvjp(fwd, bwd)

    @lib.custom_vjp
    def clip(v: Any) -> Any:
        return v
    clip.defvjp(lambda v: (v, None), lambda r, ct: (numpy.clip(ct, -1.0, 1.0),))

    def f(x: Any) -> Any:
        c, _ = lax.scan(lambda c, a: (clip(c * a), None), x[0], x)
        return numpy.sum(g(x) * 3.0) + c
    return lib.grad(f)


def _custom_jvp(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    @lib.custom_jvp
    def softplus(v: Any) -> Any:
        return numpy.log1p(numpy.exp(v))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * lib.nn.sigmoid(p[0])))
    return lib.grad(lambda x: numpy.sum(softplus(x) * x))


def _remat(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        g = lib.checkpoint(lambda u: numpy.sin(numpy.sin(u)) * u)
        return numpy.sum(g(g(x))) + numpy.sum(
            lax.fori_loop(0, 4, lambda i, v: numpy.sin(v) * 1.5 + i, x))
    return lib.grad(f)


def _hessian(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    return lib.hessian(lambda x: numpy.sum(numpy.sin(x) ** 3))


def _jvp_while(lib: Any, lax: Any, numpy: Any) -> Callable[..., Any]:
    def f(x: Any) -> Any:
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, numpy.sin(c[1])),
                              (0, x))[1]
    return lambda x, t: lib.jvp(f, (x,), (t,))


_rng = np.random.default_rng(5)


def _f32(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


CASES: dict[str, tuple[Program, tuple[Any, ...]]] = {
    "mlp": (_mlp, ([(_f32(4, 8), _f32(8)), (_f32(8, 2), _f32(2))], _f32(5, 4), _f32(5, 2))),
    "scan": (_scan, (_f32(3, 3), _f32(5, 3))),
    "cond": (_cond, (_f32(3), _f32(3))),
    "switch": (_switch, (_f32(3), np.int32(1))),
    "custom_vjp": (_custom_vjp, (_f32(4),)),
    "custom_jvp": (_custom_jvp, (_f32(3),)),
    "remat": (_remat, (_f32(3),)),
    "hessian": (_hessian, (_f32(3),)),
    "jvp_while": (_jvp_while, (_f32(3), _f32(3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_differentiated_module_is_jaxs(name: str) -> None:
    program, args = CASES[name]
    theirs = jax.jit(program(jax, jlax, jnp)).lower(*args).as_text()
    ours = spec.jit(program(spec, slax, snp)).lower(*args).as_text()
    assert parsed(ours) == parsed(theirs)


def test_differentiated_module_runs_with_spec_values() -> None:
    """The MLP's gradient module, compiled by XLA, gives spec's gradient."""
    program, args = CASES["mlp"]
    ours = spec.jit(program(spec, slax, snp))(*args)
    text = spec.jit(program(spec, slax, snp)).lower(*args).as_text()
    compiled = compile_and_run(text, [np.asarray(a) for a in jax.tree_util.tree_leaves(args)])
    for a, b in zip(spec.tree_util.tree_leaves(ours), compiled):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-6)


def _renamed(lib: Any, numpy: Any) -> Callable[..., Any]:
    def main(v: Any) -> Any:
        return numpy.sin(v)

    def g(v: Any) -> Any:
        return v * 2.0

    def fn(x: Any, y: Any) -> Any:
        return (lib.jit(main)(x), lib.jit(main)(y), lib.jit(g)(x), lib.jit(g)(y),
                lib.jit(g)(x.astype(numpy.int32)), lib.jit(main)(x.astype(numpy.float16)))
    return fn


def test_function_names_share_one_renaming_counter() -> None:
    """Clashing private functions are renamed as MLIR's symbol table renames
    them: one counter for the module (``main_0``, ``main_1``, ``g_2``, ...),
    ``main`` itself taken by the entry function."""
    x, y = np.ones(3, np.float32), np.ones(2, np.float32)
    theirs = jax.jit(_renamed(jax, jnp)).lower(x, y).as_text()
    ours = spec.jit(_renamed(spec, snp)).lower(x, y).as_text()
    assert parsed(ours) == parsed(theirs)
    assert "func.func private @g_2(" in ours and "func.func private @main_4(" in ours


def _op_names(text: str) -> list[str]:
    """The op name of each op and terminator of a module printed with
    debug info, in order (JAX's ``#locN`` aliases resolved)."""
    aliases = dict(re.findall(r"^(#loc\d*) = loc\((.*)\)$", text, re.M))
    names = []
    for line in text.splitlines():
        if not re.match(r"\s+(%|return|stablehlo\.return)", line):
            continue
        m = re.search(r" loc\((#loc\d*|unknown|\".*)\)\s*$", line)
        if m is None:
            continue
        loc = m.group(1)
        while loc.startswith("#loc"):
            loc = aliases[loc]
        quoted = re.match(r'"([^"]*)"', loc)
        names.append(quoted.group(1) if quoted else loc)
    return names


@pytest.mark.parametrize("name", ["mlp", "scan", "cond", "switch", "remat", "jvp_while",
                                  "custom_jvp", "hessian"])
def test_differentiated_op_names_are_jaxs(name: str) -> None:
    """Each op's name stack (``jit(loss)/jvp()/add``, ``transpose(jvp())``),
    decompositions lowered through ``lower_fun`` included, is JAX's; the ops
    of scan's private functions are named relative to them (``dynamic_slice``,
    ``loc(unknown)`` for constants and the return); a custom_jvp rule's
    tangent products ``transpose(jvp(jvp()))``; a Hessian's move of the
    batch axis to ``out_axes`` ``vmap()/transpose``."""
    program, args = CASES[name]
    theirs = jax.jit(program(jax, jlax, jnp)).lower(*args).as_text(debug_info=True)
    ours = spec.jit(program(spec, slax, snp)).lower(*args).as_text(debug_info=True)
    assert _op_names(ours) == _op_names(theirs)


def _softplus(lib: Any, numpy: Any) -> Any:
    @lib.custom_jvp
    def softplus(v: Any) -> Any:
        return numpy.log1p(numpy.exp(v))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * lib.nn.sigmoid(p[0])))
    return softplus


def _named_programs(lib: Any, numpy: Any) -> dict[str, Callable[..., Any]]:
    sp = _softplus(lib, numpy)
    return {
        "out_axes": lib.vmap(lambda v: (numpy.sin(v), 2.0 * numpy.ones(3)), out_axes=(1, 0)),
        "unbatched_out_axes": lib.vmap(lambda v: (v * 2, numpy.ones((2, 3))), out_axes=1),
        "jacfwd": lambda v: lib.jacfwd(lambda u: numpy.sin(u) * u[0])(v[0]),
        "custom_jvp_linearized": lambda v: lib.linearize(lambda u: sp(u) * 2, v)[1](v),
        "custom_jvp_vjp_in_scope": lambda v: lib.vjp(
            lambda u: lib.named_scope("inner")(sp)(u), v)[1](v),
        "relu": lib.nn.relu,
        "custom_jvp_grad_in_scope": lambda v: lib.named_scope("outer")(
            lib.grad(lambda u: numpy.sum(sp(u))))(v),
        "custom_jvp_vmap_grad": lambda v: lib.vmap(lib.grad(sp))(v[0]),
        "custom_jvp_grad_grad": lambda v: lib.grad(lib.grad(sp))(v[0, 0]),
        "jit_grad_in_scope": lambda v: lib.named_scope("s")(
            lib.grad(lib.jit(lambda u: numpy.sum(numpy.sin(u)))))(v),
        "inline_jit_grad": lib.grad(lambda v: lib.jit(
            lambda u: numpy.sum(numpy.sin(u)), inline=True)(v)),
        "custom_jvp_jvp_vmap": lambda v: lib.jvp(lib.vmap(sp), (v,), (v,))[1],
    }


@pytest.mark.parametrize("name", ["out_axes", "unbatched_out_axes", "jacfwd",
                                  "custom_jvp_linearized", "custom_jvp_vjp_in_scope", "relu",
                                  "custom_jvp_grad_in_scope", "custom_jvp_vmap_grad",
                                  "custom_jvp_grad_grad", "jit_grad_in_scope",
                                  "inline_jit_grad", "custom_jvp_jvp_vmap"])
def test_transformed_op_names_are_jaxs(name: str) -> None:
    """vmap moves outputs to ``out_axes`` within its transformation
    (``vmap()/transpose``, ``vmap()/broadcast_in_dim``); a custom_jvp rule's
    tangent equations from jnp functions are named by the whole name stack
    under the whole stack again (``jvp(inner)/mul`` under ``jvp(inner)``,
    ``outer/jvp()`` under ``outer/jvp()`` when grad runs in a named scope,
    ``vmap(jvp())`` under ``vmap(jvp())``); a nested jit's function (relu's)
    leaves its constants and return unnamed; a jit under a transformation is
    the scope the transformation wraps (``transpose(jvp(jit(f)))``); a
    custom_jvp rule batched by vmap is named ``vmap`` once."""
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    theirs = jax.jit(_named_programs(jax, jnp)[name]).lower(x).as_text(debug_info=True)
    ours = spec.jit(_named_programs(spec, snp)[name]).lower(x).as_text(debug_info=True)
    assert _op_names(ours) == _op_names(theirs)
