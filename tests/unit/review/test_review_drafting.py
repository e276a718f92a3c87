"""The small model's merge draft is untrusted (spec 05.2): links, credentials, shape."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from oharness.errors import ValidationError
from oharness.memory.workspace import Workspace
from oharness.review import open_review
from oharness.review.drafting import SYSTEM_PROMPT

FAKE_KEY = "AKIAIOSFODNN7EXAMPLF"

if TYPE_CHECKING:
    from conftest import FakeClock


def _pair(workspace: Workspace) -> tuple[str, str, str]:
    s = workspace.service
    target = s.remember("Style guide", "The guide.")
    a = s.remember("Pricing cards use fills", f"Fills. See [[{target.id}]].", tags="design")
    b = s.remember("Pricing cards: fill not borders", "No borders.", tags="design")
    return a.id, b.id, target.id


def _draft(workspace: Workspace, clock: FakeClock, answer: object) -> object:
    a, b, _ = _pair(workspace)
    review = open_review(workspace, clock=clock)
    plan = review.plan([a, b])
    seen: list[tuple[str, str]] = []

    def model(system: str, prompt: str) -> str:
        seen.append((system, prompt))
        return answer if isinstance(answer, str) else json.dumps(answer)

    draft = review.draft(plan, "model", model)
    assert seen and seen[0][0] == SYSTEM_PROMPT and a in seen[0][1] and b in seen[0][1]
    return draft


def test_links_to_unseen_ids_lose_their_brackets(workspace: Workspace, clock: FakeClock) -> None:
    a, b, target = _pair(workspace)
    review = open_review(workspace, clock=clock)
    plan = review.plan([a, b])
    body = f"Merged. [[{target}]] [[{b}]] [[invented-note]] [[another-fake-1]]"
    draft = review.draft(plan, "model", lambda s, p: json.dumps({"summary": "S", "body": body}))
    assert f"[[{target}]]" in draft.body  # shown (linked from a merged note)
    assert f"[[{a}]]" in draft.body and f"[[{b}]]" not in draft.body  # deleted -> kept
    assert "[[invented-note]]" not in draft.body and "invented-note" in draft.body
    assert "[[another-fake-1]]" not in draft.body
    assert any("not shown" in warning for warning in draft.warnings)


def test_credentials_are_redacted_everywhere(workspace: Workspace, clock: FakeClock) -> None:
    draft = _draft(
        workspace,
        clock,
        {"summary": f"Key {FAKE_KEY}", "tags": ["design", FAKE_KEY], "body": f"k={FAKE_KEY}\n"},
    )
    assert FAKE_KEY not in draft.summary + draft.body + " ".join(draft.tags)  # type: ignore[attr-defined]
    assert "[REDACTED]" in draft.body  # type: ignore[attr-defined]
    assert draft.tags == ("design",)  # type: ignore[attr-defined]


def test_a_fenced_answer_is_read(workspace: Workspace, clock: FakeClock) -> None:
    text = "```json\n" + json.dumps({"summary": "Cards use fills", "body": "One."}) + "\n```"
    draft = _draft(workspace, clock, text)
    assert draft.summary == "Cards use fills" and draft.source == "model"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "answer",
    [
        "I merged them for you!",
        {"summary": "No body"},
        {"summary": "Empty", "body": "   "},
        ["not", "an", "object"],
    ],
)
def test_unusable_answers_are_refused(
    workspace: Workspace, clock: FakeClock, answer: object
) -> None:
    with pytest.raises(ValidationError, match="--draft concat"):
        _draft(workspace, clock, answer)


def test_odd_summaries_and_tags_are_made_safe(workspace: Workspace, clock: FakeClock) -> None:
    draft = _draft(
        workspace,
        clock,
        {"summary": "line one\nline two " + "x" * 300, "tags": "not-a-list", "body": "B."},
    )
    assert "\n" not in draft.summary and len(draft.summary) <= 200  # type: ignore[attr-defined]
    assert draft.tags == ("design",)  # type: ignore[attr-defined]
    assert len(draft.warnings) >= 2  # type: ignore[attr-defined]


def test_a_model_draft_without_a_model_is_not_available(
    workspace: Workspace, clock: FakeClock
) -> None:
    from oharness.errors import UnavailableError

    a, b, _ = _pair(workspace)
    review = open_review(workspace, clock=clock)
    with pytest.raises(UnavailableError, match="concat"):
        review.draft(review.plan([a, b]), "model", None)
