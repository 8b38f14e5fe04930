"""``spec.numpy``: the NumPy-like API, built on ``spec.lax``."""

from spec.numpy._dtypes import *  # noqa: F403
from spec.numpy._creation import *  # noqa: F403
from spec.numpy._math import *  # noqa: F403
from spec.numpy._reductions import *  # noqa: F403
from spec.numpy._shape import *  # noqa: F403
from spec.numpy._linalg import *  # noqa: F403
from spec.numpy._indexing import *  # noqa: F403
from spec.numpy._more import *  # noqa: F403
from spec.basearray import Array as ndarray  # noqa: F401
