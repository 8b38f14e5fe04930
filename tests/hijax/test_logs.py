"""Backward-pass logs (``VJP.with_logs``) of hijax ``vjp_bwd`` rules and of
``custom_vjp.defvjp_with_logs`` rules, on spec and on JAX 0.12.0.1 in the
same test: values, merge order, and the errors for a bad log or a key
logged twice."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.experimental.hijax as jax_hijax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.experimental.hijax as spec_hijax
import spec.numpy as snp

LIBS = {"jax": (jax, jnp, jax_hijax), "spec": (spec, snp, spec_hijax)}


def _square(impl: str, log: Any = "dict") -> Any:
    lib, _, hijax = LIBS[impl]

    class Square(hijax.HiPrim):  # type: ignore[misc, name-defined]
        def __init__(self, x_aval: Any, tag: str) -> None:
            self.in_avals = (x_aval,)
            self.out_aval = x_aval
            self.params = dict(tag=tag)
            super().__init__()

        def expand(self, x: Any) -> Any:
            return x ** 2

        def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
            return self(x), x

        def vjp_bwd(self, x: Any, g: Any, x_acc: Any) -> Any:
            x_acc.accum(2. * x * g)
            if log == "dict":
                return {self.tag: {"x": x, "ct_in": g}}  # type: ignore[attr-defined]
            return log

        def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
            (x,) = hijax.bdims_at_front(axis_data, args, dims)
            return Square(lib.typeof(x), self.tag)(x), 0  # type: ignore[attr-defined]

    return lambda x, tag="sq": Square(lib.typeof(x), tag)(x)


def _run(impl: str, program: str) -> str:
    lib, np_, _ = LIBS[impl]
    square = _square(impl)
    x = np_.arange(1., 4.)
    fun = {"one": lambda x: square(x),
           "nested": lambda x: square(square(x, "inner"), "outer"),
           "two_branches": lambda x: square(x, "a") + square(x, "b")}[program]
    _, f_vjp = lib.vjp(fun, x)
    cts, logs = f_vjp.with_logs(np_.ones(3))
    plain = f_vjp(np_.ones(3))
    return repr((cts, logs, plain))


@pytest.mark.parametrize("program", ["one", "nested", "two_branches"])
def test_hijax_logs_match_jax(program: str) -> None:
    assert _run("spec", program) == _run("jax", program)


def _custom(impl: str) -> str:
    lib, np_, _ = LIBS[impl]

    @lib.custom_vjp
    def f(x: Any, y: Any) -> Any:
        return np_.sin(x) * y

    def f_fwd(x: Any, y: Any) -> Any:
        return f(x, y), (np_.cos(x), np_.sin(x), y)

    def f_bwd(res: Any, g: Any) -> Any:
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g), {"f": {"ct_out": g}}

    f.defvjp_with_logs(f_fwd, f_bwd)
    x = np_.arange(1., 3.)
    _, f_vjp = lib.vjp(f, x, x + 1.)
    cts, logs = f_vjp.with_logs(np_.ones(2))
    # (XLA's float32 sin differs from NumPy's in the last bit)
    return repr((np.round(np.asarray(cts), 5), logs))


def test_custom_vjp_logs_match_jax() -> None:
    assert _custom("spec") == _custom("jax")


def _error(impl: str, log: Any, twice: bool) -> tuple[type, str]:
    lib, np_, _ = LIBS[impl]
    square = _square(impl, log)
    fun = (lambda x: square(square(x))) if twice else square
    _, f_vjp = lib.vjp(fun, np_.arange(1., 4.))
    try:
        f_vjp(np_.ones(3))
    except Exception as e:
        return type(e), str(e)
    raise AssertionError("no error")


def test_duplicate_log_key_is_a_value_error_even_when_logs_are_dropped() -> None:
    cls, msg = _error("spec", {"k": 1.}, twice=True)
    assert cls is _error("jax", {"k": 1.}, twice=True)[0] is ValueError
    assert "Duplicate backward-pass log key 'k'" in msg and "Square.vjp_bwd" in msg


def test_non_dict_log_is_a_type_error_naming_the_rule() -> None:
    cls, msg = _error("spec", [1.], twice=False)
    jax_cls, jax_msg = _error("jax", [1.], twice=False)
    assert cls is jax_cls is TypeError
    assert msg == jax_msg


def _plain(x: Any) -> Any:
    """A log tree with its arrays as (dtype, Python float?, rounded values),
    so the two libraries' logs compare as data (XLA's float32 transcendental
    functions differ from NumPy's in the last bit). Weak types are left out:
    spec's scan transpose types a carry's cotangent from the body where JAX
    takes the type of the cotangent given, so a logged cotangent's weak type
    can differ (the page's cells, checked exactly, agree)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if type(x).__name__ == "CondSum":
        return ("CondSum", _plain(x.index), _plain(x.branches))
    if x is None:
        return None
    arr = np.asarray(x)
    return (str(arr.dtype), type(x).__name__ == "float", np.round(arr, 5).tolist())


def _custom_logged(impl: str) -> Any:
    lib, np_, _ = LIBS[impl]

    @lib.custom_vjp
    def f(x: Any, y: Any) -> Any:
        return np_.sin(x) * y

    def f_fwd(x: Any, y: Any) -> Any:
        return f(x, y), (np_.cos(x), np_.sin(x), y)

    def f_bwd(res: Any, g: Any) -> Any:
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g), {"f": {"ct_out": g, "y": y}}

    f.defvjp_with_logs(f_fwd, f_bwd)
    return f


def _control_flow_program(impl: str, program: str) -> Any:
    lib, _, _ = LIBS[impl]
    sq = _square(impl)
    lax = lib.lax
    f = _custom_logged(impl)

    def cond_in_scan(xs: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            y = lax.cond(x > 1.5, lambda x: sq(x, "a"), lambda x: 2. * sq(x, "b"), x)
            return c + y, None
        return lax.scan(body, 0., xs)[0]

    return {
        "jit": lambda x: lib.jit(sq)(x),
        "jit_nested": lambda x: lib.jit(
            lambda x: sq(lib.jit(lambda y: sq(y, "in"))(x), "out"))(x),
        "scan": lambda x: lax.scan(lambda c, x: (c + sq(x), None), 0., x)[0],
        "jit_scan": lambda x: lib.jit(
            lambda xs: lax.scan(lambda c, x: (c + sq(x), None), 0., xs)[0])(x),
        "scan_jit": lambda x: lax.scan(lambda c, x: (c + lib.jit(sq)(x), None), 0., x)[0],
        "cond": lambda x: lax.cond(x.sum() > 0, lambda x: sq(x, "pos"),
                                   lambda x: 2. * sq(x, "neg"), x),
        "cond_in_scan": cond_in_scan,
        "vmap_custom_vjp": lambda x: lib.vmap(f)(x, x + 1.),
        "vmap_custom_vjp_unbatched": lambda x: lib.vmap(f, in_axes=(0, None))(x, 2.),
        "jit_custom_vjp": lambda x: lib.jit(f)(x, x),
        "vmap": lambda x: lib.vmap(sq)(x.reshape(3, 1)).sum(1),
        "vmap_in_scan": lambda x: lax.scan(lambda c, x: (c + lib.vmap(sq)(x).sum(), None),
                                           0., x.reshape(3, 1))[0],
        "checkpoint_custom_vjp": lambda x: lib.checkpoint(lambda x: f(x, x) * 2.)(x),
        "checkpoint": lambda x: lib.checkpoint(lambda x: sq(sq(x, "in"), "out"))(x),
        "checkpoint_policy": lambda x: lib.checkpoint(
            lambda x: sq(x) * 2., policy=lib.checkpoint_policies.nothing_saveable)(x),
        "scan_checkpoint": lambda x: lax.scan(lib.checkpoint(
            lambda c, x: (c + sq(x), None)), 0., x)[0],
        "checkpoint_cond": lambda x: lib.checkpoint(lambda x: lax.cond(
            x.sum() > 0, lambda x: sq(x, "pos"), lambda x: 2. * sq(x, "neg"), x))(x),
    }[program]


CONTROL_FLOW_PROGRAMS = ["jit", "jit_nested", "scan", "jit_scan", "scan_jit", "cond",
                         "cond_in_scan", "vmap_custom_vjp", "vmap_custom_vjp_unbatched",
                         "jit_custom_vjp", "vmap", "vmap_in_scan", "checkpoint_custom_vjp",
                         "checkpoint", "checkpoint_policy", "scan_checkpoint", "checkpoint_cond"]

# A hijax primitive with only reverse-mode rules differentiates under
# checkpoint as the page's remat (``jax_remat3``) has it, which spec follows;
# JAX 0.12.0.1's classic remat asks for ``jvp``, so JAX's side of these runs
# with ``jax_remat3`` on.
REMAT3 = {"checkpoint", "checkpoint_policy", "scan_checkpoint", "checkpoint_cond"}


def _logs_through(impl: str, program: str) -> Any:
    lib, np_, _ = LIBS[impl]
    fun = _control_flow_program(impl, program)
    out, f_vjp = lib.vjp(fun, np_.arange(1., 4.))
    ct = np_.ones_like(out)
    cts, logs = f_vjp.with_logs(ct)
    plain = f_vjp(ct)
    jitted_logs = lib.jit(f_vjp.with_logs)(ct)[1]
    return _plain((cts, logs, plain, jitted_logs))


@functools.cache
def _jax_logs_through(program: str) -> Any:
    if program not in REMAT3:
        return _logs_through("jax", program)
    jax.config.update("jax_remat3", True)
    try:
        return _logs_through("jax", program)
    finally:
        jax.config.update("jax_remat3", False)


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "legacy"])
@pytest.mark.parametrize("program", CONTROL_FLOW_PROGRAMS)
def test_logs_come_out_of_transposed_control_flow_as_in_jax(program: str,
                                                            direct: bool) -> None:
    """Unchanged out of ``jit`` and ``checkpoint``, stacked per iteration by
    ``scan``, a ``CondSum`` per key by ``cond``, batched at 0 by a vmapped
    rule; on both
    linearize paths (JAX 0.12.0.1 ignores the flag)."""
    with spec.config.use_direct_linearize(direct):
        ours = _logs_through("spec", program)
    assert ours == _jax_logs_through(program)


def test_duplicate_key_across_a_jit_boundary_is_a_value_error() -> None:
    for impl in ("spec", "jax"):
        lib, np_, _ = LIBS[impl]
        sq = _square(impl)
        _, f_vjp = lib.vjp(lambda x: lib.jit(sq)(sq(x)), np_.arange(1., 4.))
        with pytest.raises(ValueError, match="Duplicate backward-pass log key 'sq'"):
            f_vjp(np_.ones(3))


def _typed_scalars(impl: str) -> str:
    lib, np_, _ = LIBS[impl]
    square = _square(impl)
    _, f_vjp = lib.vjp(square, 3.)
    cts, logs = f_vjp.with_logs(1.)
    outs, g_vjp = lib.vjp(lambda x, n: (x, n), 2.5, 3)
    return repr((cts, logs, outs, f_vjp.args_res, g_vjp.args_res))


def test_vjp_makes_python_scalar_primals_typed_scalars_as_jax() -> None:
    """``TypedFloat(3.0, dtype=float32)`` residuals; arithmetic on them stays
    in Python floats, so the cotangent is the float 6.0."""
    assert _typed_scalars("spec") == _typed_scalars("jax")


def _batched_square(retval: bool) -> Any:
    """A spec-only primitive (JAX 0.12.0.1 has no ``batch_dim_rule``)
    logging from its backward rule, ``vjp_bwd`` or ``vjp_bwd_retval``."""

    class Square(spec_hijax.HiPrim):  # type: ignore[misc, name-defined]
        def __init__(self, x_aval: Any) -> None:
            self.in_avals = (x_aval,)
            self.out_aval = x_aval
            self.params = {}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return x ** 2

        def vjp_fwd(self, nzs_in: Any, x: Any) -> Any:
            return self(x), x

        def batch_dim_rule(self, axis_data: Any, dims: Any) -> Any:
            return dims[0]

    if retval:
        class Logged(Square):
            vjp_bwd_retval_logs = True

            def vjp_bwd_retval(self, x: Any, g: Any) -> Any:
                return (2. * x * g,), {"sq": {"x": x, "ct_in": g}}
    else:
        class Logged(Square):  # type: ignore[no-redef]
            def vjp_bwd(self, x: Any, g: Any, x_acc: Any) -> Any:
                x_acc.accum(2. * x * g)
                return {"sq": {"x": x, "ct_in": g}}

    return lambda x: Logged(spec.typeof(x))(x)


@pytest.mark.parametrize("retval", [False, True])
def test_vmapped_hijax_logs_are_the_examples_logs_stacked(retval: bool) -> None:
    """Oracle: the primitive's vjp run on each example (a loop), its logs
    stacked along a new leading axis, as a vmapped custom_vjp's are."""
    square = _batched_square(retval)
    xs = snp.arange(6.).reshape(2, 3)
    cts = snp.asarray(np.array([[1., 2., 3.], [4., 5., 6.]], np.float32))
    _, f_vjp = spec.vjp(spec.vmap(square), xs)
    (got_ct,), got_logs = f_vjp.with_logs(cts)
    jitted_logs = spec.jit(f_vjp.with_logs)(cts)[1]
    per_example = [spec.vjp(square, xs[i])[1].with_logs(cts[i]) for i in range(2)]
    want_ct = np.stack([np.asarray(ct) for (ct,), _ in per_example])
    np.testing.assert_array_equal(np.asarray(got_ct), want_ct)
    for logs in (got_logs, jitted_logs):
        for key in ("x", "ct_in"):
            np.testing.assert_array_equal(
                np.asarray(logs["sq"][key]),
                np.stack([np.asarray(lg["sq"][key]) for _, lg in per_example]))


def _custom_gradient(impl: str, rule_out: str) -> str:
    """``custom_gradient(with_logs=True)``: its VJP function returns the
    cotangents and the logs (or, for the errors, something else)."""
    lib, np_, _ = LIBS[impl]

    @lib.custom_gradient(with_logs=True)
    def f(x: Any, y: Any) -> Any:
        def vjp(g: Any) -> Any:
            return {"pair": ((g * y * np_.cos(x), g * np_.sin(x)), {"f": {"g": g, "y": y}}),
                    "none": ((g * y, g), None),
                    "triple": ((g, g), None, None),
                    "list_log": ((g, g), [g])}[rule_out]
        return np_.sin(x) * y, vjp

    try:
        x = np_.arange(1., 3.)
        _, f_vjp = lib.vjp(f, x, x + 1.)
        cts, logs = f_vjp.with_logs(np_.ones(2))
        grads = lib.jit(lib.grad(lambda a, b: np_.sum(f(a, b)), (0, 1)))(x, x + 1.)
        return repr(_plain((cts, logs, grads, lib.jit(f_vjp.with_logs)(np_.ones(2))[1])))
    except TypeError as e:
        # (the message shows the rule's traced outputs, printed each library's way)
        return f"raises TypeError: {str(e).split(', but')[0]}"


@pytest.mark.parametrize("rule_out", ["pair", "none", "triple", "list_log"])
def test_custom_gradient_with_logs_matches_jax(rule_out: str) -> None:
    assert _custom_gradient("spec", rule_out) == _custom_gradient("jax", rule_out)
