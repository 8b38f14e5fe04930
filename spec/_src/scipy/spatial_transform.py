"""``jax.scipy.spatial.transform``: 3-D rotations stored as unit quaternions ``(x, y, z, w)``
(scalar last), and spherical linear interpolation between them, as JAX computes them.

``Rotation`` and ``Slerp`` are named tuples, so they are pytrees and pass through ``jit`` and
``vmap``. A rotation is single when its quaternion array is 1-D, a batch when it is ``(N, 4)``.
Each conversion acts on one quaternion (matrix, rotation vector, ...) and is broadcast over
leading axes by ``jnp.vectorize`` with JAX's gufunc signatures, so shapes combine (and clash)
as JAX's do. Flags such as ``degrees`` and ``inverse`` are array operands selected with
``where``, so they may be traced values.

``Rotation.random`` and ``Rotation.identity(num)`` are not implemented, as in JAX."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from spec._src.numpy import creation
from spec._src.numpy.indexing import where
from spec._src.numpy.linalg import cross, dot, linalg, matmul
from spec._src.numpy.math import (abs, arctan2, cos, deg2rad, hypot, rad2deg, sin, sqrt)
from spec._src.numpy.reductions import argmax, diff
from spec._src.numpy.shape import atleast_1d, concatenate, roll, stack
from spec._src.numpy.sorting import searchsorted
from spec._src.numpy.vectorize import vectorize

# Below this angle (radians) the rotation-vector scale factors use their Taylor series: the
# closed forms divide 0 by 0 at the identity.
_SMALL_ANGLE = 1e-3
# How close the middle Euler angle must be to 0 or pi for the decomposition to be gimbal-locked.
_GIMBAL_LOCK = 1e-7
_AXES = "xyz"


def _gufunc(signature: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return functools.partial(vectorize, signature=signature)


def _norm(vector: Any) -> Any:
    return sqrt(dot(vector, vector))


def _with_scalar(vector: Any, scalar: Any) -> Any:
    """A quaternion from its vector part and its scalar part."""
    return concatenate([vector, scalar[None]])


# ---------------------------------------------------------------- one-quaternion kernels

@_gufunc("(n)->(n)")
def _normalized(quat: Any) -> Any:
    return quat / _norm(quat)


@_gufunc("(n),(n)->(n)")
def _product(p: Any, q: Any) -> Any:
    """The Hamilton product ``p q``: the rotation ``q`` followed by ``p``."""
    pv, pw, qv, qw = p[:3], p[3], q[:3], q[3]
    return _with_scalar(pw * qv + qw * pv + cross(pv, qv), pw * qw - dot(pv, qv))


@_gufunc("(n)->(n)")
def _conjugate(quat: Any) -> Any:
    return quat * creation.array([-1, -1, -1, 1], dtype=quat.dtype)


@_gufunc("(n)->()")
def _angle(quat: Any) -> Any:
    return 2.0 * arctan2(_norm(quat[:3]), abs(quat[3]))


@_gufunc("(n)->(n)")
def _canonical(quat: Any) -> Any:
    """The one of ``q``, ``-q`` whose first nonzero component in the order w, x, y, z is
    positive."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    negative = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return where(negative, -quat, quat)


@_gufunc("(m)->(n,n)")
def _matrix(quat: Any) -> Any:
    """``(w^2 - |v|^2) I + 2 v v^T + 2 w [v]_x`` for ``q = (v, w)``."""
    v, w = quat[:3], quat[3]
    x, y, z = v[0], v[1], v[2]
    zero = creation.zeros_like(x)
    cross_matrix = stack([stack([zero, -z, y]), stack([z, zero, -x]), stack([-y, x, zero])])
    identity = creation.eye(3, dtype=quat.dtype)
    return ((w * w - dot(v, v)) * identity + 2 * v[:, None] * v[None, :]
            + 2 * w * cross_matrix)


@_gufunc("(m,m)->(n)")
def _quat_of_matrix(matrix: Any) -> Any:
    """Of the four quaternion formulas (one per diagonal entry, one for the trace), the one
    whose leading term is largest, which keeps the normalisation away from 0."""
    m = matrix
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    leading_terms = stack([m[0, 0], m[1, 1], m[2, 2], trace])
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        components: list[Any] = [None] * 4
        components[i] = 1 - trace + 2 * m[i, i]
        components[j] = m[j, i] + m[i, j]
        components[k] = m[k, i] + m[i, k]
        components[3] = m[k, j] - m[j, k]
        candidates.append(stack(components))
    candidates.append(stack([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1],
                             1 + trace]))
    return _normalized(stack(candidates)[argmax(leading_terms)])


@_gufunc("(m),()->(n)")
def _quat_of_rotvec(rotvec: Any, degrees: Any) -> Any:
    rotvec = where(degrees, deg2rad(rotvec), rotvec)
    angle = _norm(rotvec)
    angle2 = angle * angle
    # sin(angle / 2) / angle
    series = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
    scale = where(angle <= _SMALL_ANGLE, series, sin(angle / 2) / angle)
    return _with_scalar(scale * rotvec, cos(angle / 2))


@_gufunc("(m),()->(n)")
def _rotvec(quat: Any, degrees: Any) -> Any:
    quat = where(quat[3] < 0, -quat, quat)  # w >= 0, so the angle lies in [0, pi]
    angle = 2.0 * arctan2(_norm(quat[:3]), quat[3])
    angle2 = angle * angle
    # angle / sin(angle / 2)
    series = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    scale = where(angle <= _SMALL_ANGLE, series, angle / sin(angle / 2))
    scale = where(degrees, rad2deg(scale), scale)
    return scale * quat[:3]


@_gufunc("(m)->(n)")
def _quat_of_mrp(mrp: Any) -> Any:
    denominator = dot(mrp, mrp) + 1
    return _with_scalar(2 * mrp[:3], 2 - denominator) / denominator


@_gufunc("(m)->(n)")
def _mrp(quat: Any) -> Any:
    # Of the two parameter sets of a rotation, the one of norm <= 1 (from the w >= 0 quaternion).
    sign = where(quat[3] < 0, -1.0, 1.0)
    return sign * quat[:3] / (1.0 + sign * quat[3])


def _elementary(axis: Any, angle: Any) -> Any:
    """The quaternion of a rotation by ``angle`` about basis axis ``axis`` (0, 1 or 2)."""
    slot = creation.arange(4)
    return where(slot == axis, sin(angle / 2), where(slot == 3, cos(angle / 2), 0))


@_gufunc("(m),(m),(),()->(n)")
def _quat_of_euler(angles: Any, axes: Any, intrinsic: Any, degrees: Any) -> Any:
    # Intrinsic rotations compose on the right (about the moving axes), extrinsic on the left.
    angles = where(degrees, deg2rad(angles), angles)
    quat = _elementary(axes[0], angles[0])
    for position in range(1, axes.shape[0]):
        step = _elementary(axes[position], angles[position])
        quat = where(intrinsic, _product(quat, step), _product(step, quat))
    return quat


@_gufunc("(m,m),(m),()->(m)")
def _rotate(matrix: Any, vector: Any, inverse: Any) -> Any:
    return matmul(where(inverse, matrix.T, matrix), vector)


def _wrap_angle(angle: Any) -> Any:
    """``angle`` moved by a multiple of 2 pi into [-pi, pi)."""
    return (angle + np.pi) % (2 * np.pi) - np.pi


def _euler(quat: Any, seq: str, degrees: Any) -> Any:
    """Euler angles of quaternions ``(..., 4)`` by the method of Bernardes and Viollet (2022):
    the quaternion is permuted (and, for a sequence of three distinct axes, rotated by
    ``pi / 2``) so the sequence reads as a proper Euler sequence i-j-i; the middle angle
    then comes from two norms and the outer ones from a half sum and a half difference."""
    extrinsic = seq.islower()
    order = [_AXES.index(axis) for axis in seq.lower()]
    i, j, k = order if extrinsic else order[::-1]
    proper = i == k
    if proper:
        k = 3 - i - j
    parity = (i - j) * (j - k) * (k - i) // 2  # +1 for a cyclic i, j, k, -1 otherwise
    w, qi, qj, qk = quat[..., 3], quat[..., i], quat[..., j], quat[..., k]
    if proper:
        a, b, c, d = w, qi, qj, qk * parity
    else:
        a, b, c, d = w - qj, qi + qk * parity, qj + w, qk * parity - qi
    middle = 2 * arctan2(hypot(c, d), hypot(a, b))
    half_sum, half_diff = arctan2(b, a), arctan2(d, c)
    at_zero = abs(middle) <= _GIMBAL_LOCK
    at_pi = abs(middle - np.pi) <= _GIMBAL_LOCK
    # Gimbal lock: only the sum (or difference) of the outer angles is determined; all of it
    # goes to the first output angle and the last is 0.
    locked = where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    free = ~(at_zero | at_pi)
    first, last = half_sum - half_diff, half_sum + half_diff
    if not extrinsic:
        first, last = last, first
    angles = [where(free, first, locked), middle, where(free, last, 0)]
    if not proper:
        angles[2 if extrinsic else 0] = angles[2 if extrinsic else 0] * parity
        angles[1] = middle - np.pi / 2
    result = stack([_wrap_angle(angle) for angle in angles], axis=-1)
    return where(degrees, rad2deg(result), result)


# ---------------------------------------------------------------- Euler sequences

def _check_sequence(seq: str) -> bool:
    """Whether ``seq`` is intrinsic (upper case); raises for a malformed sequence."""
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    if not intrinsic and re.match(r"^[xyz]{1,3}$", seq) is None:
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(first == second for first, second in zip(seq, seq[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return intrinsic


def _axis_indices(seq: str) -> Any:
    return creation.array([_AXES.index(axis) for axis in seq.lower()])


# ---------------------------------------------------------------- the classes

class Rotation(NamedTuple):
    """Rotation(s) in three dimensions, as ``scipy.spatial.transform.Rotation``, held as
    quaternions ``(x, y, z, w)``: shape ``(4,)`` for one rotation, ``(N, 4)`` for N."""

    quat: Any

    @classmethod
    def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
        """The rotations of all of ``rotations``, in order, as one batch."""
        return cls(concatenate([rotation.quat for rotation in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
        """From Euler angles about the axes of ``seq``: lower case ``'xyz'`` extrinsic (fixed
        axes), upper case ``'XYZ'`` intrinsic (moving axes), one to three axes."""
        if not 1 <= len(seq) <= 3:
            raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                             f"characters, got {seq}")
        intrinsic = _check_sequence(seq)
        angles = atleast_1d(angles)
        return cls(_quat_of_euler(angles, _axis_indices(seq), intrinsic, degrees))

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        """From rotation matrices ``(..., 3, 3)``."""
        return cls(_quat_of_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        """From modified Rodrigues parameters ``(..., 3)``: the axis times tan(angle / 4)."""
        return cls(_quat_of_mrp(mrp))

    @classmethod
    def from_quat(cls, quat: Any) -> Rotation:
        """From quaternions ``(..., 4)``, scalar last, normalised."""
        return cls(_normalized(quat))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
        """From rotation vectors ``(..., 3)``: the axis times the angle."""
        return cls(_quat_of_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation (one only: ``num`` must be None)."""
        if num is not None:
            # JAX asserts num is None.
            raise AssertionError(f"Rotation.identity supports only num=None (one rotation), "
                                 f"got num={num!r}")
        return cls(creation.array([0.0, 0.0, 0.0, 1.0], dtype=dtype))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Not implemented (as in JAX, which would need a special orthogonal group sampler)."""
        raise NotImplementedError("Rotation.random is not implemented in "
                                  "jax.scipy.spatial.transform")

    def __getitem__(self, indexer: Any) -> Rotation:
        """The rotation(s) at ``indexer`` of a batch."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        """The number of rotations in a batch."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return int(self.quat.shape[0])

    def __mul__(self, other: Rotation) -> Rotation:  # type: ignore[override]
        """``other`` followed by this rotation."""
        return Rotation.from_quat(_product(self.quat, other.quat))

    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        """``vectors`` ``(..., 3)`` rotated (by the inverse rotation when ``inverse``)."""
        return _rotate(self.as_matrix(), vectors, inverse)

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        """Euler angles ``(..., 3)`` about the three axes of ``seq`` (see ``from_euler``), the
        first and last in [-pi, pi), the middle in [0, pi] (i-j-i sequences) or
        [-pi/2, pi/2] (three distinct axes)."""
        if len(seq) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        _check_sequence(seq)
        return _euler(self.quat, seq, degrees)

    def as_matrix(self) -> Any:
        """Rotation matrices ``(..., 3, 3)``."""
        return _matrix(self.quat)

    def as_mrp(self) -> Any:
        """Modified Rodrigues parameters ``(..., 3)``, of norm at most 1."""
        return _mrp(self.quat)

    def as_rotvec(self, degrees: bool = False) -> Any:
        """Rotation vectors ``(..., 3)``, of norm (the angle) in [0, pi]."""
        return _rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """Quaternions ``(..., 4)``: scalar last unless ``scalar_first``; the one of ``q``,
        ``-q`` with ``w > 0`` (ties broken by x, y, z) when ``canonical``."""
        quat = _canonical(self.quat) if canonical else self.quat
        return roll(quat, shift=1, axis=-1) if scalar_first else quat

    def inv(self) -> Rotation:
        """The inverse rotation(s)."""
        return Rotation(_conjugate(self.quat))

    def magnitude(self) -> Any:
        """Rotation angles in [0, pi]."""
        return _angle(self.quat)

    def mean(self, weights: Any = None) -> Rotation:
        """The rotation minimising the weighted sum of squared chordal distances (Frobenius
        norms of matrix differences) to the batch: the quaternion eigenvector of the largest
        eigenvalue of ``sum_i w_i q_i q_i^T`` (Markley et al., 2007)."""
        dtype = self.quat.dtype
        if weights is None:
            w = creation.ones(self.quat.shape[0], dtype=dtype)
        else:
            w = creation.asarray(weights, dtype=dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError("Expected `weights` to have number of values equal to number of "
                             f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
        scatter = dot(self.quat.T * w[None, :], self.quat)
        _, eigenvectors = linalg.eigh(scatter)
        return Rotation(eigenvectors[:, -1])

    @property
    def single(self) -> bool:
        """Whether this is one rotation (not a batch)."""
        return bool(self.quat.ndim == 1)


class Slerp(NamedTuple):
    """Spherical linear interpolation between key rotations at increasing key times, as
    ``scipy.spatial.transform.Slerp``: between consecutive keys the rotation turns at a
    constant rate about a fixed axis. Build with ``Slerp.init(times, rotations)``; times
    outside the keys extrapolate from the first or last interval."""

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        """Key ``times`` (1-D, increasing; not checked, as in JAX) for a batch of key
        ``rotations``: each interval stores its start rotation and the rotation vector of the
        step to the next key."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = creation.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        quats = rotations.as_quat()
        starts, ends = Rotation(quats[:-1]), Rotation(quats[1:])
        steps = (starts.inv() * ends).as_rotvec()
        return cls(times=times, timedelta=diff(times), rotations=starts, rotvecs=steps)

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotation at each of ``times`` (a scalar gives one rotation)."""
        at = creation.asarray(times, dtype=self.times.dtype)
        if at.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single = at.ndim == 0
        at = atleast_1d(at)
        interval = searchsorted(self.times, at) - 1
        interval = where(interval < 0, 0, interval)
        fraction = (at - self.times[interval]) / self.timedelta[interval]
        turn = Rotation.from_rotvec(self.rotvecs[interval] * fraction[:, None])
        result: Rotation = self.rotations[interval] * turn
        return Rotation(result.quat[0]) if single else result


__all__ = ["Rotation", "Slerp"]
