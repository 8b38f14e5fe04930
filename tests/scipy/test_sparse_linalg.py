"""spec.scipy.sparse.linalg (cg, bicgstab, gmres) against jax.scipy.sparse.linalg run live.

Oracles: JAX's solvers in the same test (iterates stopped after a few steps, so that the
comparison checks the iteration itself, not only that both converge); numpy.linalg.solve for
converged solutions; numpy's least squares for one GMRES cycle (the minimal residual over its
Krylov space); float64 central differences for the derivative of a cg solve; a Python loop
for vmap. The staged program is JAX's: the whole jaxpr text."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jjnp
import jax.scipy.sparse.linalg as J
import numpy as np
import pytest

import spec
import spec.numpy as sjnp
import spec.scipy.sparse.linalg as S
from tests.support.pair import errors_alike

# Small, well conditioned systems (condition numbers below 10): float32 solves converged to
# tol=1e-5 are within 1e-4 (relative) of the exact solution.
_SPD = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], np.float32)
_NONSYM = np.array([[4.0, 1.0, 0.0], [2.0, 3.0, 1.0], [0.0, -1.0, 2.0]], np.float32)
_B = np.array([1.0, 2.0, 3.0], np.float32)
_M = np.diag(1.0 / np.diag(_SPD)).astype(np.float32)  # Jacobi preconditioner

Solver = Callable[..., Any]


def _gmres(method: str) -> Callable[[Any], Solver]:
    def pick(module: Any) -> Solver:
        def solve(*args: Any, **kwargs: Any) -> Any:
            return module.gmres(*args, solve_method=method, **kwargs)
        return solve
    return pick


_SOLVERS: dict[str, tuple[Callable[[Any], Solver], np.ndarray]] = {
    "cg": (lambda m: m.cg, _SPD),
    "bicgstab": (lambda m: m.bicgstab, _NONSYM),
    "gmres_batched": (_gmres("batched"), _NONSYM),
    "gmres_incremental": (_gmres("incremental"), _NONSYM),
}


def _both(name: str) -> tuple[Solver, Solver, np.ndarray]:
    pick, a = _SOLVERS[name]
    return pick(S), pick(J), a


def _close(ours: Any, theirs: Any, rtol: float = 2e-5, atol: float = 1e-6) -> None:
    """Leaf by leaf: the same dtype and shape, values equal up to float32 rounding of the
    few dozen operations an iteration takes."""
    assert str(jax.tree.structure(theirs)) == str(spec.tree.structure(ours))
    for a, b in zip(spec.tree.leaves(ours), jax.tree.leaves(theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------- values

def _jax(call: Callable[[], Any]) -> Any:
    """JAX's result op by op: a few small eager operations cost far less than compiling
    the solver's loops (the text of the program JAX stages is compared below)."""
    with jax.disable_jit():
        return call()


@pytest.mark.parametrize("name", list(_SOLVERS))
def test_converged_solutions_solve_the_system(name: str) -> None:
    """tol=1e-5 bounds the relative residual; times the condition number (< 10)."""
    ours, _, a = _both(name)
    x, info = ours(a, _B)
    assert np.asarray(x).dtype == np.float32
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, _B), rtol=1e-4, atol=1e-5)
    if name.startswith("gmres"):
        assert int(info) == 0
    else:
        assert info is None


@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_one_preconditioned_step_from_x0_matches_jax(name: str) -> None:
    """Stopped after one step, the iterate is the iteration's own, not the solution."""
    ours, theirs, a = _both(name)
    kwargs = {"maxiter": 1, "M": _M, "x0": np.ones(3, np.float32)}
    x, _ = ours(a, _B, **kwargs)
    _close(x, _jax(lambda: theirs(a, _B, **kwargs)[0]))
    assert not np.allclose(np.asarray(x), np.linalg.solve(a, _B), rtol=1e-3)


@pytest.mark.parametrize("method", ["batched", "incremental"])
def test_one_gmres_cycle_minimizes_the_residual_over_its_krylov_space(method: str) -> None:
    """One cycle of restart 2 from x0 is x0 + argmin over K_2(MA, M r0) of |M (b - A x)|
    (left preconditioning), which numpy's least squares gives directly."""
    x0 = np.ones(3, np.float32)
    x, _ = S.gmres(_NONSYM, _B, x0=x0, M=_M, restart=2, maxiter=1, solve_method=method)
    a, m, b = _NONSYM.astype(np.float64), _M.astype(np.float64), _B.astype(np.float64)
    r0 = m @ (b - a @ x0)
    krylov = np.stack([r0, m @ a @ r0], axis=1)
    y = np.linalg.lstsq(m @ a @ krylov, r0, rcond=None)[0]
    np.testing.assert_allclose(np.asarray(x), x0 + krylov @ y, rtol=1e-5, atol=1e-6)
    assert not np.allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-3)


def test_gmres_info_flags_a_nan_solution() -> None:
    """A NaN in x0 makes the residual NaN, which the normalisation counts as zero: no cycle
    runs, x keeps the NaN and info is -1 (int32, as JAX's where of two Python ints)."""
    x0 = np.array([0.0, np.nan, 0.0], np.float32)
    x, info = S.gmres(_NONSYM, _B, x0=x0, maxiter=1)
    np.testing.assert_array_equal(np.asarray(x), x0)
    assert (int(info), np.asarray(info).dtype) == (-1, np.dtype(np.int32))


def test_function_operators_and_absolute_tolerance_match_jax() -> None:
    """A and M as functions; atol alone decides when cg stops."""
    def run(mod: Any, jnp: Any) -> Any:
        return mod.cg(lambda v: jnp.dot(_SPD, v), _B, tol=0.0, atol=1.0,
                      M=lambda v: v / 4.0, maxiter=5)[0]

    x = run(S, sjnp)
    _close(x, _jax(lambda: run(J, jjnp)))
    residual = np.linalg.norm(_B - _SPD @ np.asarray(x))
    assert 0.1 < residual <= 1.0  # stopped by atol, short of the solution


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres_batched"])
def test_pytree_right_hand_side_solves_the_system(name: str) -> None:
    """b a dict of a 2-vector and a scalar; A acts on their concatenation."""
    ours, _, a = _both(name)

    def apply(t: Any) -> Any:
        v = sjnp.dot(a, sjnp.concatenate([t["u"], t["w"][None]]))
        return {"u": v[:2], "w": v[2]}

    x, _ = ours(apply, {"u": _B[:2], "w": _B[2]})
    assert sorted(x) == ["u", "w"] and np.shape(x["w"]) == ()
    exact = np.linalg.solve(a, _B)
    got = np.concatenate([np.asarray(x["u"]), np.asarray(x["w"])[None]])
    np.testing.assert_allclose(got, exact, rtol=1e-4, atol=1e-5)


def test_pytree_right_hand_side_one_step_matches_jax() -> None:
    def run(mod: Any, jnp: Any) -> Any:
        def apply(t: Any) -> Any:
            v = jnp.dot(_NONSYM, jnp.concatenate([t["u"], t["w"][None]]))
            return {"u": v[:2], "w": v[2]}
        return mod.bicgstab(apply, {"u": _B[:2], "w": _B[2]}, maxiter=1)[0]

    _close(run(S, sjnp), _jax(lambda: run(J, jjnp)))


def test_complex_hermitian_cg_matches_jax() -> None:
    h = (_SPD + 1j * np.array([[0, 1, 0], [-1, 0, 0.5], [0, -0.5, 0]])).astype(np.complex64)
    b = (_B + 1j * _B[::-1]).astype(np.complex64)
    x, _ = S.cg(h, b)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(h, b), rtol=1e-4)
    _close(S.cg(h, b, maxiter=1)[0], _jax(lambda: J.cg(h, b, maxiter=1)[0]))


# ------------------------------------------------------------------ transformations

def test_grad_through_cg_matches_jax_and_finite_differences(x64: None) -> None:
    """d/dA and d/db of a scalar of the solution: JAX's implicit derivative (another solve),
    and float64 central differences (step 1e-6, truncation error ~1e-12)."""
    a, b = _SPD.astype(np.float64), _B.astype(np.float64)
    w = np.array([1.0, -2.0, 0.5])

    def loss(mod: Any, solver: Solver) -> Callable[[Any, Any], Any]:
        return lambda a, b: mod.dot(w, solver(lambda v: mod.dot(a, v), b, tol=1e-12)[0])

    ga, gb = spec.grad(loss(sjnp, S.cg), argnums=(0, 1))(a, b)
    ga_jax, gb_jax = _jax(lambda: jax.grad(loss(jjnp, J.cg), argnums=(0, 1))(a, b))
    _close((ga, gb), (ga_jax, gb_jax), rtol=1e-9, atol=1e-12)

    def exact(a: np.ndarray, b: np.ndarray) -> float:
        return float(w @ np.linalg.solve(a, b))

    eps = 1e-6
    fd_b = [(exact(a, b + eps * e) - exact(a, b - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(np.asarray(gb), fd_b, rtol=1e-7)
    # A symmetric perturbation keeps the operator positive definite and symmetric.
    d = np.zeros((3, 3))
    d[0, 1] = d[1, 0] = 1.0
    fd_a = (exact(a + eps * d, b) - exact(a - eps * d, b)) / (2 * eps)
    np.testing.assert_allclose(float(np.sum(np.asarray(ga) * d)), fd_a, rtol=1e-7)


@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_vmap_matches_a_loop(name: str) -> None:
    """Batch members stop at different iterations: the batched loop runs until all do and
    keeps each member's own stopping point."""
    ours, _, a = _both(name)
    bs = np.stack([_B, _B[::-1], 2.0 * _B]).astype(np.float32)
    batched = spec.vmap(lambda b: ours(a, b, maxiter=2)[0])(bs)
    loop = np.stack([np.asarray(ours(a, b, maxiter=2)[0]) for b in bs])
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-6, atol=1e-7)


def test_jit_equals_eager() -> None:
    eager, _ = S.bicgstab(_NONSYM, _B, maxiter=2)
    jitted, _ = spec.jit(lambda b: S.bicgstab(_NONSYM, b, maxiter=2))(_B)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-6)


# ----------------------------------------------------------------------- staged programs

@pytest.mark.parametrize("name", list(_SOLVERS))
def test_jaxpr_text_is_jaxs(name: str) -> None:
    """The whole program: for the non-symmetric solvers the transpose solve takes the matrix
    before x0, and gmres_incremental's fori_loop predicate is one jaxpr shared by the solve
    and the transpose solve (printed once, named)."""
    ours, theirs, a = _both(name)
    assert (str(spec.make_jaxpr(lambda b: ours(a, b)[0])(_B))
            == str(jax.make_jaxpr(lambda b: theirs(a, b)[0])(_B)))


@pytest.mark.parametrize("name", ["bicgstab", "gmres_incremental"])
def test_scalar_right_hand_side_jaxpr_text_is_jaxs(name: str) -> None:
    """A scalar b: its zero start, made while tracing, is placed with no source sharding."""
    ours, theirs, _ = _both(name)
    # A NumPy scalar: a Python float the map closes over JAX stages as a constant operand of
    # the transposed map, where spec's is a literal.
    three = np.float32(3.0)
    assert (str(spec.make_jaxpr(lambda b: ours(lambda v: three * v, b)[0])(np.float32(2.0)))
            == str(jax.make_jaxpr(lambda b: theirs(lambda v: three * v, b)[0])(np.float32(2.0))))


# --------------------------------------------------------------------------------- errors

def _raises_as_jax(call: Callable[[Any], Any]) -> None:
    ours, theirs = errors_alike(lambda: call(S), lambda: call(J))
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("call", [
    lambda m: m.cg(_SPD, _B, x0=(_B,)),  # x0's tree is not b's
    lambda m: m.gmres(_NONSYM, {"a": _B}, x0={"b": _B}),
    lambda m: m.bicgstab(_NONSYM, _B, x0=_B[:2]),  # x0's shape is not b's
    lambda m: m.cg(np.ones((3, 2), np.float32), _B),  # A not square
    lambda m: m.gmres(_NONSYM, _B, M=np.ones(3, np.float32)),
    lambda m: m.cg([[1.0, 0.0], [0.0, 1.0]], _B[:2]),  # neither a function nor an array
    lambda m: m.gmres(_NONSYM, _B, solve_method="qr"),
    lambda m: m.cg(_SPD, np.array([1, 2, 3])),  # integer b: the carry changes type
    lambda m: m.bicgstab(_NONSYM, np.array([1, 2, 3])),
], ids=["tree", "gmres_tree", "shape", "nonsquare", "nonsquare_M", "list", "solve_method",
        "int_cg", "int_bicgstab"])
def test_bad_arguments_raise_as_jax(call: Callable[[Any], Any]) -> None:
    _raises_as_jax(call)


# ------------------------------------------------------------------- run as a JAX program

_PROGRAM = """
import numpy as np
import jax.numpy as jnp
from jax.scipy.sparse.linalg import cg
a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], np.float32)
x, info = cg(lambda v: jnp.dot(a, v), jnp.array([1.0, 2.0, 3.0]), maxiter=2)
print(repr(np.asarray(x).tolist()), info)
"""


def test_python_m_spec_runs_a_program_importing_cg(tmp_path: pathlib.Path) -> None:
    """The program sees spec as jax; its output is what JAX computes for it."""
    program = tmp_path / "prog.py"
    program.write_text(_PROGRAM)
    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), JAX_PLATFORMS="cpu")
    run = subprocess.run([sys.executable, "-m", "spec", str(program)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    printed, info = run.stdout.split()[:-1], run.stdout.split()[-1]
    x_jax = _jax(lambda: J.cg(lambda v: jjnp.dot(_SPD, v), jjnp.array([1.0, 2.0, 3.0]),
                              maxiter=2)[0])
    np.testing.assert_allclose(eval("".join(printed)), np.asarray(x_jax), rtol=2e-6)
    assert info == "None"
