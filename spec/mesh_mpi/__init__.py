"""MPI ranks as devices (SPEC.md section 14.5).

Under ``mpiexec -n N`` (N > 1) spec's devices are the N ranks: device r is
rank r's one device, ``process_index()`` is the rank, and a sharded value is
held as each rank's own block only. Every collective the per-device programs
need is carried out here with point-to-point messages of mpi4py's buffer API
on a communicator of spec's own (a duplicate of COMM_WORLD).

Why point-to-point rather than MPI's collectives:
- every wait has a deadline: requests are polled, and a peer that does not
  arrive in time becomes a ``CollectiveTimeoutError`` naming it, never a
  hang (blocking MPI collectives cannot be abandoned);
- reductions combine blocks in the virtual backend's order (position order
  along the axes), so both backends give bitwise the same values;
- each message is preceded by a header (collective number, kind, axes,
  block type) that the receiver checks: ranks that reach different
  collectives raise ``CollectiveMismatchError`` naming both sides.

The backend is selected at import when the process runs under mpiexec with
more than one rank (``SPEC_BACKEND=virtual`` keeps the virtual devices;
``SPEC_BACKEND=mpi`` insists on MPI). ``SPEC_MPI_TIMEOUT`` sets the deadline
in seconds (default 60).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from spec import _spmd as S

_HEADER_BYTES = 512
_TAG_SPAN = 16000  # tags cycle through [0, 2 * _TAG_SPAN): header and data tags per collective


class CollectiveTimeoutError(RuntimeError):
    """Peers did not join a collective before its deadline."""


class CollectiveMismatchError(RuntimeError):
    """Ranks reached different collectives (or the same one with different
    block types) at the same point of the program."""


def _launched_size() -> int:
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return 1


@functools.cache
def active() -> bool:
    """Whether spec's devices are MPI ranks in this process."""
    choice = os.environ.get("SPEC_BACKEND", "").lower()
    if choice == "virtual":
        return False
    if choice not in ("", "mpi"):
        raise ValueError(f"SPEC_BACKEND must be 'mpi' or 'virtual', got {choice!r}")
    if choice == "" and _launched_size() <= 1:
        return False
    from mpi4py import MPI
    return bool(MPI.COMM_WORLD.Get_size() > 1 or choice == "mpi")


@functools.cache
def world() -> Any:
    """spec's own communicator: a duplicate of COMM_WORLD, so that user
    messages on COMM_WORLD never match spec's."""
    from mpi4py import MPI
    return MPI.COMM_WORLD.Dup()


def rank() -> int:
    return int(world().Get_rank())


def size() -> int:
    return int(world().Get_size())


def timeout() -> float:
    return float(os.environ.get("SPEC_MPI_TIMEOUT", "60"))


# ============================================================== transport


class _Counter:
    """Collectives are numbered in program order; every rank counts the same
    (SPMD), so the number names a collective across ranks."""

    def __init__(self) -> None:
        self.value = 0

    def next(self) -> int:
        self.value += 1
        return self.value


_count = _Counter()


def collectives_run() -> int:
    """How many collectives this rank has taken part in."""
    return _count.value


def _encode(header: dict[str, Any]) -> np.ndarray:
    raw = json.dumps(header, sort_keys=True).encode()
    if len(raw) > _HEADER_BYTES:
        raise ValueError(f"collective header too long: {raw[:80]!r}...")
    out = np.zeros(_HEADER_BYTES, np.uint8)
    out[:len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def _decode(buf: np.ndarray) -> dict[str, Any]:
    raw = bytes(buf).rstrip(b"\0")
    decoded: dict[str, Any] = json.loads(raw.decode())
    return decoded


def _wait(requests: list[Any], peers: list[int], what: str) -> None:
    """Poll ``requests`` (one per peer) until all complete or the deadline
    passes; then name the peers still missing."""
    from mpi4py import MPI
    deadline = time.monotonic() + timeout()
    spins = 0
    while not MPI.Request.Testall(requests):
        spins += 1
        if spins > 200:  # yield the core: ranks may outnumber cores
            time.sleep(min(1e-3, 1e-5 * (spins - 200)))
        if time.monotonic() > deadline:
            missing = [p for p, r in zip(peers, requests) if not r.Test()]
            raise CollectiveTimeoutError(
                f"rank {rank()}: {what}: rank(s) {missing} did not join within "
                f"{timeout():g} s (a collective reached by only some ranks?)")


def _as_bytes(block: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(block).reshape(-1).view(np.uint8)


def exchange(block: np.ndarray, send_to: Sequence[int], recv_from: Sequence[int],
             kind: str, detail: str) -> dict[int, np.ndarray]:
    """Send ``block`` to the ranks ``send_to`` and receive one block of the
    same type from each of ``recv_from``; both sides' headers must agree."""
    comm = world()
    number = _count.next()
    me = rank()
    header = {"n": number, "kind": kind, "detail": detail,
              "dtype": str(block.dtype), "shape": list(block.shape)}
    h_tag = (2 * number) % (2 * _TAG_SPAN)
    d_tag = h_tag + 1
    what = f"collective #{number} {kind}({detail}) of {block.dtype}{list(block.shape)}"
    payload = _as_bytes(block)
    sends = []
    encoded = _encode(header)
    for peer in send_to:
        sends.append(comm.Isend(encoded, dest=peer, tag=h_tag))
        sends.append(comm.Isend(payload, dest=peer, tag=d_tag))
    peers = list(recv_from)
    headers = [np.empty(_HEADER_BYTES, np.uint8) for _ in peers]
    _wait([comm.Irecv(h, source=p, tag=h_tag) for h, p in zip(headers, peers)], peers, what)
    for peer, raw in zip(peers, headers):
        theirs = _decode(raw)
        if theirs != header:
            raise CollectiveMismatchError(
                f"rank {me}: {what} here, but rank {peer} reached "
                f"collective #{theirs['n']} {theirs['kind']}({theirs['detail']}) of "
                f"{theirs['dtype']}{theirs['shape']}")
    received = {p: np.empty(block.shape, block.dtype) for p in peers}
    _wait([comm.Irecv(_as_bytes_out(received[p]), source=p, tag=d_tag) for p in peers],
          peers, what)
    _wait(sends, [p for p in send_to for _ in (0, 1)], what + " (sending)")
    return received


def _as_bytes_out(buf: np.ndarray) -> np.ndarray:
    return buf.reshape(-1).view(np.uint8)


# ================================================================ backend


def _my_group(geo: S.Geometry, axes: S.Axes) -> tuple[np.ndarray, int]:
    """The group of this rank's device along ``axes`` and its place in it."""
    (k,) = geo.local
    for group in geo.groups(axes):
        where = np.nonzero(group == k)[0]
        if where.size:
            return group, int(where[0])
    raise AssertionError("device not in any group")


def _detail(axes: S.Axes, extra: str = "") -> str:
    return ",".join(map(str, axes)) + extra


class MPIBackend(S.Backend):
    """One device per rank: a collective exchanges this rank's block with
    its group's ranks, then combines in position order."""

    name = "mpi"
    local = S.VirtualBackend()  # for meshes whose devices all live here

    def all_gather(self, bufs: S.Bufs, axes: S.Axes, dim: int, geo: S.Geometry) -> S.Bufs:
        if geo.all_local:
            return self.local.all_gather(bufs, axes, dim, geo)
        blocks = self._group_blocks(bufs, axes, geo, "all_gather", f";dim={dim}")
        return geo.place(np.concatenate(blocks, axis=dim))

    def all_reduce(self, bufs: S.Bufs, axes: S.Axes, op: str, geo: S.Geometry) -> S.Bufs:
        if geo.all_local:
            return self.local.all_reduce(bufs, axes, op, geo)
        blocks = self._group_blocks(bufs, axes, geo, "all_reduce", f";op={op}")
        acc = blocks[0]
        for b in blocks[1:]:
            acc = S.combine(op, acc, b)
        return geo.place(acc)

    def ppermute(self, bufs: S.Bufs, axes: S.Axes, perm: Sequence[tuple[int, int]],
                 geo: S.Geometry) -> S.Bufs:
        if geo.all_local:
            return self.local.ppermute(bufs, axes, perm, geo)
        group, pos = _my_group(geo, axes)
        mine = S.first(bufs)
        send_to = [geo.procs[int(group[d])] for s, d in perm if s == pos]
        recv_from = [geo.procs[int(group[s])] for s, d in perm if d == pos]
        got = exchange(mine, send_to, recv_from, "ppermute", _detail(axes))
        out = got[recv_from[0]] if recv_from else np.zeros_like(mine)
        return geo.place(out)

    def _group_blocks(self, bufs: S.Bufs, axes: S.Axes, geo: S.Geometry, kind: str,
                      extra: str) -> list[np.ndarray]:
        group, pos = _my_group(geo, axes)
        mine = S.first(bufs)
        peers = [geo.procs[int(k)] for i, k in enumerate(group) if i != pos]
        got = exchange(mine, peers, peers, kind, _detail(axes, extra))
        return [mine if i == pos else got[geo.procs[int(k)]] for i, k in enumerate(group)]


def agree(what: str, value: Any) -> None:
    """Check that every rank passes the same ``value`` (a JSON-able
    description) at this point; raise ValueError naming the ranks that
    differ."""
    if not active():
        return
    me = rank()
    others = [r for r in range(size()) if r != me]
    raw = json.dumps(value, sort_keys=True).encode()
    if len(raw) > _HEADER_BYTES:  # compare a digest; show it when they differ
        raw = json.dumps(hashlib.sha256(raw).hexdigest()).encode()
    mine = np.zeros(_HEADER_BYTES, np.uint8)
    mine[:len(raw)] = np.frombuffer(raw, np.uint8)
    got = exchange(mine, others, others, "agree", what)
    differ = {r: _decode(b) for r, b in got.items() if not np.array_equal(b, mine)}
    if differ:
        shown = "; ".join(f"rank {r}: {v}" for r, v in sorted(differ.items()))
        raise ValueError(f"rank {me}: {what} differs across ranks: here {value}; {shown}")


def allgather_blocks(block: np.ndarray, what: str) -> list[np.ndarray]:
    """Every rank's block (all of the same type), in rank order."""
    me = rank()
    others = [r for r in range(size()) if r != me]
    got = exchange(block, others, others, "process_allgather", what)
    return [block if r == me else got[r] for r in range(size())]


def barrier(name: str) -> None:
    """All ranks meet here (with a deadline)."""
    me = rank()
    others = [r for r in range(size()) if r != me]
    exchange(np.zeros(1, np.uint8), others, others, "barrier", name)


__all__ = ["CollectiveMismatchError", "CollectiveTimeoutError", "MPIBackend", "active",
           "agree", "allgather_blocks", "barrier", "collectives_run", "exchange", "rank",
           "size", "timeout", "world"]
