"""Extraction through the installed ``oharness`` entry point against a model server on
loopback: the announcement in ``oharness chat`` and ``oharness memory extract``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli_support import Chat
from stub_model_server import StubModelServer, openai_text

ZEPHYR_NOTE = {
    "summary": "Deploys go out through the Zephyr release train",
    "body": "Every Tuesday at noon; hotfixes any day.",
    "tags": ["zephyr", "deploy"],
}


def _configure(home: Path, **auto_extract: Any) -> None:
    config = {"memory": {"autoExtract": auto_extract}}
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")


def _records(home: Path, session_id: str) -> list[dict[str, Any]]:
    [path] = list((home / "sessions").glob(f"*/{session_id}.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _state(home: Path, session_id: str) -> dict[str, Any]:
    found = [r["value"] for r in _records(home, session_id) if r.get("key") == "extraction"]
    return found[-1]


def _extraction_prompts(stub: StubModelServer) -> list[str]:
    return [
        body["messages"][1]["content"]
        for body in stub.bodies()
        if "durable memory of an AI agent" in body["messages"][0]["content"]
    ]


def _notes(project_dir: Path) -> list[str]:
    return sorted(path.name for path in (project_dir / "MEMORY").glob("*.md"))


def test_chat_announces_what_was_saved_on_the_next_message_and_the_cursor_survives_a_resume(
    chat: Chat, stub: StubModelServer, home: Path, project_dir: Path
) -> None:
    _configure(home, onStop=True, minUserTurns=1)
    stub.script(openai_text("Noted."), openai_text(f"Sure:\n{json.dumps({'new': [ZEPHYR_NOTE]})}"))
    first = chat.say("We deploy with the Zephyr release train, every Tuesday at noon.")
    assert first.stdout.strip() == "Noted."
    assert "from this conversation" not in first.stderr
    [saved] = _notes(project_dir)  # written after the answer, before the process ended
    note_id = saved.removesuffix(".md")
    session_id = chat.session_id(first)
    assert _state(home, session_id)["cursor"] == 2

    stub.script(openai_text("Fine."), openai_text('{"new": [], "updates": []}'))
    second = chat.say("And Zephyr hotfixes on Fridays?", "--resume", session_id)
    lines = second.stderr.splitlines()
    assert lines[0] == (
        "saved 1 memory from this conversation: "
        f"Deploys go out through the Zephyr release train ({note_id})"
    )
    assert lines[1] == "recalled 1 memory"  # the announcement comes first
    first_prompt, second_prompt = _extraction_prompts(stub)
    assert "We deploy with the Zephyr release train" in first_prompt
    assert "And Zephyr hotfixes on Fridays?" in second_prompt
    assert "User: We deploy with the Zephyr" not in second_prompt  # read once, not again
    assert f'<note id="{note_id}"' in second_prompt  # the saved note is shown to the next pass
    assert _state(home, session_id)["cursor"] == 4

    third = chat.say("Thanks.", "--resume", session_id, "--json")
    assert json.loads(third.stdout)["extracted"] == []
    assert "from this conversation" not in third.stderr


def test_memory_extract_runs_a_pass_by_hand_dry_run_first(
    chat: Chat, stub: StubModelServer, home: Path, project_dir: Path
) -> None:
    stub.script(openai_text("Noted."))
    session_id = chat.session_id(chat.say("We deploy with Zephyr on Tuesdays."))
    answer = json.dumps({"new": [ZEPHYR_NOTE]})

    stub.script(openai_text(answer))
    dry = chat.ok(
        "memory", "extract", session_id, "--dry-run", "--json", "--model", "openai:stub-small"
    )
    report = json.loads(dry.stdout)
    assert report["dryRun"] and report["saved"][0]["action"] == "would-create"
    assert report["saved"][0]["body"] == "Every Tuesday at noon; hotfixes any day.\n"
    assert _notes(project_dir) == []
    assert not [r for r in _records(home, session_id) if r.get("key") == "extraction"]

    stub.script(openai_text(answer))
    done = chat.ok("memory", "extract", session_id, "--model", "openai:stub-small")
    assert done.stdout.startswith("saved 1 memory from this conversation: Deploys go out")
    assert len(_notes(project_dir)) == 1
    assert _state(home, session_id)["cursor"] == 2
    assert stub.requests[-1].body["model"] == "stub-small"

    asked = len(stub.requests)
    again = chat.ok("memory", "extract", session_id, "--model", "openai:stub-small")
    assert "nothing to read" in again.stdout and len(stub.requests) == asked
    stub.script(openai_text('{"new": []}'))
    whole = chat.ok("memory", "extract", session_id, "--all", "--dry-run", "--model", "openai:m")
    assert "would write 0 notes" in whole.stdout and len(stub.requests) == asked + 1
    assert "We deploy with Zephyr on Tuesdays." in stub.requests[-1].body["messages"][1]["content"]


def test_memory_extract_reports_dropped_entries_and_refuses_subagents(
    chat: Chat, stub: StubModelServer, home: Path
) -> None:
    stub.script(openai_text("Noted."))
    session_id = chat.session_id(chat.say("We deploy with Zephyr on Tuesdays."))
    stub.script(openai_text(json.dumps({"updates": [{"id": "not-shown-1", "body": "x"}]})))
    result = chat.ok("memory", "extract", session_id, "--model", "openai:stub-small")
    assert "saved nothing" in result.stdout
    assert "dropped update 1 (not-shown-1): note 'not-shown-1' was not shown" in result.stderr

    [path] = list((home / "sessions").glob(f"*/{session_id}.jsonl"))
    child = path.with_name("20260101-000000-abcdef.jsonl")
    header = {"type": "session", "version": 1, "id": "20260101-000000-abcdef", "subagent": True}
    child.write_text(json.dumps({**header, "projectId": path.parent.name}) + "\n", "utf-8")
    refused = chat.run("memory", "extract", "20260101-000000-abcdef", "--model", "openai:x")
    assert refused.returncode == 1 and "subagent" in refused.stderr


def test_memory_extract_of_an_unknown_session_is_a_clear_error(chat: Chat) -> None:
    result = chat.run("memory", "extract", "20990101-000000-000000", "--model", "openai:x")
    assert result.returncode == 1 and "no session '20990101-000000-000000'" in result.stderr


def test_memory_extract_refuses_a_session_of_another_project(
    chat: Chat, stub: StubModelServer, tmp_path: Path
) -> None:
    stub.script(openai_text("Noted."))
    session_id = chat.session_id(chat.say("We deploy with Zephyr on Tuesdays."))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    chat.ok("project", "init", cwd=elsewhere)
    refused = chat.run("memory", "extract", session_id, "--model", "openai:x", cwd=elsewhere)
    assert refused.returncode == 1 and "not to this project" in refused.stderr
    assert not (elsewhere / "MEMORY").exists() or not list((elsewhere / "MEMORY").glob("*.md"))
