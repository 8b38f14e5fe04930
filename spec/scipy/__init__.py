"""``spec.scipy``: JAX's ``jax.scipy`` (``linalg``, ``special``, ``stats``, ``signal``, ``fft``,
``integrate``, ``ndimage``, ``optimize``)."""

from spec.scipy import linalg as linalg
from spec.scipy import special as special
from spec.scipy import stats as stats
from spec.scipy import signal as signal
from spec.scipy import fft as fft
from spec.scipy import integrate as integrate
from spec.scipy import ndimage as ndimage
from spec.scipy import optimize as optimize
from spec.scipy import interpolate as interpolate
from spec.scipy import spatial as spatial
from spec.scipy import sparse as sparse
from spec.scipy import cluster as cluster
