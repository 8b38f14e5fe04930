"""Small public names against JAX run live: ``ad_checkpoint``'s policy answers and
``checkpoint_name_fwd``, ``debug``'s effect classes, ``sharding.ManualAxisType`` and
``stages.CompilerOptions``/``Wrapped``."""

from __future__ import annotations

from typing import Any

import jax
import jax.ad_checkpoint
import numpy as np

import spec
import spec.ad_checkpoint


def _f(ad: Any, np_: Any) -> Any:
    def f(x: Any) -> Any:
        y = ad.checkpoint_name_fwd(np_.sin(x), "a")
        return np_.sum(np_.cos(ad.checkpoint_name(y * 2, "b")))
    return f


def test_policy_answers_and_named_values() -> None:
    x = np.arange(3, dtype=np.float32)
    for answer in ("Recompute", "Saveable"):
        def policies(ad: Any, answer: str = answer) -> Any:
            return lambda prim, *_, **params: (getattr(ad, answer)
                                               if prim is ad.name_p else ad.Recompute)
        ours = spec.make_jaxpr(spec.grad(spec.checkpoint(
            _f(spec.ad_checkpoint, spec.numpy), policy=policies(spec.ad_checkpoint))))(x)
        theirs = jax.make_jaxpr(jax.grad(jax.checkpoint(
            _f(jax.ad_checkpoint, jax.numpy), policy=policies(jax.ad_checkpoint))))(x)
        assert str(ours) == str(theirs)
    offload = spec.ad_checkpoint.Offloadable(src="device", dst="pinned_host")
    assert (offload.src, offload.dst) == tuple(jax.ad_checkpoint.Offloadable("device",
                                                                             "pinned_host"))
    assert spec.ad_checkpoint.name_p.name == jax.ad_checkpoint.name_p.name


def test_debug_effects_types_and_stages_names() -> None:
    def g(dbg: Any) -> Any:
        return lambda x: (dbg.print("{}", x), dbg.print("{}", x, ordered=True))
    ours = spec.make_jaxpr(g(spec.debug))(1.0).effects
    theirs = jax.make_jaxpr(g(jax.debug))(1.0).effects
    assert sorted(type(e).__name__ for e in ours) == sorted(type(e).__name__ for e in theirs)
    assert {type(e) for e in ours} == {spec.debug.DebugEffect, spec.debug.OrderedDebugEffect}
    m = spec.sharding.ManualAxisType(varying=frozenset({"i"}))
    t = jax.sharding.ManualAxisType(varying=frozenset({"i"}))
    assert (m.varying, m.unreduced, m.reduced, m.unreduced_kind) == (
        t.varying, t.unreduced, t.reduced, t.unreduced_kind)
    assert spec.stages.CompilerOptions == jax.stages.CompilerOptions
    assert {"lower", "trace"} <= set(dir(spec.stages.Wrapped))
    jitted = spec.jit(lambda x: x)
    assert all(callable(getattr(jitted, n)) for n in ("lower", "trace"))
