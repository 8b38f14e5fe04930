"""Normalising case results and comparing them against the reference.

A case result is a pytree (list/tuple/dict) of leaves. ``normalize`` turns it into plain,
implementation-independent data immediately after the case ran (so lazily computed arrays are
materialised under the right x64 setting); ``compare`` then walks two normalised trees and returns
a short reason for the first mismatch, or ``None``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

# -- normalised leaves --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Raised:
    """An exception recorded as a result; ``class_names`` is its MRO, most derived first."""

    name: str
    qualname: str
    class_names: tuple[str, ...]
    message: str

    @staticmethod
    def of(exc: BaseException) -> Raised:
        cls = type(exc)
        msg = str(exc).strip().splitlines()
        first = msg[0] if msg else ""
        return Raised(
            cls.__name__,
            f"{cls.__module__}.{cls.__qualname__}",
            tuple(k.__name__ for k in cls.__mro__),
            first[:300],
        )

    def matches(self, name: str) -> bool:
        """True if some class in this exception's MRO is called ``name``."""
        return name in self.class_names

    def describe(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name


@dataclasses.dataclass(frozen=True)
class ArrayLeaf:
    value: np.ndarray[Any, Any]
    dtype: str
    shape: tuple[int, ...]
    weak_type: bool | None


@dataclasses.dataclass(frozen=True)
class Contraction:
    """A case result that is a contraction (dot_general, matmul, einsum, conv_general_dilated),
    compared under the numerical contract of SPEC.md section 9.4 instead of bit for bit.

    spec rounds each element's exact sum of products once; XLA rounds as it adds, in its own
    order. So ``|spec - jax| <= gamma_depth * magnitude + ulp``: ``magnitude`` is the same
    contraction of the operands' absolute values (per element, the sum of |a_k * b_k|; for
    complex results a bound for each part), ``depth`` the number of products per element,
    gamma_n = n*u / (1 - n*u) with u the accumulation type's unit roundoff (2**-24 for float32
    and narrower, 2**-53 for float64) and ulp one unit in the last place of the result type.
    Built by cases with ``conformance.registry.contraction``.
    """

    value: Any
    magnitude: Any
    depth: int


@dataclasses.dataclass(frozen=True)
class ContractionLeaf:
    array: ArrayLeaf
    magnitude: np.ndarray[Any, Any]  # float64, the array's shape
    depth: int


@dataclasses.dataclass(frozen=True)
class ScalarLeaf:
    """A Python bool/int/float/complex: compared by exact type and ``repr`` (so -0.0 != 0.0)."""

    type_name: str
    text: str


@dataclasses.dataclass(frozen=True)
class DtypeLeaf:
    name: str


@dataclasses.dataclass(frozen=True)
class OtherLeaf:
    """Anything the harness does not know how to compare; always a mismatch."""

    type_name: str
    text: str


@dataclasses.dataclass(frozen=True)
class Node:
    kind: str  # "list" | "tuple" | "dict"
    keys: tuple[str, ...]
    children: tuple[Norm, ...]


Leaf = ArrayLeaf | ContractionLeaf | ScalarLeaf | DtypeLeaf | OtherLeaf | Raised | str | None
Norm = Node | Leaf

_PY_SCALARS = (bool, int, float, complex)


def _is_array(x: object) -> bool:
    return hasattr(x, "__array__") and hasattr(x, "dtype") and hasattr(x, "shape")


def normalize(x: object) -> Norm:
    """Convert a case result into comparable plain data (arrays become NumPy arrays)."""
    if x is None or isinstance(x, (str, Raised)):
        return x
    if type(x) in _PY_SCALARS:
        return ScalarLeaf(type(x).__name__, repr(x))
    if isinstance(x, np.dtype):
        return DtypeLeaf(x.name)
    if isinstance(x, Contraction):
        array = normalize(x.value)
        if not isinstance(array, ArrayLeaf):
            return OtherLeaf("Contraction", f"of a non-array {type(x.value).__name__}")
        magnitude = np.broadcast_to(np.asarray(x.magnitude, np.float64), array.shape)
        return ContractionLeaf(array, magnitude, int(x.depth))
    if isinstance(x, dict):
        keys = sorted(x, key=repr)
        return Node("dict", tuple(repr(k) for k in keys), tuple(normalize(x[k]) for k in keys))
    if isinstance(x, (list, tuple)):
        kind = "list" if isinstance(x, list) else "tuple"
        return Node(kind, (), tuple(normalize(c) for c in x))
    if isinstance(x, type):
        # Scalar types (jnp.float32, np.int8) stand for their dtype.
        dt = getattr(x, "dtype", None)
        if isinstance(dt, np.dtype):
            return DtypeLeaf(dt.name)
        if issubclass(x, np.generic):
            return DtypeLeaf(np.dtype(x).name)
    if _is_array(x):
        arr = np.asarray(x)
        weak = getattr(x, "weak_type", None)
        return ArrayLeaf(
            arr, np.dtype(arr.dtype).name, tuple(arr.shape), None if weak is None else bool(weak)
        )
    return OtherLeaf(f"{type(x).__module__}.{type(x).__qualname__}", repr(x)[:200])


def find_other(n: Norm) -> OtherLeaf | None:
    """First leaf the harness cannot compare (a bug in the case when found in the reference)."""
    if isinstance(n, OtherLeaf):
        return n
    if isinstance(n, Node):
        for c in n.children:
            found = find_other(c)
            if found is not None:
                return found
    return None


# -- ULP distance -------------------------------------------------------------------------------


def _c(x: Any) -> np.ndarray[Any, Any]:
    """C-contiguous copy; unlike np.ascontiguousarray it keeps 0-d arrays 0-d."""
    return np.array(x, order="C")


def float_bits(dtype: np.dtype[Any]) -> int | None:
    """Bit width of a floating dtype (NumPy or ml_dtypes), or None if not floating."""
    if dtype.kind in "biuc":
        return None
    try:
        finfo: Callable[[np.dtype[Any]], Any] = ml_dtypes.finfo
        return int(finfo(dtype).bits)
    except (ValueError, TypeError):
        return None


def ulp_distance(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Elementwise number of representable values between ``a`` and ``b`` (same float dtype).

    Floats are sign-magnitude, so the magnitude bits order values of one sign; across signs the
    distance is the sum of both magnitudes (+0 and -0 are 0 apart). Meaningless for NaN/inf
    elements, which the caller handles separately. Returns uint64.
    """
    if a.dtype != b.dtype:
        raise TypeError(f"ulp_distance needs equal dtypes, got {a.dtype} and {b.dtype}")
    bits = float_bits(a.dtype)
    if bits is None:
        raise TypeError(f"ulp_distance needs a floating dtype, got {a.dtype}")
    utype = np.dtype(f"uint{a.dtype.itemsize * 8}")
    ua = _c(a).view(utype).astype(np.uint64)
    ub = _c(b).view(utype).astype(np.uint64)
    sign = np.uint64(1) << np.uint64(bits - 1)
    mag_mask = sign - np.uint64(1)
    ma, mb = ua & mag_mask, ub & mag_mask
    same_sign = (ua & sign) == (ub & sign)
    diff = np.maximum(ma, mb) - np.minimum(ma, mb)
    return np.where(same_sign, diff, ma + mb)


# -- comparison ---------------------------------------------------------------------------------


def _fmt(x: object) -> str:
    if isinstance(x, np.generic) and x.dtype.kind not in "biufc":
        x = float(x)  # ml_dtypes scalars (bfloat16, float8) print best via float
    return repr(x.item() if isinstance(x, np.generic) else x)


def _first_index(mask: np.ndarray[Any, Any]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _compare_float(
    exp: np.ndarray[Any, Any], act: np.ndarray[Any, Any], tol: int
) -> str | None:
    e64 = exp.astype(np.float64)
    a64 = act.astype(np.float64)
    e_nan, a_nan = np.isnan(e64), np.isnan(a64)
    bad = e_nan != a_nan
    finite = ~(e_nan | a_nan)
    inf = finite & (np.isinf(e64) | np.isinf(a64))
    bad |= inf & (e64 != a64)
    regular = finite & ~inf
    dist = ulp_distance(exp, act)
    if tol == 0:
        # Bit-exact: also distinguishes +0.0 from -0.0.
        utype = np.dtype(f"uint{exp.dtype.itemsize * 8}")
        bad |= regular & (
            _c(exp).view(utype) != _c(act).view(utype)
        )
    else:
        bad |= regular & (dist > np.uint64(tol))
    if not bad.any():
        return None
    idx = _first_index(bad)
    n_bad = int(bad.sum())
    worst = dist[regular & bad]
    worst_txt = f", max {int(worst.max())} ULP" if worst.size else ""
    tol_txt = "bit-exact" if tol == 0 else f"tolerance {tol} ULP"
    return (
        f"values differ at {n_bad}/{exp.size} elements ({tol_txt}{worst_txt}); "
        f"first at {idx}: expected {_fmt(exp[idx])}, got {_fmt(act[idx])}"
    )


def _unit_roundoff(dtype: np.dtype[Any]) -> float:
    """Unit roundoff of the accumulation type of a contraction with result ``dtype``: float64
    for float64 and complex128, float32 for everything narrower."""
    real_bytes = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    return 2.0**-53 if real_bytes == 8 else 2.0**-24


def _ulp(values: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """One unit in the last place of ``dtype`` at each (finite, float64) value."""
    finfo: Callable[[np.dtype[Any]], Any] = ml_dtypes.finfo
    info = finfo(dtype)
    exponent = np.frexp(np.abs(values))[1] - 1
    return np.asarray(np.ldexp(1.0, np.maximum(exponent, int(info.minexp)) - int(info.nmant)))


def _compare_contraction_part(
    exp: np.ndarray[Any, Any], act: np.ndarray[Any, Any], bound: np.ndarray[Any, Any]
) -> str | None:
    e64, a64 = exp.astype(np.float64), act.astype(np.float64)
    e_nan, a_nan = np.isnan(e64), np.isnan(a64)
    bad = e_nan != a_nan
    finite = ~(e_nan | a_nan)
    inf = finite & (np.isinf(e64) | np.isinf(a64))
    bad |= inf & (e64 != a64)
    regular = finite & ~inf
    e_reg, a_reg = np.where(regular, e64, 0.0), np.where(regular, a64, 0.0)
    diff = np.abs(e_reg - a_reg)
    allowed = np.where(regular, bound + _ulp(e_reg, exp.dtype), 0.0)
    bad |= regular & (diff > allowed)
    if not bad.any():
        return None
    idx = _first_index(bad)
    return (
        f"values differ at {int(bad.sum())}/{exp.size} elements beyond the contraction bound; "
        f"first at {idx}: expected {_fmt(exp[idx])}, got {_fmt(act[idx])} "
        f"(allowed {float(allowed[idx]):.3g})"
    )


def compare_contraction(
    exp: np.ndarray[Any, Any], act: np.ndarray[Any, Any], magnitude: np.ndarray[Any, Any],
    depth: int,
) -> str | None:
    """Compare two contraction results under SPEC.md's bound (see ``Contraction``)."""
    if exp.dtype.kind not in "fc" and float_bits(exp.dtype) is None:
        return compare_values(exp, act, 0)  # integers and bools: exact
    nu = depth * _unit_roundoff(exp.dtype)
    bound = nu / (1.0 - nu) * (1.0 + 2.0**-20) * magnitude
    if exp.dtype.kind == "c":
        part = np.dtype(f"float{exp.dtype.itemsize * 4}")
        for label, fn in (("real", np.real), ("imag", np.imag)):
            why = _compare_contraction_part(
                _c(fn(exp)).astype(part), _c(fn(act)).astype(part), bound
            )
            if why is not None:
                return f"{label} part: {why}"
        return None
    return _compare_contraction_part(exp, act, bound)


def compare_values(
    exp: np.ndarray[Any, Any], act: np.ndarray[Any, Any], tol: int
) -> str | None:
    """Compare two arrays of the same shape and dtype; None if they agree."""
    if exp.dtype.kind == "c":
        part = np.dtype(f"float{exp.dtype.itemsize * 4}")
        for label, fn in (("real", np.real), ("imag", np.imag)):
            why = _compare_float(
                _c(fn(exp)).astype(part),
                _c(fn(act)).astype(part),
                tol,
            )
            if why is not None:
                return f"{label} part: {why}"
        return None
    if float_bits(exp.dtype) is not None:
        return _compare_float(exp, act, tol)
    if exp.dtype.kind in "biu":
        bad = exp != act
        if not bad.any():
            return None
        idx = _first_index(np.asarray(bad))
        return (
            f"values differ at {int(np.sum(bad))}/{exp.size} elements; "
            f"first at {idx}: expected {_fmt(exp[idx])}, got {_fmt(act[idx])}"
        )
    # Anything else (int4, strings, ...): byte equality.
    if _c(exp).tobytes() == _c(act).tobytes():
        return None
    return "values differ (bytewise)"


def _kind(n: Norm) -> str:
    if isinstance(n, Node):
        return n.kind
    if isinstance(n, ArrayLeaf):
        return "array"
    if isinstance(n, ContractionLeaf):
        return "contraction"
    if isinstance(n, ScalarLeaf):
        return f"Python {n.type_name}"
    if isinstance(n, DtypeLeaf):
        return "dtype"
    if isinstance(n, Raised):
        return f"raised {n.name}"
    if isinstance(n, str):
        return "str"
    if n is None:
        return "None"
    return f"unsupported {n.type_name}"


def _first_line_diff(exp: str, act: str) -> str:
    el, al = exp.splitlines(), act.splitlines()
    for i in range(max(len(el), len(al))):
        e = el[i] if i < len(el) else "<missing>"
        a = al[i] if i < len(al) else "<missing>"
        if e != a:
            return f"line {i + 1}: expected {e!r}, got {a!r}"
    return f"expected {exp!r}, got {act!r}"


def _compare_array_types(exp: ArrayLeaf, act: ArrayLeaf) -> str | None:
    if exp.shape != act.shape:
        return f"shape: expected {exp.shape}, got {act.shape}"
    if exp.dtype != act.dtype:
        return f"dtype: expected {exp.dtype}, got {act.dtype}"
    if exp.weak_type is not None and act.weak_type is not None and exp.weak_type != act.weak_type:
        return f"weak_type: expected {exp.weak_type}, got {act.weak_type}"
    return None


def _compare_leaf(exp: Leaf, act: Leaf, ulp_for: Callable[[str], int]) -> str | None:
    if isinstance(exp, Raised):
        if not isinstance(act, Raised):
            return f"expected {exp.name} to be raised, got {_kind(act)}"
        if act.matches(exp.name):
            return None
        return f"expected {exp.name}, raised {act.describe()}"
    if isinstance(act, Raised):
        return f"expected {_kind(exp)}, raised {act.describe()}"
    if isinstance(act, OtherLeaf):
        return f"unsupported result type {act.type_name}: {act.text}"
    if type(exp) is not type(act):
        return f"expected {_kind(exp)}, got {_kind(act)}"
    if isinstance(exp, ContractionLeaf):
        assert isinstance(act, ContractionLeaf)
        why = _compare_array_types(exp.array, act.array)
        if why is not None:
            return why
        return compare_contraction(exp.array.value, act.array.value, exp.magnitude, exp.depth)
    if isinstance(exp, ArrayLeaf):
        assert isinstance(act, ArrayLeaf)
        why = _compare_array_types(exp, act)
        if why is not None:
            return why
        return compare_values(exp.value, act.value, ulp_for(exp.dtype))
    if isinstance(exp, ScalarLeaf):
        assert isinstance(act, ScalarLeaf)
        if exp.type_name != act.type_name:
            return f"expected Python {exp.type_name}, got Python {act.type_name}"
        return None if exp.text == act.text else f"expected {exp.text}, got {act.text}"
    if isinstance(exp, DtypeLeaf):
        assert isinstance(act, DtypeLeaf)
        return None if exp.name == act.name else f"dtype: expected {exp.name}, got {act.name}"
    if isinstance(exp, str):
        assert isinstance(act, str)
        return None if exp == act else _first_line_diff(exp, act)
    if exp is None:
        return None
    return f"reference produced an unsupported result {_kind(exp)}"


def _path_item(kind: str, key: str, i: int) -> str:
    return f"[{key}]" if kind == "dict" else f"[{i}]"


def compare(exp: Norm, act: Norm, ulp_for: Callable[[str], int] = lambda _: 0) -> str | None:
    """Reason for the first difference between two normalised results, or None if equal.

    ``ulp_for(dtype_name)`` gives the allowed ULP distance for float arrays of that dtype.
    """
    return _compare(exp, act, ulp_for, "")


def _compare(
    exp: Norm, act: Norm, ulp_for: Callable[[str], int], path: str
) -> str | None:
    where = f"at {path}: " if path else ""
    if isinstance(exp, Node) or isinstance(act, Node):
        if not (isinstance(exp, Node) and isinstance(act, Node)) or exp.kind != act.kind:
            return f"{where}expected {_kind(exp)}, got {_kind(act)}"
        if exp.kind == "dict" and exp.keys != act.keys:
            return f"{where}dict keys: expected {list(exp.keys)}, got {list(act.keys)}"
        if len(exp.children) != len(act.children):
            return (
                f"{where}{exp.kind} length: expected {len(exp.children)}, "
                f"got {len(act.children)}"
            )
        for i, (e, a) in enumerate(zip(exp.children, act.children, strict=True)):
            key = exp.keys[i] if exp.kind == "dict" else ""
            why = _compare(e, a, ulp_for, path + _path_item(exp.kind, key, i))
            if why is not None:
                return why
        return None
    why = _compare_leaf(exp, act, ulp_for)
    return None if why is None else where + why
