"""The dtype surface of spec.numpy and spec.dtypes, live against jax.numpy / jax.dtypes.

Every spec object is paired with the JAX object of the same name, and both are
run side by side: scalar types (calls, reprs, equality, hashing, isinstance),
issubdtype/isdtype/can_cast/promote_types/result_type tables, finfo/iinfo,
canonicalize_dtype under both x64 modes, float0 and the extended classes.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spec
import spec.dtypes as sdt
import spec.numpy as snp

# --------------------------------------------------------------------- tables

CONCRETE = [n for n in (
    "bool_", "int1", "int2", "int4", "int8", "int16", "int32", "int64",
    "uint1", "uint2", "uint4", "uint8", "uint16", "uint32", "uint64",
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "bfloat16", "float16", "float32", "float64",
    "complex64", "complex128") if hasattr(jnp, n)]
ALIASES = ["bool", "int_", "uint", "float_", "complex_", "single", "double", "csingle",
           "cdouble"]
ABSTRACT = ["generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
            "floating", "complexfloating", "character", "flexible", "object_"]
DTYPE_FUNCTIONS = ["can_cast", "dtype", "finfo", "iinfo", "iscomplexobj", "isdtype",
                   "isrealobj", "issubdtype", "promote_types", "result_type"]

FLOATS = [n for n in CONCRETE if "float" in n]
INTS = [n for n in CONCRETE if "int" in n]
WEAK = [int, float, complex]


def _pair(name: str) -> tuple[Any, Any]:
    return getattr(snp, name), getattr(jnp, name)


def _outcome(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[str, Any]:
    """("ok", value) or ("raises", exception class name); warnings recorded apart."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn(*args, **kw))
    except Exception as err:  # noqa: BLE001 - the class is the outcome
        return ("raises", type(err).__name__)


def _warned(fn: Callable[..., Any], *args: Any) -> tuple[list[str], Any]:
    """Run fn, returning the first lines of the warnings it raised and its result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: Any = fn(*args)
        except Exception as err:  # noqa: BLE001
            out = type(err).__name__
    # spec's core message omits JAX's trailing gotchas link; compare the gist.
    return [str(w.message).split(" To enable")[0] for w in caught], out


def _array_summary(x: Any) -> Any:
    if isinstance(x, str):
        return x
    return (repr(x), str(x.dtype), bool(x.weak_type), tuple(x.shape))


# ---------------------------------------------------------------- scalar types

@pytest.mark.parametrize("name", CONCRETE + ALIASES)
def test_scalar_type_identity(name: str) -> None:
    ours, theirs = _pair(name)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)
    assert ours.__name__ == theirs.__name__
    assert np.dtype(ours) == np.dtype(theirs)
    assert ours.dtype == theirs.dtype
    assert snp.dtype(ours) == jnp.dtype(theirs)
    np_type = theirs.dtype.type
    assert (ours == np_type) and (np_type == ours) and not (ours != np_type)
    assert hash(ours) == hash(theirs) == hash(np_type)
    assert (ours == np.dtype(np_type)) == (theirs == np.dtype(np_type))


def test_scalar_type_equality_table() -> None:
    names = CONCRETE + ALIASES
    for a, b in itertools.product(names, names):
        sa, ja = _pair(a)
        sb, jb = _pair(b)
        assert (sa == sb) == (ja == jb), (a, b)
        assert (sa != sb) == (ja != jb), (a, b)
    # The weak Python types never equal a scalar type (identity matters in promotion).
    for name in names:
        for py in (bool, int, float, complex):
            assert (getattr(snp, name) == py) == (getattr(jnp, name) == py), (name, py)


def test_aliases_are_the_same_objects() -> None:
    for alias, target in (("bool", "bool_"), ("int_", "int64"), ("uint", "uint64"),
                          ("float_", "float64"), ("complex_", "complex128"),
                          ("single", "float32"), ("double", "float64"),
                          ("csingle", "complex64"), ("cdouble", "complex128")):
        assert (getattr(snp, alias) is getattr(snp, target)) == \
            (getattr(jnp, alias) is getattr(jnp, target))
        assert getattr(snp, alias) is getattr(snp, target)


def test_scalar_types_pickle_by_reference() -> None:
    import pickle
    for name in CONCRETE + ALIASES:
        t = getattr(snp, name)
        assert pickle.loads(pickle.dumps(t)) is t, name


CALL_VALUES: list[Any] = [0, 1, -3, 2.5, True, 1 + 2j, [1, 2], [[0.5], [1.5]],
                          np.float32(1.25), np.arange(3, dtype=np.int16)]


def _call(t: Any, v: Any) -> Any:
    return t(v)


@pytest.mark.parametrize("name", CONCRETE)
def test_calling_scalar_types(name: str) -> None:
    ours, theirs = _pair(name)
    one_bit = name in ("int1", "uint1")
    for v in CALL_VALUES:
        if one_bit and isinstance(v, (list, np.ndarray)):
            continue  # JAX 0.12's XLA CPU cannot convert 1-bit arrays (it crashes)
        w_ours, got = _warned(_call, ours, v)
        w_theirs, want = _warned(_call, theirs, v)
        if one_bit:
            # JAX prints 1-bit values as XLA's pred (False/True); compare the type only.
            assert _array_summary(got)[1:] == _array_summary(want)[1:], (name, v)
            continue
        assert _array_summary(got) == _array_summary(want), (name, v)
        assert any("Explicitly requested" in w for w in w_ours) == \
            any("Explicitly requested" in w for w in w_theirs), (name, v, w_ours, w_theirs)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("name", ["int64", "uint64", "float64", "complex128", "float32",
                                  "int_", "float_"])
def test_calling_scalar_types_x64(name: str) -> None:
    ours, theirs = _pair(name)
    for v in (1, 2.5, [1, 2], 1j):
        w_ours, got = _warned(_call, ours, v)
        w_theirs, want = _warned(_call, theirs, v)
        assert _array_summary(got) == _array_summary(want), (name, v)
        assert bool(w_ours) == bool(w_theirs)


def test_x64_truncation_warning_text() -> None:
    w_ours, got = _warned(_call, snp.float64, 1)
    w_theirs, want = _warned(_call, jnp.float64, 1)
    assert w_ours == w_theirs and len(w_ours) == 1
    assert _array_summary(got) == _array_summary(want)


def test_scalar_type_results_are_arrays() -> None:
    x = snp.float32(2)
    assert isinstance(x, spec.Array) and x.shape == () and x.dtype == np.float32
    assert not x.weak_type  # a scalar type is an explicit dtype request
    y = snp.int32(snp.float32(2.7))
    assert int(y) == int(jnp.int32(jnp.float32(2.7))) == 2


def test_isinstance_semantics() -> None:
    objs: list[tuple[Any, Any]] = [
        (np.float32(1), np.float32(1)), (np.int32(1), np.int32(1)), (1.0, 1.0), (True, True),
        (np.bool_(True), np.bool_(True)), (ml_dtypes.bfloat16(1), ml_dtypes.bfloat16(1)),
        (snp.float32(1), jnp.float32(1)), (snp.arange(3), jnp.arange(3)),
    ]
    for name in CONCRETE + ALIASES:
        ours, theirs = _pair(name)
        for o_ours, o_theirs in objs:
            assert isinstance(o_ours, ours) == isinstance(o_theirs, theirs), (name, o_theirs)
    for name in ABSTRACT:
        ours, theirs = _pair(name)
        for o_ours, o_theirs in objs:
            assert isinstance(o_ours, ours) == isinstance(o_theirs, theirs), (name, o_theirs)


def test_scalar_type_is_not_an_array() -> None:
    for fn_ours, fn_theirs in (
        (lambda: snp.asarray(snp.float32), lambda: jnp.asarray(jnp.float32)),
        (lambda: snp.arange(3) + snp.int32, lambda: jnp.arange(3) + jnp.int32),
        (lambda: snp.add(1, snp.int32), lambda: jnp.add(1, jnp.int32)),
        (lambda: snp.sin(snp.float32), lambda: jnp.sin(jnp.float32)),
        (lambda: snp.array([snp.float32]), lambda: jnp.array([jnp.float32])),
    ):
        assert _outcome(fn_ours) == _outcome(fn_theirs) == ("raises", "TypeError")
    # Comparison with a scalar type is not an error, just unequal.
    assert (snp.arange(3) == snp.float32) is (jnp.arange(3) == jnp.float32) is False
    assert (snp.float32 == snp.arange(3)) is (jnp.float32 == jnp.arange(3)) is False


def test_abstract_types_are_numpys() -> None:
    for name in ABSTRACT:
        ours, theirs = _pair(name)
        assert ours is theirs, name
    assert snp.dtype is jnp.dtype is np.dtype


def test_astype_and_creation_accept_scalar_types() -> None:
    for name in ["bool_", "int8", "uint16", "bfloat16", "float16", "float32", "complex64",
                 "float8_e4m3fn", "int4"]:
        ours, theirs = _pair(name)
        got = snp.arange(4).astype(ours)
        want = jnp.arange(4).astype(theirs)
        assert _array_summary(got) == _array_summary(want), name
        got = snp.zeros(2, ours)
        want = jnp.zeros(2, theirs)
        assert _array_summary(got) == _array_summary(want), name
        got = snp.asarray([1, 0], dtype=snp.dtype(ours))
        want = jnp.asarray([1, 0], dtype=jnp.dtype(theirs))
        assert _array_summary(got) == _array_summary(want), name


# ----------------------------------------------------------------- issubdtype

def _dtype_likes() -> list[tuple[str, Any, Any]]:
    """(label, spec object, jax object) for every kind of dtype argument."""
    out: list[tuple[str, Any, Any]] = []
    for name in CONCRETE:
        ours, theirs = _pair(name)
        out.append((name, ours, theirs))
        out.append((f"dtype({name})", np.dtype(theirs), np.dtype(theirs)))
        out.append((f"np.{name}", theirs.dtype.type, theirs.dtype.type))
    for s in ("float32", "int8", "bfloat16", "uint4", "complex128", "bool"):
        out.append((repr(s), s, s))
    for py in (bool, int, float, complex):
        out.append((py.__name__, py, py))
    out.append(("float0", sdt.float0, jax.dtypes.float0))
    out.append(("None", None, None))
    return out


def test_issubdtype_all_pairs() -> None:
    seconds = _dtype_likes() + [(n, *_pair(n)) for n in ABSTRACT] + [
        ("extended", sdt.extended, jax.dtypes.extended),
        ("prng_key", sdt.prng_key, jax.dtypes.prng_key)]
    mismatches = []
    for (la, a_ours, a_theirs), (lb, b_ours, b_theirs) in itertools.product(
            _dtype_likes(), seconds):
        got = _outcome(snp.issubdtype, a_ours, b_ours)
        want = _outcome(jnp.issubdtype, a_theirs, b_theirs)
        if got != want:
            mismatches.append((la, lb, got, want))
        got2 = _outcome(sdt.issubdtype, a_ours, b_ours)
        want2 = _outcome(jax.dtypes.issubdtype, a_theirs, b_theirs)
        if got2 != want2:
            mismatches.append(("dtypes", la, lb, got2, want2))
    assert not mismatches, mismatches[:10]


def test_issubdtype_mathematics() -> None:
    # Independent of JAX: what the custom types are.
    for name in FLOATS:
        assert snp.issubdtype(getattr(snp, name), snp.floating), name
        assert not snp.issubdtype(getattr(snp, name), snp.integer), name
    for name in ("int2", "int4"):
        assert snp.issubdtype(getattr(snp, name), snp.signedinteger)
        assert not snp.issubdtype(getattr(snp, name), snp.unsignedinteger)
    for name in ("uint2", "uint4"):
        assert snp.issubdtype(getattr(snp, name), snp.unsignedinteger)
    assert not np.issubdtype(ml_dtypes.bfloat16, np.floating)  # why spec needs its own


def test_issubdtype_bad_input() -> None:
    for args in (("not a dtype", snp.floating), (snp.float32, "nonsense")):
        got = _outcome(snp.issubdtype, *args)
        want = _outcome(jnp.issubdtype, *args)
        assert got == want == ("raises", "TypeError")


# ------------------------------------------------------------------- isdtype

KINDS: list[Any] = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
                    "complex floating", "numeric", ("bool", "real floating"),
                    ("integral", "complex floating"), "float32", "int8", np.float32, np.int4
                    if hasattr(np, "int4") else "int4", ("bool", np.dtype("complex64"))]


def test_isdtype_kinds() -> None:
    mismatches = []
    for name in CONCRETE:
        ours, theirs = _pair(name)
        for kind in KINDS:
            got = _outcome(snp.isdtype, ours, kind)
            want = _outcome(jnp.isdtype, theirs, kind)
            if got != want:
                mismatches.append((name, kind, got, want))
        own = _outcome(snp.isdtype, ours, ours)
        assert own == _outcome(jnp.isdtype, theirs, theirs) == ("ok", True)
    assert not mismatches, mismatches[:10]


def test_isdtype_bad_kinds() -> None:
    for kind in ("real", "floating point", 3.5, ("bool", "nope"), None):
        got = _outcome(snp.isdtype, np.float32, kind)
        want = _outcome(jnp.isdtype, np.float32, kind)
        assert got == want, kind
    with pytest.raises(ValueError, match="Unrecognized kind='real'"):
        snp.isdtype(np.float32, "real")


# ------------------------------------------------------------- finfo / iinfo

FINFO_ATTRS = ["bits", "eps", "epsneg", "max", "min", "tiny", "smallest_normal",
               "smallest_subnormal", "resolution", "precision", "dtype", "maxexp", "minexp",
               "nmant", "nexp"]


@pytest.mark.parametrize("name", FLOATS + ["complex64", "complex128"])
def test_finfo(name: str) -> None:
    ours, theirs = _pair(name)
    for mod_ours, mod_theirs in ((snp, jnp), (sdt, jax.dtypes)):
        fo, ft = mod_ours.finfo(ours), mod_theirs.finfo(theirs)
        for attr in FINFO_ATTRS:
            a, b = getattr(fo, attr, None), getattr(ft, attr, None)
            assert a == b or (a is not None and b is not None and np.isnan(a) and np.isnan(b)), \
                (name, attr)
        assert repr(fo) == repr(ft)
        assert str(fo) == str(ft)
    fo = snp.finfo(np.dtype(theirs))
    # mathematics: eps is the gap above 1, 2**-nmant (float8_e8m0fnu has no mantissa).
    assert float(fo.eps) == math.ldexp(1.0, -int(fo.nmant))


def test_finfo_known_values() -> None:
    assert float(snp.finfo(snp.bfloat16).eps) == 2.0 ** -7
    assert float(snp.finfo(snp.float32).eps) == 2.0 ** -23
    assert float(snp.finfo(snp.float16).max) == 65504.0
    assert float(snp.finfo(snp.float8_e4m3fn).max) == 448.0
    assert snp.finfo(snp.bfloat16).bits == 16


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name: str) -> None:
    ours, theirs = _pair(name)
    for mod_ours, mod_theirs in ((snp, jnp), (sdt, jax.dtypes)):
        io, it = mod_ours.iinfo(ours), mod_theirs.iinfo(theirs)
        for attr in ("bits", "min", "max", "dtype", "kind"):
            assert getattr(io, attr) == getattr(it, attr), (name, attr)
        assert repr(io) == repr(it)
    io = snp.iinfo(ours)
    signed = not name.startswith("u")
    assert int(io.max) == 2 ** (io.bits - signed) - 1
    assert int(io.min) == (-(2 ** (io.bits - 1)) if signed else 0)


def test_finfo_iinfo_reject_wrong_kind() -> None:
    for fn_o, fn_t, arg_o, arg_t in ((snp.finfo, jnp.finfo, snp.int32, jnp.int32),
                                     (snp.iinfo, jnp.iinfo, snp.float32, jnp.float32)):
        assert _outcome(fn_o, arg_o) == _outcome(fn_t, arg_t)
        assert _outcome(fn_o, arg_o)[0] == "raises"


# ------------------------------------------------------------ can_cast / promotion

def test_can_cast_table() -> None:
    mismatches = []
    for a, b in itertools.product(CONCRETE, CONCRETE):
        (sa, ja), (sb, jb) = _pair(a), _pair(b)
        for casting in ("safe", "same_kind", "unsafe"):
            got = _outcome(snp.can_cast, sa, sb, casting=casting)
            want = _outcome(jnp.can_cast, ja, jb, casting=casting)
            if got != want:
                mismatches.append((a, b, casting, got, want))
    assert not mismatches, mismatches[:10]
    assert snp.can_cast(snp.int8, snp.int16) and not snp.can_cast(snp.int16, snp.int8)


@pytest.mark.parametrize("x64_mode", [False, True])
def test_promote_types_table(x64_mode: bool) -> None:
    spec.config.update("jax_enable_x64", x64_mode)
    jax.config.update("jax_enable_x64", x64_mode)
    try:
        args = [(n, *_pair(n)) for n in CONCRETE] + [
            (f"dtype({n})", np.dtype(_pair(n)[1]), np.dtype(_pair(n)[1]))
            for n in ("float64", "int64", "complex128")] + [
            (t.__name__, t, t) for t in WEAK] + [("'int16'", "int16", "int16")]
        mismatches = []
        for (la, sa, ja), (lb, sb, jb) in itertools.product(args, args):
            got = _outcome(snp.promote_types, sa, sb)
            want = _outcome(jnp.promote_types, ja, jb)
            if got != want:
                mismatches.append((la, lb, got, want))
        assert not mismatches, mismatches[:10]
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


def _result_type_cases(lib: Any, np_lib: Any) -> list[tuple[Any, ...]]:
    return [
        (lib.float32,), (lib.float64,), ("float64",), (np.float64,), (np.dtype("int64"),),
        (lib.int8, 1), (lib.int8, 1.0), (lib.bfloat16, lib.float16), (lib.uint32, lib.int32),
        (1, 2.0), (True, 1), (None,), (None, lib.int32), (lib.float16, 1j),
        (np_lib.arange(3, dtype=np.int16), 2), (np_lib.zeros(2, np.float16), 3.0),
        (np.float32(1), 1), (int,), (float, complex), (lib.float8_e4m3fn, lib.float32),
        (lib.int4, lib.int8), (np.zeros(2, np.uint8), lib.int8), ("bool", "uint8"),
    ]


@pytest.mark.parametrize("x64_mode", [False, True])
def test_result_type_spot_checks(x64_mode: bool) -> None:
    spec.config.update("jax_enable_x64", x64_mode)
    jax.config.update("jax_enable_x64", x64_mode)
    try:
        cases = zip(_result_type_cases(snp, snp), _result_type_cases(jnp, jnp))
        for ours, theirs in cases:
            assert _outcome(snp.result_type, *ours) == _outcome(jnp.result_type, *theirs), theirs
            assert _outcome(sdt.result_type, *ours, return_weak_type_flag=True) == \
                _outcome(jax.dtypes.result_type, *theirs, return_weak_type_flag=True), theirs
            assert _warned(snp.result_type, *ours)[0] == \
                _warned(jnp.result_type, *theirs)[0], theirs
    finally:
        spec.config.update("jax_enable_x64", False)
        jax.config.update("jax_enable_x64", False)


def test_result_type_errors() -> None:
    for args in ((), (snp.float8_e4m3fn, snp.bfloat16), ("S5",)):
        jargs = tuple(getattr(jnp, a.__name__) if isinstance(a, type(snp.float32)) else a
                      for a in args)
        assert _outcome(snp.result_type, *args) == _outcome(jnp.result_type, *jargs), args
    with pytest.raises(sdt.TypePromotionError):
        snp.result_type(snp.float8_e4m3fn, snp.bfloat16)
    assert sdt.TypePromotionError is spec._src.core.types.TypePromotionError
    assert issubclass(sdt.TypePromotionError, ValueError)


# -------------------------------------------------------------- jax.dtypes

CANON_INPUTS: list[tuple[str, Any, Any]] = (
    [(n, *_pair(n)) for n in CONCRETE]
    + [(f"np.{n}", _pair(n)[1].dtype.type, _pair(n)[1].dtype.type) for n in CONCRETE]
    + [("str", "float64", "float64"), ("py int", int, int), ("py float", float, float),
       ("py complex", complex, complex), ("py bool", bool, bool),
       ("float0", sdt.float0, jax.dtypes.float0), ("S3", "S3", "S3"),
       ("bad", "not-a-dtype", "not-a-dtype")])


def _check_canonicalize() -> None:
    for label, ours, theirs in CANON_INPUTS:
        got = _outcome(sdt.canonicalize_dtype, ours)
        want = _outcome(jax.dtypes.canonicalize_dtype, theirs)
        assert got == want, label
    assert _warned(sdt.canonicalize_dtype, np.float64)[0] == []  # silent, unlike requests


def test_canonicalize_dtype_x32() -> None:
    _check_canonicalize()
    assert sdt.canonicalize_dtype(np.int64) == np.dtype("int32")
    assert sdt.canonicalize_dtype(snp.complex128) == np.dtype("complex64")


@pytest.mark.usefixtures("x64")
def test_canonicalize_dtype_x64() -> None:
    _check_canonicalize()
    assert sdt.canonicalize_dtype(np.int64) == np.dtype("int64")


def test_float0() -> None:
    assert sdt.float0 == jax.dtypes.float0
    assert repr(sdt.float0) == repr(jax.dtypes.float0)
    assert sdt.float0.itemsize == jax.dtypes.float0.itemsize == 0
    assert sdt.float0.names == ("float0",)
    assert not snp.issubdtype(sdt.float0, snp.floating)
    assert _outcome(sdt.itemsize_bits, sdt.float0) == \
        _outcome(jax.dtypes.itemsize_bits, jax.dtypes.float0)


def test_extended_classes() -> None:
    assert repr(sdt.extended) == repr(jax.dtypes.extended)
    assert repr(sdt.prng_key) == repr(jax.dtypes.prng_key)
    assert issubclass(sdt.prng_key, sdt.extended) and issubclass(sdt.extended, np.generic)
    assert [c.__name__ for c in sdt.prng_key.__mro__] == \
        [c.__name__ for c in jax.dtypes.prng_key.__mro__]
    for a, b in itertools.product(("extended", "prng_key"), repeat=2):
        got = sdt.issubdtype(getattr(sdt, a), getattr(sdt, b))
        want = jax.dtypes.issubdtype(getattr(jax.dtypes, a), getattr(jax.dtypes, b))
        assert got == want, (a, b)
    for name in CONCRETE:
        assert not sdt.issubdtype(getattr(snp, name), sdt.extended)
    with pytest.raises(ValueError, match="allow_extended_dtype=False"):
        sdt.canonicalize_dtype(sdt.prng_key)
    assert sdt.canonicalize_dtype(sdt.prng_key, allow_extended_dtype=True) is sdt.prng_key


def test_extended_dtype_instances_in_issubdtype() -> None:
    # The hook typed PRNG keys use: an ExtendedDType placed by its ``type``.
    class _KeyScalar(sdt.prng_key):
        pass

    class _KeyDType(sdt.ExtendedDType):
        @property
        def type(self) -> type:
            return _KeyScalar

    key = _KeyDType()
    assert sdt.issubdtype(key, sdt.prng_key) and sdt.issubdtype(key, sdt.extended)
    assert sdt.issubdtype(key, key) and not sdt.issubdtype(key, _KeyDType())
    assert not sdt.issubdtype(key, np.floating) and not sdt.issubdtype(np.float32, key)
    want = jax.dtypes.issubdtype(jax.random.key(0).dtype, jax.dtypes.prng_key)
    assert sdt.issubdtype(key, sdt.prng_key) == want


@pytest.mark.parametrize("name", CONCRETE)
def test_itemsize_bits_and_scalar_type_of(name: str) -> None:
    ours, theirs = _pair(name)
    assert sdt.itemsize_bits(ours) == jax.dtypes.itemsize_bits(theirs)
    assert sdt.itemsize_bits(np.dtype(theirs)) == jax.dtypes.itemsize_bits(np.dtype(theirs))
    x = np.zeros((), theirs.dtype)
    assert _outcome(sdt.scalar_type_of, x) == _outcome(jax.dtypes.scalar_type_of, x)
    if name in ("int1", "uint1"):
        return  # JAX 0.12's XLA CPU cannot convert 1-bit arrays
    assert _outcome(lambda: sdt.scalar_type_of(ours(1))) == \
        _outcome(lambda: jax.dtypes.scalar_type_of(theirs(1)))


def test_scalar_type_of_python_values() -> None:
    for v in (True, 1, 1.5, 2j, np.float16(1), snp.arange(2.0)):
        jv = jnp.arange(2.0) if isinstance(v, spec.Array) else v
        assert sdt.scalar_type_of(v) is jax.dtypes.scalar_type_of(jv)
    assert _outcome(sdt.itemsize_bits, None) == _outcome(jax.dtypes.itemsize_bits, None)
    assert sdt.bfloat16 is jax.dtypes.bfloat16 is ml_dtypes.bfloat16


# -------------------------------------------------------------- iscomplexobj

def test_iscomplexobj_isrealobj() -> None:
    cases: list[tuple[Any, Any]] = [
        (True, True), (0, 0), (1.5, 1.5), (1j, 1j), (None, None), ("x", "x"),
        (np.complex64(1), np.complex64(1)), (np.float32(1), np.float32(1)),
        ([1, 2], [1, 2]), ([0, 1 + 2j], [0, 1 + 2j]),
        (np.zeros(2, np.complex64), np.zeros(2, np.complex64)),
        (snp.arange(3), jnp.arange(3)), (snp.complex64(1), jnp.complex64(1)),
        (snp.zeros(2, snp.bfloat16), jnp.zeros(2, jnp.bfloat16)),
    ]
    for ours, theirs in cases:
        assert _outcome(snp.iscomplexobj, ours) == _outcome(jnp.iscomplexobj, theirs), theirs
        assert _outcome(snp.isrealobj, ours) == _outcome(jnp.isrealobj, theirs), theirs


# -------------------------------------------------------------- public names

def _jnp_dtype_names() -> set[str]:
    names = set()
    for n in dir(jnp):
        if n.startswith("_"):
            continue
        v = getattr(jnp, n)
        if isinstance(v, type) and (type(v).__name__ == "_ScalarMeta"
                                    or issubclass(v, np.generic)):
            names.add(n)
    return names | set(DTYPE_FUNCTIONS)


# Public dtype-related names that spec deliberately does not provide (with reasons).
EXCLUDED: dict[str, str] = {}


def test_public_names_match_jax() -> None:
    want = _jnp_dtype_names()
    have = {n for n in want if hasattr(snp, n)}
    assert want - have - set(EXCLUDED) == set()
    assert set(ABSTRACT) | set(CONCRETE) | set(ALIASES) <= want
    # spec exports them all through its star import, and nothing JAX lacks.
    exported = set(spec._src.numpy.dtypes.__all__)
    assert exported <= set(dir(jnp))
    assert want <= exported | set(EXCLUDED)


def test_jax_dtypes_public_names() -> None:
    want = {n for n in dir(jax.dtypes) if not n.startswith("_")}
    have = {n for n in dir(sdt) if not n.startswith("_")}
    assert want - have - set(EXCLUDED) == set()
    assert set(sdt.__all__) == want


# ------------------------------------------------------- property: result_type

_RT_POOL: list[tuple[Any, Any]] = (
    [(getattr(snp, n), getattr(jnp, n)) for n in
     ("bool_", "int8", "uint8", "int16", "uint32", "int64", "bfloat16", "float16", "float32",
      "float64", "complex64", "float8_e4m3fn", "int4")]
    + [(v, v) for v in (True, 3, -1.5, 2j, int, float, complex, bool, "uint16", None,
                        np.dtype("int64"), np.float16, np.int8(1))]
    + [(np.zeros(2, np.float16), np.zeros(2, np.float16)),
       (snp.asarray(1.0), jnp.asarray(1.0)),
       (snp.arange(3, dtype="int8"), jnp.arange(3, dtype="int8"))])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(_RT_POOL) - 1), min_size=1, max_size=4))
def test_result_type_property(picks: list[int]) -> None:
    ours = [_RT_POOL[i][0] for i in picks]
    theirs = [_RT_POOL[i][1] for i in picks]
    assert _outcome(sdt.result_type, *ours, return_weak_type_flag=True) == \
        _outcome(jax.dtypes.result_type, *theirs, return_weak_type_flag=True)
    assert _outcome(snp.result_type, *ours) == _outcome(jnp.result_type, *theirs)
