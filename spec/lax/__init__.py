"""``spec.lax``: thin wrappers that bind primitives, with JAX's signatures.

Each family lives in its own module; this package re-exports them all.
"""

from spec.rules import REGISTRY as _REGISTRY  # every family declared
from spec._src.lax.elementwise import *  # noqa: F403
# Named for type checkers too: the reducers lax.reduce_window recognises.
from spec._src.lax.elementwise import add as add, max as max, min as min
from spec._src.lax.integer_ops import mulhi as mulhi
from spec._src.lax.special import *  # noqa: F403
from spec._src.lax.special_functions import *  # noqa: F403
from spec._src.lax.fft import *  # noqa: F403
from spec._src.numpy.fft import lax_fft as fft  # noqa: F401
from spec._src.lax.shaping import *  # noqa: F403
from spec._src.lax.slicing import *  # noqa: F403
from spec._src.lax.indexing import *  # noqa: F403
from spec._src.lax.reductions import *  # noqa: F403
from spec._src.lax.reduce import reduce as reduce
from spec._src.lax.dot import *  # noqa: F403
from spec._src.lax.conv import *  # noqa: F403
from spec._src.lax.windows import *  # noqa: F403
from spec._src.lax.prng import rng_bit_generator as rng_bit_generator
from spec._src.lax.prng import rng_uniform as rng_uniform
from spec._src.lax.composed import *  # noqa: F403
from spec._src.lax.scaled_dot import scaled_dot as scaled_dot
from spec._src.lax.ann import approx_max_k as approx_max_k, approx_min_k as approx_min_k
from spec._src.lax.barrier import optimization_barrier as optimization_barrier
from spec._src.lax.barrier import dce_sink as dce_sink
from spec._src.lax.tokens import after_all as after_all, after_all_p as after_all_p
from spec._src.lax.tokens import create_token as create_token
from spec._src.lax.tokens import create_token_p as create_token_p
from spec._src.lax.ad_prims import stop_gradient as stop_gradient
from spec._src.lax.ad_prims import stage as stage
from spec._src.lax.custom import composite as composite
from spec._src.lax.collectives import *  # noqa: F403
from spec._src.lax.loops import *  # noqa: F403
from spec._src.api.lax_map import map as map
from spec._src.api.lax_index import dynamic_index_in_dim as dynamic_index_in_dim
from spec._src.api.lax_index import dynamic_update_index_in_dim as dynamic_update_index_in_dim
from spec._src.lax.control_flow import *  # noqa: F403
from spec._src.lax.linear_solve import custom_linear_solve as custom_linear_solve
from spec._src.lax.linear_solve import linear_solve_p as linear_solve_p
from spec._src.api.custom_root import custom_root as custom_root


def _export_primitives() -> None:
    """Every declared primitive as ``lax.<name>_p`` (``scatter-add`` is
    ``scatter_add_p``), as JAX's lax module exposes them."""
    for _name, _prim in _REGISTRY.items():
        globals()[_name.replace("-", "_") + "_p"] = _prim


_export_primitives()
from spec._src.lax.reshard import with_sharding_constraint  # noqa: E402,F401
from spec.lax import linalg as linalg  # noqa: E402
from spec._src.lax.reshard import reshard_p, sharding_constraint_p  # noqa: E402,F401
