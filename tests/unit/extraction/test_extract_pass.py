"""One extraction pass over a real workspace: what the model sees and what gets written."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from extraction_helpers import Extract, bodies, conversation, note, remember_zephyr

from oharness.extraction import SYSTEM, Turn
from oharness.harness.model import ModelRequest
from oharness.harness.scripted import ScriptedModel
from oharness.memory.workspace import Workspace


def word(number: int) -> str:
    """A made-up word of its own for each number (so no two flood notes share a topic)."""
    letters = "bcdfghjklmnpqrstvwxz"
    text = ""
    while True:
        number, digit = divmod(number, len(letters))
        text += letters[digit] + "aeiou"[digit % 5]
        if number == 0:
            return text.capitalize() + "x"


GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
Prompt = Callable[[ScriptedModel], str]


def test_the_guidance_says_what_is_worth_a_note_and_what_is_not() -> None:
    for phrase in (
        "a correction",
        "a decision and its reason",
        "ephemeral task state",
        "git history",
        "not confirmed",
        "secrets",
        "[[new:2]]",
    ):
        assert phrase in " ".join(SYSTEM.split()), phrase


def test_the_related_notes_are_shown_in_full_and_the_rest_by_summary(
    workspace: Workspace, extract: Extract, prompt_of: Prompt
) -> None:
    service = workspace.service
    zephyr = remember_zephyr(workspace)
    trains = [
        service.remember(
            f"Zephyr release train note {n}", f"Zephyr detail {n}.", tags="zephyr, release"
        ).id
        for n in range(4)
    ]
    unrelated = service.remember("The office cat is called Miso", "Miso likes boxes.").id
    report = extract({"new": [], "updates": []}, full_notes=2)
    prompt = prompt_of(extract.model)  # type: ignore[attr-defined]
    assert len(report.shown_full) == 2 and set(report.shown_listed) <= {zephyr, *trains}
    assert set(report.shown_full + report.shown_listed) == {zephyr, *trains}
    for note_id in report.shown_full:
        assert f'<note id="{note_id}"' in prompt and 'updatable="yes"' in prompt
    for note_id in report.shown_listed:
        assert f"({note_id})" in prompt and f'<note id="{note_id}"' not in prompt
    assert unrelated not in prompt
    assert "We deploy with the Zephyr release train" in prompt


def test_the_full_bodies_stay_within_their_budget(workspace: Workspace, extract: Extract) -> None:
    big = remember_zephyr(workspace, body="Zephyr " * 2000)
    small = workspace.service.remember(
        "Zephyr release train timetable", "Tuesdays at noon.", tags="zephyr, release"
    ).id
    report = extract({"new": []}, full_chars=3000)
    assert report.shown_full == [small] and big in report.shown_listed


def test_a_note_is_created_from_the_answer(workspace: Workspace, extract: Extract) -> None:
    report = extract(
        {"new": [note("Deploys go through Zephyr", "Not the Jenkins job.", tags=["deploy"])]}
    )
    [saved] = report.written
    assert saved.action == "created"
    stored = workspace.service.find(saved.id)
    assert stored.note.body == "Not the Jenkins job.\n" and stored.note.tags == ("deploy",)


def test_an_update_of_a_shown_note_backs_up_the_replaced_version(
    workspace: Workspace, extract: Extract
) -> None:
    zephyr = remember_zephyr(workspace)
    before = workspace.service.store("project").read_bytes(zephyr)
    report = extract({"updates": [{"id": zephyr, "body": "Tuesdays at noon; hotfixes any day."}]})
    [saved] = report.written
    assert saved.action == "updated" and saved.id == zephyr
    assert "hotfixes any day" in workspace.service.find(zephyr).note.body
    [backup] = workspace.service.backups().recent()
    assert backup.reason == "extract-update" and backup.note_id == zephyr
    assert workspace.service.backups().read_bytes(backup) == before


def test_updates_of_ids_it_was_not_shown_are_dropped(
    workspace: Workspace, extract: Extract
) -> None:
    hidden = workspace.service.remember("The office cat is called Miso", "Boxes.").id
    zephyr = remember_zephyr(workspace)
    listed = workspace.service.remember(
        "Zephyr release train history", "Since 2024.", tags="zephyr"
    ).id
    report = extract(
        {
            "updates": [
                {"id": hidden, "body": "Miso is a dog now."},
                {"id": "never-existed-1", "body": "x"},
                {"id": listed, "body": "rewritten"},
                {"id": zephyr, "body": "Kept."},
            ]
        },
        full_notes=1,
    )
    assert [saved.id for saved in report.written] == [zephyr]
    reasons = " ".join(item.reason for item in report.dropped)
    assert f"note {hidden!r} was not shown" in reasons
    assert f"note {listed!r} was shown by summary only" in reasons
    assert bodies(workspace)["The office cat is called Miso"] == "Boxes.\n"


def test_links_to_ids_it_was_not_shown_lose_their_brackets(
    workspace: Workspace, extract: Extract
) -> None:
    zephyr = remember_zephyr(workspace)
    hidden = workspace.service.remember("The office cat is called Miso", "Boxes.").id
    report = extract(
        {"new": [note("Hotfix rules", f"See [[{zephyr}]], [[{hidden}]] and [[made-up-9]].")]}
    )
    body = workspace.service.find(report.written[0].id).note.body
    assert f"[[{zephyr}]]" in body
    assert f" {hidden} and made-up-9." in body and f"[[{hidden}]]" not in body


def test_an_update_keeps_the_links_its_note_already_had(
    workspace: Workspace, extract: Extract
) -> None:
    hidden = workspace.service.remember("The office cat is called Miso", "Boxes.").id
    zephyr = remember_zephyr(workspace, body=f"Tuesdays. Ask [[{hidden}]].\n")
    extract({"updates": [{"id": zephyr, "body": f"Tuesdays at noon. Ask [[{hidden}]]."}]})
    assert f"[[{hidden}]]" in workspace.service.find(zephyr).note.body


def test_new_references_are_rewritten_to_ids(workspace: Workspace, extract: Extract) -> None:
    report = extract(
        {
            "new": [
                note("Release checklist lives in the wiki", "Before each train, see [[new:2]]."),
                note("Hotfix approvals need two reviewers", "A rule of the team."),
            ]
        }
    )
    ids = {saved.summary: saved.id for saved in report.written}
    hotfix = ids["Hotfix approvals need two reviewers"]
    checklist = workspace.service.find(ids["Release checklist lives in the wiki"])
    assert checklist.note.body == f"Before each train, see [[{hotfix}]].\n"
    assert workspace.service.backups().recent() == []  # no rewrite was needed


def test_a_cycle_of_new_references_links_both_ways(workspace: Workspace, extract: Extract) -> None:
    report = extract(
        {
            "new": [
                note("Staging database is refreshed nightly", "Its twin: [[new:2]]."),
                note("Production backups are kept thirty days", "Its twin: [[new:1]]."),
                note("Self reference is harmless", "Me: [[new:3]]."),
            ]
        }
    )
    saved = {s.summary: s.id for s in report.written}
    staging, production = (
        saved["Staging database is refreshed nightly"],
        saved["Production backups are kept thirty days"],
    )
    notes = bodies(workspace)
    assert notes["Staging database is refreshed nightly"] == f"Its twin: [[{production}]].\n"
    assert notes["Production backups are kept thirty days"] == f"Its twin: [[{staging}]].\n"
    assert (
        notes["Self reference is harmless"] == f"Me: [[{saved['Self reference is harmless']}]].\n"
    )
    assert "new:" not in "".join(notes.values())


def test_dangling_new_references_become_plain_text(workspace: Workspace, extract: Extract) -> None:
    extract(
        {
            "new": [
                note("Release checklist lives in the wiki", "See [[new:9]] and [[new:2]]."),
                {"summary": "Dropped for its type", "body": "x", "type": "diary"},
            ]
        }
    )
    body = bodies(workspace)["Release checklist lives in the wiki"]
    assert body == "See  and Dropped for its type.\n"


def test_a_new_note_duplicating_a_fully_shown_note_becomes_an_update_of_it(
    workspace: Workspace, extract: Extract
) -> None:
    zephyr = remember_zephyr(workspace)
    report = extract(
        {
            "new": [
                note(
                    "Deploys go out through the Zephyr release train",
                    "Hotfixes may leave any day.",
                    tags=["zephyr", "hotfix"],
                ),
                note("Link to the duplicate", "See [[new:1]]."),
            ]
        }
    )
    assert len(workspace.service.all_notes()) == 2
    updated = workspace.service.find(zephyr).note
    assert updated.body == "Zephyr leaves on Tuesdays.\n\nHotfixes may leave any day.\n"
    assert updated.tags == ("zephyr", "deploy", "release", "hotfix")
    assert bodies(workspace)["Link to the duplicate"] == f"See [[{zephyr}]].\n"
    assert {s.action for s in report.written} == {"updated", "created"}
    [backup] = workspace.service.backups().recent()
    assert backup.reason == "extract-update"


def test_a_new_note_duplicating_a_note_shown_by_summary_is_dropped(
    workspace: Workspace, extract: Extract
) -> None:
    zephyr = remember_zephyr(workspace)
    report = extract(
        {"new": [note("Deploys go out through the Zephyr release train", "Other words.")]},
        full_notes=0,
    )
    assert report.written == [] and len(workspace.service.all_notes()) == 1
    assert f"likely duplicate of {zephyr!r}" in report.dropped[0].reason


def test_two_new_notes_on_one_topic_make_one_note(workspace: Workspace, extract: Extract) -> None:
    report = extract(
        {
            "new": [
                note("Staging database is refreshed nightly", "At 02:00."),
                note("Staging database refreshed nightly", "Around two."),
            ]
        }
    )
    assert len(report.written) == 1 and len(workspace.service.all_notes()) == 1
    assert "likely duplicate of new note 1" in report.dropped[0].reason


def test_a_credential_in_a_body_is_saved_redacted(workspace: Workspace, extract: Extract) -> None:
    report = extract({"new": [note("CI token location", f"Token {GITHUB_TOKEN} in the vault.")]})
    [saved] = report.written
    assert workspace.service.find(saved.id).note.body == "Token [REDACTED] in the vault.\n"
    for path in workspace.service.store("project").directory.iterdir():
        assert GITHUB_TOKEN not in path.read_text(encoding="utf-8", errors="replace")


def test_the_conversation_is_redacted_before_the_model_reads_it(
    extract: Extract, prompt_of: Prompt
) -> None:
    extract({"new": []}, turns=conversation(f"my token is {GITHUB_TOKEN}"))
    prompt = prompt_of(extract.model)  # type: ignore[attr-defined]
    assert GITHUB_TOKEN not in prompt and "[REDACTED]" in prompt


def test_invalid_entries_are_logged_and_the_valid_ones_saved(
    workspace: Workspace, extract: Extract, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="oharness.extraction"):
        report = extract({"new": [note("x" * 300), note("Valid note about Zephyr trains")]})
    assert [s.summary for s in report.written] == ["Valid note about Zephyr trains"]
    assert "new 1 dropped: summary is 300 characters" in caplog.text


def test_a_thousand_new_notes_write_at_most_the_limit(
    workspace: Workspace, extract: Extract
) -> None:
    flood = {"new": [note(f"{word(n)} {word(n + 5000)} {word(n + 9000)}") for n in range(1000)]}
    report = extract(flood)
    assert len(report.written) == 10 and len(workspace.service.all_notes()) == 10
    assert len(report.dropped) == 990


def test_a_note_changed_while_the_model_answered_is_not_overwritten(
    workspace: Workspace, extract: Extract
) -> None:
    zephyr = remember_zephyr(workspace)

    def answer(request: ModelRequest) -> dict[str, object]:
        workspace.service.remember(
            "Deploys go out through the Zephyr release train", "A person's edit.", id=zephyr
        )
        return {"updates": [{"id": zephyr, "body": "The model's version."}]}

    report = extract(answer)
    assert report.written == []
    assert workspace.service.find(zephyr).note.body == "A person's edit.\n"
    assert "changed after it was shown" in report.dropped[0].reason


def test_a_dry_run_writes_nothing_and_says_what_it_would(
    workspace: Workspace, extract: Extract
) -> None:
    zephyr = remember_zephyr(workspace)
    before = bodies(workspace)
    report = extract(
        {
            "new": [note("Release checklist lives in the wiki", "See [[new:1]].")],
            "updates": [{"id": zephyr, "body": "Tuesdays, and hotfixes."}],
        },
        dry_run=True,
    )
    assert bodies(workspace) == before and workspace.service.backups().recent() == []
    assert [(s.action, s.id) for s in report.saved] == [
        ("would-create", None),
        ("would-update", zephyr),
    ]
    assert report.saved[1].body == "Tuesdays, and hotfixes.\n"
    assert report.written == []


def test_a_stretch_with_nothing_said_asks_no_model(extract: Extract) -> None:
    report = extract({"new": []}, turns=[Turn(1, "tool", '{"ok": true}', tool_name="memory")])
    assert not report.asked and extract.model.requests == []  # type: ignore[attr-defined]


def test_a_long_stretch_keeps_its_newest_part_within_the_budget(
    extract: Extract, prompt_of: Prompt
) -> None:
    said = [f"message number {n} " + "words " * 50 for n in range(40)]
    report = extract({"new": []}, turns=conversation(*said), conversation_chars=3000)
    prompt = prompt_of(extract.model)  # type: ignore[attr-defined]
    assert "message number 39" in prompt and "message number 0 " not in prompt
    assert report.turns_left_out > 0 and f"[{report.turns_left_out} earlier messages" in prompt
    assert len(prompt) < 3000 + len(prompt.split("<conversation>")[0]) + 200


def test_a_hand_written_note_holding_a_credential_is_listed_never_updated(
    workspace: Workspace, extract: Extract, prompt_of: Prompt
) -> None:
    folder = workspace.service.store("project").directory
    folder.mkdir(parents=True, exist_ok=True)
    text = (
        '---\n{"id": "zephyr-ci-1", "summary": "Zephyr release train CI", "tags": ["zephyr"]}\n'
        f"---\nThe Zephyr deploy token is {GITHUB_TOKEN}.\n"
    )
    (folder / "zephyr-ci-1.md").write_text(text, encoding="utf-8")
    report = extract({"updates": [{"id": "zephyr-ci-1", "body": "The token is [REDACTED]."}]})
    assert report.shown_full == [] and report.shown_listed == ["zephyr-ci-1"]
    prompt = prompt_of(extract.model)  # type: ignore[attr-defined]
    assert GITHUB_TOKEN not in prompt and "(zephyr-ci-1)" in prompt
    assert report.written == [] and "shown by summary only" in report.dropped[0].reason
    assert (folder / "zephyr-ci-1.md").read_text(encoding="utf-8") == text


def test_a_stretch_read_twice_writes_its_notes_once(workspace: Workspace, extract: Extract) -> None:
    """After a crash between the writes and the cursor, the next pass reads the stretch again."""
    answer = {"new": [note("Deploys go through Zephyr", "Tuesdays at noon.", tags=["deploy"])]}
    first = extract(answer)
    second = extract(answer)
    assert len(first.written) == 1 and second.written == []
    assert len(workspace.service.all_notes()) == 1


@pytest.mark.parametrize(
    ("body", "secret"),
    [
        ("Staging: log in as root with hunter2hunter2!", "hunter2hunter2"),
        (
            "CI token, encoded: Z2hwX1I4a1QybVE5dkxwNFp0N1J3WTNuQjZjRHhGMWhKNXNBMGdVZQ==",
            "Z2hwX1I4a1QybVE5dkxwNFp0",
        ),
        ("The AWS secret for CI is 9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko", "9dF3kLm2Qx7Rt"),
    ],
    ids=["prose password", "base64 token", "bare AWS secret"],
)
def test_extraction_keeps_no_credential_of_the_attack_report(
    workspace: Workspace, extract: Extract, body: str, secret: str
) -> None:
    extract({"new": [note("Staging access", body)]})
    for path in workspace.service.store("project").directory.iterdir():
        assert secret not in path.read_text(encoding="utf-8", errors="replace")
