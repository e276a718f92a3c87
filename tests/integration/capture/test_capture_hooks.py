"""Capture from recorded Claude Code and Codex transcripts through the real ``oharness hook``
commands, with a loopback OpenAI-compatible stub answering extraction."""

from __future__ import annotations

import contextlib
import html
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from capture_support import OHARNESS, Agent, append, extraction_answer, transcript, wait_for
from stub_model_server import StubModelServer, openai_text

ZEPHYR = {"summary": "Deploys go out through the Zephyr release train", "body": "Tuesdays."}
PYTEST = {"summary": "The test suite runs with pytest -n 2 at most", "body": "Never more."}
MODEL = {"models": {"small": "openai:capture-small"}}


def _extracting(agent: Agent, min_turns: int = 2) -> None:
    auto = {"onStop": True, "minUserTurns": min_turns}
    agent.configure({**MODEL, "memory": {"autoExtract": auto}})


def test_stop_hands_the_stretch_to_a_background_pass_that_saves_notes_and_moves_the_cursor(
    agent: Agent, stub: StubModelServer, tmp_path: Path
) -> None:
    _extracting(agent)
    path = transcript(tmp_path, "claude_code_session.jsonl")
    stub.script(openai_text(extraction_answer(ZEPHYR)))
    stop = agent.hook("claude-code", "stop", session_id="cc-1", transcript_path=str(path))
    assert stop.stdout == ""
    assert len(wait_for(agent.notes, "the first note")) == 1
    cursor = wait_for(lambda: agent.cursor("claude-code", "cc-1"), "the cursor")
    assert cursor["offset"] == path.stat().st_size and cursor["last"]["via"] == "process"
    assert stat.S_IMODE(agent.cursor_path("claude-code", "cc-1").stat().st_mode) == 0o600
    [prompt] = agent.prompts()
    assert "We deploy with the Zephyr release train" in prompt
    assert "nice weather today" in prompt  # chit-chat is the model's to leave out
    for hidden in ("RECALLED-NOTE-TEXT", "SIDECHAIN-ONLY", "Caveat:"):
        assert hidden not in prompt
    assert not list((agent.project / "MEMORY").glob("*.jsonl"))  # read, never copied

    append(path, "claude_code_more.jsonl")
    stub.script(openai_text(extraction_answer(PYTEST)))
    agent.hook("claude-code", "stop", session_id="cc-1", transcript_path=str(path))
    wait_for(lambda: len(agent.notes()) == 2, "the second note")
    second = wait_for(lambda: len(agent.prompts()) == 2 and agent.prompts()[1], "a second pass")
    assert "pytest -n 2 on this machine" in second
    assert "We deploy with the Zephyr" not in second  # only the stretch no pass has read
    wait_for(lambda: agent.cursor("claude-code", "cc-1").get("passes") == 2, "the cursor")

    # A restart reads the cursor from disk: nothing new, no model call.
    agent.capture_run("claude-code", "stop", "cc-1", path)
    assert len(agent.prompts()) == 2

    start = {"session_id": "cc-2", "transcript_path": str(tmp_path / "cc-2.jsonl")}
    announced = json.loads(
        agent.hook("claude-code", "session-start", source="startup", **start).stdout
    )
    message = announced["systemMessage"]
    assert message.startswith("saved 2 memories from your last session")
    assert all(note in message for note in agent.notes())
    assert message in announced["hookSpecificOutput"]["additionalContext"]
    again = agent.hook("claude-code", "session-start", source="startup", **start).stdout
    assert "systemMessage" not in (json.loads(again) if again else {})


def test_a_credential_typed_in_never_reaches_the_model(
    agent: Agent, stub: StubModelServer, tmp_path: Path
) -> None:
    _extracting(agent)
    path = transcript(tmp_path, "claude_code_credential.jsonl")
    stub.script(openai_text(extraction_answer()))
    agent.capture_run("claude-code", "stop", "cc-cred", path)
    [prompt] = agent.prompts()
    assert "db-staging.internal" in prompt
    assert "sk-proj-AbCdEf0123456789" not in prompt


def test_codex_rollout_thresholds_and_the_compaction_stretch(
    agent: Agent, stub: StubModelServer, tmp_path: Path
) -> None:
    _extracting(agent, min_turns=3)
    path = transcript(tmp_path, "codex_rollout.jsonl")
    agent.capture_run("codex", "stop", "cx-1", path)  # two user turns: below minUserTurns
    assert agent.prompts() == [] and agent.cursor("codex", "cx-1") == {}
    stub.script(openai_text(extraction_answer(ZEPHYR)))
    agent.capture_run("codex", "pre-compact", "cx-1", path)  # the last chance: always read
    [prompt] = agent.prompts()
    assert "changelog entries go at the end" in prompt
    assert "AGENTS.md text" not in prompt and "token_count" not in prompt
    assert "Assistant called shell" in prompt
    assert len(agent.notes()) == 1


def test_subagents_are_never_read(agent: Agent, stub: StubModelServer, tmp_path: Path) -> None:
    _extracting(agent, min_turns=1)
    path = transcript(tmp_path, "codex_subagent.jsonl")
    agent.capture_run("codex", "stop", "cx-sub", path)
    assert agent.prompts() == [] and agent.cursor("codex", "cx-sub")["subagent"] is True
    claude = transcript(tmp_path, "claude_code_session.jsonl")
    fields = {"session_id": "cc-sub", "transcript_path": str(claude), "agent_id": "a-1"}
    assert agent.hook("claude-code", "stop", **fields).stdout == ""
    time.sleep(0.5)  # long enough for a pass that should not have started
    assert agent.prompts() == [] and agent.cursor("claude-code", "cc-sub") == {}


def test_ask_the_agent_once_per_session_only_when_the_user_switched_it_on(
    agent: Agent, tmp_path: Path
) -> None:
    path = transcript(tmp_path, "claude_code_session.jsonl")
    fields = {"session_id": "ask-1", "transcript_path": str(path), "stop_hook_active": False}
    agent.configure({}, project={"memory": {"autoExtract": {"askAgent": True}}})
    assert agent.hook("claude-code", "stop", **fields).stdout == ""  # a repository cannot

    agent.configure({"memory": {"autoExtract": {"askAgent": True, "minUserTurns": 2}}})
    active = {**fields, "session_id": "ask-2", "stop_hook_active": True}
    assert agent.hook("claude-code", "stop", **active).stdout == ""
    answer = json.loads(agent.hook("claude-code", "stop", **fields).stdout)
    assert answer["decision"] == "block" and "`remember` tool" in answer["reason"]
    assert set(answer) == {"decision", "reason"}
    assert agent.hook("claude-code", "stop", **fields).stdout == ""  # once per session
    codex = transcript(tmp_path, "codex_rollout.jsonl")
    codex_fields = {"session_id": "cx-ask", "transcript_path": str(codex), "turn_id": "t1"}
    assert json.loads(agent.hook("codex", "stop", **codex_fields).stdout)["decision"] == "block"
    sub = {**fields, "session_id": "ask-3", "agent_id": "a-1"}
    assert agent.hook("claude-code", "stop", **sub).stdout == ""

    agent.configure(
        {"memory": {"autoExtract": {"askAgent": True}}},
        project={"memory": {"autoExtract": {"askAgent": False}}},
    )
    off = {**fields, "session_id": "ask-4"}
    assert agent.hook("claude-code", "stop", **off).stdout == ""  # a repository can switch off


def test_a_resumed_session_starts_counting_where_it_was_resumed(
    agent: Agent, tmp_path: Path
) -> None:
    _extracting(agent, min_turns=1)
    path = transcript(tmp_path, "claude_code_session.jsonl")
    resume = {"session_id": "cc-r", "transcript_path": str(path), "source": "resume"}
    agent.hook("claude-code", "session-start", **resume)
    assert agent.cursor("claude-code", "cc-r")["offset"] == path.stat().st_size
    agent.capture_run("claude-code", "stop", "cc-r", path)
    assert agent.prompts() == []


@pytest.fixture
def daemon(agent: Agent, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``oharness serve`` started outside the project: the hook registers the project."""
    _extracting(agent)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with (tmp_path / "daemon.err").open("wb") as errors:
        process = subprocess.Popen(
            [str(OHARNESS), "serve", "--port", "0"],
            cwd=elsewhere,
            env=agent.environment(),
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    wait_for(lambda: (agent.home / "daemon.json").exists() or process.poll(), "the daemon", 60)
    assert process.poll() is None
    yield process
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


class Events:
    """The daemon's event stream, read in a thread from before the hooks run."""

    def __init__(self, agent: Agent) -> None:
        info = json.loads((agent.home / "daemon.json").read_text("utf-8"))
        token = (agent.home / "daemon-token").read_text("utf-8").strip()
        self.client = httpx2.Client(
            base_url=info["url"], headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        self.seen: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.ready.wait(30)

    def _read(self) -> None:
        try:
            with self.client.stream("GET", "/events") as stream:
                self.ready.set()
                for line in stream.iter_lines():
                    if line.startswith("data: "):
                        self.seen.append(json.loads(line[len("data: ") :]))
        except httpx2.HTTPError:
            return  # the daemon stopped

    def __enter__(self) -> Events:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.seen if event["type"] == kind]


@contextlib.contextmanager
def memory_page(tmp_path: Path, project_id: str) -> Iterator[Callable[..., str]]:
    """The Memory page's notes section of a project (or another of its routes), signed in
    once through the link the daemon printed."""
    printed = (tmp_path / "daemon.err").read_text("utf-8")
    link = next(word for word in printed.split() if "/auth?code=" in word)
    with httpx2.Client(timeout=30) as client:
        assert client.get(link).status_code == 200

        def notes_section(route: str = "notes") -> str:
            url = link.split("/auth?")[0] + "/memory/" + route
            page = client.get(url, params={"workspace": project_id})
            assert page.status_code == 200
            return html.unescape(page.text)

        yield notes_section


@pytest.fixture
def stack() -> Iterator[contextlib.ExitStack]:
    with contextlib.ExitStack() as resources:
        yield resources


def test_the_daemon_runs_the_pass_when_it_runs(
    agent: Agent,
    stub: StubModelServer,
    tmp_path: Path,
    daemon: subprocess.Popen[bytes],
    stack: contextlib.ExitStack,
) -> None:
    events = stack.enter_context(Events(agent))
    chat = transcript(tmp_path, "codex_rollout.jsonl")
    stub.script(openai_text(extraction_answer()))  # a pass that saves nothing says nothing
    agent.hook("codex", "session-end", session_id="cx-d", transcript_path=str(chat))
    wait_for(lambda: agent.cursor("codex", "cx-d").get("last"), "the first pass")
    page = stack.enter_context(memory_page(tmp_path, _project_id(agent)))
    first = page()
    assert 'id="notes-captured"' not in first
    # The line's place follows the capture's event: it shows without a reload.
    assert "sse:memory_extracted" in first and 'id="notes-captured-live"' in first

    path = transcript(tmp_path, "claude_code_session.jsonl")
    stub.script(openai_text(extraction_answer(ZEPHYR)))
    stop = agent.hook("claude-code", "stop", session_id="cc-d", transcript_path=str(path))
    assert stop.stdout == ""
    [note_id] = wait_for(agent.notes, "the note")
    cursor = wait_for(lambda: agent.cursor("claude-code", "cc-d"), "the cursor")
    assert cursor["last"]["via"] == "daemon" and cursor["offset"] == os.path.getsize(path)
    prompt = agent.prompts()[-1]
    assert "We deploy with the Zephyr release train" in prompt
    assert "RECALLED-NOTE-TEXT" not in prompt
    assert not (agent.home / "logs" / "hooks.log").exists()  # no fallback was needed

    [extracted] = wait_for(lambda: events.of("memory_extracted"), "the event")
    assert extracted["data"] == {
        "count": 1,
        "notes": [{"id": note_id, "scope": "project", "action": "created"}],
        "source": "capture",
        "agent": "claude-code",
        "event": "stop",
        "sessionId": "cc-d",
    }
    assert "Zephyr" not in json.dumps(extracted)  # events carry ids, never note text
    shown = page()
    assert "Saved 1 memory from your last Claude Code session" in shown
    assert f"{ZEPHYR['summary']}</a> ({note_id})" in shown
    live = page("notes/captured")  # what the page fetches when the event arrives
    assert live.startswith('<div id="notes-captured-live"')
    assert f"{ZEPHYR['summary']}</a> ({note_id})" in live
    start = {"session_id": "cc-next", "transcript_path": str(tmp_path / "next.jsonl")}
    told = agent.hook("claude-code", "session-start", source="startup", **start).stdout
    assert json.loads(told)["systemMessage"] == (
        f"saved 1 memory from your last session: {ZEPHYR['summary']} ({note_id})"
    )
    assert len(events.of("memory_extracted")) == 1

    # A job queued before the project's config switched capture off: the daemon obeys.
    append(path, "claude_code_more.jsonl")
    user = {**MODEL, "memory": {"autoExtract": {"onStop": True, "minUserTurns": 1}}}
    agent.configure(user, project={"memory": {"autoExtract": {"onStop": False}}})
    job = {
        "agent": "claude-code",
        "event": "stop",
        "sessionId": "cc-d",
        "transcriptPath": str(path),
        "projectRoot": str(agent.project),
    }
    assert _daemon_task(agent, job)["result"]["outcome"] == "off"
    elsewhere = {**job, "projectRoot": str(tmp_path / "elsewhere")}
    refused = _daemon_task(agent, elsewhere)
    assert (
        refused["status"] == "failed" and "post it to the workspace" in refused["error"]["message"]
    )
    assert len(agent.prompts()) == 2 and agent.cursor("claude-code", "cc-d")["passes"] == 1


def test_the_daemon_refuses_a_malformed_capture_job_with_the_field_named(
    agent: Agent, daemon: subprocess.Popen[bytes]
) -> None:
    info = json.loads((agent.home / "daemon.json").read_text("utf-8"))
    token = (agent.home / "daemon-token").read_text("utf-8").strip()
    job = {
        "agent": "claude-code",
        "event": "stop",
        "sessionId": "s",
        "transcriptPath": "transcript.jsonl",
        "projectRoot": str(agent.project),
    }
    bad = {
        "'transcriptPath' must be an absolute path": job,
        "unknown agent or event": {**job, "transcriptPath": "/t.jsonl", "agent": "cursor"},
        "'sessionId' is missing": {**job, "sessionId": 7},
    }
    headers = {"Authorization": f"Bearer {token}"}
    with httpx2.Client(base_url=info["url"], headers=headers, timeout=30) as client:
        client.post("/workspaces", json={"path": str(agent.project)}).raise_for_status()
        for said, body in bad.items():
            answer = client.post(f"/workspaces/{_project_id(agent)}/memory/capture", json=body)
            assert answer.status_code == 400 and answer.json()["code"] == "invalid_capture"
            assert said in answer.json()["error"]


def _project_id(agent: Agent) -> str:
    return str(json.loads((agent.project / ".oharness" / "project.json").read_text())["id"])


def _daemon_task(agent: Agent, job: dict[str, str]) -> dict[str, Any]:
    info = json.loads((agent.home / "daemon.json").read_text("utf-8"))
    token = (agent.home / "daemon-token").read_text("utf-8").strip()
    project_id = _project_id(agent)
    headers = {"Authorization": f"Bearer {token}", "X-OHarness-Client-Id": "capture-test"}
    with httpx2.Client(base_url=info["url"], headers=headers, timeout=30) as client:
        base = f"/workspaces/{project_id}/memory/capture"
        posted = client.post(base, json=job)
        assert posted.status_code == 202, posted.text
        task_id = posted.json()["taskId"]
        return wait_for(
            lambda: (
                (got := client.get(f"{base}/{task_id}").json())["status"] in ("completed", "failed")
                and got
            ),
            "the task",
        )


def test_a_daemon_that_does_not_answer_costs_one_short_wait_then_a_process_captures(
    agent: Agent, stub: StubModelServer, tmp_path: Path
) -> None:
    _extracting(agent)
    with socket.socket() as hanging:  # accepts connections, never answers
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(8)
        port = hanging.getsockname()[1]
        (agent.home / "daemon.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}"}))
        (agent.home / "daemon-token").write_text("t" * 32)
        path = transcript(tmp_path, "claude_code_session.jsonl")
        stub.script(openai_text(extraction_answer(ZEPHYR)))
        started = time.monotonic()
        agent.hook("claude-code", "stop", session_id="cc-h", transcript_path=str(path))
        assert time.monotonic() - started < 10
        wait_for(agent.notes, "the note")
        cursor = wait_for(lambda: agent.cursor("claude-code", "cc-h"), "the cursor")
        assert cursor["last"]["via"] == "process"
        log = (agent.home / "logs" / "hooks.log").read_text("utf-8")
        assert "the daemon did not take the capture, a background process does" in log
        second = transcript(tmp_path, "codex_rollout.jsonl")
        stub.script(openai_text(extraction_answer(PYTEST)))
        started = time.monotonic()
        agent.hook("codex", "session-end", session_id="cx-h", transcript_path=str(second))
        cooled = time.monotonic() - started
        wait_for(lambda: agent.cursor("codex", "cx-h"), "the second pass")
        wait_for(lambda: len(agent.notes()) == 2, "the second note")
        assert log == (agent.home / "logs" / "hooks.log").read_text("utf-8")  # not asked again
        assert cooled < 10


_PRINT_MODULES = (
    "import json, sys\n"
    "from oharness.cli.entry import main\n"
    "code = main(['hook', 'claude-code', 'stop'])\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump(sorted(sys.modules), out)\n"
    "sys.exit(code)\n"
)


def test_the_stop_hook_imports_almost_nothing_and_its_pass_still_runs(
    agent: Agent, stub: StubModelServer, tmp_path: Path
) -> None:
    _extracting(agent)
    path = transcript(tmp_path, "claude_code_session.jsonl")
    stub.script(openai_text(extraction_answer(ZEPHYR)))
    listing = tmp_path / "modules.json"
    payload = {"cwd": str(agent.project), "hook_event_name": "Stop", "session_id": "cc-lean"}
    result = subprocess.run(
        [sys.executable, "-c", _PRINT_MODULES, str(listing)],
        input=json.dumps({**payload, "transcript_path": str(path), "stop_hook_active": False}),
        capture_output=True,
        text=True,
        env=agent.environment(),
        cwd=agent.project,
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout == "", result.stderr
    wait_for(agent.notes, "the note the detached pass saved")
    modules = set(json.loads(listing.read_text()))
    ours = {name for name in modules if name == "oharness" or name.startswith("oharness.")}
    assert ours == {
        "oharness",
        "oharness.exports",
        "oharness.errors",
        "oharness.cli",
        "oharness.cli.entry",
        "oharness.cli.hook",
        "oharness.cli.hook_log",
        "oharness.bridges",
        "oharness.bridges.prompt_hook",
        "oharness.bridges.capture_hook",
        "oharness.capture",
        "oharness.capture.cursor",
        "oharness.capture.switches",
        "oharness.capture.transcript",
        "oharness.project",
        "oharness.project.discovery",
    }
    if "coverage" not in modules:  # a measured run loads coverage's own imports too
        assert not {"subprocess", "typing", "pathlib", "dataclasses", "socket"} & modules


def test_a_stop_below_the_threshold_hands_nothing_over(agent: Agent, tmp_path: Path) -> None:
    """Most stops of a session are below ``minUserTurns``: the hook starts no pass for them.
    A listening socket stands in for the daemon and shows whether the hook knocked."""
    _extracting(agent, min_turns=4)
    with socket.socket() as door:
        door.bind(("127.0.0.1", 0))
        door.listen(8)
        door.setblocking(False)
        port = door.getsockname()[1]
        (agent.home / "daemon.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}"}))
        (agent.home / "daemon-token").write_text("t" * 32)
        path = transcript(tmp_path, "claude_code_session.jsonl")  # three user messages
        agent.hook("claude-code", "stop", session_id="cc-few", transcript_path=str(path))
        with pytest.raises(BlockingIOError):
            door.accept()  # nobody knocked
        append(path, "claude_code_more.jsonl")  # the fourth
        agent.hook("claude-code", "stop", session_id="cc-few", transcript_path=str(path))
        knock, _ = door.accept()
        knock.close()


def test_a_git_repository_not_registered_yet_registers_itself_at_its_first_capture(
    home: Path, tmp_path: Path, stub: StubModelServer
) -> None:
    # Before, the pass was skipped without a word until something else registered the folder.
    repo = tmp_path / "fresh-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    agent = Agent(home, repo, stub)
    _extracting(agent)
    path = transcript(tmp_path, "claude_code_session.jsonl")
    stub.script(openai_text(extraction_answer(ZEPHYR)))
    agent.hook("claude-code", "stop", session_id="cc-9", transcript_path=str(path))
    assert (repo / ".oharness" / "project.json").is_file()
    assert len(wait_for(agent.notes, "the note")) == 1
