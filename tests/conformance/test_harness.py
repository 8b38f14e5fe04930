"""Unit tests of the conformance harness itself: ULP distance, comparison, judging, xfails."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for the conformance package

from conformance import xfail  # noqa: E402
from conformance.compare import (  # noqa: E402
    Raised,
    compare,
    compare_values,
    normalize,
    ulp_distance,
)
from conformance.impls import Impl, ImplUnavailable, load  # noqa: E402
from conformance.registry import Case, capture, contraction  # noqa: E402
from conformance.runner import (  # noqa: E402
    ERROR,
    FAIL,
    PASS,
    XFAIL,
    XPASS,
    judge,
    main,
    reference_problem,
    run,
    run_case,
    x64_mode,
)

# -- ULP distance -------------------------------------------------------------------------------


def _bits(dtype: Any, pattern: int) -> np.ndarray[Any, Any]:
    width = np.dtype(dtype).itemsize * 8
    return np.array([pattern], np.dtype(f"uint{width}")).view(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
def test_ulp_adjacent_values_are_one_apart(dtype: Any) -> None:
    x = np.array([1.0, -3.5, 1e-3, 100.0], dtype)
    width = np.dtype(dtype).itemsize * 8
    up = (x.view(f"uint{width}") + 1).view(dtype)  # next representable away from zero
    np.testing.assert_array_equal(ulp_distance(x, up), [1, 1, 1, 1])
    np.testing.assert_array_equal(ulp_distance(up, x), [1, 1, 1, 1])


def test_ulp_across_zero() -> None:
    tiny_pos = _bits(np.float32, 0x00000001)  # smallest subnormal
    tiny_neg = _bits(np.float32, 0x80000001)
    zero, negzero = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert ulp_distance(tiny_pos, tiny_neg)[0] == 2
    assert ulp_distance(zero, negzero)[0] == 0
    assert ulp_distance(zero, tiny_neg)[0] == 1


def test_ulp_float8_and_float64_extremes() -> None:
    e4 = np.array([1.0, 448.0], ml_dtypes.float8_e4m3fn)
    nxt = (e4.view(np.uint8) - 1).view(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(ulp_distance(e4, nxt), [1, 1])
    big = np.array([np.finfo(np.float64).max], np.float64)
    # Opposite-sign extremes must not overflow the distance.
    assert ulp_distance(big, -big)[0] == 2 * 0x7FEFFFFFFFFFFFFF


def test_ulp_rejects_non_float() -> None:
    with pytest.raises(TypeError):
        ulp_distance(np.arange(3), np.arange(3))


# -- value comparison ---------------------------------------------------------------------------


def test_exact_and_tolerance() -> None:
    a = np.array([1.0, 2.0], np.float32)
    b = a.copy()
    b[1] = np.nextafter(b[1], np.float32(3))
    assert compare_values(a, a, 0) is None
    assert compare_values(a, b, 1) is None
    why = compare_values(a, b, 0)
    assert why is not None and "1/2 elements" in why and "(1,)" in why


def test_nan_matches_any_nan_but_not_a_number() -> None:
    qnan = np.array([np.nan], np.float32)
    other_nan = _bits(np.float32, 0xFFC00001)  # negative NaN with another payload
    assert compare_values(qnan, other_nan, 0) is None
    assert compare_values(qnan, np.array([1.0], np.float32), 1000) is not None


def test_inf_must_match_exactly() -> None:
    inf = np.array([np.inf], np.float32)
    big = np.array([np.finfo(np.float32).max], np.float32)
    assert compare_values(inf, big, 10**6) is not None
    assert compare_values(inf, -inf, 10**6) is not None
    assert compare_values(inf, inf, 0) is None


def test_signed_zero_is_a_mismatch_only_when_bit_exact() -> None:
    z, nz = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert compare_values(z, nz, 0) is not None
    assert compare_values(z, nz, 1) is None


def test_complex_parts_compared_separately() -> None:
    a = np.array([1 + 2j], np.complex64)
    b = np.array([1 + 3j], np.complex64)
    why = compare_values(a, b, 4)
    assert why is not None and why.startswith("imag part")
    assert compare_values(a, a.copy(), 0) is None


def test_ints_are_always_exact() -> None:
    assert compare_values(np.array([1, 2]), np.array([1, 3]), 100) is not None


def test_bfloat16_and_float8_values() -> None:
    a = np.array([1.0, 2.0], ml_dtypes.bfloat16)
    assert compare_values(a, a.copy(), 0) is None
    assert compare_values(a, np.array([1.0, 2.5], ml_dtypes.bfloat16), 0) is not None
    f8 = np.array([0.5, np.nan], ml_dtypes.float8_e5m2)
    assert compare_values(f8, f8.copy(), 0) is None


# -- tree comparison ----------------------------------------------------------------------------


class FakeArray:
    """Just enough of an array (``__array__``, dtype, shape, weak_type) for normalize."""

    def __init__(self, value: Any, weak_type: bool | None = None) -> None:
        self._v = np.asarray(value)
        self.dtype = self._v.dtype
        self.shape = self._v.shape
        if weak_type is not None:
            self.weak_type = weak_type

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
        return self._v


def test_weak_type_compared_only_when_both_have_it() -> None:
    strong = normalize(FakeArray(np.float32(1), weak_type=False))
    weak = normalize(FakeArray(np.float32(1), weak_type=True))
    plain = normalize(np.float32(1))
    why = compare(weak, strong)
    assert why is not None and "weak_type" in why
    assert compare(weak, plain) is None


def test_dtype_and_shape_mismatch() -> None:
    why = compare(normalize(np.zeros(2, np.int32)), normalize(np.zeros(2, np.int64)))
    assert why is not None and "dtype" in why
    why = compare(normalize(np.zeros(2)), normalize(np.zeros(3)))
    assert why is not None and "shape" in why


def test_contraction_within_the_contract_bound() -> None:
    # depth 4, float32: gamma_4 = 4 * 2**-24 / (1 - 4 * 2**-24), plus one ULP of the result.
    exp = np.array([1.0, 100.0, -3.0], np.float32)
    mag = np.array([1.0, 1000.0, 3.0])
    gamma = 4 * 2.0**-24 / (1 - 4 * 2.0**-24)
    inside = exp.astype(np.float64) + 0.99 * (gamma * mag + np.spacing(exp).astype(np.float64))
    outside = exp.astype(np.float64) + 2.5 * (gamma * mag + np.spacing(exp).astype(np.float64))
    ok = compare(normalize(contraction(exp, mag, 4)),
                 normalize(contraction(inside.astype(np.float32), mag, 4)))
    assert ok is None
    why = compare(normalize(contraction(exp, mag, 4)),
                  normalize(contraction(outside.astype(np.float32), mag, 4)))
    assert why is not None and "contraction bound" in why
    # The same values as plain arrays are compared bit for bit.
    assert compare(normalize(exp), normalize(inside.astype(np.float32))) is not None


def test_contraction_specials_ints_and_types() -> None:
    nan = normalize(contraction(np.array([np.nan, np.inf]), np.ones(2), 3))
    assert compare(nan, normalize(contraction(np.array([np.nan, np.inf]), np.ones(2), 3))) is None
    why = compare(nan, normalize(contraction(np.array([1.0, np.inf]), np.ones(2), 3)))
    assert why is not None
    why = compare(nan, normalize(contraction(np.array([np.nan, -np.inf]), np.ones(2), 3)))
    assert why is not None
    ints = normalize(contraction(np.array([5], np.int32), [9.0], 3))
    assert compare(ints, normalize(contraction(np.array([6], np.int32), [9.0], 3))) is not None
    why = compare(ints, normalize(contraction(np.array([5], np.int64), [9.0], 3)))
    assert why is not None and "dtype" in why
    # float64 results get float64's unit roundoff: 1e-12 is far outside gamma_3 * 1 + 1 ulp.
    f64 = normalize(contraction(np.array([1.0]), [1.0], 3))
    assert compare(f64, normalize(contraction(np.array([1.0 + 1e-12]), [1.0], 3))) is not None
    assert compare(f64, normalize(np.array([1.0]))) is not None  # a plain array is no match


def test_structure_and_path_in_reason() -> None:
    exp = normalize({"a": [1, (2.0, "x")], "b": None})
    assert compare(exp, normalize({"a": [1, (2.0, "x")], "b": None})) is None
    why = compare(exp, normalize({"a": [1, (2.0, "y")], "b": None}))
    assert why is not None and "['a'][1][1]" in why
    why = compare(exp, normalize({"a": [1, [2.0, "x"]], "b": None}))
    assert why is not None and "expected tuple, got list" in why
    why = compare(exp, normalize({"a": [1], "c": None}))
    assert why is not None and "keys" in why


def test_python_scalars_exact_type_and_value() -> None:
    assert compare(normalize(1), normalize(True)) is not None
    assert compare(normalize(1), normalize(1.0)) is not None
    assert compare(normalize(0.0), normalize(-0.0)) is not None
    assert compare(normalize(float("nan")), normalize(float("nan"))) is None


def test_dtype_leaves() -> None:
    assert compare(normalize(np.dtype("bfloat16")), normalize(np.dtype(ml_dtypes.bfloat16))) is None
    assert compare(normalize(np.dtype("int8")), normalize(np.dtype("uint8"))) is not None
    assert compare(normalize(np.float32), normalize(np.dtype("float32"))) is None


def test_string_diff_names_first_differing_line() -> None:
    why = compare("a\nb\nc", "a\nB\nc")
    assert why is not None and "line 2" in why


def test_unsupported_leaf_is_flagged() -> None:
    why = compare(normalize([1]), normalize([object()]))
    assert why is not None and "unsupported" in why


# -- exceptions ---------------------------------------------------------------------------------


class TracerBoolConversionError(TypeError):
    """Stands in for another implementation's own class of the same name."""


class SpecTypeError(TypeError):
    pass


def _raised(exc: BaseException) -> Raised:
    r = capture(lambda: (_ for _ in ()).throw(exc))
    assert isinstance(r, Raised)
    return r


def test_exception_class_matched_by_name_through_mro() -> None:
    jax_like = Raised("TypeError", "builtins.TypeError", ("TypeError", "Exception"), "m")
    assert compare(jax_like, _raised(SpecTypeError("x"))) is None  # subclass of TypeError
    assert compare(jax_like, _raised(ValueError("x"))) is not None
    tracer = Raised(
        "TracerBoolConversionError", "jax.errors.TracerBoolConversionError",
        ("TracerBoolConversionError", "ConcretizationTypeError", "TypeError"), "m",
    )  # fmt: skip
    assert compare(tracer, _raised(TracerBoolConversionError("x"))) is None
    assert compare(tracer, _raised(TypeError("x"))) is not None  # too general
    why = compare(tracer, normalize(np.zeros(2)))
    assert why is not None and "to be raised" in why


# -- judging and whole runs ---------------------------------------------------------------------


class FakeConfig:
    def __init__(self) -> None:
        self.jax_enable_x64 = False
        self.updates: list[tuple[str, Any]] = []

    def update(self, name: str, value: Any) -> None:
        self.updates.append((name, value))
        setattr(self, name, value)


def _fake_impl(name: str, lax: Any = None) -> Impl:
    jax = types.SimpleNamespace(config=FakeConfig())
    return Impl(name, jax, np, lax)


def _case(cid: str, fn: Any, **kw: Any) -> Case:
    opts: dict[str, Any] = {"tags": frozenset(), "ulp": 0, "raises": None, "x64": False}
    opts.update(kw)
    return Case(cid, fn, **opts)


def test_x64_mode_sets_and_restores() -> None:
    impl = _fake_impl("f")
    seen: list[bool] = []
    c = _case("m.x64", lambda jax, jnp, lax: seen.append(jax.config.jax_enable_x64), x64=True)
    run_case(c, impl)
    assert seen == [True]
    assert impl.config.jax_enable_x64 is False
    with pytest.raises(RuntimeError), x64_mode(impl, True):
        raise RuntimeError
    assert impl.config.jax_enable_x64 is False


def test_run_statuses_and_xfails() -> None:
    ref = _fake_impl("ref", lax="ref")
    other = _fake_impl("other", lax="other")

    def differs(jax: Any, jnp: Any, lax: Any) -> Any:
        return jnp.asarray([1.0 if lax == "ref" else 2.0])

    def raises_in_other(jax: Any, jnp: Any, lax: Any) -> Any:
        if lax == "other":
            raise KeyError("internal")
        return 1

    def raises_everywhere(jax: Any, jnp: Any, lax: Any) -> Any:
        raise ValueError("bad input")

    cases = [
        _case("m.same", lambda jax, jnp, lax: jnp.arange(3)),
        _case("m.differs", differs),
        _case("m.crash", raises_in_other),
        _case("m.both_raise", raises_everywhere),
        _case("m.declared", raises_everywhere, raises=("ValueError",)),
        _case("m.declared_wrong", raises_everywhere, raises=("TypeError",)),
        _case("m.xfail_fails", differs),
        _case("m.xfail_passes", lambda jax, jnp, lax: 1),
    ]
    xf = xfail.parse(
        '[[group]]\nreason = "known"\ncases = ["m.xfail_*", "m.nonexistent"]\n', "test.toml"
    )
    report = run(cases, ref, [other], {"other": xf})
    status = {r.case.id: r.results["other"].status for r in report.rows}
    assert status == {
        "m.same": PASS, "m.differs": FAIL, "m.crash": ERROR, "m.both_raise": PASS,
        "m.declared": PASS, "m.declared_wrong": ERROR, "m.xfail_fails": XFAIL,
        "m.xfail_passes": XPASS,
    }  # fmt: skip
    assert [r.case.id for r in report.reference_errors] == ["m.declared_wrong"]
    assert report.unused_xfails == {"other": ["m.nonexistent"]}
    assert not report.ok
    assert report.counts("other")[PASS] == 3


def test_unavailable_impl_errors_every_case() -> None:
    ref = _fake_impl("ref")
    missing = ImplUnavailable("ghost", "ImportError: nope")
    report = run([_case("m.a", lambda jax, jnp, lax: 1)], ref, [missing], {})
    assert report.rows[0].results["ghost"].status == ERROR
    assert not report.ok


def test_reference_problem_flags_case_bugs() -> None:
    c = _case("m.bug", lambda jax, jnp, lax: jnp.no_such_function())
    assert reference_problem(c, run_case(c, _fake_impl("r"))) is not None


def test_judge_error_vs_fail() -> None:
    c = _case("m.x", lambda jax, jnp, lax: 1)
    ok = run_case(c, _fake_impl("r"))
    bad = run_case(_case("m.y", lambda jax, jnp, lax: 1 / 0), _fake_impl("r"))
    assert judge(c, ok, bad)[0] == ERROR
    assert judge(c, bad, ok)[0] == FAIL
    assert judge(c, ok, ok)[0] == PASS


# -- xfail files, impl loading, CLI -------------------------------------------------------------


def test_xfail_parse_rejects_bad_files() -> None:
    with pytest.raises(ValueError):
        xfail.parse('[[group]]\ncases = ["a"]\n')  # no reason
    with pytest.raises(ValueError):
        xfail.parse('[[group]]\nreason = "r"\ncases = "a"\n')  # not a list
    with pytest.raises(ValueError):
        xfail.parse('[[groups]]\nreason = "r"\ncases = ["a"]\n')  # misspelt table


def test_xfail_files_in_repo_parse() -> None:
    for path in xfail.XFAIL_DIR.glob("*.toml"):
        xfail.load(path.stem)


def test_load_plugin_and_missing_impl(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = types.ModuleType("fake_conformance_plugin")
    ns = types.SimpleNamespace(numpy=np, lax="L", config=FakeConfig())
    setattr(mod, "NS", ns)
    monkeypatch.setitem(sys.modules, "fake_conformance_plugin", mod)
    impl = load("fake_conformance_plugin:NS")
    assert impl.jnp is np and impl.lax == "L" and impl.slug == "fake_conformance_plugin_NS"
    with pytest.raises(ImplUnavailable):
        load("surely_not_an_installed_module_xyz")


def test_cli_missing_reference_exits_nonzero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--reference", "surely_not_an_installed_module_xyz", "-k", "errors."]) == 2
    assert "unavailable" in capsys.readouterr().err
