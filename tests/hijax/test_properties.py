"""Property tests of hijax primitives: random small programs (a few
elementwise, reduction and shaping steps drawn by hypothesis, on float64
``(2, 3)`` arrays ``x`` and ``y``) wrapped as user primitives whose rules
are (a) ``vjp_fwd``/``vjp_bwd``, (b) only ``jvp``, (c) ``lin`` and
``linearized``, (d) ``batch`` or ``batch_dim_rule``, and the rules derived
from them. Each transformation through the custom rules must equal the same
program transformed without them:

- bit for bit where the custom rule runs the very computation spec's own
  autodiff or vmap would (a reverse rule that is ``vjp`` of the program,
  ``batch_dim_rule``'s batched expansion, every primal output);
- to float64 rounding where the rule is a different formula for the same
  mathematics: the hand-written tangent map of each step (``JVPS``) against
  spec's own derivative, and rules derived by transposition or partial
  evaluation.

Every check runs under both values of ``jax_use_direct_linearize`` (drawn)
and, where the drawn flag says so, under ``jit``; vmap is also checked
against a Python loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as jnp
from spec.experimental.hijax import (
    ShapedArray,
    VJPHiPrimitive,
    Zero,
    bdims_at_front,
    instantiate_zeros,
    jvp_from_lin,
    linearize_from_jvp,
    vjp_from_jvp,
    vjp_from_lin,
)

SHAPE = (2, 3)
RTOL = 1e-11
ATOL = 1e-12

Step = Callable[[Any, Any], Any]
StepJvp = Callable[[Any, Any, Any, Any], Any]

# Each step maps the running value ``v`` (and the second operand ``y``) to a
# new value of the same shape; beside it, its tangent map written by hand.
STEPS: dict[str, Step] = {
    "sin": lambda v, y: jnp.sin(v),
    "cos": lambda v, y: jnp.cos(v),
    "tanh": lambda v, y: jnp.tanh(v),
    "square": lambda v, y: v * v,
    "gauss": lambda v, y: jnp.exp(-v * v),
    "leaky": lambda v, y: jnp.where(v > 0, v, 0.1 * v),
    "mul_y": lambda v, y: v * y,
    "add_y": lambda v, y: v + y,
    "sub_y": lambda v, y: v - y,
    "sin_times_y": lambda v, y: jnp.sin(v) * y,
    "flip": lambda v, y: jnp.flip(v, 0),
    "transpose_reshape": lambda v, y: jnp.reshape(v.T, SHAPE),
    "cumsum": lambda v, y: jnp.cumsum(v, axis=1),
    "center": lambda v, y: v - jnp.mean(v, axis=0, keepdims=True),
    "scale_by_total": lambda v, y: v * jnp.sum(v * y),
    "column_sums": lambda v, y: jnp.broadcast_to(jnp.sum(v, axis=0), SHAPE),
    "roll": lambda v, y: jnp.concatenate([v[:, 1:], v[:, :1]], axis=1),
}

JVPS: dict[str, StepJvp] = {
    "sin": lambda v, y, dv, dy: jnp.cos(v) * dv,
    "cos": lambda v, y, dv, dy: -jnp.sin(v) * dv,
    "tanh": lambda v, y, dv, dy: (1.0 - jnp.tanh(v) ** 2) * dv,
    "square": lambda v, y, dv, dy: 2.0 * v * dv,
    "gauss": lambda v, y, dv, dy: jnp.exp(-v * v) * (-2.0 * v * dv),
    "leaky": lambda v, y, dv, dy: jnp.where(v > 0, dv, 0.1 * dv),
    "mul_y": lambda v, y, dv, dy: dv * y + v * dy,
    "add_y": lambda v, y, dv, dy: dv + dy,
    "sub_y": lambda v, y, dv, dy: dv - dy,
    "sin_times_y": lambda v, y, dv, dy: jnp.cos(v) * dv * y + jnp.sin(v) * dy,
    "flip": lambda v, y, dv, dy: jnp.flip(dv, 0),
    "transpose_reshape": lambda v, y, dv, dy: jnp.reshape(dv.T, SHAPE),
    "cumsum": lambda v, y, dv, dy: jnp.cumsum(dv, axis=1),
    "center": lambda v, y, dv, dy: dv - jnp.mean(dv, axis=0, keepdims=True),
    "scale_by_total": lambda v, y, dv, dy: (dv * jnp.sum(v * y)
                                            + v * jnp.sum(dv * y + v * dy)),
    "column_sums": lambda v, y, dv, dy: jnp.broadcast_to(jnp.sum(dv, axis=0), SHAPE),
    "roll": lambda v, y, dv, dy: jnp.concatenate([dv[:, 1:], dv[:, :1]], axis=1),
}

assert STEPS.keys() == JVPS.keys()


def run_program(prog: tuple[str, ...], pair: bool, x: Any, y: Any) -> Any:
    """The program: its steps in order from ``x``; with ``pair``, also the
    scalar ``sum(v * y)`` of the final value (a tuple result)."""
    v = x
    for name in prog:
        v = STEPS[name](v, y)
    return (v, jnp.sum(v * y)) if pair else v


def program_jvp(prog: tuple[str, ...], pair: bool, x: Any, y: Any, dx: Any, dy: Any
                ) -> tuple[Any, Any]:
    """The program and its tangent, by the hand-written tangent maps."""
    v, dv = x, dx
    for name in prog:
        v, dv = STEPS[name](v, y), JVPS[name](v, y, dv, dy)
    if pair:
        return (v, jnp.sum(v * y)), (dv, jnp.sum(dv * y + v * dy))
    return v, dv


def _dense(tree: Any) -> Any:
    """Symbolic zeros as arrays of zeros."""
    return spec.tree.map(instantiate_zeros, tree, is_leaf=lambda t: isinstance(t, Zero))


# ------------------------------------------------------ the user primitives


class Program(VJPHiPrimitive):
    """``run_program`` as a primitive; subclasses add the rules."""

    def __init__(self, x_aval: Any, y_aval: Any, prog: tuple[str, ...], pair: bool,
                 **more_params: Any) -> None:
        self.in_avals = (x_aval, y_aval)
        self.out_aval = (x_aval, ShapedArray((), x_aval.dtype)) if pair else x_aval
        self.params = dict(prog=prog, pair=pair, **more_params)
        super().__init__()

    def expand(self, x: Any, y: Any) -> Any:
        return run_program(self.prog, self.pair, x, y)  # type: ignore[attr-defined]

    def plain(self, x: Any, y: Any) -> Any:
        return run_program(self.prog, self.pair, x, y)  # type: ignore[attr-defined]


class SavesPrimals(Program):
    """The forward half of (a): the primals are the residuals."""

    def vjp_fwd(self, nzs_in: Any, x: Any, y: Any) -> Any:
        return self(x, y), (x, y)

    def program_vjp(self, res: Any, g: Any) -> Any:
        """``vjp`` of the program at the saved primals."""
        _, f_vjp = spec.vjp(self.plain, *res)
        return f_vjp(_dense(g))


class ByVjpRetval(SavesPrimals):
    """(a) Reverse mode, the backward pass returning the cotangents."""

    def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
        return self.program_vjp(res, g)


class ByVjpAccum(SavesPrimals):
    """(a) The general backward rule: cotangents into accumulators, only
    where the caller wants them."""

    def vjp_bwd(self, res: Any, g: Any, x_acc: Any, y_acc: Any) -> None:
        ct_x, ct_y = self.program_vjp(res, g)
        x_acc.accum(ct_x)
        y_acc.accum(ct_y)


class ByJvp(Program):
    """(b) Forward mode only, by the hand-written tangent maps."""

    def jvp(self, primals: Any, tangents: Any) -> Any:
        (x, y), (dx, dy) = primals, _dense(tangents)
        _, t_out = program_jvp(self.prog, self.pair, x, y, dx, dy)  # type: ignore[attr-defined]
        return self(x, y), t_out


class ByLin(Program):
    """(c) Linearization: the primals saved, the tangent map hand-written."""

    def lin(self, nzs_in: Any, x: Any, y: Any) -> Any:
        return self(x, y), (x, y)

    def linearized(self, res: Any, dx: Any, dy: Any) -> Any:
        (x, y), (dx, dy) = res, _dense((dx, dy))
        return program_jvp(self.prog, self.pair, x, y, dx, dy)[1]  # type: ignore[attr-defined]


class JvpFromLin(ByLin):
    jvp = jvp_from_lin


class LinFromJvp(ByJvp):
    lin, linearized = linearize_from_jvp


class VjpFromJvp(ByJvp):
    vjp_fwd, vjp_bwd_retval = vjp_from_jvp


class VjpFromLin(ByLin):
    vjp_fwd, vjp_bwd_retval = vjp_from_lin


class ByBatch(ByVjpRetval):
    """(d) A ``batch`` rule: the program vmapped, batch dimensions in front."""

    def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
        x, y = bdims_at_front(axis_data, args, dims)
        return spec.vmap(self.plain)(x, y), self.out_dims(0)

    def out_dims(self, d: int | None) -> Any:
        """``d`` for the array result (the scalar one's batch axis is 0), as
        a tree of the result's structure."""
        return (d, 0) if self.pair else d  # type: ignore[attr-defined]


class ByBatchDimRule(ByBatch, ByJvp):
    """(d) Only the result's batch dimension: every rule runs batched
    (``VmapOf``). The dimension is drawn: 0, or the first batched input's."""

    batch = VJPHiPrimitive.batch

    def batch_dim_rule(self, axis_data: Any, in_dims: Any) -> Any:
        if not self.follow_input:  # type: ignore[attr-defined]
            return self.out_dims(0)
        x_dim, y_dim = in_dims
        return self.out_dims(x_dim if x_dim is not None else y_dim)


# ------------------------------------------------------------- strategies


@st.composite
def programs(draw: Any) -> tuple[tuple[str, ...], bool]:
    prog = tuple(draw(st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4)))
    return prog, draw(st.booleans())


def _operands(seed: int, n: int = 4) -> list[Any]:
    """``n`` float64 arrays of SHAPE (primals, tangents, cotangents)."""
    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.standard_normal(SHAPE)) for _ in range(n)]


def _cotangent(pair: bool, g: Any) -> Any:
    return (g, jnp.asarray(0.7)) if pair else g


def _loss(fun: Callable[..., Any], pair: bool) -> Callable[..., Any]:
    """A scalar of every output, weighted so that each element matters."""
    w = jnp.reshape(jnp.arange(1.0, 7.0), SHAPE)

    def loss(x: Any, y: Any) -> Any:
        out = fun(x, y)
        return jnp.sum(out[0] * w) - 0.5 * out[1] if pair else jnp.sum(out * w)
    return loss


def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(t) for t in spec.tree.leaves(tree)]


def assert_same(got: Any, want: Any) -> None:
    """Bit for bit (NaN matching NaN), same tree structure and dtypes."""
    assert spec.tree.structure(got) == spec.tree.structure(want)
    for a, b in zip(_leaves(got), _leaves(want)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def assert_close(got: Any, want: Any) -> None:
    """To float64 rounding: a different formula for the same mathematics."""
    assert spec.tree.structure(got) == spec.tree.structure(want)
    for a, b in zip(_leaves(got), _leaves(want)):
        assert a.dtype == b.dtype and a.shape == b.shape
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL * scale)


@pytest.fixture(autouse=True)
def _x64() -> Iterator[None]:
    with spec.enable_x64(True):
        yield


def _transform(fun: Callable[..., Any], jit: bool) -> Callable[..., Any]:
    return spec.jit(fun) if jit else fun


def _prim(cls: type, prog: tuple[str, ...], pair: bool) -> Callable[..., Any]:
    def apply(x: Any, y: Any) -> Any:
        return cls(spec.typeof(x), spec.typeof(y), prog, pair)(x, y)
    return apply


def _plain(prog: tuple[str, ...], pair: bool) -> Callable[..., Any]:
    return lambda x, y: run_program(prog, pair, x, y)


COMMON = settings(max_examples=25, deadline=None)
CASE: dict[str, Any] = dict(program=programs(), seed=st.integers(0, 2**16),
                            direct=st.booleans(), jit=st.booleans())


# ------------------------------------------------------------------ tests


@COMMON
@given(**CASE)
def test_reverse_rules_equal_autodiff_of_the_program(
        program: tuple[tuple[str, ...], bool], seed: int, direct: bool, jit: bool) -> None:
    """(a) grad and vjp through ``vjp_fwd``/``vjp_bwd_retval`` and through
    ``vjp_bwd`` with accumulators: bit for bit the program's own."""
    prog, pair = program
    x, y, g, _ = _operands(seed)
    with spec.config.use_direct_linearize(direct):
        want_grad = spec.grad(_loss(_plain(prog, pair), pair), (0, 1))(x, y)
        want_out, want_vjp = spec.vjp(_plain(prog, pair), x, y)
        want_ct = want_vjp(_cotangent(pair, g))
        for cls in (ByVjpRetval, ByVjpAccum):
            prim = _prim(cls, prog, pair)
            assert_same(_transform(spec.grad(_loss(prim, pair), (0, 1)), jit)(x, y),
                        want_grad)
            out, f_vjp = spec.vjp(_transform(prim, jit), x, y)
            assert_same(out, want_out)
            assert_same(f_vjp(_cotangent(pair, g)), want_ct)
        # Only one cotangent wanted: the other accumulator is a NullAccum.
        only_y = _transform(spec.grad(_loss(_prim(ByVjpAccum, prog, pair), pair), 1), jit)
        assert_same(only_y(x, y), want_grad[1])


@COMMON
@given(**CASE)
def test_forward_rule_equals_autodiff_of_the_program(
        program: tuple[tuple[str, ...], bool], seed: int, direct: bool, jit: bool) -> None:
    """(b) jvp through the ``jvp`` rule: the hand-written tangent equals
    spec's; a symbolically zero tangent (a closed-over operand) too. (grad
    needs the reverse rules derived from it: ``vjp_from_jvp``, below.)"""
    prog, pair = program
    x, y, dx, dy = _operands(seed)
    prim, plain = _prim(ByJvp, prog, pair), _plain(prog, pair)
    with spec.config.use_direct_linearize(direct):
        out, t = _transform(lambda *a: spec.jvp(prim, a[:2], a[2:]), jit)(x, y, dx, dy)
        want_out, want_t = spec.jvp(plain, (x, y), (dx, dy))
        assert_same(out, want_out)
        assert_close(t, want_t)
        _, t_x = spec.jvp(lambda a: prim(a, y), (x,), (dx,))
        assert_close(t_x, spec.jvp(lambda a: plain(a, y), (x,), (dx,))[1])


@COMMON
@given(**CASE)
def test_linearize_rules_equal_autodiff_of_the_program(
        program: tuple[tuple[str, ...], bool], seed: int, direct: bool, jit: bool) -> None:
    """(c) linearize through ``lin``/``linearized``, and through
    ``linearize_from_jvp``: the primal bit for bit, the linear map (also
    applied twice, at other tangents) to rounding."""
    prog, pair = program
    x, y, dx, dy = _operands(seed)
    plain = _plain(prog, pair)
    with spec.config.use_direct_linearize(direct):
        want_out, want_t = spec.jvp(plain, (x, y), (dx, dy))
        _, want_t2 = spec.jvp(plain, (x, y), (dy, dx))
        for cls in (ByLin, LinFromJvp):
            out, f_lin = spec.linearize(_transform(_prim(cls, prog, pair), jit), x, y)
            assert_same(out, want_out)
            assert_close(f_lin(dx, dy), want_t)
            assert_close(f_lin(dy, dx), want_t2)


@COMMON
@given(**CASE)
def test_derived_rules_agree_with_each_other(
        program: tuple[tuple[str, ...], bool], seed: int, direct: bool, jit: bool) -> None:
    """jvp_from_lin against the jvp rule; grad through vjp_from_jvp (the
    jvp rule linearized and transposed) and vjp_from_lin (``linearized``
    transposed) against each other and against spec's grad."""
    prog, pair = program
    x, y, dx, dy = _operands(seed)
    with spec.config.use_direct_linearize(direct):
        tangents = {cls.__name__: _transform(
            lambda *a, c=cls: spec.jvp(_prim(c, prog, pair), a[:2], a[2:]), jit)(x, y, dx, dy)
            for cls in (ByJvp, JvpFromLin)}
        assert_same(tangents["JvpFromLin"][0], tangents["ByJvp"][0])
        assert_close(tangents["JvpFromLin"][1], tangents["ByJvp"][1])
        grads = {cls.__name__: _transform(spec.grad(_loss(_prim(cls, prog, pair), pair),
                                                    (0, 1)), jit)(x, y)
                 for cls in (VjpFromJvp, VjpFromLin)}
        assert_close(grads["VjpFromLin"], grads["VjpFromJvp"])
        assert_close(grads["VjpFromLin"], spec.grad(_loss(_plain(prog, pair), pair),
                                                    (0, 1))(x, y))


@pytest.mark.parametrize("cls", [ByJvp, ByLin])
def test_grad_without_reverse_rules_asks_for_them(cls: type) -> None:
    """As in JAX 0.12.0.1: forward rules alone do not give grad."""
    x, y, _, _ = _operands(0)
    with pytest.raises(NotImplementedError, match="must implement `vjp_fwd`"):
        spec.grad(_loss(_prim(cls, ("sin",), False), False))(x, y)


IN_AXES = [(0, 0), (0, None), (None, 0), (1, 0), (1, None)]


def _batched(seed: int, in_axes: tuple[Any, Any], size: int = 3) -> list[Any]:
    """x and y stacked ``size`` times along their axis (one value if None)."""
    rng = np.random.default_rng(seed)
    out = []
    for ax in in_axes:
        if ax is None:
            out.append(jnp.asarray(rng.standard_normal(SHAPE)))
        else:
            out.append(jnp.asarray(np.stack([rng.standard_normal(SHAPE)
                                             for _ in range(size)], axis=ax)))
    return out


def _loop(fun: Callable[..., Any], in_axes: tuple[Any, Any], args: list[Any],
          size: int = 3) -> Any:
    """``fun`` applied to each example; results stacked along axis 0."""
    def example(i: int) -> list[Any]:
        return [a if ax is None else jnp.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
    outs = [fun(*example(i)) for i in range(size)]
    return spec.tree.map(lambda *xs: jnp.stack(xs), *outs)


@COMMON
@given(**CASE, in_axes=st.sampled_from(IN_AXES), follow_input=st.booleans())
def test_vmap_rules_equal_the_loop_and_vmap_of_the_program(
        program: tuple[tuple[str, ...], bool], seed: int, direct: bool, jit: bool,
        in_axes: tuple[Any, Any], follow_input: bool) -> None:
    """(d) vmap through ``batch`` and through ``batch_dim_rule`` (wherever
    that rule puts the result's batch axis): the program vmapped bit for
    bit, and a Python loop over the examples; grad, vjp and jvp of the
    batched primitive (VmapOf's rules) and vmap of grad likewise."""
    prog, pair = program
    x, y = _batched(seed, in_axes)
    plain = _plain(prog, pair)
    want = spec.vmap(plain, in_axes)(x, y)
    with spec.config.use_direct_linearize(direct):
        # The batch rule moves the batch axes to the front first: a reduction
        # then adds in another order.
        assert_close(_transform(spec.vmap(_prim(ByBatch, prog, pair), in_axes), jit)(x, y),
                     want)

        def dim_rule(a: Any, b: Any) -> Any:
            return ByBatchDimRule(spec.typeof(a), spec.typeof(b), prog, pair,
                                  follow_input=follow_input)(a, b)

        batched = spec.vmap(dim_rule, in_axes)
        assert_same(_transform(batched, jit)(x, y), want)
        assert_close(want, _loop(plain, in_axes, [x, y]))

        def total(fun: Callable[..., Any]) -> Callable[..., Any]:
            def scalar(a: Any, b: Any) -> Any:
                return sum(jnp.sum(leaf * (i + 1.5)) for i, leaf
                           in enumerate(spec.tree.leaves(fun(a, b))))
            return scalar

        # VmapOf sums an unbatched input's per-example cotangents itself, in
        # another order than the transpose of vmap's broadcast.
        want_grad = spec.grad(total(spec.vmap(plain, in_axes)), (0, 1))(x, y)
        assert_close(_transform(spec.grad(total(batched), (0, 1)), jit)(x, y), want_grad)
        _, t = spec.jvp(batched, (x, y), (y, x) if x.shape == y.shape else (x, y))
        _, want_t = spec.jvp(spec.vmap(plain, in_axes), (x, y),
                             (y, x) if x.shape == y.shape else (x, y))
        assert_close(t, want_t)
        per_example = spec.vmap(spec.grad(_loss(dim_rule, pair), (0, 1)), in_axes)
        loop = _loop(spec.grad(_loss(plain, pair), (0, 1)), in_axes, [x, y])
        got = _transform(per_example, jit)(x, y)
        assert_close(got, loop)


def test_each_transformation_goes_through_the_primitive() -> None:
    """The checks above see the user rules, not the expansion: the
    primitive stays one equation until evaluation, in every jaxpr."""
    x, y, dx, dy = _operands(1)
    prog = ("sin", "mul_y")

    def text(fun: Callable[..., Any], *args: Any) -> str:
        return str(spec.make_jaxpr(fun)(*args))

    assert "= ByVjpRetval[prog=('sin', 'mul_y') pair=False] b c" in text(
        spec.grad(_loss(_prim(ByVjpRetval, prog, False), False)), x, y)
    jvp_text = text(lambda *a: spec.jvp(_prim(ByJvp, prog, True), a[:2], a[2:]), x, y, dx, dy)
    assert "ByJvp[prog=('sin', 'mul_y') pair=True]" in jvp_text
    def dim_rule(a: Any, b: Any) -> Any:
        return ByBatchDimRule(spec.typeof(a), spec.typeof(b), prog, False,
                              follow_input=False)(a, b)

    vmap_text = text(spec.vmap(dim_rule), jnp.stack([x, x]), jnp.stack([y, y]))
    assert "= VmapOf[" in vmap_text and "prim=ByBatchDimRule[" in vmap_text
