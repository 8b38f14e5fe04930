"""A minimal optax training loop, written for JAX: adam, sgd with nesterov momentum, adamw and
lion, under schedules and ``clip_by_global_norm``, 20 jitted steps each from the same
parameters.  It prints, as one JSON line, the backend's name and each optimizer's last loss and
final parameters (dtype and values).  tests/example_libraries/test_optax.py runs it on real JAX
and under ``python -m spec``."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import optax


def loss(params, x, y):
    pred = jnp.tanh(x @ params["w"] + params["b"])
    return jnp.mean((pred - y) ** 2)


def train(opt, params, x, y, steps=20):
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    for _ in range(steps):
        params, state, value = step(params, state)
    return params, value


def main():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(16, 4)).astype(np.float32))
    y = jnp.asarray(rng.normal(size=(16, 3)).astype(np.float32))
    init = {"w": jnp.asarray(rng.normal(size=(4, 3)).astype(np.float32)), "b": jnp.zeros(3)}
    warmup_cosine = optax.warmup_cosine_decay_schedule(0.0, 0.1, 5, 20, 0.01)
    optimizers = {
        "adam": optax.adam(warmup_cosine),
        "sgd": optax.sgd(optax.exponential_decay(0.1, 5, 0.5), momentum=0.9, nesterov=True),
        "adamw": optax.chain(optax.clip_by_global_norm(0.5),
                             optax.adamw(warmup_cosine, weight_decay=1e-2)),
        "lion": optax.chain(optax.clip_by_global_norm(1.0),
                            optax.lion(optax.linear_schedule(1e-2, 1e-3, 20))),
    }
    out = {"backend": jax.__name__}
    for name, opt in optimizers.items():
        params, value = train(opt, init, x, y)
        out[name] = {"loss": float(value),
                     **{k: [str(v.dtype), np.asarray(v).tolist()] for k, v in params.items()}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
