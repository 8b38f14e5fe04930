# The implementation under test arrives as `jax: Any`, so `@jax.jit` is an untyped decorator by
# design; the docs are restated with decorator syntax all the same.
# mypy: disable-error-code="untyped-decorator"
"""Examples of JAX's "sharp bits" and dtype documentation, restated as conformance cases.

Sources (jax-ml/jax docs): notebooks/Common_Gotchas_in_JAX.md, faq.rst (jit and numerics parts),
type_promotion.rst, jep/9407-type-promotion.md, default_dtypes.md, rank_promotion_warning.rst.
Each example is re-expressed as a small program; real JAX supplies the expected results.
Warnings are recorded by category name where the docs say one is emitted.

Skipped here (covered by later issues or outside the scope of spec): the iterator examples
(they need lax.fori_loop/scan/cond), random-number sections (the x64 example is restated with
jnp.ones instead of random.uniform), control flow, debugging NaNs/Infs flags, the faq parts on
grad/vmap (only the forward values of those examples are kept), Tracer-to-NumPy via callbacks,
CUDA/benchmarking/donation entries, and the two faq examples of XLA rewriting expressions under
jit (``log(sqrt(x))``, ``log(exp(x))``): those jitted results are compiler-specific, so only
their eager values are checked.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from conformance.registry import capture, case, register_case


def _warned(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run ``fn`` recording the category names of the warnings it emits."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    return out, [w.category.__name__ for w in got]


# -- Pure functions -----------------------------------------------------------------------------


@case
def pure_print_side_effect_runs_at_trace_time(jax: Any, jnp: Any, lax: Any) -> Any:
    executions: list[str] = []

    def impure_print_side_effect(x: Any) -> Any:
        executions.append(str(jax.typeof(x)))  # stands in for print()
        return x

    first = jax.jit(impure_print_side_effect)(4.0)
    second = jax.jit(impure_print_side_effect)(5.0)  # cached: no Python execution
    third = jax.jit(impure_print_side_effect)(jnp.array([5.0]))  # new type: retrace
    return first, second, third, executions


@case
def pure_global_value_captured_at_trace(jax: Any, jnp: Any, lax: Any) -> Any:
    state = {"g": 0.0}

    def impure_uses_globals(x: Any) -> Any:
        return x + state["g"]

    first = jax.jit(impure_uses_globals)(4.0)
    state["g"] = 10.0
    second = jax.jit(impure_uses_globals)(5.0)  # stale: still adds 0.0
    third = jax.jit(impure_uses_globals)(jnp.array([4.0]))  # retrace reads 10.0
    return first, second, third


@case
def pure_saved_global_is_traced(jax: Any, jnp: Any, lax: Any) -> Any:
    saved: list[Any] = []

    def impure_saves_global(x: Any) -> Any:
        saved.append(x)
        return x

    out = jax.jit(impure_saves_global)(4.0)
    return out, len(saved), isinstance(saved[0], jax.Array)


@case
def pure_internal_state_is_fine(jax: Any, jnp: Any, lax: Any) -> Any:
    def pure_uses_internal_state(x: Any) -> Any:
        state = dict(even=0, odd=0)
        for i in range(10):
            state["even" if i % 2 == 0 else "odd"] += x
        return state["even"] + state["odd"]

    return jax.jit(pure_uses_internal_state)(5.0)


# -- In-place updates ---------------------------------------------------------------------------


@case(raises=TypeError)
def inplace_setitem_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    jax_array[1, :] = 1.0
    return jax_array


@case
def inplace_iadd_rebinds(jax: Any, jnp: Any, lax: Any) -> Any:
    jax_array = jnp.array([10, 20])
    jax_array_new = jax_array
    jax_array_new += 10
    return jax_array_new, jax_array, jax_array_new is jax_array


@case
def inplace_at_set_row(jax: Any, jnp: Any, lax: Any) -> Any:
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    updated = jax_array.at[1, :].set(1.0)
    return updated, jax_array


@case
def inplace_at_add_strided(jax: Any, jnp: Any, lax: Any) -> Any:
    jax_array = jnp.ones((5, 6))
    return jax_array.at[::2, 3:].add(7.0)


@case
def inplace_at_update_under_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(lambda x, i: x.at[i].set(-1.0))
    x = jnp.arange(4.0)
    return f(x, 2), f(x, 7), x


# -- Using jax.jit with class methods -----------------------------------------------------------


@case(raises=TypeError)
def methods_jit_on_method_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    class CustomClass:
        def __init__(self, x: Any, mul: bool) -> None:
            self.x = x
            self.mul = mul

        @jax.jit
        def calc(self, y: Any) -> Any:
            if self.mul:
                return self.x * y
            return y

    return CustomClass(2, True).calc(3)


@case
def methods_jitted_helper(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit(static_argnums=0)
    def _calc(mul: Any, x: Any, y: Any) -> Any:
        if mul:
            return x * y
        return y

    class CustomClass:
        def __init__(self, x: Any, mul: bool) -> None:
            self.x = x
            self.mul = mul

        def calc(self, y: Any) -> Any:
            return _calc(self.mul, self.x, y)

    return CustomClass(2, True).calc(3), CustomClass(2, False).calc(3)


@case
def methods_static_self_default_hash_is_stale(jax: Any, jnp: Any, lax: Any) -> Any:
    class CustomClass:
        def __init__(self, x: Any, mul: bool) -> None:
            self.x = x
            self.mul = mul

        @jax.jit(static_argnums=0)
        def calc(self, y: Any) -> Any:
            if self.mul:
                return self.x * y
            return y

    c = CustomClass(2, True)
    first = c.calc(3)
    c.mul = False
    return first, c.calc(3)  # the cache is keyed on the unchanged identity hash


@case
def methods_static_self_content_hash(jax: Any, jnp: Any, lax: Any) -> Any:
    class CustomClass:
        def __init__(self, x: Any, mul: bool) -> None:
            self.x = x
            self.mul = mul

        @jax.jit(static_argnums=0)
        def calc(self, y: Any) -> Any:
            if self.mul:
                return self.x * y
            return y

        def __hash__(self) -> int:
            return hash((self.x, self.mul))

        def __eq__(self, other: object) -> bool:
            return (isinstance(other, CustomClass)
                    and (self.x, self.mul) == (other.x, other.mul))

    return CustomClass(2, True).calc(3), CustomClass(2, False).calc(3)


@case
def methods_class_as_pytree(jax: Any, jnp: Any, lax: Any) -> Any:
    class CustomClass:
        def __init__(self, x: Any, mul: bool) -> None:
            self.x = x
            self.mul = mul

        @jax.jit
        def calc(self, y: Any) -> Any:
            if self.mul:
                return self.x * y
            return y

        def _tree_flatten(self) -> Any:
            return (self.x,), {"mul": self.mul}

        @classmethod
        def _tree_unflatten(cls, aux_data: Any, children: Any) -> Any:
            return cls(*children, **aux_data)

    jax.tree_util.register_pytree_node(CustomClass, CustomClass._tree_flatten,
                                       CustomClass._tree_unflatten)
    c = CustomClass(2, True)
    first = c.calc(3)
    c.mul = False  # aux data is part of the cache key: the mutation is seen
    second = c.calc(3)
    third = CustomClass(jnp.array(2), True).calc(3)
    return first, second, third


# -- Out-of-bounds indexing ---------------------------------------------------------------------


@case
def oob_read_clamps_to_last(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.arange(10)[11], jnp.arange(10.0).at[11].get()


@case
def oob_get_fill_mode(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(10.0)
    return (x.at[11].get(mode="fill", fill_value=float("nan")),
            x.at[jnp.array([2, 11, -1])].get(mode="fill", fill_value=-7.0))


@case
def oob_update_skipped(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(5)
    return x.at[7].add(100), x.at[jnp.array([0, 9])].set(-1), x.at[7].set(1, mode="clip")


@case
def oob_nanargmin_all_nan(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.array([[np.nan, np.nan], [1.0, np.nan]])
    return jnp.nanargmin(x, axis=1), jnp.nanargmax(x, axis=1)


# -- Non-array inputs ---------------------------------------------------------------------------


@case
def non_array_inputs_raise(jax: Any, jnp: Any, lax: Any) -> Any:
    return [capture(jnp.sum, [1, 2, 3]), capture(jnp.sum, (1, 2, 3)),
            capture(jnp.mean, [1.0, 2.0]), capture(jnp.sin, [0.5])]


@case
def non_array_permissive_sum(jax: Any, jnp: Any, lax: Any) -> Any:
    def permissive_sum(x: Any) -> Any:
        return jnp.sum(jnp.array(x))

    x = list(range(10))
    return permissive_sum(x), jnp.sum(jnp.array(x)), str(jax.make_jaxpr(permissive_sum)(x))


# -- Dynamic shapes -----------------------------------------------------------------------------


def _nansum(jnp: Any) -> Any:
    def nansum(x: Any) -> Any:
        mask = ~jnp.isnan(x)
        return x[mask].sum()

    return nansum


_NAN_X = [1, 2, float("nan"), 3, 4]


@case
def dynamic_shapes_eager_mask(jax: Any, jnp: Any, lax: Any) -> Any:
    return _nansum(jnp)(jnp.array(_NAN_X))


@case(raises="NonConcreteBooleanIndexError")
def dynamic_shapes_mask_under_jit_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(_nansum(jnp))(jnp.array(_NAN_X))


@case
def dynamic_shapes_where_workaround(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def nansum_2(x: Any) -> Any:
        mask = ~jnp.isnan(x)
        return jnp.where(mask, x, 0).sum()

    return nansum_2(jnp.array(_NAN_X))


# -- Double (64-bit) precision and default dtypes -----------------------------------------------


@case
def x64_disabled_truncates_with_warning(jax: Any, jnp: Any, lax: Any) -> Any:
    out, cats = _warned(lambda: jnp.ones(3, dtype=jnp.float64))
    return out, out.dtype, cats


@case(x64=True)
def x64_enabled_keeps_float64(jax: Any, jnp: Any, lax: Any) -> Any:
    out = jnp.ones(3, dtype=jnp.float64)
    return out, out.dtype, bool(jax.config.jax_enable_x64)


@case
def default_dtypes_32bit(jax: Any, jnp: Any, lax: Any) -> Any:
    return repr(jnp.arange(5)), repr(jnp.zeros(5)), repr(jnp.ones(5, dtype=int))


@case(x64=True)
def default_dtypes_64bit(jax: Any, jnp: Any, lax: Any) -> Any:
    return repr(jnp.arange(5)), repr(jnp.zeros(5)), repr(jnp.ones(5, dtype=int))


@case
def default_dtypes_arange_float64_request(jax: Any, jnp: Any, lax: Any) -> Any:
    out, cats = _warned(lambda: jnp.arange(5, dtype="float64"))
    return repr(out), cats


# -- Miscellaneous divergences from NumPy -------------------------------------------------------


@case
def misc_unsafe_float_to_uint8_cast(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.arange(254.0, 258.0).astype("uint8")


@case
def misc_subnormal_flush_to_zero(jax: Any, jnp: Any, lax: Any) -> Any:
    subnormal = jnp.float32(1e-45)
    return repr(subnormal), subnormal + 0


# -- faq.rst ------------------------------------------------------------------------------------


@case
def faq_jit_uses_first_global_value(jax: Any, jnp: Any, lax: Any) -> Any:
    state = {"y": 0}
    inside: list[int] = []

    def impure_func(x: Any) -> Any:
        inside.append(state["y"])  # stands in for print("Inside:", y)
        return x + state["y"]

    eager = []
    for y in range(3):
        state["y"] = y
        eager.append(impure_func(y))
    eager_inside = list(inside)
    inside.clear()
    jitted = jax.jit(impure_func)
    compiled = []
    for y in range(3):
        state["y"] = y
        compiled.append(jitted(y))
    return eager, eager_inside, compiled, inside


@case(ulp=4)
def faq_numerics_eager_values(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.log(jnp.sqrt(np.pi)), jnp.log(jnp.exp(100.0))


@case
def jnp_constants_used_by_the_docs(jax: Any, jnp: Any, lax: Any) -> Any:
    # The docs write jnp.nan / jnp.pi; they are plain Python floats, as in NumPy.
    return jnp.nan, jnp.pi, jnp.inf, jnp.e, jnp.arange(10.0).at[11].get(mode="fill",
                                                                        fill_value=jnp.nan)


@case(ulp=2)
def faq_where_forward_values(jax: Any, jnp: Any, lax: Any) -> Any:
    def my_log(x: Any) -> Any:
        return jnp.where(x > 0.0, jnp.log(x), 0.0)

    def safe_log(x: Any) -> Any:
        return jnp.log(jnp.where(x > 0.0, x, 1.0))

    def my_log_or_y(x: Any, y: Any) -> Any:
        return jnp.where(x > 0.0, jnp.log(jnp.where(x > 0.0, x, 1.0)), y)

    xs = jnp.array([0.0, 0.5, 2.0])
    return my_log(0.0), safe_log(0.0), my_log(xs), safe_log(xs), my_log_or_y(xs, -1.0)


@case
def faq_step_function_forward(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    return (x > 0).astype(float)


@case(raises="TracerArrayConversionError")
def faq_tracer_to_numpy_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(lambda x: np.asarray(x) + 1)(jnp.arange(5))


# -- type_promotion.rst -------------------------------------------------------------------------


@case
def promotion_weak_python_scalar_keeps_int16(jax: Any, jnp: Any, lax: Any) -> Any:
    a = jnp.int16(1) + 1
    b = jnp.int16(1) + np.array(1)  # a NumPy array is strongly typed (int64 -> int32 here)
    return a, b


@case(x64=True)
def promotion_numpy_array_is_strong_x64(jax: Any, jnp: Any, lax: Any) -> Any:
    return jnp.int16(1) + 1, jnp.int16(1) + np.array(1)


@case
def promotion_int_with_float_prefers_float(jax: Any, jnp: Any, lax: Any) -> Any:
    pairs = [(jnp.int32(1), jnp.float16(1)), (jnp.uint8(1), jnp.bfloat16(1)),
             (jnp.int8(1), jnp.complex64(1)), (jnp.bool_(True), jnp.float16(1))]
    return [a + b for a, b in pairs]


@case
def promotion_bfloat16_with_float16(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jnp.bfloat16(1) + jnp.float16(1)
    return r, jnp.promote_types(jnp.bfloat16, jnp.float16), jnp.promote_types("bfloat16", "float16")


@case
def promotion_python_operator_dispatch(jax: Any, jnp: Any, lax: Any) -> Any:
    np_first = np.int16(1) + 1  # NumPy rules
    jnp_first = jnp.int16(1) + 1  # JAX rules
    mixed = np.int16(1) + 1 + jnp.int16(1)
    mixed2 = jnp.int16(1) + (np.int16(1) + 1)
    return (np_first.dtype, jnp_first, mixed, isinstance(mixed, jax.Array), mixed2,
            isinstance(mixed2, jax.Array))


@case
def promotion_weak_scalar_times_int8(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(5, dtype="int8")
    return 2 * x, jnp.int32(2) * x


@case
def promotion_weak_type_repr(jax: Any, jnp: Any, lax: Any) -> Any:
    return (repr(jnp.asarray(2)), repr(jnp.asarray(2, dtype="int32")), repr(jnp.asarray(2.5)),
            str(jax.typeof(jnp.asarray(2))), str(jax.typeof(jnp.asarray(2, dtype="int32"))))


@case
def promotion_strict_context_manager(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.float32(1)
    y = jnp.int32(1)
    with jax.numpy_dtype_promotion("strict"):
        mixed = capture(lambda: x + y)
        weak_ok = x + 1
    after = x + y  # back to standard promotion
    return mixed, weak_ok, after


@case
def promotion_strict_config_update(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.float32(1)
    y = jnp.int32(1)
    jax.config.update("jax_numpy_dtype_promotion", "strict")
    try:
        mixed = capture(lambda: x + y)
        weak_ok = x + 1
        explicit = x + y.astype(jnp.float32)
    finally:
        jax.config.update("jax_numpy_dtype_promotion", "standard")
    return mixed, weak_ok, explicit, x + y


# -- jep/9407-type-promotion.md -----------------------------------------------------------------


@case
def jep9407_int32_plus_float32(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jnp.int32(1) + jnp.float32(1)
    return r, r.dtype


@case
def jep9407_weak_int_keeps_array_width(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.zeros(1, dtype="int8")
    return x + 1, jnp.int8(0) + 1, x + 1000


@case(x64=True)
def jep9407_mixed_signed_unsigned(jax: Any, jnp: Any, lax: Any) -> Any:
    def one(name: str) -> Any:
        return jnp.ones((), dtype=name)

    pairs = [("int8", "uint8"), ("int16", "uint16"), ("int32", "uint32"), ("int64", "uint64"),
             ("uint8", "int64"), ("uint64", "float16"), ("int64", "float16"),
             ("float16", "bfloat16"), ("complex64", "float64")]
    return [one(a) + one(b) for a, b in pairs]


# The 18 types of the promotion tables: 15 dtypes plus Python int/float/complex (weak types).
_TABLE_TYPES: tuple[tuple[str, Any], ...] = (
    ("b", "bool"), ("u8", "uint8"), ("u16", "uint16"), ("u32", "uint32"), ("u64", "uint64"),
    ("i8", "int8"), ("i16", "int16"), ("i32", "int32"), ("i64", "int64"),
    ("bf16", "bfloat16"), ("f16", "float16"), ("f32", "float32"), ("f64", "float64"),
    ("c64", "complex64"), ("c128", "complex128"), ("i*", 0), ("f*", 0.0), ("c*", 0j),
)


def _dt(name: str) -> np.dtype[Any]:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


_CODE_OF_DTYPE = {_dt(v).name: k for k, v in _TABLE_TYPES if isinstance(v, str)}


def _table_arg(jax: Any, spec: Any) -> Any:
    if isinstance(spec, str):
        return jax.ShapeDtypeStruct((), _dt(spec))
    return spec  # a Python scalar: weakly typed


def _code(out: Any) -> str:
    if getattr(out, "weak_type", False):
        return f"{np.dtype(out.dtype).kind}*"
    name = str(np.dtype(out.dtype).name)
    return _CODE_OF_DTYPE.get(name, name)


def _promotion_table(op_name: str) -> Callable[[Any, Any, Any], Any]:
    def table(jax: Any, jnp: Any, lax: Any) -> Any:
        op = jnp.add if op_name == "jnp" else lax.add
        rows: dict[str, Any] = {}
        for code_a, a in _TABLE_TYPES:
            row = []
            for _, b in _TABLE_TYPES:
                res = capture(jax.eval_shape, op, _table_arg(jax, a), _table_arg(jax, b))
                row.append(res if not hasattr(res, "dtype") else _code(res))
            rows[code_a] = row
        return rows

    return table


# The appendix tables of JEP 9407 (computed with shapes only: no compilation needed).
register_case("jep9407_table_jnp_add_x64", _promotion_table("jnp"), module=__name__, x64=True)
register_case("jep9407_table_jnp_add_x32", _promotion_table("jnp"), module=__name__)
register_case("jep9407_table_lax_add_x64", _promotion_table("lax"), module=__name__, x64=True)


@case(x64=True)
def jep9407_lattice_is_associative_and_commutative(jax: Any, jnp: Any, lax: Any) -> Any:
    names = [_dt(v) for _, v in _TABLE_TYPES if isinstance(v, str)]
    bad: list[str] = []
    for a in names:
        for b in names:
            ab = jnp.promote_types(a, b)
            if ab != jnp.promote_types(b, a):
                bad.append(f"{a}+{b} not commutative")
            for c in names:
                if jnp.promote_types(ab, c) != jnp.promote_types(a, jnp.promote_types(b, c)):
                    bad.append(f"({a}+{b})+{c} not associative")
    return bad


# -- rank_promotion_warning.rst -----------------------------------------------------------------


@case
def rank_promotion_allowed_by_default(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(12).reshape(4, 3)
    y = jnp.array([0, 1, 0])
    return x + y


@case
def rank_promotion_raise_and_warn(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(12).reshape(4, 3)
    y = jnp.array([0, 1, 0])
    with jax.numpy_rank_promotion("raise"):
        raised = capture(lambda: x + y)
        same_rank = x + y.reshape(1, 3)
    with jax.numpy_rank_promotion("warn"):
        # JAX warns only on the first occurrence per process, so only the value is compared.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warned = x * y
    return raised, same_rank, warned


@case
def rank_promotion_config_update(jax: Any, jnp: Any, lax: Any) -> Any:
    x = jnp.arange(12).reshape(4, 3)
    y = jnp.array([0, 1, 0])
    jax.config.update("jax_numpy_rank_promotion", "raise")
    try:
        raised = capture(lambda: x + y)
        same_rank = x - y.reshape(1, 3)
    finally:
        jax.config.update("jax_numpy_rank_promotion", "allow")
    return raised, same_rank, x + y
