"""Running the capture hooks as Claude Code and Codex call them, against a loopback stub."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stub_model_server import StubModelServer

OHARNESS = Path(sys.executable).with_name("oharness")
DATA = Path(__file__).resolve().parents[2] / "data" / "capture"
EXTRACTION_SYSTEM = "durable memory of an AI agent"
_CLEARED = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


class Agent:
    """Calls ``oharness hook AGENT EVENT`` with a documented stdin shape."""

    def __init__(self, home: Path, project: Path, stub: StubModelServer) -> None:
        self.home = home
        self.project = project
        self.stub = stub

    def environment(self) -> dict[str, str]:
        environment = {k: v for k, v in os.environ.items() if k not in _CLEARED}
        environment.update(
            OHARNESS_HOME=str(self.home),
            OPENAI_BASE_URL=f"{self.stub.url}/v1",
            OPENAI_API_KEY="test-key-openai",
        )
        return environment

    def run(self, *args: str, input: str = "") -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(OHARNESS), *args],
            cwd=self.project,
            input=input,
            capture_output=True,
            text=True,
            env=self.environment(),
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return result

    def hook(self, agent: str, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
        names = {"stop": "Stop", "pre-compact": "PreCompact", "session-end": "SessionEnd"}
        payload = {
            "cwd": str(self.project),
            "hook_event_name": names.get(event, "SessionStart"),
            **fields,
        }
        return self.run("hook", agent, event, input=json.dumps(payload))

    def capture_run(self, agent: str, event: str, session: str, transcript: Path) -> None:
        """The pass a hook starts, run in the foreground (the same command)."""
        job = {
            "agent": agent,
            "event": event,
            "sessionId": session,
            "transcriptPath": str(transcript),
            "projectRoot": str(self.project),
        }
        self.run("hook", "capture-run", json.dumps(job))

    def configure(self, user: dict[str, Any], project: dict[str, Any] | None = None) -> None:
        (self.home / "config.json").write_text(json.dumps(user), encoding="utf-8")
        if project is not None:
            path = self.project / ".oharness" / "config.json"
            path.write_text(json.dumps(project), encoding="utf-8")

    def notes(self) -> dict[str, str]:
        folder = self.project / "MEMORY"
        return {path.stem: path.read_text("utf-8") for path in sorted(folder.glob("*.md"))}

    def prompts(self) -> list[str]:
        return [
            body["messages"][1]["content"]
            for body in self.stub.bodies()
            if EXTRACTION_SYSTEM in body["messages"][0]["content"]
        ]

    def cursor(self, agent: str, session: str) -> dict[str, Any]:
        from oharness.capture.cursor import CaptureState

        return CaptureState(self.home).session(agent, session)

    def cursor_path(self, agent: str, session: str) -> Path:
        from oharness.capture.cursor import CaptureState

        return Path(CaptureState(self.home).session_path(agent, session))


def transcript(tmp: Path, name: str, *more: str) -> Path:
    """A copy of a recorded transcript (with more recordings appended), as the agent keeps it."""
    folder = tmp / "agent-transcripts"
    folder.mkdir(exist_ok=True)
    path = folder / name
    shutil.copyfile(DATA / name, path)
    for extra in more:
        append(path, extra)
    return path


def append(path: Path, recording: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write((DATA / recording).read_text("utf-8"))


def wait_for(condition: Callable[[], Any], what: str, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def extraction_answer(*notes: dict[str, Any]) -> str:
    return json.dumps({"new": list(notes), "updates": []})
