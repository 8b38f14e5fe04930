"""Programs a random-program fuzzer found spec rejecting where JAX computes,
and bad inputs spec rejected with another class than JAX.

Each row is a snippet run in real JAX and in spec in the same test: where
JAX returns, spec must return the same values, dtype, shape and weak type;
where JAX raises, spec must raise the same builtin class (or a subclass).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec import lax as slax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jlax = pytest.importorskip("jax.lax")

SNIPPETS: list[str] = [
    # A jit tracer's array methods are not hidden by its own attributes.
    "jax.jit(lambda x: x.var(axis=0))(jnp.arange(6.0).reshape(2, 3))",
    "jax.make_jaxpr(lambda x: x.var())(jnp.ones(3)) is not None",
    # Scatter into a rank-0 array (a window with no axes, one element).
    "jnp.float32(1.0).at[()].set(2.0)",
    "jnp.float32(1.0).at[...].set(2.0)",
    "jnp.float32(1.0).at[None].max(2.0)",
    "jnp.float32(1.0).at[()].add(2.5)",
    "jax.jit(lambda a: a.at[()].mul(3.0))(jnp.float32(2.0))",
    "jax.grad(lambda a: a.at[()].set(a * 3.0))(jnp.float32(2.0))",
    "jax.vmap(lambda a: a.at[()].add(1.0))(jnp.ones(3))",
    # Integer values have float0 tangents, zero whatever form they take.
    "jax.grad(lambda x: x.sum() + lax.clamp(1, jnp.argsort(x), 2).sum()"
    ".astype(jnp.float32))(jnp.arange(3.0))",
    "jax.grad(lambda x: jnp.argsort(x) @ x)(jnp.arange(3.0))",
    "jax.grad(lambda x: (jnp.argmax(x) * x).sum())(jnp.arange(3.0))",
    # The truth value of Python scalars is a weak bool.
    "jnp.logical_or(1.434, 3.0)",
    "jnp.logical_and(1.434, 0.0)",
    "jnp.logical_xor(1, 0.0)",
    "jnp.logical_not(2)",
    "jnp.logical_or(jnp.float32(1.0), 0.0)",
    "jnp.logical_and(jnp.ones(2), 1)",
    # Conversion to Python scalars takes rank-0 arrays only.
    "float(jnp.ones((1,)))",
    "int(jnp.ones((1,), jnp.int32))",
    "complex(jnp.ones((1,)))",
    "float(jnp.ones(()))",
    "bool(jnp.ones((1,)))",
    "jnp.ones((1,)).item()",
    # Exception classes of rejected arguments.
    "jnp.clip(None, 0, 1)",
    "lax.fori_loop(0, None, lambda i, c: c, 0.0)",
    "lax.fori_loop(None, 3, lambda i, c: c, 0.0)",
    "jax.vmap(lambda a: a)([1, 'a'])",
    "jax.vmap(lambda a: a)('ab')",
    "jax.vmap(lambda a: a)([1, 2])",
    "lax.scan(lambda c, a: (c, a), 0.0, [1, 'a'])",
    "lax.scan(lambda c, a: (c, a), 0.0, 'a')",
    "lax.scan(lambda c, a: (c, a), 0.0, 1)",
]


def _run(snippet: str, jax_mod: Any, jnp_mod: Any, lax_mod: Any) -> tuple[str, Any]:
    scope = {"jax": jax_mod, "jnp": jnp_mod, "lax": lax_mod, "np": np}
    try:
        return "value", eval(snippet, scope)  # noqa: S307 (the table above)
    except Exception as e:  # the class is what is compared
        return "error", e


def _same_value(ours: Any, theirs: Any) -> None:
    if isinstance(theirs, (bool, int, float, complex)):
        assert type(ours) is type(theirs) and ours == theirs
        return
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.weak_type == theirs.weak_type
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def _builtin_class(e: BaseException) -> type[BaseException]:
    """The nearest builtin class of JAX's exception (JAX's own classes,
    e.g. its TypeError subclasses, are compared by their builtin base)."""
    for cls in type(e).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_snippet_as_jax(snippet: str) -> None:
    kind, theirs = _run(snippet, jax, jnp, jlax)
    our_kind, ours = _run(snippet, spec, snp, slax)
    if kind == "error":
        assert our_kind == "error", f"JAX raised {theirs!r}, spec returned {ours!r}"
        assert isinstance(ours, _builtin_class(theirs)), (theirs, ours)
        return
    assert our_kind == "value", f"JAX returned {theirs!r}, spec raised {ours!r}"
    _same_value(ours, theirs)


def test_max_with_initial_sharded_gradient() -> None:
    """grad of a keepdims max with ``initial`` on an input sharded along
    axis 0: the value is JAX's (computed unsharded), the cotangent has the
    input's type, sharding included."""
    def f(lib: Any) -> Any:
        return lambda x: lib.max(x, axis=1, keepdims=True, initial=-lib.inf).sum()
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    want = jax.grad(f(jnp))(x)
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        mesh = spec.make_mesh((2,), ("x",), axis_types=(spec.sharding.AxisType.Explicit,))
        with spec.set_mesh(mesh):
            xs = spec.device_put(snp.asarray(x), spec.sharding.PartitionSpec("x"))
            got = spec.grad(f(snp))(xs)
            assert spec.typeof(got) == spec.typeof(xs)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_dynamic_slice_gradient_on_a_mesh() -> None:
    """grad of a dynamic slice of a replicated input under an explicit mesh: the
    zeros the cotangent is written into have the input's type, so the update is
    well typed, and the gradient is 2x on the rows read, 0 elsewhere."""
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    before = spec.config.jax_num_cpu_devices
    spec.config.update("jax_num_cpu_devices", 2)
    try:
        mesh = spec.make_mesh((2,), ("x",), axis_types=(spec.sharding.AxisType.Explicit,))
        with spec.set_mesh(mesh):
            xs = spec.device_put(snp.asarray(x), spec.sharding.PartitionSpec())
            got = spec.jit(spec.grad(
                lambda a: (slax.dynamic_slice_in_dim(a, 1, 2, axis=0) ** 2).sum()))(xs)
            assert spec.typeof(got) == spec.typeof(xs)
    finally:
        spec.config.update("jax_num_cpu_devices", before)
    np.testing.assert_array_equal(np.asarray(got), np.where(np.arange(3)[:, None] >= 1, 2 * x, 0))
