"""MPI ranks as devices (SPEC.md section 14.5): the mesh programs of the
conformance corpus run on N ranks (one device each) give every device's
block bit for bit as the in-process virtual backend with N devices, and
the same collective ledger on every rank; the multi-process API and the
errors for bad input, on every rank."""

from __future__ import annotations

from typing import Any

import pytest

import spec
import spec.numpy as snp
from conformance.mesh_programs import PROGRAMS, run_all
from tests.support.mpiexec import launch
from tests.support.twin import on_virtual_devices


def _virtual(n: int) -> dict[str, Any]:
    result: dict[str, Any] = on_virtual_devices(n, lambda: run_all(spec, snp, n))
    return result


def _by_device(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(shards, key=lambda s: s["device"])


@pytest.mark.parametrize("n", [2, 4])
def test_corpus_on_ranks_equals_virtual_devices(n: int) -> None:
    ranks, _ = launch(n, "corpus", timeout=240)
    virtual = _virtual(n)
    assert all(r["backend"] == "mpi" for r in ranks)
    assert [r["devices"] for r in ranks] == [[k] for k in range(n)]
    assert all(r["large all_reduce"] == {"sum": True, "max": True} for r in ranks)
    assert all(r["gather layouts"] and all(r["gather layouts"].values()) for r in ranks)
    for name in PROGRAMS:
        want = virtual[name]
        assert "error" not in want, (name, want)
        for r, res in enumerate(ranks):
            got = res["programs"][name]
            assert "error" not in got, (name, r, got)
            assert got["types"] == want["types"], (name, r)
            assert got["ledger"] == want["ledger"], (name, r)  # per rank, all agree
            for leaf, (mine, every) in enumerate(zip(got["shards"], want["shards"])):
                # each rank holds exactly its own device's block, bitwise (an
                # array on no mesh: the whole value, on every rank)
                mine_too = [s for s in every if s["device"] in (r, -1)]
                assert mine == mine_too, (name, leaf, r)
        for leaf, every in enumerate(want["shards"]):
            if every[0]["device"] == -1:
                continue
            held = [s for res in ranks for s in res["programs"][name]["shards"][leaf]]
            assert _by_device(held) == _by_device(every), (name, leaf)


def test_ragged_all_to_all_on_ranks_equals_virtual_devices() -> None:
    """The exchange and its transpose on 2 ranks: each rank holds its own
    device's blocks as on 2 virtual devices, bit for bit, and the ledgers
    agree (the exchange and the transpose's all_to_alls)."""
    from tests.support.mpi_worker import ragged
    ranks, _ = launch(2, "ragged", timeout=120)
    virtual: dict[str, Any] = on_virtual_devices(2, lambda: ragged(2))
    assert any(e[0] == "all_to_all" for e in virtual["ledger"])
    for r, res in enumerate(ranks):
        assert res["devices"] == [r]
        assert res["ledger"] == virtual["ledger"]
        assert len(res["shards"]) == len(virtual["shards"]) == 3
        for mine, every in zip(res["shards"], virtual["shards"]):
            assert len(mine) == 1 and mine == [s for s in every if s["device"] == r]


def test_corpus_is_not_trivial() -> None:
    """The corpus exercises every kind of collective."""
    virtual = _virtual(4)
    kinds = {e[0] for res in virtual.values() for e in res["ledger"]}
    assert kinds == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "ppermute"}


def test_multiprocess_api_and_bad_input() -> None:
    ranks, _ = launch(2, "api", timeout=120, mpi_timeout=5)
    whole = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    for r, res in enumerate(ranks):
        assert (res["rank"], res["count"]) == (r, 2)
        assert res["devices"] == [0, 1] and res["local"] == [r]
        assert res["callback calls"] == 1  # only for this rank's device
        assert res["repr"] == "Array(shape=(8,), dtype=float32)"  # as JAX: not addressable
        assert res["str"] == res["repr"]
        assert res["value error"].startswith(
            "RuntimeError: Fetching value for `jax.Array` that spans non-addressable")
        assert res["allgather"] == whole
        assert res["allgather local"] == [0.0, 1.0]
        assert res["allgather tiled"] == [0.0, 0.0, 1.0, 1.0]
        assert res["local data"] == whole and res["local shape"] == [8]
        assert res["replicated value"] == sum(whole)
        assert res["mesh mismatch"].startswith(f"ValueError: rank {r}: a mesh of shape (3,)")
        assert res["mesh too small"].startswith(f"ValueError: rank {r}: a mesh of shape (1,)")
        other = 1 - r
        assert res["shape mismatch"].startswith(f"ValueError: rank {r}: make_array_from_callback")
        assert f"rank {other}" in res["shape mismatch"]
    # collectives repeated without their headers, then differing
    for r, res in enumerate(ranks):
        assert res["repeated values"] == res["repeated expected"]
        assert res["after live_devices"] == sum(whole)
        mine, theirs = ("sum", "max") if r == 0 else ("max", "sum")
        assert res["both repeat, differently"].startswith(f"CollectiveMismatchError: rank {r}:")
        assert (f"all_reduce(x;op={mine}) of float32[] here, but rank {1 - r} reached a "
                f"repeat of all_reduce(x;op={theirs}) of float32[]") in \
            res["both repeat, differently"]
    assert ("all_reduce(x;op=sum) of float32[] here, but rank 1 reached collective #"
            in ranks[0]["repeat against new"])
    assert "all_reduce(x;op=min) of float32[]" in ranks[0]["repeat against new"]
    assert ("all_reduce(x;op=min) of float32[] here, but rank 0 reached a repeat of "
            "all_reduce(x;op=sum) of float32[]") in ranks[1]["repeat against new"]
    # a collective reached by one rank only: both name the other
    assert ranks[0]["skipped collective"].startswith(
        "CollectiveMismatchError: rank 0: collective #")
    assert "all_reduce(x;op=sum) of float32[] here, but rank 1 reached" in \
        ranks[0]["skipped collective"]
    assert ranks[1]["skipped collective"].startswith("CollectiveMismatchError: rank 1:")
    assert "barrier(after) of uint8[1] here, but rank 0 reached" in \
        ranks[1]["skipped collective"]


def test_collective_no_peer_reaches_times_out() -> None:
    ranks, _ = launch(2, "timeout", timeout=60, mpi_timeout=2)
    assert ranks[0]["error"].startswith("CollectiveTimeoutError: rank 0: collective #")
    assert "rank(s) [1] did not join within 2 s" in ranks[0]["error"]
    assert 2 <= ranks[0]["waited"] < 10
