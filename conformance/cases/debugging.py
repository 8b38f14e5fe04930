"""Debugging aids: name stacks and source lines in printed jaxprs,
``print_saved_residuals`` lines, NaN/Inf checks (``jax_debug_nans``,
``jax_debug_infs``) and ``ensure_compile_time_eval``."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from importlib import import_module
from typing import Any

from conformance.registry import case


def _scoped(jax: Any, jnp: Any) -> Callable[[Any], Any]:
    def h(x: Any) -> Any:
        with jax.named_scope("outer"):
            y = jnp.sin(x) * x
            with jax.named_scope("deeper"):
                y = jnp.exp(y)
        return jax.named_call(jnp.cos, name="inner")(y)
    return h


@case(tags=("debugging", "jaxpr"))
def name_stacks_under_transformations(jax: Any, jnp: Any, lax: Any) -> Any:
    h = _scoped(jax, jnp)

    def printed(f: Callable[..., Any], *args: Any) -> str:
        jaxpr = jax.make_jaxpr(f)(*args)
        return [str(jaxpr.pretty_print(name_stack=True)),
                str(jaxpr.pretty_print(name_stack=True, source_info=True))]
    return [printed(h, 1.0), printed(jax.jit(h), 1.0), printed(jax.grad(h), 1.0),
            printed(jax.vmap(h), jnp.ones(2))]


@case(tags=("debugging",))
def name_stack_of_each_equation(jax: Any, jnp: Any, lax: Any) -> Any:
    jaxpr = jax.make_jaxpr(_scoped(jax, jnp))(1.0)
    return [str(e.source_info.name_stack) for e in jaxpr.eqns]


@case(tags=("debugging", "autodiff"))
def saved_residual_lines(jax: Any, jnp: Any, lax: Any) -> Any:
    ad_checkpoint = import_module(jax.__name__ + ".ad_checkpoint")

    def layer(w: Any, x: Any) -> Any:
        return jnp.sin(jnp.dot(w, x))

    def net(w1: Any, w2: Any, x: Any) -> Any:
        return jnp.sum(layer(w2, layer(w1, x)))

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ad_checkpoint.print_saved_residuals(net, jnp.ones((5, 4)), jnp.ones((3, 5)),
                                            jnp.ones(4))
        ad_checkpoint.print_saved_residuals(
            jax.checkpoint(net, policy=jax.checkpoint_policies.dots_saveable),
            jnp.ones((5, 4)), jnp.ones((3, 5)), jnp.ones(4))
    return out.getvalue()


@contextlib.contextmanager
def _flag(jax: Any, name: str) -> Iterator[None]:
    old = getattr(jax.config, name)
    jax.config.update(name, True)
    try:
        yield
    finally:
        jax.config.update(name, old)


def _error_text(run: Callable[[], Any]) -> Any:
    """The exception's class and first line, or the value when nothing is raised."""
    try:
        return ["returned", run()]
    except FloatingPointError as e:
        return [type(e).__name__, str(e).splitlines()[0]]


@case(tags=("debugging", "errors"))
def debug_nans_names_the_operation(jax: Any, jnp: Any, lax: Any) -> Any:
    with _flag(jax, "jax_debug_nans"):
        # (A jitted function is left out: whether JAX's de-optimized re-run
        # finds the NaN depends on what that process compiled before.)
        return [_error_text(lambda: jnp.log(-1.0)),
                _error_text(lambda: jax.grad(lambda x: jnp.sqrt(x))(0.0)),
                _error_text(lambda: jnp.log(2.0))]


@case(tags=("debugging", "errors"))
def debug_infs_names_the_operation(jax: Any, jnp: Any, lax: Any) -> Any:
    with _flag(jax, "jax_debug_infs"):
        return [_error_text(lambda: jnp.log(0.0)),
                _error_text(lambda: jax.jit(lambda x: 1.0 / x)(0.0)),
                _error_text(lambda: jnp.exp(1.0))]


@case(tags=("debugging",))
def compile_time_eval_gives_concrete_values(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def f(x: Any) -> Any:
        with jax.ensure_compile_time_eval():
            n = jnp.sum(jnp.arange(4))
            shape = (int(n),)
        return jnp.zeros(shape) + x
    return f(1.0)
