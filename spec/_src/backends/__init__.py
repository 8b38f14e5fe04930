"""The backends, registered with core when this package is imported: MPI
ranks as devices under ``mpiexec`` (spec._src.backends.mpi), else the virtual
devices of this process (spec._src.backends.devices)."""

from spec._src.backends.devices import VirtualBackend
from spec._src.backends.mpi import MPIBackend, active
from spec._src.core.backend import Backend, set_backend_chooser


def _choose() -> Backend:
    return MPIBackend() if active() else VirtualBackend()


set_backend_chooser(_choose)
