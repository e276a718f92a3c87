"""Machine-local capture state under ``$OHARNESS_HOME/capture/`` (standard library only).

- ``sessions/<sha256(agent:session)>.json`` — one session's cursor: the transcript it read,
  ``offset`` (the byte after the last line a pass has read), how many passes ran, whether the
  agent was asked to save (``askedAt``) and the last pass's outcome;
- ``announce/<sha256(project root)>.json`` — the notes saved and not yet announced, claimed
  by the next session start of that project;
- ``recent/<sha256(project root)>.json`` — the last sessions of that project whose passes
  saved notes (what the Memory page shows; never claimed);
- ``locks/<sha256(project root)>.lock`` — held by the one pass that runs for a project.

Every file is written 0600 in 0700 folders, through a unique temporary file, ``fsync`` and
``os.replace``: a crash leaves the old cursor or the new one, never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

TYPE_CHECKING = False  # not typing's: a hook pays for every import
if TYPE_CHECKING:
    from typing import Any, Final

FILE_MODE: Final = 0o600
FOLDER_MODE: Final = 0o700
MAX_PENDING: Final = 200
MAX_RECENT_SESSIONS: Final = 5


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def private_folder(*parts: str) -> str:
    """``parts`` joined, each missing folder made 0700 whatever the umask."""
    path = ""
    for part in parts:
        path = os.path.join(path, part) if path else part
        try:
            os.mkdir(path, FOLDER_MODE)
        except FileExistsError:
            continue
        os.chmod(path, FOLDER_MODE)
    return path


def write_private(path: str, data: dict[str, Any]) -> None:
    """Replace ``path`` with ``data`` as JSON, atomically and durably, mode 0600."""
    folder = os.path.dirname(path)
    temp = f"{path}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        try:
            os.write(fd, json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:  # noqa: SIM105 - contextlib would be one more import per hook
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class CaptureState:
    """The capture state of one ``OHARNESS_HOME``."""

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.root = os.path.join(os.fspath(home), "capture")
        self.home = os.fspath(home)

    def _folder(self, name: str) -> str:
        return private_folder(self.home, "capture", name)

    def session_path(self, agent: str, session_id: str) -> str:
        return os.path.join(self.root, "sessions", f"{_digest(f'{agent}:{session_id}')}.json")

    def lock_path(self, project_root: str) -> str:
        """The lock file of one project's passes (its folder made)."""
        return os.path.join(self._folder("locks"), f"{_digest(project_root)}.lock")

    def session(self, agent: str, session_id: str) -> dict[str, Any]:
        """A session's cursor record (empty when none was written)."""
        return _read(self.session_path(agent, session_id)) or {}

    def save_session(self, agent: str, session_id: str, record: dict[str, Any]) -> None:
        self._folder("sessions")
        data = {**record, "agent": agent, "sessionId": session_id}
        data["updatedAt"] = int(time.time() * 1000)
        write_private(self.session_path(agent, session_id), data)

    def _announce_path(self, project_root: str) -> str:
        return os.path.join(self.root, "announce", f"{_digest(project_root)}.json")

    def add_pending(self, project_root: str, notes: list[dict[str, Any]]) -> None:
        """Keep saved notes for the next session start of the project (call under its lock)."""
        if not notes:
            return
        self._folder("announce")
        path = self._announce_path(project_root)
        pending = (_read(path) or {}).get("notes")
        kept = [*(pending if isinstance(pending, list) else []), *notes][-MAX_PENDING:]
        write_private(path, {"projectRoot": project_root, "notes": kept})

    def claim_pending(self, project_root: str) -> list[dict[str, Any]]:
        """Take the notes to announce (once: a concurrent start gets none)."""
        path = self._announce_path(project_root)
        claimed = f"{path}.{os.getpid()}.{time.monotonic_ns()}.claimed"
        try:
            os.replace(path, claimed)
        except FileNotFoundError:
            return []
        try:
            notes = (_read(claimed) or {}).get("notes")
        finally:
            os.unlink(claimed)
        return [note for note in notes if isinstance(note, dict)] if isinstance(notes, list) else []

    def _recent_path(self, project_root: str) -> str:
        return os.path.join(self.root, "recent", f"{_digest(project_root)}.json")

    def add_recent(
        self, project_root: str, agent: str, session_id: str, notes: list[dict[str, Any]]
    ) -> None:
        """Add saved notes to the session's entry, newest session first (call under the
        project's lock); nothing is kept for a pass that saved nothing."""
        if not notes:
            return
        self._folder("recent")
        path = self._recent_path(project_root)
        others, earlier = [], []
        for entry in self.recent(project_root):
            if (entry.get("agent"), entry.get("sessionId")) != (agent, session_id):
                others.append(entry)
            elif isinstance(entry.get("notes"), list):
                earlier = entry["notes"]
        known = [*earlier, *notes][-MAX_PENDING:]
        entry = {
            "agent": agent,
            "sessionId": session_id,
            "at": int(time.time() * 1000),
            "notes": known,
        }
        kept = [entry, *others][:MAX_RECENT_SESSIONS]
        write_private(path, {"projectRoot": project_root, "sessions": kept})

    def recent(self, project_root: str) -> list[dict[str, Any]]:
        """The project's last sessions that saved notes, newest first."""
        sessions = (_read(self._recent_path(project_root)) or {}).get("sessions")
        if not isinstance(sessions, list):
            return []
        return [entry for entry in sessions if isinstance(entry, dict)]


#: The agents' names as people know them.
AGENT_NAMES: Final = {"claude-code": "Claude Code", "codex": "Codex"}
#: How long the last session's saved notes are mentioned (the page, the MCP index).
SHOWN_FOR_MS: Final = 7 * 24 * 3600 * 1000


def latest_saved(
    state: CaptureState, project_root: str, now_ms: int
) -> tuple[dict[str, Any], list[dict[str, str]]] | None:
    """The project's newest session whose passes saved notes, within a week of its last save:
    ``(its entry, its notes as {"id", "scope", "summary"})``, or None."""
    sessions = state.recent(project_root)
    if not sessions:
        return None
    latest = sessions[0]
    at = latest.get("at")
    if not isinstance(at, int) or now_ms - at > SHOWN_FOR_MS:
        return None
    saved = latest.get("notes")
    notes = [
        {"id": note["id"], "scope": note["scope"], "summary": note["summary"]}
        for note in (saved if isinstance(saved, list) else [])
        if isinstance(note, dict)
        and all(isinstance(note.get(key), str) for key in ("id", "scope", "summary"))
    ]
    return (latest, notes) if notes else None
