"""How an abandoned collective gives up its requests (spec._src.backends.mpi._abandon),
without MPI: only receives of eager-sized messages are cancelled (MPICH's MPI_Cancel of a
half-copied data receive crashed survivors), and every request and buffer stays referenced
(MPI may still read or write the buffers of requests it has not finished)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from spec._src.backends import mpi as mesh_mpi


class _Request:
    def __init__(self, done: bool) -> None:
        self.done = done
        self.cancelled = False

    def Test(self) -> bool:  # noqa: N802 (mpi4py's name)
        return self.done

    def Cancel(self) -> None:  # noqa: N802 (mpi4py's name)
        self.cancelled = True


def test_only_open_eager_receives_are_cancelled_and_everything_is_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    comms = SimpleNamespace(pending=[])
    monkeypatch.setattr(mesh_mpi, "_comms", lambda: comms)
    header_open, header_done = _Request(False), _Request(True)
    data_recv, data_send = _Request(False), _Request(False)
    buffers = [np.zeros(3), bytearray(8)]
    mesh_mpi._abandon([header_open, header_done], [data_recv, data_send], buffers)
    assert header_open.cancelled and not header_done.cancelled
    assert not data_recv.cancelled and not data_send.cancelled
    kept = [id(x) for x in comms.pending]
    for thing in (header_open, header_done, data_recv, data_send, *buffers):
        assert id(thing) in kept
