"""Every primitive is one declaration with all of its sections accounted for."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from spec._src.core.interpreter import Default, NotApplicable, Pending, Primitive
from spec.rules import REGISTRY, declare, missing_sections

SPEC_MD = Path(__file__).resolve().parents[2] / "SPEC.md"


def test_registry_is_populated() -> None:
    assert len(REGISTRY) > 100


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_typing_and_impl_are_written(name: str) -> None:
    prim = REGISTRY[name]
    assert callable(prim.typing) and callable(prim.impl)


def test_missing_sections_are_explicit_markers() -> None:
    for name, section, issue in missing_sections():
        value = REGISTRY[name].field(section)
        assert isinstance(value, Pending), (name, section)
        assert issue and issue != "absent"
    for prim in REGISTRY.values():
        for section in Primitive.SECTIONS:
            value = prim.section(section)
            assert callable(value) or isinstance(value, (Pending, NotApplicable)), (prim, section)


def test_no_field_is_missing() -> None:
    assert missing_sections() == []


def test_fields_are_sections_hooks_and_flags() -> None:
    fields = Primitive.FIELDS
    assert len(set(fields)) == len(fields)
    assert set(fields) == {*Primitive.SECTIONS, *Primitive.HOOKS, *Primitive.FLAGS}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_field_is_a_rule_a_marker_a_default_or_a_flag(name: str) -> None:
    prim = REGISTRY[name]
    for field in Primitive.SECTIONS:
        value = prim.field(field)
        assert callable(value) or isinstance(value, (Pending, NotApplicable)), (name, field)
    for field in Primitive.HOOKS:
        value = prim.field(field)
        assert callable(value) or isinstance(value, (Default, NotApplicable)), (name, field)
    for field in Primitive.FLAGS:
        assert isinstance(prim.field(field), bool), (name, field)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_no_attribute_outside_the_declared_fields(name: str) -> None:
    # Every rule comes through the declaration: nothing is attached later.
    assert set(vars(REGISTRY[name])) == {"name", "doc", *Primitive.FIELDS}


def test_declare_takes_every_field() -> None:
    params = set(inspect.signature(declare).parameters)
    assert params == {"name", "doc", *Primitive.FIELDS}


def test_missing_sections_lists_a_field_that_is_not_a_rule() -> None:
    prim = Primitive("probe", typing=lambda x: [x], impl=lambda x: [np.asarray(x)],
                     jvp=NotApplicable("probe"), transpose=NotApplicable("probe"),
                     batch=NotApplicable("probe"), sharding=NotApplicable("probe"),
                     lowering=NotApplicable("probe"))
    prim.dce = "not a rule"  # type: ignore[assignment]
    REGISTRY["probe"] = prim
    try:
        assert [m for m in missing_sections() if m[0] == "probe"] == [("probe", "dce", "absent")]
    finally:
        del REGISTRY["probe"]


def test_only_rule_sections_can_be_pending() -> None:
    sections = {section for _, section, _ in missing_sections()}
    assert sections <= {"jvp", "transpose", "batch", "sharding", "lowering"}


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
        assert ("probe", "jvp", "the jvp rule") in missing_sections()
    finally:
        del REGISTRY["probe"]
