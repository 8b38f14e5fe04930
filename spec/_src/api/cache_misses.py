"""``jax_explain_cache_misses``: why a jit call traced its function anew.

A jit call whose key (argument structure, argument types, static
arguments, configuration) matches no cached trace logs, at WARNING level on
the ``spec`` logger, where the call was made and what differs from the
closest key seen before for the same function: a function never traced, the
input pytree, or the input types leaf by leaf (named by argument and key
path). Other differences (static arguments, configuration) have no
explanation, as in JAX.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spec._src.core import source_info, tree_util
from spec._src.core.types import ArrayType

__all__ = ["CacheKey", "explain_miss", "logger"]

logger = logging.getLogger("spec._src.interpreters.partial_eval")

_WEAK_TYPES_URL = "https://docs.jax.dev/en/latest/101/type_promotion.html#weak-types"

# (options, input treedef, input types, static args, static kwargs, config, ...)
CacheKey = Any
_TREE, _AVALS = 1, 2


def _defined_at(fun: Callable[..., Any]) -> str:
    code = getattr(inspect.unwrap(fun), "__code__", None)
    return "<unknown>" if code is None else f"{code.co_filename}:{code.co_firstlineno}"


def _fun_name(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _leaf_names(fun: Callable[..., Any], treedef: Any, static_argnums: Iterable[int]
                ) -> list[str]:
    """Each input leaf's name: its parameter's name and key path in it."""
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    statics = set(static_argnums)
    dynamic = [n for i, n in enumerate(params) if i not in statics]
    placeholder = tree_util.tree_unflatten(treedef, list(range(treedef.num_leaves)))
    names: list[str] = []
    for path, _ in tree_util.tree_flatten_with_path(placeholder)[0]:
        group, *rest = path
        if getattr(group, "idx", 1) == 0 and rest:  # positional: (args, kwargs)[0][i]
            i = getattr(rest[0], "idx", 0)
            head = dynamic[i] if i < len(dynamic) else f"args[{i}]"
            names.append(head + tree_util.keystr(tuple(rest[1:])))
        else:
            names.append(tree_util.keystr(tuple(rest)).removeprefix("[").removesuffix("]")
                         .strip("'") if len(rest) == 1 else tree_util.keystr(tuple(rest)))
    return names


def _type_text(aval: ArrayType, weak_differs: bool) -> str:
    text = aval.str_short(True)
    return f"{text}({{}}){{weak_type={aval.weak_type}}}" if weak_differs else text


def _type_differences(names: Sequence[str], now: Sequence[ArrayType],
                      before: Sequence[ArrayType]) -> list[str]:
    lines = []
    for name, a, b in zip(names, now, before):
        if a == b:
            continue
        weak = a.weak_type != b.weak_type
        line = f"  * at {name}, now {_type_text(a, weak)} and before {_type_text(b, weak)}"
        lines.append(line + (_WEAK_TYPES_URL if weak else ""))
    return lines


def _distance(now: Sequence[ArrayType], before: Sequence[ArrayType]) -> int:
    return sum((a.shape != b.shape) + (a.dtype != b.dtype) + (a.weak_type != b.weak_type)
               for a, b in zip(now, before))


class _Leaf:
    """A placeholder leaf, to compare argument structures."""


_LEAF = _Leaf()


def _structure(key: CacheKey) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's (positional, keyword) arguments with leaves (static ones
    included) as placeholders."""
    treedef = key[_TREE]
    dyn_args, dyn_kwargs = tree_util.tree_unflatten(treedef, [_LEAF] * treedef.num_leaves)
    args = list(dyn_args)
    for i, _ in key[3]:
        args.insert(i, _LEAF)
    return tuple(args), {**dyn_kwargs, **{k: _LEAF for k, _ in key[4]}}


def _describe_node(x: Any) -> str:
    return "pytree leaf" if x is _LEAF else str(type(x))


def _tree_differences(now: Any, before: Any, path: str) -> list[str]:
    """Where two argument structures first differ, down each branch."""
    where = f"  * at input path {path}, now "
    if now is _LEAF and before is _LEAF:
        return []
    if type(now) is not type(before):
        return [f"{where}{_describe_node(now)} and before {_describe_node(before)}, "
                "so their Python types differ"]
    if isinstance(now, dict):
        if set(now) != set(before):
            return [f"{where}{type(now)} with {len(now)} child and before {type(before)} with "
                    f"{len(before)} child, so the numbers of children do not match, with the "
                    f"symmetric difference of key sets: {set(now) ^ set(before)}"]
        return [line for k in now
                for line in _tree_differences(now[k], before[k], f"{path}[{k!r}]")]
    if isinstance(now, (tuple, list)):
        if len(now) != len(before):
            return [f"{where}{type(now).__name__} of length {len(now)} and before "
                    f"{type(before).__name__} of length {len(before)}, so the lengths do not "
                    "match"]
        return [line for i, (a, b) in enumerate(zip(now, before))
                for line in _tree_differences(a, b, f"{path}[{i}]")]
    if tree_util.tree_structure(now) != tree_util.tree_structure(before):
        return [f"{where}{tree_util.tree_structure(now)} and before "
                f"{tree_util.tree_structure(before)}"]
    return []


def _closest_tree(now: Any, seen: Sequence[CacheKey]) -> list[str]:
    """The differences from the structure with the fewest differences (then
    the nearest number of leaves)."""
    n_now = len(tree_util.tree_leaves(now))

    def rank(k: CacheKey) -> tuple[int, int]:
        before = _structure(k)
        return (len(_tree_differences(now, before, "")),
                abs(n_now - len(tree_util.tree_leaves(before))))

    return _tree_differences(now, _structure(min(seen, key=rank)), "")


def _closest(key: CacheKey, seen: Sequence[CacheKey], names: Sequence[str]) -> list[str]:
    """Explain against the closest key whose difference can be explained:
    first the keys with the same structure (their types), then the others
    (their structure); static values and configuration cannot be."""
    same_options = [k for k in reversed(seen) if k[0] == key[0] and k[5:] == key[5:]]
    now = _structure(key)
    same_tree = [k for k in same_options if not _tree_differences(now, _structure(k), "")]
    typed = [k for k in same_tree if k[_TREE] == key[_TREE] and k[3:5] == key[3:5]]
    if typed:
        best = min(typed, key=lambda k: _distance(key[_AVALS], k[_AVALS]))
        diffs = _type_differences(names, key[_AVALS], best[_AVALS])
        if diffs:
            return ["  different input types:", *diffs]
    other_trees = [k for k in same_options if k not in same_tree]
    if other_trees:
        return ["  different input pytree:", *_closest_tree(now, other_trees)]
    return ["  cache miss explanation unavailable"]


# Call sites that have missed with a function never seen before: a second
# such miss at one site suggests a function re-created on every call.
_NEVER_SEEN_AT: set[str] = set()


def explain_miss(fun: Callable[..., Any], key: CacheKey, seen: Sequence[CacheKey],
                 static_argnums: Iterable[int]) -> None:
    """Log why the call with ``key`` found no trace among ``seen``."""
    where = source_info.summarize(source_info.caller())
    head = f"TRACING CACHE MISS at {where}:"
    if not seen:
        lines = [head, "  never seen function:",
                 f"    {_fun_name(fun)} id={id(fun)} defined at {_defined_at(fun)}"]
        if where in _NEVER_SEEN_AT:
            lines += ["  but seen another function defined on the same line; maybe the "
                      "function is", "  being re-defined repeatedly, preventing caching?"]
        _NEVER_SEEN_AT.add(where)
    else:
        names = _leaf_names(fun, key[_TREE], static_argnums)
        lines = [head, f"  for {_fun_name(fun)} defined at {_defined_at(fun)}",
                 "  all previously seen cache keys differ. For the closest previous key:",
                 *_closest(key, seen, names)]
    logger.warning("\n".join(lines))
