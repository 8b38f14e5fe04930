"""``VJP.structured_residuals`` has JAX 0.12.0.1's structure for plain
programs (one entry per ``jit``/``scan`` application, and per jnp function
JAX stages as an early-inlined ``jit``, that receives a nonzero tangent;
nested as the calls nest), on both linearize paths; and a hijax primitive's
``vjp_fwd`` residuals land there with their structure. Each case runs the
same program on spec and on JAX in the test."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp


def _programs(lib: Any, np_: Any) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    lax = lib.lax
    x = np_.arange(3.)
    return {
        "sum_times_two_plus_one": (lambda x: np_.sum(x) * 2 + 1, (x,)),
        "jnp_sin": (np_.sin, (x,)),
        "lax_sin": (lax.sin, (x,)),
        "mul_self": (lambda x: x * x, (x,)),
        "neg": (lambda x: -x, (x,)),
        "method_sum": (lambda x: x.sum(), (x,)),
        "index": (lambda x: x[0], (x,)),
        "dot": (lambda x: np_.dot(x, x), (x,)),
        "matmul": (lambda x: x @ x, (x,)),
        "where": (lambda x: np_.where(x > 0, x, 0.), (x,)),
        "mean": (np_.mean, (x,)),
        "log1p_exp": (lambda x: np_.log(1. + np_.exp(x)), (x,)),
        "jit": (lib.jit(lambda x: np_.sin(x) * 2), (x,)),
        "nested_jit": (lib.jit(lambda x: lib.jit(np_.sin)(x) * 2), (x,)),
        "jit_then_eager": (lambda x: lib.jit(np_.cos)(x) + np_.sin(x), (x,)),
        "two_args": (lambda x, y: x * y + np_.sin(y), (x, x + 1)),
        "integer_arg": (lambda x, n: x * n, (x, np_.arange(3))),
        "integer_path": (lambda x, n: x + (n * 2).astype(np_.float32), (x, np_.arange(3))),
        "scan": (lambda x: lax.scan(lambda c, a: (c * a + np_.sin(a), None), 1., x)[0], (x,)),
        "scan_jit_body": (lambda x: lax.scan(lambda c, a: (lib.jit(np_.sin)(c) * a, None),
                                             1., x)[0], (x,)),
        "cond": (lambda x: lax.cond(x[0] > 0, np_.sin, np_.cos, x), (x,)),
        "cond_jit_branch": (lambda x: lax.cond(x[0] > 0, lib.jit(np_.sin), np_.cos, x), (x,)),
        "while": (lambda x: lax.while_loop(lambda c: c[1] < 3,
                                           lambda c: (c[0] * 2., c[1] + 1), (x, 0))[0], (x,)),
        "fori": (lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2., x), (x,)),
        "pytree_in": (lambda d: np_.sum(d["a"] * d["b"][0]), ({"a": x, "b": (x + 1., 2.)},)),
        "vmap_jnp": (lambda x: lib.vmap(np_.sin)(x), (x,)),
        "vmap_lax": (lambda x: lib.vmap(lax.sin)(x), (x,)),
        "checkpoint": (lib.checkpoint(lambda x: np_.sin(np_.sin(x))), (x,)),
        "jit_checkpoint": (lib.jit(lib.checkpoint(lambda x: np_.sin(x) * 2)), (x,)),
        "stop_gradient": (lambda x: np_.sin(lax.stop_gradient(x)) + x, (x,)),
        "python_scalar": (lambda s: s * s + 1., (2.,)),
        "reshape": (lambda x: x.reshape(3, 1).T, (x,)),
        "concatenate": (lambda x: np_.concatenate([x, x]), (x,)),
        "maximum": (lambda x: np_.maximum(x, 1.), (x,)),
        "jit_pytree_out": (lib.jit(lambda x: (np_.sin(x), {"c": x * 2})), (x,)),
        "lax_only": (lambda x: lax.mul(lax.sin(x), lax.cos(x)), (x,)),
        "tanh_sqrt": (lambda x: np_.tanh(np_.sqrt(x + 1.)), (x,)),
        "cumsum": (np_.cumsum, (x,)),
        "abs_square": (lambda x: np_.abs(x) ** 2, (x,)),
        "power_float": (lambda x: x ** 1.5, (x + 1.,)),
        "comparisons": (lambda x: np_.where(np_.logical_and(x > 0, x < 2), x, -x), (x,)),
        "reductions": (lambda x: np_.max(x) + np_.min(x) + np_.prod(x), (x,)),
    }


NAMES = sorted(_programs(jax, jnp))


def _structure(lib: Any, np_: Any, name: str) -> str:
    fun, args = _programs(lib, np_)[name]
    _, f_vjp = lib.vjp(fun, *args)
    return repr(f_vjp.structured_residuals)


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "legacy"])
@pytest.mark.parametrize("name", NAMES)
def test_structure_matches_jax(name: str, direct: bool) -> None:
    with spec.config.use_direct_linearize(direct):
        ours = _structure(spec, snp, name)
    assert ours == _structure(jax, jnp, name)


def test_jax_ignores_the_linearize_flag() -> None:
    """JAX 0.12's vjp linearizes directly whatever the flag says, so both of
    spec's paths have one answer."""
    try:
        jax.config.update("jax_use_direct_linearize", False)
        legacy = [_structure(jax, jnp, n) for n in NAMES]
    finally:
        jax.config.update("jax_use_direct_linearize", True)
    assert legacy == [_structure(jax, jnp, n) for n in NAMES]


def _square_class(hijax: Any, lib: Any) -> Any:
    class Square(hijax.HiPrim):  # type: ignore[misc, name-defined]
        def __init__(self, x_aval: Any) -> None:
            self.in_avals = (x_aval,)
            self.out_aval = x_aval
            self.params = {}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return x ** 2

        def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
            return self(x), (), True, {"x": x, "again": x}

        def vjp_bwd(self, res: Any, sres: Any, g: Any, x_acc: Any) -> None:
            x_acc.accum(2. * sres["x"] * g)

    return lambda x: Square(lib.typeof(x))(x)


def _hijax_programs(lib: Any, np_: Any, square: Any) -> dict[str, Any]:
    lax, jit = lib.lax, lib.jit
    return {
        "plus_one": lambda x: square(x) + 1.,
        "twice": lambda x: square(square(x)),
        "jit": jit(lambda x: square(x) + square(x * 2.)),
        "jit_nested": jit(lambda x: np_.sin(jit(square)(x)) * 2.),
        "jit_then_eager": lambda x: jit(square)(x) * 2.,
        "scan_carry": lambda x: lax.scan(lambda c, _: (square(c), None), x, None, length=3)[0],
        "scan_xs": lambda x: lax.scan(lambda c, a: (c + square(a), None), 0. * x[0], x)[0],
        "scan_in_jit": jit(lambda x: lax.scan(lambda c, _: (square(c), None), x, None,
                                              length=2)[0]),
        "jit_in_scan": lambda x: lax.scan(lambda c, _: (jit(square)(c) * 2., None), x, None,
                                          length=2)[0],
        "fori": lambda x: lax.fori_loop(0, 2, lambda i, c: square(c), x),
        "cond_taken": lambda x: lax.cond(x[0] > 0, square, lambda y: y * 2., x),
        "cond_not_taken": lambda x: lax.cond(x[0] < 0, square, lambda y: y * 2., x),
        "switch": lambda x: lax.switch(1, [square, lambda y: square(y) * 3., lambda y: y], x),
        "cond_in_jit": jit(lambda x: lax.cond(x[0] > 0, square, np_.cos, x)),
        "cond_in_scan": lambda x: lax.scan(lambda c, _: (lax.cond(c[0] > 5., square, np_.sin, c),
                                                         None), x, None, length=2)[0],
        "scan_in_cond": lambda x: lax.cond(x[0] > 0, lambda y: lax.scan(
            lambda c, _: (square(c), None), y, None, length=2)[0], np_.sin, x),
    }


HIJAX_NAMES = sorted(_hijax_programs(jax, jnp, None))


def _hijax_case(lib: Any, np_: Any, hijax: Any, name: str) -> tuple[Any, Any]:
    fun = _hijax_programs(lib, np_, _square_class(hijax, lib))[name]
    y, f_vjp = lib.vjp(fun, np_.arange(1., 4.))
    return f_vjp.structured_residuals, f_vjp(np_.ones_like(y))


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "legacy"])
@pytest.mark.parametrize("name", HIJAX_NAMES)
def test_hijax_structured_residuals_match_jax(name: str, direct: bool) -> None:
    import jax.experimental.hijax as jax_hijax

    import spec.experimental.hijax as spec_hijax
    with spec.config.use_direct_linearize(direct):
        ours, our_cts = _hijax_case(spec, snp, spec_hijax, name)
    theirs, their_cts = _hijax_case(jax, jnp, jax_hijax, name)
    # Structure and types exactly; values to float32 rounding (spec's sin and
    # cos may differ from XLA's in the last place).
    assert repr(_typed(spec, ours)) == repr(_typed(jax, theirs))
    ours_flat, theirs_flat = spec.tree.leaves((ours, our_cts)), jax.tree.leaves((theirs, their_cts))
    assert len(ours_flat) == len(theirs_flat)
    for a, b in zip(ours_flat, theirs_flat):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def _typed(lib: Any, tree: Any) -> Any:
    return lib.tree.map(lambda x: str(lib.typeof(x)), tree)


@pytest.mark.parametrize("name", ["plus_one", "jit", "scan_carry", "cond_taken"])
def test_hijax_structured_residual_saved_twice_is_one_value(name: str) -> None:
    import spec.experimental.hijax as spec_hijax
    sres, _ = _hijax_case(spec, snp, spec_hijax, name)
    pairs = []

    def visit(tree: Any) -> None:
        if isinstance(tree, dict) and "again" in tree:
            pairs.append((tree["x"], tree["again"]))
        elif isinstance(tree, (list, tuple)):
            for t in tree:
                visit(t)
        elif hasattr(tree, "branches"):
            visit(tree.branches)

    visit(sres)
    assert pairs and all(a is b for a, b in pairs)
