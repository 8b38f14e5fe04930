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
- each block travels after a header (collective number, kind, axes, block
  type) that the receiver checks, or, repeating a description the two
  ranks exchanged recently, alone under a tag naming it (``_Stream``):
  ranks that reach different collectives raise ``CollectiveMismatchError``
  naming both sides.

The backend is selected at import when the process runs under mpiexec with
more than one rank (``SPEC_BACKEND=virtual`` keeps the virtual devices;
``SPEC_BACKEND=mpi`` insists on MPI). ``SPEC_MPI_TIMEOUT`` sets the deadline
in seconds (default 60).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import signal
import sys
import ctypes
import ctypes.util

import faulthandler
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

from spec._src.backends.devices import Device, VirtualBackend
from spec._src.interpreters import spmd as S

_HEADER_BYTES = 512


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
    with _every_rank_joins_by_the_deadline():
        from mpi4py import MPI  # optional dependency: imported only when MPI is in use
    return bool(MPI.COMM_WORLD.Get_size() > 1 or choice == "mpi")


@contextlib.contextmanager
def _every_rank_joins_by_the_deadline() -> Iterator[None]:
    """MPI's start-up (MPI_Init, duplicating COMM_WORLD, the first allgather) waits for
    every rank with no deadline, holding the GIL: a rank that dies before joining would
    hold the others forever. faulthandler's watchdog is a C thread, so it runs meanwhile:
    past SPEC_MPI_TIMEOUT it prints where each thread waits and ends the process
    (status 1)."""
    faulthandler.dump_traceback_later(_timeout(), exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


class CollectiveFailedError(RuntimeError):
    """A collective was abandoned because a participating process failed
    (seen here, or reported by another process)."""


class _Comms:
    """spec's communicators: ``data`` carries the collectives (a duplicate of
    COMM_WORLD, so user messages never match spec's; after a failure, a new
    communicator among the survivors, so no message of an abandoned
    collective can match a later one); ``ctrl`` carries the live_devices
    protocol and failure notices, and is never rebuilt."""

    def __init__(self) -> None:
        from mpi4py import MPI  # optional dependency: imported only when MPI is in use
        self.ctrl = MPI.COMM_WORLD.Dup()
        self.ctrl.Set_errhandler(MPI.ERRORS_RETURN)  # errors raise; never abort the job
        self.data = MPI.COMM_WORLD.Dup()
        self.data.Set_errhandler(MPI.ERRORS_RETURN)
        self.rank = int(self.ctrl.Get_rank())
        # The transfers of each stream (one direction between two ranks)
        # are numbered, and transfer t's tags are _TAGS_PER_TRANSFER * t
        # onward, cycling through every tag MPI allows (at least 32767;
        # MPICH's 2^29 - 1): a receive left posted by an abandoned
        # collective could only match a transfer that many later.
        tag_ub: Any = MPI.COMM_WORLD.Get_attr(MPI.TAG_UB)
        self.tag_cycle = (int(tag_ub) + 1) // _TAGS_PER_TRANSFER
        self.outgoing: dict[int, _Stream] = {}  # by world rank of the peer
        self.incoming: dict[int, _Stream] = {}
        self.members = list(range(int(self.ctrl.Get_size())))  # world ranks, data order
        self.index = {w: i for i, w in enumerate(self.members)}
        # Processes of one host (the loopback launches this backend serves):
        # a peer's death is visible as its pid disappearing.
        joined = self.ctrl.allgather((os.getpid(), sorted(_usable_cores())))
        self.pids = [int(pid) for pid, _ in joined]
        cores = {int(core) for _, mask in joined for core in mask}
        self.spin = _SPIN_OWN_CORE if len(cores) >= len(self.pids) else _SPIN_SHARED
        self.dead: set[int] = set()
        self.epoch = 0
        # Requests of abandoned collectives, their buffers and communicators:
        # kept alive for the life of the process (see _abandon).
        self.pending: list[Any] = []

    def to_data(self, world_rank: int) -> int:
        if world_rank not in self.index:
            raise CollectiveFailedError(
                f"rank {self.rank}: rank {world_rank} is not among the live processes "
                f"{self.members}")
        return self.index[world_rank]

    def rebuild(self, live: list[int]) -> None:
        """A fresh data communicator among ``live`` (collective over them
        only: the dead cannot hold it up, as a Split over all would)."""
        MPI = _mpi()
        group = self.ctrl.Get_group().Incl(live)
        self.pending.append(self.data)  # abandoned requests may still be posted on it
        self.data = self.ctrl.Create_group(group, tag=7)
        self.data.Set_errhandler(MPI.ERRORS_RETURN)
        self.members = list(live)
        self.index = {w: i for i, w in enumerate(live)}
        self.outgoing.clear()  # a new communicator: no message of the old one can match
        self.incoming.clear()
        _count.value = 0

    def to(self, peer: int) -> _Stream:
        """The stream to ``peer`` (a world rank; raises if it is not live)."""
        stream = self.outgoing.get(peer)
        if stream is None:
            stream = self.outgoing[peer] = _Stream(self.to_data(peer))
        return stream

    def from_(self, peer: int) -> _Stream:
        """The stream from ``peer`` (a world rank; raises if it is not live)."""
        stream = self.incoming.get(peer)
        if stream is None:
            stream = self.incoming[peer] = _Stream(self.to_data(peer))
        return stream

    def forget_descriptions(self, peers: Sequence[int]) -> None:
        """The streams with ``peers`` start remembering afresh, trusting
        those peers again (each of them does the same with this rank at
        the same point of the program: a live_devices agreement)."""
        for peer in peers:
            if peer != self.rank:
                self.to(peer).forget()
                self.from_(peer).forget()


@functools.cache
def _comms() -> _Comms:
    with _every_rank_joins_by_the_deadline():
        comms = _Comms()
    _install_exit_guards()
    return comms


def world() -> Any:
    """spec's data communicator."""
    return _comms().data


def rank() -> int:
    """This process's rank in COMM_WORLD (its device's id)."""
    return _comms().rank


def size() -> int:
    return len(_comms().pids)


def timeout() -> float:
    """Seconds any wait may last (``SPEC_MPI_TIMEOUT``, read when MPI is
    first used)."""
    return _timeout()


@functools.cache
def _timeout() -> float:
    return float(os.environ.get("SPEC_MPI_TIMEOUT", "60"))


def alive(world_rank: int) -> bool:
    """Whether a process still runs (its pid exists and is not a zombie)."""
    if world_rank in _comms().dead:
        return False
    try:
        with open(f"/proc/{_comms().pids[world_rank]}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


_exit_code = [0]


def _install_exit_guards() -> None:
    """After a process failure MPI cannot finalize (it would wait for the
    dead): exit without it. hydra (``-disable-auto-cleanup``) signals the
    survivors with SIGUSR1 when a rank dies: not a reason to die too."""

    signal.signal(signal.SIGUSR1, lambda signum, frame: None)
    previous = sys.excepthook

    def hook(*args: Any) -> None:
        _exit_code[0] = 1
        previous(*args)

    sys.excepthook = hook

    def leave() -> None:
        if _comms().dead:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(_exit_code[0])

    atexit.register(leave)


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


@functools.lru_cache(maxsize=256)
def _described(kind: str, detail: str, dtype: np.dtype[Any], shape: tuple[int, ...]) -> bytes:
    """A kind of collective's description, as the last _HEADER_BYTES of its
    headers (encoded once)."""
    raw = json.dumps({"n": 0, "kind": kind, "detail": detail, "dtype": str(dtype),
                      "shape": list(shape)}, sort_keys=True).encode()
    if len(raw) > _HEADER_BYTES:
        raise ValueError(f"collective header too long: {raw[:80]!r}...")
    return raw.ljust(_HEADER_BYTES, b"\0")


def _header(number: int, described: bytes) -> bytes:
    """A collective's header: its number (8 bytes), then its description."""
    return number.to_bytes(8, sys.byteorder, signed=True) + described


# A stream (one direction between two ranks) remembers the descriptions of
# its last _SLOTS transfers that carried a header, so that a collective
# repeating one sends its block alone. Transfer t of a stream uses the tags
# _TAGS_PER_TRANSFER * t + k: k = 0 its header, 1 its block after a header,
# 2 + j its block alone, repeating the description in slot j.
_SLOTS = 6
_TAGS_PER_TRANSFER = 2 + _SLOTS
_HEADER, _BLOCK_AFTER_HEADER, _REPEAT = 0, 1, 2


class _Stream:
    """One direction between this rank and a peer, as this rank sees it:
    how many transfers it has carried (their tags follow the count) and the
    descriptions in its slots. Both ends update a stream alike, in its
    transfers' order: the sender remembers a description when it sends
    it with a header, the receiver when it posts a receive for one (the
    oldest description leaves when the slots are full). So a sender and a
    receiver whose collectives agree choose the same tag, and any
    difference between them (a header where the other expects a repeat, or
    another slot) is a tag that does not match: the receiver finds the
    peer's message under the other tag and names both collectives. A
    receiver that saw a difference, or gave up a transfer, no longer
    trusts the stream's slots: it expects a header for every transfer
    (and takes a repeat as a mismatch) until both ends forget (a
    live_devices agreement or a new communicator)."""

    __slots__ = ("rank", "count", "slots", "order", "trusted")

    def __init__(self, rank: int) -> None:
        self.rank = rank  # the peer's, on the data communicator
        self.count = 0
        self.slots: dict[bytes, int] = {}
        self.order: collections.deque[bytes] = collections.deque()
        self.trusted = True

    def next_tags(self, cycle: int) -> int:
        """The first tag of the stream's next transfer."""
        first = (self.count % cycle) * _TAGS_PER_TRANSFER
        self.count += 1
        return first

    def next_block(self, described: bytes, cycle: int) -> tuple[int, bool]:
        """The tag of the stream's next block, and whether a header goes
        before it (under the tag one below): where the stream does not
        remember ``described``, which it remembers from now on."""
        first = self.next_tags(cycle)
        slot = self.slots.get(described)
        if slot is None:
            self.remember(described)
            return first + _BLOCK_AFTER_HEADER, True
        return first + _REPEAT + slot, False

    def remember(self, described: bytes) -> None:
        if not self.trusted:
            return
        if len(self.order) < _SLOTS:
            slot = len(self.order)
        else:
            slot = self.slots.pop(self.order.popleft())
        self.order.append(described)
        self.slots[described] = slot

    def described_in(self, slot: int) -> bytes | None:
        for described, k in self.slots.items():
            if k == slot:
                return described
        return None

    def distrust(self) -> None:
        self.trusted = False
        self.slots.clear()
        self.order.clear()

    def forget(self) -> None:
        self.slots.clear()
        self.order.clear()
        self.trusted = True


def _decode(buf: Any) -> dict[str, Any]:
    """A header (any bytes-like object) back as a dict (its number from the
    first 8 bytes, when it has them)."""
    raw = bytes(buf)
    number = None
    if len(raw) == _HEADER_BYTES + 8:
        number = int.from_bytes(raw[:8], sys.byteorder, signed=True)
        raw = raw[8:]
    decoded: dict[str, Any] = json.loads(raw.rstrip(b"\0").decode())
    if number is not None:
        decoded["n"] = number
    return decoded


_ABORT_TAG = 32001
_CHECK_EVERY = 0.005  # seconds between liveness checks while waiting
# Seconds a wait tests without giving up the core. A peer running on
# another core answers within microseconds, a block of a megabyte moves in
# under 0.1 ms as the tests drive MPI's progress, and a yielded core on a
# busy machine comes back only after other processes' time slices: when the
# ranks can run on as many cores as there are ranks, a wait spins for 1 ms
# (MPICH's own waits spin without end). When ranks must share cores, a peer
# on this core runs only once this process yields, so the spin is 20 us.
_SPIN_OWN_CORE = 1e-3
_SPIN_SHARED = 2e-5


def _usable_cores() -> set[int]:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def _wait(requests: list[Any], peers: Sequence[int], what: Callable[[], str],
          probe: Callable[[], None] | None = None) -> None:
    """Poll ``requests`` (``peers[i]``, a world rank, is request i's peer)
    until all complete. A peer that dies, a failure another process
    reports, the deadline passing, or ``probe()`` (run between tests once
    the wait is long) raising ends the wait with an error naming the peers
    and the collective (``what()``, formatted only then); the caller then
    abandons the collective's requests (``_abandon``)."""
    if _test_all(requests, peers, what):
        return
    c = _comms()
    start = time.monotonic()
    deadline = start + timeout()
    spin_until = start + c.spin
    next_check = start + _CHECK_EVERY
    while not _test_all(requests, peers, what):
        now = time.monotonic()
        # Large transfers move as MPI makes progress, which testing drives:
        # keep testing, first without pause, then yielding the core (ranks
        # may outnumber cores); a wait this long is for a peer still
        # computing: sleep between tests.
        if now < spin_until:
            pass
        elif now - start < 0.02:
            os.sched_yield()
        else:
            time.sleep(min(1e-3, (now - start) / 100))
        if now >= next_check:
            next_check = now + _CHECK_EVERY
            missing = [p for p, r in zip(peers, requests) if not r.Test()]
            dead = sorted({p for p in missing if not alive(p)})
            if dead:
                _announce(dead)
                raise CollectiveFailedError(
                    f"rank {c.rank}: {what()}: process(es) {dead} failed")
            reported = _reported_failure()
            if reported is not None:
                raise CollectiveFailedError(
                    f"rank {c.rank}: {what()}: abandoned, rank {reported[0]} reported failed "
                    f"process(es) {reported[1]}")
            if probe is not None:
                probe()
        if now > deadline:
            missing = sorted({p for p, r in zip(peers, requests) if not r.Test()})
            raise CollectiveTimeoutError(
                f"rank {c.rank}: {what()}: rank(s) {missing} did not join within "
                f"{timeout():g} s (a collective reached by only some ranks?)")


def _test_all(requests: list[Any], peers: Sequence[int], what: Callable[[], str]) -> bool:
    """Whether all requests completed; an error MPI reports (a peer's
    connection broke) names the peers that died."""
    MPI = _mpi()
    try:
        return bool(MPI.Request.Testall(requests))
    except MPI.Exception as e:
        dead = _dead_peers_after_error(peers)
        if dead:
            _announce(dead)
        raise CollectiveFailedError(f"rank {rank()}: {what()}: process(es) {dead} failed "
                                    f"(MPI: {e.Get_error_string()})") from None


@functools.cache
def _mpi() -> Any:
    """The mpi4py module, imported once (an import statement on every test of
    a request costs as much as the test)."""
    from mpi4py import MPI  # optional dependency: imported only when MPI is in use
    return MPI


_SETTLE = 2.0  # seconds: how long a broken connection may precede its process's exit


def _dead_peers_after_error(peers: Sequence[int]) -> list[int]:
    """The peers that died, after MPI reported a broken connection: the
    process table may lag the broken socket (a loaded machine), so it is
    polled for a short, bounded time before naming none."""
    deadline = time.monotonic() + _SETTLE
    while True:
        dead = sorted({p for p in peers if not alive(p)})
        if dead or time.monotonic() > deadline:
            return dead
        time.sleep(_CHECK_EVERY)


def _abandon(eager_recvs: Sequence[Any], in_flight: Sequence[Any] = (),
             buffers: Sequence[Any] = ()) -> None:
    """Give up on a collective's requests without ever letting MPI touch
    freed memory. Only receives of eager-sized messages (headers, control
    notes) are cancelled: such a message is copied in whole when it
    matches, so an incomplete one is unmatched and cancelling it is safe.
    A data receive may already be matched to a large message that is half
    copied, and MPICH's MPI_Cancel of such a receive can crash the process
    (it did, under load, when a peer died mid-transfer); it is left posted,
    like every send (after a process failure the data communicator is
    replaced; else the tags cycle far enough, ``_Comms.tag_cycle``).
    Nothing abandoned is freed: mpi4py lets go of a request's buffer when
    the request object is collected (the MPI request itself stays active)
    or when MPI nulls its handle after an error, and MPI may still read or
    write that buffer, so the requests and their buffers stay referenced
    for the life of the process (as does the communicator:
    ``_Comms.rebuild``)."""
    for r in eager_recvs:
        try:
            if not r.Test():
                r.Cancel()
        except Exception:  # a request of a failed peer may refuse even that
            pass
    _comms().pending.extend([*eager_recvs, *in_flight, *buffers])


def _announce(dead: list[int]) -> None:
    """Tell every other live process that a collective failed, so that
    those waiting elsewhere (for processes that are alive but gave up) stop
    too; the notice carries the live_devices epoch it belongs to."""
    c = _comms()
    c.dead.update(dead)
    note = np.array([c.epoch, c.rank, *dead], np.int64)
    for peer in range(len(c.pids)):
        if peer != c.rank and alive(peer):
            c.pending.append(c.ctrl.Isend(note, dest=peer, tag=_ABORT_TAG))


def _reported_failure() -> tuple[int, list[int]] | None:
    """A failure notice of the current epoch, if one arrived (older ones are
    read and dropped)."""
    MPI = _mpi()
    c = _comms()
    status = MPI.Status()
    while c.ctrl.Iprobe(source=MPI.ANY_SOURCE, tag=_ABORT_TAG, status=status):
        note = np.empty(status.Get_count(MPI.INT64_T), np.int64)
        c.ctrl.Recv(note, source=status.Get_source(), tag=_ABORT_TAG)
        if int(note[0]) == c.epoch:
            c.dead.update(int(d) for d in note[2:])
            return int(note[1]), [int(d) for d in note[2:]]
    return None


# Element types mpi4py maps to an MPI type straight from a NumPy buffer;
# a block of any other type (bfloat16, float8, float16, ...) travels as its
# bytes (a view, for the cost of two array calls).
_MPI_NATIVE = frozenset("?bBhHiIlLqQfdFD")


def _as_buffer(block: np.ndarray) -> np.ndarray:
    """``block`` as a contiguous buffer MPI can send."""
    return _as_buffer_out(np.ascontiguousarray(block))


def exchange(block: np.ndarray, send_to: Sequence[int], recv_from: Sequence[int],
             kind: str, detail: str, into: dict[int, np.ndarray] | None = None,
             blocks: dict[int, np.ndarray] | None = None,
             part_of: tuple[str, int] | None = None,
             meanwhile: Callable[[], None] | None = None) -> dict[int, np.ndarray]:
    """Send ``block`` (or ``blocks[peer]``, of block's type, to each peer) to
    the ranks ``send_to`` and receive one block of the same type from each
    of ``recv_from`` (into the contiguous buffers ``into`` when given); both
    sides' collectives must agree (kind, detail and block type: their
    description). ``part_of``: this exchange is one step of a larger
    collective, (its description, its block's bytes), which errors name.
    ``meanwhile`` runs once everything is posted, while the blocks move.

    A block travels with a header (its description) unless its stream
    remembers the description (``_Stream``): then alone, its tag naming
    the slot. Every receive, headers and blocks, is posted before any
    header is checked, so that a large block moves as soon as both sides
    are there (one round trip, not two); a block whose header turns out
    not to match is abandoned unread."""
    c = _comms()
    number = _count.next()
    # Every peer is resolved before anything is posted, so that a dead one
    # raises with no request outstanding.
    ins = [c.from_(p) for p in recv_from]
    outs = [c.to(p) for p in send_to]
    received = into if into is not None else {p: np.empty(block.shape, block.dtype)
                                              for p in recv_from}
    described = _described(kind, detail, block.dtype, block.shape)
    headers = _Headers(number, described)
    requests: list[Any] = []  # the blocks' receives, then their sends
    tags: list[int] = []  # of the blocks' receives
    outbound = [_as_buffer(block)] * len(send_to) if blocks is None else [
        _as_buffer(blocks[p]) for p in send_to]

    def what() -> str:
        label = part_of[0] if part_of else (
            f"{kind}({detail}) of {block.dtype}{list(block.shape)}")
        return f"collective #{number} {label}"

    try:
        _post_receives(c, recv_from, ins, received, headers, requests, tags)
        _post_sends(c, send_to, outs, outbound, headers, requests)
        _after_sends(number, part_of[1] if part_of else block.nbytes)
        if meanwhile is not None:
            meanwhile()
        peers = [*recv_from, *send_to]
        if headers.recvs or headers.sends or not _test_all(requests, peers, what):
            def probe() -> None:
                _check_tags(c.data, zip(recv_from, ins, tags), described, what)
            headers.check(what, probe)
            _wait(requests, peers, what, probe)
            _wait(headers.sends, headers.send_peers, what, probe)
    except BaseException:
        for stream in ins:
            stream.distrust()
        _abandon(headers.recvs, requests + headers.sends,
                 [headers.encoded, *headers.bufs, *outbound,
                  *(received[p] for p in recv_from)])
        raise
    return received


def _post_receives(c: _Comms, recv_from: Sequence[int], ins: Sequence[_Stream],
                   received: dict[int, np.ndarray], headers: _Headers, requests: list[Any],
                   tags: list[int]) -> None:
    """Post the receive of each peer's block (and of its header, where the
    stream does not remember the description), listing each request as
    soon as it is posted (one that fails to post leaves every earlier one
    listed, to be abandoned with its buffer kept)."""
    comm, cycle, described = c.data, c.tag_cycle, headers.described
    for peer, stream in zip(recv_from, ins):
        tag, after_header = stream.next_block(described, cycle)
        if after_header:
            headers.expect(comm, peer, stream.rank, tag - 1)
        tags.append(tag)
        requests.append(comm.Irecv(_as_buffer_out(received[peer]), stream.rank, tag))


def _post_sends(c: _Comms, send_to: Sequence[int], outs: Sequence[_Stream],
                outbound: Sequence[np.ndarray], headers: _Headers, requests: list[Any]) -> None:
    """Post the send of the block to each peer (``outbound``, one buffer per
    peer), after its header where the stream does not remember the
    description."""
    comm, cycle, described = c.data, c.tag_cycle, headers.described
    for peer, stream, data in zip(send_to, outs, outbound):
        tag, after_header = stream.next_block(described, cycle)
        if after_header:
            headers.send(comm, peer, stream.rank, tag - 1)
        requests.append(comm.Isend(data, stream.rank, tag))


class _Headers:
    """The headers of one exchange: those it sends (built once, when a peer
    needs one) and those it receives, each request listed once posted."""

    __slots__ = ("number", "described", "encoded", "bufs", "recvs", "recv_peers", "sends",
                 "send_peers")

    def __init__(self, number: int, described: bytes) -> None:
        self.number = number
        self.described = described
        self.encoded = b""
        self.bufs: list[bytearray] = []
        self.recvs: list[Any] = []
        self.recv_peers: list[int] = []
        self.sends: list[Any] = []
        self.send_peers: list[int] = []

    def expect(self, comm: Any, peer: int, source: int, tag: int) -> None:
        raw = bytearray(_HEADER_BYTES + 8)
        self.bufs.append(raw)
        self.recvs.append(comm.Irecv(raw, source, tag))
        self.recv_peers.append(peer)

    def send(self, comm: Any, peer: int, dest: int, tag: int) -> None:
        if not self.encoded:
            self.encoded = _header(self.number, self.described)
        self.sends.append(comm.Isend(self.encoded, dest, tag))
        self.send_peers.append(peer)

    def check(self, what: Callable[[], str], probe: Callable[[], None]) -> None:
        """Wait for the headers; each must carry this rank's description."""
        if not self.recvs:
            return
        _wait(self.recvs, self.recv_peers, what, probe)
        for peer, raw in zip(self.recv_peers, self.bufs):
            if raw[8:] != self.described:
                _mismatch(peer, _decode(raw), what)


def _check_tags(comm: Any, receives: Iterable[tuple[int, _Stream, int]], described: bytes,
                what: Callable[[], str]) -> None:
    """Raise if a peer's transfer came under another tag than this rank
    expects (each receive: the peer, its stream and the block's tag): the
    peer's collective differs (a header where this rank expects a repeat, a
    repeat of another description, or a repeat where this rank's stream
    from the peer remembers nothing)."""
    for peer, stream, expected in receives:
        first = expected - expected % _TAGS_PER_TRANSFER
        after_header = expected == first + _BLOCK_AFTER_HEADER
        wanted = {first + _HEADER, expected} if after_header else {expected}
        # A block after a header is not looked for: its header comes first.
        for tag in (first + _HEADER, *range(first + _REPEAT, first + _TAGS_PER_TRANSFER)):
            if tag in wanted or not comm.Iprobe(stream.rank, tag):
                continue
            if tag == first + _HEADER:
                raw = bytearray(_HEADER_BYTES + 8)
                comm.Recv(raw, stream.rank, tag)  # probed: an eager message, already here
                _mismatch(peer, _decode(raw), what)
            remembered = stream.described_in(tag - first - _REPEAT)
            if remembered is None or remembered == described:
                _mismatch(peer, None, what)  # (this rank's own may just have taken the slot)
            _mismatch(peer, _repeated(remembered), what)


def _repeated(described: bytes) -> dict[str, Any]:
    """A remembered description, decoded (it has no collective number)."""
    theirs = _decode(described)
    theirs.pop("n", None)
    return theirs


def _mismatch(peer: int, theirs: dict[str, Any] | None, what: Callable[[], str]
              ) -> NoReturn:
    """Raise for a peer whose collective (``theirs``, decoded from its header
    or from this rank's memory of a repeated one) differs from this rank's."""
    if theirs is None:
        reached = ("a repeat of a collective this rank cannot check (after an earlier failed "
                   "collective between them; live_devices makes them agree again)")
    else:
        number = f"collective #{theirs['n']} " if "n" in theirs else "a repeat of "
        reached = (f"{number}{theirs['kind']}({theirs['detail']}) of "
                   f"{theirs['dtype']}{theirs['shape']}")
    raise CollectiveMismatchError(f"rank {rank()}: {what()} here, but rank {peer} reached "
                                  f"{reached}")


def _after_sends(number: int, nbytes: int) -> None:
    """A seam for fault-injection tests (a process dying inside a
    collective, its sends under way); does nothing."""


def _as_buffer_out(buf: np.ndarray) -> np.ndarray:
    """A contiguous array as a buffer MPI can send from or receive into."""
    native = _NATIVE.get(buf.dtype)
    if native is None:
        dtype = buf.dtype
        native = _NATIVE[dtype] = (dtype.char in _MPI_NATIVE and dtype.isbuiltin == 1
                                   and dtype.isnative)
    return buf if native else buf.reshape(-1).view(np.uint8)


_NATIVE: dict[np.dtype[Any], bool] = {}  # whether MPI takes a dtype's buffer as it is


# ================================================================ backend


# An all-reduce over more than two ranks of at least this many bytes per
# rank is a reduce-scatter and an all-gather (two rounds of messages, less
# data); a smaller one gathers every block (one round).
_SPLIT_MIN_BYTES = 1 << 16


def _keep_freed_memory() -> None:
    """Every collective's result is a fresh buffer; so that receiving 64 MB
    does not fault in 64 MB of new pages each time, ask glibc to serve large
    blocks from its heap and keep freed ones (Linux only; else nothing)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 1 << 30)
    mallopt(m_trim_threshold, (1 << 31) - 1)


def _my_group(geo: S.Geometry, axes: S.Axes) -> tuple[np.ndarray, int]:
    """The group of this rank's device along ``axes`` and its place in it."""
    (k,) = geo.local
    return geo.group_of(k, axes)


def _mine(bufs: S.Bufs, geo: S.Geometry) -> np.ndarray:
    """This rank's device's buffer."""
    (k,) = geo.local
    mine = bufs[k]
    assert mine is not None, "a value with no buffer on this rank"
    return mine


def _placed(value: np.ndarray, geo: S.Geometry) -> S.Bufs:
    """``value`` as this rank's device's buffer (``geo.place`` for one
    local device, without its set of the local devices)."""
    (k,) = geo.local
    return (None,) * k + (value,) + (None,) * (geo.n - k - 1)


@functools.lru_cache(maxsize=256)
def _members(geo: S.Geometry, axes: S.Axes) -> tuple[tuple[tuple[int, int], ...], int]:
    """The other ranks of this rank's device's group along ``axes``, each
    with its position in the group, and this device's position (computed
    once per mesh and axes)."""
    group, pos = _my_group(geo, axes)
    return tuple((geo.procs[k], i) for i, k in enumerate(group.tolist()) if i != pos), pos


@functools.lru_cache(maxsize=256)
def _route(geo: S.Geometry, axes: S.Axes, perm: tuple[tuple[int, int], ...]
           ) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """The ranks this rank's device sends its block to and receives blocks
    from in a ppermute over ``axes``, and the collective's detail (computed
    once per mesh, axes and permutation)."""
    group, pos = _my_group(geo, axes)
    procs = [geo.procs[k] for k in group.tolist()]
    return (tuple(procs[d] for s, d in perm if s == pos),
            tuple(procs[s] for s, d in perm if d == pos), _detail(axes))


@functools.lru_cache(maxsize=256)
def _detail(axes: S.Axes, extra: str = "") -> str:
    return ",".join(map(str, axes)) + extra


@functools.cache
def _rank_devices(n: int) -> tuple[Device, ...]:
    return tuple(Device(r, process_index=r) for r in range(n))


class MPIBackend:
    """One device per rank (device r is rank r's): a collective exchanges
    this rank's block with its group's ranks, then combines in position
    order."""

    name = "mpi"
    local = VirtualBackend()  # for meshes whose devices all live here

    def __init__(self) -> None:
        _keep_freed_memory()

    def devices(self) -> list[Any]:
        return list(_rank_devices(size()))

    def local_devices(self, process_index: int | None) -> list[Any]:
        which = rank() if process_index is None else int(process_index)
        return [d for d in self.devices() if d.process_index == which]

    def process_index(self) -> int:
        return rank()

    def process_count(self) -> int:
        return size()

    def check_mesh_devices(self, sizes: tuple[int, ...], count: int,
                           devices: Sequence[Any]) -> None:
        """Every rank must hold one device of a mesh: a rank outside it
        would have nothing to run and its peers would wait for it."""
        if count != len(devices):
            raise ValueError(f"rank {rank()}: a mesh of shape {sizes} has {count} "
                             f"devices, but {len(devices)} MPI ranks run this program: each "
                             "rank is one device, so the mesh must have exactly that many")

    def agree(self, what: str, value: Any, procs: Sequence[int]) -> None:
        agree(what, value, procs)

    def all_gather(self, bufs: S.Bufs, axes: S.Axes, dim: int, geo: S.Geometry) -> S.Bufs:
        if geo.all_local:
            return self.local.all_gather(bufs, axes, dim, geo)
        # The blocks land in one stacked buffer: when the dimensions before
        # ``dim`` are all of size 1 it is already the concatenation.
        members, pos = _members(geo, tuple(axes))
        mine = _mine(bufs, geo)
        stacked = np.empty((len(members) + 1, *mine.shape), mine.dtype)
        peers = {r: stacked[i] for r, i in members}

        def copy_mine() -> None:  # while the peers' blocks move
            stacked[pos] = mine
        exchange(mine, list(peers), list(peers), "all_gather", _detail(axes, f";dim={dim}"),
                 into=peers, meanwhile=copy_mine)
        shape = mine.shape
        if not shape:
            whole = stacked
        elif all(d == 1 for d in shape[:dim]):
            whole = stacked.reshape((*shape[:dim], len(stacked) * shape[dim], *shape[dim + 1:]))
        else:
            whole = np.concatenate(list(stacked), axis=dim)
        return _placed(whole, geo)

    def all_reduce(self, bufs: S.Bufs, axes: S.Axes, op: str, geo: S.Geometry) -> S.Bufs:
        if geo.all_local:
            return self.local.all_reduce(bufs, axes, op, geo)
        group, pos = _my_group(geo, axes)
        if len(group) > 2 and _mine(bufs, geo).nbytes >= _SPLIT_MIN_BYTES:
            return _placed(self._split_all_reduce(_mine(bufs, geo), group, pos, axes, op, geo),
                           geo)
        blocks = self._group_blocks(bufs, axes, geo, "all_reduce", f";op={op}")
        if len(blocks) == 1:
            return _placed(blocks[0], geo)
        # The blocks combine in position order, into the first received one
        # (private to this collective, and read before it is written).
        scratch = blocks[1 if pos == 0 else 0]
        acc = blocks[0]
        for b in blocks[1:]:
            acc = S.combine(op, acc, b, out=scratch)
        return _placed(acc, geo)

    def ppermute(self, bufs: S.Bufs, axes: S.Axes, perm: Sequence[tuple[int, int]],
                 geo: S.Geometry) -> S.Bufs:
        if geo.all_local:
            return self.local.ppermute(bufs, axes, perm, geo)
        mine = _mine(bufs, geo)
        send_to, recv_from, detail = _route(geo, tuple(axes), tuple(perm))
        got = exchange(mine, send_to, recv_from, "ppermute", detail)
        out = got[recv_from[0]] if recv_from else np.zeros_like(mine)
        return _placed(out, geo)

    def _split_all_reduce(self, mine: np.ndarray, group: np.ndarray, pos: int, axes: S.Axes,
                          op: str, geo: S.Geometry) -> np.ndarray:
        """An all-reduce of a large block over more than two ranks as a
        reduce-scatter and an all-gather: the flat block cut into one part
        per member, member i combining everyone's part i in position order
        (each element combined in the virtual backend's order, so the values
        are bitwise the same), then the combined parts gathered. Each rank
        sends and receives 2 (g - 1) / g blocks rather than g - 1, and
        combines 1 / g of the block."""
        g = len(group)
        flat = np.ascontiguousarray(mine).reshape(-1)
        width = -(-flat.size // g)
        if flat.size != g * width:  # the last part padded (its padding is dropped)
            flat = np.concatenate([flat, np.zeros(g * width - flat.size, flat.dtype)])
        parts = flat.reshape(g, width)
        member = {geo.procs[int(k)]: i for i, k in enumerate(group) if i != pos}
        peers = list(member)
        detail = _detail(axes, f";op={op}")
        part_of = (f"all_reduce({detail}) of {mine.dtype}{list(mine.shape)}", mine.nbytes)
        theirs = np.empty_like(parts)
        exchange(parts[pos], peers, peers, "all_reduce", detail + ";scatter",
                 into={p: theirs[i] for p, i in member.items()},
                 blocks={p: parts[i] for p, i in member.items()}, part_of=part_of)
        whole = np.empty_like(parts)
        acc = whole[pos]
        operands = [parts[pos] if i == pos else theirs[i] for i in range(g)]
        S.combine(op, operands[0], operands[1], out=acc)
        for b in operands[2:]:
            S.combine(op, acc, b, out=acc)
        exchange(acc, peers, peers, "all_reduce", detail + ";gather",
                 into={p: whole[i] for p, i in member.items()}, part_of=part_of)
        return whole.reshape(-1)[:mine.size].reshape(mine.shape)

    def _group_blocks(self, bufs: S.Bufs, axes: S.Axes, geo: S.Geometry, kind: str,
                      extra: str) -> list[np.ndarray]:
        group, pos = _my_group(geo, axes)
        mine = _mine(bufs, geo)
        peers = [geo.procs[int(k)] for i, k in enumerate(group) if i != pos]
        got = exchange(mine, peers, peers, kind, _detail(axes, extra))
        return [mine if i == pos else got[geo.procs[int(k)]] for i, k in enumerate(group)]


# =========================================================== live processes

_BARRIER_TAG = 32002
_REPLY_TAG = 32003


def live_processes(procs: Sequence[int]) -> list[int]:
    """The processes among ``procs`` that are alive, the same list returned
    to each of them: a barrier among the live ones, run by a coordinator
    (the lowest of ``procs``; its death ends the job). Everyone sends its
    arrival; the coordinator waits for each process to arrive or be seen
    dead (or the deadline, after which it counts as dead), then sends the
    live list to the arrived. When the list changed, the survivors make a
    new data communicator among themselves."""
    c = _comms()
    c.epoch += 1
    procs = sorted(set(int(p) for p in procs))
    coordinator = procs[0]
    if c.rank == coordinator:
        live = _coordinate([p for p in procs if p != c.rank and p not in c.dead])
    else:
        live = _arrive(coordinator)
    _reported_failure()  # drop the notices of the epoch that ended
    c.dead.update(p for p in procs if p not in live)
    if live != [w for w in c.members if w in procs] or len(live) != len(c.members):
        c.rebuild(live)
    else:
        c.forget_descriptions(live)
    return live


def _coordinate(expected: list[int]) -> list[int]:
    c = _comms()
    tag = _BARRIER_TAG
    arrivals = {p: np.zeros(1, np.int64) for p in expected}
    requests = {p: c.ctrl.Irecv(arrivals[p], source=p, tag=tag) for p in expected}
    deadline = time.monotonic() + timeout()
    arrived: set[int] = set()
    gone: set[int] = set()
    while len(arrived) + len(gone) < len(expected):
        for p in expected:
            if p in arrived or p in gone:
                continue
            if requests[p].Test():
                if int(arrivals[p][0]) == c.epoch:
                    arrived.add(p)
                else:  # a stale arrival from an epoch this process left early: wait on
                    requests[p] = c.ctrl.Irecv(arrivals[p], source=p, tag=tag)
            elif not alive(p) or time.monotonic() > deadline:
                gone.add(p)
        time.sleep(1e-4)
    _abandon([requests[p] for p in gone])  # 8-byte arrivals: eager, safe to cancel
    live = sorted(arrived | {c.rank})
    reply = np.full(len(c.pids) + 1, -1, np.int64)
    reply[0] = c.epoch
    reply[1:1 + len(live)] = live
    c.pending.extend(c.ctrl.Isend(reply, dest=p, tag=_REPLY_TAG) for p in arrived)
    return live


def _arrive(coordinator: int) -> list[int]:
    c = _comms()
    c.pending.append(c.ctrl.Isend(np.array([c.epoch], np.int64), dest=coordinator,
                                  tag=_BARRIER_TAG))
    reply = np.empty(len(c.pids) + 1, np.int64)
    request = c.ctrl.Irecv(reply, source=coordinator, tag=_REPLY_TAG)
    deadline = time.monotonic() + 2 * timeout()
    while not request.Test():
        if not alive(coordinator) or time.monotonic() > deadline:
            # Without its coordinator no process can agree on anything.
            print(f"rank {c.rank}: process {coordinator}, the coordinator of live_devices, "
                  "failed: the job ends", file=sys.stderr, flush=True)
            c.dead.add(coordinator)
            os._exit(1)
        time.sleep(1e-4)
    return [int(p) for p in reply[1:] if p >= 0]


def _others(procs: Sequence[int] | None) -> list[int]:
    """The other live processes (of ``procs``, when given)."""
    c = _comms()
    return [r for r in (c.members if procs is None else procs) if r != c.rank]


def agree(what: str, value: Any, procs: Sequence[int] | None = None) -> None:
    """Check that every rank (of ``procs``, default all live ones) passes
    the same ``value`` (a JSON-able description) at this point; raise
    ValueError naming the ranks that differ."""
    if not active():
        return
    me = rank()
    others = _others(procs)
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
    """Every live rank's block (all of the same type), in rank order."""
    me = rank()
    others = _others(None)
    got = exchange(block, others, others, "process_allgather", what)
    return [block if r == me else got[r] for r in sorted([me, *others])]


def barrier(name: str) -> None:
    """All ranks meet here (with a deadline)."""
    others = _others(None)
    exchange(np.zeros(1, np.uint8), others, others, "barrier", name)


__all__ = ["CollectiveFailedError", "CollectiveMismatchError", "CollectiveTimeoutError",
           "MPIBackend", "active", "agree", "alive", "allgather_blocks", "barrier",
           "collectives_run", "exchange", "live_processes", "rank", "size", "timeout", "world"]
