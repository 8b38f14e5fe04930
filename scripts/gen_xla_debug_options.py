"""Regenerate spec/_src/core/xla_debug_options.py from the installed jaxlib.

XLA validates ``compiler_options`` against the fields of its ``DebugOptions``
protocol buffer (xla/xla.proto). jaxlib carries that file's descriptor,
serialized, inside ``libjax_common.so``; this script finds it there, decodes
it (a few lines of protobuf wire format, so no protobuf package is needed)
and writes every field's name, type, repetition and, for enum fields, the
value names of its enum type. Run it with the venv that has JAX installed:

    .venv/bin/python scripts/gen_xla_debug_options.py
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator

import jaxlib

LIB = pathlib.Path(jaxlib.__file__).parent / "libjax_common.so"
OUT = pathlib.Path(__file__).resolve().parents[1] / "spec/_src/core/xla_debug_options.py"

# FieldDescriptorProto.Type numbers -> the names XLA's messages use.
_TYPES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
          7: "fixed32", 8: "bool", 9: "string", 15: "sfixed32", 16: "sfixed64", 17: "sint32",
          18: "sint64",
          11: "message", 12: "bytes", 13: "uint32", 14: "enum"}
_REPEATED = 3


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data: bytes, i: int = 0, end: int | None = None,
            top_level: bool = False) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs of a serialized message. At the top level
    the descriptor sits inside a larger binary: stop at its last field
    (``syntax``, number 12)."""
    end = len(data) if end is None else end
    while i < end:
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire} in the descriptor")
        yield number, value
        if top_level and number == 12:
            return


def _file_descriptor(data: bytes, name: str) -> list[tuple[int, int | bytes]]:
    encoded = name.encode()
    start = data.index(b"\n" + bytes([len(encoded)]) + encoded)
    return list(_fields(data, start, top_level=True))


def _enum(body: bytes, prefix: str, enums: dict[str, list[str]]) -> None:
    name = ""
    values: list[str] = []
    for number, value in _fields(body):
        if number == 1:
            name = bytes(value).decode()
        elif number == 2:
            values += [bytes(v).decode() for n, v in _fields(value) if n == 1]  # type: ignore[arg-type]
    enums[f"{prefix}.{name}"] = values


def _message(body: bytes, prefix: str, messages: dict[str, list[dict[str, object]]],
             enums: dict[str, list[str]]) -> None:
    name = next(bytes(v).decode() for n, v in _fields(body) if n == 1)
    full = f"{prefix}.{name}"
    fields: list[dict[str, object]] = []
    for number, value in _fields(body):
        if number == 2:
            field: dict[str, object] = {}
            for n, v in _fields(value):  # type: ignore[arg-type]
                if n == 1:
                    field["name"] = bytes(v).decode()
                elif n == 4:
                    field["repeated"] = v == _REPEATED
                elif n == 5:
                    field["type"] = _TYPES[v]  # type: ignore[index]
                elif n == 6:
                    field["type_name"] = bytes(v).decode()
            fields.append(field)
        elif number == 3:
            _message(value, full, messages, enums)  # type: ignore[arg-type]
        elif number == 4:
            _enum(value, full, enums)  # type: ignore[arg-type]
    messages[full] = fields


_PROBE = "import jax; jax.jit(lambda x: x + 1.0)(1.0)"


def _xla_flags_stderr(flags: list[str]) -> str:
    """What JAX prints when its backend starts with these XLA_FLAGS."""
    env = dict(os.environ, XLA_FLAGS=" ".join(flags), JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=300).stderr


def _unknown_flags(stderr: str) -> set[str]:
    found = re.search(r"Unknown flags? in XLA_FLAGS: (.*)", stderr)
    return {t[2:].partition("=")[0] for t in found.group(1).split()} if found else set()


def _flag_text(name: str, kind: str, enum_values: list[str]) -> str:
    value = {"bool": "false", "int32": "1", "int64": "1", "float": "0.5"}.get(kind, "")
    return f"--{name}={enum_values[0] if kind == 'enum' and enum_values else value}"


def measure_flags(options: dict[str, tuple[str, bool, str | None]],
                  enums: dict[str, list[str]]) -> tuple[list[str], dict[str, str]]:
    """XLA's flags are not exactly the DebugOptions fields. The fields that
    are no flag: XLA names them all in one "Unknown flags" message when every
    other value parses, so the fields of the types whose values always parse
    are probed together, string and enum fields (read by per-flag parsers)
    one at a time. Flags that are no field: the usage text XLA prints for a
    value it cannot read lists some with their types (it is cut short by the
    log's length limit); the library's other ``xla_`` words are probed."""
    not_flags: set[str] = set()
    for kind in ("bool", "int32", "int64", "float", "message"):
        group = [_flag_text(n, k, []) for n, (k, _, _) in options.items() if k == kind]
        not_flags |= _unknown_flags(_xla_flags_stderr(group))
    for name, (kind, _, enum) in options.items():
        if kind in ("string", "enum"):
            text = _flag_text(name, kind, enums.get(f".{enum}", []) if enum else [])
            not_flags |= _unknown_flags(_xla_flags_stderr([text]))
    usage = _xla_flags_stderr(["--xla_cpu_enable_fast_math=not_a_bool"])
    listed = re.findall(r"^\t--([a-z0-9_]+)=[^\t]*\t([a-z0-9]+)\t", usage, re.M)
    flag_only = {n: k for n, k in listed if n not in options}
    flag_only.update(_unlisted_flags(set(options) | set(flag_only)))
    return sorted(not_flags), dict(sorted(flag_only.items()))


def _unlisted_flags(known: set[str]) -> dict[str, str]:
    """Flags the usage text leaves out: every ``xla_...`` word in the library that is no
    known name is a candidate; one run names the candidates that are no flag, and each
    remaining flag's type is the narrowest of bool, int32, float and string whose probe
    value parses."""
    words = set(re.findall(rb"(?<![a-z0-9_])(xla_[a-z0-9_]+)\x00", LIB.read_bytes()))
    candidates = sorted(w.decode() for w in words if w.decode() not in known)
    unknown = _unknown_flags(_xla_flags_stderr([f"--{n}" for n in candidates]))
    kinds: dict[str, str] = {}
    for name in candidates:
        if name in unknown:
            continue
        for kind, probe in (("string", "not_a_number"), ("float", "0.5"), ("int32", "3")):
            if "Couldn't interpret" not in _xla_flags_stderr([f"--{name}={probe}"]):
                kinds[name] = kind
                break
        else:
            kinds[name] = "bool"
    return kinds


def _parse_fails(flags: list[str]) -> bool:
    return "Flag parsing failed" in _xla_flags_stderr(flags)


def measure_enum_flags(options: dict[str, tuple[str, bool, str | None]],
                       enums: dict[str, tuple[str, ...]] | dict[str, list[str]]
                       ) -> dict[str, tuple[str, ...]]:
    """The spellings each single-valued enum flag's own parser reads, measured: the
    value names as written, in lower case, the value numbers (a kind is kept when the
    first two values parse in it). Flags that read none of these are left out."""
    out: dict[str, tuple[str, ...]] = {}
    for name, (kind, repeated, enum) in options.items():
        if kind != "enum" or repeated or enum is None or name in NOT_FLAGS_MEASURED:
            continue
        values = list(enums[enum])
        kinds = []
        for spelling, texts in (("name", values), ("lower", [v.lower() for v in values]),
                                ("number", [str(k) for k in range(len(values))])):
            if not any(_parse_fails([f"--{name}={t}"]) for t in texts[:2]):
                kinds.append(spelling)
        if kinds:  # a flag none of these spellings parses reads some other one
            out[name] = tuple(kinds)
    return out


NOT_FLAGS_MEASURED: frozenset[str] = frozenset()


def main() -> None:
    data = LIB.read_bytes()
    messages: dict[str, list[dict[str, object]]] = {}
    enums: dict[str, list[str]] = {}
    for proto, package in (("xla/xla.proto", ".xla"),
                           ("xla/backends/autotuner/backends.proto", ".xla.autotuner")):
        for number, value in _file_descriptor(data, proto):
            if number == 4:
                _message(value, package, messages, enums)  # type: ignore[arg-type]
            elif number == 5:
                _enum(value, package, enums)  # type: ignore[arg-type]
    options: dict[str, tuple[str, bool, str | None]] = {}
    used: dict[str, list[str]] = {}
    for f in sorted(messages[".xla.DebugOptions"], key=lambda f: str(f["name"])):
        enum = str(f["type_name"]) if f["type"] == "enum" else None
        if enum is not None:
            used[enum.lstrip(".")] = enums[enum]
        options[str(f["name"])] = (str(f["type"]), bool(f.get("repeated", False)),
                                   None if enum is None else enum.lstrip("."))
    import jax  # for the version stamp only
    lines = ['"""XLA\'s DebugOptions fields, the names ``compiler_options`` accepts.', "",
             "Generated by scripts/gen_xla_debug_options.py from the descriptor of",
             f"xla/xla.proto carried by jaxlib {jax.__version__}; do not edit by hand.",
             "Each option: (field type, repeated, enum type or None).", '"""', "",
             "OPTIONS: dict[str, tuple[str, bool, str | None]] = {"]
    lines += [f"    {name!r}:\n        {value!r}," for name, value in options.items()]
    lines += ["}", "", "ENUMS: dict[str, tuple[str, ...]] = {"]
    for name, values in sorted(used.items()):
        lines.append(f"    {name!r}: (")
        lines += [f"        {v!r}," for v in values]
        lines.append("    ),")
    lines.append("}")
    not_flags, flag_only = measure_flags(options, enums)
    global NOT_FLAGS_MEASURED
    NOT_FLAGS_MEASURED = frozenset(not_flags)
    spellings = measure_enum_flags(options, used)
    lines += ["", "# DebugOptions fields that are no XLA_FLAGS flag.",
              "NOT_FLAGS: frozenset[str] = frozenset({"]
    lines += [f"    {n!r}," for n in not_flags]
    lines += ["})", "", "# XLA_FLAGS flags that are no DebugOptions field, with their types.",
              "FLAG_ONLY: dict[str, str] = {"]
    lines += [f"    {n!r}: {k!r}," for n, k in flag_only.items()]
    lines.append("}")
    lines += ["", "# How single-valued enum flags' XLA_FLAGS parsers read a value: the value",
              "# names as written ('name'), in lower case ('lower'), the value numbers",
              "# ('number'). Enum flags not listed read spellings of their own.",
              "ENUM_FLAG_SPELLINGS: dict[str, tuple[str, ...]] = {"]
    lines += [f"    {n!r}: {k!r}," for n, k in spellings.items()]
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
