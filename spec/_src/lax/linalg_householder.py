"""The product of Householder reflectors: ``householder_product``.

``householder_product(a, taus)`` is the ``[..., m, n]`` matrix of the first
n columns of ``H_0 H_1 ... H_{k-1}``, ``H_i = I - taus[i] v_i v_i^H`` with
``v_i`` zero above row i, one at row i and ``a[i+1:, i]`` below (the
reflectors ``geqrf`` leaves in a and its ``taus``): LAPACK's ``orgqr`` /
``ungqr``. Constraint numbering (cited in error messages, see SPEC.md,
section 9): C1 a has rank >= 2 and taus rank >= 1; C2 they have the same
number of batch axes; C3 the dtypes are float32, float64, complex64 or
complex128; C4 one dtype; C5 ``m >= n``; C6 ``k <= n``; C7 equal batch
axes.

The NumPy evaluation applies the reflectors from the last to the first to
the ``m x n`` identity, in float64 (complex128), vectorised over the batch,
with the loop over the k reflectors; rounded once to a's dtype. JAX defines
no derivative rule for it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spec._src.core import types as T
from spec._src.core.errors import ShardingTypeError
from spec._src.core.interpreter import from_primitive, not_applicable
from spec._src.core.registry import declare, require
from spec._src.core.sharding import AbstractMesh
from spec._src.core.types import ArrayType
from spec._src.interpreters import per_device as PD
from spec._src.lax import sharding_kit as SK
from spec._src.lax.linalg import _batch_split_only, _leading_batch
from spec._src.lax.shaping import asarray
from spec._src.lowering import linalg as LL

_LAPACK_TYPES = (T.float32, T.float64, T.complex64, T.complex128)
_NAME = "householder_product"


def _householder_type(a: ArrayType, taus: ArrayType) -> list[ArrayType]:
    require(a.ndim >= 2, _NAME, "C1", f"input 0 must have rank at least 2, but got "
            f"shape={a.shape}")
    require(taus.ndim >= 1, _NAME, "C1", f"input 1 must have rank at least 1, but got "
            f"shape={taus.shape}")
    require(a.ndim - 2 == taus.ndim - 1, _NAME, "C2",
            "all inputs must have the same number of batch dimensions, but got "
            f"{[a.ndim - 2, taus.ndim - 1]} batch dimensions for the inputs")
    for i, x in enumerate((a, taus)):
        require(x.dtype in _LAPACK_TYPES, _NAME, "C3",
                f"does not accept dtype {x.dtype.name} at position {i}; accepted dtypes are "
                "subtypes of float32, float64, complex64, complex128")
    require(a.dtype == taus.dtype, _NAME, "C4", f"requires arguments to have the same "
            f"dtypes, got {a.dtype.name}, {taus.dtype.name}")
    m, n = a.shape[-2:]
    require(m >= n, _NAME, "C5", "the first argument must have at least as many rows as "
            f"columns, got shape {a.shape[-2:]}", ValueError)
    require(taus.shape[-1] <= min(m, n), _NAME, "C6",
            "the second argument must not have more rows than the minimum of the first "
            f"argument's rows and columns, got {taus.shape[-1]} and {a.shape[-2:]}",
            ValueError)
    require(a.shape[:-2] == taus.shape[:-1], _NAME, "C7",
            f"batch dimensions must be equal, got {a.shape[:-2]} and {taus.shape[:-1]}",
            ValueError)
    return [ArrayType(a.shape, a.dtype, a.weak_type and taus.weak_type)]


def _householder_impl(a: np.ndarray, taus: np.ndarray) -> list[np.ndarray]:
    *batch, m, n = a.shape
    k = taus.shape[-1]
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    b = math.prod(batch)
    refl = np.tril(a.reshape(b, m, n).astype(wide), -1)
    t = taus.reshape(b, k).astype(wide)
    q = np.broadcast_to(np.eye(m, n, dtype=wide), (b, m, n)).copy()
    for i in range(k - 1, -1, -1):
        v = refl[:, :, i].copy()
        v[:, i] = 1
        # H_i Q = Q - tau_i v (v^H Q)
        vq = np.einsum("bm,bmn->bn", np.conj(v), q)
        q -= t[:, i, None, None] * v[:, :, None] * vq[:, None, :]
    return [q.reshape(a.shape).astype(a.dtype)]


def _householder_parts(mesh: AbstractMesh, a: ArrayType, taus: ArrayType
                       ) -> list[SK.Parts]:
    ap, tp = SK.parts(a), SK.parts(taus)
    if any(p is not None for p in ap[-2:]) or tp[-1] is not None:
        raise ShardingTypeError(f"Inputs to {_NAME} must be unsharded on non-batch "
                                f"dimensions, but got {ap} and {tp}.")
    if ap[:-2] != tp[:-1]:
        raise ShardingTypeError(f"All inputs to {_NAME} must have the same batch sharding, "
                                f"but got {[ap[:-2], tp[:-1]]}.")
    return [ap]


householder_product_p = declare(
    _NAME, lowering=LL.householder_product, typing=_householder_type,
    impl=_householder_impl,
    jvp=not_applicable("JAX defines no derivative rule for householder_product"),
    transpose=not_applicable("a product of reflectors is not linear in them"),
    batch=_leading_batch(_NAME), sharding=SK.section(_NAME, _householder_parts),
    per_device=from_primitive(lambda p: PD.guarded(p, _batch_split_only, PD.local(p))))


def householder_product(a: Any, taus: Any) -> Any:
    """The first n columns of the product of the Householder reflectors
    stored below a's diagonal with scales taus (LAPACK's orgqr)."""
    return householder_product_p.bind(asarray(a), asarray(taus))


__all__ = ["householder_product", "householder_product_p"]
