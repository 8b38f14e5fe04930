"""The binary type-promotion table: promote_types, result_type and ``x + y``.

One case per first operand (a table row) and x64 setting, so a few dozen cases cover all pairs.
Entries that JAX rejects (e.g. mixing float8 types with other floats) are recorded as raised
exceptions via ``capture``; other implementations must raise the same class there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.cases._util import DTYPES, np_dtype
from conformance.registry import capture, register_case

# Python scalar types act as weak operands; weak arrays come from jnp.asarray(<Python scalar>).
PY_SCALARS: dict[str, tuple[type, Any]] = {"pyint": (int, 3), "pyfloat": (float, 2.5),
                                           "pycomplex": (complex, 1.5 - 2j)}
WEAK_ARRAYS: dict[str, Any] = {"weak_int_array": 3, "weak_float_array": 2.5,
                               "weak_complex_array": 1.5 - 2j}
OPERANDS: tuple[str, ...] = DTYPES + tuple(PY_SCALARS) + tuple(WEAK_ARRAYS)


def _type_arg(name: str) -> Any:
    """What result_type receives for operand ``name``: a dtype, or a Python scalar type."""
    if name in PY_SCALARS:
        return PY_SCALARS[name][0]
    if name in WEAK_ARRAYS:
        return None  # a weak array has no type-only spelling
    return np_dtype(name)


def _value(jnp: Any, name: str) -> Any:
    if name in PY_SCALARS:
        return PY_SCALARS[name][1]
    if name in WEAK_ARRAYS:
        return jnp.asarray(WEAK_ARRAYS[name])
    return jnp.asarray(np.ones((2,), np_dtype(name)))


def _add(jnp: Any, a: str, b: str) -> Any:
    x, y = _value(jnp, a), _value(jnp, b)
    if a in PY_SCALARS and b in PY_SCALARS:
        return jnp.add(x, y)  # x + y would be plain Python arithmetic
    return x + y


def _row(first: str) -> Any:
    def row(jax: Any, jnp: Any, lax: Any) -> Any:
        out: dict[str, Any] = {}
        if first in DTYPES:
            out["promote_types"] = [
                capture(jnp.promote_types, np_dtype(first), np_dtype(b)) for b in DTYPES
            ]
        ta = _type_arg(first)
        if ta is not None:
            out["result_type"] = [
                capture(jnp.result_type, ta, _type_arg(b))
                for b in OPERANDS
                if _type_arg(b) is not None
            ]
        # Result dtype and weak_type of x + y are recorded by the comparison of the arrays.
        # Only the upper triangle (b at or after `first`): every distinct eager add costs JAX
        # an XLA compilation, and the lower triangle is covered by the commuted pair plus the
        # result_type entries below, which run for all ordered pairs.
        start = OPERANDS.index(first)
        out["add"] = [capture(_add, jnp, first, b) for b in OPERANDS[start:]]
        out["result_type_of_values"] = [
            capture(lambda b: jnp.result_type(_value(jnp, first), _value(jnp, b)), b)
            for b in OPERANDS
        ]
        return out

    return row


for _first in OPERANDS:
    for _x64 in (False, True):
        register_case(
            f"row_{_first}" + ("_x64" if _x64 else ""),
            _row(_first),
            module=__name__,
            tags=("promotion", "dtypes"),
            x64=_x64,
        )
