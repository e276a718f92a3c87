"""The agent loop: tool rounds, refusals as results, limits, errors, compaction, resume
(spec 09.2–09.4)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from harness_helpers import MakeHarness, users_words

from oharness.errors import ConfigError
from oharness.harness.message import ToolCall
from oharness.harness.model import CancelToken, ModelCancelled, ModelError, ModelReply
from oharness.harness.permission import ApprovalRequest
from oharness.harness.plugin import PluginApi, RunStopContext
from oharness.harness.providers import Models
from oharness.harness.scripted import ScriptedModel, text_reply, tool_reply
from oharness.memory.workspace import Workspace


def write_config(home: Path, config: dict[str, object]) -> None:
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")


def test_tool_rounds_until_a_final_answer(make_harness: MakeHarness, model: ScriptedModel) -> None:
    model.add(
        ModelReply(
            tool_calls=(
                ToolCall("a", "memory", {}),
                ToolCall("b", "nonsense", {}),
                ToolCall("c", "memory", None, "{oops"),
            )
        ),
        text_reply("All done."),
    )
    harness = make_harness()
    session = harness.new_session()
    result = harness.send(session, "look around")
    assert result.text == "All done." and result.outcome == "done"
    listing, unknown, broken = result.tools
    assert listing.result["total"] == 0 and listing.permission == "allow"
    assert unknown.result["error"]["code"] == "unknown_tool"
    assert "remember, memory, forget" in unknown.result["error"]["message"]
    assert broken.result["error"]["code"] == "invalid_arguments"
    assert [m.role for m in session.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]
    second = model.requests[1].messages
    assert [m.tool_call_id for m in second if m.role == "tool"] == ["a", "b", "c"]
    assert second[-1].is_error and not second[-3].is_error


def test_a_run_stops_after_max_steps(
    make_harness: MakeHarness, model: ScriptedModel, open_ws: Callable[..., Workspace], home: Path
) -> None:
    write_config(home, {"harness": {"maxSteps": 2}})
    model.add(tool_reply("memory", {}), tool_reply("memory", {}), tool_reply("memory", {}))
    harness = make_harness(workspace=open_ws())
    result = harness.send(harness.new_session(), "loop")
    assert result.outcome == "max_steps" and len(model.requests) == 2


def test_bad_harness_config_is_a_clear_error(
    make_harness: MakeHarness, open_ws: Callable[..., Workspace], home: Path
) -> None:
    write_config(home, {"harness": {"compactAtChars": 0}})
    with pytest.raises(ConfigError, match=r"harness\.compactAtChars"):
        make_harness(workspace=open_ws())


def test_a_model_error_ends_the_run_but_run_stop_still_runs(make_harness: MakeHarness) -> None:
    stops: list[str] = []

    class Watcher:
        id = "watcher"

        def setup(self, api: PluginApi) -> None:
            api.on_run_stop(lambda context: stops.append(context.outcome))

    failing = ScriptedModel()  # no script: every call fails
    harness = make_harness(models=Models(failing), plugins=[Watcher()])
    session = harness.new_session()
    with pytest.raises(ModelError, match="no more answers"):
        harness.send(session, "hello")
    assert stops == ["error"] and users_words(session) == ["hello"]


def test_a_cancelled_run(make_harness: MakeHarness, model: ScriptedModel) -> None:
    outcomes: list[str] = []

    class Watcher:
        id = "watcher"

        def setup(self, api: PluginApi) -> None:
            def stopped(context: RunStopContext) -> None:
                outcomes.append(context.outcome)

            api.on_run_stop(stopped)

    token = CancelToken()
    token.cancel()
    harness = make_harness(plugins=[Watcher()])
    with pytest.raises(ModelCancelled):
        harness.send(harness.new_session(), "hello", cancel=token)
    assert outcomes == ["cancelled"]


def test_an_approver_that_fails_counts_as_no(
    make_harness: MakeHarness, model: ScriptedModel, workspace: Workspace
) -> None:
    saved = workspace.service.remember("Keep me", "Please.")

    def broken(request: ApprovalRequest) -> bool:
        raise OSError("no terminal")

    model.add(tool_reply("forget", {"id": saved.id}), text_reply("ok"))
    harness = make_harness(approver=broken)
    result = harness.send(harness.new_session(), "forget")
    assert result.tools[0].permission == "not-approved" and len(workspace.service.all_notes()) == 1


def test_compaction_is_model_summarised_and_recorded(
    make_harness: MakeHarness, model: ScriptedModel
) -> None:
    small = ScriptedModel([text_reply("They said hello twice.")])
    harness = make_harness(models=Models(model, small), keep_turns=1)
    session = harness.new_session()
    assert harness.compact(session) is None  # nothing to compact yet
    harness.send(session, "hello")
    harness.send(session, "hello again")
    done = harness.compact(session)
    assert done is not None and [m.text for m in done.replaced] == ["hello", "ok"]
    [request] = small.requests
    assert "User: hello" in request.messages[0].text and "Assistant: ok" in request.messages[0].text
    summary = session.messages[0]
    assert summary.role == "user" and summary.text.endswith("They said hello twice.")
    assert summary.metadata["summary"]["replaced"] == 2
    assert summary.metadata["summary"]["model"] == "scripted:test"
    assert users_words(session)[1:] == ["hello again"]
    records = [json.loads(line) for line in (session.path or Path()).read_text().splitlines()]
    [compaction] = [r for r in records if r["type"] == "compaction"]
    assert compaction["replaced"] == ["m1", "m2"] and compaction["reason"] == "manual"
    resumed = harness.resume_session(session.id)
    assert [m.text for m in resumed.messages] == [m.text for m in session.messages]
    harness.send(resumed, "and now?")
    assert model.requests[-1].messages[0].text.startswith("Summary of the earlier conversation")


def test_a_long_conversation_is_compacted_before_the_model_call(
    make_harness: MakeHarness,
    model: ScriptedModel,
    open_ws: Callable[..., Workspace],
    home: Path,
) -> None:
    write_config(home, {"harness": {"compactAtChars": 300}})
    small = ScriptedModel([text_reply("Earlier: long talk.")])
    harness = make_harness(workspace=open_ws(), models=Models(model, small))
    session = harness.new_session()
    harness.send(session, "a" * 200)
    harness.send(session, "b" * 200)
    result = harness.send(session, "c" * 10)
    assert [event.data["reason"] for event in result.events_of("compaction")] == ["auto"]
    sent = model.requests[-1].messages
    assert sent[0].text.endswith("Earlier: long talk.")
    assert [m.text for m in sent if m.role == "user"][1:] == ["b" * 200, "c" * 10]


def test_a_failed_automatic_compaction_sends_the_conversation_whole(
    make_harness: MakeHarness,
    model: ScriptedModel,
    open_ws: Callable[..., Workspace],
    home: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_config(home, {"harness": {"compactAtChars": 100}})
    harness = make_harness(workspace=open_ws(), models=Models(model, ScriptedModel()))
    session = harness.new_session()
    for text in ("x" * 80, "y" * 80, "z"):
        harness.send(session, text)
    assert users_words(session) == ["x" * 80, "y" * 80, "z"]
    assert "compaction failed" in caplog.text


def test_an_unusable_sessions_folder_does_not_stop_a_chat(
    make_harness: MakeHarness, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (home / "sessions").write_text("a file in the way", encoding="utf-8")
    harness = make_harness()
    session = harness.new_session()
    assert session.path is None and "cannot be resumed" in caplog.text
    assert harness.send(session, "hello").text == "ok"
