"""NumPy's "Input and output" routines as ``jax.numpy`` has them: ``save``
and ``savez`` are NumPy's own, ``load`` reads ``.npy`` files back as arrays
(restoring ``bfloat16``, which NumPy writes as two raw bytes), ``from_dlpack``
imports a DLPack buffer; ``fromfile`` and ``fromiter`` are refused, as JAX
refuses them, because reading a file or consuming an iterator is not pure."""

from __future__ import annotations

import os
from typing import IO, Any

import ml_dtypes
import numpy as np

from spec._src.api.placement import device_put
from spec._src.core.array import Array
from spec._src.numpy import creation

save = np.save
savez = np.savez

_PURITY_DOCS = ("https://docs.jax.dev/en/latest/101/transformations.html"
                "#consequence-1-transformations-require-traceable-functions")


def load(file: IO[bytes] | str | os.PathLike[Any], *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``; an ``.npy`` array comes back as an Array, its raw
    two-byte records read as bfloat16. ``.npz`` contents and dtypes spec
    cannot hold stay NumPy's."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == np.dtype("V2"):
            out = out.view(ml_dtypes.bfloat16)
        try:
            return creation.asarray(out)
        except (TypeError, AssertionError):
            return out
    return out


def _impure(name: str, what: str) -> NotImplementedError:
    return NotImplementedError(
        f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for use "
        f"with JIT and other JAX transformations. Consider using jnp.asarray(np.{name}(...)) "
        f"instead, although care should be taken if np.{name} is used within a jax "
        f"transformations because of its potential side-effect of consuming the {what}; for "
        f"more information see {_PURITY_DOCS}")


def fromfile(*args: Any, **kwargs: Any) -> Any:
    raise _impure("fromfile", "file object")


def fromiter(*args: Any, **kwargs: Any) -> Any:
    raise _impure("fromiter", "iterable object")


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """An Array holding the buffer ``x`` exports through DLPack (``__dlpack__``
    and ``__dlpack_device__``); on ``device`` when one is given. spec's
    arrays own their data, so the buffer is always copied; ``copy=False``
    is accepted as JAX accepts it on a host buffer."""
    if isinstance(x, Array):
        out = creation.array(x)
    else:
        out = creation.asarray(np.array(np.from_dlpack(x), copy=True))
    return out if device is None else device_put(out, device)


__all__ = ["from_dlpack", "fromfile", "fromiter", "load", "save", "savez"]
