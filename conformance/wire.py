"""Normalised case results as files, for implementations running in another interpreter.

A result (a ``compare.Norm`` tree) is written as one ``.npz`` file: the entry ``tree`` holds the
tree as JSON, with every array replaced by ``{"array": k}``; entry ``a<k>`` holds array ``k``'s
raw bytes. Arrays travel as bytes plus a dtype *name* rather than as NumPy's own ``.npy`` dtype
description, so ml_dtypes types (bfloat16, float8_*, int4) survive between interpreters whose
NumPy or ml_dtypes versions differ. No pickle anywhere: a result file from a crashed or hostile
worker can make decoding fail, never run code.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from conformance.compare import (
    ArrayLeaf,
    ContractionLeaf,
    DtypeLeaf,
    Node,
    Norm,
    OtherLeaf,
    Raised,
    ScalarLeaf,
)

Json = Any


def dtype_named(name: str) -> np.dtype[Any]:
    """The NumPy dtype called ``name``, looking in ml_dtypes for the ones NumPy lacks."""
    extra: Any = getattr(ml_dtypes, name, None)
    dtype: np.dtype[Any] = np.dtype(name if extra is None else extra)
    return dtype


class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray[Any, Any]] = []

    def array(self, a: np.ndarray[Any, Any]) -> Json:
        self.arrays.append(np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8))
        return {"array": len(self.arrays) - 1, "dtype": a.dtype.name, "shape": list(a.shape)}

    def encode(self, n: Norm) -> Json:
        if n is None or isinstance(n, str):
            return n
        if isinstance(n, Node):
            return {"node": n.kind, "keys": list(n.keys),
                    "children": [self.encode(c) for c in n.children]}
        if isinstance(n, ArrayLeaf):
            return {"leaf": "array", "value": self.array(n.value), "dtype": n.dtype,
                    "shape": list(n.shape), "weak_type": n.weak_type}
        if isinstance(n, ContractionLeaf):
            return {"leaf": "contraction", "array": self.encode(n.array),
                    "magnitude": self.array(n.magnitude), "depth": n.depth}
        if isinstance(n, ScalarLeaf):
            return {"leaf": "scalar", "type_name": n.type_name, "text": n.text}
        if isinstance(n, DtypeLeaf):
            return {"leaf": "dtype", "name": n.name}
        if isinstance(n, OtherLeaf):
            return {"leaf": "other", "type_name": n.type_name, "text": n.text}
        return {"leaf": "raised", "name": n.name, "qualname": n.qualname,
                "class_names": list(n.class_names), "message": n.message}


def _decode_array(ref: Json, arrays: Any) -> np.ndarray[Any, Any]:
    raw = arrays[f"a{int(ref['array'])}"]
    dtype = dtype_named(str(ref["dtype"]))
    return np.frombuffer(raw.tobytes(), dtype).reshape(tuple(ref["shape"]))


def _decode(j: Json, arrays: Any) -> Norm:
    if j is None or isinstance(j, str):
        return j
    if "node" in j:
        return Node(str(j["node"]), tuple(j["keys"]),
                    tuple(_decode(c, arrays) for c in j["children"]))
    leaf = j["leaf"]
    if leaf == "array":
        weak = j["weak_type"]
        return ArrayLeaf(_decode_array(j["value"], arrays), str(j["dtype"]),
                         tuple(int(d) for d in j["shape"]), None if weak is None else bool(weak))
    if leaf == "contraction":
        array = _decode(j["array"], arrays)
        if not isinstance(array, ArrayLeaf):
            raise ValueError("a contraction leaf must hold an array")
        return ContractionLeaf(array, _decode_array(j["magnitude"], arrays), int(j["depth"]))
    if leaf == "scalar":
        return ScalarLeaf(str(j["type_name"]), str(j["text"]))
    if leaf == "dtype":
        return DtypeLeaf(str(j["name"]))
    if leaf == "other":
        return OtherLeaf(str(j["type_name"]), str(j["text"]))
    if leaf == "raised":
        return Raised(str(j["name"]), str(j["qualname"]),
                      tuple(str(c) for c in j["class_names"]), str(j["message"]))
    raise ValueError(f"unknown result leaf kind {leaf!r}")


def dumps(value: Norm, extra: dict[str, Json] | None = None) -> bytes:
    """``value`` (and JSON-able ``extra`` fields, e.g. the run time) as ``.npz`` bytes."""
    enc = _Encoder()
    doc = {"value": enc.encode(value), **(extra or {})}
    entries: dict[str, Any] = {f"a{k}": a for k, a in enumerate(enc.arrays)}
    entries["tree"] = np.frombuffer(json.dumps(doc).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **entries)
    return buf.getvalue()


def loads(data: bytes) -> tuple[Norm, dict[str, Json]]:
    """Inverse of ``dumps``: the value and the extra fields."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        doc = json.loads(arrays["tree"].tobytes().decode())
        value = _decode(doc.pop("value"), arrays)
    return value, doc


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` so that a reader never sees a partial file (the writer may be killed)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def digest(value: Norm) -> str:
    """A short fingerprint of a result: equal results (bit for bit) have equal digests."""
    enc = _Encoder()
    tree = json.dumps(enc.encode(value), sort_keys=True).encode()
    h = hashlib.sha256(tree)
    for a in enc.arrays:
        h.update(a.tobytes())
    return h.hexdigest()[:16]
