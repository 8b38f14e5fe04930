"""spec.tree_util / spec.tree against the oracle, jax.tree_util / jax.tree, run live.

Every check runs the same operation through JAX and through spec and compares what a program
could observe: results, reprs of treedefs and key paths, and exception classes.
Custom node types are registered separately in both registries (they are independent).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import pickle
import time
import typing
from collections.abc import Callable
from typing import Any

import jax
import jax.tree_util as jtu
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec.tree as stree
import spec.tree_util as stu

MODS = pytest.mark.parametrize("m", [jtu, stu], ids=["jax", "spec"])


# --------------------------------------------------------------------------------------------
# Node types used throughout, registered with both libraries.

P = collections.namedtuple("P", ["x", "y"])
Q3 = collections.namedtuple("Q3", ["x", "y", "z"])


class NT(typing.NamedTuple):
    a: Any
    b: Any = 2


class PSub(P):
    pass


class FieldsTuple(tuple):  # type: ignore[type-arg]
    _fields = ("a",)


class Box:
    """Custom node without keys; node data is a string."""

    def __init__(self, tag: str, *items: Any) -> None:
        self.tag = tag
        self.items = items

    def __repr__(self) -> str:
        return f"Box({self.tag!r}, {', '.join(map(repr, self.items))})"

    def __eq__(self, other: object) -> bool:
        return type(other) is Box and (self.tag, self.items) == (other.tag, other.items)


def _box_flatten(b: Box) -> tuple[tuple[Any, ...], str]:
    return b.items, b.tag


def _box_unflatten(tag: str, items: Any) -> Box:
    return Box(tag, *items)


class Keyed:
    """Custom node with keys (GetAttrKey) and structured node data."""

    def __init__(self, a: Any, b: Any, meta: tuple[int, ...] = (1, 2)) -> None:
        self.a, self.b, self.meta = a, b, meta

    def __repr__(self) -> str:
        return f"Keyed({self.a!r}, {self.b!r}, {self.meta!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is Keyed and (self.a, self.b, self.meta) == (
            other.a,
            other.b,
            other.meta,
        )


def _keyed_flatten_with_keys(m: Any) -> Callable[[Keyed], Any]:
    def f(k: Keyed) -> Any:
        return ((m.GetAttrKey("a"), k.a), (m.GetAttrKey("b"), k.b)), k.meta

    return f


def _keyed_unflatten(meta: tuple[int, ...], ch: Any) -> Keyed:
    return Keyed(*ch, meta=meta)


class ByClass:
    """Registered through register_pytree_node_class."""

    def __init__(self, x: Any, name: str) -> None:
        self.x, self.name = x, name

    def tree_flatten(self) -> tuple[tuple[Any], str]:
        return (self.x,), self.name

    @classmethod
    def tree_unflatten(cls, name: str, ch: Any) -> ByClass:
        return cls(ch[0], name)

    def __eq__(self, other: object) -> bool:
        return type(other) is ByClass and (self.x, self.name) == (other.x, other.name)

    def __repr__(self) -> str:
        return f"ByClass({self.x!r}, {self.name!r})"


class ByKeysClass:
    """Registered through register_pytree_with_keys_class, with DictKey keys."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d

    def tree_flatten_with_keys(self) -> Any:
        keys = sorted(self.d)
        dk = _CURRENT_DICTKEY[0]
        return [(dk(k), self.d[k]) for k in keys], tuple(keys)

    @classmethod
    def tree_unflatten(cls, keys: tuple[str, ...], ch: Any) -> ByKeysClass:
        return cls(dict(zip(keys, ch)))

    def __eq__(self, other: object) -> bool:
        return type(other) is ByKeysClass and self.d == other.d

    def __repr__(self) -> str:
        return f"ByKeysClass({self.d!r})"


# ByKeysClass must produce the key class of whichever library is flattening it; both
# registrations share the class, so the key constructor is switched around each call.
_CURRENT_DICTKEY: list[Any] = [jtu.DictKey]


@dataclasses.dataclass
class DC:
    x: Any
    y: Any
    op: str = dataclasses.field(default="add", metadata=dict(static=True))


@dataclasses.dataclass(frozen=True)
class DCExplicit:
    w: Any
    label: str


class StaticStr(str):
    pass


class NotADataclass:
    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b

    def __repr__(self) -> str:
        return f"NotADataclass({self.a!r}, {self.b!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is NotADataclass and (self.a, self.b) == (other.a, other.b)


for _m in (jtu, stu):
    _m.register_pytree_node(Box, _box_flatten, _box_unflatten)
    _m.register_pytree_with_keys(Keyed, _keyed_flatten_with_keys(_m), _keyed_unflatten)
    _m.register_pytree_node_class(ByClass)
    _m.register_pytree_with_keys_class(ByKeysClass)
    _m.register_dataclass(DC)
    _m.register_dataclass(DCExplicit, data_fields=["w"], meta_fields=["label"])
    _m.register_static(StaticStr)
    _m.register_dataclass(NotADataclass, ["a"], ["b"])


class OnlySpec:
    """Registered with spec only: must stay a leaf for JAX."""

    def __init__(self, v: Any) -> None:
        self.v = v


class OnlyJax:
    """Registered with JAX only: must stay a leaf for spec."""

    def __init__(self, v: Any) -> None:
        self.v = v


stu.register_pytree_node(OnlySpec, lambda o: ((o.v,), None), lambda _, ch: OnlySpec(ch[0]))
jtu.register_pytree_node(OnlyJax, lambda o: ((o.v,), None), lambda _, ch: OnlyJax(ch[0]))


# --------------------------------------------------------------------------------------------
# Comparison helpers.


def _norm(s: str) -> str:
    # The libraries' own classes print with their module; nothing else may differ.
    return s.replace("jax.tree_util.", "spec.tree_util.").replace(
        "jaxlib._jax.pytree.", "spec.tree_util."
    )


def _show(x: Any) -> str:
    return _norm(repr(x))


def outcome(fn: Callable[[Any], Any], m: Any) -> tuple[str, ...]:
    """Result repr, or exception class and message, of fn(m)."""
    _CURRENT_DICTKEY[0] = m.DictKey
    try:
        return ("ok", _show(fn(m)))
    except Exception as e:
        # Errors must match in class; the wording is spec's own.
        return ("raise", type(e).__name__)
    finally:
        _CURRENT_DICTKEY[0] = jtu.DictKey


def same(fn: Callable[[Any], Any]) -> tuple[str, ...]:
    """Run fn with jax.tree_util then spec.tree_util; both must behave identically."""
    want = outcome(fn, jtu)
    got = outcome(fn, stu)
    assert got == want
    return want


# --------------------------------------------------------------------------------------------
# A zoo of trees.


def _trees() -> list[Any]:
    return [
        1,
        None,
        (),
        [],
        {},
        "a string is a leaf",
        (1, {"a": 2, "b": None}),
        {"b": 1, "a": 2},
        {"b": {}, "a": []},
        [None],
        (None,),
        ((),),
        [1, [2, [3, [4]]]],
        {"a": {"c": 1, "b": (2,)}},
        {(1, 2): 1, (0, 5): 2},
        {1.5: "x", 2: "y", -1: "z"},
        {None: 1},
        P(1, (2, 3)),
        P(None, None),
        NT(1),
        PSub(1, 2),
        FieldsTuple((7,)),
        collections.OrderedDict([("b", 1), ("a", 2)]),
        collections.OrderedDict([(1, 2), ("a", 3)]),
        collections.defaultdict(list, {"b": 1, "a": [2, 3]}),
        collections.defaultdict(None, {"z": None}),
        collections.deque([1, 2]),
        time.gmtime(0),
        [1, 2.5, "s", b"b", 3j, True],
        Box("tag", 1, (2, 3)),
        Box("empty"),
        Keyed(1, [2, None]),
        Keyed({"k": 3}, 4, meta=(9,)),
        ByClass([1, 2], "name"),
        ByKeysClass({"q": 1, "p": (2, 3)}),
        DC(1, [2, 3]),
        DC(x=None, y={"a": 1}, op="sub"),
        DCExplicit(w=(1, 2), label="lab"),
        NotADataclass([1], "meta"),
        StaticStr("add"),
        [StaticStr("z"), 1],
        {"outer": [P(Box("t", {"k": None}), DC(1, 2)), collections.OrderedDict(z=3)]},
    ]


TREES = _trees()
TREE_IDS = [f"t{i}" for i in range(len(TREES))]


def _tree_views(m: Any, tree: Any) -> dict[str, Any]:
    leaves, treedef = m.tree_flatten(tree)
    paths = m.tree_leaves_with_path(tree)
    return {
        "leaves": leaves,
        "repr": repr(treedef),
        "str": str(treedef),
        "num_leaves": treedef.num_leaves,
        "num_nodes": treedef.num_nodes,
        "children": [repr(c) for c in treedef.children()],
        "treedef_children": [repr(c) for c in m.treedef_children(treedef)],
        "node_data": treedef.node_data(),
        "is_leaf": m.treedef_is_leaf(treedef),
        "roundtrip": m.tree_unflatten(treedef, leaves),
        "roundtrip_type": type(m.tree_unflatten(treedef, leaves)),
        "roundtrip_keys": list(m.tree_unflatten(treedef, leaves))
        if isinstance(tree, dict)
        else None,
        "paths": [repr(p) for p, _ in paths],
        "keystr": [m.keystr(p) for p, _ in paths],
        "keystr_simple": [m.keystr(p, simple=True, separator="/") for p, _ in paths],
        "path_leaves": [x for _, x in paths],
        "structure": repr(m.tree_structure(tree)),
        "tree_leaves": m.tree_leaves(tree),
        "is_tree_node": m.is_tree_node(type(tree)),
        "all_leaves": m.all_leaves([tree]),
        "mapped": m.tree_map(lambda x: ("mapped", x), tree),
        "with_path_struct": repr(m.tree_flatten_with_path(tree)[1]),
    }


@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_flatten_views_match_jax(tree: Any) -> None:
    want = outcome(lambda m: _tree_views(m, tree), jtu)
    got = outcome(lambda m: _tree_views(m, tree), stu)
    # A tuple subclass with `_fields` but no field-wise constructor counts as a namedtuple and
    # so cannot be rebuilt; every other zoo tree must go through cleanly.
    assert want[0] == "ok" or isinstance(tree, FieldsTuple)
    assert got == want


@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_flatten_one_level_matches_jax(tree: Any) -> None:
    same(lambda m: m.flatten_one_level(tree))
    same(lambda m: m.flatten_one_level_with_keys(tree))
    same(lambda m: m.default_registry.flatten_one_level(tree))


def test_roundtrip_rebuilds_equal_values() -> None:
    for tree in TREES:
        if isinstance(tree, FieldsTuple):
            continue
        leaves, treedef = stu.tree_flatten(tree)
        back = treedef.unflatten(leaves)
        assert type(back) is type(tree)
        if isinstance(tree, (Box, Keyed, ByClass, ByKeysClass, DC, NotADataclass, dict, list)):
            assert back == tree
        oracle = jtu.tree_unflatten(jtu.tree_structure(tree), leaves)
        assert repr(back) == repr(oracle)


def test_treedef_equality_and_hash_match_jax() -> None:
    trees = [
        (1, 2),
        (3, 4),
        [1, 2],
        (1, None),
        {"a": 1},
        {"a": None},
        {"b": 1},
        collections.OrderedDict(a=1),
        collections.OrderedDict([("a", 1), ("b", 2)]),
        collections.OrderedDict([("b", 1), ("a", 2)]),
        collections.defaultdict(int, a=1),
        collections.defaultdict(list, a=1),
        P(1, 2),
        Q3(1, 2, 3),
        (1, 2, 3),
        Box("t", 1),
        Box("u", 1),
        Box("t", 5),
        DC(1, 2),
        DC(1, 2, "sub"),
        StaticStr("a"),
        StaticStr("b"),
        None,
        1,
        "leaf",
    ]
    for a in trees:
        for b in trees:
            want = jtu.tree_structure(a) == jtu.tree_structure(b)
            sa, sb = stu.tree_structure(a), stu.tree_structure(b)
            assert (sa == sb) == want, (a, b)
            assert (sa != sb) == (not want), (a, b)
            if want:
                assert hash(sa) == hash(sb)
    assert stu.tree_structure([1]) != 1
    assert {stu.tree_structure((1, {"a": 2})): "v"}[stu.tree_structure((5, {"a": 6}))] == "v"


def test_unhashable_node_data_still_hashes() -> None:
    class D:
        def __init__(self, a: Any) -> None:
            self.a = a

    for m in (jtu, stu):
        m.register_pytree_node(D, lambda d: ((d.a,), {"k": [1, 2]}), lambda aux, ch: D(*ch))
    same(lambda m: hash(m.tree_structure(D(1))) == hash(m.tree_structure(D(2))))
    same(lambda m: m.tree_structure(D(1)))


def test_dict_results_are_key_sorted_like_jax() -> None:
    tree = {"b": 1, "c": {"z": 1, "y": 2}, "a": 2}
    want = jax.tree.map(lambda x: x, tree)
    got = stree.map(lambda x: x, tree)
    assert list(got) == list(want) == ["a", "b", "c"]
    assert list(got["c"]) == list(want["c"])
    dd = collections.defaultdict(int, {"b": 1, "a": 2})
    assert list(stree.map(lambda x: x, dd)) == list(jax.tree.map(lambda x: x, dd))
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    assert list(stree.map(lambda x: x, od)) == list(jax.tree.map(lambda x: x, od))


def test_unsortable_dict_keys() -> None:
    assert same(lambda m: m.tree_structure({1: 2, "a": 3}))[1] == "ValueError"
    assert same(lambda m: m.tree_leaves(collections.defaultdict(int, [(1, 2), ("a", 3)])))[
        1
    ] == "TypeError"
    same(lambda m: m.tree_structure(collections.OrderedDict([(1, 2), ("a", 3)])))


# --------------------------------------------------------------------------------------------
# Structure mismatches.

MISMATCHES: list[tuple[Any, Any]] = [
    ({"a": 1, "b": 2}, {"a": 1, "c": 2}),
    ({"a": 1}, {"a": 1, "c": 2}),
    ({"a": 1, "b": 2}, {"b": 1, "c": 2}),
    ([1, 2], [1, 2, 3]),
    ((1, 2), (1, 2, 3)),
    ((1, 2), [1, 2]),
    ([1], (1,)),
    (Box("t", 1, 2), Box("t", 1, 2, 3)),
    (Box("m", 1), Box("n", 1)),
    ((1, [2, {"q": (3,)}]), (1, [2, {"q": 4}])),
    ([None], [1]),
    (None, 1),
    (P(1, 2), (1, 2)),
    ((1, 2), P(1, 2)),
    (P(1, 2), Q3(1, 2, 3)),
    (P(1, 2), NT(1, 2)),
    ({"a": 1}, collections.OrderedDict(a=1)),
    (collections.OrderedDict(a=1), {"a": 1}),
    ({"a": 1}, collections.defaultdict(int, a=1)),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=1, a=2)),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(a=1)),
    (collections.defaultdict(int, a=1), collections.defaultdict(list, a=1)),
    (DC(1, 2), DC(1, 2, "sub")),
    (DC(1, 2), P(1, 2)),
    (DCExplicit(1, "a"), DCExplicit(1, "b")),
    ([1], collections.deque([1])),
    ({"a": [1, 2]}, {"a": [1]}),
    (Keyed(1, 2), Keyed(1, 2, meta=(3,))),
    (Keyed((1, 2), 3), Keyed((1,), 3)),
    (StaticStr("x"), StaticStr("y")),
    ({"a": 1}, 5),
    ([1, 2], None),
]
MISMATCH_IDS = [f"mm{i}" for i in range(len(MISMATCHES))]


@pytest.mark.parametrize(("a", "b"), MISMATCHES, ids=MISMATCH_IDS)
def test_tree_map_mismatch_errors_match_jax(a: Any, b: Any) -> None:
    same(lambda m: m.tree_map(lambda x, y: 0, a, b))
    same(lambda m: m.tree_map_with_path(lambda p, x, y: 0, a, b))
    same(lambda m: m.tree_structure(a).flatten_up_to(b))


@pytest.mark.parametrize(("a", "b"), MISMATCHES, ids=MISMATCH_IDS)
def test_broadcast_mismatch_errors_match_jax(a: Any, b: Any) -> None:
    same(lambda m: m.tree_broadcast(a, b))


def test_mismatch_raises_valueerror() -> None:
    with pytest.raises(ValueError, match="different lengths of list"):
        stree.map(lambda x, y: x, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"tree_map tree\[1\]\[1\]\['q'\]"):
        stu.tree_map(lambda x, y: x, (1, [2, {"q": (3,)}]), (1, [2, {"q": 4}]))


def test_tree_map_prefix_and_multiple_trees() -> None:
    same(lambda m: m.tree_map(lambda x, y: (x, y), [1, {"a": 2}], [[5, 6], {"a": (7,)}]))
    same(lambda m: m.tree_map(lambda *xs: sum(xs), [1], [2], [3]))
    same(lambda m: m.tree_map(lambda *xs: 0, (1, 2), (1, 2), (1, 2, 3)))
    same(lambda m: m.tree_map(lambda x, y: 0, [None], [None]))
    same(lambda m: m.tree_map(lambda x, y: 0, [1], [None]))
    same(lambda m: m.tree_map(lambda x: x, [1], [2], [3]))
    same(lambda m: m.tree_map(lambda x, y: x + y, Box("t", 1), Box("t", 2)))
    same(lambda m: m.tree_map(lambda x, y: (x, y), DC(1, 2), DC([3], {"b": 4})))


def test_is_leaf() -> None:
    tree = [1, None, (2, None), [[3]], {"a": [4]}]
    is_none = lambda x: x is None  # noqa: E731
    is_single = lambda x: isinstance(x, list) and len(x) == 1  # noqa: E731
    for pred in (is_none, is_single, lambda x: True, lambda x: False):
        same(lambda m: m.tree_flatten(tree, is_leaf=pred))
        same(lambda m: m.tree_flatten(tree, pred))
        same(lambda m: m.tree_leaves(tree, is_leaf=pred))
        same(lambda m: m.tree_structure(tree, is_leaf=pred))
        same(lambda m: m.tree_map(lambda x: ("m", x), tree, is_leaf=pred))
        same(lambda m: m.tree_flatten_with_path(tree, is_leaf=pred))
        same(lambda m: m.tree_map_with_path(lambda p, x: m.keystr(p), tree, is_leaf=pred))
        same(lambda m: m.all_leaves(tree, is_leaf=pred))
        same(lambda m: m.tree_reduce(lambda a, b: (a, b), tree, "init", is_leaf=pred))
        same(lambda m: m.tree_all(tree, is_leaf=pred))
    # is_leaf applies to the first tree only.
    same(lambda m: m.tree_map(lambda x, y: 0, [[1]], [[1, 2]], is_leaf=is_single))


def test_is_leaf_takes_path() -> None:
    tree = {"a": [1, (2, 3)], "b": 4, "c": [(5,)]}

    def pred(m: Any) -> Callable[[Any, Any], bool]:
        return lambda p, x: p == (m.DictKey("a"), m.SequenceKey(1)) or len(p) == 2

    same(lambda m: m.tree_flatten_with_path(tree, pred(m), is_leaf_takes_path=True))
    same(lambda m: m.tree_leaves_with_path(tree, pred(m), True))
    same(
        lambda m: m.tree_map_with_path(
            lambda p, x: m.keystr(p), tree, is_leaf=pred(m), is_leaf_takes_path=True
        )
    )


def test_is_leaf_same_object_at_two_paths() -> None:
    shared = [1, 2]
    tree = (shared, shared)

    def pred(m: Any) -> Callable[[Any, Any], bool]:
        return lambda p, x: p == (m.SequenceKey(0),)

    same(lambda m: m.tree_flatten_with_path(tree, pred(m), is_leaf_takes_path=True))


def test_unflatten_errors() -> None:
    same(lambda m: m.tree_unflatten(m.tree_structure((1, 2)), [1]))
    same(lambda m: m.tree_unflatten(m.tree_structure((1, 2)), [1, 2, 3]))
    same(lambda m: m.tree_unflatten(m.tree_structure((1, 2)), iter([7, 8])))
    same(lambda m: m.tree_unflatten(m.tree_structure({"b": 1, "a": 2}), "xy"))
    not_iterable = lambda m: m.tree_unflatten(m.tree_structure((1, 2)), 5)  # noqa: E731
    assert outcome(not_iterable, stu)[1] == outcome(not_iterable, jtu)[1] == "TypeError"
    same(lambda m: m.tree_structure(None).unflatten([]))
    same(lambda m: m.tree_structure(1).unflatten(["only"]))


# --------------------------------------------------------------------------------------------
# Registration.


def test_registration_is_isolated_from_jax() -> None:
    assert stu.tree_leaves([OnlySpec(1), OnlyJax(2)])[0] == 1
    assert isinstance(stu.tree_leaves([OnlySpec(1), OnlyJax(2)])[1], OnlyJax)
    assert isinstance(jtu.tree_leaves([OnlySpec(1), OnlyJax(2)])[0], OnlySpec)
    assert jtu.tree_leaves([OnlySpec(1), OnlyJax(2)])[1] == 2
    assert stu.is_tree_node(OnlySpec) and not jtu.is_tree_node(OnlySpec)
    assert jtu.is_tree_node(OnlyJax) and not stu.is_tree_node(OnlyJax)


def test_registration_is_shared_by_tree_and_tree_util() -> None:
    class Late:
        def __init__(self, v: Any) -> None:
            self.v = v

    assert stree.leaves(Late(3))[0].v == 3
    stu.register_pytree_node(Late, lambda o: ((o.v,), None), lambda _, ch: Late(ch[0]))
    assert stree.leaves(Late(3)) == [3]
    assert repr(stree.structure(Late(3))) == "PyTreeDef(CustomNode(Late[None], [*]))"


def test_duplicate_registration() -> None:
    for typ in (Box, tuple, list, dict, type(None), collections.OrderedDict, DC, StaticStr):
        r = same(lambda m: m.register_pytree_node(typ, lambda x: ((), None), lambda a, c: None))
        assert r[1] == "ValueError"


def test_register_builtin_leaf_type_and_namedtuple() -> None:
    class MyInt(int):
        pass

    Pt = collections.namedtuple("Pt", ["u", "v"])
    for m in (jtu, stu):
        m.register_pytree_node(MyInt, lambda x: ((), int(x)), lambda a, c: MyInt(a))
        m.register_pytree_node(Pt, lambda p: ((p.v,), p.u), lambda u, c: Pt(u, c[0]))
    same(lambda m: m.tree_flatten([MyInt(3), Pt(1, 2)]))
    same(lambda m: m.tree_leaves_with_path(Pt(1, 2)))


class Unsized(typing.NamedTuple):
    """A namedtuple whose __len__ refuses (as a single jax.scipy Rotation's does)."""

    a: Any
    b: Any

    def __len__(self) -> int:
        raise TypeError("no len()")


def test_namedtuple_redefining_len_maps_by_its_fields() -> None:
    same(lambda m: m.tree_map(operator.add, Unsized(1, 2), Unsized(3, 4)))
    same(lambda m: m.tree_map(operator.add, [Unsized(1, 2)], [Unsized(3, (4, 5))]))
    same(lambda m: m.tree_structure(Unsized(1, 2)).flatten_up_to(Unsized(3, 4)))


def test_register_dataclass_inference_and_errors() -> None:
    @dataclasses.dataclass
    class A:
        x: int
        y: int = dataclasses.field(init=False, default=0)

    @dataclasses.dataclass
    class B:
        x: Any
        z: Any

    @dataclasses.dataclass
    class WithStatic:
        x: Any
        s: Any = jax.tree.static(default="s")

    @dataclasses.dataclass
    class WithSpecStatic:
        x: Any
        s: Any = stree.static(default="s")

    assert same(lambda m: m.register_dataclass(P))[1] == "TypeError"
    assert same(lambda m: m.register_dataclass(NotADataclass))[1] == "TypeError"
    assert same(lambda m: m.register_dataclass(A, ["x"], ["y"]))[1] == "ValueError"
    assert same(lambda m: m.register_dataclass(A, ["x"], None))[1] == "TypeError"
    assert same(lambda m: m.register_dataclass(A, None, ["x"]))[1] == "TypeError"
    assert same(lambda m: m.register_dataclass(A, ["x", "x"], ["x"]))[1] == "ValueError"
    assert same(lambda m: m.register_dataclass(B, ["x"], []))[1] == "ValueError"
    same(lambda m: m.register_dataclass(B, drop_fields=["z"]))
    same(lambda m: m.tree_structure(B(1, 2)))
    same(lambda m: m.tree_unflatten(m.tree_structure(B(1, 2)), [7]))
    same(lambda m: m.register_dataclass(WithStatic))
    same(lambda m: m.tree_flatten(WithStatic([1, 2])))
    same(lambda m: m.tree_leaves_with_path(WithStatic([1, 2], s="t")))
    same(lambda m: m.tree_map(lambda x: x * 10, WithStatic([1, 2], s="t")))
    same(lambda m: m.register_dataclass(WithSpecStatic))
    same(lambda m: m.tree_flatten(WithSpecStatic([1, 2])))
    # Field lists given as mutable lists are captured at registration time.
    @dataclasses.dataclass
    class C2:
        a: Any
        b: Any

    for m in (jtu, stu):
        data, meta = ["a"], ["b"]
        m.register_dataclass(C2, data, meta)
        data.append("b")
    same(lambda m: m.tree_flatten(C2(1, 2)))


def test_static_field_metadata() -> None:
    want = jax.tree.static(default=3, metadata={"doc": "d"})
    got = stree.static(default=3, metadata={"doc": "d"})
    assert dict(got.metadata) == dict(want.metadata)
    assert got.default == want.default == 3
    with pytest.raises(TypeError):
        stree.static(bogus=1)


# --------------------------------------------------------------------------------------------
# Partial.


def test_partial() -> None:
    same(lambda m: m.Partial(max, 1, 2, key=abs))
    same(lambda m: m.tree_flatten(m.Partial(max, 1, 2, key=3)))
    same(lambda m: m.tree_leaves_with_path(m.Partial(max, 1, 2, key=3)))
    same(lambda m: m.Partial(operator.add, 1)(2))
    same(lambda m: m.tree_map(lambda x: x + 1, m.Partial(operator.add, 1))(2))
    same(lambda m: m.Partial(m.Partial(max, 1), 2))
    same(lambda m: m.tree_structure(m.Partial(m.Partial(max, 1), 2)))
    same(lambda m: m.tree_leaves(m.Partial(m.Partial(max, 1), 2)))
    same(lambda m: m.Partial(m.Partial(max, 1), 2)(0))
    same(lambda m: m.Partial(m.Partial(max, 1), 2).func.func)
    same(lambda m: m.Partial(m.Partial(max, 1), 2).func.args)
    same(lambda m: m.tree_structure(m.Partial(max, 1)) == m.tree_structure(m.Partial(max, 2)))
    same(lambda m: m.tree_structure(m.Partial(max, 1)) == m.tree_structure(m.Partial(min, 2)))
    same(lambda m: m.tree_map(lambda x, y: 0, m.Partial(max, 1), m.Partial(min, 1)))
    p = stu.Partial(operator.mul, 3)
    assert isinstance(p, functools.partial)
    assert stu.tree_map(lambda x: x * 2, p)(5) == 30


# --------------------------------------------------------------------------------------------
# Keys and keystr.


@MODS
def test_key_classes_basic(m: Any) -> None:
    keys = [
        m.SequenceKey(0),
        m.DictKey("a"),
        m.DictKey(1),
        m.GetAttrKey("x"),
        m.FlattenedIndexKey(3),
    ]
    for k in keys:
        field = type(k).__match_args__[0]
        twin = type(k)(getattr(k, field))
        assert k == twin and hash(k) == hash(twin)
        assert pickle.loads(pickle.dumps(k)) == k
    assert m.SequenceKey(0) != m.FlattenedIndexKey(0)
    assert m.DictKey(0) != m.SequenceKey(0)
    assert m.SequenceKey(0) != 0
    match m.GetAttrKey("x"):
        case m.GetAttrKey(name=n):
            assert n == "x"
        case _:
            raise AssertionError


def test_key_classes_match_jax() -> None:
    cases: list[Callable[[Any], Any]] = [
        lambda m: m.SequenceKey(0),
        lambda m: m.DictKey("a"),
        lambda m: m.DictKey((1, "a")),
        lambda m: m.DictKey(None),
        lambda m: m.GetAttrKey("x"),
        lambda m: m.FlattenedIndexKey(3),
        lambda m: m.SequenceKey(True),
        lambda m: m.DictKey(1) == m.DictKey(1.0),
        lambda m: m.SequenceKey(0) == m.SequenceKey(1),
        lambda m: hash(m.DictKey("a")) == hash(m.DictKey("a")),
        lambda m: m.SequenceKey(3).idx,
        lambda m: m.DictKey("k").key,
        lambda m: m.GetAttrKey("n").name,
        lambda m: m.FlattenedIndexKey(2).key,
    ]
    for c in cases:
        same(c)
        same(lambda m: str(c(m)))
    # Bad constructor arguments and mutation: class only (JAX's wording is nanobind's).
    for bad in (
        lambda m: m.SequenceKey("a"),
        lambda m: m.GetAttrKey(1),
        lambda m: m.FlattenedIndexKey("a"),
        lambda m: hash(m.DictKey([1])),
    ):
        assert outcome(bad, stu)[:2] == outcome(bad, jtu)[:2]
        assert outcome(bad, stu)[1] == "TypeError"

    def mutate(m: Any) -> None:
        m.SequenceKey(0).idx = 3

    assert outcome(mutate, stu)[1] == outcome(mutate, jtu)[1] == "AttributeError"


def test_keystr() -> None:
    def path(m: Any) -> tuple[Any, ...]:
        return (m.DictKey("a"), m.SequenceKey(0), m.GetAttrKey("x"), m.FlattenedIndexKey(2))

    same(lambda m: m.keystr(path(m)))
    same(lambda m: m.keystr(path(m), simple=True))
    same(lambda m: m.keystr(path(m), simple=True, separator="/"))
    same(lambda m: m.keystr(path(m), separator="."))
    same(lambda m: m.keystr(()))
    same(lambda m: m.keystr(("foo", 1), simple=True, separator="."))
    same(lambda m: m.keystr([m.DictKey(1), m.DictKey("1")], simple=True, separator="|"))
    params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
    same(lambda m: [m.keystr(p) for p, _ in m.tree_leaves_with_path(params)])


# --------------------------------------------------------------------------------------------
# PyTreeDef methods.


def test_treedef_methods() -> None:
    S = lambda m, t: m.tree_structure(t)  # noqa: E731
    same(lambda m: S(m, (1, None)).compose(S(m, [1, 2])))
    same(lambda m: S(m, (1, 2)).compose(S(m, None)))
    same(lambda m: S(m, {"b": [1], "a": 2}).compose(S(m, P(1, 2))).num_leaves)
    same(
        lambda m: S(m, {"b": (1, 2), "a": 3}).walk(
            lambda c, d: ("N", c, d), lambda x: x * 10, [1, 2, 3]
        )
    )
    same(
        lambda m: S(m, [P(1, 2), None, Box("m", 1), DC(1, 2)]).walk(
            lambda c, d: ("N", c, d), lambda x: x, [1, 2, 3, 4, 5]
        )
    )
    for n in (1, 3):
        same(lambda m: S(m, (1, 2)).walk(lambda c, d: c, lambda x: x, range(n)))
    same(lambda m: S(m, {"b": (1, 2), "a": [3]}).from_iterable_tree(([9], (7, 8))))
    same(lambda m: S(m, {"b": (1, 2), "a": [3]}).from_iterable_tree(([9], [7, 8, 9])))
    same(lambda m: S(m, (1, None)).from_iterable_tree((5, ())))
    same(lambda m: S(m, (1, Box("q", 2))).from_iterable_tree((5, [6])))
    same(lambda m: m.treedef_tuple([S(m, 1), S(m, (1, 2)), S(m, None)]))
    same(lambda m: m.treedef_tuple([]))
    same(lambda m: m.treedef_tuple([S(m, [1])]) == S(m, ([1],)))
    for nd, kids in [
        ((tuple, None), [1, None]),
        ((dict, ["a"]), [1]),
        ((P, None), [1, None]),
        ((collections.OrderedDict, ("a",)), [1]),
        ((Box, "tag"), [1, (1, 2)]),
        (None, []),
    ]:
        same(
            lambda m: m.PyTreeDef.from_node_data_and_children(
                m.default_registry, nd, [S(m, k) for k in kids]
            )
        )
    for t in [(1, None), {"a": 1}, P(1, 2), Box("t", 1), 5, None, DC(1, 2)]:
        same(
            lambda m: m.PyTreeDef.from_node_data_and_children(
                m.default_registry, S(m, t).node_data(), S(m, t).children()
            )
            == S(m, t)
        )
    # JAX raises RuntimeError for an unknown node type / key count mismatch.
    bad_int = lambda m: m.PyTreeDef.from_node_data_and_children(  # noqa: E731
        m.default_registry, (int, None), [S(m, 1)]
    )
    bad_keys = lambda m: m.PyTreeDef.from_node_data_and_children(  # noqa: E731
        m.default_registry, (dict, ["a", "b"]), [S(m, 1)]
    )
    assert outcome(bad_int, stu)[:2] == outcome(bad_int, jtu)[:2]
    assert outcome(bad_keys, stu)[:2] == outcome(bad_keys, jtu)[:2]


def test_treedef_pickle() -> None:
    tree = (1, {"a": P(1, None), "b": [Box("t", 2)]}, collections.OrderedDict(z=1))
    d = stu.tree_structure(tree)
    back = pickle.loads(pickle.dumps(d))
    assert back == d
    assert repr(back) == repr(jtu.tree_structure(tree))
    assert back.unflatten(range(d.num_leaves)) == d.unflatten(range(d.num_leaves))


def test_treedef_is_leaf_and_all_leaves() -> None:
    for t in [1, None, (), [], {}, [1], (None,), "s"]:
        same(lambda m: m.treedef_is_leaf(m.tree_structure(t)))
    for items in ([None], [1, 2], [[1]], [], [(), 3], [collections.deque([1])], [P(1, 2)]):
        same(lambda m: m.all_leaves(items))
    same(lambda m: m.all_leaves([None], is_leaf=lambda x: x is None))
    same(lambda m: m.all_leaves(iter([1, 2])))


def test_is_tree_node() -> None:
    for typ in (type(None), int, tuple, list, dict, P, NT, FieldsTuple, collections.deque,
                collections.OrderedDict, collections.defaultdict, Box, DC, StaticStr, str):
        same(lambda m: m.is_tree_node(typ))


def test_default_registry() -> None:
    same(lambda m: m.default_registry.flatten({"b": 1, "a": [2]}))
    same(lambda m: m.default_registry.flatten([1, None], lambda x: x is None))
    same(lambda m: m.default_registry.flatten_one_level(3))


# --------------------------------------------------------------------------------------------
# Reductions, transpose, broadcast.


def test_reductions() -> None:
    same(lambda m: m.tree_reduce(operator.add, [1, 2, None, (3,)]))
    same(lambda m: m.tree_reduce(operator.add, []))
    same(lambda m: m.tree_reduce(operator.add, [], 5))
    same(lambda m: m.tree_reduce(lambda a, b: (a, b), [1, 2, 3], None))
    same(lambda m: m.tree_reduce(operator.add, [[1], [2]], [], lambda x: len(x) == 1))
    same(lambda m: m.tree_reduce_associative(lambda a, b: (a, b), [1, 2, 3, 4, 5]))
    same(lambda m: m.tree_reduce_associative(lambda a, b: (a, b), [1, 2, 3, 4, 5, 6, 7]))
    same(lambda m: m.tree_reduce_associative(operator.add, []))
    same(lambda m: m.tree_reduce_associative(operator.add, [], identity=0))
    same(lambda m: m.tree_reduce_associative(operator.add, [[1], 2], is_leaf=lambda x: x == [1]))
    for t in ([1, [True, 2], None], [1, [0, 2]], [], [[]], {"a": ""}):
        same(lambda m: m.tree_all(t))
    same(lambda m: m.tree_all([[]], is_leaf=lambda x: x == []))


def test_transpose() -> None:
    S = lambda m, t: m.tree_structure(t)  # noqa: E731
    same(lambda m: m.tree_transpose(S(m, [1, 2]), S(m, (1, 1)), [(1, 2), (3, 4)]))
    same(lambda m: m.tree_transpose(S(m, [1, 2]), None, [(1, 2), (3, 4)]))
    same(lambda m: m.tree_transpose(S(m, [1, 2]), S(m, (1, 1, 1)), [(1, 2), (3, 4)]))
    same(
        lambda m: m.tree_transpose(
            S(m, {"a": 1, "b": 1}), S(m, [1, 1, 1]), {"a": [1, 2, 3], "b": [4, 5, 6]}
        )
    )
    same(lambda m: m.tree_transpose(S(m, [1]), S(m, {"x": 1, "y": None}), [{"x": 1, "y": None}]))
    same(lambda m: m.tree_transpose(S(m, []), S(m, (1, 1)), []))
    same(lambda m: m.tree_transpose(S(m, (1, 2)), S(m, ()), ((), ())))


def test_broadcast() -> None:
    same(lambda m: m.tree_broadcast((1, 2), ([1, 1], {"a": 4})))
    same(lambda m: m.tree_broadcast((1, {"a": 2}), ([1, 1], {"a": (4, 5)})))
    same(lambda m: m.tree_broadcast(1, {"a": [1, 2], "b": None}))
    same(lambda m: m.tree_broadcast([1, 2], [[3, 4], None]))
    same(lambda m: m.tree_broadcast([None, 2], [None, [3]]))
    same(lambda m: m.tree_broadcast([1, 2], [[3, 4], 5], is_leaf=lambda x: x == 1))


# --------------------------------------------------------------------------------------------
# spec.tree mirrors jax.tree.


def test_tree_module_names_match_jax() -> None:
    public = lambda mod: sorted(n for n in dir(mod) if not n.startswith("_"))  # noqa: E731
    want = [n for n in public(jax.tree) if n not in ("annotations",)]
    got = [n for n in public(stree) if n in stree.__all__]
    assert got == want
    assert sorted(stree.__all__) == want


def test_tree_module_functions() -> None:
    tree = {"b": [1, (2, None)], "a": P(3, 4)}
    checks: list[Callable[[Any], Any]] = [
        lambda t: t.leaves(tree),
        lambda t: t.flatten(tree),
        lambda t: t.structure(tree),
        lambda t: t.unflatten(t.structure(tree), range(4)),
        lambda t: t.map(lambda x: x * 2, tree),
        lambda t: t.map(lambda x, y: (x, y), [1, 2], [[3], 4]),
        lambda t: t.map_with_path(lambda p, x: (len(p), x), tree),
        lambda t: t.leaves_with_path(tree),
        lambda t: t.flatten_with_path(tree),
        lambda t: t.reduce(operator.add, tree),
        lambda t: t.reduce(operator.add, tree, 100),
        lambda t: t.reduce_associative(operator.add, tree),
        lambda t: t.all(tree),
        lambda t: t.all([1, 0]),
        lambda t: t.transpose(t.structure([1, 1]), None, [(1, 2), (3, 4)]),
        lambda t: t.broadcast((1, 2), ([1, 1], {"a": 4})),
        lambda t: t.leaves([None, [1]], is_leaf=lambda x: x is None),
        lambda t: t.map(lambda x, y: 0, [1, 2], [1, 2, 3]),
    ]
    for c in checks:
        want = outcome(lambda _: c(jax.tree), jtu)
        got = outcome(lambda _: c(stree), stu)
        assert got == want


# --------------------------------------------------------------------------------------------
# Generated trees.

_KEYS = st.one_of(st.text(alphabet="abcxyz", min_size=1, max_size=3), st.integers(-3, 3))
_LEAVES = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=32),
    st.text(max_size=2),
    st.booleans(),
    st.builds(StaticStr, st.text(alphabet="st", max_size=2)),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    small = st.lists(children, max_size=4)
    return st.one_of(
        st.just(None),
        small,
        small.map(tuple),
        st.dictionaries(st.text(alphabet="abcdz", min_size=1, max_size=2), children, max_size=4),
        st.dictionaries(st.integers(-9, 9), children, max_size=3),
        st.builds(P, children, children),
        st.builds(NT, children, children),
        st.dictionaries(_KEYS.map(str), children, max_size=3).map(
            lambda d: collections.OrderedDict(reversed(list(d.items())))
        ),
        st.dictionaries(st.text(alphabet="pq", min_size=1), children, max_size=3).map(
            lambda d: collections.defaultdict(int, d)
        ),
        st.builds(Box, st.sampled_from(["s", "t"]), children, children),
        st.builds(Keyed, children, children),
        st.builds(DC, children, children, st.sampled_from(["add", "mul"])),
        st.builds(ByClass, children, st.sampled_from(["n1", "n2"])),
    )


TREE_STRATEGY = st.recursive(_LEAVES | st.none(), _containers, max_leaves=20)
_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(TREE_STRATEGY)
def test_generated_trees_agree_with_jax(tree: Any) -> None:
    want = outcome(lambda m: _tree_views(m, tree), jtu)
    got = outcome(lambda m: _tree_views(m, tree), stu)
    assert got == want


@_SETTINGS
@given(TREE_STRATEGY)
def test_generated_roundtrip(tree: Any) -> None:
    leaves, treedef = stu.tree_flatten(tree)
    back = stu.tree_unflatten(treedef, leaves)
    assert stu.tree_structure(back) == treedef
    assert stu.tree_leaves(back) == leaves
    assert repr(back) == repr(jtu.tree_unflatten(jtu.tree_structure(tree), leaves))
    marked = stu.tree_unflatten(treedef, range(treedef.num_leaves))
    assert stu.tree_leaves(marked) == list(range(treedef.num_leaves))
    paths = stu.tree_leaves_with_path(tree)
    assert [x for _, x in paths] == leaves


@_SETTINGS
@given(TREE_STRATEGY, TREE_STRATEGY)
def test_generated_pairs_agree_with_jax(a: Any, b: Any) -> None:
    same(lambda m: m.tree_structure(a) == m.tree_structure(b))
    same(lambda m: m.tree_map(lambda x, y: (x, y), a, b))
    same(lambda m: m.tree_broadcast(a, b))
    same(lambda m: m.tree_structure(a).compose(m.tree_structure(b)))


def test_node_data_compared_like_jax() -> None:
    """Identical node data matches without __eq__; failing __eq__ is reported as JAX does."""
    import numpy as np

    nan = float("nan")
    arr = np.arange(3)
    S = lambda m, t: m.tree_structure(t)  # noqa: E731
    same(lambda m: S(m, Box(nan, 1)) == S(m, Box(nan, 1)))  # type: ignore[arg-type]
    same(lambda m: S(m, Box(nan, 1)) == S(m, Box(float("nan"), 1)))  # type: ignore[arg-type]
    same(lambda m: S(m, Box(arr, 1)) == S(m, Box(arr, 1)))  # type: ignore[arg-type]
    same(lambda m: S(m, Box(arr, 1)) == S(m, Box(np.arange(3), 1)))  # type: ignore[arg-type]
    same(lambda m: S(m, Box(nan, 1)).flatten_up_to(Box(nan, 2)))  # type: ignore[arg-type]
    same(lambda m: S(m, Box(arr, 1)).flatten_up_to(Box(np.arange(3), 2)))  # type: ignore[arg-type]
    same(lambda m: m.tree_map(lambda x, y: 0, Box(arr, 1), Box(arr, 2)))  # type: ignore[arg-type]


def test_map_with_path_mismatch_with_path_predicate() -> None:
    def pred(m: Any) -> Callable[[Any, Any], bool]:
        return lambda p, x: False

    same(
        lambda m: m.tree_map_with_path(
            lambda p, x, y: 0, [1, 2], [1], is_leaf=pred(m), is_leaf_takes_path=True
        )
    )
    same(
        lambda m: m.tree_map_with_path(
            lambda p, x, y: (m.keystr(p), x, y), {"a": [1]}, {"a": [(2,)]}
        )
    )
