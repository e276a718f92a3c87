"""Recall for an agent loop run without any plugin host (spec 09.1 "for embedders")."""

from __future__ import annotations

from harness_helpers import remember_zephyr

from oharness.harness.agent_memory import AgentMemory, AgentOptions, recalled_keys
from oharness.memory.workspace import Workspace


def test_an_agent_loop_of_its_own_gets_the_index_recall_and_tools(workspace: Workspace) -> None:
    note_id = remember_zephyr(workspace)
    memory = AgentMemory.from_workspace(workspace)
    options = AgentOptions(memory=memory)
    system = options.system_prompt("You are helpful.")
    assert system.startswith("You are helpful.\n\n# Memory") and note_id in system

    turn = options.user_turn("How do we ship with Zephyr?", message_id="u1")
    assert turn.text == "How do we ship with Zephyr?" and note_id in turn.block
    assert [note.id for note in turn.attached] == [note_id]
    assert turn.openai_content() == [
        {"type": "text", "text": "How do we ship with Zephyr?"},
        {"type": "text", "text": turn.block},
    ]
    assert [block["text"] for block in turn.anthropic_content()] == [turn.text, turn.block]
    assert recalled_keys(turn.metadata) == [("project", note_id)]

    again = options.user_turn("Zephyr again?", message_id="u2")
    assert again.block == "" and again.openai_content() == "Zephyr again?"
    assert memory.release(["u1"]) == {("project", note_id)}
    assert options.user_turn("Zephyr, third time", message_id="u3").attached != ()

    memory.reload([("u9", turn.metadata), ("u10", {"recalled": ["junk", {"id": 3}]})])
    assert memory.carried == {("project", note_id)}
    assert {tool["function"]["name"] for tool in memory.openai_tools()} == {
        "remember",
        "memory",
        "forget",
    }
    assert [tool["name"] for tool in memory.anthropic_tools()] == ["remember", "memory", "forget"]
    saved = memory.call_tool("remember", {"summary": "Tea at four", "body": "Always."})
    assert saved["created"] is True
    assert memory.call_tool("remember", {"summary": ""})["error"]["code"] == "invalid"


def test_subagents_and_no_memory_pass_the_words_through(workspace: Workspace) -> None:
    remember_zephyr(workspace)
    memory = AgentMemory.from_workspace(workspace)
    sub = AgentOptions(memory=memory, subagent=True)
    assert sub.user_turn("How do we ship with Zephyr?").block == ""
    none = AgentOptions()
    assert none.system_prompt("Base.") == "Base."
    assert none.user_turn("Zephyr").openai_content() == "Zephyr"
    auto = AgentOptions(memory=memory).user_turn("How do we ship with Zephyr?")
    assert auto.attached and memory.carried  # carried under a generated message id
