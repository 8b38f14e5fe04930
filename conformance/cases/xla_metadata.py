"""XLA metadata (``jax.experimental.xla_metadata``): printed jaxprs of
``xla_metadata_call`` / ``xla_metadata_call2`` / ``must_fuse_call`` and of
value tags under jit, grad, vmap, jvp, vjp and linearize; values through
them; the context manager's values and re-tracing; the exception classes of
bad metadata."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from conformance.registry import capture, case, register_case

X = np.float32(0.7)
XS = np.linspace(-1.0, 1.0, 3, dtype=np.float32)


def _xm(jax: Any) -> Any:
    return importlib.import_module(jax.__name__ + ".experimental.xla_metadata")


def _block(jax: Any, jnp: Any, ad_metadata: Any = "same") -> Callable[..., Any]:
    return _xm(jax).xla_metadata_call2(lambda x: jnp.sin(x) * x, {"tag": "t", "n": 2},
                                       ad_metadata=ad_metadata)


# (name, transform of a function of one argument, argument)
_TRANSFORMS: list[tuple[str, Callable[[Any, Any], Any], Any]] = [
    ("plain", lambda jax, f: f, X),
    ("jit", lambda jax, f: jax.jit(f), X),
    ("grad", lambda jax, f: jax.grad(f), X),
    ("vmap", lambda jax, f: jax.vmap(f), XS),
    ("vmap_grad", lambda jax, f: jax.vmap(jax.grad(f)), XS),
    ("jvp", lambda jax, f: lambda x: jax.jvp(f, (x,), (x,)), X),
    ("vjp", lambda jax, f: lambda x: jax.vjp(f, x)[1](x), X),
    ("linearize", lambda jax, f: lambda x: jax.linearize(f, x)[1](x), X),
]


def _register() -> None:
    for ad in ("same", "drop", "retag"):
        for name, transform, arg in _TRANSFORMS:
            def run(jax: Any, jnp: Any, lax: Any, ad: str = ad, transform: Any = transform,
                    arg: Any = arg) -> Any:
                f = transform(jax, _block(jax, jnp, {"tag": "b"} if ad == "retag" else ad))
                return str(jax.make_jaxpr(f)(arg)), f(arg)
            register_case(f"call_{ad}_{name}", run, module=__name__,
                          tags=("xla_metadata", "jaxpr"), ulp=4)


_register()


@case(tags=("xla_metadata", "jaxpr"), ulp=4)
def value_tags_under_transforms(jax: Any, jnp: Any, lax: Any) -> Any:
    xm = _xm(jax)

    def g(x: Any) -> Any:
        return xm.set_xla_metadata({"a": jnp.sin(x), "b": x * 2.0}, breakpoint=True, n=1.5)

    loss = lambda x: jnp.sum(g(x)["a"] * g(x)["b"])  # noqa: E731
    return [str(jax.make_jaxpr(t)(XS)) for t in (g, jax.grad(loss), jax.vmap(g))] + \
        [str(jax.make_jaxpr(lambda x: jax.jvp(g, (x,), (x,)))(XS)), jax.grad(loss)(XS)]


@case(tags=("xla_metadata", "jaxpr"), ulp=4)
def must_fuse_and_context(jax: Any, jnp: Any, lax: Any) -> Any:
    xm = _xm(jax)

    def f(x: Any) -> Any:
        with xm.set_xla_metadata(k="v"), xm.fuse_limit():
            y = xm.must_fuse_call("1")(lambda v: jnp.sum(v * v))(x)
        return y + jnp.exp(x)

    return str(jax.make_jaxpr(f)(XS)), str(jax.make_jaxpr(jax.grad(lambda x: f(x).sum()))(XS)), \
        jax.jit(f)(XS)


@case(tags=("xla_metadata",))
def context_retraces_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    xm = _xm(jax)
    traces: list[int] = []

    @jax.jit
    def f(x: Any) -> Any:
        traces.append(1)
        return x + 1.0

    results = [f(X)]
    for k in ("a", "a", "b", None):
        with xm.set_xla_metadata(k=k):
            results.append(f(X))
    return results, len(traces)


@case(tags=("xla_metadata", "errors"))
def bad_metadata(jax: Any, jnp: Any, lax: Any) -> Any:
    xm = _xm(jax)
    return [
        capture(lambda: xm.xla_metadata_call(tag=[1])(jnp.sin)),
        capture(lambda: xm.xla_metadata_call2(jnp.sin, {"t": 1}, ad_metadata="keep")),
        capture(lambda: xm.xla_metadata_call2(jnp.sin, "tag")),
        capture(lambda: xm.xla_metadata_call2(3, {"t": 1})),
    ]
