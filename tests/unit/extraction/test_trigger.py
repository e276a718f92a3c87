"""When extraction runs in the harness: run stop, compaction, resume, and the cost guard."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from extraction_helpers import SmallModel, note, remember_zephyr

from oharness.extraction import SYSTEM
from oharness.harness.harness import Harness
from oharness.harness.memory_plugin import MemoryPlugin, MemoryPluginOptions
from oharness.harness.model import ModelError, ModelReply, ModelRequest
from oharness.harness.scripted import ScriptedModel, tool_reply
from oharness.harness.session import Session
from oharness.types import Clock

MakeHarness = Callable[..., Harness]
Configure = Callable[..., None]


def settle(harness: Harness) -> None:
    """Wait for the passes in flight (they run on a background thread)."""
    plugin = harness.host.plugin("memory")
    assert isinstance(plugin, MemoryPlugin) and plugin.extraction is not None
    assert plugin.extraction.wait(10)


def records(session: Session) -> list[dict[str, Any]]:
    assert session.path is not None
    return [json.loads(line) for line in session.path.read_text(encoding="utf-8").splitlines()]


def state(session: Session) -> dict[str, Any]:
    found = [r["value"] for r in records(session) if r.get("key") == "extraction"]
    return found[-1] if found else {}


def prompt(request: ModelRequest) -> str:
    return request.messages[0].text


def test_extraction_is_off_by_default(make_harness: MakeHarness, small: SmallModel) -> None:
    harness = make_harness()
    session = harness.new_session()
    for text in ("one", "two", "three", "four"):
        harness.send(session, text)
    settle(harness)
    assert small.extractions == [] and state(session) == {}


def test_on_stop_waits_for_enough_real_user_messages(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=2)
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "We deploy with the Zephyr train now.")
    settle(harness)
    assert small.extractions == []
    harness.send(session, "And hotfixes go any day.")
    settle(harness)
    [request] = small.extractions
    assert "User: We deploy with the Zephyr train now." in prompt(request)
    assert "User: And hotfixes go any day." in prompt(request)
    assert state(session)["cursor"] == 4 and state(session)["passes"] == 1


def test_tool_results_and_recalled_blocks_are_not_user_messages(
    make_harness: MakeHarness, small: SmallModel, configure: Configure, main_model: ScriptedModel
) -> None:
    configure(onStop=True, minUserTurns=2)
    harness = make_harness()
    remember_zephyr(harness.workspace)
    main_model.add(tool_reply("memory", {}), tool_reply("memory", {"query": "zephyr"}))
    session = harness.new_session()
    result = harness.send(session, "How do we ship with Zephyr?")
    assert result.events_of("memory.recalled") and len(result.tools) == 2
    settle(harness)
    assert small.extractions == []
    harness.send(session, "Thanks.")
    settle(harness)
    [request] = small.extractions
    assert "<recalled-memory>" not in prompt(request)
    assert "Tool memory returned" in prompt(request)


def test_the_pass_runs_after_the_run_and_never_delays_the_reply(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    small.hold()
    small.answer({"new": [note("Deploys go through Zephyr", "Tuesdays at noon.")]})
    session = harness.new_session()
    result = harness.send(session, "We deploy with Zephyr on Tuesdays.")
    assert result.text == "ok"  # the answer is back while the small model still thinks
    assert small.started.wait(10)
    assert harness.workspace.service.all_notes() == []
    small.release()
    settle(harness)
    [stored] = harness.workspace.service.all_notes()
    assert stored.note.summary == "Deploys go through Zephyr"


def test_what_was_saved_is_announced_at_the_start_of_the_next_message(
    make_harness: MakeHarness, small: SmallModel, configure: Configure, main_model: ScriptedModel
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    small.answer(
        {"new": [note("Deploys go through Zephyr", "Tuesdays."), note("Hotfixes any day", "x")]}
    )
    session = harness.new_session()
    first = harness.send(session, "We deploy with Zephyr; hotfixes any day.")
    assert first.events_of("memory.extracted") == []
    settle(harness)
    events: list[str] = []
    second = harness.send(session, "Next topic.", on_event=lambda event: events.append(event.kind))
    [announced] = second.events_of("memory.extracted")
    assert events[0] == "memory.extracted"  # before anything else of that message
    assert announced.data["count"] == 2 and announced.plugin == "memory"
    ids = [item["id"] for item in announced.data["notes"]]
    assert announced.data["text"].startswith("saved 2 memories from this conversation: ")
    assert all(f"({note_id})" in announced.data["text"] for note_id in ids)
    settle(harness)
    assert harness.send(session, "And another.").events_of("memory.extracted") == []


def test_the_cursor_survives_a_resume(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=2)
    harness = make_harness()
    session = harness.new_session()
    for text in ("first words", "second words", "third words"):
        harness.send(session, text)
    settle(harness)
    assert len(small.extractions) == 1 and state(session)["cursor"] == 4
    harness.close()
    again = make_harness()
    resumed = again.resume_session(session.id)
    again.send(resumed, "fourth words")
    settle(again)
    [request] = small.extractions[1:]  # third and fourth: two since the cursor
    assert "third words" in prompt(request) and "fourth words" in prompt(request)
    assert "second words" not in prompt(request)


def test_a_resumed_session_without_a_cursor_counts_from_where_it_was_resumed(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    harness = make_harness()  # extraction off while the session began
    session = harness.new_session()
    for text in ("old one", "old two", "old three"):
        harness.send(session, text)
    harness.close()
    configure(onStop=True, minUserTurns=1)
    again = make_harness()
    resumed = again.resume_session(session.id)
    again.send(resumed, "new words")
    settle(again)
    [request] = small.extractions
    assert "new words" in prompt(request) and "old" not in prompt(request)


def test_the_stretch_compaction_drops_is_read_first_however_short(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onCompaction=True, minUserTurns=50)
    harness = make_harness(keep_turns=1)
    session = harness.new_session()
    harness.send(session, "The staging database refreshes nightly.")
    harness.send(session, "Unrelated second message.")
    settle(harness)
    assert small.extractions == []  # onStop is off: only compaction triggers
    assert harness.compact(session) is not None
    settle(harness)
    [request] = small.extractions
    assert "The staging database refreshes nightly." in prompt(request)
    assert "Unrelated second message." not in prompt(request)
    assert state(session)["cursor"] == 2 and state(session)["last"]["reasons"] == ["compaction"]
    harness.compact(session)  # nothing new to drop: no second pass
    settle(harness)
    assert len(small.extractions) == 1


def test_a_stretch_a_pass_already_read_is_not_read_again_at_compaction(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness(keep_turns=1)
    session = harness.new_session()
    harness.send(session, "one")
    settle(harness)
    harness.send(session, "two")
    settle(harness)
    harness.compact(session)
    settle(harness)
    assert len(small.extractions) == 2


def test_a_compaction_during_a_run_is_read_after_the_run(
    make_harness: MakeHarness,
    small: SmallModel,
    configure: Configure,
    main_model: ScriptedModel,
    home: Path,
) -> None:
    config = {"memory": {"autoExtract": {"onCompaction": True}}, "harness": {"compactAtChars": 450}}
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
    harness = make_harness(keep_turns=1)
    seen_during_run: list[int] = []

    def answer(request: ModelRequest) -> ModelReply:
        seen_during_run.append(len(small.extractions))
        return ModelReply(text="ok")

    session = harness.new_session()
    harness.send(session, "a" * 200)
    harness.send(session, "b" * 200)
    main_model.add(answer)
    result = harness.send(session, "c" * 100)
    assert result.events_of("compaction") and seen_during_run == [0]
    settle(harness)
    [request] = small.extractions
    assert "a" * 200 in prompt(request) and "b" * 200 in prompt(request)
    assert "c" * 100 not in prompt(request)


def test_nothing_is_extracted_from_subagents(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, onCompaction=True, minUserTurns=1)
    harness = make_harness(keep_turns=1)
    parent = harness.new_session()
    child = harness.new_session(parent=parent)
    harness.send(child, "one")
    harness.send(child, "two")
    harness.compact(child)
    settle(harness)
    assert small.extractions == [] and state(child) == {}


@pytest.mark.parametrize(
    ("user", "project"),
    [
        ({}, {"onStop": True, "minUserTurns": 1}),
        ({"onStop": True, "minUserTurns": 1}, {"onStop": False}),
    ],
)
def test_a_repository_config_can_switch_extraction_off_never_on(
    make_harness: MakeHarness,
    small: SmallModel,
    configure: Configure,
    user: dict[str, Any],
    project: dict[str, Any],
) -> None:
    configure(project=project, **user)
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "one")
    harness.send(session, "two")
    settle(harness)
    assert small.extractions == []


def test_one_pass_in_flight_per_session_the_rest_merged_into_one(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    small.hold()
    session = harness.new_session()
    harness.send(session, "first")
    assert small.started.wait(10)
    harness.send(session, "second")
    harness.send(session, "third")
    assert len(small.extractions) == 1  # the others wait, merged
    small.release()
    settle(harness)
    _, merged = small.extractions
    assert "second" in prompt(merged) and "third" in prompt(merged)
    assert "User: first" not in prompt(merged)
    assert state(session)["cursor"] == 6


@pytest.mark.parametrize(
    "failure",
    [
        ModelError("rate limited (HTTP 429)", code="model_http", status=429, transient=True),
        ModelError("no answer within 60 s", code="model_timeout", transient=True),
        "I am sorry, I cannot produce JSON today.",
    ],
    ids=["429", "timeout", "malformed"],
)
def test_a_failed_pass_is_logged_and_given_up_without_retrying(
    make_harness: MakeHarness,
    small: SmallModel,
    configure: Configure,
    caplog: pytest.LogCaptureFixture,
    failure: object,
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    small.answer(failure)
    session = harness.new_session()
    with caplog.at_level(logging.WARNING):
        harness.send(session, "first words")
        settle(harness)
    assert "gave up" in caplog.text
    assert len(small.extractions) == 1  # never retried
    assert state(session)["cursor"] == 2 and state(session)["last"]["outcome"] == "failed"
    harness.send(session, "second words")
    settle(harness)
    assert "first words" not in prompt(small.extractions[1])
    assert harness.workspace.service.all_notes() == []


def test_the_small_model_does_the_work_not_the_main_one(
    make_harness: MakeHarness, small: SmallModel, configure: Configure, main_model: ScriptedModel
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    harness.send(harness.new_session(), "hello")
    settle(harness)
    assert len(small.extractions) == 1
    assert all(request.system != SYSTEM for request in main_model.requests)


def test_unreadable_extraction_metadata_counts_as_none(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "first words")
    settle(harness)
    session.set_metadata("extraction", {"cursor": "m2", "pending": "oops", "passes": "many"})
    harness.close()
    again = make_harness()
    resumed = again.resume_session(session.id)
    result = again.send(resumed, "second words")
    assert result.events_of("memory.extracted") == []
    settle(again)
    assert "second words" in prompt(small.extractions[-1])
    assert "first words" not in prompt(small.extractions[-1])  # counted from the resume
    assert state(resumed)["passes"] == 1 and isinstance(state(resumed)["cursor"], int)


def test_what_a_pass_wrote_is_reported_to_background_sync(
    make_harness: MakeHarness, small: SmallModel, configure: Configure, clock: Clock
) -> None:
    harness_tests = str(Path(__file__).resolve().parents[1] / "harness")
    if harness_tests not in sys.path:
        sys.path.insert(0, harness_tests)
    from test_harness_memory_sync import Spy  # the coordinator spy of the syncer's own tests

    configure(onStop=True, minUserTurns=1)
    coordinator = Spy(clock)
    harness = make_harness(memory=MemoryPluginOptions(sync_coordinator=coordinator))
    small.answer({"new": [note("Tea at four for the user", "Always.", type="user")]})
    harness.send(harness.new_session(), "I always have tea at four.")
    settle(harness)
    assert coordinator.calls == ["touch project", "write user"]


def test_a_torn_last_metadata_line_falls_back_to_the_previous_cursor(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    session = harness.new_session()
    harness.send(session, "first words")
    settle(harness)
    harness.close()
    assert session.path is not None
    with open(session.path, "a", encoding="utf-8") as handle:  # a crash mid-append
        handle.write('{"type":"metadata","key":"extraction","value":{"cursor":99')
    again = make_harness()
    resumed = again.resume_session(session.id)
    again.send(resumed, "second words")
    settle(again)
    assert "second words" in prompt(small.extractions[-1])
    assert "first words" not in prompt(small.extractions[-1])  # cursor 2, not 99 nor 0
    again.close()
    reloaded = make_harness().resume_session(session.id)
    assert [m.text for m in reloaded.messages if m.role == "user"] == [
        "first words",
        "second words",
    ]
    assert reloaded.metadata("extraction")["cursor"] == 4


def test_resuming_a_session_with_a_pass_in_flight_keeps_one_pass_at_a_time(
    make_harness: MakeHarness, small: SmallModel, configure: Configure
) -> None:
    configure(onStop=True, minUserTurns=1)
    harness = make_harness()
    small.hold()
    session = harness.new_session()
    harness.send(session, "first")
    assert small.started.wait(10)
    resumed = harness.resume_session(session.id)
    harness.send(resumed, "second")
    assert len(small.extractions) == 1
    small.release()
    settle(harness)
    assert len(small.extractions) == 2 and "User: first" not in prompt(small.extractions[1])
