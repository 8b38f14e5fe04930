# The implementation under test arrives as `jax: Any`, so `@jax.custom_jvp` is an untyped
# decorator by design.
# mypy: disable-error-code="untyped-decorator"
"""Automatic differentiation: values of grad/jvp/vjp/linearize/jacobians, VJP objects, saved
residuals under checkpoint policies, jaxpr text of first-order gradients, and AD errors.

Sources (jax-ml/jax docs): new_docs/101/automatic-differentiation.md (grad, value_and_grad,
has_aux, argnums, pytrees), new_docs/201/autodiff (jvp/vjp/linearize/jacobians/hessian),
new_docs/301/vjp-objects.md (first-class VJPs: args_res sentinels, saveable_args, restoring,
fwd_and_bwd) and new_docs/301/remat.md (saved residuals per checkpoint policy).
Real JAX supplies every expected result.

float0 tangents/cotangents (``allow_int``) are compared through ``(str(dtype), shape)``: their
values carry no information. Saved residuals are compared as their abstract values
(``str(aval)``), not as the printed form of ``print_saved_residuals``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from conformance.registry import case, register_case

X3 = np.array([0.5, -1.25, 2.0], dtype=np.float32)
X4 = np.array([0.3, -0.7, 1.1, 2.5], dtype=np.float32)
M23 = np.array([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], dtype=np.float32)
W34 = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0) / 10.0
B4 = np.array([0.05, -0.1, 0.15, 0.0], dtype=np.float32)
# No cancellation in sin(x) + x cos(x) (at 2.0 it amplifies a 1-ULP cos difference to 8 ULPs).
X3_SAFE = np.array([0.5, -1.25, 1.0], dtype=np.float32)
IDX = np.array([2, 0, 0], dtype=np.int32)


def _float0(x: Any) -> tuple[str, tuple[int, ...]]:
    return str(x.dtype), tuple(x.shape)


# -- grad / value_and_grad ----------------------------------------------------------------------


@case
def grad_polynomial_scalar(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return 3.0 * x**3 - 2.0 * x**2 + x - 7.0
    return jax.grad(f)(np.float32(1.5)), jax.grad(f)(2.0)


@case(ulp=4)
def grad_sin_times_x(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.sin(x) * x)(np.float32(0.7))


@case(ulp=4)
def grad_transcendental_chain(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return jnp.sum(jnp.tanh(0.25 * jnp.exp(jnp.cos(x)) - jnp.log(x * x + 1.0)))
    return jax.grad(f)(X3)


@case(ulp=4)
def grad_exp_log_chain(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.sum(jnp.log(jnp.exp(x) + 1.0)))(X4)


@case(ulp=8)
def grad_mlp_layer(jax: Any, jnp: Any, lax: Any) -> Any:
    def loss(W: Any, b: Any, x: Any) -> Any:
        return jnp.sum(jnp.tanh(x @ W + b))

    return jax.grad(loss, argnums=(0, 1, 2))(W34, B4, M23)


@case
def grad_sum_of_squares(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.sum(x**2))(X4)


@case
def grad_mean(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.mean(x * x))(M23)


@case
def grad_max_reduction(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.max(x))(X4), jax.grad(lambda x: jnp.sum(jnp.max(x, axis=1)))(M23)


@case
def grad_slice_tail(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.sum(x[1:] * 2.0))(X4)


@case
def grad_gather_repeated_index(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.sum(x[IDX] * jnp.arange(3.0)))(X4)


@case
def grad_concatenate(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any, y: Any) -> Any:
        return jnp.sum(jnp.concatenate([x, 2.0 * y, x]) ** 2)
    return jax.grad(f, argnums=(0, 1))(X3, X4)


@case
def grad_where_relu(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: jnp.sum(jnp.where(x > 0, x, 0.0)))(X4)


@case
def grad_pytree_dict(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(p: Any) -> Any:
        return jnp.sum(p["w"] * p["x"]) + p["b"] ** 2

    return jax.grad(f)({"w": X3, "x": X3 + 1.0, "b": np.float32(3.0)})


@case
def grad_pytree_tuple_argnums(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(a: Any, pair: Any, c: Any) -> Any:
        u, v = pair
        return jnp.sum(a * u) + jnp.sum(v * c)

    return jax.grad(f, argnums=(1, 2))(X3, (X3 * 2.0, X4), X4 - 1.0)


@case
def value_and_grad_basic(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.value_and_grad(lambda x: jnp.sum(x**3))(X3)


@case
def value_and_grad_has_aux(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        y = x * x
        return jnp.sum(y), {"y": y, "n": jnp.sum(x)}

    (v, aux), g = jax.value_and_grad(f, has_aux=True)(X3)
    return v, aux, g


@case
def grad_has_aux(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: (jnp.sum(x * 2.0), x + 1.0), has_aux=True)(X3)


@case
def grad_allow_int_float0(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any, n: Any) -> Any:
        return jnp.sum(x * n)
    gx, gn = jax.grad(f, argnums=(0, 1), allow_int=True)(X3, np.arange(3, dtype=np.int32))
    return gx, _float0(gn)


@case
def jvp_int_input_float0_tangent(jax: Any, jnp: Any, lax: Any) -> Any:
    n = np.arange(3, dtype=np.int32)
    t = np.zeros((3,), dtype=jax.dtypes.float0)
    y, ty = jax.jvp(lambda n: n * 2, (n,), (t,))
    return y, _float0(ty)


@case
def grad_of_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return x**4 - 3.0 * x**2
    return jax.grad(jax.grad(f))(np.float32(1.5)), jax.grad(jax.grad(jax.grad(f)))(np.float32(0.5))


@case(ulp=4)
def grad_of_grad_sin(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(jax.grad(lambda x: jnp.sin(x) * x))(np.float32(0.3))


@case(ulp=4)
def grad_of_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(lambda x: jnp.sum(jnp.sin(x) * x))
    return jax.grad(f)(X3_SAFE)


@case(ulp=4)
def jit_of_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jit(jax.grad(lambda x: jnp.sum(jnp.cos(x) ** 2)))(X3)


# -- jvp / vjp / linearize / jacobians ----------------------------------------------------------


@case(ulp=4)
def jvp_sin_cos(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jvp(lambda x: jnp.sin(x) * jnp.cos(x), (X3,), (np.ones(3, np.float32),))


@case
def jvp_pytree(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(p: Any) -> Any:
        return {"s": p[0] * p[1], "d": p[0] - p[1]}
    return jax.jvp(f, ((X3, X3 + 2.0),), ((np.ones(3, np.float32), X3),))


@case(ulp=8)
def vjp_mlp_layer(jax: Any, jnp: Any, lax: Any) -> Any:
    y, f_vjp = jax.vjp(lambda W, x: jnp.tanh(x @ W), W34, M23)
    return y, f_vjp(np.ones_like(y))


@case(ulp=4)
def linearize_tanh(jax: Any, jnp: Any, lax: Any) -> Any:
    y, f_jvp = jax.linearize(lambda x: jnp.tanh(x) * x, X3)
    return y, f_jvp(np.ones(3, np.float32)), f_jvp(X3)


@case(ulp=4)
def jacfwd_jacrev(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return jnp.sin(x) * x[::-1]
    return jax.jacfwd(f)(X3), jax.jacrev(f)(X3)


@case
def jacrev_matrix_input(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jacrev(lambda x: jnp.sum(x * x, axis=0))(M23)


@case(ulp=4)
def hessian_cubic(jax: Any, jnp: Any, lax: Any) -> Any:
    def f(x: Any) -> Any:
        return jnp.sum(x**3) + x[0] * x[1]
    return jax.hessian(f)(X3)


@case
def linear_transpose_scale(jax: Any, jnp: Any, lax: Any) -> Any:
    f_t = jax.linear_transpose(lambda x: 3.0 * x - x, X3)
    return f_t(np.ones(3, np.float32))


# -- VJP objects (new_docs/301/vjp-objects.md) ---------------------------------------------------

# The docs use W = ones, where tanh(3) ~ 0.995 and 1 - tanh^2 cancels: a 1-ULP difference in
# tanh becomes ~128 ULPs in the cotangent. A smaller W keeps the cases about VJP mechanics.
W33 = np.full((3, 3), 0.25, np.float32)
X23 = np.ones((2, 3), np.float32)


def _layer(jnp: Any) -> Callable[[Any, Any], Any]:
    return lambda W, x: jnp.tanh(x @ W)


@case
def vjp_object_leaves_and_sentinels(jax: Any, jnp: Any, lax: Any) -> Any:
    _, f_all = jax.vjp(_layer(jnp), W33, X23)
    _, f_part = jax.vjp(_layer(jnp), W33, X23, saveable_args=(False, True))
    _, f_nn = jax.vjp(lambda a, b: a + 2.0 * b, X3, X3)
    return (
        len(jax.tree.leaves(f_all)),
        len(jax.tree.leaves(f_part)),
        repr(f_part.args_res[0]),
        [repr(a) for a in f_nn.args_res],
        len(f_all.opaque_residuals),
    )


@case(raises=ValueError)
def vjp_object_unrestored_not_saveable(jax: Any, jnp: Any, lax: Any) -> Any:
    y, f_vjp = jax.vjp(_layer(jnp), W33, X23, saveable_args=(False, True))
    return f_vjp(jnp.ones_like(y))


@case(ulp=4)
def vjp_object_restore_by_assignment(jax: Any, jnp: Any, lax: Any) -> Any:
    y, f_vjp = jax.vjp(_layer(jnp), W33, X23, saveable_args=(False, True))
    f_vjp.args_res[0] = W33
    return f_vjp(jnp.ones_like(y))


@case(ulp=4)
def vjp_object_restore_by_replace(jax: Any, jnp: Any, lax: Any) -> Any:
    y, f_vjp = jax.vjp(_layer(jnp), W33, X23, saveable_args=(False, True))
    f_vjp = f_vjp.replace(args_res=[W33, f_vjp.args_res[1]])
    return f_vjp(jnp.ones_like(y))


@case
def vjp_object_restore_dict_arg(jax: Any, jnp: Any, lax: Any) -> Any:
    d = {"hi": np.ones((4, 5), np.float32), "bye": np.ones((3, 4), np.float32)}
    _, g_vjp = jax.vjp(lambda d: d["bye"] @ d["hi"], d, saveable_args=((True, False),))
    n_leaves = len(jax.tree.leaves(g_vjp))
    g_vjp.args_res = [d]
    (d_grad,) = g_vjp(np.ones((3, 5), np.float32))
    return n_leaves, d_grad


@case(ulp=8)
def vjp_object_pipeline_through_jit(jax: Any, jnp: Any, lax: Any) -> Any:
    layer = _layer(jnp)
    fwd = jax.jit(lambda W, x: jax.vjp(layer, W, x))
    bwd = jax.jit(lambda f_vjp, ybar: f_vjp(ybar))
    W2 = 2.0 * W33
    x1, res1 = fwd(W33, X23)
    x2, res2 = fwd(W2, x1)
    dW2, dx1 = bwd(res2, jnp.ones_like(x2))
    dW1, dx0 = bwd(res1, dx1)
    return dW1, dW2, dx0


@case(ulp=8)
def fwd_and_bwd_layer(jax: Any, jnp: Any, lax: Any) -> Any:
    fwd, bwd = jax.fwd_and_bwd(_layer(jnp), argnums=(0, 1))
    y, residuals = fwd(W33, X23)
    return y, bwd(residuals, jnp.ones_like(y))


@case(raises=ValueError)
def vjp_wrong_cotangent_shape(jax: Any, jnp: Any, lax: Any) -> Any:
    _, f_vjp = jax.vjp(lambda x: jnp.sin(x), X3)
    return f_vjp(np.ones(4, np.float32))


# -- saved residuals under checkpoint policies ---------------------------------------------------


def _ad_checkpoint(jax: Any) -> Any:
    # `jax.ad_checkpoint` is a submodule that `import jax` does not load by itself.
    return importlib.import_module(jax.__name__ + ".ad_checkpoint")


def _saved_residuals(jax: Any) -> Callable[..., Any]:
    # JAX keeps saved_residuals private (jax._src.ad_checkpoint); spec exposes it publicly.
    fn = getattr(_ad_checkpoint(jax), "saved_residuals", None)
    if fn is None:
        fn = importlib.import_module(jax.__name__ + "._src.ad_checkpoint").saved_residuals
    return fn  # type: ignore[no-any-return]


POLICIES: tuple[str, ...] = (
    "everything_saveable",
    "nothing_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
)


def _residual_case(policy: str | None) -> Callable[[Any, Any, Any], Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        def f(W: Any, x: Any) -> Any:
            h = jnp.sin(x @ W)
            return jnp.sum(jnp.tanh(h @ W.T) * x)

        if policy is not None:
            f = jax.checkpoint(f, policy=getattr(jax.checkpoint_policies, policy))
        W = np.ones((3, 3), np.float32) / 3.0
        return [str(aval) for aval, _ in _saved_residuals(jax)(f, W, X23)]

    return fn


register_case("saved_residuals_no_checkpoint", _residual_case(None), module=__name__)
for _policy in POLICIES:
    register_case(f"saved_residuals_{_policy}", _residual_case(_policy), module=__name__)


@case
def saved_residuals_checkpoint_names(jax: Any, jnp: Any, lax: Any) -> Any:
    from_name = _ad_checkpoint(jax).checkpoint_name

    def f(x: Any) -> Any:
        a = from_name(jnp.sin(x), "a")
        b = from_name(jnp.cos(a), "b")
        return jnp.sum(jnp.exp(b) * a)

    out = []
    for pol in (
        jax.checkpoint_policies.save_only_these_names("a"),
        jax.checkpoint_policies.save_any_names_but_these("a"),
    ):
        g = jax.checkpoint(f, policy=pol)
        out.append([str(aval) for aval, _ in _saved_residuals(jax)(g, X3)])
    return out


@case(ulp=4)
def checkpoint_grad_value(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.checkpoint(lambda x: jnp.sum(jnp.sin(jnp.sin(x))))
    g = jax.checkpoint(
        lambda x: jnp.sum(jnp.sin(jnp.sin(x))), policy=jax.checkpoint_policies.nothing_saveable
    )
    return jax.grad(f)(X3), jax.grad(g)(X3)


# -- errors ---------------------------------------------------------------------------------------


@case(raises=TypeError)
def grad_int_input_without_allow_int(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda n: n * 2)(3)


@case(raises=TypeError)
def grad_non_scalar_output(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda x: x * 2.0)(X3)


@case(raises=TypeError)
def grad_int_array_input(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.grad(lambda n: jnp.sum(n * 1.0))(np.arange(3, dtype=np.int32))


# -- jaxpr text of first-order gradients --------------------------------------------------------

Builder = Callable[[Any, Any, Any], tuple[Callable[..., Any], tuple[Any, ...]]]
GRAD_PROGRAMS: dict[str, Builder] = {
    "sin_times_x": lambda jax, jnp, lax: (lambda x: jnp.sin(x) * x, (np.float32(0.7),)),
    "tanh_matmul_sum": lambda jax, jnp, lax: (
        lambda x: jnp.sum(jnp.tanh(x @ W34)),
        (M23,),
    ),
    "sum_of_squares": lambda jax, jnp, lax: (lambda x: jnp.sum(x**2), (X4,)),
    "slice_times_two": lambda jax, jnp, lax: (lambda x: jnp.sum(x[1:] * 2), (X4,)),
    "where_relu": lambda jax, jnp, lax: (lambda x: jnp.sum(jnp.where(x > 0, x, 0.0)), (X4,)),
    "exp_log_chain": lambda jax, jnp, lax: (
        lambda x: jnp.sum(jnp.log(jnp.exp(x) + 1.0)),
        (X4,),
    ),
    "jit_inside_grad": lambda jax, jnp, lax: (
        lambda x: jnp.sum(jax.jit(lambda y: jnp.sin(y) * y)(x)),
        (X3,),
    ),
    "polynomial": lambda jax, jnp, lax: (
        lambda x: 3.0 * x**3 - 2.0 * x**2 + x,
        (np.float32(1.5),),
    ),
    "mean_cos": lambda jax, jnp, lax: (lambda x: jnp.mean(jnp.cos(x)), (M23,)),
    "max_reduce": lambda jax, jnp, lax: (lambda x: jnp.max(x), (X4,)),
    "concat_sum": lambda jax, jnp, lax: (
        lambda x: jnp.sum(jnp.concatenate([x, x * 3.0])),
        (X3,),
    ),
}


def _grad_jaxpr(builder: Builder) -> Callable[[Any, Any, Any], Any]:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        f, args = builder(jax, jnp, lax)
        return str(jax.make_jaxpr(jax.grad(f))(*args))

    return fn


for _name, _builder in GRAD_PROGRAMS.items():
    register_case(
        f"grad_jaxpr_{_name}", _grad_jaxpr(_builder), module=__name__, tags=("jaxpr", "printing")
    )


# -- custom derivative rules (JEP 2026/4008) ---------------------------------------------------


def _log1pexp(jax: Any, jnp: Any) -> Any:
    @jax.custom_jvp
    def log1pexp(x: Any) -> Any:
        return jnp.log(1.0 + jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))

    return log1pexp


@case(ulp=4)
def custom_jvp_stable_grad(jax: Any, jnp: Any, lax: Any) -> Any:
    f = _log1pexp(jax, jnp)
    return f(3.0), jax.grad(f)(100.0), jax.grad(jax.grad(f))(1.5), jax.jit(jax.grad(f))(2.0)


@case
def custom_jvp_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    f = _log1pexp(jax, jnp)
    return str(jax.make_jaxpr(f)(1.0)), str(jax.make_jaxpr(jax.grad(f))(1.0))


@case(ulp=4)
def custom_jvp_defjvps(jax: Any, jnp: Any, lax: Any) -> Any:
    @jax.custom_jvp
    def f(x: Any, y: Any) -> Any:
        return jnp.sin(x) * y

    f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
              lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
    return jax.grad(f, argnums=(0, 1))(0.5, 2.0), jax.jvp(f, (0.5, 2.0), (1.0, 0.0))


def _clip_gradient(jax: Any, jnp: Any) -> Any:
    @jax.custom_vjp
    def clip_gradient(lo: Any, hi: Any, x: Any) -> Any:
        return x

    def fwd(lo: Any, hi: Any, x: Any) -> Any:
        return x, (lo, hi)

    def bwd(res: Any, g: Any) -> Any:
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip_gradient.defvjp(fwd, bwd)
    return clip_gradient


@case(ulp=4)
def custom_vjp_clip_gradient(jax: Any, jnp: Any, lax: Any) -> Any:
    clip = _clip_gradient(jax, jnp)

    def f(x: Any) -> Any:
        return clip(-0.75, 0.75, jnp.sin(x) * 3.0)

    return jax.grad(f)(0.3), jax.jit(jax.grad(f))(2.0), jax.vjp(f, 1.0)[1](2.0)


@case
def custom_vjp_grad_jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    clip = _clip_gradient(jax, jnp)
    return str(jax.make_jaxpr(jax.grad(lambda x: clip(-1.0, 1.0, x * 2.0)))(0.5))


@case(raises=TypeError)
def custom_vjp_forward_mode_raises(jax: Any, jnp: Any, lax: Any) -> Any:
    clip = _clip_gradient(jax, jnp)
    return jax.jvp(lambda x: clip(-1.0, 1.0, x), (1.0,), (1.0,))


@case(ulp=4)
def custom_vjp_nondiff_argnums(jax: Any, jnp: Any, lax: Any) -> Any:
    import functools

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def scale(k: float, x: Any) -> Any:
        return x * k

    scale.defvjp(lambda k, x: (x * k, None), lambda k, res, g: (g * k * 10.0,))
    return jax.grad(lambda x: scale(3.0, x))(1.0)


def _sin_times_remat_opt(jax: Any, jnp: Any) -> Any:
    @jax.custom_vjp
    def f(x: Any, y: Any) -> Any:
        return jnp.sin(x) * y

    def fwd(x: Any, y: Any) -> Any:
        return f(x, y), (jnp.cos(x), y)

    f.defvjp(fwd, lambda res, g: (res[0] * g * res[1], g), optimize_remat=True)
    return f


@case(ulp=4)
def custom_vjp_optimize_remat(jax: Any, jnp: Any, lax: Any) -> Any:
    f = _sin_times_remat_opt(jax, jnp)
    grad = jax.grad(f, argnums=(0, 1))
    return (grad(0.5, 2.0), jax.jit(grad)(0.5, 2.0), jax.grad(jax.checkpoint(f))(0.5, 2.0),
            str(jax.make_jaxpr(jax.grad(jax.checkpoint(f)))(0.5, 2.0)))


# -- autodiff API details: jit of wrappers, reprs, sentinels, integers ---------------------


@case(ulp=4)
def jit_of_grad_of_jitted(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.jit(jnp.sin)
    return (jax.jit(jax.grad(f))(0.5), jax.jit(jax.value_and_grad(f))(0.5),
            jax.jit(jax.grad(jax.grad(f)))(0.5))


@case
def tracer_repr_under_grad_vjp_jvp(jax: Any, jnp: Any, lax: Any) -> Any:
    seen: list[str] = []
    jax.grad(lambda x: seen.append(repr(x)) or x)(1.0)
    jax.vjp(lambda x: seen.append(repr(x)) or x, X3)
    jax.jvp(lambda x: seen.append(repr(x)) or x, (1.0,), (1.0,))
    return seen


@case
def vjp_structured_residuals_of_calls(jax: Any, jnp: Any, lax: Any) -> Any:
    def layer(w: Any, x: Any) -> Any:
        return lax.tanh(lax.dot(x, w))
    w, x = np.ones((3, 3), np.float32), np.ones((2, 3), np.float32)
    progs = [layer, jax.jit(layer), jax.jit(jax.jit(layer)),
             lambda w, x: lax.scan(lambda c, _: (jax.jit(layer)(w, c), None), x, None,
                                   length=2)[0],
             lambda w, x: lax.cond(True, layer, lambda w, x: x, w, x)]
    return [repr(jax.vjp(p, w, x)[1].structured_residuals) for p in progs]


@case
def vjp_sentinel_treedef_text(jax: Any, jnp: Any, lax: Any) -> Any:
    _, f = jax.vjp(lambda a, b: jnp.sin(a) + b, 1.0, 2.0)
    return str(jax.tree_util.tree_structure(f.args_res))


@case(raises=ValueError)
def vjp_saveable_args_not_a_bool(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.vjp(lambda a, b: a * b, 1.0, 2.0, saveable_args=(1, True))


@case(raises=ValueError)
def fwd_and_bwd_argnums_out_of_range(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.fwd_and_bwd(lambda x: x, argnums=2)[0](1.0)


@case(raises=TypeError)
def jacfwd_complex_input_needs_holomorphic(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jacfwd(lambda x: x * 2)(np.complex64(1 + 2j))


@case(raises=TypeError)
def jacrev_integer_output(jax: Any, jnp: Any, lax: Any) -> Any:
    return jax.jacrev(lambda x: x.astype(jnp.int32))(np.float32(1.5))


@case
def linear_transpose_integer(jax: Any, jnp: Any, lax: Any) -> Any:
    f = jax.linear_transpose(lambda x: x * 2, np.int32(1))
    g = jax.linear_transpose(lambda x: x + x, np.ones(2, np.int32))
    return f(np.int32(3)), g(np.ones(2, np.int32))


@case
def stop_gradient_of_integers(jax: Any, jnp: Any, lax: Any) -> Any:
    a, b = lax.stop_gradient(3), lax.stop_gradient(np.ones(2, np.int32))
    return str(jax.typeof(a)), str(jax.typeof(b)), np.asarray(a), np.asarray(b)
