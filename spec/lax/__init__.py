"""``spec.lax``: thin wrappers that bind primitives, with JAX's signatures.

Each family lives in its own module; this package re-exports them all.
"""

from spec.lax._elementwise import *  # noqa: F403
from spec.lax._structural import *  # noqa: F403
from spec.lax._indexing import *  # noqa: F403
from spec.lax._reductions import *  # noqa: F403
from spec.lax._dot import *  # noqa: F403
