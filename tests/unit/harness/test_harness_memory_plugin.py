"""The memory plugin: index, recall and its session rules, tools and their permissions
(spec 09.1, 02.3, 03.2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from harness_helpers import MakeHarness, remember_zephyr, users_words

from oharness.harness.memory_plugin import MemoryPlugin
from oharness.harness.message import Message
from oharness.harness.permission import ApprovalRequest
from oharness.harness.scripted import ScriptedModel, text_reply, tool_reply
from oharness.memory.workspace import Workspace


def recalled(message: Message) -> list[str]:
    return [item["id"] for item in message.metadata.get("memory", {}).get("recalled", [])]


def test_the_index_is_in_the_system_prompt_of_every_run(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "hello")
    assert "No notes yet" in model.requests[-1].system
    note_id = remember_zephyr(workspace)
    harness.send(session, "hello again")
    assert (
        f"Deploys go out through the Zephyr release train ({note_id})" in model.requests[-1].system
    )


def test_recall_is_a_separate_block_recorded_in_metadata(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    note_id = remember_zephyr(workspace)
    harness = make_harness()
    session = harness.new_session()
    result = harness.send(session, "How do we ship with Zephyr?")
    [user] = [m for m in session.messages if m.role == "user"]
    assert user.text == "How do we ship with Zephyr?"
    [block] = user.attachments
    assert block.plugin == "memory" and block.kind == "recalled-memory"
    assert block.text.startswith("<recalled-memory>") and note_id in block.text
    assert recalled(user) == [note_id]
    [event] = result.events_of("memory.recalled")
    assert event.plugin == "memory" and event.data["count"] == 1
    assert model.requests[0].messages[0].attachments == (block,)


def test_nothing_is_attached_to_an_unrelated_message(
    make_harness: MakeHarness, workspace: Workspace
) -> None:
    remember_zephyr(workspace)
    harness = make_harness()
    session = harness.new_session()
    result = harness.send(session, "What is two plus two?")
    assert session.messages[0].attachments == () and result.events_of("memory.recalled") == []
    assert "memory" not in session.messages[0].metadata


def test_a_carried_note_is_not_attached_again_even_after_a_restart(
    make_harness: MakeHarness, workspace: Workspace
) -> None:
    note_id = remember_zephyr(workspace)
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "How do we ship with Zephyr?")
    harness.send(session, "Zephyr again?")
    assert [recalled(m) for m in session.messages if m.role == "user"] == [[note_id], []]
    harness.close()

    restarted = make_harness()
    resumed = restarted.resume_session(session.id)
    restarted.send(resumed, "Zephyr, one more time")
    assert recalled(resumed.messages[-2]) == []
    assert users_words(resumed) == [
        "How do we ship with Zephyr?",
        "Zephyr again?",
        "Zephyr, one more time",
    ]


def test_a_session_seen_first_after_a_restart_is_read_back_from_metadata(
    make_harness: MakeHarness, workspace: Workspace
) -> None:
    remember_zephyr(workspace)
    first = make_harness()
    session = first.new_session()
    first.send(session, "How do we ship with Zephyr?")
    second = make_harness()  # no resume hook: the plugin rebuilds from the messages it is given
    plugin = second.host.plugin("memory")
    assert isinstance(plugin, MemoryPlugin)
    assert plugin.memory_for(session).carried == {("project", recalled(session.messages[0])[0])}


def test_compaction_frees_the_notes_of_summarised_messages(
    make_harness: MakeHarness, workspace: Workspace
) -> None:
    note_id = remember_zephyr(workspace)
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "How do we ship with Zephyr?")
    harness.send(session, "What is two plus two?")
    harness.send(session, "And three plus three?")
    events: list[str] = []
    done = harness.compact(session, on_event=lambda event: events.append(event.kind))
    assert done is not None and done.replaced[0].id == "m1"
    assert events == ["compaction", "memory.released"]
    harness.send(session, "Zephyr again?")
    assert recalled(session.messages[-2]) == [note_id]


def test_subagents_do_not_recall(make_harness: MakeHarness, workspace: Workspace) -> None:
    remember_zephyr(workspace)
    harness = make_harness()
    parent = harness.new_session()
    child = harness.new_session(parent=parent)
    assert child.subagent and child.parent_id == parent.id
    result = harness.send(child, "How do we ship with Zephyr?")
    assert child.messages[0].attachments == () and result.events_of("memory.recalled") == []
    first_line = (child.path or Path()).read_text(encoding="utf-8").splitlines()[0]
    assert json.loads(first_line)["subagent"] is True


class Approver:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return self.answer


REMEMBER = {"summary": "Staging is read-only on weekends", "body": "Maintenance window."}


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_remember_runs_without_asking(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace, mode: str
) -> None:
    approver = Approver(False)
    model.add(tool_reply("remember", REMEMBER), text_reply("Saved."))
    harness = make_harness(permission_mode=mode, approver=approver)
    result = harness.send(harness.new_session(), "remember that")
    [outcome] = result.tools
    assert outcome.permission == "allow" and outcome.result["created"] is True
    assert approver.asked == []
    assert [e.data["count"] for e in result.events_of("memory.saved")] == [1]
    assert len(workspace.service.all_notes()) == 1


def test_plan_mode_refuses_remember(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    model.add(tool_reply("remember", REMEMBER), text_reply("Could not."))
    harness = make_harness(permission_mode="plan")
    result = harness.send(harness.new_session(), "remember that")
    assert result.tools[0].result["error"]["code"] == "permission_denied"
    assert workspace.service.all_notes() == [] and result.events_of("memory.saved") == []


def test_an_ask_rule_naming_remember_still_asks(
    make_harness: MakeHarness, model: ScriptedModel, open_ws: Callable[..., Workspace], home: Path
) -> None:
    (home / "config.json").write_text(
        json.dumps({"permissions": {"ask": ["remember"]}}), encoding="utf-8"
    )
    approver = Approver(True)
    model.add(tool_reply("remember", REMEMBER), text_reply("Saved."))
    harness = make_harness(workspace=open_ws(), approver=approver)
    result = harness.send(harness.new_session(), "remember that")
    assert [r.tool for r in approver.asked] == ["remember"]
    assert result.tools[0].permission == "approved"


def test_forget_always_asks(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    note_id = remember_zephyr(workspace)
    model.add(tool_reply("forget", {"id": note_id}), text_reply("Kept."))
    headless = make_harness(permission_mode="bypassPermissions")
    result = headless.send(headless.new_session(), "forget it")
    assert result.tools[0].result["error"]["code"] == "not_approved"
    assert len(workspace.service.all_notes()) == 1

    approver = Approver(True)
    model.add(tool_reply("forget", {"id": note_id}), text_reply("Gone."))
    asking = make_harness(approver=approver)
    result = asking.send(asking.new_session(), "forget it")
    assert approver.asked[0].reason == "forget always asks"
    assert approver.asked[0].plugin == "memory"
    assert result.tools[0].result["backupId"] and workspace.service.all_notes() == []


def test_memory_and_the_user_service(make_harness: MakeHarness, home: Path) -> None:
    harness = make_harness()
    assert harness.memory is not None and harness.memory.available_scopes() == ["project", "user"]
    user = harness.memory_user_service
    assert user is not None and user.available_scopes() == ["user"]
    saved = user.remember("Prefers tea", "Green.", type="user")
    assert Path(saved.path).parent == home / "memory" / "user"
    assert [hit.id for hit in user.search("tea")] == [saved.id]
    assert [page.id for page in harness.pages()] == ["memory"]


def test_a_switched_off_plugin_adds_nothing(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace, home: Path
) -> None:
    remember_zephyr(workspace)
    (home / "plugins.json").write_text(
        json.dumps({"runtimePlugins": [{"id": "memory", "enabled": False}]}), encoding="utf-8"
    )
    harness = make_harness()
    assert harness.memory is None and harness.memory_user_service is None
    assert harness.tool_specs() == () and harness.pages() == []
    session = harness.new_session()
    harness.send(session, "How do we ship with Zephyr?")
    request = model.requests[0]
    assert "Memory" not in request.system and request.tools == ()
    assert session.messages[0].attachments == ()


def test_a_recall_failure_never_blocks_a_message(
    make_harness: MakeHarness,
    model: ScriptedModel,
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    remember_zephyr(workspace)
    harness = make_harness()
    recall = workspace.service.recall
    assert recall is not None

    def broken(*args: object, **kwargs: object) -> list[object]:
        raise RuntimeError("index on fire")

    monkeypatch.setattr(recall, "recall", broken)
    result = harness.send(harness.new_session(), "How do we ship with Zephyr?")
    assert result.outcome == "done" and model.requests[0].messages[0].attachments == ()
    assert "recall failed" in caplog.text
