"""The per-prompt hook (``UserPromptSubmit``): ask the daemon, else the library; once per session.

Claude Code (and Codex) start one process per prompt and wait for it, so this module imports
only what the daemon path needs from the standard library — ``os``, ``json``, ``hashlib`` and
``socket``; no ``pathlib``, ``typing``, ``urllib`` or ``http.client`` (whose ``email`` imports
cost more than the request) and of oharness only the discovery rule (``project.discovery``,
itself standard library only). The daemon's address is read from
``$OHARNESS_HOME`` (``daemon.json`` and ``daemon-token``, as :func:`oharness.sdk.find_daemon`
reads them). Only when no daemon answers is the memory engine imported
(:func:`oharness.bridges.library_recall.library_recall`).

The session record (which notes a session already has) lives in
``$OHARNESS_HOME/hooks/claude-code/sessions/<sha256(session_id)>.json``; it is replaced
atomically but not fsynced: it is a cache, and after a power cut the worst case is a note
attached a second time.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from oharness.errors import OHarnessError

TYPE_CHECKING = False  # not typing's: importing typing would cost a hook more than its work
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final

MAX_SESSIONS: Final = 200
MAX_IDS_PER_SESSION: Final = 500
MAX_PROMPT_CHARS: Final = 20_000
DAEMON_TIMEOUT_S: Final = 1.0
#: After a daemon that did not answer in time, prompts skip it for this long (the library
#: answers): a hung daemon costs one short wait, not one on every prompt.
DAEMON_COOLDOWN_S: Final = 60.0
MAX_ANSWER_BYTES: Final = 8 * 1024 * 1024
STALE_TEMP_S: Final = 3600.0
PRIVATE_FILE_MODE: Final = 0o600
PRIVATE_FOLDER_MODE: Final = 0o700


class HookState:
    """Which notes each session already has: ``<home>/hooks/claude-code/sessions/``."""

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.home = os.fspath(home)
        self.directory = os.path.join(self.home, "hooks", "claude-code", "sessions")

    def path(self, session_id: str) -> str:
        """The file holding one session's record."""
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return os.path.join(self.directory, f"{digest}.json")

    def attached(self, session_id: str) -> list[str]:
        """The ``scope:id`` keys attached so far in this session (oldest first)."""
        try:
            with open(self.path(session_id), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return []
        keys = data.get("attached") if isinstance(data, dict) else None
        return [key for key in keys if isinstance(key, str)] if isinstance(keys, list) else []

    def save(self, session_id: str, keys: list[str], via: str) -> None:
        """Record the session's keys (bounded) and which path answered; prune old sessions."""
        make_private_folder(self.home, "hooks", "claude-code", "sessions")
        kept = list(dict.fromkeys(keys))[-MAX_IDS_PER_SESSION:]
        path = self.path(session_id)
        temp = f"{path}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        record = {"attached": kept, "via": via, "updatedAt": int(time.time() * 1000)}
        try:
            created = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
            with open(created, "w", encoding="utf-8") as handle:
                json.dump(record, handle)
            os.replace(temp, path)
        finally:
            _unlink(temp)  # only left when writing failed
        self._prune()

    def forget_session(self, session_id: str) -> None:
        """Drop a session's record (after ``/clear`` or a compaction)."""
        _unlink(self.path(session_id))

    def _prune(self) -> None:
        entries = []
        stale_before = time.time() - STALE_TEMP_S
        with os.scandir(self.directory) as listing:
            for entry in listing:
                try:
                    mtime = entry.stat().st_mtime
                except FileNotFoundError:
                    continue
                if entry.name.endswith(".json"):
                    entries.append((mtime, entry.path))
                elif entry.name.endswith(".tmp") and mtime < stale_before:
                    _unlink(entry.path)  # a hook killed mid-write left it
        entries.sort()
        for _, stale in entries[: max(0, len(entries) - MAX_SESSIONS)]:
            _unlink(stale)


def make_private_folder(home: str, *parts: str) -> str:
    """``home/parts…``, each folder made 0700 whatever the umask (the home is private; the
    library's :func:`oharness.fsio.keep_private`, without its imports)."""
    directory = home
    for part in ("", *parts):
        directory = os.path.join(directory, part) if part else directory
        try:
            os.mkdir(directory, PRIVATE_FOLDER_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, PRIVATE_FOLDER_MODE)
    return directory


def _unlink(path: str) -> None:
    try:  # noqa: SIM105 - contextlib would be one more import per prompt
        os.unlink(path)
    except FileNotFoundError:
        pass


class DaemonRefused(OHarnessError, ValueError):
    """The daemon answered, but not 200: its status and error code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"daemon answered {status} {code}: {message}", status=status)
        self.status = status
        self.code = code


def find_project(start: str, home: str) -> tuple[str, str] | None:
    """``(root, project id)`` of the registered project of ``start``, if any and usable, by
    the library's one rule (:func:`oharness.project.discovery.discover`)."""
    from oharness.project.discovery import discover, read_project_id

    found = discover(start, home)
    if found is None or not found.registered:
        return None
    project_id = read_project_id(found.root)
    return (found.root, project_id) if project_id else None


def daemon_address(home: str) -> tuple[str, int, str]:
    """``(host, port, token)`` of the daemon of ``home``; ``OSError``/``ValueError`` if none.

    ``FileNotFoundError`` means no daemon runs (the usual case without one)."""
    with open(os.path.join(home, "daemon.json"), encoding="utf-8") as handle:
        info = json.load(handle)
    with open(os.path.join(home, "daemon-token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url.startswith("http://") or not token:
        raise ValueError(f"{home}/daemon.json names no plain HTTP daemon URL")
    netloc = url[len("http://") :].split("/", 1)[0]
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = netloc.rpartition(":")
    if not host or not port_text.isdigit():
        raise ValueError(f"daemon URL {url!r} names no host and port")
    return host, int(port_text), token


def _connect(host: str, port: int, timeout: float) -> Any:
    import socket

    if host.replace(".", "").isdigit() or ":" in host:  # an address: no resolver, no idna codec
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        connection = socket.socket(family, socket.SOCK_STREAM)
        connection.settimeout(timeout)
        try:
            connection.connect((host, port))
        except BaseException:
            connection.close()
            raise
        return connection
    return socket.create_connection((host, port), timeout=timeout)


def post_json(
    host: str,
    port: int,
    path: str,
    token: str,
    body: bytes,
    timeout: float,
    *,
    ok: tuple[int, ...] = (200,),
) -> bytes:
    """POST a JSON body over loopback HTTP/1.1 and return the response's body.

    Raises :class:`DaemonRefused` for a status outside ``ok``, ``OSError`` or ``ValueError`` on
    any other failure or when the whole exchange takes longer than ``timeout``."""
    shown = f"[{host}]" if ":" in host else host
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {shown}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1") + body
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    received = 0
    with _connect(host, port, timeout) as connection:
        connection.sendall(request)
        while True:
            connection.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += len(chunk)
            if received > MAX_ANSWER_BYTES:
                raise ValueError("the daemon's answer is too large")
            chunks.append(chunk)
    return _response_body(b"".join(chunks), ok)


def _response_body(data: bytes, ok: tuple[int, ...]) -> bytes:
    head, separator, payload = data.partition(b"\r\n\r\n")
    if not separator:
        raise ValueError("the daemon's answer has no header end")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if len(status) < 2 or not status[1].isdigit():
        raise ValueError(f"the daemon's answer starts {lines[0][:100]!r}")
    if int(status[1]) not in ok:
        raise _refusal(int(status[1]), payload)
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines[1:])
    }
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return _unchunk(payload)
    if "content-length" in headers and len(payload) != int(headers["content-length"]):
        raise ValueError("the daemon's answer was cut short")
    return payload


def _refusal(status: int, payload: bytes) -> DaemonRefused:
    try:
        error = json.loads(payload)
    except ValueError:
        error = None
    if isinstance(error, dict):
        return DaemonRefused(status, str(error.get("code")), str(error.get("error"))[:300])
    return DaemonRefused(status, "unknown", repr(payload[:200]))


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    while True:
        size_line, separator, rest = data.partition(b"\r\n")
        if not separator:
            raise ValueError("a chunked answer was cut short")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        if len(rest) < size + 2:
            raise ValueError("a chunked answer was cut short")
        out.append(rest[:size])
        data = rest[size + 2 :]


def daemon_recall(
    home: str, project: tuple[str, str], message: str, exclude: list[str]
) -> dict[str, Any]:
    """Ask the running daemon about ``project`` (root, id), registering the project with it
    first when it does not host it yet; raises ``OSError``/``ValueError`` when it cannot."""
    host, port, token = daemon_address(home)
    root, project_id = project
    body = json.dumps({"message": message, "exclude": exclude}).encode("utf-8", "surrogatepass")
    path = f"/workspaces/{project_id}/recall"
    try:
        answer = post_json(host, port, path, token, body, DAEMON_TIMEOUT_S)
    except DaemonRefused as refused:
        if refused.code != "workspace_not_found":
            raise
        register = json.dumps({"path": root}).encode("utf-8", "surrogatepass")
        post_json(host, port, "/workspaces", token, register, DAEMON_TIMEOUT_S, ok=(200, 201))
        answer = post_json(host, port, path, token, body, DAEMON_TIMEOUT_S)
    result = json.loads(answer)
    if not isinstance(result, dict):
        raise ValueError("daemon answered with something other than an object")
    return result


def _cooldown_path(home: str) -> str:
    return os.path.join(home, "hooks", "daemon-unresponsive")


def cooling_down(home: str) -> bool:
    """True while a daemon that did not answer in time is being skipped."""
    try:
        since = os.stat(_cooldown_path(home)).st_mtime
    except OSError:
        return False
    return 0 <= time.time() - since < DAEMON_COOLDOWN_S


def start_cooldown(home: str) -> None:
    """Skip the daemon for :data:`DAEMON_COOLDOWN_S` (its time is the file's mtime);
    ``OSError`` when the mark cannot be written (the caller logs it)."""
    path = _cooldown_path(home)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write("the daemon did not answer in time; prompts use the library a while\n")


def hook_output(event: str, context: str) -> str:
    """The hook's stdout: ``hookSpecificOutput.additionalContext`` (nothing when empty)."""
    if not context.strip():
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
        ensure_ascii=False,
    )


def hook_fields(payload: Mapping[str, Any], text_key: str | None) -> tuple[str, str, str]:
    """``(text, session_id, cwd)`` of a hook input; ``ValueError`` when it is malformed."""
    if not isinstance(payload, dict):
        raise ValueError("the hook input is not a JSON object")
    text = payload.get(text_key, "") if text_key else ""
    if not isinstance(text, str):
        raise ValueError(f"{text_key} is not a string")
    session_id = payload.get("session_id")
    session = session_id if isinstance(session_id, str) else ""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd or not os.path.isabs(cwd):
        raise ValueError("cwd is missing or not an absolute path")
    if not os.path.isdir(cwd):
        raise ValueError(f"cwd {cwd} is not a folder")
    return text, session, cwd


def handle_prompt(
    payload: Mapping[str, Any],
    home: str,
    *,
    use_daemon: bool = True,
    log: Any = None,
) -> str:
    """UserPromptSubmit: the recalled block for the prompt, each note once per session.

    ``log(reason)`` hears why a running daemon could not answer (the library then does)."""
    prompt, session_id, start = hook_fields(payload, "prompt")
    state = HookState(home)
    already = state.attached(session_id) if session_id else []
    message = prompt[:MAX_PROMPT_CHARS]
    result: dict[str, Any] | None = None
    via = "daemon"
    project = find_project(start, home) if use_daemon and not cooling_down(home) else None
    if project is not None:  # the daemon hosts projects; the library serves any other folder
        try:
            result = daemon_recall(home, project, message, already)
        except FileNotFoundError:
            result = None  # no daemon runs for this home: the library answers
        except (OSError, ValueError) as exc:
            reason = f"the daemon did not answer, the library did: {exc}"
            if isinstance(exc, TimeoutError):
                try:
                    start_cooldown(home)
                except OSError as mark:
                    reason += f"; the cool-down could not be recorded ({mark}), so the next "
                    reason += "prompt asks the daemon again"
            if log is not None:
                log(reason)
            result = None
    if result is None:
        from oharness.bridges.library_recall import library_recall

        via = "library"
        result = library_recall(home, start, message, already)
    block = result.get("block")
    attached = result.get("attached")
    if not isinstance(block, str) or not block.strip():
        return ""
    new_keys = [
        f"{item['scope']}:{item['id']}"
        for item in (attached if isinstance(attached, list) else [])
        if isinstance(item, dict) and isinstance(item.get("id"), str)
    ]
    if session_id:
        state.save(session_id, [*already, *new_keys], via)
    return hook_output("UserPromptSubmit", block)
