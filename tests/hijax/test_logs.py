"""Backward-pass logs (``VJP.with_logs``) of hijax ``vjp_bwd`` rules and of
``custom_vjp.defvjp_with_logs`` rules, on spec and on JAX 0.12.0.1 in the
same test: values, merge order, and the errors for a bad log or a key
logged twice."""

from __future__ import annotations

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
