"""``oharness chat``: a credential refused through the model's tool is reported to the person."""

from __future__ import annotations

from pathlib import Path

from harness_cli_support import Chat
from stub_model_server import StubModelServer, openai_text, openai_tool_call

TOKEN = "ghp_" + "jYlCb1nZMJsuPzOkXQ9CKXlucKbn00ycIf1F"


def test_a_refused_credential_is_reported_on_stderr(
    chat: Chat, stub: StubModelServer, project_dir: Path
) -> None:
    stub.script(
        openai_tool_call("remember", {"summary": "Deploy token", "body": f"token {TOKEN}"}),
        openai_text("I will not store that."),
    )
    result = chat.say("Remember my deploy token.")
    assert "remember was refused: it looked like a credential" in result.stderr
    assert TOKEN not in result.stderr and TOKEN not in result.stdout
    assert list((project_dir / "MEMORY").glob("*.md")) == []
