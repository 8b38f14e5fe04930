"""Write spec/_src/surface_names.py: the public names of JAX's public modules, from real JAX.

Run with the venv that has JAX installed: ``python scripts/gen_jax_surface.py``.
tests/surface/test_surface.py checks the written file against the installed JAX.
"""

from __future__ import annotations

import importlib
import pathlib

PUBLIC_MODULES = (
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.lax.linalg",
    "jax.nn", "jax.nn.initializers", "jax.random", "jax.tree_util", "jax.tree", "jax.dtypes",
    "jax.scipy.special", "jax.scipy.linalg", "jax.scipy.stats", "jax.scipy.signal",
    "jax.scipy.fft", "jax.scipy.integrate", "jax.scipy.ndimage", "jax.scipy.optimize",
    "jax.scipy.cluster", "jax.scipy.cluster.vq", "jax.scipy.interpolate", "jax.scipy.sparse",
    "jax.scipy.sparse.linalg", "jax.scipy.spatial.transform",
    "jax.typing", "jax.flatten_util", "jax.profiler", "jax.custom_derivatives", "jax.sharding",
    "jax.debug", "jax.ad_checkpoint", "jax.errors", "jax.stages", "jax.ffi",
    "jax.example_libraries.optimizers", "jax.example_libraries.stax",
)

TARGET = pathlib.Path(__file__).resolve().parents[1] / "spec" / "_src" / "surface_names.py"


def public_names(module_name: str) -> tuple[str, ...]:
    module = importlib.import_module(module_name)
    return tuple(sorted(name for name in dir(module) if not name.startswith("_")))


def render() -> str:
    lines = [
        '"""Public names of JAX 0.12\'s public modules (written by scripts/gen_jax_surface.py)."""',
        "",
        "JAX_PUBLIC_NAMES: dict[str, tuple[str, ...]] = {",
    ]
    for module_name in PUBLIC_MODULES:
        lines.append(f"    {module_name!r}: (")
        lines.extend(f"        {name!r}," for name in public_names(module_name))
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET}")
