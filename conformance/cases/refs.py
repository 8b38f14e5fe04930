"""Refs (mutable arrays): reads and writes eagerly and under jit,
their printed forms and errors, autodiff with refs (plumbing refs, gradient
refs bound with ``with_refs``, ``DontWant``), and vmap of ref functions."""

from __future__ import annotations

from typing import Any

from conformance.registry import capture, case


def _filled(jax: Any, jnp: Any) -> Any:
    return jax.new_ref(jnp.arange(12.).reshape(3, 4))


@case(tags=("refs",))
def reads_and_writes(jax: Any, jnp: Any, lax: Any) -> Any:
    x_ref = _filled(jax, jnp)
    row = x_ref[0]
    x_ref[1] = row
    val = x_ref[1, 2]
    x_ref[2, 3] = val
    col = x_ref[:, 1]
    x_ref[0, :3] = col
    vals = x_ref[jnp.array([0, 0, 1]), jnp.array([1, 2, 3])]
    x_ref[jnp.array([1, 2, 1]), jnp.array([0, 0, 1])] = vals
    jax.ref.addupdate(x_ref, (jnp.array([0, 0]), jnp.array([1, 1])), jnp.ones(2))
    old = jax.ref.swap(x_ref, (2, slice(None)), jnp.zeros(4))
    return [x_ref[...], old, repr(x_ref), str(jax.typeof(x_ref)), jax.freeze(x_ref)]


@case(tags=("refs",))
def jit_updates_in_place(jax: Any, jnp: Any, lax: Any) -> Any:
    x_ref = jax.new_ref(jnp.zeros(3))

    @jax.jit
    def f() -> None:
        x_ref[1] += 1.

    f()
    f()

    @jax.jit
    def g(r: Any, x: Any) -> Any:
        r[...] = r[...] * x
        return r[0]
    y = g(x_ref, 3.)
    return [x_ref[...], y, str(jax.make_jaxpr(g)(x_ref, 3.))]


@case(tags=("refs", "errors"))
def ref_errors(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.new_ref(jnp.zeros(3))
    return [capture(lambda: r.__setitem__(..., jnp.zeros(2))),
            capture(lambda: r.__setitem__(..., jnp.zeros(3, "int32"))),
            capture(lambda: r[5]),
            capture(lambda: jax.jit(lambda: r)()),
            capture(lambda: jax.jit(lambda a, b: a[...] + b[...])(r, r))]


@case(tags=("refs", "jaxpr"))
def ref_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any, i: Any) -> Any:
        r = jax.new_ref(x)
        r[i] = r[0] * 2.
        r[1:3] += x[:2]
        jax.ref.addupdate(r, jnp.array([0, 0]), jnp.ones(2))
        return jax.freeze(r)
    return str(jax.make_jaxpr(f)(jnp.arange(4.), 2))


@case(tags=("refs", "autodiff"))
def grad_of_pure_functions_using_refs(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.jit
    def pure2(x: Any) -> Any:
        ref = jax.new_ref(x)
        ref[...] = ref[...] + ref[...]
        return ref[...]

    def g(x: Any) -> Any:
        x_ref = jax.new_ref(0.)
        x_ref[...] = jnp.sin(x)
        return x_ref[...]

    def k(x: Any) -> Any:
        r = jax.new_ref(jnp.zeros(4))
        r[1] = x
        r[2:4] += x * jnp.ones(2)
        r[jnp.array([0, 0])] += x
        return (r[...] * jnp.arange(4.)).sum() + jax.freeze(r)[0]
    return [jax.grad(pure2)(3.0), str(jax.make_jaxpr(jax.grad(pure2))(3.0)),
            jax.grad(g)(1.0), str(jax.make_jaxpr(jax.grad(g))(1.0)),
            jax.grad(k)(2.), str(jax.make_jaxpr(jax.grad(k))(2.)),
            jax.jvp(pure2, (jnp.float32(1.5),), (jnp.float32(1.0),))]


@case(tags=("refs", "autodiff", "errors"))
def plumbing_refs(jax: Any, jnp: Any, lax: Any) -> Any:
    def err6(x: Any, some_plumbing_ref: Any) -> Any:
        y = x + x
        some_plumbing_ref[...] += y
        return y

    def foo(x: Any, some_plumbing_ref: Any) -> Any:
        y = x + x
        some_plumbing_ref[...] += jax.lax.stop_gradient(y)
        return y
    r = jax.new_ref(0.)
    return [capture(lambda: jax.grad(err6)(1., jax.new_ref(0.))), jax.grad(foo)(1., r), r[...],
            capture(lambda: jax.grad(lambda r: r[...] ** 2)(jax.new_ref(1.)))]


@case(tags=("refs", "autodiff"))
def stash_grads_with_custom_vjp(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.custom_vjp
    def stash_grads(grads_ref: Any, x: Any) -> Any:
        return x

    def fwd(grads_ref: Any, x: Any) -> Any:
        return x, grads_ref

    def bwd(grads_ref: Any, g: Any) -> Any:
        grads_ref[...] = g
        return None, g
    stash_grads.defvjp(fwd, bwd)

    def f(x: Any, grads_ref: Any) -> Any:
        return jnp.sin(stash_grads(grads_ref, x))
    grads_ref = jax.new_ref(0.)
    return [jax.grad(f)(1., grads_ref), grads_ref[...]]


@case(tags=("refs", "autodiff"), ulp=2)
def vjp_with_gradient_refs(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x_ref: Any) -> Any:
        return x_ref[...] ** 2

    def g(x_ref: Any) -> Any:
        x_ref[...] = jnp.sin(x_ref[...])
        return x_ref[...] ** 2
    _, f_vjp = jax.vjp(f, jax.new_ref(2.))
    acc = jax.new_ref(100.)
    returned = f_vjp.with_refs(acc)(1.0)
    x_ref = jax.new_ref(2.)
    _, g_vjp = jax.vjp(g, x_ref)
    g_acc = jax.new_ref(0.)
    g_vjp.with_refs(g_acc)(1.0)
    s_acc = jax.new_ref(0.)
    _, sin_vjp = jax.vjp(jnp.sin, 1.0)
    sin_returned = sin_vjp.with_refs(s_acc)(1.0)
    return [repr(returned), acc[...], x_ref[...], g_acc[...], repr(sin_returned), s_acc[...],
            capture(lambda: jax.vjp(f, jax.new_ref(2.))[1](1.0)),
            capture(lambda: f_vjp.with_refs(jax.ad.GradValue())),
            capture(lambda: f_vjp.with_refs(jax.new_ref(jnp.zeros(2))))]


@case(tags=("refs", "autodiff"))
def dont_want(jax: Any, jnp: Any, lax: Any) -> Any:
    W, x = jnp.ones((4, 4)), jnp.ones(4)
    _, f_vjp = jax.vjp(lambda W, x: W @ x, W, x)
    W_bar, x_bar = f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())(jnp.ones(4))
    only_W = jax.make_jaxpr(
        lambda: f_vjp.with_refs(jax.ad.GradValue(), jax.ad.DontWant())(jnp.ones(4)))()
    return [W_bar, repr(x_bar), str(only_W)]


@case(tags=("refs", "vmap"))
def vmap_of_ref_functions(jax: Any, jnp: Any, lax: Any) -> Any:
    def scale_into(x: Any, out_ref: Any) -> None:
        out_ref[...] = 2.0 * x
    out_ref = jax.new_ref(jnp.zeros(3))
    jax.vmap(scale_into)(jnp.arange(3.0), out_ref)
    r = jax.new_ref(0.0)

    def write_shared(x: Any) -> None:
        r[...] = x

    def local(x: Any) -> Any:
        acc = jax.new_ref(x)
        acc[...] += x * x
        return acc[...]
    return [out_ref[...], capture(lambda: jax.vmap(write_shared)(jnp.arange(3.0))),
            jax.vmap(local)(jnp.arange(3.0)), str(jax.make_jaxpr(jax.vmap(local))(jnp.ones(2)))]
