"""Random well-typed programs (spec.testing.programs) against JAX and
against themselves: values, jaxpr text, check_jaxpr, and jit == eager."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import spec
import spec.numpy as snp
from spec._src.core.interpreter import check_jaxpr
from spec.testing import Program, programs

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(programs(), st.integers(0, 1000))
def test_values_match_jax(program: Program, seed: int) -> None:
    inputs = program.inputs(seed)
    ours = np.asarray(program(snp, *[snp.asarray(x) for x in inputs]))
    theirs = np.asarray(program(jnp, *[jnp.asarray(x) for x in inputs]))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    # Transcendental functions and summation order differ by a few ULPs.
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=1e-5)


@SETTINGS
@given(programs())
@example(Program([()], [("cond_sum", (0,)), ("cond_sum", (0,))]))
def test_jaxpr_text_matches_jax_and_type_checks(program: Program) -> None:
    structs = [np.zeros(s, np.float32) for s in program.input_shapes]
    ours = spec.make_jaxpr(lambda *xs: program(snp, *xs))(*structs)
    theirs = jax.make_jaxpr(lambda *xs: program(jnp, *xs))(*structs)
    check_jaxpr(ours)
    assert str(ours) == str(theirs)


@SETTINGS
@given(programs(), st.integers(0, 1000))
def test_jit_equals_eager_bitwise(program: Program, seed: int) -> None:
    inputs = [snp.asarray(x) for x in program.inputs(seed)]
    eager = np.asarray(program(snp, *inputs))
    jitted = np.asarray(spec.jit(lambda *xs: program(snp, *xs))(*inputs))
    assert eager.tobytes() == jitted.tobytes()
