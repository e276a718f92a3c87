"""``oharness chat -p`` through its entry point against a model server on loopback (spec 09.6).

The assertions are on what the model server receives: the Memory section of the system prompt,
the recalled block beside the user's words (only when relevant, once per transcript), the
tool calls and their results, and nothing of memory when the plugin is switched off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli_support import Chat
from stub_model_server import (
    StubModelServer,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
)

ZEPHYR = "Deploys go out through the Zephyr release train"


def _remember_zephyr(chat: Chat) -> str:
    result = chat.ok(
        "memory",
        "remember",
        "--summary",
        ZEPHYR,
        "--body",
        "Every Tuesday at noon; hotfixes any day.",
        "--tags",
        "zephyr, deploy, release",
        "--json",
    )
    note_id: str = json.loads(result.stdout)["id"]
    return note_id


def _system(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    text: str = first["content"]
    return text


def _users(body: dict[str, Any]) -> list[Any]:
    return [message["content"] for message in body["messages"] if message["role"] == "user"]


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _transcript(home: Path, session_id: str) -> list[dict[str, Any]]:
    [path] = list((home / "sessions").glob(f"*/{session_id}.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_index_and_recall_reach_the_model_once_per_transcript(
    chat: Chat, stub: StubModelServer, home: Path
) -> None:
    note_id = _remember_zephyr(chat)
    stub.script(openai_text("Through Zephyr, on Tuesdays."))
    first = chat.say("How do we ship with Zephyr?")
    assert first.stdout.strip() == "Through Zephyr, on Tuesdays."
    assert "recalled 1 memory" in first.stderr

    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer test-key-openai"
    body = request.body
    assert body["model"] == "stub-model"
    system = _system(body)
    assert "# Memory" in system and f"{ZEPHYR} ({note_id})" in system
    assert {tool["function"]["name"] for tool in body["tools"]} >= {"remember", "memory", "forget"}
    [content] = _users(body)
    assert isinstance(content, list) and len(content) == 2
    assert content[0] == {"type": "text", "text": "How do we ship with Zephyr?"}
    assert content[1]["text"].startswith("<recalled-memory>")
    assert f'<note id="{note_id}"' in content[1]["text"]

    session_id = chat.session_id(first)
    second = chat.say("And Zephyr on Fridays?", "--resume", session_id)
    assert "recalled" not in second.stderr
    body = stub.requests[1].body
    carried, latest = _users(body)
    assert carried[1]["text"].startswith("<recalled-memory>")  # the first turn, as it was sent
    assert latest == "And Zephyr on Fridays?"  # the note is in the transcript already
    assert json.dumps(body["messages"][1:]).count("<recalled-memory>") == 1

    records = _transcript(home, session_id)
    users = [
        r["message"] for r in records if r["type"] == "message" and r["message"]["role"] == "user"
    ]
    assert [user["text"] for user in users] == [
        "How do we ship with Zephyr?",
        "And Zephyr on Fridays?",
    ]
    assert users[0]["metadata"]["memory"]["recalled"][0]["id"] == note_id
    assert "memory" not in users[1]["metadata"]


def test_an_unrelated_message_gets_no_recalled_block(chat: Chat, stub: StubModelServer) -> None:
    _remember_zephyr(chat)
    chat.say("What is two plus two?")
    body = stub.requests[0].body
    assert "# Memory" in _system(body)
    assert _users(body) == ["What is two plus two?"]
    assert "<recalled-memory>" not in json.dumps(body["messages"][1:])


def test_a_remember_call_is_executed_and_written(
    chat: Chat, stub: StubModelServer, project_dir: Path
) -> None:
    stub.script(
        openai_tool_call(
            "remember",
            {
                "summary": "The staging database is read-only on weekends",
                "body": "Maintenance window; writes fail with a clear error.",
                "tags": ["staging", "database"],
            },
        ),
        openai_text("Noted."),
    )
    result = chat.say("Remember that staging is read-only on weekends.")
    assert result.stdout.strip() == "Noted."
    assert "saved 1 memory" in result.stderr
    saved = list((project_dir / "MEMORY").glob("*.md"))
    assert len(saved) == 1
    assert "The staging database is read-only on weekends" in saved[0].read_text(encoding="utf-8")

    follow_up = stub.requests[1].body
    tool_message = follow_up["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    [outcome] = _tool_results(follow_up)
    assert outcome["created"] is True and outcome["id"] == saved[0].stem
    assistant = follow_up["messages"][-2]
    assert assistant["tool_calls"][0]["function"]["name"] == "remember"


def test_plan_mode_refuses_remember(chat: Chat, stub: StubModelServer, project_dir: Path) -> None:
    stub.script(
        openai_tool_call("remember", {"summary": "Plans are cheap", "body": "Nothing to see."}),
        openai_text("I could not save it."),
    )
    result = chat.say("Remember that plans are cheap.", "--permission-mode", "plan")
    assert result.stdout.strip() == "I could not save it."
    [outcome] = _tool_results(stub.requests[1].body)
    assert outcome["error"]["code"] == "permission_denied"
    assert "plan mode" in outcome["error"]["message"]
    assert list((project_dir / "MEMORY").glob("*.md")) == []
    assert "saved" not in result.stderr


def test_forget_is_refused_without_anyone_to_ask(
    chat: Chat, stub: StubModelServer, project_dir: Path
) -> None:
    note_id = _remember_zephyr(chat)
    for mode in ("default", "bypassPermissions"):
        stub.script(openai_tool_call("forget", {"id": note_id}), openai_text("Kept it."))
        chat.say("Forget the deploy note.", "--permission-mode", mode)
        [outcome] = _tool_results(stub.requests[-1].body)
        assert outcome["error"]["code"] == "not_approved", mode
    assert (project_dir / "MEMORY" / f"{note_id}.md").is_file()


def test_a_disabled_memory_plugin_sends_no_memory_at_all(
    chat: Chat, stub: StubModelServer, home: Path, tmp_path: Path
) -> None:
    _remember_zephyr(chat)
    (home / "plugins.json").write_text(
        json.dumps({"runtimePlugins": [{"id": "memory", "enabled": False}]}), encoding="utf-8"
    )
    result = chat.say("How do we ship with Zephyr?")
    assert "recalled" not in result.stderr
    body = stub.requests[0].body
    sent = json.dumps(body)
    assert (
        "# Memory" not in sent and "<recalled-memory>" not in sent and "Zephyr release" not in sent
    )
    assert "tools" not in body
    assert _users(body) == ["How do we ship with Zephyr?"]

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    chat.say("hello", cwd=fresh)
    assert (fresh / "MEMORY").is_dir() and (fresh / "ARTIFACTS").is_dir()


def test_models_main_from_config_is_used(chat: Chat, stub: StubModelServer, home: Path) -> None:
    (home / "config.json").write_text(
        json.dumps({"models": {"main": "openai:configured-model"}}), encoding="utf-8"
    )
    result = chat.ok("chat", "-p", "hi")
    assert result.stdout.strip() == "(the stub has nothing more to say)"
    assert stub.requests[0].body["model"] == "configured-model"


def test_anthropic_models_speak_the_messages_api(
    chat: Chat, stub: StubModelServer, project_dir: Path
) -> None:
    note_id = _remember_zephyr(chat)
    stub.script(
        anthropic_tool_use(
            "remember", {"summary": "Fridays are for hotfixes only", "body": "No features."}
        ),
        anthropic_text("Saved."),
    )
    result = chat.say(
        "How do we ship with Zephyr on Fridays?",
        model="anthropic:claude-stub",
        ANTHROPIC_API_KEY="test-key-anthropic",
        ANTHROPIC_BASE_URL=stub.url,
    )
    assert result.stdout.strip() == "Saved."
    first, second = stub.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == "test-key-anthropic"
    assert "# Memory" in first.body["system"]
    [user] = first.body["messages"]
    assert user["content"][0] == {"type": "text", "text": "How do we ship with Zephyr on Fridays?"}
    assert note_id in user["content"][1]["text"]
    result_block = second.body["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result" and result_block["tool_use_id"] == "toolu_1"
    assert len(list((project_dir / "MEMORY").glob("*.md"))) == 2


def test_a_failing_model_server_is_one_line_on_stderr(chat: Chat, stub: StubModelServer) -> None:
    stub.script({"error": {"message": "model overloaded"}}, status=503)
    result = chat.run("chat", "-p", "hi", "--model", "openai:stub-model")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "HTTP 503" in result.stderr and "model overloaded" in result.stderr


def test_no_model_configured_is_a_clear_error(chat: Chat) -> None:
    result = chat.run("chat", "-p", "hi")
    assert result.returncode == 1
    assert "--model" in result.stderr and "Traceback" not in result.stderr


def test_interactive_chat_reads_lines_until_the_end_of_input(
    chat: Chat, stub: StubModelServer
) -> None:
    note_id = _remember_zephyr(chat)
    stub.script(openai_text("First answer."), openai_text("Second answer."))
    lines = "How do we ship with Zephyr?\n/compact\n\nZephyr again?\n/session\n"
    result = chat.ok("chat", "--model", "openai:stub-model", input=lines)
    assert "First answer." in result.stdout and "Second answer." in result.stdout
    assert result.stderr.count("recalled 1 memory") == 1
    assert "nothing to compact yet" in result.stderr
    session_id = result.stderr.split("resume with: oharness chat --resume ")[1].split()[0]
    assert f"session {session_id}" in result.stderr
    first, second = stub.requests
    assert note_id in json.dumps(first.body["messages"][1:])
    assert _users(second.body)[-1] == "Zephyr again?"


def test_one_shot_json_output(chat: Chat, stub: StubModelServer) -> None:
    note_id = _remember_zephyr(chat)
    stub.script(openai_text("Tuesdays."))
    result = chat.say("How do we ship with Zephyr?", "--json")
    data = json.loads(result.stdout)
    assert data["text"] == "Tuesdays." and data["outcome"] == "done"
    assert data["recalled"][0]["notes"][0]["id"] == note_id
    assert data["sessionId"] and data["tools"] == [] and data["saved"] == []


def test_resuming_an_unknown_session_is_a_one_line_error(chat: Chat) -> None:
    result = chat.run("chat", "-p", "hi", "--model", "openai:stub-model", "--resume", "nope-1")
    assert result.returncode == 1 and "no session 'nope-1'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
