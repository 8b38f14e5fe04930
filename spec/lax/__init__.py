"""``spec.lax``: thin wrappers that bind primitives, with JAX's signatures.

Each family lives in its own module; this package re-exports them all.
"""

from spec.lax._elementwise import *  # noqa: F403
from spec.lax._special import *  # noqa: F403
from spec.lax._structural import *  # noqa: F403
from spec.lax._indexing import *  # noqa: F403
from spec.lax._reductions import *  # noqa: F403
from spec.lax._dot import *  # noqa: F403
from spec.lax._conv import *  # noqa: F403
from spec.lax._ad import *  # noqa: F403
from spec.lax._collectives import *  # noqa: F403
from spec.lax._scan import *  # noqa: F403
from spec.lax._control_flow import *  # noqa: F403


def _export_primitives() -> None:
    """Every declared primitive as ``lax.<name>_p`` (``scatter-add`` is
    ``scatter_add_p``), as JAX's lax module exposes them."""
    from spec.rules import REGISTRY
    for _name, _prim in REGISTRY.items():
        globals()[_name.replace("-", "_") + "_p"] = _prim


_export_primitives()
from spec.sharding import with_sharding_constraint  # noqa: E402,F401
from spec.rules.reshard import reshard_p, sharding_constraint_p  # noqa: E402,F401
