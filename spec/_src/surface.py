"""Which of JAX's public names each spec module lacks, against a recorded list of JAX's names."""

from __future__ import annotations

import importlib

from spec._src.jax_alias import spec_name_for
from spec._src.surface_names import JAX_PUBLIC_NAMES


def missing_names(jax_module: str) -> tuple[str, ...]:
    """JAX's public names in ``jax_module`` that the matching spec module does not define."""
    spec_module_name = spec_name_for(jax_module)
    assert spec_module_name is not None, jax_module
    try:
        module = importlib.import_module(spec_module_name)
    except ModuleNotFoundError:
        return JAX_PUBLIC_NAMES[jax_module]
    return tuple(name for name in JAX_PUBLIC_NAMES[jax_module] if not hasattr(module, name))


def report() -> str:
    """One block per JAX module: present/total counts, then the missing names."""
    blocks = []
    for jax_module, names in JAX_PUBLIC_NAMES.items():
        missing = missing_names(jax_module)
        header = f"{jax_module}: {len(names) - len(missing)}/{len(names)} present"
        blocks.append(header + ("\n  missing: " + " ".join(missing) if missing else ""))
    return "\n".join(blocks)
