"""Refs in control flow: scan, fori_loop, while_loop, cond, switch, map.

Bodies and branches that close over refs (or scan over them) read and write
them in place, eagerly, under jit and staged; the ref is an operand of the
loop or cond equation, which records the writes as effects. Each program runs
on spec and on real JAX (live) and the values, printed refs, jaxpr text and
errors are compared; discharged programs are checked against direct
evaluation and JAX.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec._src.core.interpreter import check_jaxpr, dce_jaxpr, eval_jaxpr
from tests.support.pair import LIBS, both, error_of, same


def _unlocated(message: str) -> str:
    """A message without source locations (file:line of the traced function,
    JAX's internal frames) and without where a created ref was made (JAX
    names the line; spec says it was created inside the function)."""
    message = re.sub(r" at \S+:\d+", "", message)
    return re.sub(r"was created (on line .*|inside the function)\.$", "was created.", message)


def same_error(fn: Callable[[Any, Any], Any]) -> BaseException:
    """Both raise the same class with the same message (locations aside)."""
    ours = error_of(lambda: fn(spec, snp))
    theirs = error_of(lambda: fn(jax, jnp))
    assert type(ours) is type(theirs), (repr(ours), repr(theirs))
    assert _unlocated(str(ours)) == _unlocated(str(theirs)), (str(ours), str(theirs))
    return ours


def arr(x: Any) -> np.ndarray:
    return np.asarray(x)


# ---------------------------------------------------------------- programs
#
# Each builder takes (lib, numpy module) and returns (function, args).


def scan_local(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def f(x: Any) -> Any:
        r = j.new_ref(n.zeros(3))

        def body(c: Any, xi: Any) -> Any:
            r[...] += xi
            return c + 1, xi * 2
        c, ys = j.lax.scan(body, 0, x)
        return c, ys, r[...]
    return f, (n.arange(12.).reshape(4, 3),)


def scan_ref_arg(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def g(r: Any, x: Any) -> None:
        def body(c: Any, xi: Any) -> Any:
            r[...] += xi
            return c, None
        j.lax.scan(body, (), x)
    return g, (j.new_ref(n.zeros(3)), n.ones((4, 3)))


def fori_indexed(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def h(x: Any) -> Any:
        r = j.new_ref(n.zeros(5))

        def body(i: Any, c: Any) -> Any:
            r[i] += x[i]
            return c
        j.lax.fori_loop(0, 5, body, 0.)
        return r[...]
    return h, (n.arange(5.),)


def fori_traced(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def h(x: Any, hi: Any) -> Any:
        r = j.new_ref(n.zeros(5))

        def body(i: Any, c: Any) -> Any:
            r[i] += x[i] * c
            return c + 1.
        out = j.lax.fori_loop(0, hi, body, 1.)
        return r[...], out
    return h, (n.arange(5.), 4)


def while_ref(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def w(x: Any) -> Any:
        r = j.new_ref(n.zeros(5))

        def body(i: Any) -> Any:
            r[i] += x[i]
            return i + 1
        j.lax.while_loop(lambda c: c < 5, body, 0)
        return r[...]
    return w, (n.arange(5.),)


def while_cond_reads(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def w(x: Any) -> Any:
        s = j.new_ref(0.)

        def body(i: Any) -> Any:
            s[...] += x
            return i + 1
        i = j.lax.while_loop(lambda i: s[...] < 5., body, 0)
        return s[...], i
    return w, (2.,)


def cond_ref(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def cc(p: Any, x: Any) -> Any:
        r = j.new_ref(n.zeros(3))

        def t() -> None:
            r[...] += x

        def fa() -> None:
            r[0] += 1.
        j.lax.cond(p, t, fa)
        return r[...]
    return cc, (True, n.ones(3))


def switch_ref(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def sw(i: Any, x: Any) -> Any:
        r = j.new_ref(n.zeros(3))

        def b0(x: Any) -> Any:
            r[...] += x
            return x

        def b1(x: Any) -> Any:
            return x * 2

        def b2(x: Any) -> Any:
            r[1] = 5.
            return x
        y = j.lax.switch(i, [b0, b1, b2], x)
        return r[...], y
    return sw, (1, n.ones(3))


def cond_ref_operand(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def g(p: Any) -> Any:
        s = j.new_ref(n.zeros(2))

        def write(q: Any) -> None:
            q[0] = 1.
        j.lax.cond(p, write, lambda q: None, s)
        return s[...]
    return g, (True,)


def scan_over_ref(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def f(x: Any) -> Any:
        r = j.new_ref(x)

        def body(c: Any, row: Any) -> Any:
            row[...] = row[...] * 2 + c
            return c + row[0], row[1]
        c, ys = j.lax.scan(body, 0., r)
        return c, ys, r[...]
    return f, (n.arange(6.).reshape(3, 2),)


def map_ref(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def f(x: Any) -> Any:
        r = j.new_ref(0.)

        def g(v: Any) -> Any:
            r[...] += v
            return v * r[...]
        return j.lax.map(g, x), r[...]
    return f, (n.arange(4.),)


def nested(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def f(x: Any, p: Any) -> Any:
        r = j.new_ref(n.zeros(3))

        def body(c: Any, xi: Any) -> Any:
            def inner(i: Any, _: Any) -> Any:
                r[i] += xi[i] * c
                return _
            j.lax.fori_loop(0, 3, inner, None)
            j.lax.cond(p, lambda: r.__setitem__(0, r[0] + 1.), lambda: None)
            return c + 1., None
        j.lax.scan(body, 1., x)
        return r[...]
    return f, (n.arange(6.).reshape(2, 3), True)


PROGRAMS = [scan_local, scan_ref_arg, fori_indexed, fori_traced, while_ref, while_cond_reads,
            cond_ref, switch_ref, cond_ref_operand, scan_over_ref, map_ref, nested]


@pytest.mark.parametrize("build", PROGRAMS, ids=lambda b: b.__name__)
def test_jaxpr_text(build: Callable[..., Any]) -> None:
    def text(j: Any, n: Any) -> str:
        f, args = build(j, n)
        return str(j.make_jaxpr(f)(*args))
    same(text)


# JAX 0.12's compiled while_loop gives the predicate the contents a ref had
# before the loop when the body writes it (the loop below never ends under
# jax.jit); spec's predicate reads the current contents. That program's
# values are checked against arithmetic instead.
RUNNABLE = [b for b in PROGRAMS if b is not while_cond_reads]


def test_while_predicate_reads_the_current_contents() -> None:
    f, args = while_cond_reads(spec, snp)
    s, i = spec.jit(f)(*args)
    assert (float(s), int(i)) == (6.0, 3)  # 2 + 2 + 2 >= 5 after three iterations
    same_error(lambda j, n: while_cond_reads(j, n)[0](2.))  # eagerly: the ref passed twice


@pytest.mark.parametrize("build", RUNNABLE, ids=lambda b: b.__name__)
def test_values_eager_and_jit(build: Callable[..., Any]) -> None:
    """Results and the final contents of ref arguments agree with JAX,
    eagerly and under jit."""
    for use_jit in (False, True):
        results: list[Any] = []
        for j, n in LIBS:
            f, args = build(j, n)
            out = (j.jit(f) if use_jit else f)(*args)
            refs = [str(a) for a in args if type(getattr(a, "aval", None)).__name__ in
                    ("RefType", "AbstractRef")]
            results.append((j.tree_util.tree_map(lambda x: arr(x).tolist(), out), refs))
        assert results[0] == results[1], (use_jit, results)


def test_eager_and_jit_writes_reach_the_callers_ref() -> None:
    """A scan (fori, while, cond) closing over an eager ref updates it, eagerly
    and from inside a jit'd function; indexed writes with a traced index."""
    def run(j: Any, n: Any) -> list[str]:
        r = j.new_ref(n.zeros(4))

        def step(x: Any) -> None:
            def body(c: Any, xi: Any) -> Any:
                r[c] += xi
                return c + 1, None
            j.lax.scan(body, 0, x)
            j.lax.fori_loop(0, 2, lambda i, c: (r.__setitem__(i, r[i] * 2), c)[1], None)
            j.lax.while_loop(lambda i: i < 4, lambda i: (r.__setitem__(3, r[3] + i), i + 1)[1],
                             1)
            j.lax.cond(x[0] > 0, lambda: r.__setitem__(2, -r[2]), lambda: None)
        shown = []
        step(n.arange(1., 4.))
        shown.append(str(r))
        j.jit(step)(n.arange(1., 4.))
        shown.append(str(r))
        return shown
    out = same(run)
    assert out[0] != out[1]


def test_foreach_recipe() -> None:
    """The ``foreach`` recipe of the refs docs (301/refs.md)."""
    def recipe(j: Any, n: Any) -> tuple[str, str]:
        def foreach(*args: Any) -> Any:
            def decorator(body: Any) -> Any:
                return j.lax.scan(lambda _, elts: (None, body(*elts)), None, args)[1]
            return decorator
        r = j.new_ref(0)
        xs = n.arange(10)

        @foreach(xs)  # type: ignore[untyped-decorator]
        def ys(x: Any) -> Any:
            r[...] += x
            return x * 2
        return str(r), str(ys)
    r_text, ys_text = same(recipe)
    assert r_text == "Ref(45, dtype=int32)"
    assert ys_text == "[ 0  2  4  6  8 10 12 14 16 18]"


def test_accumulate_into_closed_over_ref() -> None:
    """A scan and a fori_loop accumulating into a closed-over ref, eagerly,
    under jit and staged (the docs' pattern: the body closes over the
    accumulator, which is frozen at the end)."""
    def prog(j: Any, n: Any) -> Any:
        def total(xs: Any) -> Any:
            acc = j.new_ref(n.zeros(3))

            def body(c: Any, x: Any) -> Any:
                acc[...] += x * c
                return c * 2., c
            c, cs = j.lax.scan(body, 1., xs)

            def body2(i: Any, _: Any) -> Any:
                acc[i % 3] += xs[i, i % 3]
                return _
            j.lax.fori_loop(0, 4, body2, None)
            return j.freeze(acc), c, cs
        xs = n.arange(12.).reshape(4, 3)
        eager = j.tree_util.tree_map(lambda x: arr(x).tolist(), total(xs))
        jitted = j.tree_util.tree_map(lambda x: arr(x).tolist(), j.jit(total)(xs))
        return eager, jitted, str(j.make_jaxpr(total)(xs))
    eager, jitted, _ = same(prog)
    assert eager == jitted


# ------------------------------------------------------------------ errors


def _returns(j: Any, n: Any, case: str) -> Any:
    lax = j.lax
    r = j.new_ref(n.zeros(3))
    ones = n.ones(3)
    cases: dict[str, Callable[[], Any]] = {
        "scan carry": lambda: lax.scan(lambda c, x: (c, x), r, ones),
        "scan carry jit": lambda: j.jit(lambda r: lax.scan(lambda c, x: (c, x), r, ones))(r),
        "scan xs returned": lambda: lax.scan(lambda c, x: (c, x), 0., r),
        "scan closed as y": lambda: lax.scan(lambda c, x: (c, r), 0., ones),
        "scan closed as carry": lambda: lax.scan(lambda c, x: (r, x), r, ones),
        "scan created": lambda: lax.scan(lambda c, x: (c, j.new_ref(x)), 0., ones),
        "scan tuple carry": lambda: lax.scan(lambda c, x: (c, None), (0., r), ones),
        "scan dict carry": lambda: lax.scan(lambda c, x: (c, None), {"a": r}, ones),
        "scan length only": lambda: lax.scan(lambda c, x: (c, None), r, None, length=2),
        "while carry": lambda: lax.while_loop(lambda c: False, lambda c: c, r),
        "while created": lambda: lax.while_loop(lambda c: False, lambda c: j.new_ref(c), 0.),
        "while tuple": lambda: lax.while_loop(lambda c: False, lambda c: c, (1, r)),
        "cond closed": lambda: lax.cond(True, lambda: r, lambda: r),
        "cond created": lambda: lax.cond(True, lambda: j.new_ref(1.), lambda: j.new_ref(2.)),
        "cond tuple": lambda: lax.cond(True, lambda: (1., r), lambda: (1., r)),
        "cond operand": lambda: lax.cond(True, lambda q: q, lambda q: q, r),
        "cond one branch": lambda: lax.cond(True, lambda: r[...], lambda: r),
        "switch closed": lambda: lax.switch(1, [lambda: r, lambda: r]),
        "switch operand": lambda: lax.switch(0, [lambda q: q, lambda q: q], r),
        "fori static carry": lambda: lax.fori_loop(0, 3, lambda i, c: c, r),
        "fori traced carry": lambda: j.jit(lambda k: lax.fori_loop(0, k, lambda i, c: c, r))(3),
        "closed and passed cond": lambda: lax.cond(True, lambda q: r[0] + q[1],
                                                   lambda q: q[0], r),
        "closed and passed cond jit": lambda: j.jit(lambda: lax.cond(
            True, lambda q: r[0] + q[1], lambda q: q[0], r))(),
        "passed twice cond": lambda: lax.cond(True, lambda q, s: q[0], lambda q, s: s[0], r, r),
        "closed and passed scan": lambda: lax.scan(lambda c, x: (c + r[0] + x[...], None),
                                                   0., r),
        "while reads in cond and body": lambda: lax.while_loop(
            lambda i: r[0] < 3., lambda i: (r.__setitem__(0, r[0] + 1.), i + 1)[1], 0),
    }
    return cases[case]()


@pytest.mark.parametrize("case", [
    "scan carry", "scan carry jit", "scan xs returned", "scan closed as y",
    "scan closed as carry", "scan created", "scan tuple carry", "scan dict carry",
    "scan length only", "while carry", "while created", "while tuple", "cond closed",
    "cond created", "cond tuple", "cond operand", "cond one branch", "switch closed",
    "switch operand", "fori static carry", "fori traced carry", "closed and passed cond",
    "closed and passed cond jit", "passed twice cond", "closed and passed scan",
    "while reads in cond and body"])
def test_ref_errors_as_jax(case: str) -> None:
    e = same_error(lambda j, n: _returns(j, n, case))
    assert isinstance(e, ValueError)


def test_map_returning_a_ref() -> None:
    """lax.map's body is lax's own function (JAX names its own source file)."""
    def mapped(j: Any, n: Any) -> Any:
        r = j.new_ref(n.zeros(3))
        return j.lax.map(lambda x: r, n.ones(3))
    ours = error_of(lambda: mapped(spec, snp))
    theirs = error_of(lambda: mapped(jax, jnp))
    assert type(ours) is type(theirs) is ValueError
    assert str(ours).split("traced for")[1] == str(theirs).split("traced for")[1]


def test_typing_rules_refuse_misplaced_refs() -> None:
    """Binding the primitives directly: a ref carry or a ref result breaks
    a numbered constraint (ValueError)."""
    from spec._src.core.interpreter import Jaxpr, Var
    from spec._src.lax.control_flow import cond_p, while_p
    from spec._src.lax.scan import scan_p, scan_trees
    r = spec.new_ref(snp.zeros(3))
    v = Var(r.aval)
    body = Jaxpr([], [v], [v], [])  # returns the ref it takes (no tracing allows it)
    nin, nout = scan_trees(0, 1, 0, 0)
    e = error_of(lambda: scan_p.bind(r, reverse=False, length=2, jaxpr=body, ft_in=nin,
                                     ft_out=nout, unroll=1))
    assert isinstance(e, ValueError) and "scan C6" in str(e)
    e = error_of(lambda: cond_p.bind(np.int32(0), r, branches=(body, body)))
    assert isinstance(e, ValueError) and "cond C5" in str(e)
    pred = spec.make_jaxpr(lambda q: q[0] > 0)(r)
    e = error_of(lambda: while_p.bind(r, cond_nconsts=0, cond_jaxpr=pred, body_nconsts=0,
                                      body_jaxpr=body))
    assert isinstance(e, ValueError) and "while C5" in str(e)
    # A plain array where the body takes a ref.
    reader = spec.make_jaxpr(lambda q, c: (c + q[0],))(r, 1.)
    e = error_of(lambda: cond_p.bind(np.int32(0), snp.zeros(3), 1., branches=(reader,)))
    assert isinstance(e, ValueError) and "cond C5" in str(e)


# ------------------------------------------------------- effects and DCE


def test_loop_equations_carry_write_effects() -> None:
    for build in (scan_ref_arg, fori_indexed, while_ref, cond_ref, switch_ref, nested):
        f, args = build(spec, snp)
        jaxpr = spec.make_jaxpr(f)(*args)
        check_jaxpr(jaxpr)
        loops = [e for e in jaxpr.eqns if e.primitive.name in ("scan", "while", "cond")]
        assert loops and all(e.effects for e in loops), build.__name__
        for e in loops:
            assert all(eff.ref in e.invars for eff in e.effects)
        # Writes survive dead-code elimination even when no result is read.
        kept = dce_jaxpr(jaxpr)
        assert [e for e in kept.eqns if e.primitive.name in ("scan", "while", "cond")] \
            == loops, build.__name__


def test_dce_keeps_writing_loops_drops_reading_ones() -> None:
    def prog(j: Any, n: Any) -> Any:
        r = j.new_ref(n.zeros(3))

        def f(x: Any) -> Any:
            j.lax.scan(lambda c, xi: (c + r[0], None), 0., x)   # reads only: dead
            j.lax.fori_loop(0, 2, lambda i, c: (r.__setitem__(i, c), c)[1], 1.)  # writes
            j.lax.cond(x[0, 0] > 0, lambda: r[1], lambda: r[2])  # reads only: dead
            return x * 2
        return j.make_jaxpr(f)(n.ones((2, 3)))
    ours, theirs = both(prog)
    assert str(ours) == str(theirs)
    from jax._src.interpreters import partial_eval as pe
    expected = str(pe.dce_jaxpr(theirs.jaxpr, [True])[0])
    assert str(dce_jaxpr(ours)) == expected


# ---------------------------------------------------------------- discharge


def _discharge_check(build: Callable[..., Any], with_jax: bool = True) -> None:
    """make_jaxpr with the refs as arguments; the discharged program, the
    direct evaluation on fresh refs and JAX (jit, in place) agree."""
    f, args = build(spec, snp)
    jf, jargs = build(jax, jnp)
    jaxpr = spec.make_jaxpr(f)(*args)
    pure, consts = spec.discharge_state(jaxpr)
    check_jaxpr(pure)
    assert not any(type(v.aval).__name__ == "RefType" for v in pure.invars)
    assert not any(e.effects for e in pure.eqns)
    values = [np.array(arr(spec.freeze(a)) if type(a) is spec.ref.Ref else a) for a in args]
    fresh = [spec.new_ref(v) if type(a) is spec.ref.Ref else v for v, a in zip(values, args)]
    direct = eval_jaxpr(jaxpr, jaxpr.consts, *fresh)
    n_out = len(jaxpr.outvars)
    discharged = eval_jaxpr(pure, consts, *values)
    expected_out = jax.tree_util.tree_leaves(jax.jit(jf)(*jargs)) if with_jax else direct
    for d, o, e in zip(discharged[:n_out], direct, expected_out):
        np.testing.assert_allclose(arr(d), arr(o), rtol=1e-6)
        np.testing.assert_allclose(arr(d), arr(e), rtol=1e-6)
    ref_args = [(a, ja) for a, ja in zip(fresh, jargs) if type(a) is spec.ref.Ref]
    for fin, (a, ja) in zip(discharged[n_out:], ref_args):
        np.testing.assert_array_equal(arr(fin), arr(spec.freeze(a)))
        if with_jax:
            np.testing.assert_array_equal(arr(fin), arr(jax.freeze(ja)))


def ref_args_program(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Refs passed in, read and written by every kind of loop and branch."""
    def f(r: Any, s: Any, x: Any, i: Any) -> Any:
        def body(c: Any, row: Any) -> Any:
            r[c % 3] += row.sum()
            s[...] = s[...] * 0.5 + row[0]
            return c + 1, r[0]
        c, ys = j.lax.scan(body, i, x)
        k = j.lax.while_loop(lambda k: (r[0] < 100.) & (k < 3), lambda k: (s.__setitem__(
            ..., s[...] * 2. + 1.), k + 1)[1], 0)
        j.lax.fori_loop(0, c, lambda t, _: (r.__setitem__(t % 3, r[t % 3] - t), _)[1], None)
        y = j.lax.switch(i, [lambda v: v * r[0], lambda v: (s.__setitem__(..., v.sum()), v)[1],
                             lambda v: (r.__setitem__(1, 7.), v + 1)[1]], x[0])
        return ys, k, y
    return f, (j.new_ref(n.arange(3.)), j.new_ref(n.float32(1.)), n.arange(12.).reshape(4, 3),
               1)


def ref_args_over_rows(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A scan over a ref's rows (reverse), and a cond given the ref."""
    def f(r: Any, p: Any) -> Any:
        def body(c: Any, row: Any) -> Any:
            row[0] = row[1] + c
            return c + row[0], row[...]
        c, ys = j.lax.scan(body, 0., r, reverse=True)
        j.lax.cond(p, lambda q: q.__setitem__((0, 1), c), lambda q: None, r)
        return c, ys
    return f, (j.new_ref(n.arange(8.).reshape(4, 2)), True)


@pytest.mark.parametrize("build", [ref_args_program, ref_args_over_rows, scan_local,
                                   fori_traced, while_cond_reads, switch_ref, map_ref,
                                   nested, cond_ref_operand],
                         ids=lambda b: b.__name__)
def test_discharge_agrees_with_direct_evaluation_and_jax(build: Callable[..., Any]) -> None:
    _discharge_check(build, with_jax=build is not while_cond_reads)


def test_discharge_of_jit_inside_loops() -> None:
    def build(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        @j.jit  # type: ignore[untyped-decorator]
        def bump(q: Any, v: Any) -> None:
            q[...] += v

        def f(r: Any, x: Any) -> Any:
            def body(c: Any, xi: Any) -> Any:
                bump(r, xi)
                return c + r[0], None
            return j.lax.scan(body, 0., x)[0]
        return f, (j.new_ref(n.zeros(2)), n.arange(6.).reshape(3, 2))
    _discharge_check(build)


_OPS = st.lists(st.tuples(st.sampled_from(["get", "set", "add", "swap"]),
                          st.sampled_from(["i", "k", "row"]),
                          st.floats(-3, 3, width=32, allow_subnormal=False)),
                min_size=1, max_size=5)


@settings(max_examples=20, deadline=None)
@given(ops=_OPS, loop=st.sampled_from(["scan", "fori", "while", "cond"]),
       length=st.integers(0, 3))
def test_discharge_property(ops: list[tuple[str, str, float]], loop: str, length: int) -> None:
    """Random read/write bodies on a f32[3,2] ref inside a loop or branch:
    discharged == direct == JAX."""
    def build(j: Any, n: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        def f(r: Any, k: Any) -> Any:
            def step(i: Any, acc: Any) -> Any:
                for op, where, v in ops:
                    idx = {"i": (i % 3, 1), "k": (k, 0), "row": (i % 3,)}[where]
                    val = n.full(r[idx].shape, v, n.float32)
                    if op == "get":
                        acc = acc + r[idx].sum()
                    elif op == "set":
                        r[idx] = val + acc
                    elif op == "add":
                        r[idx] += val
                    else:
                        acc = acc + j.ref.swap(r, idx, val).sum()
                return acc
            lax = j.lax
            if loop == "scan":
                return lax.scan(lambda c, i: (step(i, c), c), n.float32(0.),
                                n.arange(length))
            if loop == "fori":
                return lax.fori_loop(0, length + k - k, step, n.float32(0.))
            if loop == "while":
                return lax.while_loop(lambda c: c[0] < length,
                                      lambda c: (c[0] + 1, step(c[0], c[1])),
                                      (0, n.float32(0.)))
            return lax.cond(k > 1, lambda: step(k, n.float32(1.)), lambda: n.float32(0.))
        return f, (j.new_ref(n.arange(6., dtype=n.float32).reshape(3, 2)), 2)
    _discharge_check(build)


# ------------------------------------------------------- transforms (later)


def test_reverse_mode_of_loops_and_conds_over_differentiated_refs() -> None:
    """grad of loops and conds writing refs the function created (whose
    tangents are tangent refs): the tangent loop writes the tangent ref; the
    transposed loop or cond adds into its cotangent ref (a constant of the
    transposed scan, an operand of the transposed cond). Values, and the
    printed programs, equal JAX's; the direct and legacy linearize paths and
    checkpoint agree."""
    def scan_own(j: Any, n: Any) -> Callable[..., Any]:
        def f(x: Any) -> Any:
            q = j.new_ref(0.)

            def body(c: Any, _: Any) -> Any:
                q[...] += x * c
                return c + 1., None
            j.lax.scan(body, 1., None, length=3)
            return q[...]
        return f

    def cond_own(j: Any, n: Any) -> Callable[..., Any]:
        def f(x: Any) -> Any:
            q = j.new_ref(0.)
            j.lax.cond(x > 0, lambda: q.__setitem__(..., x), lambda: None)
            return q[...]
        return f

    def fori_own(j: Any, n: Any) -> Callable[..., Any]:
        def f(x: Any) -> Any:
            r = j.new_ref(x)

            def body(i: Any, c: Any) -> Any:
                r[...] = r[...] * x
                return c + r[...]
            return j.lax.fori_loop(0, 3, body, 0.)
        return f

    def scan_sin(j: Any, n: Any) -> Callable[..., Any]:
        def f(x: Any) -> Any:
            r = j.new_ref(x)

            def body(c: Any, _: Any) -> Any:
                r[...] = n.sin(r[...]) * c
                return c + 1., None
            j.lax.scan(body, x[0], None, length=3)
            return r[...].sum()
        return f

    def cond_branches(j: Any, n: Any) -> Callable[..., Any]:
        def f(x: Any) -> Any:
            r = j.new_ref(x)

            def yes() -> None:
                r[...] = n.sin(r[...]) * 2.

            def no() -> None:
                r[1] += r[0] * r[0]
            j.lax.cond(x[0] > x[1], yes, no)
            return r[...].sum() * x[0]
        return f
    vec = np.array([0.5, 1.5], np.float32)
    cases = [(scan_own, 2.), (cond_own, 2.), (fori_own, 3.), (scan_sin, vec),
             (cond_branches, vec), (cond_branches, vec[::-1].copy())]
    for build, x in cases:
        theirs = np.asarray(jax.grad(build(jax, jnp))(x))
        np.testing.assert_allclose(np.asarray(spec.grad(build(spec, snp))(x)), theirs,
                                   rtol=2e-6)
        np.testing.assert_allclose(np.asarray(spec.jit(spec.grad(build(spec, snp)))(x)),
                                   theirs, rtol=2e-6)
        spec.config.update("jax_use_direct_linearize", False)
        try:
            legacy = spec.grad(build(spec, snp))(x)
        finally:
            spec.config.update("jax_use_direct_linearize", True)
        np.testing.assert_allclose(np.asarray(legacy), theirs, rtol=2e-6)
        # Under checkpoint a ref made from a constant and written with
        # differentiated values is JAX's NotImplementedError (spec's too);
        # where JAX's cond lacks a rule for refs, spec's checkpointed gradient
        # equals the plain one (checkpoint does not change values).
        try:
            theirs_remat: Any = np.asarray(jax.grad(jax.checkpoint(build(jax, jnp)))(x))
        except NotImplementedError as err:
            theirs_remat = str(err)
        try:
            ours_remat: Any = np.asarray(spec.grad(spec.checkpoint(build(spec, snp)))(x))
        except NotImplementedError as err:
            ours_remat = str(err)
        if isinstance(theirs_remat, str) and "cond partial-eval" in theirs_remat:
            np.testing.assert_allclose(ours_remat, theirs, rtol=2e-6)
        elif isinstance(theirs_remat, str) or isinstance(ours_remat, str):
            assert str(ours_remat) == str(theirs_remat)
        else:
            np.testing.assert_allclose(ours_remat, theirs_remat, rtol=2e-6)
        ours_t = spec.jvp(build(spec, snp), (x,), (np.ones_like(x),))
        theirs_t = jax.jvp(build(jax, jnp), (x,), (np.ones_like(x),))
        np.testing.assert_allclose(np.asarray(ours_t[1]), np.asarray(theirs_t[1]), rtol=2e-6)
    # (In the grad program of fori_own JAX's known loop body prints an unused
    # swap result as `_`: its partial evaluation drops variables no tracer
    # still holds; spec names it. The linearized programs agree.)
    assert str(spec.make_jaxpr(spec.grad(cond_branches(spec, snp)))(vec)) == \
        str(jax.make_jaxpr(jax.grad(cond_branches(jax, jnp)))(vec))
    for build, x in [(fori_own, 3.), (cond_branches, vec)]:
        _, lin_s = spec.linearize(build(spec, snp), x)
        _, lin_j = jax.linearize(build(jax, jnp), x)
        assert str(spec.make_jaxpr(lin_s)(x)) == str(jax.make_jaxpr(lin_j)(x))


def test_vmap_of_cond_with_refs_as_jax() -> None:
    def prog(j: Any, n: Any) -> Any:
        def f(x: Any) -> Any:
            q = j.new_ref(0.)
            j.lax.cond(x > 0, lambda: q.__setitem__(..., x), lambda: None)
            return q[...]
        return j.vmap(f)(n.ones(2))
    e = same_error(prog)
    assert isinstance(e, NotImplementedError)
