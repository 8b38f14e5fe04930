"""jnp products: dot, matmul (the ``@`` operator), vdot, inner, outer,
tensordot and einsum, each emitting the dot_general (and transpose /
reduce_sum) equations JAX 0.12 emits; and the ``jnp.linalg`` namespace
(decompositions over ``spec._src.lax.linalg``, at the end of the module)."""

from __future__ import annotations

import itertools
import string
import sys
import types
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from spec._src.api.jit import jit
from spec._src.core import types as T
from spec._src.core.interpreter import canonical_aval_of
from spec._src.lax import dot as ld
from spec._src.lax import elementwise as ew
from spec._src.lax import linalg as lax_linalg
from spec._src.lax import shaping as L
from spec._src.lax import reductions as lr
from spec._src.lax.sharding_reduce_dot import canonicalize_out_sharding
from spec._src.lax.shaping import asarray
from spec._src.numpy import contraction_paths as paths
from spec._src.numpy import creation, util
from spec._src.numpy import math as jnp_math
from spec._src.numpy import shape as jnp_shape
from spec._src.numpy.indexing import diagonal
from spec._src.numpy.math import _promote_dtypes_inexact, conjugate, multiply
from spec._src.numpy.reductions import _ravel, canonicalize_axis, convert
from spec._src.numpy.shape import _moveaxis, matrix_transpose
from spec._src.numpy.vectorize import broadcast_by_vmap
from spec._src.numpy.util import (
    _ensure,
    _inline_jit,
    _promote,
    _shape,
    check_arraylike,
    promote_dtypes,
)

__all__ = [
    "dot", "matmul", "vdot", "inner", "outer", "tensordot", "einsum", "einsum_path", "linalg",
    "cross", "kron",
    "matvec", "vecdot", "vecmat",
]


def _result_dtype(fun_name: str, a: Any, b: Any, preferred: Any) -> tuple[T.DType, bool]:
    if preferred is None:
        return T.result_type_and_weak(a, b)
    return T.to_dtype(preferred, fun_name), False


def _ndim(x: Any) -> int:
    return canonical_aval_of(x).ndim


@_inline_jit
def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
        out_sharding: Any = None) -> Any:
    """Sum-product over the last axis of ``a`` and the second-to-last of ``b``."""
    check_arraylike("dot", a, b)
    pet, weak = _result_dtype("dot", a, b, preferred_element_type)
    an, bn = _ndim(a), _ndim(b)
    if an == 0 or bn == 0:
        contract: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    else:
        contract = ((an - 1,), (0,)) if bn == 1 else ((an - 1,), (bn - 2,))
    out = ld.dot_general(a, b, (contract, ((), ())), precision=precision,
                         preferred_element_type=pet, out_sharding=out_sharding)
    return convert(out, pet, weak)


@_inline_jit
def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
    """Matrix product with NumPy's broadcasting of leading (batch) axes."""
    check_arraylike("matmul", a, b)
    for i, x in enumerate((a, b)):
        if _ndim(x) < 1:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it "
                             f"has ndim {_ndim(x)}")
    pet, weak = _result_dtype("matmul", a, b, preferred_element_type)
    out = ld.staged_matmul(a, b, lambda x, y, dims: ld.dot_general(
        x, y, dims, precision=precision, preferred_element_type=pet, out_sharding=out_sharding))
    return convert(out, pet, weak)


@_inline_jit
def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    check_arraylike("vdot", a, b)
    if T.is_complex(canonical_aval_of(a).dtype):
        a = ew.conj(a)
    return dot(_ravel(a), _ravel(b), precision=precision,
               preferred_element_type=preferred_element_type)


@_inline_jit
def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    check_arraylike("inner", a, b)
    if _ndim(a) == 0 or _ndim(b) == 0:
        if preferred_element_type is not None:
            dt = T.to_dtype(preferred_element_type, "inner")
            a, b = convert(a, dt), convert(b, dt)
        return multiply(a, b)
    return tensordot(a, b, (-1, -1), precision=precision,
                     preferred_element_type=preferred_element_type)


@_inline_jit
def outer(a: Any, b: Any, out: None = None) -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    check_arraylike("outer", a, b)
    a, b = promote_dtypes(a, b)
    a, b = _ravel(a), _ravel(b)
    n, m = canonical_aval_of(a).shape[0], canonical_aval_of(b).shape[0]
    col = L.broadcast_in_dim(a, (n, 1), (0,))
    row = L.broadcast_in_dim(b, (1, m), (1,))
    return ew.mul(col, row)


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    check_arraylike("tensordot", a, b)
    an, bn = _ndim(a), _ndim(b)
    pet, weak = _result_dtype("tensordot", a, b, preferred_element_type)
    if type(axes) is int:
        if axes > (an if an < bn else bn):
            raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                            f"({canonical_aval_of(a).shape} and {canonical_aval_of(b).shape})")
        contract = (tuple(range(an - axes, an)), tuple(range(axes)))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax1, ax2 = axes
        if isinstance(ax1, int) and isinstance(ax2, int):
            contract = ((canonicalize_axis(ax1, an),), (canonicalize_axis(ax2, bn),))
        elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
            if len(ax1) != len(ax2):
                raise TypeError("tensordot requires axes lists to have equal length, got "
                                f"{ax1} and {ax2}.")
            contract = (tuple(canonicalize_axis(i, an) for i in ax1),
                        tuple(canonicalize_axis(i, bn) for i in ax2))
        else:
            raise TypeError("tensordot requires both axes lists to be either ints, tuples or "
                            f"lists, got {ax1} and {ax2}")
    else:
        raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair "
                        "of lists/tuples of ints.")
    out = ld.dot_general(a, b, (contract, ((), ())), precision=precision,
                         preferred_element_type=pet, out_sharding=out_sharding)
    return convert(out, pet, weak)


# ------------------------------------------------------------------- einsum

def _parse_einsum(subscripts: str, shapes: Sequence[T.Shape]) -> tuple[list[str], str]:
    """Input label strings and the output string, with '...' replaced by
    fresh labels (right-aligned across operands, as NumPy broadcasts): the
    last of as many unused letters as the largest rank, as opt_einsum
    chooses them."""
    spec_ = subscripts.replace(" ", "")
    if "->" in spec_:
        ins, out = spec_.split("->")
        explicit = True
    else:
        ins, out, explicit = spec_, "", False
    inputs = ins.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum subscripts {subscripts!r} name {len(inputs)} operands, got "
                         f"{len(shapes)}")
    used = set(spec_)
    fresh = [c for c in string.ascii_letters if c not in used]
    ell = 0
    for s, shape in zip(inputs, shapes):
        if "..." in s:
            ell = ell if ell > len(shape) - (len(s) - 3) else len(shape) - (len(s) - 3)
    pool = fresh[:max((len(shape) for shape in shapes), default=0)]
    ell_labels = "".join(pool[len(pool) - ell:])
    resolved = []
    for s, shape in zip(inputs, shapes):
        if "..." in s:
            k = len(shape) - (len(s) - 3)
            s = s.replace("...", ell_labels[ell - k:] if k else "")
        if len(s) != len(shape) or not all(c in string.ascii_letters for c in s):
            raise ValueError(f"einsum operand with labels {s!r} has rank {len(shape)}; the "
                             "number of labels must equal the rank")
        resolved.append(s)
    if explicit:
        out = out.replace("...", ell_labels)
    else:
        counts = Counter("".join(resolved))
        out = ell_labels + "".join(sorted(c for c in counts if counts[c] == 1
                                          and c not in ell_labels))
    for c in out:
        if not any(c in s for s in resolved):
            raise ValueError(f"einsum output label {c!r} does not appear in any input")
    return resolved, out


_SYMBOLS = string.ascii_lowercase + string.ascii_uppercase


def _symbol(i: int) -> str:
    """opt_einsum's i-th label: the 52 letters, then code points from 192
    (skipping the surrogates)."""
    if i < 52:
        return _SYMBOLS[i]
    return chr(i + 2048) if i >= 55296 else chr(i + 140)


def _from_interleaved(args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """``einsum(x, [0, 1], y, [1, 2], [0, 2])`` as subscripts and operands:
    the labels (any comparable values, or Ellipsis) become letters in their
    sorted order, as opt_einsum converts them."""
    rest = list(args)
    operands, label_lists = [], []
    for _ in range(len(args) // 2):
        operands.append(rest.pop(0))
        label_lists.append(rest.pop(0))
    output = rest[-1] if rest else None
    try:
        labels = set(itertools.chain.from_iterable(label_lists))
        labels.discard(Ellipsis)
        symbols = {lab: _symbol(k) for k, lab in enumerate(sorted(labels))}
    except TypeError:
        raise TypeError("For this input type lists must contain either Ellipsis or hashable "
                        "and comparable object (e.g. int, str).") from None

    def text(labs: Any) -> str:
        return "".join("..." if lab is Ellipsis else symbols[lab] for lab in labs)

    subscripts = ",".join(text(labs) for labs in label_lists)
    if output is not None:
        subscripts += "->" + text(output)
    return subscripts, tuple(operands)


def _check_sizes(names: Sequence[str], shapes: Sequence[T.Shape]) -> None:
    sizes: dict[str, int] = {}
    for i, (s, shape) in enumerate(zip(names, shapes)):
        for c, d in zip(s, shape):
            prev = sizes.get(c)
            if prev is not None and prev != d and prev != 1 and d != 1:
                raise ValueError(f"Size of label '{c}' for operand {i} ({d}) does not match "
                                 f"previous terms ({prev}).")
            if prev is None or prev == 1:
                sizes[c] = d


def _remove(names: str, chars: str) -> str:
    return "".join(c for c in names if c not in chars)


class _Einsum:
    """JAX's einsum contraction of one or two operands at a time."""

    def __init__(self, pet: T.DType, precision: Any) -> None:
        self.pet = pet
        self.precision = precision

    def sum(self, x: Any, axes: Sequence[int]) -> Any:
        dt = canonical_aval_of(x).dtype
        if T.result_type(dt, self.pet) != dt:
            x = convert(x, self.pet)
            dt = self.pet
        reducer = lr.reduce_or if dt == T.bool_ else lr.reduce_sum
        return reducer(x, tuple(axes))

    def sum_uniques(self, x: Any, names: str, uniques: Sequence[str]) -> tuple[Any, str]:
        if uniques:
            x = self.sum(x, [names.index(n) for n in uniques])
            names = _remove(names, "".join(uniques))
        return x, names

    def sum_repeats(self, x: Any, names: str, counts: Counter[str], keep: str
                    ) -> tuple[Any, str]:
        for name, count in counts.items():
            if count > 1:
                axes = [i for i, n in enumerate(names) if n == name]
                eye = _delta(canonical_aval_of(x).shape, axes)
                zeros = _full_like_zero(x)
                x = ew.select_n(eye, zeros, x)
                if name not in keep:
                    x = self.sum(x, axes)
                    names = names.replace(name, "")
                else:
                    x = self.sum(x, axes[:-1])
                    names = names.replace(name, "", count - 1)
        return x, names

    def one(self, x: Any, names: str, result: str) -> tuple[Any, str]:
        counts = Counter(names)
        contracted = sorted(set(names) - set(result))
        x, names = self.sum_uniques(x, names, [n for n in contracted if counts[n] == 1])
        return self.sum_repeats(x, names, counts, result)

    def two(self, lhs: Any, lnames: str, rhs: Any, rnames: str, result: str,
            out_sharding: Any = None) -> tuple[Any, str]:
        contracted = sorted((set(lnames) | set(rnames)) - set(result))
        lhs, lnames = _filter_singletons(lhs, lnames, rhs, rnames)
        rhs, rnames = _filter_singletons(rhs, rnames, lhs, lnames)
        lc, rc = Counter(lnames), Counter(rnames)
        lhs, lnames = self.sum_uniques(lhs, lnames, [n for n in contracted
                                                     if lc[n] == 1 and rc[n] == 0])
        rhs, rnames = self.sum_uniques(rhs, rnames, [n for n in contracted
                                                     if rc[n] == 1 and lc[n] == 0])
        lhs, lnames = self.sum_repeats(lhs, lnames, lc, result + rnames)
        rhs, rnames = self.sum_repeats(rhs, rnames, rc, result + lnames)
        present = set(lnames) | set(rnames)
        contracted = [n for n in contracted if n in present]
        shared = set(lnames) & set(rnames)
        batch = [n for n in result if n in shared]
        lb = tuple(lnames.find(n) for n in batch)
        rb = tuple(rnames.find(n) for n in batch)
        lcon = tuple(lnames.index(n) for n in contracted)
        rcon = tuple(rnames.index(n) for n in contracted)
        deleted = "".join(batch) + "".join(contracted)
        lrest, rrest = _remove(lnames, deleted), _remove(rnames, deleted)
        # Prefer the operand order whose natural output order is the result's.
        names = "".join(batch) + rrest + lrest
        if names == result:
            out = ld.dot_general(rhs, lhs, ((rcon, lcon), (rb, lb)), precision=self.precision,
                                 preferred_element_type=self.pet, out_sharding=out_sharding)
        else:
            names = "".join(batch) + lrest + rrest
            if out_sharding is not None:
                out_sharding = _inverse_sharding(out_sharding, names, result)
            out = ld.dot_general(lhs, rhs, ((lcon, rcon), (lb, rb)), precision=self.precision,
                                 preferred_element_type=self.pet, out_sharding=out_sharding)
        return out, names


def _inverse_sharding(out_sharding: Any, names: str, result: str) -> Any:
    """The dot's own out_sharding when a transpose to ``result`` follows it:
    each of its dims takes the entry of the same label in the result."""
    spec = out_sharding.spec
    parts = tuple(spec.partitions) + (None,) * (len(result) - len(spec))
    inverse = tuple(parts[result.index(n)] for n in names)
    return out_sharding.update(spec=spec.update(partitions=inverse))


def _delta(shape: T.Shape, axes: Sequence[int]) -> Any:
    base = tuple(shape[a] for a in axes)
    iota = L.broadcasted_iota
    iotas = [iota(np.uint32, base, i) for i in range(len(base))]
    eyes = [ew.eq(x, y) for x, y in zip(iotas[:-1], iotas[1:])]
    result = eyes[0]
    for e in eyes[1:]:
        result = ew.bitwise_and(result, e)
    if base != tuple(shape):
        result = L.broadcast_in_dim(result, tuple(shape), tuple(axes))
    return result


def _full_like_zero(x: Any) -> Any:
    aval = canonical_aval_of(x)
    zero = convert(0, aval.dtype)
    return L.broadcast_in_dim(zero, aval.shape, ())


def _filter_singletons(x: Any, names: str, other: Any, other_names: str) -> tuple[Any, str]:
    shape, oshape = canonical_aval_of(x).shape, canonical_aval_of(other).shape
    keep = [shape[i] != 1 or j == -1 or oshape[j] == 1
            for i, j in enumerate(other_names.find(n) for n in names)]
    squeeze = tuple(i for i, k in enumerate(keep) if not k)
    if squeeze:
        x = L.squeeze(x, squeeze)
    return x, "".join(n for n, k in zip(names, keep) if k)


def einsum(subscripts: str, /, *operands: Any, out: None = None, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
    """Einstein summation by a sequence of dot_general / reduce_sum /
    transpose equations. Two-operand einsums emit JAX's exact equations;
    three or more are contracted left to right (same values, possibly a
    different equation sequence from JAX's opt_einsum path)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    if not isinstance(subscripts, str):
        subscripts, operands = _from_interleaved((subscripts, *operands))
    check_arraylike("einsum", *operands)
    shapes = [canonical_aval_of(x).shape for x in operands]
    names, result = _parse_einsum(subscripts, shapes)
    _check_sizes(names, shapes)
    if preferred_element_type is None:
        pet, weak = T.result_type_and_weak(*operands)
    else:
        pet, weak = T.to_dtype(preferred_element_type, "einsum"), False
    out_sharding = canonicalize_out_sharding(out_sharding, "einsum")
    if out_sharding is not None and len(operands) != 2:
        raise NotImplementedError("spec's einsum takes out_sharding with exactly two "
                                  f"operands, got {len(operands)}")
    path = _einsum_path(names, result, shapes, optimize)
    return _contract(list(operands), names, result, path, pet, weak, precision, out_sharding)


def einsum_path(subscripts: Any, /, *operands: Any, optimize: Any = "auto"
                ) -> tuple[list[tuple[int, ...]], paths.PathInfo]:
    """The path ``einsum`` would follow (``optimize`` as there) and a
    printable report of it, computing nothing. Operands may be anything with
    a shape (arrays, ShapeDtypeStructs, nested sequences)."""
    if not isinstance(subscripts, str):
        subscripts, operands = _from_interleaved((subscripts, *operands))
    shapes = [tuple(int(d) for d in np.shape(x)) if not hasattr(x, "shape")
              else tuple(int(d) for d in x.shape) for x in operands]
    names, result = _parse_einsum(subscripts, shapes)
    _check_sizes(names, shapes)
    sizes = _label_sizes(names, shapes)
    if optimize is None:
        optimize = "auto"
    path = _einsum_path(names, result, shapes, optimize)
    if not isinstance(optimize, (str, bool)):
        path = optimize  # returned as given
    return path, paths.PathInfo(names, result, sizes, path)


# The contraction order, as opt_einsum (JAX's path finder) chooses it: a
# path is a list of positions in the list of operands, each step popping
# them (highest first) and appending their contraction.

def _label_sizes(names: Sequence[str], shapes: Sequence[T.Shape]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for s, shape in zip(names, shapes):
        for c, d in zip(s, shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = d
    return sizes


def _einsum_path(names: Sequence[str], result: str, shapes: Sequence[T.Shape],
                 optimize: Any) -> list[tuple[int, ...]]:
    """The path JAX's einsum follows: ``optimize=False`` contracts the first
    two operands each step; a path given is followed; otherwise (``"auto"``,
    ``True`` for ``"optimal"``, a strategy's name) opt_einsum's search of
    that name (``contraction_paths``) over three or more operands."""
    n = len(names)
    if optimize is None:
        optimize = "auto"
    if optimize is False:
        return [(0, 1)] * (n - 1) if n > 1 else [(0,)]
    if optimize is True:
        optimize = "optimal"
    if not isinstance(optimize, str):
        return [tuple(step) for step in optimize]
    if n <= 2:
        return [tuple(range(n))]
    return paths.contraction_path(optimize, names, result, _label_sizes(names, shapes))


@_inline_jit
def _contract(ops: list[Any], names: list[str], result: str, path: list[tuple[int, ...]],
              pet: T.DType, weak: bool, precision: Any, out_sharding: Any) -> Any:
    """The contractions of an einsum along ``path``, staged as JAX stages
    them: an early-inlined jit of the operands (no equation of its own).
    Each step's result has its labels in order of first appearance in its
    operands (the last step's: the einsum's result)."""
    ein = _Einsum(pet, precision)
    ops, names = list(ops), list(names)
    for k, step in enumerate(path):
        positions = sorted(step, reverse=True)
        xs = [ops.pop(i) for i in positions]
        xns = [names.pop(i) for i in positions]
        if k == len(path) - 1:
            target = result
        else:
            kept = frozenset(result).union(*names)
            joined = "".join(xns)
            target = "".join(sorted(set(joined) & kept, key=joined.find))
        if len(xs) == 1:
            x, xn = ein.one(xs[0], xns[0], target)
        else:
            # The operand popped first (the later one) is the "lhs".
            x, xn = ein.two(xs[0], xns[0], xs[1], xns[1], target, out_sharding)
        if xn != target:
            x = L.transpose(x, tuple(xn.index(c) for c in target))
        ops.append(x)
        names.append(target)
    return convert(ops[0], pet, weak)


# ------------------------------------------------------------ jnp.linalg
# Each decomposition is a jitted function named as JAX's (a visible ``jit``
# equation), which promotes its operand to an inexact dtype and calls the
# ``spec._src.lax.linalg`` wrapper.



class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _inexact(fun_name: str, a: Any) -> Any:
    check_arraylike(fun_name, a)
    (out,) = _promote_dtypes_inexact(asarray(a))
    return out


def _square(fun: str, a: Any) -> None:
    shape = canonical_aval_of(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to linalg.{fun} must have shape [..., n, n], got {shape}.")


def _cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    a = _inexact("jnp.linalg.cholesky", a)
    _square("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    if not upper:
        return factor
    return conjugate(matrix_transpose(factor))


def _eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True  # noqa: N803
          ) -> EighResult:
    a = _inexact("jnp.linalg.eigh", a)
    _square("eigh", a)
    if UPLO is None or UPLO == "L":
        lower = True
    elif UPLO == "U":
        lower = False
    else:
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def _eigvalsh(a: Any, UPLO: str | None = "L", *,  # noqa: N803
              symmetrize_input: bool = True) -> Any:
    a = _inexact("jnp.linalg.eigvalsh", a)
    w, _ = _jitted_eigh(a, UPLO, symmetrize_input=symmetrize_input)
    return w


def _qr(a: Any, mode: str = "reduced") -> Any:
    a = _inexact("jnp.linalg.qr", a)
    if mode == "raw":
        raise NotImplementedError("jnp.linalg.qr(mode='raw') needs geqrf, which spec does "
                                  "not have")
    if mode in ("reduced", "r", "full"):
        full_matrices = False
    elif mode == "complete":
        full_matrices = True
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
    if mode == "r":
        return r
    return QRResult(q, r)


def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
         subset_by_index: tuple[int, int] | None = None) -> Any:
    a = _inexact("jnp.linalg.svd", a)
    if hermitian:
        raise NotImplementedError("jnp.linalg.svd(hermitian=True) is not implemented in spec")
    if compute_uv:
        u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                                  subset_by_index=subset_by_index)
        return SVDResult(u, s, vh)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False,
                          subset_by_index=subset_by_index)


def _jit(name: str, fn: Any, statics: tuple[str, ...]) -> Any:
    fn.__name__ = fn.__qualname__ = name
    return jit(fn, static_argnames=statics)


_jitted_cholesky = _jit("cholesky", _cholesky, ("upper", "symmetrize_input"))
_jitted_eigh = _jit("eigh", _eigh, ("UPLO", "symmetrize_input"))
_jitted_eigvalsh = _jit("eigvalsh", _eigvalsh, ("UPLO", "symmetrize_input"))
_jitted_qr = _jit("qr", _qr, ("mode",))
_jitted_svd = _jit("svd", _svd, ("full_matrices", "compute_uv", "hermitian",
                                 "subset_by_index"))


def _linalg_cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """The Cholesky factor (lower, or upper = L^H); NaNs where ``a`` is not
    positive definite."""
    return _jitted_cholesky(a, upper=upper, symmetrize_input=symmetrize_input)


def _linalg_eigh(a: Any, UPLO: str | None = None,  # noqa: N803
                 symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix."""
    out: EighResult = _jitted_eigh(a, UPLO, symmetrize_input)
    return out


def _linalg_eigvalsh(a: Any, UPLO: str | None = "L", *,  # noqa: N803
                     symmetrize_input: bool = True) -> Any:
    return _jitted_eigvalsh(a, UPLO, symmetrize_input=symmetrize_input)


def _linalg_qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition; ``mode`` is "reduced" (default), "complete" or "r"."""
    return _jitted_qr(a, mode)


def _linalg_svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
                hermitian: bool = False, subset_by_index: tuple[int, int] | None = None
                ) -> Any:
    """Singular value decomposition ``(U, S, Vh)``, or ``S`` alone."""
    return _jitted_svd(a, full_matrices, compute_uv, hermitian, subset_by_index)


def _linalg_svdvals(x: Any, /) -> Any:
    check_arraylike("jnp.linalg.svdvals", x)
    return _linalg_svd(x, compute_uv=False, hermitian=False)


def _linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    check_arraylike("jnp.linalg.diagonal", x)
    return diagonal(x, offset=offset, axis1=-2, axis2=-1)


def _make_linalg_module() -> types.ModuleType:
    """``spec.numpy.linalg``: a module object (also importable by name)."""
    mod = types.ModuleType("spec.numpy.linalg", "jnp.linalg: the decompositions and the "
                           "matrix products")
    fns: dict[str, Any] = {
        "cholesky": _linalg_cholesky, "eigh": _linalg_eigh, "eigvalsh": _linalg_eigvalsh,
        "qr": _linalg_qr, "svd": _linalg_svd, "svdvals": _linalg_svdvals,
        "diagonal": _linalg_diagonal, "matmul": matmul, "tensordot": tensordot,
        "outer": outer, "EighResult": EighResult, "QRResult": QRResult,
        "SVDResult": SVDResult,
    }
    for name, fn in fns.items():
        setattr(mod, name, fn)
    sys.modules["spec.numpy.linalg"] = mod
    return mod


linalg = _make_linalg_module()


def _batch_letters(n: int) -> str:
    return "".join(chr(ord("a") + i) for i in range(n))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    a, b = _ensure("jnp.vecdot", x1, x2)
    sa, sb = _shape(a), _shape(b)
    try:
        n1, n2 = sa[axis], sb[axis]
    except IndexError:
        raise ValueError(f"vecdot: axis={axis} is out of bounds for shapes {sa} and {sb}"
                         ) from None
    if n1 != n2:
        raise ValueError(f"axes must match; got shapes {sa} and {sb} with axis={axis}")
    a = _moveaxis(a, axis, -1)
    b = _moveaxis(b, axis, -1)
    return _vectorized_vdot(a, b, precision, preferred_element_type)


def _vectorized_vdot(a: Any, b: Any, precision: Any, preferred_element_type: Any) -> Any:
    """``vdot`` of the last axes, broadcast over the leading ones as JAX's
    ``vectorize`` with signature ``(n),(n)->()`` does it."""
    args = [creation.asarray(a), creation.asarray(b)]
    batch = np.broadcast_shapes(*(_shape(x)[:-1] for x in args))

    def product(x: Any, y: Any) -> Any:
        return vdot(x, y, precision=precision, preferred_element_type=preferred_element_type)

    return broadcast_by_vmap(product, args, [("n",), ("n",)], tuple(batch))


def _matvec_fn(x1: Any, x2: Any) -> Any:
    a, b = _promote(x1, x2)
    if _ndim(a) < 2 or _ndim(b) < 1:
        raise ValueError(f"matvec: x1 must be at least 2-D and x2 at least 1-D, got shapes "
                         f"{_shape(a)} and {_shape(b)}")
    n, m = _shape(a)[-2:]
    if _shape(b)[-1] != m:
        raise ValueError(f"matvec: contracting dimensions differ: {_shape(a)} and {_shape(b)}")
    batch = np.broadcast_shapes(_shape(a)[:-2], _shape(b)[:-1])
    a = jnp_shape.broadcast_to(a, (*batch, n, m))
    b = jnp_shape.broadcast_to(b, (*batch, m))
    letters = _batch_letters(len(batch))
    return einsum(f"{letters}yz,{letters}z->{letters}y", a, b)


def _vecmat_fn(x1: Any, x2: Any) -> Any:
    a, b = _promote(x1, x2)
    if _ndim(a) < 1 or _ndim(b) < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-D and x2 at least 2-D, got shapes "
                         f"{_shape(a)} and {_shape(b)}")
    n, m = _shape(b)[-2:]
    if _shape(a)[-1] != n:
        raise ValueError(f"vecmat: contracting dimensions differ: {_shape(a)} and {_shape(b)}")
    batch = np.broadcast_shapes(_shape(a)[:-1], _shape(b)[:-2])
    a = jnp_shape.broadcast_to(jnp_math.conj(a), (*batch, n))
    b = jnp_shape.broadcast_to(b, (*batch, n, m))
    letters = _batch_letters(len(batch))
    return einsum(f"{letters}y,{letters}yz->{letters}z", a, b)


_matvec = util._jit("matvec", _matvec_fn)


_vecmat = util._jit("vecmat", _vecmat_fn)


def matvec(x1: Any, x2: Any, /) -> Any:
    check_arraylike("matvec", x1, x2)
    return _matvec(x1, x2)


def vecmat(x1: Any, x2: Any, /) -> Any:
    check_arraylike("vecmat", x1, x2)
    return _vecmat(x1, x2)


def _kron_fn(a: Any, b: Any) -> Any:
    a, b = _promote(a, b)
    na, nb = _ndim(a), _ndim(b)
    if na < nb:
        a = L.expand_dims(a, tuple(range(nb - na)))
    elif nb < na:
        b = L.expand_dims(b, tuple(range(na - nb)))
    nd = _ndim(a)
    out_shape = tuple(x * y for x, y in zip(_shape(a), _shape(b)))
    ae = L.expand_dims(a, tuple(range(1, 2 * nd, 2)))
    be = L.expand_dims(b, tuple(range(0, 2 * nd, 2)))
    # lax.mul broadcasts the size-1 axes itself: its JVP saves the operands
    # at their expanded shapes, as JAX's does.
    return jnp_shape.reshape(ew.mul(ae, be), out_shape)


_kron = util._jit("kron", _kron_fn)


def kron(a: Any, b: Any) -> Any:
    check_arraylike("kron", a, b)
    return _kron(a, b)


def _cross_fn(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
              axis: int | None = None) -> Any:
    if axis is not None:
        axisa = axisb = axisc = axis
    a = jnp_shape.moveaxis(a, axisa, -1)
    b = jnp_shape.moveaxis(b, axisb, -1)
    if _shape(a)[-1] != 3 or _shape(b)[-1] != 3:
        raise ValueError(f"Dimension must be 3 for cross product, got shapes {_shape(a)} and "
                         f"{_shape(b)}")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = creation.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return jnp_shape.moveaxis(c, 0, axisc)


_cross = util._jit("cross", _cross_fn, ("axisa", "axisb", "axisc", "axis"))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    check_arraylike("cross", a, b)
    return _cross(a, b, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis)
