"""Matmul precision: Precision levels and dot algorithms (their jaxprs, result types,
values and errors) and the default-precision config. spec runs these with
``spec_dot_algorithms="cpu_jax"``, JAX's CPU behaviour, which is what the reference
computes; JAX itself has no such flag."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from conformance.cases._util import data
from conformance.registry import capture, case, contraction, register_case

PRESETS = ("DEFAULT", "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
           "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
           "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
           "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
CPU_ACCEPTED = ("DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
                "BF16_BF16_F32_X3", "BF16_BF16_F32_X6")


@contextlib.contextmanager
def _as_jax_cpu(jax: Any) -> Iterator[None]:
    """spec's switch to JAX's CPU behaviour for dot algorithms, where the library has it."""
    if not hasattr(jax.config, "spec_dot_algorithms"):
        yield
        return
    before = jax.config.spec_dot_algorithms
    jax.config.update("spec_dot_algorithms", "cpu_jax")
    try:
        yield
    finally:
        jax.config.update("spec_dot_algorithms", before)


def _pair(jnp: Any, dtype: str = "float32") -> tuple[Any, Any]:
    return jnp.asarray(data((3, 5), dtype, 1)), jnp.asarray(data((5, 2), dtype, 2))


def _values(name: str, dtype: str) -> Any:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        a, b = _pair(jnp, dtype)
        with _as_jax_cpu(jax):
            out = jnp.dot(a, b, precision=name)
            f32 = jnp.dot(a, b, precision=name, preferred_element_type=jnp.float32)
        mag = np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64))
        return [out.dtype, f32.dtype, contraction(f32, mag, 5)]
    return fn


def _rejected(name: str) -> Any:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        a, b = _pair(jnp)
        with _as_jax_cpu(jax):
            return jnp.dot(a, b, precision=name)
    return fn


def _jaxpr(name: str) -> Any:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        a, b = _pair(jnp)
        return [str(jax.make_jaxpr(lambda x, y: lax.dot(x, y, precision=name))(a, b)),
                str(jax.make_jaxpr(lambda x, y: x @ y)(a, b)),
                jax.eval_shape(lambda x: jnp.dot(x.astype(jnp.float16), x.T.astype(
                    jnp.float16), precision=name), a).dtype]
    return fn


for _name in PRESETS:
    register_case(f"jaxpr_{_name}", _jaxpr(_name), module=__name__, tags=("precision", "jaxpr"))
    if _name in CPU_ACCEPTED:
        for _dt in ("float32", "float16", "bfloat16"):
            register_case(f"cpu_values_{_name}_{_dt}", _values(_name, _dt), module=__name__,
                          tags=("precision",))
    else:
        register_case(f"cpu_rejects_{_name}", _rejected(_name), module=__name__,
                      tags=("precision", "errors"), raises="ValueError")


@case(tags=("precision", "jaxpr"))
def levels_and_pairs(jax: Any, jnp: Any, lax: Any) -> Any:
    a, b = _pair(jnp)
    out = []
    for p in ("highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default",
              "bfloat16", "fastest", ("high", "highest"), lax.Precision.HIGH):
        out.append(str(jax.make_jaxpr(lambda x, y: jnp.matmul(x, y, precision=p))(a, b)))
    for bad in ("NOPE", ("BF16_BF16_F32", "high"), 7):
        out.append(capture(jnp.dot, a, b, precision=bad))
    return out


@case(tags=("precision", "jaxpr"))
def algorithm_through_grad_and_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    x, w = jnp.ones((4, 8)), jnp.ones((8, 2))

    def loss(w: Any) -> Any:
        return jnp.sum(jnp.dot(x, w, precision="BF16_BF16_F32_X3"))
    return [str(jax.make_jaxpr(jax.grad(loss))(w)),
            str(jax.make_jaxpr(jax.vmap(lambda r: jnp.dot(r, w, precision="F16_F16_F32")))(x)),
            str(jax.make_jaxpr(lambda w: jax.linearize(
                lambda w: jnp.einsum("ij,jk", x, w, precision="TF32_TF32_F32"), w)[1](w))(w))]


@case(tags=("precision",))
def default_matmul_precision_presets(jax: Any, jnp: Any, lax: Any) -> Any:
    a, b = _pair(jnp)
    out = []
    for value in ("BF16_BF16_F32_X6", "highest", "F64_F64_F64"):
        with jax.default_matmul_precision(value):
            out.append(str(jax.make_jaxpr(lambda x, y: jnp.tensordot(x, y, 1))(a, b)))
    out.append(capture(jax.config.update, "jax_default_matmul_precision", "bfloat16_3x"))
    return out
