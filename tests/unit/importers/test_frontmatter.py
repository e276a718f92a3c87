"""The bounded frontmatter reader: the YAML subset, JSON, and refusals instead of surprises."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oharness.importers.frontmatter import FrontmatterError, split_frontmatter


def test_yaml_subset_fields() -> None:
    text = (
        "---\nname: x\ndescription: 'It''s quoted'\ntags: [a, b]\nkeywords:\n  - c\n  - d\n"
        "notes: |\n  line one\n  line two\nflag: true\nnothing: ~\n---\n\nBody\n"
    )
    parsed = split_frontmatter(text)
    assert parsed.kind == "yaml" and parsed.body == "Body\n"
    assert parsed.fields == {
        "name": "x",
        "description": "It's quoted",
        "tags": ["a", "b"],
        "keywords": ["c", "d"],
        "notes": "line one\nline two",
        "flag": True,
        "nothing": None,
    }


def test_json_and_none() -> None:
    assert split_frontmatter('---\n{"id": "a"}\n---\nB').fields == {"id": "a"}
    assert split_frontmatter("# Title\nbody").kind == "none"


@pytest.mark.parametrize(
    "head",
    [
        "a: &x [1, 2]",
        "b: *x",
        "c: !!python/object:os.system ls",
        "d: {nested: map}",
        "e: [[1], [2]]",
        "  indented: x",
        "no colon here",
    ],
)
def test_outside_the_subset_is_refused(head: str) -> None:
    with pytest.raises(FrontmatterError):
        split_frontmatter(f"---\n{head}\n---\nbody")


def test_size_is_bounded() -> None:
    with pytest.raises(FrontmatterError, match="characters"):
        split_frontmatter("---\n" + "k: v\n" * 10_000 + "---\nbody")


@given(st.text(max_size=400))
def test_any_text_parses_or_is_refused(text: str) -> None:
    try:
        parsed = split_frontmatter("---\n" + text + "\n---\nbody")
    except FrontmatterError:
        return
    assert isinstance(parsed.fields, dict)
