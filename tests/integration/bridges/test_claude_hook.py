"""``oharness hook claude-code …`` fed recorded payloads of Claude Code's documented shape."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from repos import git
from tests.integration.bridges.runner import OHARNESS, ok, run

from oharness.bridges.claude_hook import MAX_SESSIONS, HookState


def _prompt(project: Path, prompt: str, session: str = "sess-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": f"/tmp/{session}.jsonl",
            "cwd": str(project),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def _start(project: Path, source: str, session: str = "sess-1") -> str:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": f"/tmp/{session}.jsonl",
            "cwd": str(project),
            "hook_event_name": "SessionStart",
            "source": source,
            "model": "claude-sonnet-4-6",
        }
    )


def _hook(home: Path, event: str, payload: str) -> subprocess.CompletedProcess[str]:
    result = run(home, home, "hook", "claude-code", event, input=payload)
    assert result.returncode == 0, result.stderr
    return result


def _context(result: subprocess.CompletedProcess[str], event: str) -> str:
    data = json.loads(result.stdout)
    assert set(data) == {"hookSpecificOutput"}
    assert data["hookSpecificOutput"]["hookEventName"] == event
    context: str = data["hookSpecificOutput"]["additionalContext"]
    return context


@pytest.fixture
def project(home: Path, project_dir: Path) -> Path:
    ok(home, project_dir, "project", "init")
    ok(
        home,
        project_dir,
        "memory",
        "remember",
        "-s",
        "Deploys happen on Tuesdays",
        "-b",
        "The release train leaves at noon.",
        "--tags",
        "deploy, release",
    )
    ok(
        home,
        project_dir,
        "memory",
        "remember",
        "-s",
        "Payments use Stripe webhooks",
        "-b",
        "Retries are idempotent.",
        "--tags",
        "payments",
    )
    return project_dir


def test_prompt_attaches_once_per_session(home: Path, project: Path) -> None:
    first = _hook(home, "user-prompt-submit", _prompt(project, "when do we deploy a release?"))
    context = _context(first, "UserPromptSubmit")
    assert context.startswith("<recalled-memory>") and "Deploys happen on Tuesdays" in context
    assert "Stripe" not in context
    again = _hook(home, "user-prompt-submit", _prompt(project, "deploy release again?"))
    assert again.stdout == ""
    other = _hook(home, "user-prompt-submit", _prompt(project, "deploy release?", "sess-2"))
    assert "Deploys happen on Tuesdays" in _context(other, "UserPromptSubmit")
    unrelated = _hook(home, "user-prompt-submit", _prompt(project, "hello there", "sess-3"))
    assert unrelated.stdout == ""


def test_session_start_prints_index_and_clear_frees_notes(home: Path, project: Path) -> None:
    started = _hook(home, "session-start", _start(project, "startup"))
    index = _context(started, "SessionStart")
    assert "Deploys happen on Tuesdays" in index and "Payments use Stripe" in index
    _hook(home, "user-prompt-submit", _prompt(project, "when do we deploy a release?"))
    assert _hook(home, "user-prompt-submit", _prompt(project, "deploy release?")).stdout == ""
    _hook(home, "session-start", _start(project, "resume"))
    assert _hook(home, "user-prompt-submit", _prompt(project, "deploy release?")).stdout == ""
    _hook(home, "session-start", _start(project, "clear"))
    cleared = _hook(home, "user-prompt-submit", _prompt(project, "deploy release?"))
    assert "Deploys happen on Tuesdays" in _context(cleared, "UserPromptSubmit")


@pytest.mark.parametrize(
    "payload",
    [
        "not json at all",
        "[1, 2, 3]",
        json.dumps({"session_id": "s", "prompt": "deploy release"}),
        json.dumps({"session_id": "s", "cwd": "relative/dir", "prompt": "deploy"}),
        json.dumps({"session_id": "s", "cwd": "/no/such/folder", "prompt": "deploy"}),
        json.dumps({"session_id": "s", "cwd": "/", "prompt": 42}),
        "\udcff",
    ],
)
def test_failures_print_nothing_exit_zero_and_log(home: Path, project: Path, payload: str) -> None:
    result = subprocess.run(
        [str(OHARNESS), "hook", "claude-code", "user-prompt-submit"],
        input=payload.encode("utf-8", "surrogateescape"),
        capture_output=True,
        env={**os.environ, "OHARNESS_HOME": str(home)},
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
    log = (home / "logs" / "hooks.log").read_text(encoding="utf-8")
    assert "user-prompt-submit" in log and len(log.splitlines()) >= 1


def test_broken_notes_folder_is_silent(home: Path, project: Path) -> None:
    config = project / ".oharness" / "config.json"
    config.write_text("{ not json", encoding="utf-8")
    result = _hook(home, "user-prompt-submit", _prompt(project, "deploy release?"))
    assert result.stdout == "" and result.stderr == ""
    assert (home / "logs" / "hooks.log").is_file()
    started = _hook(home, "session-start", _start(project, "startup"))
    assert started.stderr == "" and set(json.loads(started.stdout)) == {"systemMessage"}
    message = json.loads(started.stdout)["systemMessage"]
    assert "memory is off" in message and str(config) in message
    assert "fix the file or remove it" in message


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_broken_home_config_is_told_to_the_person_at_session_start(
    home: Path, project: Path, agent: str
) -> None:
    (home / "config.json").write_text('{"memory": ', encoding="utf-8")
    started = run(home, home, "hook", agent, "session-start", input=_start(project, "startup"))
    assert started.returncode == 0
    message = json.loads(started.stdout)["systemMessage"]
    assert str(home / "config.json") in message and "not valid JSON" in message
    prompt = run(home, home, "hook", agent, "user-prompt-submit", input=_prompt(project, "x"))
    assert prompt.returncode == 0 and prompt.stdout == ""


def test_a_session_start_without_a_usable_folder_names_the_cause(home: Path) -> None:
    payload = json.dumps({"session_id": "s", "source": "startup", "cwd": "/no/such/folder"})
    started = run(home, home, "hook", "claude-code", "session-start", input=payload)
    assert started.returncode == 0
    message = json.loads(started.stdout)["systemMessage"]
    assert "cwd /no/such/folder is not a folder" in message and "unexpected" not in message


def test_wrong_command_line_is_a_usage_error(home: Path) -> None:
    result = run(home, home, "hook", "claude-code", "nonsense")
    assert result.returncode == 2 and "usage" in result.stderr


def test_session_records_are_bounded(tmp_path: Path) -> None:
    state = HookState(tmp_path)
    for number in range(MAX_SESSIONS + 5):
        state.save(f"session-{number}", [f"project:n{number}"], "library")
    assert len(list(Path(state.directory).glob("*.json"))) == MAX_SESSIONS
    assert not list(Path(state.directory).glob("*.tmp"))  # every write finished and replaced
    killed = Path(state.path("killed") + ".4242.1.tmp")  # a hook killed mid-write
    killed.write_text('{"attached": [')
    os.utime(killed, (time.time() - 7200, time.time() - 7200))
    fresh = Path(state.path("writing") + ".4243.1.tmp")  # another hook writing right now
    fresh.write_text('{"attached": [')
    state.save("long", [f"project:n{i}" for i in range(2000)], "library")
    assert not killed.exists() and fresh.exists()
    assert len(state.attached("long")) == 500
    assert state.attached("never-seen") == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def daemon(home: Path, project: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [str(OHARNESS), "serve", "--port", str(_free_port())],
        cwd=project,
        env={**os.environ, "OHARNESS_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (home / "daemon.json").exists():
        assert process.poll() is None and time.monotonic() < deadline, "daemon did not start"
        time.sleep(0.05)
    yield process
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def test_daemon_answers_when_it_runs(
    home: Path, project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    first = _hook(home, "user-prompt-submit", _prompt(project, "when do we deploy a release?"))
    assert "Deploys happen on Tuesdays" in _context(first, "UserPromptSubmit")
    record: dict[str, Any] = json.loads(Path(HookState(home).path("sess-1")).read_text("utf-8"))
    assert record["via"] == "daemon"
    assert _hook(home, "user-prompt-submit", _prompt(project, "deploy release?")).stdout == ""


_PRINT_MODULES = (
    "import json, sys\n"
    "from oharness.cli.entry import main\n"
    "code = main(['hook', 'claude-code', 'user-prompt-submit'])\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump(sorted(sys.modules), out)\n"
    "sys.exit(code)\n"
)


def test_daemon_path_imports_almost_nothing(
    home: Path, project: Path, daemon: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    listing = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", _PRINT_MODULES, str(listing)],
        input=_prompt(project, "when do we deploy a release?"),
        capture_output=True,
        text=True,
        env={**os.environ, "OHARNESS_HOME": str(home)},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "Deploys happen on Tuesdays" in _context(result, "UserPromptSubmit")
    record = json.loads(Path(HookState(home).path("sess-1")).read_text("utf-8"))
    assert record["via"] == "daemon"
    modules = set(json.loads(listing.read_text()))
    ours = {name for name in modules if name == "oharness" or name.startswith("oharness.")}
    assert ours == {
        "oharness",
        "oharness.exports",
        "oharness.errors",  # the one error tree (no typing at import)
        "oharness.cli",
        "oharness.cli.entry",
        "oharness.cli.hook",
        "oharness.cli.hook_log",
        "oharness.bridges",
        "oharness.bridges.prompt_hook",
        "oharness.project",
        "oharness.project.discovery",
    }
    assert not {"numpy", "Stemmer", "click", "httpx2", "email", "http.client"} & modules
    if "coverage" not in modules:  # a measured run loads coverage's own imports too
        assert not {"pathlib", "typing", "urllib.parse"} & modules


def test_daemon_registers_a_project_it_does_not_host_yet(
    home: Path, project: Path, daemon: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    ok(home, other, "project", "init")
    ok(home, other, "memory", "remember", "-s", "Invoices are sent on Fridays", "-b", "At nine.")
    nested = other / "src" / "billing"
    nested.mkdir(parents=True)
    found = _hook(home, "user-prompt-submit", _prompt(nested, "when are invoices sent?", "s-o"))
    assert "Invoices are sent on Fridays" in _context(found, "UserPromptSubmit")
    record = json.loads(Path(HookState(home).path("s-o")).read_text("utf-8"))
    assert record["via"] == "daemon"
    info = json.loads((home / "daemon.json").read_text())
    token = (home / "daemon-token").read_text().strip()
    with httpx2.Client(base_url=info["url"], headers={"Authorization": f"Bearer {token}"}) as c:
        roots = {Path(w["root"]).resolve() for w in c.get("/workspaces").json()["workspaces"]}
    assert other.resolve() in roots


def test_a_dead_daemon_is_logged_and_the_library_answers(home: Path, project: Path) -> None:
    (home / "daemon.json").write_text(json.dumps({"url": f"http://127.0.0.1:{_free_port()}"}))
    (home / "daemon-token").write_text("token-of-a-dead-daemon\n")
    found = _hook(home, "user-prompt-submit", _prompt(project, "when do we deploy a release?"))
    assert "Deploys happen on Tuesdays" in _context(found, "UserPromptSubmit")
    record = json.loads(Path(HookState(home).path("sess-1")).read_text("utf-8"))
    assert record["via"] == "library"
    log = (home / "logs" / "hooks.log").read_text(encoding="utf-8")
    assert "the daemon did not answer, the library did" in log
    assert "token-of-a-dead-daemon" not in log


def test_odd_unicode_through_the_daemon_never_breaks_the_prompt(
    home: Path, project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    rocket = _prompt(project, "when do we deploy a release? 🚀 ünïcödé 部署", "s-u")
    found = _hook(home, "user-prompt-submit", rocket)
    assert "Deploys happen on Tuesdays" in _context(found, "UserPromptSubmit")
    lone = _prompt(project, "deploy release \udcff now", "s-l")  # a lone surrogate, escaped
    assert "\\udcff" in lone
    result = _hook(home, "user-prompt-submit", lone)
    assert result.stderr == ""
    if result.stdout:  # the library may still answer; whatever it prints is the documented shape
        _context(result, "UserPromptSubmit")


@contextlib.contextmanager
def _hung_daemon(home: Path) -> Iterator[list[socket.socket]]:
    """A daemon for ``home`` that accepts connections and never answers; yields the
    connections it accepted."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_hang() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_hang, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    (home / "daemon.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}"}))
    (home / "daemon-token").write_text("token-of-a-hung-daemon\n")
    try:
        yield held
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()


def test_a_hung_daemon_costs_one_short_wait_then_the_library_answers(
    home: Path, project: Path
) -> None:
    """A daemon that accepts and never answers: the first prompt waits once, then prompts
    skip it for the cool-down and the library answers at once."""
    from oharness.bridges.prompt_hook import DAEMON_TIMEOUT_S

    with _hung_daemon(home) as held:
        timings = []
        for number in range(3):
            began = time.monotonic()
            result = _hook(
                home,
                "user-prompt-submit",
                _prompt(project, "when do we deploy a release?", f"sess-hung-{number}"),
            )
            timings.append(time.monotonic() - began)
            assert "Deploys happen on Tuesdays" in _context(result, "UserPromptSubmit")
        assert len(held) == 1  # only the first prompt asked the daemon
        assert timings[0] >= DAEMON_TIMEOUT_S
        assert (home / "hooks" / "daemon-unresponsive").is_file()


def test_a_hung_daemon_costs_a_session_start_one_short_wait(home: Path, project: Path) -> None:
    """At session start the hook asks a running daemon whether it hosts the project (to pull
    a new one's notes first): a daemon that never answers costs one wait, then is skipped."""
    from oharness.bridges.first_use import HOST_WAIT_S

    with _hung_daemon(home) as held:
        timings = []
        for number in range(2):
            began = time.monotonic()
            started = _hook(home, "session-start", _start(project, "startup", f"hung-{number}"))
            timings.append(time.monotonic() - began)
            assert "Deploys happen on Tuesdays" in _context(started, "SessionStart")
        assert len(held) == 1 and timings[0] >= HOST_WAIT_S
        assert timings[1] < timings[0]
        assert "did not answer" in (home / "logs" / "hooks.log").read_text(encoding="utf-8")


def test_session_start_outside_a_project_speaks_of_user_notes_only(
    home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    ok(
        home,
        folder,
        "memory",
        "remember",
        "-s",
        "Prefers tabs over spaces",
        "-b",
        "Tabs.",
        "--scope",
        "user",
    )
    index = _context(_hook(home, "session-start", _start(folder, "startup")), "SessionStart")
    assert "Prefers tabs over spaces" in index
    assert "project notes (this repository)" not in index
    assert "This folder is not a project" in index and 'scope "user"' in index
    empty_home = tmp_path / "empty-home"
    empty_home.mkdir()
    empty = _context(_hook(empty_home, "session-start", _start(folder, "startup")), "SessionStart")
    assert "No notes yet" in empty and 'scope "user"' in empty


def test_session_start_in_a_git_checkout_not_registered_yet_speaks_of_project_notes(
    home: Path, tmp_path: Path
) -> None:
    checkout = tmp_path / "new-repo"
    checkout.mkdir()
    git(checkout, "init", "-q")
    ok(home, checkout, "memory", "remember", "-s", "Prefers tabs", "-b", "Tabs.", "--scope", "user")
    assert not (checkout / ".oharness").exists()
    index = _context(_hook(home, "session-start", _start(checkout, "startup")), "SessionStart")
    assert "project notes (this repository)" in index and "not a project" not in index
    assert not (checkout / ".oharness").exists()  # reading registers nothing
