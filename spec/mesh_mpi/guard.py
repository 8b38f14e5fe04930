"""``mpiexec -disable-auto-cleanup -n N python -m spec.mesh_mpi.guard
script.py ...``: run each rank as a child process of a small guard.

hydra keeps the surviving ranks running when a rank exits with an error
(with ``-disable-auto-cleanup``), but ends the whole job when a rank is
killed by a signal (SIGKILL included). The guard turns its child's death
by a signal into an ordinary failing exit (128 + the signal, as a shell
reports it), so that fault-tolerant programs (``live_devices``) can go on
without the dead rank. The child inherits the process-manager connection
and is the MPI process; the guard never initialises MPI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m spec.mesh_mpi.guard script.py [args...] | -m module [args...]",
              file=sys.stderr)
        return 2
    # hydra's notice that a rank died is for the ranks (spec handles it there).
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    inherited = tuple(int(os.environ[v]) for v in ("PMI_FD",) if v in os.environ)
    child = subprocess.Popen([sys.executable, *argv], pass_fds=inherited)
    for forwarded in (signal.SIGTERM, signal.SIGINT):
        signal.signal(forwarded, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
