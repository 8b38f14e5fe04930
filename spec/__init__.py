"""spec: an executable reference specification of JAX.

``import spec as jax; import spec.numpy as jnp`` runs JAX programs on a
typed, pure-Python evaluator whose every primitive carries explicit rules.
"""

from __future__ import annotations

from spec import config as _config_module
from spec import errors, rules, tree_util, types
from spec import _array_methods as _array_methods  # installs operators
from spec._api import jit, make_jaxpr, typeof, eval_shape
from spec._devices import Device, device_count, devices, local_device_count, local_devices, \
    process_count, process_index, device_put, device_get
from spec.array import Array
from spec.config import config
from spec.stages import ShapeDtypeStruct
from spec import lax, numpy, tree, dtypes

__version__ = "0.1.0"

enable_x64 = _config_module.enable_x64


def block_until_ready(x: object) -> object:
    return x


__all__ = [
    "Array", "Device", "ShapeDtypeStruct", "block_until_ready", "config", "device_count",
    "device_get", "device_put", "devices", "dtypes", "errors", "eval_shape", "jit", "lax",
    "local_device_count", "local_devices", "make_jaxpr", "numpy", "process_count",
    "process_index", "rules", "tree", "tree_util", "typeof", "types",
]
