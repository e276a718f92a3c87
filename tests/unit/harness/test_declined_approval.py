"""What the model is told when a tool needs approval: declined by the user, or nobody to ask."""

from __future__ import annotations

from harness_helpers import MakeHarness, remember_zephyr

from oharness.harness.permission import ApprovalRequest
from oharness.harness.scripted import ScriptedModel, text_reply, tool_reply
from oharness.memory.workspace import Workspace


def test_a_user_who_answers_no_is_reported_as_declining(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    note_id = remember_zephyr(workspace)
    asked: list[ApprovalRequest] = []

    def say_no(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    model.add(tool_reply("forget", {"id": note_id}), text_reply("Kept."))
    harness = make_harness(approver=say_no)
    result = harness.send(harness.new_session(), "forget it")
    message = result.tools[0].result["error"]["message"]
    assert asked and "the user declined" in message and "nobody to ask" not in message
    assert len(workspace.service.all_notes()) == 1


def test_a_headless_run_says_nobody_was_asked(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    note_id = remember_zephyr(workspace)
    model.add(tool_reply("forget", {"id": note_id}), text_reply("Kept."))
    harness = make_harness()
    result = harness.send(harness.new_session(), "forget it")
    message = result.tools[0].result["error"]["message"]
    assert "nobody to ask" in message and "declined" not in message
