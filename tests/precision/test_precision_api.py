"""The precision API against JAX run live: which values each dot-like function
takes, how dot_general's jaxprs print them (also through grad, vjp, linearize
and vmap), the output dtypes, the errors, the default-precision config, and,
with ``spec_dot_algorithms="cpu_jax"``, the values JAX's CPU backend computes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import spec
import spec.numpy as sjnp
from spec import lax as slax
from tests.support.pair import class_and_message

PRESETS = [p.name for p in jlax.DotAlgorithmPreset]
# JAX's CPU backend compiles these presets; the others raise at compile time.
CPU_ACCEPTED = {"DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
                "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"}
LEVELS: list[Any] = [None, "highest", "float32", "high", "bfloat16_3x", "tensorfloat32",
                     "default", "bfloat16", "fastest", ("high", "default"),
                     ("highest", "fastest")]


@pytest.fixture
def cpu_jax() -> Iterator[None]:
    """spec behaving as JAX's CPU backend for dot algorithms."""
    spec.config.update("spec_dot_algorithms", "cpu_jax")
    try:
        yield
    finally:
        spec.config.update("spec_dot_algorithms", "as_named")


def _operands(shape_a: tuple[int, ...] = (4, 64), shape_b: tuple[int, ...] = (64, 3),
              dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape_a).astype(dtype),
            rng.standard_normal(shape_b).astype(dtype))


def _in_both(name: str) -> tuple[Any, Any]:
    """A preset of each library, by name."""
    return jlax.DotAlgorithmPreset[name], slax.DotAlgorithmPreset[name]


@pytest.mark.parametrize("name", PRESETS)
def test_preset_members_and_their_printed_forms(name: str) -> None:
    j, s = _in_both(name)
    assert (str(s), repr(s)) == (str(j), repr(j))
    assert [p.name for p in slax.DotAlgorithmPreset] == PRESETS
    assert s.accumulation_type == (None if j.accumulation_type is None
                                   else np.dtype(j.accumulation_type))
    js, ss = j.supported_lhs_types, s.supported_lhs_types
    assert ss == (None if js is None else tuple(np.dtype(t) for t in js))
    for a, b in [(np.float32, np.float32), (jjnp.bfloat16, jjnp.bfloat16),
                 (np.float16, np.float16)]:
        jo = j.supported_output_types(np.dtype(a), np.dtype(b))
        so = s.supported_output_types(np.dtype(a), np.dtype(b))
        assert so == (None if jo is None else tuple(np.dtype(t) for t in jo))


def _jaxpr_texts(fn: Callable[[Any, Any, Any], Any], *args: Any) -> tuple[str, str]:
    return (str(spec.make_jaxpr(lambda *a: fn(sjnp, slax, *a))(*args)),
            str(jax.make_jaxpr(lambda *a: fn(jjnp, jlax, *a))(*args)))


@pytest.mark.parametrize("precision", PRESETS + LEVELS, ids=str)
def test_dot_general_jaxpr_prints_precision_as_jax(precision: Any) -> None:
    a, b = _operands((2, 3), (3, 2))
    s, j = _jaxpr_texts(lambda np_, lax, x, y: lax.dot_general(
        x, y, (((1,), (0,)), ((), ())), precision=precision), a, b)
    assert s == j


@pytest.mark.parametrize("precision", ["BF16_BF16_F32", "highest", "TF32_TF32_F32_X3",
                                       ("high", "default")], ids=str)
@pytest.mark.parametrize("fn", [
    lambda np_, lax, x, y, p: lax.dot(x, y, precision=p),
    lambda np_, lax, x, y, p: np_.dot(x, y, precision=p),
    lambda np_, lax, x, y, p: np_.matmul(x, y, precision=p),
    lambda np_, lax, x, y, p: np_.einsum("ij,jk->ik", x, y, precision=p),
    lambda np_, lax, x, y, p: np_.tensordot(x, y, 1, precision=p),
    lambda np_, lax, x, y, p: np_.inner(x, y.T, precision=p),
], ids=["lax.dot", "dot", "matmul", "einsum", "tensordot", "inner"])
def test_every_dot_like_function_records_the_precision(fn: Any, precision: Any) -> None:
    a, b = _operands((2, 3), (3, 2))
    s, j = _jaxpr_texts(lambda np_, lax, x, y: fn(np_, lax, x, y, precision), a, b)
    assert s == j


@pytest.mark.parametrize("precision", ["BF16_BF16_F32", "TF32_TF32_F32", "highest"], ids=str)
def test_conv_records_the_precision(precision: Any) -> None:
    x, w = np.ones((1, 1, 5, 5), np.float32), np.ones((1, 1, 3, 3), np.float32)
    s, j = _jaxpr_texts(lambda np_, lax, a, b: lax.conv(a, b, (1, 1), "VALID",
                                                         precision=precision), x, w)
    assert s == j
    # The conv lowering ignores dot algorithms: every backend computes the plain conv.
    np.testing.assert_array_equal(
        np.asarray(slax.conv(x, w, (1, 1), "VALID", precision=precision)),
        np.asarray(jlax.conv(x, w, (1, 1), "VALID", precision=precision)))


def test_explicit_dot_algorithm_prints_as_jax() -> None:
    a, b = _operands((2, 3), (3, 2))
    for args in [(np.float16, np.float16, np.float32),
                 (np.float32, np.float32, np.float32, 1, 1, 3, True)]:
        s, j = _jaxpr_texts(lambda np_, lax, x, y: lax.dot(
            x, y, precision=lax.DotAlgorithm(*args)), a, b)
        assert s == j
    sa = slax.DotAlgorithm(sjnp.bfloat16, sjnp.bfloat16, np.float32)
    ja = jlax.DotAlgorithm(jjnp.bfloat16, jjnp.bfloat16, np.float32)
    assert repr(sa) == repr(ja)
    assert slax.DotAlgorithm._fields == jlax.DotAlgorithm._fields


@pytest.mark.parametrize("transform", ["grad", "vjp", "linearize", "vmap", "jvp"])
def test_transforms_carry_the_algorithm(transform: str) -> None:
    def program(jx: Any, np_: Any, x: Any, w: Any) -> Any:
        def loss(w: Any) -> Any:
            return np_.sum(np_.dot(x, w, precision="BF16_BF16_F32_X3"))
        if transform == "grad":
            return jx.grad(loss)(w)
        if transform == "vjp":
            out, pull = jx.vjp(lambda w: np_.dot(x, w, precision="TF32_TF32_F32"), w)
            return pull(out)
        if transform == "linearize":
            _, lin = jx.linearize(lambda w: np_.dot(x, w, precision="F16_F16_F32"), w)
            return lin(w)
        if transform == "jvp":
            return jx.jvp(lambda w: np_.dot(x, w, precision=("high", "highest")), (w,), (w,))
        return jx.vmap(lambda r: np_.dot(r, w, precision="ANY_F8_ANY_F8_F32"))(x)
    x, w = np.ones((4, 8), np.float32), np.ones((8, 2), np.float32)
    s = str(spec.make_jaxpr(lambda x, w: program(spec, sjnp, x, w))(x, w))
    j = str(jax.make_jaxpr(lambda x, w: program(jax, jjnp, x, w))(x, w))
    assert s == j


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_output_dtype_follows_the_operands_not_the_algorithm(name: str, dtype: str) -> None:
    x = np.ones((2, 3), dtype=np.dtype(jjnp.dtype(dtype)))
    for pet in (None, np.float32):
        s = spec.eval_shape(lambda a: slax.dot(a, a.T, precision=name,
                                               preferred_element_type=pet), x)
        j = jax.eval_shape(lambda a: jlax.dot(a, a.T, precision=name,
                                              preferred_element_type=pet), x)
        assert (s.shape, s.dtype) == (j.shape, j.dtype)


def test_algorithm_lifts_the_narrow_preferred_type_check() -> None:
    i = np.ones((2, 3), np.int32)
    s = spec.eval_shape(lambda a: slax.dot(a, a.T, precision="F32_F32_F32",
                                           preferred_element_type=np.int8), i)
    assert s.dtype == jax.eval_shape(lambda a: jlax.dot(
        a, a.T, precision="F32_F32_F32", preferred_element_type=np.int8), i).dtype
    with pytest.raises(TypeError):
        jlax.dot(i, i.T, precision="highest", preferred_element_type=np.int8)
    with pytest.raises(TypeError):
        slax.dot(i, i.T, precision="highest", preferred_element_type=np.int8)




@pytest.mark.parametrize("bad", ["NOPE", 3, ("high",), ("BF16_BF16_F32", "F32_F32_F32"),
                                 ("high", 2)], ids=str)
def test_malformed_precision_raises_as_jax(bad: Any) -> None:
    a, b = _operands((2, 3), (3, 2))
    sc, sm = class_and_message(lambda: sjnp.dot(a, b, precision=bad))
    jc, jm = class_and_message(lambda: jjnp.dot(a, b, precision=bad))
    assert (sc.__name__, sm) == (jc.__name__, jm)


def test_default_matmul_precision_config_and_context_manager() -> None:
    a, b = _operands((2, 3), (3, 2))
    for value in ["BF16_BF16_F32_X3", "highest", "tensorfloat32", "F64_F64_F64"]:
        with spec.default_matmul_precision(value), jax.default_matmul_precision(value):
            s, j = _jaxpr_texts(lambda np_, lax, x, y: x @ y, a, b)
        assert s == j
    spec.config.update("jax_default_matmul_precision", "TF32_TF32_F32")
    jax.config.update("jax_default_matmul_precision", "TF32_TF32_F32")
    try:
        s, j = _jaxpr_texts(lambda np_, lax, x, y: np_.einsum("ij,jk", x, y), a, b)
        assert s == j
    finally:
        spec.config.update("jax_default_matmul_precision", None)
        jax.config.update("jax_default_matmul_precision", None)
    for bad in ["NOPE", "fastest", "bfloat16_3x"]:
        sc, sm = class_and_message(lambda: spec.config.update("jax_default_matmul_precision", bad))
        jc, jm = class_and_message(lambda: jax.config.update("jax_default_matmul_precision", bad))
        assert (sc.__name__, sm) == (jc.__name__, jm)


def test_default_precision_is_part_of_the_jit_cache_key() -> None:
    f = spec.jit(lambda x, y: x @ y)
    a, b = _operands((2, 3), (3, 2))
    texts = []
    for value in ["F32_F32_F32", "BF16_BF16_F32"]:
        with spec.default_matmul_precision(value):
            texts.append(str(f.trace(a, b).jaxpr))
    assert "F32_F32_F32" in texts[0] and "BF16_BF16_F32" in texts[1]


# ------------------------------------------- values, as JAX's CPU backend

@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cpu_jax_mode_accepts_rejects_and_computes_as_jax_cpu(cpu_jax: None, name: str,
                                                              dtype: str) -> None:
    a, b = _operands((4, 16), (16, 3), np.dtype(jjnp.dtype(dtype)))
    if name not in CPU_ACCEPTED:
        sc, sm = class_and_message(lambda: sjnp.dot(a, b, precision=name))
        jc, jm = class_and_message(lambda: jjnp.dot(a, b, precision=name))
        assert (sc.__name__, sm) == (jc.__name__, jm)
        return
    for pet in (None, np.float32):
        s = np.asarray(sjnp.dot(a, b, precision=name, preferred_element_type=pet))
        j = np.asarray(jjnp.dot(a, b, precision=name, preferred_element_type=pet))
        assert s.dtype == j.dtype
        # spec's float32 contraction is correctly rounded (SPEC.md 9.4); JAX's
        # is within its error bound of that, so compare within a few ULPs.
        np.testing.assert_allclose(s.astype(np.float64), j.astype(np.float64),
                                   rtol=4 * float(np.finfo(s.dtype).eps), atol=1e-6)


def test_cpu_jax_mode_f64_on_float32_is_computed_in_float64(cpu_jax: None) -> None:
    a, b = _operands()
    s = np.asarray(sjnp.dot(a, b, precision="F64_F64_F64"))
    j = np.asarray(jjnp.dot(a, b, precision="F64_F64_F64"))
    np.testing.assert_array_equal(s, j)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(s, exact.astype(np.float32))


def test_cpu_jax_mode_rejects_explicit_algorithms_and_grad_keeps_it(cpu_jax: None) -> None:
    a, b = _operands((2, 3), (3, 2))
    alg = (np.float32, np.float32, np.float32)
    sc, sm = class_and_message(lambda: slax.dot(a, b, precision=slax.DotAlgorithm(*alg)))
    jc, jm = class_and_message(lambda: jlax.dot(a, b, precision=jlax.DotAlgorithm(*alg)))
    assert (sc.__name__, sm) == (jc.__name__, jm)

    def loss(np_: Any, w: Any) -> Any:
        return np_.sum(np_.dot(a, w, precision="BF16_BF16_F32_X6") ** 2)
    s = np.asarray(spec.jit(spec.grad(lambda w: loss(sjnp, w)))(b))
    j = np.asarray(jax.jit(jax.grad(lambda w: loss(jjnp, w)))(b))
    np.testing.assert_allclose(s, j, rtol=1e-5)


EDGE_CASES: dict[str, Callable[[Any, Any, Any, np.ndarray], Any]] = {
    "vdot": lambda jx, np_, lax, a: np_.vdot(a, a, precision="BF16_BF16_F32"),
    "vecdot": lambda jx, np_, lax, a: np_.vecdot(a, a, precision="F64_F64_F64"),
    "complex operands": lambda jx, np_, lax, a: np_.dot(
        a.astype(np.complex64) * (1 + 1j), a.T.astype(np.complex64), precision="F32_F32_F32"),
    "int operands": lambda jx, np_, lax, a: np_.dot(
        a.astype(np.int32) + 1, a.T.astype(np.int32) + 1, precision="F16_F16_F16"),
    "mixed operands": lambda jx, np_, lax, a: lax.dot(
        a.astype(np_.float16), a.T.astype(np_.bfloat16), precision="F16_F16_F16"),
    "integer preferred type": lambda jx, np_, lax, a: lax.dot(
        a, a.T, precision="F32_F32_F32", preferred_element_type=np.int32),
    "bf16 preferred type": lambda jx, np_, lax, a: lax.dot(
        a, a.T, precision="BF16_BF16_F32", preferred_element_type=np_.bfloat16),
    "rejected under jit": lambda jx, np_, lax, a: jx.jit(
        lambda x: np_.dot(x, x.T, precision="TF32_TF32_F32"))(a),
    "traced without error": lambda jx, np_, lax, a: str(jx.jit(
        lambda x: np_.dot(x, x.T, precision="TF32_TF32_F32")).trace(a).jaxpr),
    "pair of presets": lambda jx, np_, lax, a: np_.dot(
        a, a.T, precision=(lax.DotAlgorithmPreset.F32_F32_F32,) * 2),
    "batch_matmul": lambda jx, np_, lax, a: lax.batch_matmul(a[None], a.T[None],
                                                             precision="F32_F32_F32"),
}


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        r = fn()
    except Exception as err:  # noqa: BLE001 (class and message are compared)
        return type(err).__name__, str(err)
    if isinstance(r, str):
        return r
    return str(r.dtype), np.asarray(r).astype(np.complex128).tolist()


@pytest.mark.parametrize("label", list(EDGE_CASES))
def test_cpu_jax_mode_edge_cases_as_jax(cpu_jax: None, label: str) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4  # exact products
    fn = EDGE_CASES[label]
    assert _outcome(lambda: fn(spec, sjnp, slax, a)) == _outcome(lambda: fn(jax, jjnp, jlax, a))
