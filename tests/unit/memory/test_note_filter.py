"""Which notes a listing or a search keeps (``NoteFilter``): each field alone and together,
refusals that name the fix, and a filtered search that still finds the best kept matches."""

from __future__ import annotations

import pytest

from oharness.errors import ValidationError
from oharness.memory.note_filter import EVERY_NOTE, NoteFilter
from oharness.memory.workspace import Workspace


def _seed(workspace: Workspace) -> dict[str, str]:
    service = workspace.service
    return {
        "deploy": service.remember(
            "Deploys go out on Tuesdays", "Deploy at noon.", type="project", tags="deploy ops"
        ).id,
        "runner": service.remember(
            "Deploy runner is ci-1", "The deploy runner host.", type="reference", tags="ops"
        ).id,
        "untyped": service.remember("Deploy freeze in December", "No deploys.", type=None).id,
        "person": service.remember("I deploy from my laptop", "Deploy habit.", type="user").id,
    }


def _listed(workspace: Workspace, filters: NoteFilter) -> set[str]:
    return {item.id for item in workspace.service.listing(0, 50, filters).items}


def test_each_field_alone_and_together(workspace: Workspace) -> None:
    ids = _seed(workspace)
    assert _listed(workspace, EVERY_NOTE) == set(ids.values())
    assert _listed(workspace, NoteFilter.of(scope="user")) == {ids["person"]}
    assert _listed(workspace, NoteFilter.of(type="none")) == {ids["untyped"]}
    assert _listed(workspace, NoteFilter.of(type="reference")) == {ids["runner"]}
    assert _listed(workspace, NoteFilter.of(tag=" OPS ")) == {ids["deploy"], ids["runner"]}
    both = NoteFilter.of(scope="project", type="project", tag="ops")
    assert _listed(workspace, both) == {ids["deploy"]}
    listing = workspace.service.listing(0, 1, NoteFilter.of(tag="ops"))
    assert listing.total == 2 and listing.next_offset == 1  # the total counts the kept notes


def test_a_filtered_search_keeps_the_best_kept_matches(workspace: Workspace) -> None:
    ids = _seed(workspace)
    service = workspace.service
    everything = [hit.id for hit in service.search("deploy", 10)]
    assert set(everything) == set(ids.values())
    kept = [hit.id for hit in service.search("deploy", 1, NoteFilter.of(tag="ops"))]
    assert len(kept) == 1 and kept[0] in {ids["deploy"], ids["runner"]}
    assert kept[0] == next(i for i in everything if i in {ids["deploy"], ids["runner"]})
    assert service.search("deploy", 10, NoteFilter.of(scope="user", type="project")) == []


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"scope": "global"}, "scope", "use project or user"),
        ({"type": "memo"}, "type", "none (notes without a type)"),
        ({"tag": "x" * 101}, "tag", "at most 100"),
    ],
)
def test_a_value_that_can_never_match_is_refused_with_the_fix(
    fields: dict[str, str], field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        NoteFilter.of(**fields)
    assert refused.value.details["field"] == field and words in refused.value.message


def test_empty_fields_keep_every_note() -> None:
    assert NoteFilter.of("", None, "  ") == EVERY_NOTE and not EVERY_NOTE.narrows
