"""The capture hooks: ``oharness hook claude-code|codex stop|pre-compact|session-end``.

Contracts followed (see docs/capture.md): the Claude Code hooks reference as of Claude Code
2.1.x, and Codex's hooks (``[features] codex_hooks = true``, Codex CLI 0.12x), which take the
same input and output shapes. The input names ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` and, for ``Stop``, ``stop_hook_active``; inside a subagent Claude Code adds
``agent_id``. A ``Stop`` hook may answer ``{"decision": "block", "reason": …}``: the agent
goes on with the reason as its next instruction.

The hook itself never extracts (it must return at once): it hands the session to the daemon as
a ``capture`` task, or, with no daemon, to a detached ``oharness hook capture-run`` process
that outlives the agent. Only the pass reads the transcript's unread stretch. With no model
configured and ``memory.autoExtract.askAgent`` on, ``Stop`` asks the agent itself, once per
session, to save what is worth keeping with the ``remember`` tool.
"""

from __future__ import annotations

import json
import os
import sys

from oharness.bridges.prompt_hook import DAEMON_TIMEOUT_S, DaemonRefused, find_project, post_json
from oharness.capture.cursor import CaptureState
from oharness.capture.switches import Switches, read_switches
from oharness.capture.transcript import Stretch, complete_end, read_stretch

TYPE_CHECKING = False  # not typing's: a hook pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Final

CAPTURE_EVENTS: Final = ("stop", "pre-compact", "session-end")
ASK_AGENT: Final = (
    "Before you stop: save what this session established that will still matter in a later "
    "session (decisions, conventions, facts about this project or about the user; not "
    "chit-chat, not what the code or git history already records) with the `remember` tool, "
    "one short note per fact, and never a password, key or token. If nothing is worth keeping, "
    "stop without saving anything."
)


class CaptureInput:
    """The fields of a capture hook's input that matter."""

    __slots__ = ("cwd", "session_id", "stop_hook_active", "subagent", "transcript_path")

    def __init__(self, payload: Mapping[str, Any]) -> None:
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        session_id = payload.get("session_id")
        self.session_id = session_id if isinstance(session_id, str) else ""
        transcript = payload.get("transcript_path")
        self.transcript_path = transcript if isinstance(transcript, str) else ""
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise ValueError("cwd is missing, not an absolute path or not a folder")
        self.cwd = cwd
        self.stop_hook_active = payload.get("stop_hook_active") is True
        agent_id = payload.get("agent_id")
        in_subagent = isinstance(agent_id, str) and bool(agent_id)
        self.subagent = in_subagent or f"{os.sep}subagents{os.sep}" in self.transcript_path


def hook_switches(home: str, root: str) -> Switches:
    """The capture switches: read plainly, else through the full settings loader (which
    raises :class:`oharness.errors.ConfigError` naming the fix for a broken value)."""
    plain = read_switches(home, root)
    if plain is not None:
        return plain
    from pathlib import Path

    from oharness.project.config import load_settings

    settings = load_settings(Path(home) / "config.json", Path(root))
    auto = settings.memory.auto_extract
    model = bool(settings.models.small or settings.models.main)  # as ``oharness chat`` picks
    return Switches(model, auto.on_stop, auto.on_compaction, auto.ask_agent, auto.min_user_turns)


def wants_extraction(event: str, switches: Switches) -> bool:
    if event == "pre-compact":
        return switches.on_compaction or switches.on_stop
    return switches.on_stop


def handle_capture(
    agent: str, event: str, payload: Mapping[str, Any], home: str, log: Callable[[str], None]
) -> str:
    """A capture hook: hand the session over, or ask the agent once; the hook's stdout."""
    fields = CaptureInput(payload)
    if fields.subagent or not fields.session_id or not fields.transcript_path:
        return ""  # nothing is ever extracted from subagents; no transcript, nothing to read
    project = find_project(fields.cwd, home) or _registered_now(fields.cwd, home)
    if project is None:
        return ""  # capture writes a project's notes: no project here, no capture
    root, project_id = project
    switches = hook_switches(home, root)
    if switches.model:
        if wants_extraction(event, switches) and unread_enough(
            agent, event, fields, home, switches
        ):
            job = {
                "agent": agent,
                "event": event,
                "sessionId": fields.session_id,
                "transcriptPath": fields.transcript_path,
                "projectRoot": root,
            }
            hand_over(home, project_id, job, log)
        return ""
    if event == "stop" and switches.ask_agent and not fields.stop_hook_active:
        return ask_agent_once(agent, fields, home, switches.min_user_turns)
    return ""


def unread_stretch(
    agent: str, fields: CaptureInput, state: CaptureState, record: dict[str, Any]
) -> Stretch | None:
    """What no pass has read of the session's transcript; None for a subagent's (marked)."""
    same_file = record.get("transcript") == fields.transcript_path
    offset = record.get("offset") if same_file else 0
    start = offset if isinstance(offset, int) and offset >= 0 else 0
    stretch = read_stretch(fields.transcript_path, agent, start)
    if stretch.subagent:
        state.save_session(agent, fields.session_id, {**record, "subagent": True})
        return None
    return stretch


def unread_enough(
    agent: str, event: str, fields: CaptureInput, home: str, switches: Switches
) -> bool:
    """Whether a pass would read anything: most stops of a session are below the threshold,
    and a pass not started costs nothing (the pass checks again under the project's lock)."""
    state = CaptureState(home)
    record = state.session(agent, fields.session_id)
    if record.get("subagent"):
        return False
    stretch = unread_stretch(agent, fields, state, record)
    return stretch is not None and stretch.enough_for(event, switches.min_user_turns)


def ask_agent_once(agent: str, fields: CaptureInput, home: str, min_user_turns: int) -> str:
    """The Stop answer asking the agent to save, at most once per session."""
    state = CaptureState(home)
    record = state.session(agent, fields.session_id)
    if record.get("askedAt") or record.get("subagent"):
        return ""
    stretch = unread_stretch(agent, fields, state, record)
    if stretch is None or not stretch.enough_for("stop", min_user_turns):
        return ""
    import time

    state.save_session(agent, fields.session_id, {**record, "askedAt": int(time.time() * 1000)})
    return json.dumps({"decision": "block", "reason": ASK_AGENT})


def hand_over(home: str, project_id: str, job: dict[str, str], log: Callable[[str], None]) -> str:
    """Queue the pass in the daemon, else start a detached process: ``daemon`` or ``process``."""
    from oharness.bridges.prompt_hook import cooling_down

    # A daemon that hung a moment ago is not waited for again.
    if not cooling_down(home) and _queued_in_daemon(home, project_id, job, log):
        return "daemon"
    spawn_worker(home, job)
    return "process"


def _queued_in_daemon(
    home: str, project_id: str, job: dict[str, str], log: Callable[[str], None]
) -> bool:
    """Whether the daemon took the pass (False when none runs, or it refused or hung: said)."""
    from oharness.bridges.prompt_hook import start_cooldown

    body = json.dumps(job).encode("utf-8", "surrogatepass")
    try:
        _post_capture(home, project_id, job["projectRoot"], body)
    except FileNotFoundError:  # no daemon runs for this home
        return False
    except (OSError, ValueError) as exc:
        reason = f"the daemon did not take the capture, a background process does: {exc}"
        if isinstance(exc, TimeoutError):
            try:
                start_cooldown(home)
            except OSError as mark:
                reason += f"; the cool-down could not be recorded ({mark})"
        log(reason)
        return False
    return True


def _post_capture(home: str, project_id: str, root: str, body: bytes) -> None:
    from oharness.bridges.prompt_hook import daemon_address

    host, port, token = daemon_address(home)
    path = f"/workspaces/{project_id}/memory/capture"
    try:
        post_json(host, port, path, token, body, DAEMON_TIMEOUT_S, ok=(202,))
    except DaemonRefused as refused:
        if refused.code != "workspace_not_found":
            raise
        register = json.dumps({"path": root}).encode("utf-8", "surrogatepass")
        post_json(host, port, "/workspaces", token, register, DAEMON_TIMEOUT_S, ok=(200, 201))
        post_json(host, port, path, token, body, DAEMON_TIMEOUT_S, ok=(202,))


def spawn_worker(home: str, job: dict[str, str]) -> None:
    """Start ``oharness hook capture-run JOB`` in its own session: it outlives the agent.

    ``os.posix_spawn`` where it can start a session (``subprocess`` alone costs the hook a
    tenth of its start-up); the worker opens the project by the job's path, not its folder."""
    argv = [sys.executable, "-m", "oharness.cli.entry", "hook", "capture-run", json.dumps(job)]
    environment = {**os.environ, "OHARNESS_HOME": home}
    quiet = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)
    ] if hasattr(os, "posix_spawn") else []  # fmt: skip
    if quiet and _spawned_in_session(argv, environment, quiet):
        return
    import subprocess

    subprocess.Popen(
        argv,
        cwd=job["projectRoot"],
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _spawned_in_session(argv: list[str], environment: dict[str, str], quiet: list[Any]) -> bool:
    """``os.posix_spawn`` in a new session; False where the system has no session flag (then
    ``subprocess`` starts the session itself)."""
    try:
        os.posix_spawn(sys.executable, argv, environment, file_actions=quiet, setsid=True)
    except NotImplementedError:
        return False
    return True


def note_resume(agent: str, payload: Mapping[str, Any], home: str) -> None:
    """SessionStart ``resume``: a session first seen now starts counting here (spec 04)."""
    if not isinstance(payload, dict) or payload.get("source") != "resume":
        return
    session_id = payload.get("session_id")
    transcript = payload.get("transcript_path")
    if not isinstance(session_id, str) or not isinstance(transcript, str) or not session_id:
        return
    state = CaptureState(home)
    record = state.session(agent, session_id)
    if record.get("transcript") == transcript:
        return  # a cursor of this session already says what was read
    try:
        end = complete_end(transcript)
    except OSError:
        return
    state.save_session(agent, session_id, {**record, "transcript": transcript, "offset": end})


def _registered_now(cwd: str, home: str) -> tuple[str, str] | None:
    """A git repository not registered yet registers itself, as on its first project note
    (capture writes project notes); any other folder stays as it is."""
    from pathlib import Path

    from oharness.memory.workspace import open_workspace
    from oharness.project.identity import find_project as locate
    from oharness.project.identity import registers_itself

    location = locate(Path(cwd), Path(home))
    if location is None or location.registered or location.refused is not None:
        return None
    if not registers_itself(location.root):
        return None
    open_workspace(Path(cwd), Path(home), register=True).close()
    return find_project(cwd, home)


def announce_saved(output: str, payload: Mapping[str, Any], home: str) -> str:
    """The session-start output with "saved N memories from your last session" added."""
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    if not isinstance(cwd, str):
        return output
    project = find_project(cwd, home)
    notes = CaptureState(home).claim_pending(project[0]) if project else []
    if not notes:
        return output
    from oharness.extraction.announce import Announcement

    text = Announcement.from_dict({"notes": notes}).text("your last session")
    data = json.loads(output) if output else {}
    specific = data.setdefault("hookSpecificOutput", {"hookEventName": "SessionStart"})
    context = specific.get("additionalContext", "")
    specific["additionalContext"] = f"{context}\n\n{text}".strip()
    data["systemMessage"] = text
    return json.dumps(data, ensure_ascii=False)
