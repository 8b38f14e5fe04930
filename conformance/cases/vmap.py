"""vmap: in_axes/out_axes variants, axis_size, nesting and composition with jit and autodiff,
collectives over a named axis, jaxpr text of batched programs, and vmap's errors.

Sources (jax-ml/jax docs): new_docs/101 (automatic vectorization), new_docs/201 (vmap
in_axes/out_axes pytrees, axis_name collectives). Real JAX supplies every expected result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.registry import case, contraction

A34 = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0) / 4.0
B43 = (np.arange(12, dtype=np.float32).reshape(4, 3) + 1.0) / 8.0
X3 = np.array([0.5, -1.25, 2.0], dtype=np.float32)
X4 = np.array([0.3, -0.7, 1.1, 2.5], dtype=np.float32)
C234 = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.0) / 6.0
IDX3 = np.array([2, 0, 1], dtype=np.int32)


# -- elementwise, reductions, matmul, indexing ---------------------------------------------------


@case(ulp=4)
def elementwise_unary(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: jnp.sin(x) * 2.0 + 1.0)(A34)


@case
def elementwise_binary_broadcast_unbatched(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x, y: x * y - y, in_axes=(0, None))(A34, X4)


@case
def reduction_sum_and_max(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda x: (jnp.sum(x), jnp.max(x, axis=0)))
    return f(C234)


@case
def reduction_in_axes_1(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(jnp.sum, in_axes=1)(A34)


# XLA contracts in a different order here: one ULP (SPEC.md section 8, dot_general).
@case(ulp=1)
def matvec_batched_matrix(jax: Any, jnp: Any, lax: Any) -> Any:
    out = jax.vmap(lambda m, v: m @ v, in_axes=(0, None))(C234, X4)
    return contraction(out, np.abs(C234.astype(np.float64)) @ np.abs(X4.astype(np.float64)), 4)


@case
def matmul_both_batched(jax: Any, jnp: Any, lax: Any) -> Any:
    out = jax.vmap(jnp.dot)(C234, np.transpose(C234, (0, 2, 1)))
    c = np.abs(C234.astype(np.float64))
    return contraction(out, c @ np.transpose(c, (0, 2, 1)), 4)


@case
def dot_vectors_in_axes_mixed(jax: Any, jnp: Any, lax: Any) -> Any:
    out = jax.vmap(jnp.dot, in_axes=(0, 1))(A34, B43.T.copy())
    return contraction(out, np.sum(np.abs(A34.astype(np.float64) * B43.T), axis=1), 4)


@case
def indexing_static_slice(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x[1:3] * 2.0)(A34)


@case
def indexing_batched_index(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x, i: x[i])(A34, IDX3)


@case
def where_batched_condition(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: jnp.where(x > 0, x, -x * 0.5))(A34)


@case
def concatenate_with_unbatched(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x, y: jnp.concatenate([x, y, x]), in_axes=(0, None))(A34, X3)


# -- in_axes / out_axes variants -------------------------------------------------------------------


@case
def in_axes_negative(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x * 3.0, in_axes=-1)(A34)


@case
def out_axes_1(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x + 1.0, in_axes=0, out_axes=1)(C234)


@case
def out_axes_negative(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x * x, out_axes=-1)(C234)


@case
def out_axes_none_unbatched_output(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x, y: (x * 2.0, y + 1.0), in_axes=(0, None), out_axes=(0, None))(A34, X4)


@case
def in_axes_pytree_tuple(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(p: Any) -> Any:
        a, b = p
        return a * b
    return jax.vmap(f, in_axes=((0, 1),))((A34, B43))


@case
def in_axes_dict(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(p: Any) -> Any:
        return p["w"] * p["x"] + p["b"]
    params = {"w": A34, "x": X4, "b": np.float32(0.5)}
    return jax.vmap(f, in_axes=({"w": 0, "x": None, "b": None},))(params)


@case
def out_axes_pytree_dict(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda x: {"a": x, "b": x * 2.0}, out_axes={"a": 0, "b": 1})
    return f(A34)


@case
def axis_size_all_unbatched(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x + 1.0, in_axes=None, axis_size=3)(X4)


# -- nesting and composition -----------------------------------------------------------------------


@case
def nested_vmap_outer_product(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(jax.vmap(lambda a, b: a * b, in_axes=(None, 0)), in_axes=(0, None))
    return f(X3, X4)


@case
def nested_vmap_matrix(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(jax.vmap(lambda x: jnp.sum(x * x)))(C234)


@case
def vmap_of_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(jax.jit(lambda x: jnp.sum(x) * x))(A34)


@case(ulp=1)
def jit_of_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(jax.vmap(lambda x, y: x @ y, in_axes=(0, None)))(C234, X4)


@case(ulp=4)
def vmap_of_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)))(A34)


@case(ulp=4)
def grad_of_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    def loss(w: Any) -> Any:
        return jnp.sum(jax.vmap(lambda row: jnp.tanh(row @ w))(B43))
    return jax.grad(loss)(X3)


@case(ulp=4)
def jacfwd_jacrev_values(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return jnp.sin(x) * x[0]
    return jax.jacfwd(f)(X3), jax.jacrev(f)(X3)


@case(ulp=4)
def hessian_value(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.hessian(lambda x: jnp.sum(x**3) + x[0] * x[1])(X3)


@case
def jacrev_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.jacrev(lambda x: x * x[0]))(X3))


@case
def jacfwd_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.jacfwd(lambda x: jnp.sin(x)))(X3))


@case
def hessian_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.hessian(lambda x: jnp.sum(x**3)))(X3))


# -- collectives over a named axis -----------------------------------------------------------------


@case
def psum_normalise(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(X4)


@case
def pmean_pmax_pmin(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(
        lambda x: (lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i")), axis_name="i"
    )
    return f(A34)


@case
def all_gather_under_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: lax.all_gather(x, "i") * 1.0, axis_name="i")(A34)


@case
def axis_index_under_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x * lax.axis_index("i"), axis_name="i")(X4)


@case
def psum_nested_axes(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(
        jax.vmap(lambda x: lax.psum(x, ("i", "j")), axis_name="j"), axis_name="i"
    )
    return f(A34)


@case
def psum_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")
    return str(jax.make_jaxpr(f)(X4))


# -- jaxpr text of vmap ----------------------------------------------------------------------------


@case
def jaxpr_elementwise(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(lambda x, y: jnp.sin(x) * y, in_axes=(0, None)))(A34, X4))


@case
def jaxpr_reduction(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(lambda x: jnp.sum(x, axis=0), in_axes=1))(C234))


@case
def jaxpr_matvec(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(lambda m, v: m @ v, in_axes=(0, None)))(C234, X4))


@case
def jaxpr_dot_both_batched(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(jnp.dot))(A34, A34))


@case
def jaxpr_out_axes_1(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(lambda x: x * 2.0, out_axes=1))(A34))


@case
def jaxpr_where(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(lambda x: jnp.where(x > 0, x, 0.0)))(A34))


@case
def jaxpr_concatenate(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.vmap(lambda x, y: jnp.concatenate([x, y]), in_axes=(0, None))
    return str(jax.make_jaxpr(f)(A34, X3))


@case
def jaxpr_vmap_of_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(jax.jit(lambda x: x + 1.0)))(A34))


@case
def jaxpr_nested(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(jax.vmap(lambda x: jnp.max(x))))(C234))


@case
def jaxpr_batched_index(jax: Any, jnp: Any, lax: Any) -> Any:
    return str(jax.make_jaxpr(jax.vmap(lambda x, i: x[i]))(A34, IDX3))


# -- errors ----------------------------------------------------------------------------------------


@case(raises=ValueError)
def error_inconsistent_sizes(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x, y: x + y)(X3, X4)


@case(raises=ValueError)
def error_in_axes_out_of_range(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x, in_axes=2)(A34)


@case(raises=ValueError)
def error_out_axes_none_batched(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x * 2.0, out_axes=None)(A34)


@case(raises=ValueError)
def error_no_mapped_no_axis_size(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: x, in_axes=None)(X3)


@case(raises=NameError)
def error_unbound_axis_name(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(X3)
