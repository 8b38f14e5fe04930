"""Small copies of the logic of JAX's ``examples/`` programs, on tiny synthetic data of the
right kind, each a function of the ``jax`` module it runs on (real JAX or spec).

Each returns the numbers the program prints (losses, accuracies, ELBOs) and its final
parameters, as NumPy values.  Deviations from the originals: no dataset download (synthetic
arrays), small layer sizes and few steps, initial parameters drawn under ``jit`` (JAX compiles
each eager operation on its own, which is slow), ``jax.nn.logsumexp`` for
``jax.scipy.special.logsumexp`` (JAX's is the same function), and written out: a Gaussian
log density for ``jax.scipy.stats.norm.logpdf`` and a vector's 2-norm for
``jnp.linalg.norm``. ``spmd_mnist_classifier_fromscratch`` runs over a mesh of every device
(four in the tests); ``jax_cpp_prog`` is ``examples/jax_cpp``'s function as ``jax_to_ir``
lowers it, run on ``main.cc``'s inputs (the C++ driver's job); ``onnx2xla`` interprets an ONNX
graph built in code with the ops of the model the example downloads.
"""

from __future__ import annotations

import importlib
import itertools
import math
from functools import partial
from typing import Any

import numpy as np
import numpy.random as npr

Result = dict[str, Any]


def _libraries(jax: Any) -> tuple[Any, Any]:
    base = jax.__name__ + ".example_libraries."
    return importlib.import_module(base + "optimizers"), importlib.import_module(base + "stax")


def _data(num: int, features: int, classes: int, seed: int = 0) -> tuple[Any, Any]:
    rng = npr.RandomState(seed)
    images = rng.rand(num, features).astype(np.float32)
    labels = np.eye(classes, dtype=np.float32)[rng.randint(0, classes, num)]
    return images, labels


def _numpy(jax: Any, tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]


def _jitted_init(jax: Any, init: Any, key: Any, shape: Any) -> Any:
    return jax.jit(lambda k: init(k, shape)[1])(key)


def mnist_classifier_fromscratch(jax: Any) -> Result:
    jnp = jax.numpy

    def init_random_params(scale: float, layer_sizes: list[int],
                           rng: Any = npr.RandomState(0)) -> Any:
        return [(scale * rng.randn(m, n), scale * rng.randn(n))
                for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]

    def predict(params: Any, inputs: Any) -> Any:
        activations = inputs
        for w, b in params[:-1]:
            activations = jnp.tanh(jnp.dot(activations, w) + b)
        final_w, final_b = params[-1]
        logits = jnp.dot(activations, final_w) + final_b
        return logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)

    def loss(params: Any, batch: Any) -> Any:
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    def accuracy(params: Any, batch: Any) -> Any:
        inputs, targets = batch
        return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) ==
                        jnp.argmax(targets, axis=1))

    step_size = 0.1
    images, labels = _data(24, 12, 4)

    @jax.jit
    def update(params: Any, batch: Any) -> Any:
        grads = jax.grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    params = init_random_params(0.1, [12, 10, 10, 4], npr.RandomState(0))
    for i in range(3):
        params = update(params, (images[8 * i:8 * i + 8], labels[8 * i:8 * i + 8]))
    return {"loss": float(loss(params, (images, labels))),
            "accuracy": float(accuracy(params, (images, labels))),
            "params": _numpy(jax, params)}


def mnist_classifier(jax: Any) -> Result:
    optimizers, stax = _libraries(jax)
    jnp = jax.numpy
    init_random_params, predict = stax.serial(
        stax.Dense(16), stax.Relu, stax.Dense(16), stax.Relu, stax.Dense(4), stax.LogSoftmax)

    def loss(params: Any, batch: Any) -> Any:
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    images, labels = _data(24, 12, 4, seed=1)
    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jax.jit
    def update(i: Any, opt_state: Any, batch: Any) -> Any:
        return opt_update(i, jax.grad(loss)(get_params(opt_state), batch), opt_state)

    opt_state = opt_init(_jitted_init(jax, init_random_params, jax.random.key(0), (-1, 12)))
    itercount = itertools.count()
    for i in range(3):
        opt_state = update(next(itercount), opt_state,
                           (images[8 * i:8 * i + 8], labels[8 * i:8 * i + 8]))
    params = get_params(opt_state)
    return {"loss": float(loss(params, (images, labels))), "params": _numpy(jax, params)}


def mnist_vae(jax: Any) -> Result:
    optimizers, stax = _libraries(jax)
    jnp, lax, random = jax.numpy, jax.lax, jax.random
    latent, pixels, batch_size = 3, 8, 4

    def gaussian_kl(mu: Any, sigmasq: Any) -> Any:
        return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu**2. - sigmasq)

    def gaussian_sample(rng: Any, mu: Any, sigmasq: Any) -> Any:
        return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)

    def bernoulli_logpdf(logits: Any, x: Any) -> Any:
        return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))

    encoder_init, encode = stax.serial(
        stax.Dense(10), stax.Relu, stax.FanOut(2),
        stax.parallel(stax.Dense(latent), stax.serial(stax.Dense(latent), stax.Softplus)))
    decoder_init, decode = stax.serial(stax.Dense(10), stax.Relu, stax.Dense(pixels))

    def elbo(rng: Any, params: Any, images: Any) -> Any:
        enc_params, dec_params = params
        mu_z, sigmasq_z = encode(enc_params, images)
        logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

    def image_grid(nrow: int, ncol: int, imagevecs: Any, imshape: tuple[int, int]) -> Any:
        images = iter(imagevecs.reshape((-1,) + imshape))
        return jnp.vstack([jnp.hstack([next(images).T for _ in range(ncol)][::-1])
                           for _ in range(nrow)]).T

    def image_sample(rng: Any, params: Any, nrow: int, ncol: int) -> Any:
        _, dec_params = params
        code_rng, img_rng = random.split(rng)
        logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, latent)))
        sampled = random.bernoulli(img_rng, jnp.logaddexp(0., logits))
        return image_grid(nrow, ncol, sampled, (2, 4))

    train_images = npr.RandomState(2).rand(12, pixels).astype(np.float32)
    num_batches = 3
    enc_rng, dec_rng = random.split(random.key(2))
    init_params = (_jitted_init(jax, encoder_init, enc_rng, (batch_size, pixels)),
                   _jitted_init(jax, decoder_init, dec_rng, (batch_size, latent)))
    opt_init, opt_update, get_params = optimizers.momentum(0.01, mass=0.9)

    @jax.jit
    def run_epoch(rng: Any, opt_state: Any, images: Any) -> Any:
        def body_fun(i: Any, opt_state: Any) -> Any:
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = random.bernoulli(
                data_rng, lax.dynamic_slice_in_dim(images, (i % num_batches) * batch_size,
                                                   batch_size))
            loss = lambda params: -elbo(elbo_rng, params, batch) / batch_size  # noqa: E731
            return opt_update(i, jax.grad(loss)(get_params(opt_state)), opt_state)
        return lax.fori_loop(0, num_batches, body_fun, opt_state)

    @jax.jit
    def evaluate(opt_state: Any, images: Any) -> Any:
        params = get_params(opt_state)
        elbo_rng, data_rng, image_rng = random.split(random.key(1), 3)
        binarized = random.bernoulli(data_rng, images)
        return (elbo(elbo_rng, params, binarized) / images.shape[0],
                image_sample(image_rng, params, 2, 2))

    opt_state = opt_init(init_params)
    elbos = []
    for epoch in range(2):
        opt_state = run_epoch(random.key(epoch), opt_state, train_images)
        test_elbo, sampled = evaluate(opt_state, train_images)
        elbos.append(float(test_elbo))
    return {"elbo": elbos, "sampled": np.asarray(sampled),
            "params": _numpy(jax, get_params(opt_state))}


def advi(jax: Any) -> Result:
    optimizers, _ = _libraries(jax)
    jnp, random, vmap = jax.numpy, jax.random, jax.vmap

    def norm_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
        z = (x - loc) / scale
        return -0.5 * z * z - jnp.log(scale) - 0.5 * math.log(2 * math.pi)

    def diag_gaussian_sample(rng: Any, mean: Any, log_std: Any) -> Any:
        return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)

    def diag_gaussian_logpdf(x: Any, mean: Any, log_std: Any) -> Any:
        return jnp.sum(vmap(norm_logpdf)(x, mean, jnp.exp(log_std)))

    def elbo(logprob: Any, rng: Any, mean: Any, log_std: Any) -> Any:
        sample = diag_gaussian_sample(rng, mean, log_std)
        return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)

    def batch_elbo(logprob: Any, rng: Any, params: Any, num_samples: int) -> Any:
        rngs = random.split(rng, num_samples)
        vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
        return jnp.mean(vectorized_elbo(rngs, *params))

    def funnel_log_density(params: Any) -> Any:
        return norm_logpdf(params[0], 0, jnp.exp(params[1])) + norm_logpdf(params[1], 0, 1.35)

    @jax.jit
    def objective(params: Any, t: Any) -> Any:
        return -batch_elbo(funnel_log_density, random.key(t), params, 8)

    opt_init, opt_update, get_params = optimizers.momentum(step_size=0.1, mass=0.9)
    opt_state = opt_init((jnp.zeros(2), jnp.zeros(2)))

    @jax.jit
    def update(i: Any, opt_state: Any) -> Any:
        return opt_update(i, jax.grad(objective)(get_params(opt_state), i), opt_state)

    bounds = []
    for t in range(4):
        opt_state = update(t, opt_state)
        bounds.append(float(objective(get_params(opt_state), t)))
    return {"lower_bound": bounds, "params": _numpy(jax, get_params(opt_state))}


def differentially_private_sgd(jax: Any) -> Result:
    optimizers, stax = _libraries(jax)
    jnp, random = jax.numpy, jax.random
    tree_flatten, tree_unflatten = jax.tree_util.tree_flatten, jax.tree_util.tree_unflatten
    init_random_params, predict = stax.serial(
        stax.Conv(4, (3, 3), padding="SAME", strides=(2, 2)), stax.Relu,
        stax.MaxPool((2, 2), (1, 1)),
        stax.Conv(4, (2, 2), padding="VALID", strides=(1, 1)), stax.Relu,
        stax.MaxPool((2, 2), (1, 1)), stax.Flatten, stax.Dense(8), stax.Relu, stax.Dense(3))

    def loss(params: Any, batch: Any) -> Any:
        inputs, targets = batch
        logits = stax.logsoftmax(predict(params, inputs))
        return -jnp.mean(jnp.sum(logits * targets, axis=1))

    def clipped_grad(params: Any, l2_norm_clip: Any, single_example_batch: Any) -> Any:
        grads = grad_loss(params, single_example_batch)
        nonempty_grads, tree_def = tree_flatten(grads)
        total_grad_norm = vector_norm(
            jnp.array([vector_norm(neg.ravel()) for neg in nonempty_grads]))
        divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.)
        return tree_unflatten(tree_def, [g / divisor for g in nonempty_grads])

    grad_loss = jax.grad(loss)

    def vector_norm(v: Any) -> Any:
        return jnp.sqrt(jnp.sum(v * v))

    def private_grad(params: Any, batch: Any, rng: Any, l2_norm_clip: float,
                     noise_multiplier: float, batch_size: int) -> Any:
        clipped = jax.vmap(clipped_grad, (None, None, 0))(params, l2_norm_clip, batch)
        clipped_flat, treedef = tree_flatten(clipped)
        aggregated = [g.sum(0) for g in clipped_flat]
        rngs = random.split(rng, len(aggregated))
        noised = [g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape)
                  for r, g in zip(rngs, aggregated)]
        return tree_unflatten(treedef, [g / batch_size for g in noised])

    images, labels = _data(8, 64, 3, seed=3)
    images = images.reshape(-1, 1, 8, 8, 1)
    key = random.key(0)
    opt_init, opt_update, get_params = optimizers.sgd(0.15)

    @jax.jit
    def private_update(rng: Any, i: Any, opt_state: Any, batch: Any) -> Any:
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)
        return opt_update(i, private_grad(params, batch, rng, 1.0, 1.1, 4), opt_state)

    opt_state = opt_init(_jitted_init(jax, init_random_params, key, (-1, 8, 8, 1)))
    for i in range(2):
        opt_state = private_update(key, i, opt_state,
                                   (images[4 * i:4 * i + 4], labels[4 * i:4 * i + 4]))
    params = get_params(opt_state)
    flat = (images.reshape(-1, 8, 8, 1), labels)
    return {"loss": float(jax.jit(loss)(params, flat)), "params": _numpy(jax, params)}


def spmd_mnist_classifier_fromscratch(jax: Any) -> Result:
    jnp, sharding = jax.numpy, jax.sharding
    P, AxisType, NamedSharding = sharding.PartitionSpec, sharding.AxisType, jax.NamedSharding
    logsumexp = jax.scipy.special.logsumexp

    def init_random_params(scale: float, layer_sizes: list[int],
                           rng: Any = npr.RandomState(0)) -> Any:
        return [(scale * rng.randn(m, n), scale * rng.randn(n))
                for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]

    def predict(params: Any, inputs: Any) -> Any:
        activations = inputs
        for w, b in params[:-1]:
            activations = jnp.tanh(jnp.dot(activations, w) + b)
        final_w, final_b = params[-1]
        logits = jnp.dot(activations, final_w) + final_b
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def loss(params: Any, batch: Any) -> Any:
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    step_size = 0.1

    @jax.jit(donate_argnums=0)
    def train_step(params: Any, batch: Any) -> Any:
        grads = jax.grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db)
                for (w, b), (dw, db) in zip(params, grads)]

    @jax.jit
    def accuracy(params: Any, batch: Any) -> Any:
        inputs, targets = batch
        return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) ==
                        jnp.argmax(targets, axis=1))

    train_images, train_labels = _data(20, 12, 4, seed=4)
    test_images, test_labels = _data(8, 12, 4, seed=5)
    num_train, batch_size = train_images.shape[0], 6
    num_devices = jax.device_count()
    if batch_size % num_devices != 0:
        batch_size = (batch_size // num_devices) * num_devices
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)
    mesh = jax.make_mesh((num_devices,), ("batch",), axis_types=(AxisType.Explicit,))
    replicated_sharding = NamedSharding(mesh, P())
    data_sharding = NamedSharding(mesh, P("batch"))

    def data_stream() -> Any:
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                images_np, labels_np = train_images[batch_idx], train_labels[batch_idx]
                if images_np.shape[0] < batch_size:
                    pad_len = batch_size - images_np.shape[0]
                    images_np = np.concatenate([images_np, images_np[:pad_len]], axis=0)
                    labels_np = np.concatenate([labels_np, labels_np[:pad_len]], axis=0)
                yield (jax.device_put(images_np, data_sharding),
                       jax.device_put(labels_np, data_sharding))

    batches = data_stream()
    params = jax.device_put(init_random_params(0.1, [12, 16, 16, 4]), replicated_sharding)
    train_accuracies, test_accuracies = [], []
    num_epochs = 2
    for epoch in range(num_epochs):
        for _ in range(num_batches - 1):
            batch = next(batches)
            with jax.set_mesh(mesh):
                params = train_step(params, batch)
        train = (jax.sharding.reshard(train_images, data_sharding),
                 jax.sharding.reshard(train_labels, data_sharding))
        test = (jax.sharding.reshard(test_images, data_sharding),
                jax.sharding.reshard(test_labels, data_sharding))
        train_accuracies.append(float(accuracy(params, train)))
        test_accuracies.append(float(accuracy(params, test)))
        if epoch < num_epochs - 1:
            batches = data_stream()
            params = train_step(params, next(batches))
    return {"devices": num_devices, "accuracy": [train_accuracies, test_accuracies],
            "loss": float(jax.jit(loss)(params, (train_images, train_labels))),
            "shardings": [str(leaf.sharding.spec) for leaf in jax.tree.leaves(params)],
            "params": _numpy(jax, params)}


def jax_cpp_prog(jax: Any) -> Result:
    """examples/jax_cpp: ``prog.fn`` lowered as ``jax_to_ir`` does (its constant bound,
    its inputs given as shapes) and run on ``main.cc``'s inputs."""
    jnp = jax.numpy

    def fn(x: Any, y: Any, z: Any) -> Any:
        return jnp.dot(x, y) / z

    shapes = [jax.ShapeDtypeStruct((2, 2), jnp.float32)] * 2
    lowered = jax.jit(partial(fn, z=2.0)).lower(*shapes)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    return {"hlo": lowered.as_text("hlo"),
            "result": np.asarray(lowered.compile()(x, np.ones((2, 2), np.float32)))}


def _onnx_mnist_model() -> Any:
    """A small graph of the ops and attribute kinds of the model ``onnx2xla`` downloads
    (old-opset broadcasting Adds, SAME_UPPER convolutions, pooling, a reshape by an
    initializer, a matmul), with random float32 weights."""
    import onnx  # (an optional test dependency: the dev extra installs it)
    from onnx import helper, numpy_helper
    rng = npr.RandomState(6)

    def tensor(name: str, value: np.ndarray) -> Any:
        return numpy_helper.from_array(value, name)

    def weights(*shape: int) -> np.ndarray:
        return (0.5 * rng.randn(*shape)).astype(np.float32)

    nodes = [
        helper.make_node("Constant", [], ["b1"], value=tensor("b1v", weights(2))),
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], strides=[1, 1],
                         auto_pad="SAME_UPPER", group=1, dilations=[1, 1]),
        helper.make_node("Add", ["c1", "b1"], ["a1"], axis=1, broadcast=1),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                         pads=[0, 0, 0, 0]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[3, 3], strides=[1, 1],
                         auto_pad="SAME_UPPER"),
        helper.make_node("Add", ["c2", "b2"], ["a2"], axis=1, broadcast=1),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p2", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w3"], ["m"]),
        helper.make_node("Add", ["m", "b3"], ["out"], axis=1, broadcast=1),
    ]
    initializers = [tensor("w1", weights(2, 1, 3, 3)), tensor("w2", weights(3, 2, 3, 3)),
                    tensor("b2", weights(3)),
                    tensor("shape", np.array([1, 12], np.int64)),
                    tensor("w3", weights(12, 4)), tensor("b3", weights(4))]
    graph = helper.make_graph(
        nodes, "mnist", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                       [1, 1, 8, 8])],
        [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [1, 4])], initializers)
    return helper.make_model(graph)


def onnx2xla(jax: Any) -> Result:
    """examples/onnx2xla: a NumPy-style interpreter of an ONNX graph, traced by jit and
    differentiated; the model is built in code instead of downloaded."""
    import onnx  # (an optional test dependency: the dev extra installs it)
    from onnx import numpy_helper
    jnp, lax = jax.numpy, jax.lax

    def as_array(proto: Any) -> Any:
        return numpy_helper.to_array(proto).reshape(tuple(proto.dims))

    kinds = dict(onnx.AttributeProto.AttributeType.items())
    read_attribute = {kinds["FLOAT"]: lambda a: a.f, kinds["INT"]: lambda a: a.i,
                      kinds["STRING"]: lambda a: a.s, kinds["TENSOR"]: lambda a: as_array(a.t),
                      kinds["FLOATS"]: lambda a: a.floats, kinds["INTS"]: lambda a: a.ints}

    def maxpool(x: Any, kernel_shape: Any, pads: Any = None, strides: Any = None) -> Any:
        lead = (1,) * (x.ndim - len(kernel_shape))
        window = lead + tuple(kernel_shape)
        steps = (lead + tuple(strides)) if strides else [1] * len(kernel_shape)
        return [lax.reduce_window(x, -jnp.inf, lax.max, window, steps, "VALID")]

    def conv(x: Any, w: Any, b: Any = 0, group: int = 1, kernel_shape: Any = None,
             pads: Any = None, strides: Any = None, dilations: Any = None,
             auto_pad: Any = None) -> Any:
        assert group == 1
        strides = strides or [1] * (w.ndim - 2)
        if auto_pad:
            padding = "SAME" if auto_pad.startswith(b"SAME") else "VALID"
            pads = lax.padtype_to_pads(x.shape[2:], w.shape[2:], strides, padding)
        else:
            pads = pads or [0] * (w.ndim - 2)
        return [lax.conv_with_general_padding(x, w, strides, pads, [1] * (w.ndim - 2),
                                              dilations or [1] * (w.ndim - 2)) + b]

    def add(a: Any, b: Any, axis: Any = None, broadcast: Any = True) -> Any:
        if broadcast:
            axis = (a.ndim - b.ndim) if axis is None else axis % a.ndim
            assert a.shape[axis:][:b.ndim] == b.shape
            b_shape = np.ones(a.ndim, dtype="int64")
            b_shape[axis:axis + b.ndim] = b.shape
            b = jnp.reshape(b, b_shape)
        return [a + b]

    ops = {"Add": add, "Constant": lambda value: [value], "Conv": conv,
           "MatMul": lambda x, y: [jnp.matmul(x, y)], "MaxPool": maxpool,
           "Relu": lambda x: [jnp.maximum(x, 0)],
           "Reshape": lambda x, shape: [jnp.reshape(x, shape)]}

    def interpret(graph: Any, *args: Any) -> Any:
        values = dict({n.name: a for n, a in zip(graph.input, args)},
                      **{n.name: as_array(n) for n in graph.initializer})
        for node in graph.node:
            operands = (values[name] for name in node.input)
            attrs = {a.name: read_attribute[a.type](a) for a in node.attribute}
            for name, output in zip(node.output, ops[node.op_type](*operands, **attrs)):
                values[name] = output
        return [values[n.name] for n in graph.output]

    model = _onnx_mnist_model()
    predict = lambda inputs: interpret(model.graph, inputs)[0]  # noqa: E731
    compiled_predict = jax.jit(predict)
    inputs = jnp.ones((1, 1, 8, 8))
    gradient = jax.grad(lambda x: jnp.sum(compiled_predict(x)))(inputs)
    return {"interpreted": np.asarray(predict(inputs)),
            "compiled": np.asarray(compiled_predict(inputs)),
            "gradient": np.asarray(gradient[..., :3, :3])}


PROGRAMS = {
    "mnist_classifier_fromscratch": mnist_classifier_fromscratch,
    "mnist_classifier": mnist_classifier,
    "mnist_vae": mnist_vae,
    "advi": advi,
    "differentially_private_sgd": differentially_private_sgd,
    "spmd_mnist_classifier_fromscratch": spmd_mnist_classifier_fromscratch,
    "jax_cpp_prog": jax_cpp_prog,
    "onnx2xla": onnx2xla,
}


def to_json(result: Result) -> dict[str, Any]:
    """A result as JSON data: arrays as dtype name and nested lists (float32 round-trips
    exactly through Python floats)."""
    def encode(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return {"dtype": value.dtype.name, "data": value.tolist()}
        if isinstance(value, list):
            return [encode(v) for v in value]
        return value
    return {key: encode(value) for key, value in result.items()}


def from_json(data: dict[str, Any]) -> Result:
    """The inverse of :func:`to_json`."""
    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            return np.array(value["data"], dtype=value["dtype"])
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return [decode(v) for v in value]
        return value
    return {key: decode(value) for key, value in data.items()}
