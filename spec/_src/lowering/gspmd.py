"""The module JAX 0.12 writes with ``jax_use_shardy_partitioner`` off
(GSPMD): the Shardy module with its meshes dropped, every ``sdy.sharding``
attribute an ``mhlo.sharding`` string, and every ``sdy.sharding_constraint``
a ``Sharding`` custom call (SPEC.md 6.1.4)."""

from __future__ import annotations

import re

from spec._src.lowering.hlo_text import hlo_sharding, parse_meshes

_TENSOR_SHARDING = r'<@[\w.$-]+, \[[^\]]*\](?:, unreduced=\{[^}]*\})?>'
_MESH_LINE = re.compile(r"^\s*sdy\.mesh @.*\n", re.M)
_ATTRIBUTE = re.compile(r"sdy\.sharding = #sdy\.sharding(" + _TENSOR_SHARDING + ")")
_CONSTRAINT = re.compile(r"sdy\.sharding_constraint (%[\w#]+) (" + _TENSOR_SHARDING
                         + r") : (tensor<[^>]*>)")


def gspmd_text(module_text: str) -> str:
    """``module_text`` (spec's Shardy module) as the GSPMD module JAX writes
    for the same program; a Shardy op with no GSPMD form here (a shard_map's
    ``sdy.manual_computation``) is ``NotImplementedError``."""
    meshes = parse_meshes(module_text)
    text = _MESH_LINE.sub("", module_text)
    text = _ATTRIBUTE.sub(lambda m: f'mhlo.sharding = "{hlo_sharding(m.group(1), meshes)}"',
                          text)
    text = _CONSTRAINT.sub(lambda m: _sharding_call(m.group(1), m.group(2), m.group(3), meshes),
                           text)
    left = re.search(r"\bsdy\.[\w_]+", text)
    if left is not None:
        raise NotImplementedError(f"lowering {left.group(0)} with jax_use_shardy_partitioner="
                                  "False is not specified")
    return text


def _sharding_call(operand: str, sharding: str, tensor: str, meshes: dict[str, str]) -> str:
    """``stablehlo.custom_call @Sharding``: the sharding as an HLO string;
    the dimensions left open (``{?}``) listed in ``backend_config`` as
    ``unspecified_dims=[...]``."""
    dims = re.findall(r"\{[^}]*\}", sharding.split("[", 1)[1].rsplit("]", 1)[0])
    open_dims = [k for k, d in enumerate(dims) if "?" in d]
    config = f"unspecified_dims=[{','.join(map(str, open_dims))}]" if open_dims else ""
    return (f'stablehlo.custom_call @Sharding({operand}) {{backend_config = "{config}", '
            f'mhlo.sharding = "{hlo_sharding(sharding, meshes)}"}} : ({tensor}) -> {tensor}')
