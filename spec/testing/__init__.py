"""Hypothesis strategies and checkers for property-testing JAX-like systems.

Anyone can use these against their own implementation: draw dtypes, shapes,
broadcastable shape pairs, arrays, meshes, partition specs (with unreduced
and reduced axes), sharded types and random well-typed programs the way
spec's own tests do; check that a primitive's impl produces what its typing
rule promises (``check_impl_matches_typing``), that derivatives agree with
finite differences (``check_grads``), that a transpose passes the
dot-product test (``check_transpose``) and that a batched function agrees
with a loop over the batch (``check_vmap``). The checkers take the
transformation under test as an argument, so they check JAX (or any other
implementation) as readily as spec.

hypothesis is a test-time dependency; importing this module requires it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from spec._src.core import types as T
from spec._src.core.interpreter import Primitive, canonical_value
from spec._src.core.sharding import AbstractMesh, AxisType, NamedSharding, P
from spec._src.core.tree_util import tree_leaves
from spec._src.api.autodiff import linear_transpose
from spec._src.api.vmap import vmap as spec_vmap
from spec.test_util import check_grads, check_jvp, check_vjp
from spec._src.core.types import ArrayType

__all__ = [
    "PROGRAM_OPS", "Program", "check_grads", "check_jvp", "check_vjp", "array_types", "arrays",
    "broadcastable_shapes", "check_impl_matches_typing", "check_transpose", "check_vmap",
    "dtypes", "meshes", "partition_specs", "programs", "shapes", "sharded_types", "values_of",
]

# 64-bit types only exist under x64; the default strategies avoid them.
X32_DTYPES: list[T.DType] = [
    T.bool_, T.int8, T.int16, T.int32, T.uint8, T.uint16, T.uint32, T.float16, T.bfloat16,
    T.float32, T.complex64]


def dtypes(include: Sequence[T.DType] | None = None) -> st.SearchStrategy[T.DType]:
    return st.sampled_from(list(include) if include is not None else X32_DTYPES)


def shapes(max_rank: int = 4, max_side: int = 5, min_rank: int = 0) -> st.SearchStrategy[T.Shape]:
    return st.lists(st.integers(0, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


def broadcastable_shapes(max_rank: int = 4, max_side: int = 4
                         ) -> st.SearchStrategy[tuple[T.Shape, T.Shape]]:
    """Pairs of shapes that lax's elementwise rule accepts: equal rank with
    size-1 stretching, or one side rank 0."""

    @st.composite
    def pair(draw: Any) -> tuple[T.Shape, T.Shape]:
        base = draw(shapes(max_rank, max_side, min_rank=1))
        if draw(st.booleans()):
            return base, ()
        other = tuple(d if draw(st.booleans()) else 1 for d in base)
        return (base, other) if draw(st.booleans()) else (other, base)

    return pair()


def array_types(dtype_strategy: st.SearchStrategy[T.DType] | None = None,
                shape_strategy: st.SearchStrategy[T.Shape] | None = None
                ) -> st.SearchStrategy[ArrayType]:
    return st.builds(lambda s, d, w: ArrayType(s, d, w and d != T.bool_),
                     shapes() if shape_strategy is None else shape_strategy,
                     dtypes() if dtype_strategy is None else dtype_strategy, st.booleans())


def values_of(aval: ArrayType, seed: int) -> np.ndarray:
    """Deterministic values of a type, including edge values for floats."""
    rng = np.random.default_rng(seed)
    dt = aval.dtype
    if dt == T.bool_:
        return rng.integers(0, 2, aval.shape).astype(bool)
    if T.is_int(dt):
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -100), min(int(info.max), 100)
        return rng.integers(lo, hi + 1, aval.shape).astype(dt)
    real = rng.standard_normal(aval.shape) * 3
    if T.is_complex(dt):
        return (real + 1j * rng.standard_normal(aval.shape)).astype(dt)
    return real.astype(dt)


def arrays(aval_strategy: st.SearchStrategy[ArrayType] | None = None
           ) -> st.SearchStrategy[np.ndarray]:
    return st.builds(values_of, array_types() if aval_strategy is None else aval_strategy,
                     st.integers(0, 2**31 - 1))


def check_impl_matches_typing(prim: Primitive, *operands: Any, **params: Any) -> list[ArrayType]:
    """Run typing and impl on concrete operands; raise AssertionError unless
    every output has exactly the shape and dtype the typing rule gives."""
    values, avals = zip(*(canonical_value(x) for x in operands)) if operands else ((), ())
    out_types = list(prim.typing(*avals, **params))
    outs = prim.impl(*values, **params)
    assert len(outs) == len(out_types), f"{prim}: {len(outs)} outputs, typed {len(out_types)}"
    for out, ty in zip(outs, out_types):
        arr = np.asarray(out)
        assert arr.shape == ty.shape and arr.dtype == ty.dtype, (
            f"{prim}: impl gave {arr.dtype}{list(arr.shape)}, typing says {ty}")
    return out_types


# ------------------------------------------------------- random programs

# Each op is its source text (``{0}``, ``{1}`` its operands): an expression, or statements
# that assign ``{out}``. Programs hold float32 values only (an op may pass through
# integers, booleans, half floats or complex values inside), so every op is well typed
# once its shape rule accepts the operands' shapes. ``jax`` and ``lax`` in the text are
# the library whose ``numpy`` runs the program.
_SOURCE: dict[str, str] = {
    # elementwise and reductions
    "sin": "jnp.sin({0})", "cos": "jnp.cos({0})", "tanh": "jnp.tanh({0})",
    "exp_neg_sq": "jnp.exp(-({0} * {0}))", "abs": "jnp.abs({0})", "negative": "-{0}",
    "sqrt_abs": "jnp.sqrt(jnp.abs({0}))", "square": "jnp.square({0})",
    "log1p_abs": "jnp.log1p(jnp.abs({0}))", "erf": "lax.erf({0})",
    "sum0": "jnp.sum({0}, axis=0)", "sumall": "jnp.sum({0})",
    "mean_keep": "jnp.mean({0}, axis=-1, keepdims=True)",
    "max_keep": "jnp.max({0}, axis=0, keepdims=True)",
    "logsumexp0": "jax.nn.logsumexp({0}, axis=0)",
    "scale": "{0} * 0.5", "shift": "{0} + 1",
    "astype_roundtrip": "{0}.astype(jnp.bfloat16).astype(jnp.float32)",
    "round_int": "jnp.round({0} * 4).astype(jnp.int32).astype(jnp.float32)",
    # structural: shapes, slicing, gathers, sorting, scans
    "transpose": "jnp.transpose({0})", "flatten": "jnp.reshape({0}, (-1,))",
    "expand0": "jnp.expand_dims({0}, 0)", "rev0": "jnp.flip({0}, axis=0)",
    "slice_step": "{0}[::2]", "pad1": "jnp.pad({0}, 1)",
    "dynamic_slice0": "lax.dynamic_slice_in_dim({0}, 1, 1, axis=0)",
    "take0": "{0}[jnp.array([0, 0])]", "sort0": "jnp.sort({0}, axis=0)",
    "cumsum0": "jnp.cumsum({0}, axis=0)", "cummax0": "lax.cummax({0}, axis=0)",
    # control flow, custom rules, PRNG, refs
    "cond_sum": "lax.cond(jnp.sum({0}) > 0, jnp.sin, jnp.cos, {0})",
    "fori_loop": "lax.fori_loop(0, 3, lambda i, c: c * 0.5 + jnp.sin(c), {0})",
    "while_loop": "lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, jnp.sin(c[1]) + 0.5), "
                  "(0, {0}))[1]",
    "scan0": "lax.scan(lambda c, r: (c + r, c * r), jnp.zeros({0}.shape[1:]), {0})[1]",
    "checkpoint": "jax.checkpoint(lambda a: jnp.sin(a) * a)({0})",
    "relu": "jax.nn.relu({0})", "softplus": "jax.nn.softplus({0})",
    "noise": "{0} + jax.random.normal(jax.random.key(0), {0}.shape)",
    "uniform_fold": "{0} * jax.random.uniform(jax.random.fold_in(jax.random.key(1), 3), "
                    "{0}.shape)",
    "ref_accumulate": "ref = jax.new_ref({0})\nref[...] += {0} * 0.5\n{out} = ref[...]",
    # convolutions (a fixed kernel), on a matrix (height, width) or (channels, width)
    "conv2d_same": "{out} = lax.conv_general_dilated({0}[None, None], "
                   "jnp.array([[[[0.5, -1.0], [0.25, 2.0]]]]), (1, 1), 'SAME')[0, 0]",
    "conv1d_strided": "w = jnp.cos(jnp.arange(6.0 * {0}.shape[0])).reshape(2, {0}.shape[0], 3)\n"
                      "{out} = lax.conv_general_dilated({0}[None], w, (2,), [(1, 1)],\n"
                      "    rhs_dilation=(1,))[0]",
    # linear algebra on a well-conditioned symmetric positive definite matrix made from a
    # matrix (m, n): its Gram matrix plus a diagonal 1..m scaled past twice its norm, so
    # that the eigenvalues are distinct and the condition number at most about m
    "cholesky_spd": "g = {0} @ {0}.T + jnp.diag(jnp.arange(1.0, {0}.shape[0] + 1)) * (\n"
                    "    1 + 2 * jnp.sum({0} * {0}))\n{out} = jnp.linalg.cholesky(g)",
    "qr_spd": "g = {0} @ {0}.T + jnp.diag(jnp.arange(1.0, {0}.shape[0] + 1)) * (\n"
              "    1 + 2 * jnp.sum({0} * {0}))\nq, r = jnp.linalg.qr(g)\n{out} = q + r",
    "solve_tril": "g = {0} @ {0}.T + jnp.diag(jnp.arange(1.0, {0}.shape[0] + 1)) * (\n"
                  "    1 + 2 * jnp.sum({0} * {0}))\n"
                  "{out} = lax.linalg.triangular_solve(jnp.tril(g), {0}, left_side=True, "
                  "lower=True)",
    "eigvalsh_spd": "g = {0} @ {0}.T + jnp.diag(jnp.arange(1.0, {0}.shape[0] + 1)) * (\n"
                    "    1 + 2 * jnp.sum({0} * {0}))\n{out} = jnp.linalg.eigh(g)[0]",
    # Fourier transforms, back to real values
    "fft_re_im": "c = jnp.fft.fft({0})\n{out} = c.real - c.imag",
    "rfft_irfft0": "jnp.fft.irfft(jnp.fft.rfft({0}, axis=0) * 0.5, n={0}.shape[0], axis=0)",
    "fft2_real": "jnp.fft.ifft2(jnp.fft.fft2({0}) * 2).real",
    # other dtypes inside: a rounding float16 product, bfloat16 ops that are exact (XLA may
    # keep a bfloat16 product in float32: excess precision), integer floor division
    # and remainder of negative values, boolean masks
    "f16_mul": "({0}.astype(jnp.float16) * {0}.astype(jnp.float16)).astype(jnp.float32)",
    "bf16_clip": "(jnp.maximum({0}.astype(jnp.bfloat16), jnp.bfloat16(-1)) * jnp.bfloat16(4))"
                 ".astype(jnp.float32)",
    "int_divmod": "k = jnp.clip({0} * 4, -1000, 1000).astype(jnp.int32)\n"
                  "{out} = (k // 3 + k % -5 * jnp.int32(7)).astype(jnp.float32)",
    "bool_mask": "jnp.where(({0} > 0) ^ ({0} < -1), {0}, jnp.float32(0.5)) * "
                 "jnp.logical_not({0} > 2)",
    # binary
    "add": "{0} + {1}", "subtract": "{0} - {1}", "multiply": "{0} * {1}",
    "maximum": "jnp.maximum({0}, {1})", "minimum": "jnp.minimum({0}, {1})",
    "arctan2": "jnp.arctan2({0}, {1})", "where_pos": "jnp.where({0} > 0, {0}, {1})",
    "select_lt": "lax.select({0} < {1}, {0}, {1})", "dot": "jnp.dot({0}, {1})",
    "concat0": "jnp.concatenate([{0}, {1}], axis=0)",
}
_BINARY_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "arctan2", "where_pos",
               "select_lt", "dot", "concat0")
_UNARY_OPS = tuple(op for op in _SOURCE if op not in _BINARY_OPS)

# Unary ops that need rank >= 1, and those that also need a nonempty axis 0.
_RANKED = ("sum0", "mean_keep", "logsumexp0", "rev0", "slice_step", "sort0", "cumsum0",
           "cummax0", "scan0", "fft_re_im")
_NONEMPTY0 = ("max_keep", "dynamic_slice0", "take0", "rfft_irfft0")
# Ops on a matrix with at least one row, and those that need a nonempty matrix.
_MATRIX = ("cholesky_spd", "qr_spd", "solve_tril", "eigvalsh_spd")
_NONEMPTY_MATRIX = ("conv2d_same", "conv1d_strided", "fft2_real")


def _unary_shape(op: str, s: T.Shape) -> T.Shape | None:
    if op in _RANKED + _NONEMPTY0 and not s or op in _NONEMPTY0 and s[0] == 0:
        return None
    if op in _MATRIX + _NONEMPTY_MATRIX and (len(s) != 2 or s[0] == 0) \
            or op in _NONEMPTY_MATRIX and s[1] == 0:
        return None
    if op in ("cholesky_spd", "qr_spd"):
        return (s[0], s[0])
    if op == "eigvalsh_spd":
        return (s[0],)
    if op == "conv1d_strided":
        return (2, (s[1] - 1) // 2 + 1)
    if op in ("sum0", "logsumexp0"):
        return s[1:]
    if op == "sumall":
        return ()
    if op == "mean_keep":
        return (*s[:-1], 1)
    if op == "transpose":
        return tuple(reversed(s))
    if op == "flatten":
        return (int(np.prod(s, dtype=np.int64)),)
    if op == "expand0":
        return (1, *s)
    if op == "pad1":
        return tuple(d + 2 for d in s)
    if op == "slice_step":
        return ((s[0] + 1) // 2, *s[1:])
    if op in ("max_keep", "dynamic_slice0"):
        return (1, *s[1:])
    if op == "take0":
        return (2, *s[1:])
    return s


def _binary_shape(op: str, a: T.Shape, b: T.Shape) -> T.Shape | None:
    if op == "dot":
        if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
            return (a[0], b[1])
        return None
    if op == "concat0":
        return (a[0] + b[0], *a[1:]) if a and len(a) == len(b) and a[1:] == b[1:] else None
    if op == "select_lt":
        return a if a == b else None
    return a if a == b else (a if not b else (b if not a else None))


def _library_of(jnp: Any) -> Any:
    """The library whose NumPy namespace ``jnp`` is (``jax`` for ``jax.numpy``)."""
    return importlib.import_module(jnp.__name__.rpartition(".")[0])


def _statements(op: str, args: Sequence[str], out: str, wide: bool = False) -> str:
    text = _SOURCE[op]
    if wide:  # a float64 program: its values, and the complex ones inside, twice as wide
        text = text.replace("float32", "float64").replace("complex64", "complex128")
    return text.format(*args, out=out) if "{out}" in text else f"{out} = {text.format(*args)}"


@functools.cache
def _compiled(op: str, wide: bool) -> Any:
    return compile(_statements(op, ("a0", "a1"), "out", wide), f"<op {op}>", "exec")


def _apply(jnp: Any, op: str, args: list[Any], wide: bool = False) -> Any:
    jax = _library_of(jnp)
    scope: dict[str, Any] = {"jnp": jnp, "jax": jax, "lax": jax.lax}
    scope.update((f"a{i}", a) for i, a in enumerate(args))
    exec(_compiled(op, wide), scope)  # noqa: S102 - the op's source text, one per op
    return scope["out"]


class Program:
    """A random straight-line array program, runnable against any JAX-like
    library through its NumPy namespace (``jnp``; ``jax.lax``, ``jax.random``
    and the rest are found from it), so that implementations can be compared.
    ``dtype``: float32, or float64 (the values, and the float32 and complex64
    ones inside ops, twice as wide; run with ``jax_enable_x64``)."""

    def __init__(self, input_shapes: list[T.Shape], steps: list[tuple[str, tuple[int, ...]]],
                 dtype: T.DType = T.float32) -> None:
        self.input_shapes = input_shapes
        self.steps = steps
        self.dtype = dtype

    @property
    def wide(self) -> bool:
        return self.dtype == T.float64

    def __repr__(self) -> str:
        return f"Program(inputs={self.input_shapes}, steps={self.steps}, dtype={self.dtype})"

    def __call__(self, jnp: Any, *inputs: Any) -> Any:
        values = list(inputs)
        for op, idx in self.steps:
            values.append(_apply(jnp, op, [values[i] for i in idx], self.wide))
        return values[-1]

    def inputs(self, seed: int) -> list[np.ndarray]:
        return [values_of(ArrayType(s, self.dtype), seed + i)
                for i, s in enumerate(self.input_shapes)]

    def source(self, name: str = "program") -> str:
        """The program as Python source, ``def program(jnp, v0, ...)``: what
        ``__call__`` runs, for copy-paste reproductions."""
        n = len(self.input_shapes)
        lines = [f"def {name}({', '.join(['jnp'] + [f'v{i}' for i in range(n)])}):",
                 "    jax = importlib.import_module(jnp.__name__.rpartition('.')[0])",
                 "    lax = jax.lax"]
        for k, (op, idx) in enumerate(self.steps):
            text = _statements(op, [f"v{i}" for i in idx], f"v{n + k}", self.wide)
            lines += [f"    {line}" for line in text.splitlines()]
        lines.append(f"    return v{n + len(self.steps) - 1}")
        return "import importlib\n\n\n" + "\n".join(lines) + "\n"


@st.composite
def _programs(draw: Any, max_steps: int, unary: tuple[str, ...], binary: tuple[str, ...],
              dtype: T.DType = T.float32) -> Program:
    n_inputs = draw(st.integers(1, 2))
    base = draw(shapes(max_rank=3, max_side=4, min_rank=0))
    input_shapes = [base if draw(st.booleans()) else draw(shapes(3, 4)) for _ in range(n_inputs)]
    value_shapes = list(input_shapes)
    steps: list[tuple[str, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(1, max_steps))):
        if binary and (not unary or draw(st.booleans())):
            op = draw(st.sampled_from(binary))
            i = draw(st.integers(0, len(value_shapes) - 1))
            j = draw(st.integers(0, len(value_shapes) - 1))
            out = _binary_shape(op, value_shapes[i], value_shapes[j])
            idx: tuple[int, ...] = (i, j)
        else:
            op = draw(st.sampled_from(unary))
            i = draw(st.integers(0, len(value_shapes) - 1))
            out = _unary_shape(op, value_shapes[i])
            idx = (i,)
        if out is not None:
            steps.append((op, idx))
            value_shapes.append(out)
    if not steps:
        steps.append(("scale", (0,)))
    return Program(input_shapes, steps, dtype)


PROGRAM_OPS: tuple[str, ...] = tuple(_SOURCE)


def programs(max_steps: int = 8, ops: Sequence[str] | None = None,
             dtype: T.DType = T.float32) -> st.SearchStrategy[Program]:
    """Random well-typed programs of ``dtype`` values (float32 or float64, see
    ``Program``) of up to ``max_steps`` ops drawn from ``ops`` (names in
    ``PROGRAM_OPS``; all of them by default)."""
    chosen = PROGRAM_OPS if ops is None else tuple(ops)
    unknown = sorted(set(chosen) - set(PROGRAM_OPS))
    if unknown or not chosen:
        raise ValueError(f"programs: unknown ops {unknown}; the ops are {PROGRAM_OPS}")
    if dtype not in (T.float32, T.float64):
        raise ValueError(f"programs: dtype must be float32 or float64, got {dtype}")
    return _programs(max_steps, tuple(o for o in _UNARY_OPS if o in chosen),
                     tuple(o for o in _BINARY_OPS if o in chosen), dtype)


# ------------------------------------------------ meshes and sharded types

MESH_AXIS_NAMES = ("X", "Y", "Z", "W")


def meshes(max_axes: int = 2, max_devices: int = 4,
           axis_types: Sequence[AxisType] = (AxisType.Explicit,)
           ) -> st.SearchStrategy[AbstractMesh]:
    """Abstract meshes of 1 to ``max_axes`` axes named X, Y, ..., of sizes 1,
    2 or 4, over at most ``max_devices`` devices."""

    @st.composite
    def mesh(draw: Any) -> AbstractMesh:
        sizes: list[int] = []
        budget = max_devices
        for _ in range(draw(st.integers(1, min(max_axes, len(MESH_AXIS_NAMES))))):
            size = draw(st.sampled_from([s for s in (1, 2, 4) if s <= budget]))
            sizes.append(size)
            budget //= size
        types = tuple(draw(st.sampled_from(list(axis_types))) for _ in sizes)
        return AbstractMesh(tuple(sizes), MESH_AXIS_NAMES[:len(sizes)], axis_types=types)

    return mesh()


def partition_specs(mesh: AbstractMesh, shape: T.Shape, *, reductions: bool = True
                    ) -> st.SearchStrategy[P]:
    """Partition specs valid for ``shape`` on ``mesh``: each dimension
    replicated or split over mesh axes whose sizes' product divides it, no
    axis twice; with ``reductions``, some of the unused axes unreduced and
    some reduced."""
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))

    @st.composite
    def spec(draw: Any) -> P:
        free = list(mesh.axis_names)
        entries: list[Any] = []
        for d in shape:
            options: list[Any] = [None]
            options += [a for a in free if d % sizes[a] == 0]
            options += [(a, b) for a in free for b in free
                        if a != b and d % (sizes[a] * sizes[b]) == 0]
            entry = draw(st.sampled_from(options))
            for a in (() if entry is None else (entry,) if isinstance(entry, str) else entry):
                free.remove(a)
            entries.append(entry)
        extra: dict[str, Any] = {}
        if reductions and free:
            unreduced = draw(st.sets(st.sampled_from(free)))
            reduced = draw(st.sets(st.sampled_from([a for a in free if a not in unreduced]))
                           if len(unreduced) < len(free) else st.just(set()))
            if unreduced:
                extra["unreduced"] = unreduced
            if reduced:
                extra["reduced"] = reduced
        return P(*entries, **extra)

    return spec()


def sharded_types(mesh: AbstractMesh, dtype_strategy: st.SearchStrategy[T.DType] | None = None,
                  shape_strategy: st.SearchStrategy[T.Shape] | None = None, *,
                  reductions: bool = False) -> st.SearchStrategy[ArrayType]:
    """Array types sharded over ``mesh`` (``f32[8@X,4]``; with
    ``reductions``, unreduced/reduced ones too: ``f32[4]{U:X}``)."""

    @st.composite
    def sharded(draw: Any) -> ArrayType:
        shape = draw(shapes(3, 8) if shape_strategy is None else shape_strategy)
        dtype = draw(dtypes([T.float32, T.int32, T.bfloat16]) if dtype_strategy is None
                     else dtype_strategy)
        spec = draw(partition_specs(mesh, shape, reductions=reductions))
        return ArrayType(tuple(shape), dtype, sharding=NamedSharding(mesh, spec))

    return sharded()


# ---------------------------------------------------------------- checkers


def _random_like(x: Any, rng: np.random.Generator) -> np.ndarray:
    a = np.asarray(x)
    values: np.ndarray = np.asarray(rng.standard_normal(a.shape))
    if np.iscomplexobj(a):
        values = values + 1j * np.asarray(rng.standard_normal(a.shape))
    return np.asarray(values, dtype=a.dtype)


def _inner(xs: Sequence[Any], ys: Sequence[Any]) -> complex:
    """sum_i <x_i, y_i>, accumulated in float64/complex128."""
    return complex(sum(np.vdot(np.asarray(y, np.complex128).ravel(),
                               np.asarray(x, np.complex128).ravel()) for x, y in zip(xs, ys)))


def check_transpose(f: Callable[..., Any], primals: Sequence[Any],
                    transpose: Callable[..., Any] | None = None, *, seed: int = 0,
                    rtol: float = 1e-5) -> None:
    """The dot-product test of a linear ``f`` and its transpose: for random
    ``x`` and cotangent ``c``, ``<f(x), c> == <x, f^T(c)>`` (to ``rtol`` of
    the terms' magnitudes). ``transpose(c)`` defaults to spec's
    ``linear_transpose(f, *primals)``; pass another implementation's to
    check it. Raises AssertionError naming both sides."""
    rng = np.random.default_rng(seed)
    x = [_random_like(p, rng) for p in primals]
    y = f(*x)
    ct = [_random_like(leaf, rng) for leaf in tree_leaves(y)]
    f_t = linear_transpose(f, *primals) if transpose is None else transpose
    ct_tree = ct[0] if len(ct) == 1 and not isinstance(y, (tuple, list)) else type(y)(ct)
    xt = tree_leaves(f_t(ct_tree))
    lhs = _inner(tree_leaves(y), ct)
    rhs = _inner(x, xt)
    scale = max(1.0, float(np.sqrt(_inner(tree_leaves(y), tree_leaves(y)).real
                                   * _inner(ct, ct).real)))
    assert abs(lhs - rhs) <= rtol * scale, (
        f"dot-product test failed: <f(x), ct> = {lhs}, <x, f_T(ct)> = {rhs}")


def check_vmap(f: Callable[..., Any], args: Sequence[Any],
               in_axes: int | None | Sequence[int | None] = 0,
               vmap: Callable[..., Any] | None = None, *, rtol: float = 0.0) -> None:
    """A batched ``f`` against a loop: ``vmap(f, in_axes)(*args)`` must equal
    the results of ``f`` on each slice, stacked along axis 0 (bit for bit
    with ``rtol`` 0). ``vmap`` defaults to spec's; pass another
    implementation's to check it."""
    axes: list[int | None] = (list(in_axes) if isinstance(in_axes, Sequence)
                              else [in_axes] * len(args))
    sizes = {np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None}
    assert len(sizes) == 1, f"check_vmap: mapped axes of different sizes {sorted(sizes)}"
    batched = tree_leaves((spec_vmap if vmap is None else vmap)(f, in_axes=tuple(axes))(*args))
    slices = [tree_leaves(f(*(a if ax is None else np.take(np.asarray(a), i, axis=ax)
                                 for a, ax in zip(args, axes))))
              for i in range(sizes.pop())]
    for k, got in enumerate(batched):
        want = np.stack([np.asarray(s[k]) for s in slices])
        got = np.asarray(got)
        assert got.shape == want.shape and got.dtype == want.dtype, (
            f"output {k}: vmap gives {got.dtype}{list(got.shape)}, the loop "
            f"{want.dtype}{list(want.shape)}")
        if rtol:
            np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {k}")
