"""Traced / Lowered / Compiled and export, each behaviour run on spec and on
JAX in the same test."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import export as jexport

import spec
import spec.numpy as sjnp
from spec import export as sexport
from tests.support.pair import class_and_message

F32 = np.float32


def both(build: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    """The same program built on spec and on JAX."""
    return build(spec, sjnp), build(jax, jjnp)




def test_static_argument_through_trace_lower_compile() -> None:
    def build(m: Any, _: Any) -> Any:
        return m.jit(lambda a, b: a * 2 + b, static_argnums=0).trace(7, 8).lower().compile()
    s, j = both(build)
    assert int(s(5)) == int(j(5))
    assert s.in_tree == spec.tree_util.tree_structure(((0,), {}))
    assert str(j.in_tree) == "PyTreeDef(((*,), {}))"
    (sinfo,), _ = s.args_info
    (jinfo,), _ = j.args_info
    assert (sinfo.shape, sinfo.dtype, sinfo.donated) == (jinfo.shape, jinfo.dtype, jinfo.donated)


def _matmul_exp(m: Any, jnp: Any) -> Any:
    f = m.jit(lambda x, y: jnp.exp(x) @ y)
    return f.lower(m.ShapeDtypeStruct((2, 3), F32), m.ShapeDtypeStruct((3, 4), F32)).compile()


@pytest.fixture(scope="module")
def matmul() -> tuple[Any, Any]:
    return both(_matmul_exp)


def test_cost_analysis_counts(matmul: tuple[Any, Any]) -> None:
    s, j = matmul
    scost, jcost = s.cost_analysis(), j.cost_analysis()
    for key in ("flops", "transcendentals", "bytes accessed"):
        assert scost[key] == jcost[key], key

    def add(m: Any, jnp: Any) -> Any:
        return m.jit(lambda x: x + x).lower(jnp.ones(3)).cost_analysis()
    sadd, jadd = both(add)
    assert sadd["flops"] == jadd["flops"]
    assert sadd["bytes accessed"] == jadd["bytes accessed"]
    assert ("transcendentals" in sadd) == ("transcendentals" in jadd)


_COST_PROGRAMS = {
    "sum": lambda jnp: jnp.sum,
    "tanh": lambda jnp: jnp.tanh,
    "max_scalar": lambda jnp: lambda x: jnp.maximum(x, 0.0),
    "reshape": lambda jnp: lambda x: x.reshape(12),
    "sqrt": lambda jnp: jnp.sqrt,
}


@pytest.mark.parametrize("name", sorted(_COST_PROGRAMS))
def test_cost_analysis_single_equation(name: str) -> None:
    x = np.ones((3, 4), F32)

    def cost(m: Any, jnp: Any) -> Any:
        return m.jit(_COST_PROGRAMS[name](jnp)).lower(x).cost_analysis()
    s, j = both(cost)
    for key in ("flops", "transcendentals", "bytes accessed"):
        assert s.get(key) == j.get(key), key


def test_memory_analysis_sizes(matmul: tuple[Any, Any]) -> None:
    s, j = matmul
    sm, jm = s.memory_analysis(), j.memory_analysis()
    for name in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes"):
        assert getattr(sm, name) == getattr(jm, name), name
    assert sm.temp_size_in_bytes == 0 and hasattr(jm, "temp_size_in_bytes")
    assert hasattr(sm, "generated_code_size_in_bytes")


def test_compiled_runs_and_checks_types(matmul: tuple[Any, Any]) -> None:
    s, j = matmul
    x = np.arange(6, dtype=F32).reshape(2, 3) / 6
    y = np.arange(12, dtype=F32).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(s(x, y)), np.asarray(j(x, y)), rtol=1e-6)
    bad = np.ones((3, 5), F32)
    assert class_and_message(lambda: s(x, bad)) == class_and_message(lambda: j(x, bad))


@pytest.mark.parametrize("args", [
    lambda: (np.ones((2, 3), F32),),
    lambda: ((np.ones((2, 3), F32),), np.ones((3, 4), F32)),
])
def test_compiled_checks_structure(matmul: tuple[Any, Any], args: Callable[[], Any]) -> None:
    s, j = matmul
    assert class_and_message(lambda: s(*args())) == class_and_message(lambda: j(*args()))


@pytest.mark.parametrize("transform", ["grad", "jit", "vmap"])
def test_compiled_refuses_transformations(transform: str) -> None:
    def build(m: Any, jnp: Any) -> Any:
        compiled = m.jit(lambda x: x * 2.0).lower(1.0).compile()
        arg = jnp.ones(3) if transform == "vmap" else jnp.ones(())
        return lambda: getattr(m, transform)(compiled)(arg)
    s, j = both(build)
    (scls, smsg), (jcls, jmsg) = class_and_message(s), class_and_message(j)
    assert scls is jcls is TypeError
    prefix = "Cannot apply JAX transformations to a function lowered and compiled"
    assert smsg.startswith(prefix) and jmsg.startswith(prefix)
    assert smsg.split("Tracer type")[0] == jmsg.split("Tracer type")[0]


@pytest.mark.parametrize("weak", [False, True])
def test_compiled_result_keeps_compiled_weak_type(weak: bool) -> None:
    def build(m: Any, _: Any) -> Any:
        compiled = m.jit(lambda x: x * 2).lower(m.ShapeDtypeStruct((), F32, weak_type=weak))
        return compiled.compile()
    s, j = both(build)
    for arg in (3.0, np.float32(3)):
        sout, jout = s(arg), j(arg)
        assert sout.dtype == jout.dtype and float(sout) == float(jout)
        assert sout.aval.weak_type == jout.aval.weak_type


def test_donated_argument_info() -> None:
    def build(m: Any, _: Any) -> Any:
        f = m.jit(lambda x, y: (x, y), donate_argnums=0)
        return f.lower(np.ones(2, F32), {"a": np.ones(2, F32)}).args_info
    s, j = both(build)
    sflat = [i.donated for i in spec.tree_util.tree_leaves(s)]
    jflat = [i.donated for i in jax.tree_util.tree_leaves(j)]
    assert sflat == jflat == [True, False]


_DONATIONS = [  # (function, donate_argnums, number of arguments)
    (lambda a: a * 2, (0,), 1), (lambda a: a.sum(), (0,), 1),
    (lambda a, b: (b * 2, a + 1.0), (0,), 2), (lambda a, b: a * 2, (0,), 2),
    (lambda a: a.astype(np.int32), (0,), 1), (lambda a, b: (a * b, a - b), (0, 1), 2)]


def test_donations_and_unused_arguments_lower_as_jax() -> None:
    """Donated arguments alias the results of their type
    (``tf.aliasing_output``), else donate a buffer of their size
    (``jax.buffer_donor``), else warn as JAX warns; unused arguments are
    left out of the module."""
    import warnings
    from tests.lowering.xla_run import canonical
    x = np.ones(4, F32)
    for fn, donate, n in _DONATIONS:
        texts, warned = [], []
        for m in (spec, jax):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                texts.append(canonical(m.jit(fn, donate_argnums=donate).lower(*[x] * n).as_text()))
            warned.append([str(w.message) for w in caught if "donated" in str(w.message)])
        assert texts[0] == texts[1], (donate, n)
        assert warned[0] == warned[1]


def test_unknown_dialect() -> None:
    def build(m: Any, _: Any) -> Any:
        return lambda: m.jit(lambda x: x).lower(1.0).as_text(dialect="foo")
    s, j = both(build)
    assert class_and_message(s) == class_and_message(j)

    def ir(m: Any, _: Any) -> Any:
        return lambda: m.jit(lambda x: x).lower(1.0).compiler_ir("foo")
    s, j = both(ir)
    assert class_and_message(s) == class_and_message(j)


def test_compiler_ir_is_the_module() -> None:
    """``compiler_ir()`` is the text of JAX's MLIR module and
    ``compiler_ir("hlo")`` the HLO text of JAX's XLA computation."""
    from tests.lowering.xla_run import canonical, hlo_renumbered
    s, j = both(lambda m, jnp: m.jit(lambda x: jnp.sin(x) * 2).lower(np.ones(3, F32)))
    assert canonical(s.compiler_ir()) == canonical(str(j.compiler_ir()))
    assert hlo_renumbered(s.compiler_ir("hlo")) == hlo_renumbered(j.as_text("hlo"))


def test_partial_is_named_after_its_function() -> None:
    """A jitted ``functools.partial`` names the module and the jit equation after the
    function it wraps (JAX's ``jax_to_ir`` lowers such partials)."""
    import functools

    def scaled(x: Any, z: Any) -> Any:
        return x / z

    def build(m: Any, _: Any) -> Any:
        f = functools.partial(scaled, z=2.0)
        return (m.jit(f).lower(np.ones(2, F32)).as_text().splitlines()[0],
                str(m.make_jaxpr(m.jit(f))(np.ones(2, F32))))
    s, j = both(build)
    assert s == j and "jit_scaled" in s[0]


def test_traced_and_lowered_attributes() -> None:
    def build(m: Any, _: Any) -> Any:
        def step(x: Any, y: Any) -> Any:
            return {"sum": x + y}
        return m.jit(step).trace(np.ones(2, F32), 1.0)
    s, j = both(build)
    assert s.fun_name == j.fun_name == "step"
    sl, jl = s.lower(), j.lower()
    assert str(sl.out_tree) == str(jl.out_tree)
    assert [(a.shape, a.dtype) for a in spec.tree_util.tree_leaves(sl.out_info)] == \
        [(a.shape, a.dtype) for a in jax.tree_util.tree_leaves(jl.out_info)]
    assert sl.in_tree.num_leaves == jl.in_tree.num_leaves == 2


def test_export_round_trip() -> None:
    def build(m: Any, exp: Any) -> Any:
        return exp.export(m.jit(lambda x, y: x * y))(m.ShapeDtypeStruct((3,), F32), 2.0)
    s = build(spec, sexport)
    j = build(jax, jexport)
    assert s.fun_name == j.fun_name
    assert [(a.shape, a.dtype, a.weak_type) for a in s.in_avals] == \
        [(a.shape, a.dtype, a.weak_type) for a in j.in_avals]
    assert [(a.shape, a.dtype) for a in s.out_avals] == [(a.shape, a.dtype) for a in j.out_avals]
    assert str(s.in_tree) == str(j.in_tree) and str(s.out_tree) == str(j.out_tree)
    x = np.arange(3, dtype=F32)
    np.testing.assert_array_equal(np.asarray(s.call(x, 3.0)), np.asarray(j.call(x, 3.0)))
    bad = np.ones(4, F32)
    assert class_and_message(lambda: s.call(bad, 3.0)) == \
        class_and_message(lambda: j.call(bad, 3.0))
    assert isinstance(s.mlir_module(), str)


@pytest.mark.skipif(importlib.util.find_spec("flatbuffers") is not None,
                    reason="JAX serializes with flatbuffers installed")
def test_serialization_without_flatbuffers_is_jax_s_error() -> None:
    s = sexport.export(spec.jit(lambda x: x * 2))(np.ones(3, F32))
    j = jexport.export(jax.jit(lambda x: x * 2))(np.ones(3, F32))
    assert class_and_message(s.serialize) == class_and_message(j.serialize)
    assert class_and_message(lambda: sexport.deserialize(bytearray(b"0"))) == class_and_message(
        lambda: jexport.deserialize(bytearray(b"0")))


def test_export_module_constants_are_jax_s() -> None:
    assert sexport.default_export_platform() == jexport.default_export_platform()
    for name in ("minimum_supported_calling_convention_version",
                 "maximum_supported_calling_convention_version"):
        assert getattr(sexport, name) == getattr(jexport, name)


def _export_fields(m: Any, exp: Any, **jit_kw: Any) -> Any:
    def f(x: Any, y: Any, z: Any) -> Any:  # (y unused: kept only with keep_unused)
        return x * z, {"a": z}
    return exp.export(m.jit(f, **jit_kw))(
        m.ShapeDtypeStruct((3,), F32), 1.0, m.ShapeDtypeStruct((3,), F32))


_FIELDS = ("fun_name", "in_shardings_hlo", "out_shardings_hlo", "nr_devices", "platforms",
           "ordered_effects", "unordered_effects", "disabled_safety_checks",
           "calling_convention_version", "module_kept_var_idx", "uses_global_constants")


@pytest.mark.parametrize("keep_unused", [False, True])
def test_export_fields_are_jax_s(keep_unused: bool) -> None:
    """JAX's descriptive fields of an Exported, and its module: the lowered
    module with ``jax.uses_shape_polymorphism = false`` (compared without
    locations, which name frames JAX records and spec does not)."""
    from tests.lowering.xla_run import parsed
    s = _export_fields(spec, sexport, keep_unused=keep_unused)
    j = _export_fields(jax, jexport, keep_unused=keep_unused)
    assert {k: getattr(s, k) for k in _FIELDS} == {k: getattr(j, k) for k in _FIELDS}
    assert s.in_shardings_jax() == tuple(j.in_shardings_jax())
    assert s.out_shardings_jax(None) == tuple(j.out_shardings_jax(None))
    assert str(s) == str(j)
    assert parsed(s.mlir_module()) == parsed(j.mlir_module())
    assert 'loc("jit(f)/mul"' in s.mlir_module()


def test_export_refuses_host_callbacks_as_jax() -> None:
    def build(m: Any, exp: Any) -> Callable[[], Any]:
        def f(x: Any) -> Any:
            m.debug.callback(lambda v: None, x)
            return x + 1
        return lambda: exp.export(m.jit(f))(m.ShapeDtypeStruct((3,), F32))
    assert class_and_message(build(spec, sexport)) == class_and_message(build(jax, jexport))


def _multi_platform(m: Any, exp: Any, jnp: Any) -> Any:
    def f(a: Any, b: Any, c: Any) -> Any:  # (c unused; b a private function's operand)
        return jnp.sin(a) + m.jit(lambda u, v: u * v)(a, b)
    return exp.export(m.jit(f, donate_argnums=0), platforms=("cuda", "cpu"))(
        np.ones(3, F32), np.ones(3, F32), 1.0)


def test_export_for_several_platforms_is_jax_s() -> None:
    """Exported for several platforms, the CPU among them: the module takes
    the platform index first (a global constant, so it declares shape
    polymorphism), the fields are JAX's and the call runs on the CPU."""
    from tests.lowering.xla_run import parsed
    s, j = _multi_platform(spec, sexport, sjnp), _multi_platform(jax, jexport, jjnp)
    assert {k: getattr(s, k) for k in _FIELDS} == {k: getattr(j, k) for k in _FIELDS}
    assert s.platforms == ("cuda", "cpu") and s.uses_global_constants
    assert parsed(s.mlir_module()) == parsed(j.mlir_module())
    x = np.linspace(0, 1, 3, dtype=F32)
    np.testing.assert_array_equal(np.asarray(s.call(x, x, 2.0)), np.asarray(j.call(x, x, 2.0)))


def test_export_without_the_cpu_or_by_platform_is_refused() -> None:
    with pytest.raises(NotImplementedError, match=r"\('cuda', 'tpu'\)"):
        sexport.export(spec.jit(lambda x: x), platforms=("cuda", "tpu"))
    dependent = spec.jit(lambda x: spec.lax.platform_dependent(x, cpu=sjnp.sin, default=sjnp.cos))
    with pytest.raises(NotImplementedError, match="platform_index"):
        sexport.export(dependent, platforms=("cpu", "tpu"))(1.0)
    assert float(sexport.export(dependent)(1.0).call(1.0)) == float(np.sin(F32(1)))


def test_export_of_a_plain_function() -> None:
    def f(x: Any) -> Any:
        return x
    (scls, smsg), (jcls, jmsg) = (class_and_message(lambda: sexport.export(f)(1.0)),
                                  class_and_message(lambda: jexport.export(f)(1.0)))
    assert scls is jcls is ValueError
    assert smsg == jmsg


def test_compiled_formats_are_jax_s() -> None:
    """``input_formats`` (the dynamic arguments' tree) and ``output_formats``:
    row-major layouts on the one device, printed as JAX prints them."""
    def build(m: Any, numpy: Any) -> Any:
        return m.jit(lambda x, y, s: ((x @ y) * s, numpy.sum(x)), static_argnums=2).lower(
            np.ones((2, 3), F32), np.ones((3, 4, 1)[:2], F32), 2.0).compile()
    s, j = both(build)
    assert repr(s.input_formats) == repr(j.input_formats)
    assert repr(s.output_formats) == repr(j.output_formats)
    assert s.input_formats[0][0].layout.major_to_minor == (0, 1)


def _hlo_programs(jnp: Any, lax: Any) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    x, y = np.linspace(-1, 1, 6, dtype=F32).reshape(2, 3), np.ones((3, 4), F32)
    return {
        "elementwise": (lambda a: jnp.tanh(a) * 2 + jnp.exp(a) - a / 3, (x,)),
        "reductions": (lambda a: (a.sum(0), a.max(1), jnp.argmax(a, 1)), (x,)),
        "dot": (lambda a, b: (a @ b, lax.dot_general(a[None], b[None], (((2,), (1,)), ((0,), (0,))),
                                                     precision=lax.Precision.HIGHEST)), (x, y)),
        "while": (lambda a: lax.fori_loop(0, 3, lambda i, c: c * 2 + i, a), (x,)),
        "cond": (lambda p, a: lax.cond(p, jnp.sin, jnp.cos, a), (True, x)),
        "structural": (lambda a: (a.T.reshape(6)[1:4], jnp.where(a > 0, a, 0.).astype(jnp.int32),
                                  jnp.concatenate([a, a]), a[:, ::2], jnp.array([1, 2], np.uint8)),
                       (x,)),
        "windows_and_indexing": (lambda a, i: (jnp.sort(a, axis=1), jnp.cumsum(a, axis=1),
                                               jnp.pad(a, ((1, 2), (0, 1))), a[jnp.array([1, 0])],
                                               lax.dynamic_slice(a, (i, i), (1, 2))),
                                 (x, np.int32(1))),
        "prng": (lambda a: a + _library(jnp).random.uniform(
            _library(jnp).random.key(0), (3,)), (x[0],)),
        "scatter_and_conv": (_scatter_and_conv(lax), (
            np.arange(16, dtype=F32).reshape(4, 4), np.array([[0], [2]], np.int32),
            np.ones((2, 4), F32), np.linspace(0, 1, 12, dtype=F32).reshape(3, 1, 2, 2))),
    }


def _scatter_and_conv(lax: Any) -> Callable[..., Any]:
    dn = lax.ScatterDimensionNumbers((1,), (0,), (0,))

    def fn(x: Any, i: Any, u: Any, w: Any) -> Any:
        image = x[None, None]
        return (lax.scatter_add(x, i, u, dn, mode="fill"),
                lax.scatter(x, i, u, dn, indices_are_sorted=True, unique_indices=True,
                            mode="promise_in_bounds"),
                lax.conv_general_dilated(image, w, (1, 2), [(1, 0), (0, 1)], rhs_dilation=(2, 1)),
                lax.conv_general_dilated(
                    image.repeat(2, 1), w.reshape(3, 2, 2, 1)[:2].transpose(0, 3, 1, 2), (2, 1),
                    [(1, 1), (0, 1)], lhs_dilation=(2, 1), feature_group_count=2,
                    precision=lax.Precision.HIGHEST))
    return fn


def _library(jnp: Any) -> Any:
    """spec or JAX, whichever numpy module ``jnp`` is."""
    return spec if jnp is sjnp else jax


@pytest.mark.parametrize("name", ["elementwise", "reductions", "dot", "while", "cond",
                                  "structural", "windows_and_indexing", "prng",
                                  "scatter_and_conv"])
def test_lowered_hlo_text_is_xlas_conversion(name: str) -> None:
    """``as_text("hlo")`` is the HLO text XLA converts spec's StableHLO to
    (jaxlib's converter run on spec's module with locations), and JAX's text
    for the same program, up to instruction numbering. (argmax, sort, cumsum
    and scatter: spec's module locates the ops of their bodies otherwise than
    JAX's, at ``argmax`` rather than ``gt``, ``ne``, ..., and a scatter's
    region arguments nowhere, so only the opcodes agree with JAX's there;
    prng: spec emits JAX's threefry arithmetic, not its text, so only XLA's
    conversion is compared.)"""
    from spec import lax as slax
    from tests.lowering.xla_run import hlo_renumbered, xla_hlo_text
    fn, args = _hlo_programs(sjnp, slax)[name]
    jfn, _ = _hlo_programs(jjnp, jax.lax)[name]
    lowered = spec.jit(fn).lower(*args)
    ours = lowered.as_text("hlo")
    assert ours == lowered.as_text(dialect="hlo", debug_info=True)
    assert hlo_renumbered(ours) == hlo_renumbered(xla_hlo_text(lowered.as_text(debug_info=True)))
    if name == "prng":
        return  # spec emits JAX's threefry arithmetic in place of its private functions
    theirs = jax.jit(jfn).lower(*args).as_text("hlo")
    if name in ("reductions", "windows_and_indexing", "scatter_and_conv"):
        opcodes = re.compile(r"= \S+ ([\w-]+)\(")
        assert opcodes.findall(ours) == opcodes.findall(theirs)
        return
    assert hlo_renumbered(ours) == hlo_renumbered(theirs)


def _default_attribute_programs(jnp: Any, lax: Any) -> dict[str, tuple[Callable[..., Any],
                                                                      tuple[Any, ...]]]:
    """Ops whose attributes all hold their default values: unit strides and
    dilations, zero padding, DEFAULT precisions, an empty backend config."""
    lib = _library(jnp)
    x = np.linspace(-1, 1, 16, dtype=F32).reshape(4, 4)

    def pooled(a: Any) -> Any:
        return lax.reduce_window(a, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID").sum()
    return {"defaults": (lambda a, w: (
        lax.conv_general_dilated(a[None, None], w, (1, 1), "VALID"),
        lax.dot_general(a, a, (((1,), (0,)), ((), ()))), lib.grad(pooled)(a),
        jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(4))), (x, np.ones((2, 1, 2, 2), F32)))}


@pytest.mark.parametrize("name", ["dot", "windows_and_indexing", "scatter_and_conv",
                                  "defaults"])
def test_exported_module_leaves_out_default_attributes_as_jax(name: str) -> None:
    """``Exported.mlir_module()`` reads the module back from StableHLO's
    portable artifact, which leaves out attributes at their default values
    (a reduce_window's unit strides, a gather's unsorted indices, a
    convolution's window, DEFAULT precisions) and keeps the others."""
    from tests.lowering.xla_run import parsed
    programs = {**_hlo_programs(sjnp, spec.lax), **_default_attribute_programs(sjnp, spec.lax)}
    jprograms = {**_hlo_programs(jjnp, jax.lax), **_default_attribute_programs(jjnp, jax.lax)}
    (fn, args), (jfn, _) = programs[name], jprograms[name]
    ours = sexport.export(spec.jit(fn))(*args).mlir_module()
    assert parsed(ours) == parsed(jexport.export(jax.jit(jfn))(*args).mlir_module())
    # The lowered module itself writes every attribute, as JAX's does.
    lowered = spec.jit(fn).lower(*args).as_text()
    assert parsed(lowered) == parsed(jax.jit(jfn).lower(*args).as_text())
    assert ("stride = [1, 1]" in lowered or "indices_are_sorted = false" in lowered
            or "precision = [DEFAULT, DEFAULT]" in lowered)


def _open_dimension_programs(m: Any) -> list[Any]:
    """Lowered programs with dimensions left open to the partitioner: key
    arguments and results (their logical dimensions), and constraints with
    unconstrained dimensions on an Auto mesh (of one device, so that JAX
    runs in this process)."""
    P = m.sharding.PartitionSpec
    keys = m.random.wrap_key_data(np.arange(8, dtype=np.uint32).reshape(4, 2))
    mesh = m.make_mesh((1, 1), ("x", "y"), axis_types=(m.sharding.AxisType.Auto,) * 2)

    def constrained(a: Any) -> Any:
        b = m.lax.with_sharding_constraint(a * 2, m.sharding.NamedSharding(
            mesh, P(P.UNCONSTRAINED, "x")))
        return m.lax.with_sharding_constraint(b + 1, m.sharding.NamedSharding(
            mesh, P("y", P.UNCONSTRAINED)))
    return [m.jit(lambda k: (k[1:3], k.reshape(2, 2))).lower(keys),
            m.jit(constrained).lower(np.ones((4, 8), F32))]


def test_open_dimensions_text_is_jax_s() -> None:
    """Open dimensions (``{?}``) are written in the StableHLO and the HLO
    text as JAX writes them; the HLO sharding tiles by the axes named only
    (openness is the partitioner's freedom), as XLA converts it."""
    from tests.lowering.xla_run import canonical, hlo_renumbered, xla_hlo_text
    for ours, theirs in zip(_open_dimension_programs(spec), _open_dimension_programs(jax)):
        assert "{?}" in ours.as_text()
        assert canonical(ours.as_text()) == canonical(theirs.as_text())
        assert hlo_renumbered(ours.as_text("hlo")) == hlo_renumbered(theirs.as_text("hlo"))
        assert hlo_renumbered(ours.as_text("hlo")) == hlo_renumbered(
            xla_hlo_text(ours.as_text(debug_info=True)))


def _sharded_programs() -> dict[str, Any]:
    """Lowered programs whose modules carry Shardy shardings: explicit
    shardings (placed arguments, constraints, resharding, sharded results)
    and a shard_map with collectives."""
    from spec import lax as slax
    from spec.sharding import AxisType, PartitionSpec as P
    x = np.arange(32, dtype=F32).reshape(4, 8)
    mesh = spec.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    with spec.set_mesh(mesh):
        a, b, c = (spec.device_put(x, s) for s in (P("x", "y"), P(), P("y", None)))
        explicit = spec.jit(lambda a, b, c: (sjnp.sin(a) * 2, (a + b).sum(axis=0),
                                             spec.reshard(c, P(None, "x")), c.T)).lower(a, b, c)
        one_result = spec.jit(lambda a: sjnp.sin(a).sum(axis=1)).lower(a)
        # A dot left unreduced over "x", as a result and resharded.
        row, col = spec.device_put(x, P("y", "x")), spec.device_put(x.T, P("x", None))
        pending = spec.jit(lambda a, b: sjnp.dot(a, b, out_sharding=P("y", None, unreduced={"x"}))
                           ).lower(row, col)
        summed = spec.jit(lambda a, b: spec.reshard(sjnp.dot(
            a, b, out_sharding=P("y", None, unreduced={"x"})), P())).lower(row, col)
    auto = spec.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    open_dims = spec.jit(lambda a: spec.lax.with_sharding_constraint(
        a * 2, spec.sharding.NamedSharding(auto, P(P.UNCONSTRAINED, "x")))).lower(x)

    def body(a: Any, b: Any) -> Any:
        gathered = slax.all_gather(a, "y", axis=1, tiled=True)
        out = (slax.ppermute(a, "x", [(0, 1), (1, 0)])
               + slax.psum_scatter(gathered, "y", scatter_dimension=1, tiled=True)
               + slax.pmax(a, ("x", "y")) + slax.all_to_all(a, "y", 0, 0, tiled=True)
               + slax.axis_index("y"))
        # (split and concat dimensions differing: XLA reshapes and transposes)
        uneven = (slax.all_to_all(a, "y", 0, 1, tiled=True),
                  slax.all_to_all(a, "y", 1, 0, tiled=True))
        return out, b * 2, uneven
    manual = spec.jit(spec.shard_map(body, mesh=auto, in_specs=(P("x", "y"), P("y")),
                                     out_specs=(P("x", "y"), P("y"), P("x", "y")))
                      ).lower(x, x)
    return {"explicit": explicit, "one_result": one_result, "manual": manual,
            "open_dims": open_dims, "unreduced_result": pending, "unreduced": summed}


_UNREDUCED_CONSTRAINTS = '''module @m attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
  func.func public @main(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"z"}, {}], unreduced={"x"}> : tensor<4x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{}, {"y"}], unreduced={"x", "z"}> : tensor<4x8xf32>
    %2 = sdy.sharding_constraint %1 <@mesh, [{}, {}], unreduced={"y"}> : tensor<4x8xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{}, {}], unreduced={"x", "y", "z"}> : tensor<4x8xf32>
    return %3 : tensor<4x8xf32>
  }
}'''


def test_unreduced_hlo_shardings_are_xlas_conversion() -> None:
    """Unreduced axes tile after the dimensions' (``last_tile_dims=
    {unreduced, replicated}``), in device order dimensions' axes, unreduced
    axes, then the rest; a constraint to them has a side effect."""
    from spec._src.lowering.hlo_text import hlo_text
    from tests.lowering.xla_run import hlo_renumbered, xla_hlo_text
    assert hlo_renumbered(hlo_text(_UNREDUCED_CONSTRAINTS)) == hlo_renumbered(
        xla_hlo_text(_UNREDUCED_CONSTRAINTS))


def test_sharded_hlo_text_is_xlas_conversion(four_devices: None) -> None:
    """A sharded program's ``as_text("hlo")`` is XLA's conversion of its
    StableHLO: parameters with their HLO shardings (``devices=[2,2]<=[4]``,
    ``last_tile_dim_replicate``) and Shardy attributes, ``Sharding`` and
    ``FuncResultSharding`` custom calls, a manual computation's
    ``GlobalToLocalShape``/body call/``LocalToGlobalShape``, the
    collectives' replica groups over mesh axes, an all-to-all whose
    split and concat dimensions differ, and unreduced results."""
    from tests.lowering.xla_run import hlo_renumbered, xla_hlo_text
    for name, lowered in _sharded_programs().items():
        ours = lowered.as_text("hlo")
        theirs = xla_hlo_text(lowered.as_text(debug_info=True))
        assert hlo_renumbered(ours) == hlo_renumbered(theirs), name


def _constants_program(m: Any, jnp: Any) -> Callable[..., Any]:
    def f(a: Any) -> Any:
        b = a * 3.0 + 2.0
        c = m.lax.fori_loop(0, 3, lambda i, v: v * 2.0 + 5.0, b)
        return c * 3.0, jnp.sin(a) * 2.0, m.jit(lambda u: u * 7.0 + 3.0)(a)
    return f


@pytest.mark.parametrize("platforms", [None, ("cpu", "cuda")])
def test_exported_module_moves_constants_as_jax(platforms: Any) -> None:
    """JAX's export writes each function's constants once per value, the
    loop's included, at the top of the function, the last first."""
    from tests.lowering.xla_run import parsed
    x = np.ones(3, F32)
    s = sexport.export(spec.jit(_constants_program(spec, sjnp)), platforms=platforms)(x)
    j = jexport.export(jax.jit(_constants_program(jax, jjnp)), platforms=platforms)(x)
    assert parsed(s.mlir_module()) == parsed(j.mlir_module())
