"""``spec.numpy``: the NumPy-like API, built on ``spec.lax``."""

from spec._src.numpy.constants import *  # noqa: F403
from spec._src.numpy.dtypes import *  # noqa: F403
from spec._src.numpy.creation import *  # noqa: F403
from spec._src.numpy.ranges import *  # noqa: F403
from spec._src.numpy.matrices import *  # noqa: F403
from spec._src.numpy.math import *  # noqa: F403
from spec._src.numpy.bitwise import *  # noqa: F403
from spec._src.numpy.logic import *  # noqa: F403
from spec._src.numpy.reductions import *  # noqa: F403
from spec._src.numpy.shape import *  # noqa: F403
from spec._src.numpy.tiling import *  # noqa: F403
from spec._src.numpy.padding import *  # noqa: F403
from spec._src.numpy.elements import *  # noqa: F403
from spec._src.numpy.linalg import *  # noqa: F403
from spec._src.numpy import linalg_solve as _linalg_solve  # noqa: F401  (jnp.linalg's LU part)
from spec._src.numpy.indexing import *  # noqa: F403
from spec._src.numpy.sorting import *  # noqa: F403
from spec._src.numpy.sets import *  # noqa: F403
from spec._src.numpy.statistics import *  # noqa: F403
from spec._src.numpy.polynomials import *  # noqa: F403
from spec._src.numpy.windows import *  # noqa: F403
from spec._src.numpy.printing import *  # noqa: F403
from spec._src.numpy.vectorize import *  # noqa: F403
from spec._src.numpy.ufunc_api import *  # noqa: F403
from spec._src.numpy.functional import *  # noqa: F403
from spec._src.numpy.io import *  # noqa: F403
from spec._src.core.basearray import Array as ndarray  # noqa: F401
from spec.numpy import fft as fft  # noqa: E402
