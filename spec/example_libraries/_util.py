"""The list helpers JAX's example libraries re-export from ``jax._src.util``: a ``map`` and a
``zip`` that insist on equal lengths and return lists, and the inverse of zipping pairs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def _lengths_agree(caller: str, columns: list[list[Any]]) -> None:
    lengths = tuple(len(column) for column in columns)
    for position, length in enumerate(lengths):
        if length != lengths[0]:
            raise ValueError(
                f"{caller}() argument {position} has length {length} but argument 0 has "
                f"length {lengths[0]}. All lengths: {lengths}")


def safe_map(f: Callable[..., Any], *iterables: Iterable[Any]) -> list[Any]:
    """``list(map(f, *iterables))``; ValueError when the iterables differ in length."""
    columns = [list(it) for it in iterables]
    _lengths_agree("safe_map", columns)
    return [f(*row) for row in zip(*columns)]


def safe_zip(*iterables: Iterable[Any]) -> list[tuple[Any, ...]]:
    """``list(zip(*iterables))``; ValueError when they differ in length, TypeError for none."""
    if not iterables:
        raise TypeError("safe_zip requires at least 1 argument.")
    columns = [list(it) for it in iterables]
    _lengths_agree("safe_zip", columns)
    return list(zip(*columns))


def unzip2(pairs: Iterable[tuple[Any, Any]]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Two tuples, of the first and of the second members of ``pairs`` (both empty for none)."""
    firsts: list[Any] = []
    seconds: list[Any] = []
    for first, second in pairs:
        firsts.append(first)
        seconds.append(second)
    return tuple(firsts), tuple(seconds)
