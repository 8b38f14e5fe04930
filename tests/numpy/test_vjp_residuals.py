"""``jax.vjp`` of jnp functions saves what JAX 0.12.0.1 saves: the same
``args_res``, ``structured_residuals`` (one entry per jit JAX stages inside
the function, nested as its jits nest) and opaque residuals (count, shapes,
dtypes and values), and raises where JAX raises; for some, the jaxprs of the
function and of its vjp print as JAX's. Each case runs on spec and on JAX in
the test; JAX's side is computed once per case."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spec
import spec.numpy as snp
from spec._src.numpy import contraction_paths

X1 = np.array([0.25, 1.5, 0.75, 2.5], np.float32)
X2 = np.array([[0.25, 1.5, 0.75], [2.5, 0.5, 1.25]], np.float32)
Y1 = np.array([1.25, 0.5, 2.0, 0.75], np.float32)

# name -> (the function of one array, given the numpy module, and its input).
CASES: dict[str, tuple[Any, np.ndarray]] = {
    # Zero tangents materialised at the end of linearize are literals.
    "ceil": (lambda np_: np_.ceil, X1),
    "floor_2d": (lambda np_: np_.floor, X2),
    "sign": (lambda np_: np_.sign, X1),
    "zeros_like": (lambda np_: np_.zeros_like, X2),
    "full_like": (lambda np_: lambda x: np_.full_like(x, 2.), X1),
    "imag": (lambda np_: np_.imag, X1),
    # Zeros a rule materialises inside a jit are residuals of the jit.
    "var": (lambda np_: np_.var, X1),
    "std_2d": (lambda np_: np_.std, X2),
    "nanmax": (lambda np_: np_.nanmax, X2),
    "nanvar": (lambda np_: np_.nanvar, X1),
    "nanmin_axis": (lambda np_: lambda x: np_.nanmin(x, axis=0), X2),
    "nanstd": (lambda np_: np_.nanstd, X2),
    "pad": (lambda np_: lambda x: np_.pad(x, 1), X1),
    "diag": (lambda np_: np_.diag, X1),
    # jits as JAX stages them.
    "acosh": (lambda np_: np_.acosh, X1 + 1.),
    "hstack": (lambda np_: np_.hstack, X2),
    "vstack_1d": (lambda np_: np_.vstack, X1),
    "dstack": (lambda np_: np_.dstack, X2),
    "column_stack": (lambda np_: np_.column_stack, X2),
    "concatenate_array": (lambda np_: lambda x: np_.concatenate(x, axis=1), X2),
    "median": (lambda np_: np_.median, X1),
    "percentile": (lambda np_: lambda x: np_.percentile(x, 50.), X2),
    "quantile": (lambda np_: lambda x: np_.quantile(x, 0.5), X1),
    # Early-inlined jits (an entry each) and named jits (an entry holding
    # the entries of the jits inside).
    "moveaxis": (lambda np_: lambda x: np_.moveaxis(x, 0, -1), X2),
    "swapaxes": (lambda np_: lambda x: np_.swapaxes(x, 0, 1), X2),
    "take": (lambda np_: lambda x: np_.take(x, np_.asarray(np.array([2, 0, -1], np.int32))), X1),
    "take_along_axis_2d": (lambda np_: lambda x: np_.take_along_axis(
        x, np_.asarray(np.array([[1, 0, 1], [0, 0, 1]], np.int32)), axis=0), X2),
    "nanmedian": (lambda np_: np_.nanmedian, X2),
    "cov": (lambda np_: np_.cov, X1),
    "cov_2d": (lambda np_: np_.cov, X2),
    "corrcoef": (lambda np_: np_.corrcoef, X1),
    "geomspace": (lambda np_: lambda x: np_.geomspace(x[0], x[1], 5), X1),
    "logspace": (lambda np_: lambda x: np_.logspace(x[0], x[1], 5), X1),
    "vecdot": (lambda np_: lambda x: np_.vecdot(x, x), X1),
    "vecdot_2d": (lambda np_: lambda x: np_.vecdot(x, x[:1], axis=1), X2),
    # A count computed inside an early-inlined body is a literal, a Python
    # scalar passed to one a residual.
    "mean": (lambda np_: np_.mean, X1),
    "mean_axis": (lambda np_: lambda x: np_.mean(x, axis=0), X2),
    "average": (lambda np_: np_.average, X2),
    "average_weights": (lambda np_: lambda x: np_.average(x, weights=x), X1),
    "times_python_scalar": (lambda np_: lambda x: np_.where(x > 1., x, x * 2.), X1),
    "unwrap": (lambda np_: lambda x: np_.unwrap(x * 4.), X1),
    # An eager asarray of an argument is a new value, saved as a residual.
    "asarray": (lambda np_: lambda x: np_.asarray(x) * x, X1),
    # Tangent pads of the associative scan and of the product tree pad with
    # a materialised zero, a residual.
    "cumprod": (lambda np_: np_.cumprod, X1),
    "cumulative_prod_2d": (lambda np_: lambda x: np_.cumulative_prod(x, axis=0), X2),
    "nancumprod": (lambda np_: np_.nancumprod, X2),
    "prod_2d": (lambda np_: np_.prod, X2),
    # Functions that already matched, as a guard.
    "sin": (lambda np_: np_.sin, X1),
    "exp_2d": (lambda np_: np_.exp, X2),
    "tanh": (lambda np_: np_.tanh, X1),
    "log1p": (lambda np_: np_.log1p, X1),
    "sqrt": (lambda np_: np_.sqrt, X2),
    "sum": (lambda np_: np_.sum, X2),
    "max_axis": (lambda np_: lambda x: np_.max(x, axis=1), X2),
    "cumsum": (lambda np_: np_.cumsum, X1),
    "sort": (lambda np_: np_.sort, X1),
    "outer": (lambda np_: lambda x: np_.outer(x, x), X1),
    "multiply_const": (lambda np_: lambda x: np_.multiply(x, np_.asarray(Y1)), X1),
    "where": (lambda np_: lambda x: np_.where(x > 1, x, 0.), X1),
    "clip": (lambda np_: lambda x: np_.clip(x, 0.5, 2.), X2),
    "transpose": (lambda np_: np_.transpose, X2),
    "reshape": (lambda np_: lambda x: np_.reshape(x, (3, 2)), X2),
    "stack": (lambda np_: lambda x: np_.stack([x, x]), X1),
    "searchsorted": (lambda np_: lambda x: np_.searchsorted(x, 1.), X1),
    # jits of custom_jvp functions, as JAX's (their JVPs read the outputs).
    "hypot": (lambda np_: lambda x: np_.hypot(x, x[::-1]), X1),
    "i0": (lambda np_: np_.i0, X2),
    # Residuals of JAX's algorithms: stop_gradient and lax.polynomial in
    # sinc, an early-inlined spacing whose jitted where materialises the
    # zero tangent of copysign, a default dx baked into trapezoid's jit.
    "sinc": (lambda np_: np_.sinc, X2),
    "spacing": (lambda np_: np_.spacing, X2),
    "trapezoid": (lambda np_: np_.trapezoid, X2),
    "trapezoid_dx": (lambda np_: lambda x: np_.trapezoid(x, dx=0.5), X1),
    "poly": (lambda np_: np_.poly, X1),
    "polyval": (lambda np_: lambda x: np_.polyval(x, x[::-1]), X1),
    "lexsort": (lambda np_: np_.lexsort, X2),
    "polydiv": (lambda np_: lambda x: np_.polydiv(x, x[:2]), X1),
    "histogram_bin_edges": (lambda np_: lambda x: np_.histogram_bin_edges(x, bins=3), X2),
    # Indexed updates squeeze the updates with jnp.squeeze (an entry).
    "at_add": (lambda np_: lambda x: x.at[0].add(x[1]), X2),
    "diagflat": (lambda np_: np_.diagflat, X1),
    "insert": (lambda np_: lambda x: np_.insert(x, 1, 5.), X2),
    "bincount": (lambda np_: lambda x: np_.bincount(
        np_.asarray(np.array([0, 1, 1, 3], np.int32)), weights=x), X1),
    # Functions that need the value while tracing read the concrete primal;
    # those that go on with it (as JAX's concrete_or_error does) have
    # constant results.
    "unique": (lambda np_: np_.unique, X2),
    "unique_all": (lambda np_: lambda x: np_.unique_all(x).values, X1),
    "union1d": (lambda np_: lambda x: np_.union1d(x, x[:2]), X1),
    "setdiff1d": (lambda np_: lambda x: np_.setdiff1d(x, x[:2]), X1),
    "intersect1d": (lambda np_: lambda x: np_.intersect1d(x, x[:2]), X1),
    "setxor1d": (lambda np_: lambda x: np_.setxor1d(x, x[:2]), X1),
    "isin": (lambda np_: lambda x: np_.isin(x, x[:2]), X1),
    "trim_zeros": (lambda np_: np_.trim_zeros, X1),
    "trim_zeros_2d": (lambda np_: lambda x: np_.trim_zeros(x.at[0].set(0.), axis=0), X2),
    "nonzero": (lambda np_: np_.nonzero, X2),
    "flatnonzero": (lambda np_: np_.flatnonzero, X1),
    "where_one_arg": (lambda np_: lambda x: np_.where(x > 1), X1),
    "argwhere": (lambda np_: np_.argwhere, X2),
    # Hijax primitives (SearchSorted, Nonzero) give integer results float0
    # tangents that are values: the jits reading them record entries.
    "digitize": (lambda np_: lambda x: np_.digitize(x, np_.asarray(Y1[[1, 3, 0]])), X2),
    "digitize_unsorted_bins": (lambda np_: lambda x: np_.digitize(x[0], x[1]), X2),
    "searchsorted_sort_method": (lambda np_: lambda x: np_.searchsorted(
        x[1], x[0], side="right", method="sort"), X2),
    "interp": (lambda np_: lambda x: np_.interp(x, np_.asarray(Y1 - 0.5), np_.asarray(Y1)),
               X2),
    "histogram": (lambda np_: lambda x: np_.histogram(x, bins=3), X2),
    "argwhere_size": (lambda np_: lambda x: np_.argwhere(x > 1, size=4), X2),
    "nonzero_size_fill": (lambda np_: lambda x: np_.nonzero(x > 1, size=4, fill_value=7), X2),
    # einsum's contractions are an early-inlined jit; kron multiplies with
    # lax.mul's own broadcasting (residuals at the expanded shapes).
    "einsum": (lambda np_: lambda x: np_.einsum("ij,kj->ik", x, x), X2),
    "einsum_one_operand": (lambda np_: lambda x: np_.einsum("ij->j", x), X2),
    "einsum_three_operands": (lambda np_: lambda x: np_.einsum("ij,kj,k->i", x, x, x[:, 0]),
                              X2),
    "kron": (lambda np_: lambda x: np_.kron(x, x), X2),
    # Ldexp and Frexp are hijax primitives whose reverse mode is their JVP
    # transposed (vjp_from_jvp): the primal inputs are the residuals.
    "ldexp": (lambda np_: lambda x: np_.ldexp(x, np_.asarray(np.array([1, -2, 3, 0], np.int32))),
              X1),
    "ldexp_python_shift": (lambda np_: lambda x: np_.ldexp(x, 3), X2),
    "frexp": (lambda np_: np_.frexp, X2),
    # A square matrix's main diagonal is platform-dependent: a cond on
    # platform_index with branches_platforms.
    "diagonal_square": (lambda np_: lambda x: np_.diagonal(x[:, :2]), X2),
    "ptp": (lambda np_: lambda x: np_.ptp(x, axis=1), X2),
}

# Cases whose jaxprs, and those of their vjp (the residuals returned), print
# as JAX's.
JAXPR_CASES = ["digitize", "digitize_unsorted_bins", "searchsorted_sort_method", "interp",
               "histogram", "histogram_bin_edges", "argwhere_size", "nonzero_size_fill", "einsum",
               "einsum_one_operand", "einsum_three_operands", "kron", "ptp",
               "histogramdd_density", "ldexp", "ldexp_python_shift", "frexp", "diagonal_square",
               "corrcoef_2d"]
# Cases whose gradient's jaxpr (of the sum of the first output) prints as
# JAX's: the backward pass of a rule derived from a JVP.
GRAD_JAXPR_CASES = ["ldexp", "ldexp_python_shift", "frexp", "diagonal_square"]
# Compared by their jaxprs only (JAX's eager vjp of them is slow; corrcoef's
# clip derivative at the diagonal's 1.0 depends on its last bit).
JAXPR_ONLY: dict[str, tuple[Any, np.ndarray]] = {
    "histogramdd_density": (lambda np_: lambda x: np_.histogramdd(
        x.T, bins=[2, 3], density=True), X2),
    # The covariance's diagonal is platform-dependent; atleast_2d's jit of
    # an unchanged input is no primal call under differentiation.
    "corrcoef_2d": (lambda np_: np_.corrcoef, X2),
}


def _record(lib: Any, np_: Any, name: str) -> dict[str, Any]:
    make, x = CASES[name]
    fun = make(np_)
    try:
        out, f_vjp = lib.vjp(fun, np_.asarray(x))
    except Exception as e:  # noqa: BLE001 - the class is compared
        return {"raises": type(e).__name__}
    return {
        "outputs": [np.asarray(y) for y in lib.tree_util.tree_leaves(out)],
        "args_res": repr(f_vjp.args_res),
        "structured": repr(f_vjp.structured_residuals),
        "types": [(np.shape(r), np.asarray(r).dtype) for r in f_vjp.opaque_residuals],
        "values": [np.asarray(r) for r in f_vjp.opaque_residuals],
    }


_JAX: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module")
def jax_records() -> dict[str, dict[str, Any]]:
    return _JAX


def _jax_record(cache: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    if name not in cache:
        cache[name] = _record(jax, jnp, name)
    return cache[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_residuals_match_jax(name: str, jax_records: dict[str, dict[str, Any]]) -> None:
    theirs = _jax_record(jax_records, name)
    ours = _record(spec, snp, name)
    assert ours.get("raises") == theirs.get("raises")
    if "raises" in theirs:
        return
    assert ours["args_res"] == theirs["args_res"]
    assert ours["structured"] == theirs["structured"]
    assert ours["types"] == theirs["types"]
    for a, b in zip(ours["values"], theirs["values"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert len(ours["outputs"]) == len(theirs["outputs"])
    for a, b in zip(ours["outputs"], theirs["outputs"]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)


def _jaxprs(lib: Any, np_: Any, name: str) -> tuple[str, str]:
    make, x = CASES[name] if name in CASES else JAXPR_ONLY[name]
    fun = make(np_)
    return (str(lib.make_jaxpr(fun)(np_.asarray(x))),
            str(lib.make_jaxpr(lambda y: lib.vjp(fun, y))(np_.asarray(x))))


@pytest.mark.parametrize("name", JAXPR_CASES)
def test_jaxprs_match_jax(name: str) -> None:
    assert _jaxprs(spec, snp, name) == _jaxprs(jax, jnp, name)


def _grad_jaxprs(lib: Any, np_: Any, name: str) -> tuple[str, str]:
    make, x = CASES[name]
    fun = make(np_)

    def first_sum(y: Any) -> Any:
        return np_.sum(lib.tree_util.tree_leaves(fun(y))[0])

    return (str(lib.make_jaxpr(lib.grad(first_sum))(np_.asarray(x))),
            str(lib.make_jaxpr(lib.vmap(lib.grad(first_sum)))(np_.asarray(x[None]))))


@pytest.mark.parametrize("name", GRAD_JAXPR_CASES)
def test_grad_jaxprs_match_jax(name: str) -> None:
    assert _grad_jaxprs(spec, snp, name) == _grad_jaxprs(jax, jnp, name)


# (subscripts, operand shapes, keywords): the contraction order is
# opt_einsum's (auto: optimal up to four operands, branch-all for five and
# six, branch-2 for seven and eight), the strategy named, the given path, or
# the first two operands each step (optimize=False).
EINSUMS = [
    ("ab,bc,cd,de,ef->af", [(2, 3), (3, 4), (4, 5), (5, 2), (2, 3)], {}),
    ("ab,bc,cd,de,ef,fg->ag", [(4, 2), (2, 5), (5, 3), (3, 2), (2, 4), (4, 3)], {}),
    ("ai,ib,bc,cj,jd,de,ek->ak", [(2, 3), (3, 4), (4, 2), (2, 5), (5, 3), (3, 2), (2, 4)], {}),
    ("ij,jk,kl,lm,mn->in", [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3)], {"optimize": "greedy"}),
    ("ij,jk,kl,lm,mn,no->io", [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3), (3, 2)],
     {"optimize": "branch-2"}),
    ("ab,bc,ca,cd,de->e", [(2, 3), (3, 4), (4, 2), (4, 3), (3, 5)], {"optimize": "branch-1"}),
    ("ij,jk,kl,lm,mn->in", [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3)], {"optimize": True}),
    ("ij,jk,kl->il", [(5, 3), (3, 4), (4, 2)], {}),
    ("ij,jk,kl", [(2, 3), (3, 4), (4, 5)], {"optimize": False}),
    ("ij,jk,kl,lm->mi", [(6, 3), (3, 4), (4, 5), (5, 2)], {}),
    ("ii,ij,j->i", [(3, 3), (3, 4), (4,)], {}),
    ("...ij,jk,k->...i", [(2, 3, 4), (4, 5), (5,)], {}),
    ("ij,kj,k->i", [(2, 3), (2, 3), (2,)], {"optimize": [(1, 2), (0, 1)]}),
    ("ab,bd,bc->ac", [(2, 3), (3, 1), (3, 4)], {}),
    ("ab,bc,cd,de,ef,fa->", [(2, 3), (3, 4), (4, 2), (2, 5), (5, 3), (3, 2)],
     {"optimize": "dp"}),
    ("ij,jk,kl,lm,mn,no,op->ip", [(3, 4), (4, 5), (5, 2), (2, 6), (6, 3), (3, 2), (2, 4)],
     {"optimize": "auto-hq"}),
    ("ab,b,cd,d,e->ace", [(2, 3), (3,), (4, 2), (2,), (5,)], {"optimize": "dynamic-programming"}),
]


@pytest.mark.parametrize("case", range(len(EINSUMS)))
def test_einsum_contracts_in_jax_order(case: int) -> None:
    subscripts, shapes, kwargs = EINSUMS[case]
    rng = np.random.default_rng(case)
    ops = [rng.normal(size=s).astype(np.float32) for s in shapes]
    ours = spec.make_jaxpr(lambda *o: snp.einsum(subscripts, *o, **kwargs))(*ops)
    theirs = jax.make_jaxpr(lambda *o: jnp.einsum(subscripts, *o, **kwargs))(*ops)
    assert str(ours) == str(theirs)
    np.testing.assert_allclose(np.asarray(snp.einsum(subscripts, *ops, **kwargs)),
                               np.einsum(subscripts, *[o.astype(np.float64) for o in ops]),
                               rtol=1e-5, atol=1e-5)


def _random_contraction(rng: np.random.Generator, low: int = 3, high: int = 10
                        ) -> tuple[list[str], str, dict[str, int]]:
    n = int(rng.integers(low, high))
    letters = list("abcdefghijklmnop"[:int(rng.integers(3, high))])
    names = ["".join(sorted(set(rng.choice(letters, size=int(rng.integers(1, 4))))))
             for _ in range(n)]
    used = sorted(set("".join(names)))
    result = "".join(c for c in used if rng.random() < 0.3)
    return names, result, {c: int(rng.integers(1, 6)) for c in used}


@pytest.mark.parametrize("strategy", ["auto", "greedy", "branch-2", "branch-1", "dp",
                                      "auto-hq", "random-greedy"])
def test_einsum_paths_are_opt_einsums(strategy: str) -> None:
    """spec's path searches give opt_einsum's paths (JAX's path finder) on
    random contractions of three to nine operands, size-1 labels included
    (auto-hq: also of seventeen to twenty, its random greedy search)."""
    opt_einsum = pytest.importorskip("opt_einsum")
    rng = np.random.default_rng(len(strategy))
    for k in range(25):
        big = strategy == "auto-hq" and k < 3
        names, result, sizes = _random_contraction(rng, *((17, 21) if big else ()))
        shapes = [tuple(sizes[c] for c in n) for n in names]
        want = opt_einsum.contract_path(",".join(names) + "->" + result, *shapes, shapes=True,
                                        optimize=strategy)[0]
        assert contraction_paths.contraction_path(strategy, names, result, sizes) == \
            [tuple(w) for w in want]


def test_einsum_unknown_strategy_raises_as_jax() -> None:
    ops = [X2, X2.T, X2]
    with pytest.raises(KeyError, match="Path optimizer 'fastest' not found"):
        jnp.einsum("ij,jk,kl->il", *ops, optimize="fastest")
    with pytest.raises(KeyError, match="Path optimizer 'fastest' not found"):
        snp.einsum("ij,jk,kl->il", *ops, optimize="fastest")


def test_einsum_interleaved_operands() -> None:
    x, y = X2, X2.T
    for args in [(x, [0, 1], y, [1, 2]), (x, [Ellipsis, "j"], y, ["j", "k"], [Ellipsis, "k"])]:
        np.testing.assert_allclose(np.asarray(snp.einsum(*args)),
                                   np.asarray(jnp.einsum(*args)), rtol=1e-6)
    with pytest.raises(TypeError, match="hashable and comparable"):
        snp.einsum(x, [0, "a"], y, [1, 2])


def test_searchsorted_methods_match_jax_on_unsorted_input() -> None:
    """Every method gives JAX's indices, also where they disagree with each
    other (unsorted input, NaNs), and batches as JAX's rule does."""
    a = np.array([0.5, np.nan, -1., 2., 0.25], np.float32)
    v = np.array([[np.nan, 0.3, -2.], [2., 0.5, 9.]], np.float32)
    for method, side in [("scan", "left"), ("scan_unrolled", "right"),
                         ("compare_all", "left"), ("sort", "right")]:
        ours = snp.searchsorted(a, v, side=side, method=method)
        theirs = jnp.searchsorted(a, v, side=side, method=method)
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    rows = np.sort(np.stack([a, a[::-1] * 2.]), axis=1)
    for axes in [(0, None), (None, 0)]:
        args = (rows if axes[0] == 0 else rows[0], v if axes[1] == 0 else v[0])
        ours = spec.vmap(snp.searchsorted, in_axes=axes)(*args)
        theirs = jax.vmap(jnp.searchsorted, in_axes=axes)(*args)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_nonzero_batches_as_a_loop() -> None:
    x = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 0., 0.]], np.float32)
    fill = np.array([5, 6, 7], np.int32)
    ours = spec.vmap(lambda r, f: snp.nonzero(r, size=2, fill_value=f))(x, fill)
    for i in range(x.shape[0]):
        theirs = jnp.nonzero(x[i], size=2, fill_value=fill[i])
        np.testing.assert_array_equal(np.asarray(ours[0][i]), np.asarray(theirs[0]))


@pytest.mark.parametrize("trim", [False, True])
def test_polydiv_values_match_jax(trim: bool) -> None:
    u = np.array([1., -3., 2., 5.], np.float32)
    v = np.array([1., -1.], np.float32)
    theirs = jnp.polydiv(u, v, trim_leading_zeros=trim)
    ours = snp.polydiv(u, v, trim_leading_zeros=trim)
    for a, b in zip(ours, theirs):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# (subscripts, operand shapes, keywords): each BLAS kind and none, given and
# unoptimized paths, ellipses, broadcast and repeated labels, more than
# twenty-one operands (the report's remaining terms elided).
EINSUM_PATHS = [
    ("ij,jk,kl", [(2, 3), (3, 100), (100, 5)], {}),
    ("ij,jk,kl", [(2, 3), (3, 100), (100, 5)], {"optimize": False}),
    ("ea,fb,abcd,gc,hd->efgh", [(10, 10)] * 2 + [(10,) * 4] + [(10, 10)] * 2,
     {"optimize": "dp"}),
    ("...ij,jk,k->...i", [(2, 3, 4), (4, 5), (5,)], {"optimize": True}),
    ("ii,ij,j->i", [(3, 3), (3, 4), (4,)], {}),
    ("ab,bd,bc->ac", [(2, 3), (3, 1), (3, 4)], {}),
    ("ij,ij,ji,ab,cd->abcd", [(2, 3), (2, 3), (3, 2), (2, 3), (4, 5)],
     {"optimize": [(0, 1), (0, 2), (0, 1), (0, 1)]}),
    ("ijk,j,jl,ikl->", [(2, 3, 4), (3,), (3, 5), (2, 4, 5)], {"optimize": "greedy"}),
    ("ij->", [(2, 3)], {}),
    (",".join("abcdefghijklmnopqrstuv") + "->", [(2,)] * 22, {"optimize": "auto-hq"}),
]


def test_einsum_path_reports_as_jax() -> None:
    """The path, the printed report and its numbers are JAX's (opt_einsum's
    PathInfo), in the string and the interleaved forms."""
    for subscripts, shapes, kwargs in EINSUM_PATHS:
        ops = [np.ones(s, np.float32) for s in shapes]
        ours, theirs = snp.einsum_path(subscripts, *ops, **kwargs), \
            jnp.einsum_path(subscripts, *ops, **kwargs)
        assert ours[0] == theirs[0]
        assert str(ours[1]) == str(theirs[1]) == repr(ours[1])
        for name in ("naive_cost", "opt_cost", "speedup", "largest_intermediate",
                     "scale_list", "size_list", "contraction_list", "eq", "shapes"):
            assert getattr(ours[1], name) == getattr(theirs[1], name), (subscripts, name)
    x, y = X2, X2.T
    args = (x, [Ellipsis, 1], y, [1, 2], y, [1, Ellipsis])
    assert str(snp.einsum_path(*args)[1]) == str(jnp.einsum_path(*args)[1])
