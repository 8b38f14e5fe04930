"""``compiler_options`` of ``jit`` and of ``.compile()``: which names and values compile, and
the error (class and message) of each refused one, raised at compile time.

Every probe jits a new function: JAX caches compilations by the options' values, and equal
values of different types (``True`` and ``1``) would share an entry.
"""

from __future__ import annotations

from typing import Any

from conformance.registry import capture, case

# (name, value) probes: accepted ones, unknown names, the removed effort flags, values of the
# wrong type for each field type, strings parsed by the field's type, effort levels.
PROBES: tuple[tuple[str, Any], ...] = (
    ("xla_embed_ir_in_executable", True),
    ("xla_gpu_auto_spmd_partitioning_memory_budget_ratio", 0.5),
    ("not_a_real_flag", 1),
    ("exec_time_optimization_effort", 0.5),
    ("memory_fitting_effort", 0.5),
    ("xla_cpu_enable_fast_math", 1),
    ("xla_cpu_enable_fast_math", "true"),
    ("xla_cpu_enable_fast_math", "True"),
    ("xla_cpu_parallel_codegen_split_count", 1.0),
    ("xla_cpu_parallel_codegen_split_count", 2 ** 31),
    ("xla_cpu_parallel_codegen_split_count", " 2"),
    ("xla_gpu_autotune_max_solutions", 2 ** 40),
    ("xla_gpu_autotune_max_solutions", "1e3"),
    ("xla_gpu_autotune_gemm_rtol", 1),
    ("xla_gpu_autotune_gemm_rtol", 0.0),
    ("xla_gpu_autotune_gemm_rtol", "0"),
    ("xla_cpu_max_isa", 3),
    ("xla_cpu_scheduler_type", "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"),
    ("xla_cpu_scheduler_type", "NOT_A_SCHEDULER"),
    ("xla_cpu_scheduler_type", 1.5),
    ("xla_gpu_disable_async_collectives", "ALLREDUCE,ALLGATHER"),
    ("xla_gpu_disable_async_collectives", "ALLREDUCE,BOGUS"),
    ("xla_disable_hlo_passes", ""),
    ("xla_backend_extra_options", "a"),
    ("optimization_level", "O3"),
    ("optimization_level", "O4"),
    ("memory_fitting_level", "o1"),
    ("memory_fitting_level", 19),
)


def _one(jax: Any, name: str, value: Any) -> Any:
    return jax.jit(lambda x: x * 2.0 + 1.0, compiler_options={name: value})(1.5)


@case(tags=("compiler_options",))
def jit_option_probes(jax: Any, jnp: Any, lax: Any) -> Any:
    return [capture(_one, jax, name, value) for name, value in PROBES]


@case(tags=("compiler_options",))
def compile_option_probes(jax: Any, jnp: Any, lax: Any) -> Any:
    def at_compile(name: str, value: Any) -> Any:
        lowered = jax.jit(lambda x: x - 3.0).lower(2.0)
        return lowered.compile(compiler_options={name: value})(2.0)
    return [capture(at_compile, name, value) for name, value in PROBES]


@case(tags=("compiler_options",))
def jit_options_then_compile_options(jax: Any, jnp: Any, lax: Any) -> Any:
    """The jit's options are checked first; the compile call's override them by name."""
    def both(first: dict[str, Any], second: dict[str, Any]) -> Any:
        lowered = jax.jit(lambda x: x / 4.0, compiler_options=first).lower(2.0)
        return lowered.compile(compiler_options=second)(2.0)
    return [capture(both, {"bad_a": 1}, {"bad_b": 1}),
            capture(both, {"xla_cpu_enable_fast_math": 1}, {"xla_cpu_enable_fast_math": False}),
            capture(both, {"xla_cpu_enable_fast_math": False}, {"xla_cpu_enable_fast_math": 2})]


@case(tags=("compiler_options",))
def options_only_at_top_level(jax: Any, jnp: Any, lax: Any) -> Any:
    inner = jax.jit(lambda x: x * 3.0, compiler_options={"xla_cpu_enable_fast_math": False})
    return [capture(lambda: jax.jit(lambda x: inner(x) + 1.0)(1.0)),
            capture(lambda: inner(2.0)),
            capture(lambda: jax.grad(inner)(2.0)),
            capture(lambda: jax.vmap(inner)(jnp.ones(3)))]
