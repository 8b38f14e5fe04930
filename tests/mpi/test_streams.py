"""The descriptions a stream (one direction between two ranks) remembers
(spec._src.backends.mpi._Stream), without MPI: both ends of a stream must
assign the same slots in the same order, so that a repeated collective's
tag means the same description at both ends."""

from __future__ import annotations

from spec._src.backends import mpi as mesh_mpi


def _descriptions(n: int) -> list[bytes]:
    return [f"collective {i}".encode() for i in range(n)]


def test_slots_fill_in_order_then_the_oldest_leaves() -> None:
    stream = mesh_mpi._Stream(rank=1)
    first = _descriptions(mesh_mpi._SLOTS + 2)
    for d in first[:mesh_mpi._SLOTS]:
        stream.remember(d)
    assert [stream.slots[d] for d in first[:mesh_mpi._SLOTS]] == list(range(mesh_mpi._SLOTS))
    stream.remember(first[-2])  # takes the slot of the oldest
    stream.remember(first[-1])
    assert first[0] not in stream.slots and first[1] not in stream.slots
    assert stream.slots[first[-2]] == 0 and stream.slots[first[-1]] == 1
    assert stream.described_in(1) == first[-1]
    assert len(stream.slots) == mesh_mpi._SLOTS


def test_a_distrusted_stream_remembers_nothing_until_forgotten() -> None:
    stream = mesh_mpi._Stream(rank=1)
    a, b = _descriptions(2)
    stream.remember(a)
    stream.distrust()
    stream.remember(b)
    assert stream.slots == {} and stream.described_in(0) is None
    stream.forget()
    stream.remember(b)
    assert stream.slots == {b: 0}


def test_tags_of_successive_transfers_do_not_overlap() -> None:
    stream = mesh_mpi._Stream(rank=1)
    cycle = 5
    firsts = [stream.next_tags(cycle) for _ in range(2 * cycle)]
    assert firsts[:cycle] == [k * mesh_mpi._TAGS_PER_TRANSFER for k in range(cycle)]
    assert firsts[cycle:] == firsts[:cycle]  # the cycle wraps
