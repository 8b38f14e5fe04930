"""Property tests of the elementwise typing rules against JAX's.

For random operand types (dtype, shape, weak type), spec's typing rule must
give the same output types as JAX's, or reject exactly when JAX rejects,
with the same exception class. Every accepted case is also evaluated
eagerly on concrete values, which checks that the impl produces exactly the
type the typing rule promised (Array._from_checked raises otherwise).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
from spec import testing as sth
from spec.stages import ShapeDtypeStruct

UNARY = ["neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log", "log1p",
         "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt", "abs", "erf", "erfc", "erf_inv",
         "lgamma", "digamma", "real", "imag", "conj", "bitwise_not", "population_count", "clz"]
BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
          "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_logical",
          "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge", "complex"]


def _outcome(lax_module: Any, make_jaxpr: Any, name: str, structs: list[Any]) -> Any:
    fn = getattr(lax_module, name)
    try:
        jaxpr = make_jaxpr(fn)(*structs)
    except (TypeError, ValueError) as err:
        return ("raises", type(err).__name__)
    return ("ok", [str(a) for a in jaxpr.out_avals])


def _structs(avals: list[spec._src.core.types.ArrayType], module: Any) -> list[Any]:
    return [module(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]


def _check(name: str, avals: list[spec._src.core.types.ArrayType]) -> None:
    theirs = _outcome(jax.lax, jax.make_jaxpr, name, _structs(avals, jax.ShapeDtypeStruct))
    ours = _outcome(spec.lax, spec.make_jaxpr, name, _structs(avals, ShapeDtypeStruct))
    assert ours == theirs, (name, avals)
    if ours[0] == "ok":
        values = [spec.numpy.asarray(sth.values_of(a, seed=0)) for a in avals]
        getattr(spec.lax, name)(*values)  # impl output is checked against the typing rule


@settings(max_examples=75, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(UNARY), sth.array_types(shape_strategy=sth.shapes(max_rank=3)))
def test_unary_typing_matches_jax(name: str, aval: spec._src.core.types.ArrayType) -> None:
    _check(name, [aval])


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(BINARY), sth.broadcastable_shapes(max_rank=3), sth.dtypes(),
       st.one_of(st.none(), sth.dtypes()), st.booleans(), st.booleans())
def test_binary_typing_matches_jax(name: str, shapes: Any, dt1: Any, dt2: Any, w1: bool,
                                   w2: bool) -> None:
    dt2 = dt1 if dt2 is None else dt2  # mostly equal dtypes: the interesting case
    avals = [spec._src.core.types.ArrayType(shapes[0], dt1, w1 and dt1 != np.bool_),
             spec._src.core.types.ArrayType(shapes[1], dt2, w2 and dt2 != np.bool_)]
    _check(name, avals)
