"""Pytrees: nested containers whose leaves JAX programs operate on.

This module mirrors ``jax.tree_util`` of JAX 0.12.  A pytree is either a *node* (``None``, a
tuple, a list, a dict, a namedtuple, or an instance of a registered type) whose children are
again pytrees, or a *leaf* (anything else).  Flattening a pytree yields its leaves in a fixed
depth-first, left-to-right order together with a :class:`PyTreeDef` that records the node
structure, so that the leaves can later be put back in place.

Semantics that programs can observe and that therefore follow JAX exactly:

* ``None`` is a node without children, not a leaf.
* Dict children are visited in sorted key order, and rebuilt dicts have sorted keys.  Keys
  that cannot be ordered are a ``ValueError``.
* Node types are matched exactly: a subclass of ``list`` or ``dict`` is a leaf, a subclass of
  ``tuple`` is a node only if it has ``_fields`` (a namedtuple).  ``collections.deque`` and
  struct sequences such as ``time.struct_time`` are leaves.
* ``OrderedDict`` (insertion order) and ``defaultdict`` (sorted order, with the factory as
  node data) are registered custom nodes, so their treedefs print as ``CustomNode(...)``.

There is one registry for the whole of ``spec`` (``spec.tree`` reuses these functions); it is
separate from JAX's own registry, so registering a type here never changes JAX and vice versa.

The engine is plain Python rather than ``optree``: optree's built-in node kinds disagree with
JAX on deque and struct sequences (nodes there), on the key order of rebuilt dicts (insertion
order there), on unsortable dict keys (silently accepted there) and on mixing ``dict`` with
``OrderedDict``/``defaultdict`` in ``flatten_up_to`` (accepted there), and built-in kinds cannot
be overridden per namespace.
"""

from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import operator
import textwrap
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeAlias, TypeVar, cast, final

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "PyTreeRegistry",
    "SequenceKey",
    "all_leaves",
    "default_registry",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type[Any])
H = TypeVar("H", bound=Hashable)

Leaf: TypeAlias = Any
PyTree: TypeAlias = Any
KeyEntry: TypeAlias = Any
KeyPath: TypeAlias = tuple[Any, ...]
IsLeaf: TypeAlias = Callable[[Any], bool]
FlattenFn: TypeAlias = Callable[[Any], tuple[Iterable[Any], Any]]
FlattenWithKeysFn: TypeAlias = Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]]
UnflattenFn: TypeAlias = Callable[[Any, Any], Any]


# --------------------------------------------------------------------------------------------
# Key path entries.
#
# These are small immutable value classes; their str() is the Python-ish accessor syntax used by
# keystr and in error messages, their repr() the constructor syntax.


class _KeyBase:
    """Shared equality, hashing and pickling for the key entry classes."""

    __slots__ = ("_value",)
    _field: str = ""

    def __init__(self, value: Any) -> None:
        self._value = value

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return bool(self._value == other._value)

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._field}={self._value!r})"

    def __reduce__(self) -> tuple[type[_KeyBase], tuple[Any]]:
        return (type(self), (self._value,))


def _check_int(cls_name: str, field: str, value: Any) -> int:
    # Accept anything usable as an index (bool, NumPy integers) as JAX does, but nothing else.
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{cls_name}({field}=...) needs an int, got {value!r} of type {type(value).__name__}"
        ) from None


@final
class SequenceKey(_KeyBase):
    """Position of a child in a tuple or list: prints as ``[i]``."""

    __slots__ = ()
    __match_args__ = ("idx",)
    _field = "idx"

    def __init__(self, idx: int) -> None:
        super().__init__(_check_int("SequenceKey", "idx", idx))

    @property
    def idx(self) -> int:
        return int(self._value)

    def __str__(self) -> str:
        return f"[{self._value!r}]"


@final
class DictKey(_KeyBase):
    """Key of a child in a mapping: prints as ``[key]`` with the key's repr."""

    __slots__ = ()
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: Hashable) -> None:
        super().__init__(key)

    @property
    def key(self) -> Any:
        return self._value

    def __str__(self) -> str:
        return f"[{self._value!r}]"


@final
class GetAttrKey(_KeyBase):
    """Attribute holding a child (namedtuple and dataclass fields): prints as ``.name``."""

    __slots__ = ()
    __match_args__ = ("name",)
    _field = "name"

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(
                f"GetAttrKey(name=...) needs a str, got {name!r} of type {type(name).__name__}"
            )
        super().__init__(name)

    @property
    def name(self) -> str:
        return str(self._value)

    def __str__(self) -> str:
        return f".{self._value}"


@final
class FlattenedIndexKey(_KeyBase):
    """Index of a child of a custom node registered without keys."""

    __slots__ = ()
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: int) -> None:
        super().__init__(_check_int("FlattenedIndexKey", "key", key))

    @property
    def key(self) -> int:
        return int(self._value)

    def __str__(self) -> str:
        return f"[<flat index {self._value!r}>]"


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Join the string forms of a key path.

    With ``simple=True`` each entry contributes only its bare key (``0``, ``a``, ``name``), which
    is shorter but ambiguous; ``separator`` goes between entries.
    """
    return separator.join(_simple_key_str(k) if simple else str(k) for k in keys)


def _simple_key_str(key: Any) -> str:
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, (DictKey, FlattenedIndexKey)):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return key.name
    return str(key)


# --------------------------------------------------------------------------------------------
# The registry.

# Node kinds.  Plain ints keep the hot flatten/unflatten loops cheap.
_LEAF: Final = 0
_NONE: Final = 1
_TUPLE: Final = 2
_LIST: Final = 3
_DICT: Final = 4
_NAMEDTUPLE: Final = 5
_CUSTOM: Final = 6
_DATACLASS: Final = 7

_BUILTIN_KINDS: Final[dict[type[Any], int]] = {
    type(None): _NONE,
    tuple: _TUPLE,
    list: _LIST,
    dict: _DICT,
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Registration:
    flatten: FlattenFn
    unflatten: UnflattenFn
    # None means the node has no natural keys: paths then use FlattenedIndexKey(i).
    flatten_with_keys: FlattenWithKeysFn | None
    # register_dataclass nodes print like custom nodes but word their mismatch errors apart.
    is_dataclass: bool = False


_registry: dict[type[Any], _Registration] = {}


def _kind_of(t: type[Any]) -> int:
    kind = _BUILTIN_KINDS.get(t)
    if kind is not None:
        return kind
    reg = _registry.get(t)
    if reg is not None:
        return _DATACLASS if reg.is_dataclass else _CUSTOM
    # A namedtuple is any tuple subclass carrying `_fields`; other tuple subclasses (such as
    # struct sequences) stay leaves.
    if issubclass(t, tuple) and hasattr(t, "_fields"):
        return _NAMEDTUPLE
    return _LEAF


def _add_registration(nodetype: type[Any], reg: _Registration) -> None:
    if not isinstance(nodetype, type):
        raise TypeError(f"pytree node types must be classes, got {nodetype!r}")
    if nodetype in _BUILTIN_KINDS or nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype!r}.")
    _registry[nodetype] = reg


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]],
    unflatten_func: Callable[[Any, Any], T],
    flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[Any, Any]], Any]] | None = None,
) -> None:
    """Make instances of ``nodetype`` pytree nodes.

    ``flatten_func(x)`` returns ``(children, aux_data)`` where ``aux_data`` is hashable static
    data kept in the treedef; ``unflatten_func(aux_data, children)`` rebuilds the node.  The
    optional ``flatten_with_keys_func`` returns ``((key, child) pairs, aux_data)`` and supplies
    key paths; without it children are keyed by ``FlattenedIndexKey``.
    """
    _add_registration(nodetype, _Registration(flatten_func, unflatten_func, flatten_with_keys_func))


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[Iterable[tuple[Any, Any]], Any]],
    unflatten_func: Callable[[Any, Any], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]] | None = None,
) -> None:
    """Like :func:`register_pytree_node`, keyed flattening first.

    ``flatten_func`` is optional; when absent it is derived from ``flatten_with_keys``.
    """
    if not flatten_func:

        def flatten_from_keys(x: T) -> tuple[list[Any], Any]:
            pairs, aux = flatten_with_keys(x)
            return [child for _, child in pairs], aux

        flatten_func = flatten_from_keys
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: the class supplies ``tree_flatten`` and classmethod ``tree_unflatten``."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: the class supplies ``tree_flatten_with_keys`` and ``tree_unflatten``
    (and optionally ``tree_flatten``)."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(
        cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten, flatten
    )
    return cls


def register_static(cls: type[H]) -> type[H]:
    """Make ``cls`` a node with no children whose instance is kept whole as node data."""

    def flatten_with_keys(obj: H) -> tuple[tuple[()], H]:
        return (), obj

    def unflatten(obj: H, children: Any) -> H:
        return obj

    register_pytree_with_keys(cls, flatten_with_keys, unflatten)
    return cls


def register_dataclass(
    nodetype: Typ,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> Typ:
    """Register a dataclass-like type whose ``data_fields`` are children and ``meta_fields``
    static node data.

    For a dataclass both lists may be omitted: every field is then data unless declared with
    ``field(metadata={"static": True})`` (see ``spec.tree.static``) or listed in ``drop_fields``.
    The type is rebuilt with keyword arguments, ``nodetype(**fields)``.
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: give both data_fields and meta_fields, or neither; "
                f"got {data_fields=} {meta_fields=}."
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: a type that is not a dataclass needs explicit "
                f"data_fields and meta_fields; got {nodetype=}."
            )
        kept = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        data_fields = [f.name for f in kept if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in kept if f.metadata.get("static", False)]

    # Freeze the names: the closures below must not see later changes to caller lists.
    data = tuple(data_fields)
    meta = tuple(meta_fields)

    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*meta, *data}
        if given != init_fields:
            msg = ("register_dataclass: data_fields and meta_fields together must be "
                   "exactly the dataclass fields that __init__ takes.")
            if missing := init_fields - given:
                msg += f" Not listed: {missing} (list them, or name them in drop_fields)."
            if unexpected := given - init_fields:
                msg += f" Not __init__ fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data) & set(meta):
        raise ValueError(
            f"register_dataclass: {overlap} listed both as data and as meta fields."
        )

    keys = tuple(GetAttrKey(name) for name in data)

    def flatten(x: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(x, n) for n in data), tuple(getattr(x, n) for n in meta)

    def flatten_with_keys(x: Any) -> tuple[list[tuple[Any, Any]], tuple[Any, ...]]:
        return [(k, getattr(x, n)) for k, n in zip(keys, data)], tuple(getattr(x, n) for n in meta)

    def unflatten(meta_values: Any, children: Any) -> Any:
        kwargs = dict(zip(meta, meta_values))
        kwargs.update(zip(data, children))
        return nodetype(**kwargs)

    _add_registration(nodetype, _Registration(flatten, unflatten, flatten_with_keys, True))
    return nodetype


def is_tree_node(typ: type[Any]) -> bool:
    """Whether instances of ``typ`` are pytree nodes (built in, registered, or namedtuple)."""
    return _kind_of(typ) != _LEAF


# --------------------------------------------------------------------------------------------
# PyTreeDef.


def _sorted_dict_keys(d: dict[Any, Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(d))
    except Exception as e:
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") from e


@final
class PyTreeDef:
    """The structure of a pytree: its nodes, their types and node data, without the leaves.

    Treedefs are immutable, compare equal when the structures are equal (node types and node
    data compared with ``==``) and are hashable.
    """

    __slots__ = ("_kind", "_type", "_data", "_children", "_num_leaves", "_num_nodes", "_hash")

    def __init__(
        self, kind: int, node_type: type[Any] | None, data: Any, children: tuple[PyTreeDef, ...]
    ) -> None:
        self._kind = kind
        self._type = node_type
        self._data = data
        self._children = children
        self._num_leaves: int = 1 if kind == _LEAF else sum(c.num_leaves for c in children)
        self._num_nodes: int = 1 + sum(c.num_nodes for c in children)
        self._hash: int | None = None

    # -- inspection -------------------------------------------------------------------------

    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root's immediate children."""
        return list(self._children)

    def node_data(self) -> tuple[type[Any], Any] | None:
        """``(node type, node data)`` of the root, or ``None`` for a leaf."""
        if self._kind == _LEAF:
            return None
        assert self._type is not None
        if self._kind == _DICT:
            return (dict, list(self._data))
        return (self._type, self._data)

    def _walk_data(self) -> Any:
        if self._kind == _DICT:
            return list(self._data)
        if self._kind == _NAMEDTUPLE:
            return self._type
        return self._data

    # -- rebuilding -------------------------------------------------------------------------

    def unflatten(self, leaves: Iterable[Leaf]) -> Any:
        """Rebuild a pytree of this structure from ``leaves`` (in flattening order)."""
        flat = list(leaves)
        if len(flat) < self._num_leaves:
            raise ValueError(
                f"Too few leaves for PyTreeDef; expected {self._num_leaves}, got {len(flat)}"
            )
        if len(flat) > self._num_leaves:
            raise ValueError(f"Too many leaves for PyTreeDef; expected {self._num_leaves}.")
        try:
            return self._build(iter(flat))
        except RecursionError:
            # Nested deeper than Python's recursion limit: again, with a stack.
            it = iter(flat)
            return self._fold(lambda: next(it), lambda node, kids: node._make_node(kids))

    def _build(self, leaves: Iterator[Any]) -> Any:
        kind = self._kind
        if kind == _LEAF:
            return next(leaves)
        if kind == _NONE:
            return None
        return self._make_node([c._build(leaves) for c in self._children])

    def _postorder(self) -> list[PyTreeDef]:
        """The nodes of this structure, children before their parent, left to right: found
        with a stack, so that no walk over a structure recurses (a pytree may be nested
        deeper than Python's recursion limit)."""
        out: list[PyTreeDef] = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node._children)
        out.reverse()
        return out

    def _fold(self, at_leaf: Callable[[], Any],
              at_node: Callable[[PyTreeDef, list[Any]], Any]) -> Any:
        """``at_leaf()`` at each leaf and ``at_node(node, children's values)`` at each other
        node, in flattening order; the root's value."""
        values: list[Any] = []
        for node in self._postorder():
            if node._kind == _LEAF:
                values.append(at_leaf())
                continue
            start = len(values) - len(node._children)
            kids = values[start:]
            del values[start:]
            values.append(at_node(node, kids))
        return values[0]

    def _make_node(self, kids: list[Any]) -> Any:
        kind = self._kind
        if kind == _TUPLE:
            return tuple(kids)
        if kind == _LIST:
            return kids
        if kind == _DICT:
            return dict(zip(self._data, kids))
        if kind == _NONE:
            return None
        assert self._type is not None
        if kind == _NAMEDTUPLE:
            return self._type(*kids)
        return _registry[self._type].unflatten(self._data, tuple(kids))

    def walk(
        self,
        f_node: Callable[[tuple[Any, ...], Any], Any],
        f_leaf: Callable[[Any], Any] | None,
        leaves: Iterable[Any],
    ) -> Any:
        """Fold over the structure: ``f_leaf(leaf)`` at leaves, ``f_node(children, data)`` at
        nodes, where ``data`` is the node data (dict keys as a list, namedtuple type)."""
        flat = list(leaves)
        if len(flat) != self._num_leaves:
            few = len(flat) < self._num_leaves
            raise ValueError(f"Too {'few' if few else 'many'} leaves for PyTreeDef")
        it = iter(flat)

        def at_leaf() -> Any:
            x = next(it)
            return x if f_leaf is None else f_leaf(x)
        return self._fold(at_leaf, lambda node, kids: f_node(tuple(kids), node._walk_data()))

    def from_iterable_tree(self, tree: Any) -> Any:
        """Rebuild this structure from nested iterables: every node position of ``tree`` is
        iterated for its children; leaf positions are taken as they are."""
        if self._kind == _LEAF:
            return tree
        kids = list(tree)
        if len(kids) != len(self._children):
            raise ValueError("Arity mismatch between trees")
        return self._make_node([c.from_iterable_tree(k) for c, k in zip(self._children, kids)])

    @staticmethod
    def from_node_data_and_children(
        registry: PyTreeRegistry, node_data: tuple[type[Any], Any] | None, children: Iterable[Any]
    ) -> PyTreeDef:
        """Build a treedef from a root ``node_data()`` value and child treedefs."""
        kids = tuple(children)
        for k in kids:
            if not isinstance(k, PyTreeDef):
                raise TypeError(f"children must be PyTreeDefs, got {k!r}")
        if node_data is None:
            if kids:
                raise ValueError(f"a leaf has no children, got {len(kids)}")
            return _LEAF_DEF
        node_type, data = node_data
        kind = _kind_of(node_type)
        if kind == _LEAF:
            raise RuntimeError(f"Could not find type: {node_type!r}.")
        if kind == _DICT:
            data = tuple(data)
            if len(data) != len(kids):
                raise RuntimeError("Number of keys and entries does not match.")
        elif kind == _NAMEDTUPLE:
            data = None
        if kind == _NONE and kids:
            raise ValueError(f"None has no children, got {len(kids)}")
        return PyTreeDef(kind, node_type, data, kids)

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure obtained by putting ``inner`` at every leaf of this structure."""
        if not isinstance(inner, PyTreeDef):
            raise TypeError(f"compose() needs a PyTreeDef, got {inner!r}")
        composed: PyTreeDef = self._fold(lambda: inner, lambda node, kids: PyTreeDef(
            node._kind, node._type, node._data, tuple(kids)))
        return composed

    # -- matching a tree against the structure ----------------------------------------------

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` found at this structure's leaf positions.

        ``tree`` must have this structure as a prefix; otherwise a ``ValueError`` says where
        the first difference is.
        """
        out: list[Any] = []
        try:
            self._up_to(tree, out)
            return out
        except RecursionError:
            pass
        # Nested deeper than Python's recursion limit: again, with a stack (depth first,
        # left to right).
        out.clear()
        pending: list[tuple[PyTreeDef, Any]] = [(self, tree)]
        while pending:
            node, x = pending.pop()
            if node._kind == _LEAF:
                out.append(x)
                continue
            kids = node._matched_children(x)
            pending.extend(reversed(list(zip(node._children, kids))))
        return out

    def _up_to(self, x: Any, out: list[Any]) -> None:
        if self._kind == _LEAF:
            out.append(x)
            return
        for c, k in zip(self._children, self._matched_children(x)):
            c._up_to(k, out)

    def _matched_children(self, x: Any) -> Sequence[Any]:
        """The children of ``x``, a node this (non-leaf) node must match; ValueError where
        they differ."""
        kind = self._kind
        if kind == _NONE:
            if x is not None:
                raise ValueError(
                    f"Expected None, got {x!r}. None is a node with no children, so it is "
                    "a prefix only of None; to skip None entries of one tree, map with "
                    "is_leaf=lambda x: x is None and return None for them."
                )
            return ()
        arity = len(self._children)
        kids: Sequence[Any]
        if kind == _TUPLE or kind == _LIST:
            want = tuple if kind == _TUPLE else list
            if type(x) is not want:
                raise ValueError(f"Expected {want.__name__}, got {x!r}.")
            if len(x) != arity:
                label = "Tuple" if kind == _TUPLE else "List"
                raise ValueError(
                    f"{label} arity mismatch: {len(x)} != {arity}; {want.__name__}: {x!r}."
                )
            kids = x
        elif kind == _DICT:
            if type(x) is not dict:
                raise ValueError(f"Expected dict, got {x!r}.")
            keys = _sorted_dict_keys(x)
            if keys != self._data:
                raise ValueError(
                    f"Dict key mismatch; expected keys: {list(self._data)!r}; "
                    f"present keys: {list(keys)!r}."
                )
            kids = [x[k] for k in keys]
        elif kind == _NAMEDTUPLE:
            if not (isinstance(x, tuple) and hasattr(type(x), "_fields")):
                raise ValueError(f"Expected named tuple, got {x!r}.")
            # tuple's own length: a namedtuple may redefine __len__ (JAX's Rotation does).
            size = tuple.__len__(x)
            if size != arity:
                raise ValueError(f"Named tuple arity mismatch: {size} != {arity}; tuple: {x!r}.")
            if type(x) is not self._type:
                raise ValueError(
                    f"Named tuple type mismatch: expected type: {self._type!r}, tuple: {x!r}."
                )
            kids = x
        else:
            what = "custom dataclass node" if kind == _DATACLASS else "custom node"
            if type(x) is not self._type:
                raise ValueError(
                    f"{what.capitalize()} type mismatch: expected type: {self._type!r}, "
                    f"value: {x!r}."
                )
            children, aux = _registry[self._type].flatten(x)
            # Identical objects match without calling __eq__ (so NaN or array node data
            # compares equal to itself), as in Python's own container comparisons.
            if self._data is not aux and not self._data == aux:
                raise ValueError(
                    f"Mismatch {what} data: {self._data!r} != {aux!r}; value: {x!r}."
                )
            kids = list(children)
            if len(kids) != arity:
                raise ValueError(
                    f"Custom type arity mismatch: {len(kids)} != {arity}; value: {x!r}."
                )
        return kids

    # -- dunder protocol --------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        # Node by node with a stack, not by recursion: a treedef thousands of levels deep
        # (a long nested list) compares as a shallow one does.
        pairs = [(self, other)]
        while pairs:
            a, b = pairs.pop()
            if a is b:
                continue
            if not a._same_node(b):
                return False
            pairs.extend(zip(a._children, b._children))
        return True

    def _same_node(self, other: PyTreeDef) -> bool:
        """This node and ``other`` agree, children aside."""
        if (
            self._kind != other._kind
            or self._type is not other._type
            or len(self._children) != len(other._children)
            or self._num_leaves != other._num_leaves
            or self._num_nodes != other._num_nodes
        ):
            return False
        if self._kind in (_DICT, _CUSTOM, _DATACLASS) and self._data is not other._data:
            try:
                return bool(self._data == other._data)
            except Exception as e:
                raise ValueError(
                    f"Comparing the node data (metadata) of two {self._type} nodes raised an "
                    "exception. Node data must be hashable with plain equality; arrays "
                    "cannot be node data."
                ) from e
        return True

    def __hash__(self) -> int:
        # Node data is left out: custom node data need not be hashable, and equal treedefs
        # still hash equally. Children first, with a stack rather than recursion (deep
        # treedefs, as in ``__eq__``); each node keeps its hash.
        if self._hash is None:
            stack = [self]
            while stack:
                node = stack[-1]
                pending = [c for c in node._children if c._hash is None]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                node._hash = hash((node._kind, node._type, len(node._children),
                                   *(c._hash for c in node._children)))
        assert self._hash is not None
        return self._hash

    def __repr__(self) -> str:
        return f"PyTreeDef({self._body()})"

    def _body(self) -> str:
        return str(self._fold(lambda: "*", PyTreeDef._node_text))

    def _node_text(self, parts: list[str]) -> str:
        kind = self._kind
        if kind == _NONE:
            return "None"
        if kind == _TUPLE:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if kind == _LIST:
            return "[" + ", ".join(parts) + "]"
        if kind == _DICT:
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self._data, parts)) + "}"
        assert self._type is not None
        if kind == _NAMEDTUPLE:
            head = f"namedtuple[{self._type.__name__}]"
        else:
            head = f"{self._type.__name__}[{self._data}]"
        return f"CustomNode({head}, [{', '.join(parts)}])"

    def __reduce__(self) -> tuple[Any, ...]:
        return (PyTreeDef, (self._kind, self._type, self._data, self._children))


_LEAF_DEF: Final = PyTreeDef(_LEAF, None, None, ())
_NONE_DEF: Final = PyTreeDef(_NONE, type(None), None, ())


# --------------------------------------------------------------------------------------------
# Flattening.


def _children_and_data(x: Any, kind: int, t: type[Any]) -> tuple[Any, Iterable[Any]]:
    """Node data and children (in flattening order) of a node ``x`` of the given kind."""
    if kind == _TUPLE or kind == _LIST:
        return None, x
    if kind == _DICT:
        keys = _sorted_dict_keys(x)
        return keys, [x[k] for k in keys]
    if kind == _NAMEDTUPLE:
        return None, x
    if kind == _NONE:
        return None, ()
    children, aux = _registry[t].flatten(x)
    return aux, children


def _keyed_children(x: Any, kind: int, t: type[Any]) -> tuple[Any, list[tuple[Any, Any]]]:
    """Like :func:`_children_and_data` but each child paired with its key entry."""
    if kind == _TUPLE or kind == _LIST:
        return None, [(SequenceKey(i), c) for i, c in enumerate(x)]
    if kind == _DICT:
        keys = _sorted_dict_keys(x)
        return keys, [(DictKey(k), x[k]) for k in keys]
    if kind == _NAMEDTUPLE:
        return None, [(GetAttrKey(f), c) for f, c in zip(getattr(t, "_fields"), x)]
    if kind == _NONE:
        return None, []
    reg = _registry[t]
    if reg.flatten_with_keys is None:
        children, aux = reg.flatten(x)
        return aux, [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]
    pairs, aux = reg.flatten_with_keys(x)
    return aux, [(k, c) for k, c in pairs]


# How many containers deep a pytree may nest: JAX's flattening (C++, under CPython's C
# recursion guard) flattens 1498 nested lists and refuses 1499. A cyclic container is
# refused at this depth too.
MAX_DEPTH: Final = 1498

_DONE: Final = object()


@dataclasses.dataclass
class _Open:
    """A node being flattened: its kind, type and data, its remaining children (with their
    key paths) and the structures of those done."""

    kind: int
    type: type[Any]
    data: Any
    rest: Iterator[tuple[KeyPath, Any]]
    done: list[PyTreeDef]


def _too_deep() -> RecursionError:
    return RecursionError(
        f"maximum recursion depth exceeded while flattening a pytree: more than {MAX_DEPTH} "
        "nested containers (a container that holds itself never ends)")


def _flatten_nodes(x: Any, path: KeyPath, leaf_at: Callable[[KeyPath, Any], bool],
                   children_at: Callable[[KeyPath, Any, int, type[Any]],
                                         tuple[Any, Iterator[tuple[KeyPath, Any]]]],
                   on_leaf: Callable[[KeyPath, Any], None]) -> PyTreeDef:
    """The structure of ``x``, its leaves passed to ``on_leaf`` in flattening order: depth
    first with a stack of open nodes, so nesting is bounded by MAX_DEPTH, not by Python's
    recursion limit. ``leaf_at(path, x)`` is the caller's is_leaf; ``children_at`` gives a
    node's data and its (path, child) pairs."""
    stack: list[_Open] = []
    while True:
        t = type(x)
        kind = _LEAF if leaf_at(path, x) else _kind_of(t)
        done: PyTreeDef | None = None
        if kind == _LEAF:
            on_leaf(path, x)
            done = _LEAF_DEF
        elif kind == _NONE:
            done = _NONE_DEF
        else:
            if len(stack) >= MAX_DEPTH:
                raise _too_deep()
            data, rest = children_at(path, x, kind, t)
            stack.append(_Open(kind, t, data, rest, []))
        while True:  # close the nodes whose children are all done
            if done is not None:
                if not stack:
                    return done
                stack[-1].done.append(done)
            top = stack[-1]
            step = next(top.rest, _DONE)
            if step is not _DONE:
                path, x = cast(tuple[KeyPath, Any], step)
                break
            stack.pop()
            done = PyTreeDef(top.kind, top.type, top.data, tuple(top.done))


def _flatten(x: Any, is_leaf: IsLeaf | None, leaves: list[Any]) -> PyTreeDef:
    start = len(leaves)
    try:
        return _flatten_recursive(x, is_leaf, leaves)
    except RecursionError:
        # Nested deeper than Python's recursion limit: again, with a stack of open nodes.
        del leaves[start:]
        return _flatten_iterative(x, is_leaf, leaves)


def _flatten_recursive(x: Any, is_leaf: IsLeaf | None, leaves: list[Any]) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF_DEF
    t = type(x)
    kind = _kind_of(t)
    if kind == _LEAF:
        leaves.append(x)
        return _LEAF_DEF
    if kind == _NONE:
        return _NONE_DEF
    data, children = _children_and_data(x, kind, t)
    return PyTreeDef(kind, t, data,
                     tuple([_flatten_recursive(c, is_leaf, leaves) for c in children]))


def _flatten_iterative(x: Any, is_leaf: IsLeaf | None, leaves: list[Any]) -> PyTreeDef:
    def children_at(path: KeyPath, node: Any, kind: int, t: type[Any]
                    ) -> tuple[Any, Iterator[tuple[KeyPath, Any]]]:
        data, children = _children_and_data(node, kind, t)
        return data, ((path, c) for c in children)
    return _flatten_nodes(
        x, (), (lambda _, v: False) if is_leaf is None else (lambda _, v: bool(is_leaf(v))),
        children_at, lambda _, v: leaves.append(v))


def _flatten_with_path(
    x: Any,
    path: KeyPath,
    is_leaf: Callable[[KeyPath, Any], bool] | None,
    out: list[tuple[KeyPath, Any]],
) -> PyTreeDef:
    start = len(out)
    try:
        return _flatten_with_path_recursive(x, path, is_leaf, out)
    except RecursionError:
        # Nested deeper than Python's recursion limit: again, with a stack of open nodes.
        del out[start:]
        return _flatten_with_path_iterative(x, path, is_leaf, out)


def _flatten_with_path_recursive(
    x: Any,
    path: KeyPath,
    is_leaf: Callable[[KeyPath, Any], bool] | None,
    out: list[tuple[KeyPath, Any]],
) -> PyTreeDef:
    if is_leaf is not None and is_leaf(path, x):
        out.append((path, x))
        return _LEAF_DEF
    t = type(x)
    kind = _kind_of(t)
    if kind == _LEAF:
        out.append((path, x))
        return _LEAF_DEF
    if kind == _NONE:
        return _NONE_DEF
    data, pairs = _keyed_children(x, kind, t)
    kids = tuple([_flatten_with_path_recursive(c, (*path, k), is_leaf, out) for k, c in pairs])
    return PyTreeDef(kind, t, data, kids)


def _flatten_with_path_iterative(
    x: Any,
    path: KeyPath,
    is_leaf: Callable[[KeyPath, Any], bool] | None,
    out: list[tuple[KeyPath, Any]],
) -> PyTreeDef:
    def children_at(at: KeyPath, node: Any, kind: int, t: type[Any]
                    ) -> tuple[Any, Iterator[tuple[KeyPath, Any]]]:
        data, pairs = _keyed_children(node, kind, t)
        return data, (((*at, k), c) for k, c in pairs)
    return _flatten_nodes(
        x, path, (lambda _, v: False) if is_leaf is None else (lambda p, v: bool(is_leaf(p, v))),
        children_at, lambda p, v: out.append((p, v)))


def tree_flatten(tree: Any, is_leaf: IsLeaf | None = None) -> tuple[list[Leaf], PyTreeDef]:
    """Leaves of ``tree`` in depth-first order, and its structure.

    ``is_leaf(x)`` is asked at every subtree before descending; a true answer keeps the whole
    subtree as one leaf.
    """
    leaves: list[Any] = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> Any:
    """Inverse of :func:`tree_flatten`: put ``leaves`` back into ``treedef``'s structure."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: IsLeaf | None = None) -> list[Leaf]:
    """The leaves of ``tree`` in flattening order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: IsLeaf | None = None) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes paired with its key path.

    With ``is_leaf_takes_path=True`` the predicate is called as ``is_leaf(path, x)``.
    """
    predicate: Callable[[KeyPath, Any], bool] | None
    if is_leaf is None or is_leaf_takes_path:
        predicate = is_leaf
    else:
        one_arg = is_leaf

        def predicate(path: KeyPath, x: Any) -> bool:
            return one_arg(x)

    out: list[tuple[KeyPath, Any]] = []
    treedef = _flatten_with_path(tree, (), predicate, out)
    return out, treedef


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> list[tuple[KeyPath, Any]]:
    """``(key path, leaf)`` pairs of ``tree`` in flattening order."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose elements have the given structures."""
    kids = tuple(treedefs)
    for k in kids:
        if not isinstance(k, PyTreeDef):
            raise TypeError(f"treedef_tuple needs PyTreeDefs, got {k!r}")
    return PyTreeDef(_TUPLE, tuple, None, kids)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Structures of the root's immediate children."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is a single node (a leaf, ``None`` or an empty container)."""
    return treedef.num_nodes == 1


def _treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(iterable: Iterable[Any], is_leaf: IsLeaf | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf (under ``is_leaf``, if given)."""
    if is_leaf is None:
        return all(_kind_of(type(x)) == _LEAF for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """Children and node data of the root node of ``tree``.

    Raises ``ValueError`` if ``tree`` is a leaf.
    """
    t = type(tree)
    kind = _kind_of(t)
    if kind == _LEAF:
        raise ValueError(f"can't tree-flatten type: {t}")
    if kind == _NONE:
        return (), None
    if kind == _TUPLE or kind == _LIST:
        return tree, None
    if kind == _DICT:
        keys = _sorted_dict_keys(tree)
        return tuple(tree[k] for k in keys), keys
    if kind == _NAMEDTUPLE:
        node_type = cast(Hashable, t)  # classes hash by identity
        return list(tree), node_type
    children, aux = _registry[t].flatten(tree)
    if kind == _DATACLASS:
        return list(children), aux
    return children, aux


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[Any, Any]], Hashable]:
    """Like :func:`flatten_one_level` with each child paired with its key entry."""
    t = type(tree)
    kind = _kind_of(t)
    if kind == _LEAF:
        raise ValueError(f"can't tree-flatten type: {t}")
    data, pairs = _keyed_children(tree, kind, t)
    if kind == _NONE:
        return (), None
    if kind in (_TUPLE, _LIST, _DICT):
        return tuple(pairs), data
    if kind == _NAMEDTUPLE:
        node_type = cast(Hashable, t)  # classes hash by identity
        return pairs, node_type
    return pairs, data


@final
class PyTreeRegistry:
    """The registry object behind ``default_registry``; spec has exactly one."""

    def flatten(
        self, tree: Any, leaf_predicate: IsLeaf | None = None
    ) -> tuple[list[Any], PyTreeDef]:
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(
        self, tree: Any, leaf_predicate: Callable[[KeyPath, Any], bool] | None = None
    ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
        return tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable[Any], Hashable] | None:
        return None if _kind_of(type(tree)) == _LEAF else flatten_one_level(tree)

    def flatten_one_level_with_keys(
        self, tree: Any
    ) -> tuple[Iterable[tuple[Any, Any]], Hashable] | None:
        return None if _kind_of(type(tree)) == _LEAF else flatten_one_level_with_keys(tree)

    def is_node(self, typ: type[Any]) -> bool:
        return is_tree_node(typ)

    def register_node(
        self,
        nodetype: type[Any],
        flatten_func: FlattenFn,
        unflatten_func: UnflattenFn,
        flatten_with_keys_func: FlattenWithKeysFn | None = None,
    ) -> None:
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(
        self, nodetype: type[Any], data_fields: Sequence[str], meta_fields: Sequence[str]
    ) -> None:
        register_dataclass(nodetype, data_fields, meta_fields)

    def __repr__(self) -> str:
        return "spec._src.core.tree_util.default_registry"


default_registry: Final = PyTreeRegistry()


# --------------------------------------------------------------------------------------------
# Structure mismatch diagnostics (used by tree_map and broadcasting).


def _child_keys(tree: Any) -> tuple[Any, ...]:
    return tuple(k for k, _ in flatten_one_level_with_keys(tree)[0])


def _prefix_error(
    key_path: KeyPath, prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf | None = None
) -> Iterator[Callable[[str], ValueError]]:
    """Describe, as ValueError factories taking the prefix tree's name, where ``prefix_tree``
    fails to be a prefix of ``full_tree``.  Stops descending below the first problem in each
    subtree."""
    # A leaf is a prefix of anything.
    if _treedef_is_strict_leaf(tree_structure(prefix_tree, is_leaf=is_leaf)):
        return

    where = f"pytree structure error at {{name}}{keystr(key_path)}"
    if type(prefix_tree) is not type(full_tree):
        p_type, f_type = type(prefix_tree), type(full_tree)
        yield lambda name: ValueError(
            where.format(name=name) + f": different types, {p_type} in the prefix tree "
            f"and {f_type} in the full tree."
        )
        return

    # Same type and not a leaf: both can be flattened one level.
    p_children, p_meta = flatten_one_level(prefix_tree)
    f_children, f_meta = flatten_one_level(full_tree)
    p_kids, f_kids = tuple(p_children), tuple(f_children)
    p_keys, f_keys = _child_keys(prefix_tree), _child_keys(full_tree)

    if isinstance(prefix_tree, (list, tuple)):
        # Sequences report a length difference rather than a key-set difference.
        if len(p_kids) != len(f_kids):
            ty_name, p_len, f_len = type(prefix_tree).__name__, len(p_kids), len(f_kids)
            yield lambda name: ValueError(
                where.format(name=name) + f": different lengths of {ty_name}, {p_len} in "
                f"the prefix tree and {f_len} in the full tree."
            )
            return
    elif len(p_kids) != len(f_kids):
        diff: set[Any] | None
        try:
            diff = set(p_keys).symmetric_difference(f_keys)
        except Exception:
            diff = None
        p_type = type(prefix_tree)
        only_one = "" if diff is None else (
            "; keys in only one of them: " + " ".join(str(k) for k in diff))
        yield lambda name: ValueError(
            where.format(name=name) + f": {p_type} nodes with different numbers of "
            f"children, {len(p_kids)} in the prefix tree (keys "
            f"{' '.join(str(k) for k in p_keys)}) and {len(f_kids)} in the full tree (keys "
            f"{' '.join(str(k) for k in f_keys)}){only_one}."
        )
        return

    if p_meta != f_meta:
        p_str, f_str = str(p_meta), str(f_meta)
        meta_diff = textwrap.indent(
            "\n".join(difflib.ndiff(p_str.splitlines(), f_str.splitlines())), prefix="    "
        )
        p_type = type(prefix_tree)
        yield lambda name: ValueError(
            where.format(name=name) + f": {p_type} nodes with different node data, "
            f"{p_str} in the prefix tree and {f_str} in the full tree; line diff:\n"
            f"{meta_diff}"
        )
        return

    # Roots agree, so the disagreement is further down.  (JAX does not pass is_leaf down.)
    for k, a, b in zip(p_keys, p_kids, f_kids):
        yield from _prefix_error((*key_path, k), a, b)


def prefix_errors(
    prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf | None = None
) -> list[Callable[[str], ValueError]]:
    """All places where ``prefix_tree`` is not a prefix of ``full_tree`` (not exported by JAX,
    but used by the transformations to word in_axes/out_axes errors)."""
    return list(_prefix_error((), prefix_tree, full_tree, is_leaf))


def _up_to_all(
    treedef: PyTreeDef,
    tree: Any,
    rest: Sequence[Any],
    is_leaf: Callable[..., bool] | None,
    who: str,
) -> list[list[Any]]:
    """flatten_up_to every tree of ``rest``, turning a failure into JAX's key-path error."""
    out: list[list[Any]] = []
    for r in rest:
        try:
            out.append(treedef.flatten_up_to(r))
        except Exception:
            err = next(_prefix_error((), tree, r, is_leaf), None)
            if err is None:
                raise
            raise err(f"{who} tree") from None
    return out


# --------------------------------------------------------------------------------------------
# Maps and reductions.


def tree_map(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf | None = None
) -> Any:
    """Apply ``f`` leafwise; ``rest`` trees must have ``tree``'s structure as a prefix, and
    their corresponding subtrees are passed as extra arguments."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = _up_to_all(treedef, tree, rest, is_leaf, "tree_map")
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_map_with_path(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[..., bool] | None = None,
    is_leaf_takes_path: bool = False,
) -> Any:
    """Like :func:`tree_map`, with each leaf's key path as ``f``'s first argument."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = _up_to_all(treedef, tree, rest, is_leaf, "tree_map_with_path")
    return treedef.unflatten(f(p, x, *xs) for (p, x), *xs in zip(pairs, *others))


class Unspecified:
    """Marker for an omitted reduction initializer (``None`` is a valid initializer)."""


_UNSPECIFIED: Final = Unspecified()


def tree_reduce(
    function: Callable[[T, Any], T],
    tree: Any,
    initializer: T | Unspecified = _UNSPECIFIED,
    is_leaf: IsLeaf | None = None,
) -> T:
    """``functools.reduce`` over the leaves of ``tree``."""
    leaves = tree_leaves(tree, is_leaf=is_leaf)
    if isinstance(initializer, Unspecified):
        out: T = functools.reduce(function, leaves)
        return out
    return functools.reduce(function, leaves, initializer)


def _halving_reduce(seq: list[T], op: Callable[[T, T], T], identity: T | Unspecified) -> T:
    if not seq:
        if isinstance(identity, Unspecified):
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    if len(seq) == 1:
        return seq[0]
    mid = len(seq) // 2
    return op(_halving_reduce(seq[:mid], op, identity), _halving_reduce(seq[mid:], op, identity))


def tree_reduce_associative(
    operation: Callable[[T, T], T],
    tree: Any,
    *,
    identity: T | Unspecified = _UNSPECIFIED,
    is_leaf: IsLeaf | None = None,
) -> T:
    """Reduce the leaves with an associative ``operation`` as a balanced binary tree (split at
    the midpoint), so the grouping of operands matches JAX."""
    leaves: list[T] = tree_leaves(tree, is_leaf=is_leaf)
    return _halving_reduce(leaves, operation, identity)


def tree_all(tree: Any, *, is_leaf: IsLeaf | None = None) -> bool:
    """``all()`` over the leaves of ``tree``."""
    return all(tree_leaves(tree, is_leaf=is_leaf))


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Turn a tree of structure outer∘inner into one of structure inner∘outer.

    When ``inner_treedef`` is None it is taken from the first outer-leaf subtree.
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size = inner_treedef.num_leaves
    outer_size = outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    rows = [flat[i * inner_size : (i + 1) * inner_size] for i in range(outer_size)]
    # With no outer leaves there are no columns either, and rebuilding the inner structure
    # then fails unless it has no leaves: JAX behaves the same way.
    return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in zip(*rows))


def broadcast_prefix(
    prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf | None = None
) -> list[Any]:
    """Each leaf of ``prefix_tree`` repeated once per leaf of the matching ``full_tree``
    subtree (not exported by JAX; used for in_axes-style arguments)."""
    result: list[Any] = []
    leaves, treedef = tree_flatten(prefix_tree, is_leaf=is_leaf)
    try:
        subtrees = treedef.flatten_up_to(full_tree)
    except ValueError:
        errors = prefix_errors(prefix_tree, full_tree)
        if not errors:
            raise
        raise errors[0]("broadcast_prefix prefix_tree") from None
    for x, sub in zip(leaves, subtrees):
        result.extend([x] * tree_structure(sub).num_leaves)
    return result


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: IsLeaf | None = None) -> Any:
    """``full_tree``'s structure filled with the leaves of its prefix ``prefix_tree``."""
    return tree_structure(full_tree).unflatten(broadcast_prefix(prefix_tree, full_tree, is_leaf))


# --------------------------------------------------------------------------------------------
# Partial.


class _HashableCallableShim:
    """Callable wrapper that forwards calls, hashing and equality to the wrapped callable.

    ``functools.partial`` merges a partial passed as ``func`` into the new one; wrapping it in
    this shim stops that, so Partial's pytree children are exactly the arguments given.
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        self.fun = fun

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.fun(*args, **kw)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _HashableCallableShim):
            return bool(self.fun == other.fun)
        return bool(self.fun == other)

    def __repr__(self) -> str:
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):  # type: ignore[type-arg]
    """``functools.partial`` that is a pytree: the bound arguments are children, the function
    is node data.  Use it to pass partially applied functions through transformations."""

    def __new__(cls, func: Callable[..., Any], *args: Any, **kw: Any) -> Partial:
        if isinstance(func, functools.partial):
            inner = func
            shim = _HashableCallableShim(inner)
            out: Partial = super().__new__(cls, shim, *args, **kw)
            # Expose the wrapped partial's fields on the shim only after construction: had
            # they been there before, functools.partial would have merged them.
            shim.func = inner.func  # type: ignore[attr-defined]
            shim.args = inner.args  # type: ignore[attr-defined]
            shim.keywords = inner.keywords  # type: ignore[attr-defined]
            return out
        return super().__new__(cls, func, *args, **kw)


def _partial_flatten(p: Partial) -> tuple[tuple[tuple[Any, ...], dict[str, Any]], Any]:
    return (p.args, p.keywords), p.func


def _partial_unflatten(func: Any, children: Any) -> Partial:
    args, keywords = children
    return Partial(func, *args, **keywords)


register_pytree_node(Partial, _partial_flatten, _partial_unflatten)


# --------------------------------------------------------------------------------------------
# Standard-library containers JAX registers as custom nodes.


def _ordereddict_flatten_with_keys(
    d: collections.OrderedDict[Any, Any],
) -> tuple[tuple[tuple[DictKey, Any], ...], tuple[Any, ...]]:
    return tuple((DictKey(k), v) for k, v in d.items()), tuple(d.keys())


def _ordereddict_unflatten(keys: tuple[Any, ...], values: Any) -> collections.OrderedDict[Any, Any]:
    return collections.OrderedDict(zip(keys, values, strict=True))


def _defaultdict_flatten_with_keys(
    d: collections.defaultdict[Any, Any],
) -> tuple[tuple[tuple[DictKey, Any], ...], tuple[Any, tuple[Any, ...]]]:
    # Sorted like dict, but the factory is node data too; unsortable keys fail with the
    # comparison's own TypeError, as in JAX.
    keys = tuple(sorted(d))
    return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


def _defaultdict_unflatten(
    data: tuple[Any, tuple[Any, ...]], values: Any
) -> collections.defaultdict[Any, Any]:
    factory, keys = data
    return collections.defaultdict(factory, zip(keys, values, strict=True))


register_pytree_with_keys(
    collections.OrderedDict, _ordereddict_flatten_with_keys, _ordereddict_unflatten
)
register_pytree_with_keys(
    collections.defaultdict, _defaultdict_flatten_with_keys, _defaultdict_unflatten
)
