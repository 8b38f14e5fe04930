"""An import hook that lets code written against ``jax`` run on spec unchanged.

Once installed, ``import jax`` and ``import jax.X`` (at any depth, at any later time) bind the
names to spec's own modules ``spec`` and ``spec.X``; real JAX is never searched for.  A
``jax.X`` that spec lacks fails with ModuleNotFoundError naming ``jax.X``, so a missing piece
of the surface shows up as exactly that rather than as a silent fall-back to real JAX.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence

ALIASED_ROOT = "jax"
SPEC_ROOT = "spec"


def spec_name_for(jax_name: str) -> str | None:
    """The spec module standing in for ``jax_name``, or None when the name is not under jax."""
    if jax_name == ALIASED_ROOT:
        return SPEC_ROOT
    if jax_name.startswith(ALIASED_ROOT + "."):
        return SPEC_ROOT + jax_name[len(ALIASED_ROOT):]
    return None


class _SpecModuleLoader(importlib.abc.Loader):
    """Hands out the already-importable spec module instead of creating a new one."""

    def __init__(self, spec_name: str) -> None:
        self._spec_name = spec_name
        self._own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self._spec_name)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system stamps the ``jax.X`` spec onto the module; put spec's own back so
        # reloads and relative imports inside spec keep resolving against ``spec.X``.
        module.__spec__ = self._own_spec


class JaxToSpecFinder(importlib.abc.MetaPathFinder):
    """Resolves every ``jax`` / ``jax.*`` import to the matching ``spec`` module."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec_name = spec_name_for(fullname)
        if spec_name is None:
            return None
        if importlib.util.find_spec(spec_name) is None:
            raise ModuleNotFoundError(
                f"No module named '{fullname}': spec has no module {spec_name!r} standing in "
                f"for it", name=fullname)
        is_package = spec_name == SPEC_ROOT or _is_package(spec_name)
        return importlib.machinery.ModuleSpec(
            fullname, _SpecModuleLoader(spec_name), is_package=is_package)


def _is_package(spec_name: str) -> bool:
    found = importlib.util.find_spec(spec_name)
    return found is not None and found.submodule_search_locations is not None


def install_as_jax() -> None:
    """Make ``import jax`` (and every ``jax.X``) import spec from now on in this process.

    Raises RuntimeError when real JAX was already imported: its modules would keep answering
    for names bound before the hook, and mixing the two is never what a caller wants.
    """
    already = sys.modules.get(ALIASED_ROOT)
    if already is not None and getattr(already, "__name__", None) != SPEC_ROOT:
        raise RuntimeError(
            "install_as_jax() called after real JAX was imported "
            f"(sys.modules['jax'] is {already!r}); call it before any 'import jax'")
    if not any(isinstance(finder, JaxToSpecFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, JaxToSpecFinder())
