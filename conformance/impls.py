"""Loading implementations under test.

Names understood by ``load``:

* ``jax``  - real JAX (``jax``, ``jax.numpy``, ``jax.lax``), forced onto the CPU backend;
* ``spec`` - the reference spec (``spec``, ``spec.numpy``, ``spec.lax``);
* ``pkg``  - any package whose namespace provides ``numpy`` and ``lax`` submodules;
* ``module:attr`` - a plug-in: ``attr`` is an ``Impl``, a zero-argument callable returning one,
  or a JAX-like namespace object with ``numpy`` and ``lax`` attributes.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import traceback
from pathlib import Path
from typing import Any

# Persistent XLA compilation cache for the JAX oracle. Compiling each small eager op dominates
# the reference's run time (~10-40 ms per distinct op/dtype/shape); the cache makes reruns several
# times faster. Override the location with CONFORMANCE_JAX_CACHE; set it empty to disable.
DEFAULT_JAX_CACHE = Path(__file__).resolve().parent / ".jax_cache"


@dataclasses.dataclass(frozen=True)
class Impl:
    name: str
    jax: Any
    jnp: Any
    lax: Any

    @property
    def config(self) -> Any:
        return self.jax.config

    @property
    def slug(self) -> str:
        """File-name friendly name, used for ``xfail/<slug>.toml``."""
        return re.sub(r"[^A-Za-z0-9_-]+", "_", self.name)


class ImplUnavailable(Exception):
    """The implementation could not be imported; ``detail`` holds the traceback."""

    def __init__(self, name: str, reason: str, detail: str = "") -> None:
        super().__init__(f"implementation {name!r} unavailable: {reason}")
        self.name = name
        self.reason = reason
        self.detail = detail


def _import_triple(name: str, root: str) -> Impl:
    jax = importlib.import_module(root)
    jnp = importlib.import_module(f"{root}.numpy")
    lax = importlib.import_module(f"{root}.lax")
    return Impl(name, jax, jnp, lax)


def _load_jax() -> Impl:
    # The oracle must be CPU: bit patterns differ across backends, and a shared GPU must not be
    # claimed by a test run. Only effective before jax is first imported.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    impl = _import_triple("jax", "jax")
    config = impl.jax.config
    try:
        if not config.jax_platforms:
            config.update("jax_platforms", "cpu")
    except Exception:  # noqa: BLE001 - backend already initialised; keep whatever it is
        pass
    cache = os.environ.get("CONFORMANCE_JAX_CACHE", str(DEFAULT_JAX_CACHE))
    try:
        if cache and not config.jax_compilation_cache_dir:
            config.update("jax_compilation_cache_dir", cache)
            # Cache every program: ours are all tiny and fast to compile individually.
            config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    except Exception:  # noqa: BLE001 - the cache is only an optimisation
        pass
    return impl


def _load_plugin(name: str) -> Impl:
    module_name, _, attr = name.partition(":")
    obj: Any = getattr(importlib.import_module(module_name), attr)
    if isinstance(obj, Impl):
        return dataclasses.replace(obj, name=name)
    if hasattr(obj, "numpy") and hasattr(obj, "lax"):
        return Impl(name, obj, obj.numpy, obj.lax)
    if callable(obj):
        made = obj()
        if isinstance(made, Impl):
            return dataclasses.replace(made, name=name)
        raise TypeError(f"plug-in {name!r} returned {type(made).__name__}, not an Impl")
    raise TypeError(f"plug-in {name!r} is neither an Impl, a factory, nor a jax-like namespace")


def load(name: str) -> Impl:
    """Import implementation ``name``; raises ImplUnavailable with the reason on any failure."""
    try:
        if name == "jax":
            return _load_jax()
        if ":" in name:
            return _load_plugin(name)
        return _import_triple(name, name)
    except Exception as e:  # noqa: BLE001 - any import-time failure means "unavailable"
        raise ImplUnavailable(
            name, f"{type(e).__name__}: {e}", traceback.format_exc()
        ) from e
