"""Every primitive is one declaration with all of its sections accounted for."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from spec._src.core.interpreter import NotApplicable, Pending, Primitive
from spec.rules import REGISTRY, missing_sections

SPEC_MD = Path(__file__).resolve().parents[2] / "SPEC.md"


def test_registry_is_populated() -> None:
    assert len(REGISTRY) > 100


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_typing_and_impl_are_written(name: str) -> None:
    prim = REGISTRY[name]
    assert callable(prim.typing) and callable(prim.impl)


def test_missing_sections_are_explicit_markers() -> None:
    for name, section, issue in missing_sections():
        value = REGISTRY[name].section(section)
        assert isinstance(value, Pending), (name, section)
        assert issue and issue != "absent"
    for prim in REGISTRY.values():
        for section in Primitive.SECTIONS:
            value = prim.section(section)
            assert callable(value) or isinstance(value, (Pending, NotApplicable)), (prim, section)


def test_only_later_issues_are_pending() -> None:
    sections = {section for _, section, _ in missing_sections()}
    assert sections <= {"jvp", "transpose", "batch", "sharding"}


def test_every_primitive_is_specified_in_spec_md() -> None:
    text = SPEC_MD.read_text()
    headings: set[str] = set()
    for line in re.findall(r"^### (.+)$", text, flags=re.MULTILINE):
        headings.update(word.strip("`") for word in re.split(r"[,/\s]+", line) if word)
    missing = sorted(set(REGISTRY) - headings)
    assert not missing, f"SPEC.md lacks sections for {missing}"


def test_missing_sections_lists_a_pending_marker() -> None:
    prim = Primitive("probe", typing=lambda x: [x], impl=lambda x: [np.asarray(x)])
    REGISTRY["probe"] = prim
    try:
        assert ("probe", "jvp", "autodiff") in missing_sections()
    finally:
        del REGISTRY["probe"]
