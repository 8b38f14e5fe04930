"""jax.random on Threefry keys: raw key data, key functions, sampler values for
several seeds, shapes and dtypes, both bit layouts, and key errors."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.registry import capture, case, register_case


def _words(jax: Any, keys: Any) -> Any:
    return jax.random.key_data(keys)


@case(tags=("random",))
def key_data_of_seeds(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    seeds = (0, 1, 42, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 40 + 5)
    return [[_words(jax, r.key(s)), r.PRNGKey(s)] for s in seeds]


@case(tags=("random",))
def key_types_and_repr(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    ks = r.split(r.key(3), 3)
    return [str(jax.typeof(ks)), str(jax.typeof(r.key(0))), repr(ks), str(ks.dtype),
            r.key_impl(ks), ks.dtype.itemsize, str(jax.typeof(r.PRNGKey(0)))]


def _key_functions(partitionable: bool) -> Any:
    def fn(jax: Any, jnp: Any, lax: Any) -> Any:
        r = jax.random
        jax.config.update("jax_threefry_partitionable", partitionable)
        try:
            k = r.key(7)
            return [_words(jax, r.split(k)), _words(jax, r.split(k, (2, 3))),
                    r.split(r.PRNGKey(7), 4), _words(jax, r.fold_in(k, 2 ** 32 - 1)),
                    _words(jax, r.clone(k)), _words(jax, r.wrap_key_data(r.PRNGKey(1))),
                    [r.bits(k, (5,), dt) for dt in ("uint8", "uint16", "uint32")]]
        finally:
            jax.config.update("jax_threefry_partitionable", True)
    return fn


register_case("key_functions_partitionable", _key_functions(True), module=__name__,
              tags=("random",))
register_case("key_functions_original", _key_functions(False), module=__name__,
              tags=("random",))


@case(tags=("random",), x64=True)
def bits_64(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    return [r.bits(r.key(11), (4,), "uint64"), r.bits(r.key(11)),
            r.randint(r.key(5), (3,), -100, 10 ** 12, "int64")]


for _seed in (0, 7, 123):
    register_case(
        f"uniform_seed{_seed}",
        lambda jax, jnp, lax, s=_seed: [
            jax.random.uniform(jax.random.key(s), shape)
            for shape in ((), (5,), (3, 4), (2, 0, 3))]
        + [jax.random.uniform(jax.random.key(s), (6,), dt) for dt in ("float16", "bfloat16")],
        module=__name__, tags=("random",))


@case(tags=("random",), ulp=8)
def normal_and_ranges(jax: Any, jnp: Any, lax: Any) -> Any:
    # Ranges other than [0, 1) pass through XLA's fused multiply-add: ULPs.
    r = jax.random
    return [r.normal(r.key(1), (4, 3)), r.normal(r.key(2), (5,), "bfloat16"),
            r.uniform(r.key(3), (6,), minval=-3.0, maxval=2.5)]


@case(tags=("random",))
def randint_dtypes(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    return [r.randint(r.key(4), (6,), lo, hi, dt)
            for dt in ("int8", "uint8", "int16", "int32", "uint32")
            for lo, hi in ((0, 10), (-5, 5), (3, 3), (0, 2 ** 31 - 1))]


@case(tags=("random",))
def discrete_samplers(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    k = r.key(9)
    return [r.bernoulli(k, 0.3, (10,)), r.rademacher(k, (6,)), r.permutation(k, 8),
            r.permutation(k, jnp.arange(12.0).reshape(3, 4), axis=1),
            r.choice(k, 7, (4,)), r.choice(k, 7, (4,), replace=False),
            r.categorical(k, jnp.log(jnp.asarray(np.array([0.1, 0.2, 0.7], np.float32))),
                          shape=(8,)),
            r.geometric(k, 0.3, (8,))]


@case(tags=("random",), ulp=16)
def continuous_samplers(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    k = r.key(5)
    return [r.exponential(k, (6,)), r.laplace(k, (6,)), r.logistic(k, (6,)), r.cauchy(k, (6,)),
            r.gumbel(k, (6,)), r.truncated_normal(k, -1.0, 2.0, (6,)), r.pareto(k, 3.0, (6,)),
            r.weibull_min(k, 2.0, 1.5, (6,))]


@case(tags=("random",), ulp=64)
def gamma_family(jax: Any, jnp: Any, lax: Any) -> Any:
    # The rejection loops take the same decisions; the normals they draw
    # carry the fused multiply-add ULPs on.
    r = jax.random
    k = r.key(2)
    alphas = jnp.asarray(np.array([0.1, 0.5, 1.0, 2.0, 10.0], np.float32))
    # One draw per sampler family: tests/random/test_gamma.py checks the derived
    # samplers (loggamma, chisquare, t, f) and the narrow float types one by one.
    return [r.gamma(k, alphas), r.beta(k, 2.0, 3.0, (4,)), r.dirichlet(k, alphas[:3])]


@case(tags=("random",))
def samplers_under_jit_and_vmap(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    keys = r.split(r.key(8), 3)
    return [jax.jit(lambda k: r.bits(k, (4,)))(r.key(1)),
            jax.vmap(lambda k: r.uniform(k, (2,)))(keys),
            _words(jax, jax.vmap(lambda k: r.fold_in(k, 3))(keys)),
            jax.vmap(r.key)(jnp.arange(3)).shape]


@case(tags=("random",))
def keys_as_values(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    a, b = r.split(r.key(0), 3), r.split(r.key(1), 3)
    pick = jnp.asarray(np.array([True, False, True]))
    return [_words(jax, jnp.where(pick, a, b)), _words(jax, jnp.stack([a, b])),
            _words(jax, jnp.concatenate([a, b])), _words(jax, a[1:]),
            _words(jax, a[jnp.asarray(np.array([2, 0]))]),
            lax.scan(lambda c, k: (c + r.uniform(k), r.bits(k)), 0.0, a)]


@case(tags=("random", "jaxpr"))
def jaxpr_text(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    k = r.key(0)
    return [str(jax.make_jaxpr(f)(k)) for f in (
        lambda k: r.split(k, (2, 3)), lambda k: r.fold_in(k, 3),
        lambda k: r.bits(k, (3,), "uint8"), lambda k: r.uniform(k, (2,)),
        lambda k: r.normal(k, (3,)), lambda k: r.gamma(k, 2.0, (3,)),
        lambda k: r.key_data(k), lambda k: r.uniform(r.key_data(k)))]


@case(tags=("random", "errors"))
def key_errors(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    k = r.key(0)
    return [
        capture(r.uniform, np.zeros((3,), np.uint32)),
        capture(r.uniform, np.zeros((2,), np.float32)),
        capture(r.wrap_key_data, np.uint32(0)),
        capture(r.uniform, r.split(k, 3)),
        capture(r.split, r.split(k, 3)),
        capture(r.key, k),
        capture(r.key, np.arange(3)),
        capture(r.fold_in, k, np.arange(2)),
        capture(r.split, "key"),
        capture(lambda: np.asarray(k)),
        capture(lambda: bool(k)),
        capture(lambda: k + 1),
        capture(lambda: r.key(0, impl="nope")),
    ]


@case(tags=("random", "errors"))
def sampler_errors(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    k = r.key(0)
    return [
        capture(r.uniform, k, (), np.int32),
        capture(r.bits, k, (), np.int32),
        capture(r.randint, k, (2,), 0, 5, np.float32),
        capture(r.bernoulli, k, 1),
        capture(r.gamma, k, 1.0, None, np.int32),
        capture(lambda: r.gamma(k, 1.0, method="nope")),
        capture(r.dirichlet, k, 1.0),
        capture(r.geometric, k, 0.5, None, np.float32),
        capture(r.choice, k, 3, (5,), False),
        capture(r.bernoulli, k, np.ones(3, np.float32), (4,)),
    ]


# ------------------------------------------------------------------ more samplers

@case(tags=("random",))
def poisson_binomial_multinomial(jax: Any, jnp: Any, lax: Any) -> Any:
    # Rejection samplers: the same accept/reject decisions give equal counts.
    r = jax.random
    lam = np.array([0.0, 0.5, 3.0, 9.5, 10.0, 25.0, 140.0, 900.0], np.float32)
    n = np.array([0.0, 4.0, 9.5, 30.0, 200.0, 5000.0, np.inf, -1.0], np.float32)
    p = np.array([0.5, 0.2, 0.9, 0.6, 0.3, 0.75, 0.5, 0.5], np.float32)
    probs = np.array([[0.2, 0.3, 0.5], [0.0, 0.9, 0.1]], np.float32)
    # tests/random/test_samplers.py checks the other dtypes and parameter forms.
    return [r.poisson(r.key(s), lam, (2, 8)) for s in (0, 7)] + [
        r.binomial(r.key(3), n, p),
        r.multinomial(r.key(5), np.array([10.0, 400.0], np.float32), probs)]


@case(tags=("random",), ulp=16)
def maxwell_wald_and_kin(jax: Any, jnp: Any, lax: Any) -> Any:
    # Normals and ranged uniforms carry XLA's fused multiply-add ULPs.
    r = jax.random
    k = r.key(6)
    # One draw per construction: tests/random/test_samplers.py checks each sampler.
    return [r.maxwell(k, (6,)), r.wald(k, 1.5, (6,)), r.ball(k, 3, 2.0, (2,))]


@case(tags=("random", "errors"))
def more_sampler_errors(jax: Any, jnp: Any, lax: Any) -> Any:
    r = jax.random
    k = r.key(0)
    return [
        capture(lambda: r.poisson(k, 1.0, method="nope")),
        capture(r.maxwell, k, (2,), np.int32),
        capture(r.rayleigh, k, 1.0, None, np.int32),
        capture(r.wald, k, np.ones(3, np.float32), (4,)),
        capture(r.triangular, k, 0.0, np.ones(3, np.float32), 1.0, None, "bfloat16"),
        capture(r.lognormal, k, 1.0, None, np.int32),
        capture(r.ball, k, 2.5),
        capture(r.binomial, k, 3.0, 0.5, None, np.int32),
        capture(r.binomial, k, [3.0], 0.5),
    ]


@case(tags=("random",))
def stateful_rng_sequence(jax: Any, jnp: Any, lax: Any) -> Any:
    # JEP 28845: draw n of a generator seeded s uses fold_in(key(s), n).
    import importlib
    xr = importlib.import_module(jax.__name__ + ".experimental.random")
    rng = xr.stateful_rng(42)
    f = jax.jit(lambda g: g.random(3))
    return [rng.random(), rng.random((2, 2)), rng.integers(10, size=4), f(rng), f(rng),
            rng.uniform(size=2), jax.random.key_data(rng.key()), rng._counter[...],
            [c.integers(0, 100, 2) for c in rng.spawn(2)]]
