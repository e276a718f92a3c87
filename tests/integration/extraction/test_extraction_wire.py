"""An extraction pass through the real OpenAI-compatible wire path, against a server on
loopback answering what misbehaving models answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from raw_model_server import RawModelServer, completion_bytes
from stub_model_server import StubModelServer, anthropic_text

from oharness.errors import ValidationError
from oharness.extraction import ExtractionOptions, ExtractionReport, Turn, run_extraction
from oharness.harness.anthropic_provider import AnthropicChatModel
from oharness.harness.extraction_trigger import ChatExtractionModel
from oharness.harness.model import ModelError
from oharness.harness.openai_provider import OpenAIChatModel
from oharness.memory.workspace import Workspace

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TURNS = [
    Turn(1, "user", "We deploy with the Zephyr release train now, every Tuesday."),
    Turn(2, "assistant", "Noted."),
]


@pytest.fixture
def model(raw_server: RawModelServer) -> Iterator[OpenAIChatModel]:
    chat_model = OpenAIChatModel("small-model", base_url=raw_server.url, api_key="test-key")
    yield chat_model
    chat_model.close()


def extract(workspace: Workspace, model: OpenAIChatModel, **options: Any) -> ExtractionReport:
    return run_extraction(
        TURNS, workspace.service, ChatExtractionModel(model), ExtractionOptions(**options)
    )


def summaries(workspace: Workspace) -> list[str]:
    return sorted(stored.note.summary for stored in workspace.service.all_notes())


def test_the_request_is_one_plain_chat_completion(
    workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    raw_server.answer(json.dumps({"new": [{"summary": "Deploys ride Zephyr", "body": "Tue."}]}))
    extract(workspace, model, max_tokens=777)
    [body] = raw_server.requests
    assert body["model"] == "small-model" and body["max_tokens"] == 777
    assert "response_format" not in body and "tools" not in body
    system, user = body["messages"]
    assert system["role"] == "system" and "durable memory" in system["content"]
    assert "User: We deploy with the Zephyr release train" in user["content"]
    assert summaries(workspace) == ["Deploys ride Zephyr"]


ADVERSARIAL: dict[str, tuple[str | bytes, list[str]]] = {
    "prose around the JSON": (
        'Here you go!\n{"new": [{"summary": "Deploys ride Zephyr", "body": "Tue."}]}\nBye.',
        ["Deploys ride Zephyr"],
    ),
    "unknown keys": (
        json.dumps(
            {"new": [{"summary": "Deploys ride Zephyr", "body": "Tue.", "mood": 3}], "x": 1}
        ),
        ["Deploys ride Zephyr"],
    ),
    "updates to unseen ids": (
        json.dumps({"updates": [{"id": "someone-elses-1", "body": "overwritten"}]}),
        [],
    ),
    "invalid types and over-long summaries": (
        json.dumps(
            {
                "new": [
                    {"summary": ["a list"], "body": "x"},
                    {"summary": "s" * 250, "body": "x"},
                    {"summary": "Tags wrong", "body": "x", "tags": 5},
                    {"summary": "The valid one about Zephyr", "body": "Tue."},
                ]
            }
        ),
        ["The valid one about Zephyr"],
    ),
    "a body over the limit": (
        json.dumps(
            {"new": [{"summary": "Huge", "body": "x" * 5000}, {"summary": "Ok", "body": "y"}]}
        ),
        ["Ok"],
    ),
    "non-UTF-8 bytes": (
        b'{"new": [{"summary": "Caf\xe9 Zephyr timetable", "body": "Bad \xff byte."}]}',
        ["Caf\ufffd Zephyr timetable"],
    ),
}


@pytest.mark.parametrize("case", list(ADVERSARIAL), ids=list(ADVERSARIAL))
def test_adversarial_answers_over_the_wire(
    case: str, workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    content, expected = ADVERSARIAL[case]
    raw_server.answer(content)
    extract(workspace, model, max_note_bytes=4096)
    assert summaries(workspace) == expected


def test_links_to_unseen_ids_and_a_credential_over_the_wire(
    workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    answer = {
        "new": [
            {"summary": "CI token lives in the vault", "body": f"Was {GITHUB_TOKEN}; see [[x-1]]."}
        ]
    }
    raw_server.answer(json.dumps(answer))
    extract(workspace, model)
    [stored] = workspace.service.all_notes()
    assert stored.note.body == "Was [REDACTED]; see x-1.\n"


def test_a_thousand_new_notes_cycles_and_dangling_references_over_the_wire(
    workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    flood = [
        {"summary": "Staging refreshes nightly", "body": "Twin of [[new:2]], see [[new:2000]]."},
        {"summary": "Production backups kept thirty days", "body": "Twin of [[new:1]]."},
    ]
    flood += [{"summary": f"Flood {n}", "body": "x"} for n in range(998)]
    raw_server.answer(json.dumps({"new": flood}))
    report = extract(workspace, model, max_tokens=4096)
    assert len(report.written) <= 10 and len(report.dropped) >= 990
    notes = {s.note.summary: s for s in workspace.service.all_notes()}
    staging, production = (
        notes["Staging refreshes nightly"],
        notes["Production backups kept thirty days"],
    )
    assert staging.note.body == f"Twin of [[{production.id}]], see .\n"
    assert production.note.body == f"Twin of [[{staging.id}]].\n"


def test_malformed_json_raises_and_writes_nothing(
    workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    raw_server.answer('{"new": [{"summary": "cut off')
    with pytest.raises(ValidationError, match='"new" or "updates"'):
        extract(workspace, model)
    assert workspace.service.all_notes() == []


def test_a_429_is_one_request_and_an_error(
    workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    raw_server.script(json.dumps({"error": {"message": "slow down"}}).encode(), status=429)
    with pytest.raises(ModelError) as caught:
        extract(workspace, model)
    assert caught.value.status == 429 and caught.value.transient
    assert len(raw_server.requests) == 1 and workspace.service.all_notes() == []


def test_a_slow_model_times_out(
    workspace: Workspace, model: OpenAIChatModel, raw_server: RawModelServer
) -> None:
    raw_server.released.clear()
    raw_server.script(completion_bytes('{"new": [{"summary": "Late", "body": "x"}]}'))
    with pytest.raises(ModelError) as caught:
        extract(workspace, model, timeout_s=0.3)
    raw_server.released.set()
    assert caught.value.code == "model_timeout" and len(raw_server.requests) == 1
    assert workspace.service.all_notes() == []


def test_a_pass_over_the_anthropic_wire(workspace: Workspace, stub: StubModelServer) -> None:
    answer = {"new": [{"summary": "Deploys ride Zephyr", "body": "Tuesdays at noon."}]}
    stub.script(anthropic_text("Here:\n" + json.dumps(answer)))
    model = AnthropicChatModel("claude-small", api_key="test-key", base_url=stub.url)
    try:
        run_extraction(TURNS, workspace.service, ChatExtractionModel(model))
    finally:
        model.close()
    [request] = stub.requests
    assert request.path.endswith("/messages") and "durable memory" in request.body["system"]
    assert "tools" not in request.body
    assert summaries(workspace) == ["Deploys ride Zephyr"]
