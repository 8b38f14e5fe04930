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
- ``dp`` (also ``dynamic-programming``): labels read by one operand alone
  summed away first; then, per group of operands connected by summed
  labels, the fewest flops over every tree of pairwise contractions that
  each share a summed label (subsets of operands combined smallest first,
  under a flops cap raised until the group is reached); the groups' results
  multiplied smallest first.
- ``random-greedy`` (32 searches), ``random-greedy-128``: the best (flops,
  then largest intermediate) of greedy searches whose pair costs are
  jittered, each drawing from ``random.Random`` seeded with its number; from
  the second on, each contraction is drawn among the 8 best candidates.
- ``auto``: ``optimal`` up to 4 operands, ``branch-all`` for 5 and 6,
  ``branch-2`` for 7 and 8, ``branch-1`` up to 14, ``greedy`` above.
- ``auto-hq``: ``optimal`` up to 5 operands, ``dp`` up to 16,
  ``random-greedy-128`` above.

The searches iterate over Python sets of ids built as opt_einsum builds
them, so equal-cost orders are broken as opt_einsum breaks them.
"""

from __future__ import annotations

import bisect
from decimal import Decimal
import collections
import heapq
import itertools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

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

_Candidate = tuple[tuple[float, int, int], Labels, Labels, Labels]


class _Greedy:
    """The greedy search's state: the remaining label sets and their ids,
    which non-result labels each is read by, and the labels read by at
    least two (``shared[2]``) and three (``shared[3]``) of them."""

    def __init__(self, inputs: Sequence[Labels], output: Labels, sizes: Sizes,
                 rng: random.Random | None = None, choose: bool = False) -> None:
        # With ``rng``, each pair's elements added are scaled by a draw of
        # N(1, 0.01); with ``choose``, every candidate is queued and
        # ``_choose`` draws one of the best few.
        self.rng, self.choose = rng, choose
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
        added: float = size_of(k12, self.sizes) - self.footprint[k1] - self.footprint[k2]
        if self.rng is not None:
            added = self.rng.gauss(1.0, 0.01) * added
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

    def push(self, queue: list[_Candidate], k1: Labels, k2s: Iterable[Labels]) -> None:
        candidates = (self.candidate(k1, k2) for k2 in k2s)
        if self.choose:
            for c in candidates:
                heapq.heappush(queue, c)
        else:
            heapq.heappush(queue, min(candidates))

    def pop(self, queue: list[_Candidate]) -> _Candidate | None:
        """The next contraction (None: the one popped is obsolete)."""
        if self.choose:
            return self._choose(queue)
        c = heapq.heappop(queue)
        return c if c[1] in self.remaining and c[2] in self.remaining else None

    def _choose(self, queue: list[_Candidate], nbranch: int = 8) -> _Candidate | None:
        """One of the ``nbranch`` best live candidates, drawn with weight
        ``exp(-(cost - best) / max(1, |best|))``; the others queued again."""
        choices: list[_Candidate] = []
        while queue and len(choices) < nbranch:
            c = heapq.heappop(queue)
            if c[1] in self.remaining and c[2] in self.remaining:
                choices.append(c)
        if len(choices) <= 1:
            return choices[0] if choices else None
        assert self.rng is not None
        best = choices[0][0][0]
        scale = max(1.0, abs(best))
        weights = [math.exp(-(c[0][0] - best) / scale) for c in choices]
        (k,) = self.rng.choices(range(len(choices)), weights=weights)
        chosen = choices.pop(k)
        for c in choices:
            heapq.heappush(queue, c)
        return chosen

    def run(self) -> SsaPath:
        queue: list[_Candidate] = []
        for keys in list(self.readers.values()):
            ordered = sorted(keys, key=self.remaining.__getitem__)
            for i, k1 in enumerate(ordered[:-1]):
                self.push(queue, k1, ordered[i + 1:])
        while queue:
            chosen = self.pop(queue)
            if chosen is None:
                continue  # an operand already contracted
            _, k1, k2, k12 = chosen
            self.contract(k1, k2, k12)
            # (a set built and iterated as opt_einsum's: the jitter's draws
            # follow its order)
            partners = {k for c in k12 for k in self.readers[c]}
            partners.discard(k12)
            if partners:
                self.push(queue, k12, list(partners))
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


def _cost(path: SsaPath, inputs: Sequence[Labels], output: Labels, sizes: Sizes
          ) -> tuple[int, int]:
    """The flops and the largest intermediate of a pairwise ``path``."""
    terms, remaining = tuple(inputs), set(range(len(inputs)))
    flops = largest = 0
    for i, j in path:
        k12, cost = _pair(terms, output, remaining, i, j, sizes)
        remaining -= {i, j}
        remaining.add(len(terms))
        terms += (k12,)
        flops += cost
        largest = max(largest, size_of(k12, sizes))
    return flops, largest


def random_greedy(inputs: Sequence[Labels], output: Labels, sizes: Sizes,
                  repeats: int = 128) -> SsaPath:
    """opt_einsum's ``random-greedy-128``: the fewest-flops (then smallest
    largest intermediate; the first found of equals) of ``repeats`` greedy
    searches, search ``r`` drawing from Python's ``random.Random(r)``: each
    pair's cost jittered, and from search 1 on a contraction drawn among the
    best few (``_Greedy._choose``)."""
    if len(inputs) == 1:
        return [(0,)]
    best: tuple[int, int] | None = None
    best_path: SsaPath = []
    for r in range(repeats):
        path = _Greedy(inputs, output, sizes, random.Random(r), choose=r > 0).run()
        cost = _cost(path, inputs, output, sizes)
        if best is None or cost < best:
            best, best_path = cost, path
    return best_path


# ------------------------------------------------------ dynamic programming

# A contraction tree: an operand's id (nothing to do), or a tuple of
# subtrees contracted together (one subtree: its own labels summed away).
Tree = int | tuple["Tree", ...]


def _members(bits: int, seq: Sequence[Labels]) -> list[Labels]:
    """The elements of ``seq`` at the positions of the 1 bits of ``bits``."""
    return [x for k, x in enumerate(seq) if bits >> k & 1]


def _components(inputs: Sequence[Labels], output: Labels) -> list[frozenset[int]]:
    """The operand positions grouped by the summed labels that connect them
    (the sets built, and so iterated, as opt_einsum builds them)."""
    summed = frozenset.union(*inputs) - output
    unused = set(range(len(inputs)))
    groups = []
    while unused:
        group: set[int] = set()
        stack = [unused.pop()]
        while stack:
            j = stack.pop()
            group.add(j)
            linked = summed & inputs[j]
            found = {k for k in unused if linked & inputs[k]}
            stack.extend(found)
            unused.difference_update(found)
        groups.append(frozenset(group))
    return groups


def _tree_path(tree: Tree, path: SsaPath, ids: itertools.count[int]) -> int:
    """Append ``tree``'s contractions to ``path`` (each subtree's, left to
    right, before its own) and return the id of its result."""
    if isinstance(tree, int):
        return tree
    path.append(tuple(_tree_path(t, path, ids) for t in tree))
    return next(ids)


def _best_tree(group: frozenset[int], inputs: Sequence[Labels], leaves: Sequence[Tree],
               output: Labels, sizes: Sizes) -> tuple[Labels, Tree]:
    """The fewest-flops tree contracting the operands ``group`` (positions in
    ``inputs``) pairwise, each pair sharing a summed label, and its labels.

    ``best[n]`` maps a subset of ``n`` operands (a bitmap) to its labels,
    flops and tree. Subsets are combined from two smaller disjoint ones
    (smaller size first; of equal sizes the lower bitmap first), each kept
    only while its flops stay within a cap, which starts at the size of the
    group's result labels and is multiplied by the group's smallest label
    size (at least 2) until the whole group is reached."""
    everyone = (1 << len(inputs)) - 1
    bitmap = 0
    for j in group:
        bitmap |= 1 << j
    best: list[dict[int, tuple[Labels, int, Tree]]] = [{} for _ in range(len(group) + 1)]
    best[1] = {1 << j: (inputs[j], 0, leaves[j]) for j in group}
    labels = frozenset.union(*_members(bitmap, inputs))
    cap = size_of(labels & output, sizes)
    growth = max(min(sizes[c] for c in labels), 2) if labels else 2
    while not best[-1]:
        for n in range(2, len(group) + 1):
            found = best[n]
            for m in range(1, n // 2 + 1):
                for s1, (i1, c1, t1) in best[m].items():
                    for s2, (i2, c2, t2) in best[n - m].items():
                        if s1 & s2 or (m == n - m and s1 >= s2):
                            continue
                        inner = (i1 & i2) - output
                        if not inner:
                            continue  # no outer products
                        either = i1 | i2
                        cost = c1 + c2 + size_of(either, sizes)
                        if cost > cap:
                            continue
                        s = s1 | s2
                        if s in found and cost >= found[s][1]:
                            continue
                        rest = _members(bitmap & (everyone ^ s), inputs)
                        elsewhere = frozenset.union(*rest) if rest else frozenset()
                        found[s] = (either - (inner - elsewhere), cost, (t1, t2))
        cap *= growth
    kept, _, tree = next(iter(best[-1].values()))
    return kept, tree


def dynamic_programming(inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> SsaPath:
    """opt_einsum's ``dp``: labels read by one operand alone summed away
    first (an operand left without labels set aside); then, for each group
    of operands connected by summed labels, the fewest-flops order of
    pairwise contractions sharing a summed label (``_best_tree``); then the
    groups' results and the set-aside operands multiplied left to right,
    ordered by size (stably)."""
    counts = collections.Counter(itertools.chain(*inputs, output))
    alone = frozenset(c for c, k in counts.items() if k == 1)
    parsed: list[Labels] = []
    leaves: list[Tree] = []
    trees: list[Tree] = []
    for j, labels in enumerate(inputs):
        kept = labels - alone
        if labels and not kept:
            trees.append((j,))
        else:
            parsed.append(kept)
            leaves.append((j,) if kept != labels else j)
    results = [1] * len(trees)
    if parsed:
        for group in _components(parsed, output):
            kept, tree = _best_tree(group, parsed, leaves, output, sizes)
            trees.append(tree)
            results.append(size_of(kept, sizes))
    order = sorted(range(len(trees)), key=results.__getitem__)
    tree = trees[order[0]]
    for k in order[1:]:
        tree = (tree, trees[k])
    path: SsaPath = []
    _tree_path(tree, path, itertools.count(len(inputs)))
    return path


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


def auto_hq(inputs: Sequence[Labels], output: Labels, sizes: Sizes) -> SsaPath:
    n = len(inputs)
    if n <= 5:
        return optimal(inputs, output, sizes)
    if n <= 16:
        return dynamic_programming(inputs, output, sizes)
    return random_greedy(inputs, output, sizes)


STRATEGIES: dict[str, Callable[[Sequence[Labels], Labels, Sizes], SsaPath]] = {
    "auto": auto, "optimal": optimal, "branch-all": branch(None), "branch-2": branch(2),
    "branch-1": branch(1), "greedy": greedy, "eager": greedy, "opportunistic": greedy,
    "auto-hq": auto_hq, "dp": dynamic_programming, "dynamic-programming": dynamic_programming,
    "random-greedy": lambda i, o, s: random_greedy(i, o, s, repeats=32),
    "random-greedy-128": random_greedy,
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
                       f"{set(STRATEGIES)}.")
    inputs = [frozenset(n) for n in names]
    return linear_path(search(inputs, frozenset(result), sizes), len(names))


# ---------------------------------------------------------------- report

def blas_kind(inputs: Sequence[str], result: Labels, removed: Labels,
              shapes: Sequence[tuple[int, ...]]) -> str | bool:
    """opt_einsum's label for a step's kind of BLAS call (False: none).

    Only two operands, no label twice in one operand or in all, none summed
    or collapsed in one operand alone, none summed where one side
    broadcasts. Then: nothing summed is an outer product; equal label
    strings a dot (equal sets in another order: a dot better done by
    einsum); the summed labels leading or trailing both operands a matrix
    product; one operand summed away entirely a matrix-vector product
    better done by einsum; otherwise a tensordot."""
    if len(inputs) != 2:
        return False
    left, right = inputs
    for c in set(left + right):
        nl, nr = left.count(c), right.count(c)
        if nl > 1 or nr > 1 or nl + nr > 2 or nl + nr - 1 == int(c in result):
            return False
    if any(shapes[0][left.find(c)] != shapes[1][right.find(c)] for c in removed):
        return False
    if not removed:
        return "OUTER/EINSUM"
    if left == right:
        return "DOT"
    if set(left) == set(right):
        return "DOT/EINSUM"
    r = len(removed)
    if {left[-r:], left[:r]} & {right[-r:], right[:r]}:
        return "GEMM"
    if not set(left) - removed or not set(right) - removed:
        return "GEMV/EINSUM"
    return "TDOT"


Step = tuple[tuple[int, ...], Labels, str, tuple[str, ...] | None, str | bool]


class PathInfo:
    """What ``einsum_path`` reports of a contraction along ``path`` (given
    as positions): opt_einsum's ``PathInfo`` attributes, printed as it
    prints them. A step's flops are the size of the labels it reads, times
    its operands less one (at least 1), plus one time if it sums a label
    away; its scaling is the number of labels it reads. The naive count is
    that of one step over every operand."""

    def __init__(self, names: Sequence[str], result: str, sizes: Sizes,
                 path: Sequence[Sequence[int]]) -> None:
        self.input_subscripts, self.output_subscript = ",".join(names), result
        self.path = path
        self.size_dict = sizes
        self.indices = frozenset("".join(names))
        self.eq = f"{self.input_subscripts}->{result}"
        self.shapes = [tuple(sizes[c] for c in n) for n in names]
        sets = [frozenset(n) for n in names]
        inner = sum(len(s) for s in sets) > len(self.indices)
        self.naive_cost = Decimal(flop_count(self.indices, inner, len(names), sizes))
        out = frozenset(result)
        terms, shapes = list(names), [tuple(sizes[c] for c in n) for n in names]
        self.contraction_list: list[Step] = []
        self.scale_list: list[int] = []
        self.size_list: list[int] = []
        flops = 0
        for k, step in enumerate(path):
            positions = tuple(sorted(step, reverse=True))
            read = frozenset.union(*(sets[i] for i in positions))
            for i in positions:
                sets.pop(i)
            kept = read & out.union(*sets)
            removed = read - kept
            sets.append(kept)
            flops += flop_count(read, bool(removed), len(positions), sizes)
            self.scale_list.append(len(read))
            self.size_list.append(size_of(kept, sizes))
            xs = [terms.pop(i) for i in positions]
            xshapes = [shapes.pop(i) for i in positions]
            blas = blas_kind(xs, kept, removed, xshapes)
            if k == len(path) - 1:
                labels = result
            else:
                joined = "".join(xs)
                labels = "".join(sorted(kept, key=joined.find))
            terms.append(labels)
            shapes.append(tuple(max(sh[x.find(c)] for sh, x in zip(xshapes, xs) if c in x)
                                for c in labels))
            remaining = tuple(terms) if len(terms) <= 20 else None
            self.contraction_list.append((positions, removed, ",".join(xs) + "->" + labels,
                                          remaining, blas))
        self.opt_cost = Decimal(flops)
        self.speedup = self.naive_cost / max(self.opt_cost, Decimal(1))
        self.largest_intermediate = Decimal(max(self.size_list, default=1))

    def __repr__(self) -> str:
        lines = [
            f"  Complete contraction:  {self.eq}",
            f"         Naive scaling:  {len(self.indices)}",
            f"     Optimized scaling:  {max(self.scale_list, default=0)}",
            f"      Naive FLOP count:  {self.naive_cost:.3e}",
            f"  Optimized FLOP count:  {self.opt_cost:.3e}",
            f"   Theoretical speedup:  {self.speedup:.3e}",
            f"  Largest intermediate:  {self.largest_intermediate:.3e} elements",
            "-" * 80,
            f"{'scaling':>6} {'BLAS':>11} {'current':>22} {'remaining':>37}",
            "-" * 80,
        ]
        for scale, (_, _, current, remaining, blas) in zip(self.scale_list,
                                                           self.contraction_list):
            rest = "..." if remaining is None else ",".join(remaining) + "->" + \
                self.output_subscript
            width = max(0, 56 - max(22, len(current)))
            lines.append(f"{scale:>4} {blas:>14} {current:>22}    {rest:>{width}}")
        return "\n".join(lines)

    __str__ = __repr__
