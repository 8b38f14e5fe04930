"""The order in which jnp.einsum contracts its operands, found as JAX finds
it: JAX hands the subscripts to opt_einsum (3.4), whose path searches are
specified here by what they compute.

Every search works on the operands' label sets (``frozenset`` of labels),
the result's labels and each label's size, and returns a path in
single-assignment form: a list of pairs of ids, the operands being ids
``0..n-1`` and each contraction's result the next id. ``linear_path``
turns it into the positions ``einsum`` pops from its shrinking list of
operands.

Costs. Contracting two label sets ``a`` and ``b`` keeps the labels of
``a | b`` that the result or another remaining operand has; it costs
``prod(size of a | b) * (1 + 1 if a label of a & b is summed away)``
flops, and its result has ``prod(size of its labels)`` elements.

The strategies (the ``optimize`` strings JAX accepts):

- ``optimal``: depth first over every order of pairwise contractions, a
  branch dropped once its flops reach the best complete order's; the first
  order found among equal costs.
- ``branch-all``, ``branch-2``, ``branch-1``: the same depth-first search
  over at most 1, 2 or all candidate pairs per step, candidates taken by the
  fewest elements added (result size less the two operands' sizes); pairs
  sharing no label are candidates only when no other pair is; a candidate
  that is no better (flops, then largest intermediate) than the best order
  found, or over 4 times the flops of the best partial order of its depth,
  is dropped.
- ``greedy`` (also ``eager``, ``opportunistic``): operands with equal label
  sets multiplied first; then, of the pairs sharing a summed label, the one
  adding the fewest elements, repeatedly (ties: the pair of the lowest
  later id, then the lowest earlier one); then the outer products, smallest
  first.
- ``auto``: ``optimal`` up to 4 operands, ``branch-all`` for 5 and 6,
  ``branch-2`` for 7 and 8, ``branch-1`` up to 14, ``greedy`` above.

The searches iterate over Python sets of ids built as opt_einsum builds
them, so equal-cost orders are broken as opt_einsum breaks them.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence

Labels = frozenset[str]
SsaPath = list[tuple[int, ...]]
Sizes = dict[str, int]


def size_of(labels: Labels, sizes: Sizes) -> int:
    return math.prod(sizes[c] for c in labels)


def flop_count(labels: Labels, inner: bool, terms: int, sizes: Sizes) -> int:
    """The flops of a contraction over ``labels`` of ``terms`` operands
    (one multiply per extra operand, one add where a label is summed)."""
    return size_of(labels, sizes) * (max(1, terms - 1) + int(inner))


def _pair(inputs: tuple[Labels, ...], output: Labels, remaining: set[int], i: int, j: int,
          sizes: Sizes) -> tuple[Labels, int]:
    """The labels kept by contracting ``inputs[i]`` with ``inputs[j]``, and
    its flops."""
    either, shared = inputs[i] | inputs[j], inputs[i] & inputs[j]
    keep = frozenset.union(output, *(inputs[k] for k in remaining - {i, j}))
    return either & keep, flop_count(either, bool(shared - keep), 2, sizes)


# --------------------------------------------------------------- optimal

def optimal(inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> SsaPath:
    best_flops: list[float] = [math.inf]
    best_path: list[tuple[tuple[int, ...], ...]] = [(tuple(range(len(inputs))),)]
    # A pair's result is computed once per pair of label sets (with the
    # operands remaining when first met, as opt_einsum caches it).
    cache: dict[tuple[Labels, Labels], tuple[Labels, int]] = {}

    def search(path: tuple[tuple[int, ...], ...], remaining: set[int],
               terms: tuple[Labels, ...], flops: int) -> None:
        if len(remaining) == 1:
            best_flops[0], best_path[0] = flops, path
            return
        for i, j in itertools.combinations(remaining, 2):
            i, j = min(i, j), max(i, j)
            key = (terms[i], terms[j])
            if key not in cache:
                cache[key] = _pair(terms, output, remaining, i, j, sizes)
            k12, cost = cache[key]
            if flops + cost >= best_flops[0]:
                continue
            search(path + ((i, j),), remaining - {i, j} | {len(terms)}, terms + (k12,),
                   flops + cost)

    search((), set(range(len(inputs))), tuple(inputs), 0)
    return list(best_path[0])


# -------------------------------------------------------- branch and bound

class _Branch:
    """One branch-and-bound search (its bests persist across the search)."""

    cutoff_factor = 4

    def __init__(self, inputs: Sequence[Labels], output: Labels, sizes: Sizes,
                 nbranch: int | None) -> None:
        self.output, self.sizes, self.nbranch = output, sizes, nbranch
        self.best_flops: float = math.inf
        self.best_size: float = math.inf
        self.best_path: tuple[tuple[int, ...], ...] = ()
        # The fewest flops of a partial order, by the number of ids so far.
        self.progress: defaultdict[int, float] = defaultdict(lambda: math.inf)
        self.cache: dict[tuple[Labels, Labels], tuple[Labels, int]] = {}
        self.size_cache = {k: size_of(k, sizes) for k in inputs}
        self.search((), tuple(inputs), set(range(len(inputs))), 0, 0)

    def candidate(self, terms: tuple[Labels, ...], remaining: set[int], flops: int,
                  size: int, i: int, j: int) -> tuple[int, int, int, int, tuple[int, int],
                                                      Labels] | None:
        key = (terms[i], terms[j])
        if key not in self.cache:
            self.cache[key] = _pair(terms, self.output, remaining, i, j, self.sizes)
        k12, flops12 = self.cache[key]
        if k12 not in self.size_cache:
            self.size_cache[k12] = size_of(k12, self.sizes)
        size12 = self.size_cache[k12]
        new_flops, new_size = flops + flops12, max(size, size12)
        if not (new_flops, new_size) < (self.best_flops, self.best_size):
            return None
        depth = len(terms)
        if new_flops < self.progress[depth]:
            self.progress[depth] = new_flops
        elif new_flops > self.cutoff_factor * self.progress[depth]:
            return None
        added = size12 - self.size_cache[terms[i]] - self.size_cache[terms[j]]
        return added, flops12, new_flops, new_size, (i, j), k12

    def search(self, path: tuple[tuple[int, ...], ...], terms: tuple[Labels, ...],
               remaining: set[int], flops: int, size: int) -> None:
        if len(remaining) == 1:
            self.best_size, self.best_flops, self.best_path = size, flops, path
            return
        queue: list[tuple[int, int, int, int, tuple[int, int], Labels]] = []
        for outer in (False, True):
            for i, j in itertools.combinations(remaining, 2):
                i, j = min(i, j), max(i, j)
                if not outer and terms[i].isdisjoint(terms[j]):
                    continue  # outer products only when nothing else is left
                c = self.candidate(terms, remaining, flops, size, i, j)
                if c is not None:
                    heapq.heappush(queue, c)
            if queue:
                break
        taken = 0
        while (self.nbranch is None or taken < self.nbranch) and queue:
            _, _, new_flops, new_size, (i, j), k12 = heapq.heappop(queue)
            self.search(path + ((i, j),), terms + (k12,), (remaining - {i, j}) | {len(terms)},
                        new_flops, new_size)
            taken += 1


def branch(nbranch: int | None) -> Callable[[Sequence[Labels], Labels, Sizes], SsaPath]:
    def search(inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> SsaPath:
        return list(_Branch(inputs, output, sizes, nbranch).best_path)
    return search


# ---------------------------------------------------------------- greedy

_Candidate = tuple[tuple[int, int, int], Labels, Labels, Labels]


class _Greedy:
    """The greedy search's state: the remaining label sets and their ids,
    which non-result labels each is read by, and the labels read by at
    least two (``shared[2]``) and three (``shared[3]``) of them."""

    def __init__(self, inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> None:
        # A label every operand has is summed last at the earliest: kept.
        self.output = output | frozenset.intersection(*inputs)
        self.sizes = sizes
        self.ids = itertools.count(len(inputs))
        self.path: SsaPath = []
        self.remaining: dict[Labels, int] = {}
        for i, key in enumerate(inputs):
            if key in self.remaining:  # equal label sets: multiplied now
                self.path.append((self.remaining[key], i))
                self.remaining[key] = next(self.ids)
            else:
                self.remaining[key] = i
        self.readers: defaultdict[str, set[Labels]] = defaultdict(set)
        for key in self.remaining:
            for c in key - self.output:
                self.readers[c].add(key)
        self.shared = {n: {c for c, keys in self.readers.items() if len(keys) >= n}
                       - self.output for n in (2, 3)}
        self.footprint = {key: size_of(key, sizes) for key in self.remaining}

    def candidate(self, k1: Labels, k2: Labels) -> _Candidate:
        either, both = k1 | k2, k1 & k2
        one = either - both
        k12 = (either & self.output) | (both & self.shared[3]) | (one & self.shared[2])
        added = size_of(k12, self.sizes) - self.footprint[k1] - self.footprint[k2]
        id1, id2 = self.remaining[k1], self.remaining[k2]
        if id1 > id2:
            k1, id1, k2, id2 = k2, id2, k1, id1
        return (added, id2, id1), k1, k2, k12

    def recount(self, labels: Labels) -> None:
        for c in labels:
            n = len(self.readers[c])
            for at_least in (2, 3):
                if n >= at_least:
                    self.shared[at_least].add(c)
                else:
                    self.shared[at_least].discard(c)

    def contract(self, k1: Labels, k2: Labels, k12: Labels) -> None:
        id1, id2 = self.remaining.pop(k1), self.remaining.pop(k2)
        for key in (k1, k2):
            for c in key - self.output:
                self.readers[c].remove(key)
        self.path.append((id1, id2))
        if k12 in self.remaining:  # equal to a remaining set: multiplied now
            self.path.append((self.remaining[k12], next(self.ids)))
        else:
            for c in k12 - self.output:
                self.readers[c].add(k12)
        self.remaining[k12] = next(self.ids)
        # (k1 with k2's non-result labels: opt_einsum's operator precedence.)
        self.recount(k1 | (k2 - self.output))
        self.footprint[k12] = size_of(k12, self.sizes)

    def run(self) -> SsaPath:
        queue: list[_Candidate] = []
        for keys in list(self.readers.values()):
            ordered = sorted(keys, key=self.remaining.__getitem__)
            for i, k1 in enumerate(ordered[:-1]):
                heapq.heappush(queue, min(self.candidate(k1, k2) for k2 in ordered[i + 1:]))
        while queue:
            _, k1, k2, k12 = heapq.heappop(queue)
            if k1 not in self.remaining or k2 not in self.remaining:
                continue  # an operand already contracted
            self.contract(k1, k2, k12)
            partners = {k for c in k12 for k in self.readers[c]} - {k12}
            if partners:
                heapq.heappush(queue, min(self.candidate(k12, k) for k in partners))
        return self.outer_products()

    def outer_products(self) -> SsaPath:
        heap = [(size_of(key & self.output, self.sizes), i, key)
                for key, i in self.remaining.items()]
        heapq.heapify(heap)
        _, id1, k1 = heapq.heappop(heap)
        while heap:
            _, id2, k2 = heapq.heappop(heap)
            self.path.append((min(id1, id2), max(id1, id2)))
            k12 = (k1 | k2) & self.output
            _, id1, k1 = heapq.heappushpop(heap, (size_of(k12, self.sizes), next(self.ids),
                                                  k12))
        return self.path


def greedy(inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> SsaPath:
    if len(inputs) == 1:
        return [(0,)]
    return _Greedy(inputs, output, sizes).run()


# ---------------------------------------------------------------- choices

def auto(inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> SsaPath:
    n = len(inputs)
    if n <= 4:
        return optimal(inputs, output, sizes)
    if n <= 6:
        return branch(None)(inputs, output, sizes)
    if n <= 8:
        return branch(2)(inputs, output, sizes)
    if n <= 14:
        return branch(1)(inputs, output, sizes)
    return greedy(inputs, output, sizes)


STRATEGIES: dict[str, Callable[[Sequence[Labels], Labels, Sizes], SsaPath]] = {
    "auto": auto, "optimal": optimal, "branch-all": branch(None), "branch-2": branch(2),
    "branch-1": branch(1), "greedy": greedy, "eager": greedy, "opportunistic": greedy,
}


def linear_path(ssa_path: Sequence[tuple[int, ...]], n: int) -> list[tuple[int, ...]]:
    """Single-assignment ids as positions in the shrinking list of ``n``
    operands (each step's positions ascending; its result appended)."""
    ids, path, ssa = list(range(n)), [], n
    for step in ssa_path:
        positions = sorted(bisect.bisect_left(ids, i) for i in step)
        for k in reversed(positions):
            ids.pop(k)
        ids.append(ssa)
        path.append(tuple(positions))
        ssa += 1
    return path


def contraction_path(strategy: str, names: Sequence[str], result: str, sizes: Sizes
                     ) -> list[tuple[int, ...]]:
    """The positions path of ``strategy`` (a key of STRATEGIES, any case)
    for operands labelled ``names``."""
    search = STRATEGIES.get(strategy.lower())
    if search is None:
        raise KeyError(f"Path optimizer '{strategy.lower()}' not found, valid options are "
                       f"{set(STRATEGIES) | {'auto-hq', 'dp', 'dynamic-programming'}}.")
    inputs = [frozenset(n) for n in names]
    return linear_path(search(inputs, frozenset(result), sizes), len(names))
