"""Comparing printed outputs whose numbers come from contractions.

spec sums the products of a contraction exactly and rounds once (SPEC.md, the numerical contract
of contractions); XLA rounds as it adds. A printed matrix product can therefore differ from
JAX's in the last bits of a number, and with them in NumPy's column padding. These helpers
compare the text outside the numbers exactly (up to the padding) and the numbers within a
stated tolerance: a few units in the last place of float32, plus, where the printing rounded
the numbers to fewer digits than they have, half a unit in the last printed digit of each.
"""

from __future__ import annotations

import re

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
FLOAT32_ULPS = 8 * 2.0 ** -23


def _printed_unit(token: str) -> float:
    """One unit in the last digit that ``token`` shows."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _layout(text: str) -> list[str]:
    """The text with its numbers taken out, split at whitespace: what must match exactly."""
    return NUMBER.sub(" # ", text).split()


def differences(ours: str, theirs: str, *, rounded: bool = False,
                rel: float = FLOAT32_ULPS, scale: float = 0.0) -> list[str]:
    """Why ``ours`` and ``theirs`` do not print the same values (empty when they do).
    ``rounded``: the printing rounded the values (to a number of significant digits), so each
    printed number may sit half a unit of its last digit from the value. ``scale``: the size
    of the values a printed number was computed from (a printed difference of two products
    carries their rounding, not its own): the bound is relative to the larger of the two."""
    if _layout(ours) != _layout(theirs):
        return [f"the text around the numbers differs:\n{ours}\nvs\n{theirs}"]
    problems = []
    for a, b in zip(NUMBER.findall(ours), NUMBER.findall(theirs), strict=True):
        x, y = float(a), float(b)
        printing = (_printed_unit(a) + _printed_unit(b)) / 2 if rounded else 0.0
        allowed = printing + rel * max(abs(x), abs(y), scale)
        if abs(x - y) > allowed:
            problems.append(f"{a} vs {b} (allowed difference {allowed:.3g})")
    return problems


def assert_prints_match_up_to_rounding(ours: str, theirs: str, *, rounded: bool = False,
                                       scale: float = 0.0) -> None:
    """Exactly equal text, or the same text whose numbers agree within ``differences``'s bound."""
    if ours != theirs:
        problems = differences(ours, theirs, rounded=rounded, scale=scale)
        assert not problems, "\n".join(problems)
