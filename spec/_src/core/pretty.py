"""A small document-layout printer (Lindig's "strictly pretty" algorithm).

A document is text, breaks, concatenation, nesting and groups. A group is laid
out flat (breaks print as their text) when the whole group fits in what is
left of the line, otherwise its own breaks become newlines at the current
indentation. Jaxpr text is built from these combinators, which is what gives
it JAX's line-breaking at width 80.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class Doc:
    def __add__(self, other: Doc) -> Doc:
        return Concat((self, other))

    def format(self, width: int = 80) -> str:
        return _layout(self, width)

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True, slots=True)
class Text(Doc):
    text: str


@dataclass(frozen=True, slots=True)
class Break(Doc):
    text: str


@dataclass(frozen=True, slots=True)
class Concat(Doc):
    children: tuple[Doc, ...]


@dataclass(frozen=True, slots=True)
class Nest(Doc):
    indent: int
    child: Doc


@dataclass(frozen=True, slots=True)
class Group(Doc):
    child: Doc


@dataclass(frozen=True, slots=True)
class Annotation(Doc):
    """A comment for the line it lands on (zero width): the lines that carry
    annotations are padded to one column, the width of the text's longest
    line, then ``# note`` follows; a line's second and later notes go on
    lines of their own below it."""

    note: str


NIL: Doc = Concat(())


def annotation(note: str) -> Doc:
    return Annotation(note)


def text(s: str) -> Doc:
    return Text(s)


def brk(s: str = " ") -> Doc:
    return Break(s)


def concat(docs: Sequence[Doc]) -> Doc:
    return Concat(tuple(docs))


def nest(indent: int, doc: Doc) -> Doc:
    return Nest(indent, doc)


def group(doc: Doc) -> Doc:
    return Group(doc)


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
    if not docs:
        return NIL
    parts: list[Doc] = [docs[0]]
    for d in docs[1:]:
        parts += [sep, d]
    return Concat(tuple(parts))


_FLAT, _BREAK = 0, 1
_Item = tuple[int, int, Doc]  # (indent, mode, doc)


def _fits(doc: Doc, room: int) -> bool:
    """Does ``doc``, laid out flat, fit in ``room`` columns?"""
    stack: list[Doc] = [doc]
    while stack and room >= 0:
        d = stack.pop()
        if isinstance(d, Text):
            room -= len(d.text)
        elif isinstance(d, Break):
            room -= len(d.text)
        elif isinstance(d, Concat):
            stack.extend(reversed(d.children))
        elif isinstance(d, (Nest, Group)):
            stack.append(d.child)
    return room >= 0


def _layout(doc: Doc, width: int) -> str:
    out: list[str] = []
    notes: dict[int, list[str]] = {}  # line number -> its annotations
    line = 0
    column = 0
    stack: list[_Item] = [(0, _BREAK, doc)]
    while stack:
        indent, mode, d = stack.pop()
        if isinstance(d, Annotation):
            notes.setdefault(line, []).append(d.note)
        elif isinstance(d, Text):
            out.append(d.text)
            column += len(d.text)
        elif isinstance(d, Break):
            if mode == _FLAT:
                out.append(d.text)
                column += len(d.text)
            else:
                out.append("\n" + " " * indent)
                column = indent
                line += 1
        elif isinstance(d, Concat):
            stack.extend((indent, mode, c) for c in reversed(d.children))
        elif isinstance(d, Nest):
            stack.append((indent + d.indent, mode, d.child))
        elif isinstance(d, Group):
            flat = mode == _FLAT or _fits(d.child, width - column)
            stack.append((indent, _FLAT if flat else _BREAK, d.child))
    text = "".join(out)
    return _annotated(text, notes) if notes else text


def _annotated(text: str, notes: dict[int, list[str]]) -> str:
    lines = text.split("\n")
    # One column for the whole text: past its longest line, annotated or not.
    column = max(len(ln) for ln in lines)
    out: list[str] = []
    for i, ln in enumerate(lines):
        first, *rest = notes.get(i, [None])
        if first is None:
            out.append(ln)
            continue
        out.append(f"{ln.ljust(column)} # {first}")
        out.extend(f"{'':{column}} # {note}" for note in rest)
    return "\n".join(out)
