"""spec.scipy.spatial.transform (Rotation, Slerp) against jax.scipy.spatial.transform run live:
every conversion's values, dtypes and shapes for single and batched rotations, all 24 Euler
sequences (gimbal lock included), composition, application, mean, Slerp with extrapolation,
jit and vmap, the pytree structure, the public attributes and the errors JAX raises; then
scipy.spatial.transform in float64 as a second oracle."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.scipy.spatial.transform as J
import numpy as np
import pytest
import scipy.spatial.transform as scipy_transform

import spec
import spec.scipy.spatial.transform as S
from tests.support.pair import errors_alike

_rng = np.random.default_rng(11)
_ROTVECS = _rng.normal(size=(6, 3)).astype(np.float32)
_VECTORS = _rng.normal(size=(6, 3)).astype(np.float32)
# Unit quaternions of the same rotations, made by scipy (so no test builds its input with the
# code under test).
_QUATS = scipy_transform.Rotation.from_rotvec(_ROTVECS).as_quat().astype(np.float32)
_WEIGHTS = _rng.uniform(0.5, 2.0, size=6).astype(np.float32)
# Every Euler sequence: three distinct axes or a proper i-j-i one; lower case is extrinsic.
_SEQUENCES = [seq for seq in ("".join(p) for p in itertools.product("xyz", repeat=3))
              if seq[0] != seq[1] and seq[1] != seq[2]]
_SEQUENCES += [seq.upper() for seq in _SEQUENCES]

# float32 results of a few dozen roundings on O(1) values: formulas that differ from JAX's only
# in evaluation order agree to a few units of float32's 1.2e-7 epsilon.
_TOL = {"rtol": 1e-5, "atol": 2e-6}


def _close(ours: Any, theirs: Any, **tol: float) -> None:
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), **(tol or _TOL))


def _close_angles(ours: Any, theirs: Any, atol: float) -> None:
    """Angles equal modulo 2 pi (a result at the -pi/pi seam may round to either side)."""
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    gap = (np.asarray(ours, np.float64) - np.asarray(theirs, np.float64) + np.pi) % (2 * np.pi)
    np.testing.assert_allclose(gap - np.pi, 0, atol=atol)


def _both(build: Callable[[Any], Any]) -> tuple[Any, Any]:
    return build(S), build(J)


def test_public_attributes_match_jax() -> None:
    def public(cls: type) -> list[str]:
        return sorted(name for name in dir(cls) if not name.startswith("_"))

    assert public(S.Rotation) == public(J.Rotation)
    assert public(S.Slerp) == public(J.Slerp)


def _conversions(m: Any, rotvecs: Any) -> dict[str, Any]:
    """Everything a rotation converts to, and the rotations rebuilt from each form."""
    r = m.Rotation.from_rotvec(rotvecs)
    out = {"quat": r.quat, "matrix": r.as_matrix(), "mrp": r.as_mrp(),
           "rotvec": r.as_rotvec(), "degrees": r.as_rotvec(degrees=True),
           "magnitude": r.magnitude(), "inv": r.inv().quat,
           "canonical": r.as_quat(canonical=True), "scalar_first": r.as_quat(scalar_first=True),
           "apply": r.apply(_VECTORS[1]), "apply_inverse": r.apply(_VECTORS[1], inverse=True)}
    out["from_matrix"] = m.Rotation.from_matrix(out["matrix"]).quat
    out["from_mrp"] = m.Rotation.from_mrp(out["mrp"]).quat
    out["from_quat"] = m.Rotation.from_quat(3 * out["quat"]).quat
    out["from_degrees"] = m.Rotation.from_rotvec(out["degrees"], degrees=True).quat
    return out


def test_conversions_match_jax() -> None:
    ours = _conversions(S, _ROTVECS)
    # JAX's side under jit: one compilation instead of one per operation keeps the test fast.
    theirs = jax.jit(functools.partial(_conversions, J))(_ROTVECS)
    for name, expected in theirs.items():
        # Degrees are radians times 57; the round trips add a conversion's rounding.
        _close(ours[name], expected, rtol=1e-5, atol=1e-4 if name == "degrees" else 5e-6)
    # A single rotation: JAX's shapes and dtypes (traced, not compiled), the batch's values.
    single = _conversions(S, _ROTVECS[2])
    shapes = jax.eval_shape(functools.partial(_conversions, J), _ROTVECS[2])
    for name, expected in shapes.items():
        assert (single[name].dtype, single[name].shape) == (expected.dtype, expected.shape)
        np.testing.assert_allclose(np.asarray(single[name]), np.asarray(ours[name][2]),
                                   rtol=1e-6, atol=1e-6)
    assert S.Rotation(single["quat"]).single and not S.Rotation(ours["quat"]).single


def _composed(m: Any, rotvecs: Any, weights: Any) -> dict[str, Any]:
    batch, single = m.Rotation.from_rotvec(rotvecs), m.Rotation.from_rotvec(rotvecs[0])
    return {"batch_single": (batch * single).quat, "single_batch": (single * batch).quat,
            "apply": batch.apply(_VECTORS),
            "apply_outer": batch.apply(_VECTORS[:, None], inverse=True),
            "slice": batch[1:4].quat, "item": batch[2].quat,
            "concatenate": m.Rotation.concatenate([batch, batch[:2]]).quat,
            # The mean quaternion is an eigenvector: its sign is arbitrary, its matrix is not.
            "mean": batch.mean().as_matrix(), "weighted_mean": batch.mean(weights).as_matrix()}


def test_batches_compose_apply_and_average_as_jax() -> None:
    ours = _composed(S, _ROTVECS, _WEIGHTS)
    theirs = jax.jit(functools.partial(_composed, J))(_ROTVECS, _WEIGHTS)
    for name, expected in theirs.items():
        _close(ours[name], expected, rtol=1e-5, atol=1e-5)
    assert len(S.Rotation.from_rotvec(_ROTVECS)) == 6


def test_identity_matches_jax(x64: None) -> None:
    for dtype in (float, np.float16, np.float32):
        _close(S.Rotation.identity(dtype=dtype).quat, J.Rotation.identity(dtype=dtype).quat)


# Angles whose middle one keeps every sequence away from gimbal lock (where the outer angles
# are ill-conditioned and float32 rounding could move them arbitrarily).
_EULER = np.array([[0.3, 0.9, -1.2], [2.5, 1.2, 0.4], [-2.0, 2.2, 1.1]], np.float32)


# Quaternions (x, y, z, w) exactly in gimbal lock for a sequence: the pair (a, b) or (c, d)
# of the decomposition vanishes exactly, so the middle angle is exactly 0 or pi (proper
# sequences: a rotation about the outer axis, or by pi about an axis normal to it), +-pi/2
# (three distinct axes).
_LOCKED = {
    "xzy": [[-0.3, 0.3, -0.5, 0.5], [0.3, 0.3, 0.5, 0.5]],
    "XZY": [[0.3, 0.3, -0.5, 0.5], [0.3, -0.3, 0.5, 0.5]],
    "zxz": [[0.0, 0.0, 0.6, 0.8], [0.6, 0.8, 0.0, 0.0]],
    "YZY": [[0.0, 0.6, 0.0, 0.8], [0.6, 0.0, 0.8, 0.0]],
}


def _euler(m: Any, angles: Any) -> dict[str, Any]:
    out = {}
    # One sequence of each kind (each costs JAX a large program; all 24, and degrees, are
    # checked against scipy), read back from generic rotations and from locked ones.
    for seq, locked in _LOCKED.items():
        r = m.Rotation.from_euler(seq, angles)
        both = m.Rotation.concatenate([r, m.Rotation.from_quat(np.array(locked, np.float32))])
        out[seq] = (r.quat, both.as_euler(seq))
    out["z"] = (m.Rotation.from_euler("z", angles[0, 0] * 50, degrees=True).quat,)
    out["yx"] = (m.Rotation.from_euler("yx", (angles[:, :2] * 50).astype(np.int32),
                                       degrees=True).quat,)
    return out


def test_euler_round_trips_and_gimbal_lock_match_jax() -> None:
    ours, theirs = _euler(S, _EULER), jax.jit(functools.partial(_euler, J))(_EULER)
    for seq, expected in theirs.items():
        _close(ours[seq][0], expected[0])
        if len(expected) > 1:
            _close_angles(ours[seq][1], expected[1], atol=2e-5)
            # Locked: the undetermined outer angle is reported as 0.
            np.testing.assert_array_equal(np.asarray(ours[seq][1])[-2:, 2], 0)


def _slerp(m: Any, times: Any, at: Any) -> dict[str, Any]:
    slerp = m.Slerp.init(times, m.Rotation.from_quat(_QUATS[:4]))
    return {"times": slerp.times, "timedelta": slerp.timedelta, "rotvecs": slerp.rotvecs,
            "starts": slerp.rotations.quat, "at": slerp(at).as_quat(canonical=True),
            "one": slerp(at[2]).quat}


def test_slerp_matches_jax() -> None:
    times = np.array([0.0, 1.0, 2.5, 4.0], np.float32)
    # Inside the keys, at them, and past both ends (extrapolated).
    at = np.array([-0.5, 0.0, 0.3, 1.0, 2.0, 3.9, 4.0, 4.6], np.float32)
    ours, theirs = _slerp(S, times, at), jax.jit(functools.partial(_slerp, J))(times, at)
    for name, expected in theirs.items():
        _close(ours[name], expected, rtol=1e-5, atol=1e-5)
    slerp = S.Slerp.init(times, S.Rotation.from_quat(_QUATS[:4]))
    assert slerp(1.7).single and not slerp(at[:1]).single


def test_jit_and_vmap() -> None:
    rotations = S.Rotation.from_rotvec(_ROTVECS)

    @spec.jit
    def compose_and_apply(r: Any, v: Any) -> tuple[Any, Any]:
        return r * r.inv(), r.apply(v)

    identity, applied = compose_and_apply(rotations, _VECTORS)
    assert isinstance(identity, S.Rotation)
    _close(identity.as_matrix(), np.broadcast_to(np.eye(3, dtype=np.float32), (6, 3, 3)),
           atol=1e-6)
    _close(applied, rotations.apply(_VECTORS))
    # vmap over single rotations is the batched computation.
    mapped = spec.vmap(lambda q, v: S.Rotation(q).apply(v, inverse=True))(rotations.quat,
                                                                           _VECTORS)
    _close(mapped, rotations.apply(_VECTORS, inverse=True))
    # vmap over a Rotation pytree is a loop over its single rotations.
    euler = spec.vmap(lambda r: r.as_euler("ZXY"))(rotations)
    looped = np.stack([np.asarray(S.Rotation(q).as_euler("ZXY")) for q in rotations.quat])
    _close_angles(euler, looped, atol=1e-6)
    slerp = S.Slerp.init(np.arange(6.0), rotations)
    at = np.array([0.5, 2.25, 4.75], np.float32)
    stepped = spec.vmap(lambda t: slerp(t).quat)(at)
    _close(stepped, slerp(at).quat)
    # degrees and inverse may be traced (JAX selects with where), as well as Python flags.
    flagged = spec.jit(lambda degrees, inverse: (
        S.Rotation.from_euler("XZ", _ROTVECS[:, :2], degrees=degrees).as_rotvec(degrees),
        rotations.apply(_VECTORS, inverse=inverse)))(True, True)
    _close(flagged[0], S.Rotation.from_euler("XZ", _ROTVECS[:, :2], degrees=True).as_rotvec(
        degrees=True), rtol=1e-5, atol=1e-4)
    _close(flagged[1], rotations.apply(_VECTORS, inverse=True))
    # A Slerp is a pytree argument of jit.
    _close(spec.jit(lambda s, t: s(t).quat)(slerp, at), slerp(at).quat)


def test_pytree_structure_matches_jax() -> None:
    ours = S.Slerp.init(np.arange(3.0), S.Rotation(_QUATS[:3]))
    # JAX's Slerp.init builds this layout (with arrays JAX would compute eagerly, slowly).
    theirs = J.Slerp(np.arange(3.0), np.ones(2), J.Rotation(_QUATS[:2]), np.zeros((2, 3)))
    assert str(spec.tree_util.tree_structure(ours)) == str(jax.tree_util.tree_structure(theirs))
    assert len(spec.tree_util.tree_leaves(ours)) == 4


def test_tree_map_over_single_rotations_matches_jax() -> None:
    # A single Rotation refuses len(); pytree functions must count its one field regardless.
    ours = spec.tree_util.tree_map(lambda a, b: a - b, S.Rotation(_QUATS[0]),
                                   S.Rotation(_QUATS[1]))
    theirs = jax.tree_util.tree_map(lambda a, b: a - b, J.Rotation(_QUATS[0]),
                                    J.Rotation(_QUATS[1]))
    assert type(ours) is S.Rotation and type(theirs) is J.Rotation
    np.testing.assert_array_equal(ours.quat, theirs.quat)
    with pytest.raises(ValueError, match="different types"):  # as JAX
        spec.tree_util.tree_map(lambda a, b: a, S.Rotation(_QUATS[0]), (1, 2))


def _error_cases() -> dict[str, Callable[[Any], Any]]:
    single = lambda m: m.Rotation(_QUATS[0])  # noqa: E731
    batch = lambda m: m.Rotation(_QUATS)  # noqa: E731
    return {
        "empty seq": lambda m: m.Rotation.from_euler("", np.float32(1)),
        "long seq": lambda m: m.Rotation.from_euler("xyzx", np.zeros(4)),
        "mixed case": lambda m: m.Rotation.from_euler("xYz", np.zeros(3)),
        "repeated axis": lambda m: m.Rotation.from_euler("xxz", np.zeros(3)),
        "angles vs seq": lambda m: m.Rotation.from_euler("xyz", np.zeros(2)),
        "angles list": lambda m: m.Rotation.from_euler("xyz", [1.0, 2.0, 3.0]),
        "as_euler two axes": lambda m: single(m).as_euler("xy"),
        "as_euler bad axis": lambda m: single(m).as_euler("xwz"),
        "as_euler repeated": lambda m: single(m).as_euler("ZZY"),
        "matrix not square": lambda m: m.Rotation.from_matrix(np.ones((2, 3))),
        "apply 2-vectors": lambda m: single(m).apply(np.ones(2)),
        "apply batch clash": lambda m: batch(m).apply(np.ones((4, 3))),
        "single getitem": lambda m: single(m)[0],
        "single len": lambda m: len(single(m)),
        "single mean": lambda m: single(m).mean(),
        "mean 2-d weights": lambda m: batch(m).mean(np.ones((6, 1))),
        "mean weights count": lambda m: batch(m).mean(np.ones(3)),
        "slerp not rotation": lambda m: m.Slerp.init(np.arange(2.0), np.zeros((2, 4))),
        "slerp single": lambda m: m.Slerp.init(np.arange(2.0), single(m)),
        "slerp one key": lambda m: m.Slerp.init(np.arange(1.0), batch(m)[:1]),
        "slerp 2-d times": lambda m: m.Slerp.init(np.zeros((6, 1)), batch(m)),
        "slerp times count": lambda m: m.Slerp.init(np.arange(4.0), batch(m)),
        "slerp 2-d query": lambda m: m.Slerp(_QUATS[:, 0], _QUATS[1:, 0], batch(m)[:5],
                                             _VECTORS[:5])(np.ones((2, 2))),
    }


@pytest.mark.parametrize("case", sorted(_error_cases()))
def test_errors_match_jax(case: str) -> None:
    build = _error_cases()[case]
    # JAX's call traced, not run: these errors come from shapes, and JAX skips compiling
    # the rest.
    ours, theirs = errors_alike(lambda: build(S), lambda: jax.jit(lambda: build(J))())
    assert str(ours) == str(theirs)


def test_unimplemented_constructors_raise_as_jax() -> None:
    # JAX's messages are empty; ours say what is missing.
    for build in [lambda m: m.Rotation.identity(3),
                  lambda m: m.Rotation.random(jax.random.key(0), 2)]:
        ours, _ = errors_alike(lambda: build(S), lambda: build(J))
        assert "Rotation" in str(ours)


def test_matches_scipy_in_float64(x64: None) -> None:
    rotvecs = _ROTVECS.astype(np.float64)
    ours, reference = S.Rotation.from_rotvec(rotvecs), scipy_transform.Rotation.from_rotvec(
        rotvecs)
    tol = {"rtol": 1e-12, "atol": 1e-12}  # float64 evaluation of closed forms
    for name in ("as_matrix", "as_rotvec", "as_mrp", "magnitude"):
        np.testing.assert_allclose(np.asarray(getattr(ours, name)()),
                                   getattr(reference, name)(), **tol)
    np.testing.assert_allclose(np.asarray(ours.as_quat(canonical=True, scalar_first=True)),
                               reference.as_quat(canonical=True, scalar_first=True), **tol)
    np.testing.assert_allclose(np.asarray(ours.apply(_VECTORS, inverse=True)),
                               reference.apply(_VECTORS, inverse=True), **tol)
    for seq in _SEQUENCES:
        np.testing.assert_allclose(np.asarray(ours.as_euler(seq)), reference.as_euler(seq),
                                   **tol)
        euler = reference.as_euler(seq)
        np.testing.assert_allclose(np.asarray(S.Rotation.from_euler(seq, euler).as_matrix()),
                                   reference.as_matrix(), **tol)
    for seq in ("yzx", "XZX"):
        np.testing.assert_allclose(np.asarray(ours.as_euler(seq, degrees=True)),
                                   reference.as_euler(seq, degrees=True), rtol=1e-12,
                                   atol=1e-10)
    # scipy's weighted mean is the same eigenvector problem (chordal L2 mean).
    np.testing.assert_allclose(np.asarray(ours.mean(_WEIGHTS).as_matrix()),
                               reference.mean(_WEIGHTS.astype(np.float64)).as_matrix(),
                               atol=1e-10)
    times = np.array([0.0, 1.0, 1.5, 3.0, 4.0, 6.0])
    at = np.array([0.0, 0.4, 1.2, 2.9, 5.5, 6.0])
    np.testing.assert_allclose(
        np.asarray(S.Slerp.init(times, ours)(at).as_matrix()),
        scipy_transform.Slerp(times, reference)(at).as_matrix(), **tol)
