"""The typing constraints on what a hijax primitive's rules return (SPEC.md
9.8a, H4 and H5, H8, H9): each check names the primitive, the rule and the
constraint, so that a wrong rule fails at trace time with that message, not
later inside spec."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spec._src.core.hitypes import MappingSpec, is_high
from spec._src.core.interpreter import canonical_aval_of
from spec._src.core.registry import fail, require
from spec._src.core.types import ArrayType
from spec._src.interpreters import batching
from spec._src.interpreters.ad_util import Zero


def flattened(name: str, rule: str, what: str, treedef: Any, tree: Any,
              flatten: Callable[[], list[Any]]) -> list[Any]:
    """``flatten()`` (``tree`` flattened up to ``treedef``), a structure
    mismatch reported as H4 (ValueError, JAX's class for it)."""
    try:
        return flatten()
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} H4: {rule} returned {what} whose tree structure is not "
                         f"{treedef} ({err})") from None


def layout(a: ArrayType) -> str:
    """Shape, dtype and explicit sharding, as printed (a replicated dimension
    prints alike with or without a sharding; weak types and shard_map's
    varying axes are not compared)."""
    if is_high(a):
        return f"{type(a).__qualname__}:{a.str_short(True)}"
    return a.update(weak_type=False, vma=frozenset(), munreduced=frozenset(),
                    mreduced=frozenset()).str_short(True)


def _aval(name: str, constraint: str, what: str, x: Any) -> ArrayType:
    try:
        return canonical_aval_of(x)
    except TypeError:
        fail(name, constraint, f"{what} is a {type(x).__name__}, not an array")


def check_primals(name: str, rule: str, outs: Sequence[Any],
                  want: Sequence[ArrayType]) -> None:
    """H5: the primal outputs of a rule have ``out_aval``'s types."""
    for i, (out, w) in enumerate(zip(outs, want)):
        got = _aval(name, "H5", f"primal output {i} of {rule}", out)
        require(layout(got) == layout(w), name, "H5",
                f"{rule} returned {got.str_short(True)} for primal output {i}, out_aval says "
                f"{w.str_short(True)}")


def check_tangents(name: str, rule: str, tangents: Sequence[Any],
                   want: Sequence[ArrayType]) -> None:
    """H8: each output tangent is None, a symbolic zero or an array of the
    tangent type of its ``out_aval`` leaf."""
    for i, (t, w) in enumerate(zip(tangents, want)):
        if t is None:
            continue
        got = t.aval if isinstance(t, Zero) else _aval(name, "H8",
                                                       f"output tangent {i} of {rule}", t)
        tw = w.tangent_type()
        require(layout(got) == layout(tw), name, "H8",
                f"{rule} returned {got.str_short(True)} for output tangent {i}, the tangent type "
                f"of out_aval's leaf is {tw.str_short(True)}")


def check_out_dims(name: str, rule: str, dims: Sequence[Any],
                   want: Sequence[ArrayType]) -> None:
    """H9: each result's batch dimension is None or an axis of the batched
    result (0 to its per-example rank)."""
    for i, (d, w) in enumerate(zip(dims, want)):
        if is_high(w) or isinstance(d, MappingSpec):
            require(d is None or isinstance(d, MappingSpec), name, "H9",
                    f"{rule} returned batch dimension {d!r} for result {i} of hi type "
                    f"{w.str_short(True)}: expected None or a MappingSpec", ValueError)
            continue
        ok = d is None or (isinstance(d, int) and not isinstance(d, bool)
                           and 0 <= d <= len(w.shape))
        require(ok, name, "H9", f"{rule} returned batch dimension {d!r} for result {i} of "
                f"type {w.str_short(True)}: expected None or an int from 0 to {len(w.shape)}",
                ValueError)


def check_batched(name: str, axis: batching.AxisData, outs: Sequence[Any],
                  dims: Sequence[Any], want: Sequence[ArrayType]) -> None:
    """H9: the results of ``batch`` have ``out_aval``'s types batched at the
    dimensions it returns."""
    for i, (out, d, w) in enumerate(zip(outs, dims, want)):
        if is_high(w):
            continue  # as in JAX, a hi result's type is its value's own
        got = _aval(name, "H9", f"result {i} of batch", out)
        bw = batching.batched_aval(w, d, axis.size, axis.explicit_mesh_axis)
        require(layout(got) == layout(bw), name, "H9",
                f"batch returned {got.str_short(True)} for result {i} at batch dimension {d}, "
                f"expected {bw.str_short(True)} (out_aval's {w.str_short(True)} batched)")


def check_unbatched(name: str, natural: Sequence[Any], want: Sequence[Any]) -> None:
    """H9: ``batch_dim_rule`` may call a result unbatched only if the
    batched ``expand`` leaves it so."""
    for i, (d, w) in enumerate(zip(natural, want)):
        require(not (w is None and d is not None), name, "H9",
                f"batch_dim_rule returned None (unbatched) for result {i}, but the batched "
                "expand gives it a batch dimension", ValueError)


__all__ = ["check_batched", "check_out_dims", "check_primals", "check_tangents",
           "check_unbatched", "flattened", "layout"]
