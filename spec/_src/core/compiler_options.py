"""Compiler options: ``jit(..., compiler_options=...)``, ``.compile(compiler_options=...)``
and the ``XLA_FLAGS`` environment variable.

spec has no compiler, so options never change what a program computes; they
are validated as XLA validates them and kept on the compiled object. The
names and types come from XLA's ``DebugOptions`` message
(``xla_debug_options``, generated from jaxlib). Validation runs at compile
time, in JAX's order:

1. the effort levels ``optimization_level`` and ``memory_fitting_level`` are
   taken out and read as ``CompilerEffortLevel`` (a member, its value or its
   name), else ValueError;
2. every other value becomes one of str, bool, int (64-bit) or float, as
   jaxlib's binding converts it, else TypeError;
3. the options are applied in order and the first one XLA refuses raises
   ``JaxRuntimeError("INVALID_ARGUMENT: ...")``: an unknown name, or a value
   the field's type does not take (rules in ``_apply``).
"""

from __future__ import annotations

import enum
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from spec._src.core.errors import JaxRuntimeError
from spec._src.core.xla_debug_options import (
    ENUM_FLAG_SPELLINGS,
    ENUMS,
    FLAG_ONLY,
    NOT_FLAGS,
    OPTIONS,
)


class CompilerEffortLevel(enum.Enum):
    """How much effort XLA spends optimizing for run time or for memory fit."""

    UNKNOWN = 0
    O0 = 9
    O1 = 19
    O2 = 29
    O3 = 39

    @classmethod
    def _missing_(cls, value: object) -> CompilerEffortLevel | None:
        # A level may also be given by its name.
        return cls.__members__.get(value) if isinstance(value, str) else None


EFFORT_OPTIONS = ("optimization_level", "memory_fitting_level")

OptionValue = str | bool | int | float

_INT32 = (-(2 ** 31), 2 ** 31 - 1)
_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _invalid(message: str) -> JaxRuntimeError:
    return JaxRuntimeError(f"INVALID_ARGUMENT: {message}")


# ------------------------------------------------------------- value conversion


def binding_value(name: str, value: Any) -> OptionValue:
    """The value as jaxlib's binding passes it to XLA: a string, a bool, a
    64-bit int (a larger int becomes a float), or a float. NumPy integers
    are ints; NumPy floats and NumPy bools are floats."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating, np.bool_)):
        return float(value)
    raise TypeError(f"compiler option {name!r} has the value {value!r} of type "
                    f"{type(value).__name__}; options take str, bool, int or float values")


def _shown(value: OptionValue) -> str:
    """A value as XLA prints it in its errors (absl::StrCat): bools as 1/0,
    floats with six significant digits."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return format(value, "g")
    return str(value)


# ----------------------------------------------------------- parsing strings

_WS = " \t\n\v\f\r"
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_HEX_FLOAT_TEXT = re.compile(r"-?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                             r"(?:[pP][+-]?[0-9]+)?")
_FLOAT_TEXT = re.compile(
    r"-?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan(?:\([0-9A-Za-z_]*\))?)",
    re.IGNORECASE)


def _atoi(text: str, bounds: tuple[int, int]) -> int | None:
    """absl::SimpleAtoi: optional surrounding whitespace and sign, decimal
    digits, in range."""
    body = text.strip(_WS)
    if not _INT_TEXT.fullmatch(body):
        return None
    value = int(body)
    return value if bounds[0] <= value <= bounds[1] else None


def _atof(text: str) -> float | None:
    """absl::SimpleAtof: optional surrounding whitespace, a leading ``+``
    (not before ``-``), then a decimal or hexadecimal number, inf or nan."""
    body = text.strip(_WS)
    if body.startswith("+") and not body.startswith("+-"):
        body = body[1:]
    if _HEX_FLOAT_TEXT.fullmatch(body):
        return float.fromhex(body)
    if not _FLOAT_TEXT.fullmatch(body):
        return None
    return float(body.split("(")[0])


_NUMERIC = ("int32", "int64", "float", "double")


def _number_parses(kind: str, text: str) -> bool:
    """Whether XLA reads ``text`` as a number of the ``_NUMERIC`` kind ``kind``."""
    if kind == "int32":
        return _atoi(text, _INT32) is not None
    if kind == "int64":
        return _atoi(text, _INT64) is not None
    return _atof(text) is not None


def _parses(kind: str, enum_type: str | None, text: str) -> bool:
    """Whether XLA reads one option value written as a string."""
    if kind == "string":
        return True
    if kind in _NUMERIC:
        return _number_parses(kind, text)
    if kind == "bool":
        return text in ("True", "False")
    if kind == "enum":
        return _atoi(text, _INT32) is not None or text in ENUMS[enum_type or ""]
    return False  # a message field has no string form


def _apply_string(name: str, kind: str, repeated: bool, enum_type: str | None,
                  text: str) -> None:
    """A string value is parsed by the field's type; a repeated field takes
    a comma-separated list (empty: no elements)."""
    if repeated and text == "":
        return
    for piece in text.split(",") if repeated else [text]:
        if not _parses(kind, enum_type, piece):
            raise _invalid(f"While setting option {name}, '{piece}' is not a valid {kind} "
                           "value.")


def _takes(kind: str, value: bool | int | float) -> bool:
    """Whether a field of ``kind`` takes a (non-string) value as it is."""
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "int32":
        return isinstance(value, int) and _INT32[0] <= value <= _INT32[1]
    if kind in ("int64", "enum"):
        return isinstance(value, int)
    if kind == "float":
        # In float32's finite range (so NaN and the infinities are refused).
        return isinstance(value, float) and -_FLOAT32_MAX <= value <= _FLOAT32_MAX
    if kind == "double":
        return isinstance(value, float)
    return False


def _apply(name: str, value: OptionValue) -> None:
    """XLA's check of one option: the name must be a DebugOptions field and
    the value one its type takes."""
    field = OPTIONS.get(name)
    if field is None:
        raise _invalid(f"No such compile option: '{name}'")
    kind, repeated, enum_type = field
    if isinstance(value, str):
        _apply_string(name, kind, repeated, enum_type, value)
    elif not _takes(kind, value):
        raise _invalid(f"While setting option {name}, '{_shown(value)}' is not a valid "
                       f"{kind} value.")


# ------------------------------------------------------------------- entry


def effort_level(value: Any) -> CompilerEffortLevel:
    """An effort level given as a member, its value or its name."""
    return CompilerEffortLevel(value)


def validated(options: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The options of one compilation (the jit's, then the compile call's; a
    later value of a name replaces an earlier one), checked as XLA checks
    them. Effort levels come back as ``CompilerEffortLevel`` members."""
    merged = dict(options)
    for name, value in merged.items():
        if not isinstance(name, str):
            raise TypeError(f"compiler option names are strings, got {name!r}")
        try:
            hash(value)
        except TypeError:
            raise ValueError(f"compiler option {name!r} has the unhashable value {value!r}; "
                             "options are part of the compilation cache key") from None
    checked: dict[str, Any] = dict(merged)
    for name in EFFORT_OPTIONS:
        if name in merged:
            checked[name] = effort_level(merged[name])
    rest = [(k, v) for k, v in merged.items() if k not in EFFORT_OPTIONS]
    if any(k == "individually_defined_output_indices" for k, _ in rest):
        indices = merged["individually_defined_output_indices"]
        if not (isinstance(indices, tuple) and all(isinstance(i, int) for i in indices)):
            raise TypeError("compiler option 'individually_defined_output_indices' takes a "
                            f"tuple of ints, got {indices!r}")
        rest = [(k, v) for k, v in rest if k != "individually_defined_output_indices"]
    converted = [(k, binding_value(k, v)) for k, v in rest]
    for name, value in converted:
        _apply(name, value)
    return checked


def _option_text(value: Any) -> str:
    return value.name if isinstance(value, CompilerEffortLevel) else repr(value)


def options_text(options: Mapping[str, Any]) -> str:
    """The options as a comment line of a compiled program's text."""
    shown = ", ".join(f"{k}={_option_text(v)}" for k, v in options.items())
    return f"# compiler_options: {shown}\n"


# ------------------------------------------------------------------ XLA_FLAGS

# XLA_FLAGS is read once, when the backend starts (spec's first compilation):
# later changes to the environment have no effect.
_flags_checked = False

_BOOL_FLAG_TEXT = ("true", "false", "1", "0")


def _flag_value_ok(kind: str, text: str | None) -> bool:
    if text is None:
        return kind == "bool"
    if kind == "bool":
        return text.lower() in _BOOL_FLAG_TEXT
    if kind in _NUMERIC:
        return _number_parses(kind, text)
    return True


def _enum_flag_reads(name: str, text: str | None) -> bool:
    """Whether a single-valued enum flag's own parser reads ``text``, by the
    spellings measured for it (SPEC 4.1a). List-valued enum flags (a list of
    names, with +/- prefixes) are taken as given."""
    spellings = ENUM_FLAG_SPELLINGS.get(name)
    field = OPTIONS.get(name)
    if spellings is None or field is None or field[2] is None:
        return True
    if text is None:
        return False
    values = ENUMS[field[2]]
    return (("name" in spellings and text in values)
            or ("lower" in spellings and text in {v.lower() for v in values})
            or ("number" in spellings and text.isdigit() and int(text) < len(values)))


def _flag_kind(name: str) -> str | None:
    """The type of an XLA_FLAGS flag, None for no such flag."""
    if name in FLAG_ONLY:
        return FLAG_ONLY[name]
    field = OPTIONS.get(name)
    return None if field is None or name in NOT_FLAGS else field[0]


# XLA's fatal check when a flag's parser rejects its value.
_PARSE_FAILED = ("Check failed: tsl::Flags::Parse(&env_argv->argc, env_argv->argv.data(), "
                 "flag_list) Flag parsing failed.")


def xla_flags_problem(flags: str | None) -> str | None:
    """What XLA reports about an ``XLA_FLAGS`` value (None: nothing).
    Flags are ``--name`` or ``--name=value`` separated by whitespace; a value
    not starting with ``--`` names a file of flags."""
    if flags is None or not flags.strip():
        return None
    tokens = flags.split()
    if not tokens[0].startswith("--"):
        return (f'Could not open file "{flags}" to read flags for environment variable '
                f'"XLA_FLAGS". (We assumed "{flags}" was a file name because it did not '
                'start with a "--".)')
    unknown: list[str] = []
    # Every flag is parsed; values a parser rejects end the process after all
    # of them (a bool's or a number's parser says which; an enum's says nothing).
    uninterpreted: list[str] = []
    failed = False
    for token in tokens:
        name, eq, text = token[2:].partition("=")
        kind = _flag_kind(name) if token.startswith("--") else None
        if kind is None:
            unknown.append(token)
            continue
        if not _flag_value_ok(kind, text if eq else None):
            uninterpreted.append(f"Couldn't interpret value {text} for flag {name}.")
            failed = True
        elif kind == "enum" and not _enum_flag_reads(name, text if eq else None):
            failed = True
    if failed:
        return "\n".join([*uninterpreted, _PARSE_FAILED, f"usage: {' '.join(tokens)}"])
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        return f"Unknown flag{plural} in XLA_FLAGS: {' '.join(unknown)}"
    return None


def xla_flag(name: str) -> str | None:
    """The text of ``--name=text`` in ``XLA_FLAGS`` (the last one given), or
    None when the flag is absent or has no value."""
    found = None
    for token in os.environ.get("XLA_FLAGS", "").split():
        flag, eq, text = token.partition("=")
        if flag == f"--{name}" and eq:
            found = text
    return found


def check_xla_flags() -> None:
    """At the first compilation: an ``XLA_FLAGS`` that XLA cannot parse ends
    the process with status 1 after printing XLA's message, as XLA's fatal
    check does."""
    global _flags_checked
    if _flags_checked:
        return
    _flags_checked = True
    problem = xla_flags_problem(os.environ.get("XLA_FLAGS"))
    if problem is not None:
        sys.stderr.write(problem + "\n")
        sys.stderr.flush()
        os._exit(1)


__all__ = ["CompilerEffortLevel", "EFFORT_OPTIONS", "check_xla_flags", "options_text",
           "validated", "xla_flag", "xla_flags_problem"]
