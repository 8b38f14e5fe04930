"""Exception classes for invalid programs.

Each case declares the class it expects (a base class is enough: the reference's exact class is
what other implementations are compared against, matched by name through their MRO).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from conformance.registry import ExcSpec, register_case

# name -> (expected class, program). Programs receive (jax, jnp, lax) and must raise.
Program = Callable[[Any, Any, Any], Any]
ERRORS: dict[str, tuple[ExcSpec, Program]] = {}


def error(name: str, raises: ExcSpec) -> Callable[[Program], Program]:
    def deco(fn: Program) -> Program:
        ERRORS[name] = (raises, fn)
        return fn

    return deco


def _m(jnp: Any, shape: tuple[int, ...] = (2, 3), dtype: Any = np.float32) -> Any:
    return jnp.asarray(np.ones(shape, dtype))


# -- shapes -------------------------------------------------------------------------------------


@error("add_shape_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp) + _m(jnp, (3, 2))


@error("lax_add_rank_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.add(_m(jnp), _m(jnp, (3,)))


@error("dot_shape_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.dot(_m(jnp), _m(jnp))


@error("matmul_vector_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.matmul(_m(jnp, (3,)), _m(jnp, (4,)))


@error("matmul_scalar", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp, (3,)) @ 2.0


@error("dot_general_contracting_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.dot_general(_m(jnp), _m(jnp), (((1,), (0,)), ((), ())))


@error("dot_general_batch_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.dot_general(_m(jnp, (2, 3, 4)), _m(jnp, (3, 4, 5)), (((2,), (1,)), ((0,), (0,))))


@error("einsum_size_mismatch", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.einsum("ij,jk->ik", _m(jnp), _m(jnp))


@error("concatenate_shape_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.concatenate([_m(jnp), _m(jnp, (3, 2))])


@error("lax_concatenate_rank_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.concatenate([_m(jnp), _m(jnp, (3,))], 0)


@error("stack_shape_mismatch", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.stack([_m(jnp), _m(jnp, (3, 2))])


@error("reshape_size_mismatch", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp).reshape(4, 2)


@error("reshape_two_minus_ones", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp).reshape(-1, -1)


@error("broadcast_to_incompatible", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.broadcast_to(_m(jnp), (3, 3))


@error("broadcast_in_dim_bad", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.broadcast_in_dim(_m(jnp), (3, 3), (0, 1))


@error("split_unequal", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.split(jnp.arange(5), 2)


@error("squeeze_non_unit", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.squeeze(_m(jnp), 0)


@error("sort_operand_shapes", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.sort((_m(jnp, (3,)), _m(jnp, (4,))))


@error("clamp_bad_bounds_shape", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.clamp(_m(jnp, (2,)), _m(jnp), 2.0)


@error("pad_config_length", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.pad(_m(jnp), np.float32(0), ((1, 1, 0),))


@error("slice_out_of_bounds", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.slice(_m(jnp), (0, 0), (3, 3))


@error("dynamic_slice_too_big", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.dynamic_slice(_m(jnp), (0, 0), (3, 3))


@error("negative_shape", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.zeros((-1,))


@error("iota_negative", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.iota(np.int32, -1)


# -- axes ---------------------------------------------------------------------------------------


@error("sum_axis_out_of_range", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.sum(_m(jnp), axis=2)


@error("moveaxis_out_of_range", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.moveaxis(_m(jnp), 3, 0)


@error("transpose_not_permutation", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.transpose(_m(jnp), (0, 0))


@error("concatenate_axis_out_of_range", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.concatenate([_m(jnp), _m(jnp)], axis=5)


@error("max_axis_out_of_range", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.max(_m(jnp), axis=-3)


# -- dtypes -------------------------------------------------------------------------------------


@error("bitwise_on_float", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.bitwise_and(_m(jnp), _m(jnp))


@error("invert_float", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return ~_m(jnp)


@error("shift_float", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.left_shift(_m(jnp), 1)


@error("lax_add_mixed_dtypes", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.add(_m(jnp), _m(jnp, dtype=np.int32))


@error("lax_mul_mixed_widths", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.mul(_m(jnp, dtype=np.int8), _m(jnp, dtype=np.int16))


@error("select_n_float_predicate", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.select_n(_m(jnp), _m(jnp), _m(jnp))


@error("integer_pow_negative_int", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return lax.integer_pow(jnp.arange(3), -1)


@error("unknown_dtype_name", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp).astype("foo")


@error("string_array", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.asarray("abc")


@error("float8_promotion", "TypePromotionError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.promote_types(np.dtype("float8_e4m3fn"), np.dtype("float8_e5m2"))


@error("float8_add_float32", "TypePromotionError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp, dtype=np.dtype("float8_e5m2")) + _m(jnp)


@error("add_string", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp) + "a"


@error("ragged_nested_list", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.array([1, [2]])


# -- indexing -----------------------------------------------------------------------------------


@error("list_index", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return _m(jnp)[[0, 1]]


@error("float_index", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.arange(3)[1.5]


@error("too_many_indices", IndexError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.ones(3)[0, 0]


@error("repeat_list_repeats", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.repeat(jnp.ones(3), [1, 2, 1])


@error("boolean_index_in_jit", "NonConcreteBooleanIndexError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: a[a > 0])(jnp.arange(3))


# -- tracers ------------------------------------------------------------------------------------


@error("bool_of_tracer", "TracerBoolConversionError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: 1 if a > 0 else 0)(jnp.asarray(1.0))


@error("python_if_in_make_jaxpr", "TracerBoolConversionError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.make_jaxpr(lambda a: a if a > 0 else -a)(1.0)


@error("int_of_tracer", "ConcretizationTypeError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: int(a))(jnp.asarray(1.0))


@error("float_of_tracer", "ConcretizationTypeError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: float(a))(jnp.asarray(1.0))


@error("item_of_tracer", "ConcretizationTypeError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: a.item())(jnp.ones(1))


@error("index_of_tracer", "TracerIntegerConversionError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda n: list(range(n)))(jnp.asarray(3))


@error("numpy_of_tracer", "TracerArrayConversionError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: np.asarray(a))(jnp.asarray(1.0))


@error("traced_shape", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda n: jnp.zeros(n))(3)


@error("leaked_tracer", "UnexpectedTracerError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    leaked: list[Any] = []

    def f(a: Any) -> Any:
        leaked.append(a)
        return a

    jax.jit(f)(jnp.asarray(1.0))
    return leaked[0] + 1


@error("leaked_tracer_make_jaxpr", "UnexpectedTracerError")
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    leaked: list[Any] = []

    def f(a: Any) -> Any:
        leaked.append(a * 2)
        return a

    jax.make_jaxpr(f)(jnp.ones(2))
    return jnp.sin(leaked[0])


# -- jit arguments ------------------------------------------------------------------------------


@error("unhashable_static_arg", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a, b: a, static_argnums=1)(1.0, np.ones(2))


@error("bad_static_argnames", ValueError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: a, static_argnames="b")(1.0)


@error("non_array_argument", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: a)(object())


@error("string_argument", TypeError)
def _(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda a: a)("abc")


for _name, (_raises, _fn) in ERRORS.items():
    register_case(_name, _fn, module=__name__, tags=("errors",), raises=_raises)
