"""The type system against real JAX: promotion lattice, weak types, x64, printing."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec._src.core import types as T

ALL = T.ALL_DTYPES + [int, float, complex]


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn(*args))
    except Exception as err:  # noqa: BLE001 - the class is the outcome
        return ("raises", type(err).__name__)


@pytest.mark.parametrize("x64_mode", [False, True])
def test_promotion_table_matches_jax(x64_mode: bool) -> None:
    spec.config.update("jax_enable_x64", x64_mode)
    jax.config.update("jax_enable_x64", x64_mode)
    try:
        mismatches = []
        for a in ALL:
            for b in ALL:
                for name, ours, theirs in (
                    ("promote_types", T.promote_types, jnp.promote_types),
                    ("result_type", lambda p, q: T.result_type(p, q, return_weak_type_flag=True),
                     lambda p, q: jax.dtypes.result_type(p, q, return_weak_type_flag=True)),
                ):
                    got, want = _outcome(ours, a, b), _outcome(theirs, a, b)
                    if got != want:
                        mismatches.append((name, a, b, got, want))
        assert not mismatches, mismatches[:10]
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ALL), st.sampled_from(ALL))
def test_promotion_is_commutative(a: object, b: object) -> None:
    assert _outcome(T.promote_types, a, b) == _outcome(T.promote_types, b, a)


def test_typeof_strings_match_jax() -> None:
    cases = [np.zeros((3, 4), np.float32), np.zeros((), np.int8), 2.0, 3, True, 1j,
             np.zeros((0, 2), np.uint16), np.zeros(2, T.bfloat16)]
    for c in cases:
        assert str(spec.typeof(c)) == str(jax.typeof(c)), c
        assert repr(spec.typeof(c)) == repr(jax.typeof(c)), c
    assert str(spec.typeof(snp.asarray(2.0))) == str(jax.typeof(jnp.asarray(2.0))) == "~float32[]"


def test_x64_canonicalisation_and_warning() -> None:
    with pytest.warns(UserWarning, match="float64"):
        assert T.to_dtype(np.float64, "zeros") == np.float32
    assert spec.typeof(np.arange(3.0)) == T.ArrayType((3,), T.float32)
    assert str(spec.typeof(np.arange(3.0))) == str(jax.typeof(np.arange(3.0)))


def test_x64_on(x64: None) -> None:
    for c in (2.0, 3, np.arange(3.0), np.arange(3)):
        assert str(spec.typeof(c)) == str(jax.typeof(c))


def test_short_dtype_names_match_jaxpr_text() -> None:
    for dt in T.ALL_DTYPES:
        if dt.itemsize * 8 > 32 and dt.kind in "iufc":
            continue  # 64-bit types need x64; covered by the x64 test above
        x = np.zeros((2,), dt)
        want = str(jax.make_jaxpr(lambda v: v)(x))
        got = str(spec.make_jaxpr(lambda v: v)(x))
        assert got == want, dt
