"""The small top-level modules of ``jax`` against JAX run live: ``jax.ops`` and ``jax.image``
(values, dtypes, jaxprs, errors), ``jax.core``, ``jax.dlpack``, ``jax.monitoring`` (the same
listener traffic), ``jax.distributed`` (its argument errors) and ``jax.lib``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp

_DATA = np.arange(12, dtype=np.float32).reshape(6, 2) - 5
_IDS = np.array([0, 2, 2, -1, 1, 7], np.int32)


def _segment_cases(ops: Any) -> list[Any]:
    """Every reduction on floats, ints and booleans (the ones JAX accepts), unsorted ids with
    a negative and an out-of-range one, and in buckets."""
    ints, bools = _DATA[:, 0].astype(np.int32), _DATA[:, 0] > 0
    out = []
    for name in ("segment_sum", "segment_prod", "segment_max", "segment_min"):
        fn = getattr(ops, name)
        out += [fn(_DATA, _IDS, 4), fn(ints, _IDS, 3),
                fn(_DATA, np.sort(_IDS) % 3, 3, bucket_size=4)]
        if name in ("segment_max", "segment_min"):
            out.append(fn(bools, _IDS, 3))
    return out


def test_segment_reductions_match_jax() -> None:
    # JAX's default num_segments is max(ids) + 1 = 8: spec's default against JAX given 8.
    theirs = jax.jit(lambda: [*_segment_cases(jax.ops), jax.ops.segment_max(_DATA, _IDS, 8)])()
    ours = [*_segment_cases(spec.ops), spec.ops.segment_max(_DATA, _IDS)]
    for o, t in zip(ours, theirs, strict=True):
        o, t = np.asarray(o), np.asarray(t)
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        np.testing.assert_allclose(o, t)
    with pytest.raises(TypeError):
        spec.ops.segment_sum(_DATA[:, 0] > 0, _IDS, 3)  # JAX's add refuses booleans too
    assert str(spec.make_jaxpr(lambda d, s: spec.ops.segment_sum(d, s, 4))(_DATA, _IDS)) == str(
        jax.make_jaxpr(lambda d, s: jax.ops.segment_sum(d, s, 4))(_DATA, _IDS))


def test_segment_errors_match_jax() -> None:
    for ops, jit in ((spec.ops, spec.jit), (jax.ops, jax.jit)):
        with pytest.raises(Exception) as traced:
            jit(lambda d, s: ops.segment_sum(d, s))(_DATA, _IDS)
        assert type(traced.value).__name__ == "ConcretizationTypeError"
        assert "`num_segments` argument" in str(traced.value)
        with pytest.raises(ValueError, match="non-negative"):
            ops.segment_sum(_DATA, _IDS, -1)
        with pytest.raises(TypeError):
            ops.segment_sum([1.0], _IDS[:1])


def test_core_names() -> None:
    seen = []

    def f(x: Any) -> Any:
        seen.append((isinstance(x, spec.core.Tracer), isinstance(spec.typeof(x),
                                                                  spec.core.ShapedArray)))
        with spec.core.eval_context():
            seen.append(isinstance(snp.ones(2), spec.core.Tracer))
        return snp.sin(x) * 2
    spec.jit(f)(1.0)
    assert seen == [(True, True), False]
    assert isinstance(spec.typeof(snp.ones(2)), spec.core.AbstractValue)
    closed = spec.make_jaxpr(lambda x: snp.sin(x) * 2)(np.float32(0.5))
    theirs = jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(np.float32(0.5))
    for kw in ({}, {"propagate_source_info": False}):
        np.testing.assert_array_equal(
            np.asarray(spec.core.eval_jaxpr(closed.jaxpr, closed.consts, np.float32(0.5), **kw)[0]),
            np.asarray(jax.core.eval_jaxpr(theirs.jaxpr, theirs.consts, np.float32(0.5), **kw)[0]))
    assert (spec.core.max_dim(2, 5), spec.core.min_dim(2, 5)) == (jax.core.max_dim(2, 5),
                                                                  jax.core.min_dim(2, 5))


def test_dlpack() -> None:
    for dt in ("bool", "int4", "int8", "uint64", "float8_e4m3fn", "float16", "bfloat16",
               "float64", "complex128"):
        assert spec.dlpack.is_supported_dtype(dt) == jax.dlpack.is_supported_dtype(dt), dt
    for mod in (spec.dlpack, jax.dlpack):
        with pytest.raises(TypeError, match="dtype=None"):
            mod.is_supported_dtype(None)
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    ours, theirs = spec.dlpack.from_dlpack(x), jax.dlpack.from_dlpack(x)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def _monitoring_traffic(mon: Any) -> list[tuple[Any, ...]]:
    """One program's use of jax.monitoring: what its listeners see."""
    log: list[tuple[Any, ...]] = []
    event = lambda e, **kw: log.append(("event", e, kw))  # noqa: E731
    duration = lambda e, d, **kw: log.append(("duration", e, d, kw))  # noqa: E731
    span = lambda e, a, b, **kw: log.append(("span", e, a, b, kw))  # noqa: E731
    scalar = lambda e, v, **kw: log.append(("scalar", e, v, kw))  # noqa: E731
    mon.register_event_listener(event)
    mon.register_event_listener(event)
    mon.register_event_duration_secs_listener(duration)
    mon.register_event_time_span_listener(span)
    mon.register_scalar_listener(scalar)
    mon.record_event("/e", step=1)
    mon.unregister_event_listener(event)
    mon.record_event("/e", step=2)
    mon.record_event_duration_secs("/d", 0.5, kind="x")
    mon.record_event_time_span("/s", 1.0, 2.0)
    mon.record_scalar("/v", 3)
    mon.clear_event_listeners()
    mon.record_event("/e")
    mon.record_scalar("/v", 4)  # scalar listeners outlive clear_event_listeners
    mon.unregister_scalar_listener(scalar)
    with pytest.raises(AssertionError):
        mon.unregister_event_listener(event)
    return log


def test_monitoring_listeners_see_jaxs_traffic() -> None:
    assert _monitoring_traffic(spec.monitoring) == _monitoring_traffic(jax.monitoring)


def test_distributed_argument_errors_and_state() -> None:
    # JAX's messages (its initialize raises them only before its backend starts).
    assert not spec.distributed.is_initialized() and not jax.distributed.is_initialized()
    with pytest.raises(ValueError, match="coordinator_address should be defined"):
        spec.distributed.initialize()
    with pytest.raises(ValueError, match="process_id < num_processes"):
        spec.distributed.initialize("localhost:1", 2, 3)
    with pytest.raises(RuntimeError, match="MPI"):
        spec.distributed.initialize("localhost:1", 2, 0)
    spec.distributed.initialize("localhost:1", 1, 0)
    try:
        assert spec.distributed.is_initialized()
        with pytest.raises(RuntimeError, match="only be called once"):
            spec.distributed.initialize("localhost:1", 1, 0)
    finally:
        spec.distributed.shutdown()
    assert not spec.distributed.is_initialized()
    assert [n for n in dir(spec.lib) if not n.startswith("_")] == [
        n for n in dir(jax.lib) if not n.startswith("_")]


def _resizes(image: Any, x: Any) -> Any:
    """Linear (antialiased, up one axis and down another, on floats and on integers), the
    edge-padded ``cubic-pytorch`` and nearest (x: the jnp namespace). Each resize costs JAX a
    compilation of about a second on a loaded CI machine: the other kernels (Lanczos, Keys'
    cubic, area) and scale_and_translate share these code paths."""
    img = x.asarray(np.random.default_rng(3).normal(size=(2, 5, 7)).astype(np.float32))
    out = [image.resize(img, (2, 8, 4), m, antialias=aa)
           for m, aa in (("linear", True), ("cubic-pytorch", False), ("nearest", True))]
    out.append(image.resize(x.arange(35, dtype=np.int32).reshape(5, 7), (3, 9), "linear"))
    return out


def test_image_resize_matches_jax() -> None:
    theirs = jax.jit(lambda: _resizes(jax.image, jnp))()
    for o, t in zip(_resizes(spec.image, snp), theirs, strict=True):
        o, t = np.asarray(o), np.asarray(t)
        assert (o.dtype, o.shape) == (t.dtype, t.shape)
        np.testing.assert_allclose(o, t, atol=3e-6)
    img = np.ones((5, 7), np.float32)
    assert str(spec.make_jaxpr(lambda v: spec.image.resize(v, (8, 7), "linear"))(img)) == str(
        jax.make_jaxpr(lambda v: jax.image.resize(v, (8, 7), "linear"))(img))
    for mod in (spec.image, jax.image):
        with pytest.raises(ValueError, match="Unknown resize method"):
            mod.resize(img, (8, 7), "bogus")
        with pytest.raises(ValueError, match="shape must have length"):
            mod.resize(img, (8,), "linear")
        with pytest.raises(ValueError, match="Nearest neighbor"):
            mod.scale_and_translate(img, (8, 7), (0,), np.ones(1), np.zeros(1), "nearest")
    assert [(m.name, m.value) for m in spec.image.ResizeMethod] == [
        (m.name, m.value) for m in jax.image.ResizeMethod]


def _user_context_traces(lib: Any) -> list[Any]:
    """What a jitted function sees of a user context across values, and when it is traced."""
    seen: list[Any] = []
    ctx = lib.make_user_context(default_value=1)

    @lib.jit
    def f(x: Any) -> Any:
        seen.append(("traced", ctx.value))
        return x * ctx.value

    seen.append(float(f(2.0)))
    with ctx(3):
        seen.append(float(f(2.0)))
        with ctx(4):
            seen.append((float(f(2.0)), ctx.value))
        seen.append(float(f(2.0)))
    ctx.set_global(5)
    seen += [float(f(2.0)), ctx.value, ctx.get_global()]
    return seen


def test_make_user_context_keys_the_jit_cache_as_jax() -> None:
    assert _user_context_traces(spec) == _user_context_traces(jax)
