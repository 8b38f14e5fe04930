"""spec: an executable reference specification of JAX.

``import spec as jax; import spec.numpy as jnp`` runs JAX programs on a
typed, pure-Python evaluator whose every primitive carries explicit rules.
"""

from __future__ import annotations

# Public modules (thin facades over spec._src) and the names JAX exports at its top level.
from spec import config as _config_facade  # noqa: F401
from spec._src.core import config as _config_module
from spec import errors, rules, tree_util
from spec._src.api import array_methods as _array_methods  # noqa: F401  (installs operators)
from spec._src.api.jit import jit, make_jaxpr, typeof, eval_shape
from spec._src.api.jit import _CACHES as _JIT_CACHES
from spec._src.api.vmap import vmap
from spec._src.api.autodiff import (fwd_and_bwd, grad, hessian, jacfwd, jacobian, jacrev, jvp,
                                    linear_transpose, linearize, value_and_grad, vjp)
from spec._src.backends.devices import (Device, device_count, devices, local_device_count,
                                        local_devices, process_count, process_index, device_put,
                                        host_count, host_id, host_ids, process_indices,
                                        device_get, make_array_from_callback,
                                        make_array_from_single_device_arrays,
                                        make_array_from_process_local_data)
from spec._src.core.basearray import Array
from spec._src.core.config import config
from spec._src.api.stages import ShapeDtypeStruct
from spec._src.core.compiler_options import CompilerEffortLevel
from spec import lax, numpy, tree, dtypes, test_util, ad_checkpoint
from spec import nn as nn
from spec import scipy as scipy
from spec._src.api.checkpoint import checkpoint, checkpoint_policies, remat
from spec import custom_derivatives, debug, experimental, sharding
from spec._src.backends.multihost_utils import live_devices
from spec._src.api.sharding import get_mesh, make_mesh, set_mesh
from spec._src.core.sharding import get_abstract_mesh, use_abstract_mesh
from spec._src.core.sharding import NamedSharding, P
from spec._src.lax.reshard import reshard
from spec._src.core.ledger import collectives_log
from spec._src.api.shard_map import shard_map
from spec._src.api.smap import smap
from spec._src.api.pmap import pmap
from spec._src.api.custom_derivatives import custom_jvp, custom_vjp
from spec._src.api.custom_gradient import closure_convert, custom_gradient
from spec._src.api.callbacks import effects_barrier, pure_callback
from spec import random as random
from spec import ref as ref
from spec import ad as ad
from spec import ffi as ffi
from spec import stages as stages
from spec import export as export
from spec import typing as typing
from spec._src.jax_alias import install_as_jax
from spec._src.api.ref import Ref, empty_ref, free_ref, freeze, new_ref
from spec._src.lax.state import discharge_state
from spec._src.core.state_types import ds
from spec._src.core.source_info import named_call, named_scope
from spec._src.core.interpreter import ensure_compile_time_eval
from spec._src.api.jaxpr_parser import parse_jaxpr
from spec._src.core.types import MemorySpace as _MemorySpace
from types import SimpleNamespace as _SimpleNamespace
import enum as _enum
import functools as _functools
import gc as _gc
from spec import profiler as profiler
from spec import core as core
from spec import distributed as distributed
from spec import dlpack as dlpack
from spec import lib as lib
from spec import monitoring as monitoring
from spec import ops as ops
from spec import custom_batching as custom_batching
from spec import image as image
from spec._src.core.array import Shard as Shard

from spec import version as version
from spec import api_util as api_util
from spec import interpreters as interpreters
from spec import extend as extend
from spec._src.backends.environment import print_environment_info as print_environment_info

__version__ = version.__version__
__version_info__ = version.__version_info__

enable_x64 = _config_module.enable_x64
make_user_context = _config_module.make_user_context
enable_checks = _config_module.enable_checks
disable_jit = _config_module.disable_jit
debug_nans = _config_module.debug_nans
debug_infs = _config_module.debug_infs
threefry_partitionable = _config_module.threefry_partitionable
explain_cache_misses = _config_module.explain_cache_misses
numpy_dtype_promotion = _config_module.numpy_dtype_promotion
numpy_rank_promotion = _config_module.numpy_rank_promotion
default_matmul_precision = _config_module.default_matmul_precision
default_device = _config_module.default_device
float0 = dtypes.float0
# ``jax.memory.Space``: the memory spaces a value's type can name.
memory = _SimpleNamespace(Space=_MemorySpace)


def default_backend() -> str:
    """spec's devices are CPU devices (the virtual backend, or MPI ranks)."""
    return "cpu"


def clear_caches() -> None:
    """Drop every jit cache (traced jaxprs are re-traced on next call)."""
    _JIT_CACHES.clear()


def block_until_ready(x: object) -> object:
    return x


def copy_to_host_async(x: object) -> object:
    """``x`` unchanged: spec's arrays live in host memory already."""
    return x


def live_arrays(platform: str | None = None) -> list[Array]:
    """The arrays that are alive now (spec's backend is cpu)."""
    if platform not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend {platform}: spec's only backend is cpu")
    return [o for o in _gc.get_objects() if isinstance(o, Array)]


class Inline(_enum.Enum):
    """When a jit call's body is inlined into its caller (a compiler hint)."""

    JAX_EARLY = "jax_early"
    JAX_LATE = "jax_late"
    XLA_EARLY = "xla_early"
    XLA_LATE = "xla_late"
    AUTO = "auto"


globals().update(_config_module.accepted_flag_contexts())
checking_leaks = _functools.partial(_config_module.FlagContext("jax_check_tracer_leaks"), True)
transfer_guard = _config_module.transfer_guard


__all__ = [
    "Ref", "discharge_state", "ds", "empty_ref", "free_ref", "freeze", "new_ref", "ref",
    "export", "stages",
    "Array", "CompilerEffortLevel", "Device", "ShapeDtypeStruct", "block_until_ready",
    "clear_caches", "config",
    "debug_infs", "debug_nans", "default_backend", "default_device", "default_matmul_precision",
    "device_count",
    "disable_jit", "effects_barrier", "explain_cache_misses", "pure_callback",
    "enable_checks", "enable_x64", "ensure_compile_time_eval", "float0", "named_call",
    "named_scope", "numpy_dtype_promotion", "numpy_rank_promotion",
    "NamedSharding", "P", "collectives_log", "get_mesh", "make_mesh", "reshard", "set_mesh",
    "debug", "shard_map", "sharding",
    "ad_checkpoint", "checkpoint", "checkpoint_policies", "closure_convert",
    "custom_derivatives", "custom_gradient", "custom_jvp",
    "custom_vjp", "remat",
    "fwd_and_bwd", "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jvp", "linear_transpose",
    "linearize",
    "value_and_grad", "vjp", "vmap",
    "device_get", "device_put", "devices", "make_array_from_callback",
    "make_array_from_process_local_data", "make_array_from_single_device_arrays",
    "experimental", "dtypes", "errors", "eval_shape", "jit", "lax",
    "live_devices", "local_device_count", "local_devices", "make_jaxpr", "numpy", "process_count",
    "process_index", "process_indices", "host_count", "host_id", "host_ids",
    "threefry_partitionable", "get_abstract_mesh", "use_abstract_mesh", "rules", "test_util",
    "tree", "tree_util", "typeof", "ad", "ffi",
    "install_as_jax", "parse_jaxpr", "typing", "memory",
    "Inline", "Shard", "checking_leaks", "copy_to_host_async", "live_arrays", "profiler",
    "pmap", "transfer_guard", "core", "distributed", "dlpack", "image", "lib", "monitoring",
    "ops", "smap", "make_user_context", "custom_batching",
    *_config_module.accepted_flag_contexts(),
]
