"""``DaemonClient`` and ``AsyncDaemonClient``: the daemon's HTTP API from Python (spec 10.3).

Both find the daemon themselves when not told: the URL from ``$OHARNESS_HOME/daemon.json``
(written by ``oharness serve``) and the token from ``$OHARNESS_HOME/daemon-token``. The home
is passed in (``home=``) or, for convenience at the edge, read from ``OHARNESS_HOME`` by
:func:`find_daemon`. Every non-2xx response raises :class:`DaemonError` with the status, the
daemon's stable code and its message. ``wait(task)`` polls to a terminal state with backoff;
``events()`` yields normalised events, named by :data:`EVENT_NAMES` (``memory_changed``
becomes ``workspace.memory.changed``).
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, cast
from urllib.parse import quote

import httpx2

from oharness.errors import OHarnessError
from oharness.sdk.connection import JsonConnection
from oharness.sdk.shapes import (
    BackupListing,
    ConflictListing,
    Note,
    NoteListing,
    Restored,
    SearchResults,
)

TaskKind = Literal["remember", "forget", "dream"]
TERMINAL: Final = frozenset({"completed", "failed"})
CLIENT_ID_HEADER: Final = "X-OHarness-Client-Id"


class DaemonError(OHarnessError):
    """The daemon refused a request or could not be reached (``status`` 0 then)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})" if status else message)
        self.status = status
        self.code = code
        self.reason = message


@dataclass(frozen=True)
class DaemonAddress:
    url: str
    token: str


def find_daemon(home: Path | None = None) -> DaemonAddress:
    """The running daemon's URL and token, from ``home`` (default ``$OHARNESS_HOME``)."""
    if home is None:
        env = os.environ.get("OHARNESS_HOME")
        home = Path(env).expanduser() if env else Path.home() / ".oharness"
    try:
        info = json.loads((home / "daemon.json").read_text("utf-8"))
        token = (home / "daemon-token").read_text("utf-8").strip()
    except (OSError, ValueError) as exc:
        raise DaemonError(
            0, "daemon_not_found", f"no daemon runs for {home}: start one with 'oharness serve'"
        ) from exc
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not token:
        raise DaemonError(0, "daemon_not_found", f"{home / 'daemon.json'} names no daemon URL")
    return DaemonAddress(url, token)


#: The daemon's wire event types and the names the SDK gives them: one scheme,
#: ``<where>.<what>.<what happened>`` (spec 10.3's ``workspace.memory.changed`` is the model).
#: The table in docs/daemon.md ("Events") says what each carries.
EVENT_NAMES: Final[Mapping[str, str]] = {
    "memory_changed": "workspace.memory.changed",
    "notes_changed": "workspace.notes.changed",
    "recalled": "workspace.memory.recalled",
    "memory_extracted": "workspace.memory.extracted",
    "sync_status": "workspace.sync.changed",
    "conflicts": "workspace.conflicts.found",
    "gap": "events.dropped",
}


def normalise_event(kind: str, envelope: Mapping[str, Any]) -> dict[str, Any]:
    """One SSE event as the SDK yields it: ``{"type", "data", "originatorClientId",
    "workspace", "wireType"}``, ``type`` named by :data:`EVENT_NAMES` (a type the table does
    not know is passed on as sent)."""
    data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
    wire = str(envelope.get("type") or kind)
    return {
        "type": EVENT_NAMES.get(wire, wire),
        "data": data,
        "originatorClientId": envelope.get("originatorClientId"),
        "workspace": envelope.get("workspace"),
        "wireType": wire,
    }


class SseParser:
    """Turns SSE lines into normalised events, one line at a time (comments skipped)."""

    def __init__(self) -> None:
        self.kind = "message"
        self.data: list[str] = []

    def feed(self, line: str) -> dict[str, Any] | None:
        """The event a blank line completes, else None."""
        if not line:
            kind, data = self.kind, self.data
            self.kind, self.data = "message", []
            if not data:
                return None
            try:
                envelope = json.loads("\n".join(data))
            except ValueError:
                return None
            return normalise_event(kind, envelope) if isinstance(envelope, dict) else None
        if line.startswith("event:"):
            self.kind = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].removeprefix(" "))
        return None


def parse_sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Normalised events from SSE lines."""
    parser = SseParser()
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            yield event


def raise_for(response: httpx2.Response) -> Any:
    """The JSON of a 2xx response, else :class:`DaemonError`."""
    if 200 <= response.status_code < 300:
        return response.json()
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        raise DaemonError(
            response.status_code, str(body.get("code", "error")), str(body.get("error", ""))
        )
    raise DaemonError(response.status_code, "error", response.text[:200])


def json_answer(status: int, data: bytes) -> Any:
    """:func:`raise_for` over a status and a body."""
    return raise_for(httpx2.Response(status, content=data))


def _recall_connection(address: DaemonAddress, timeout: float) -> JsonConnection | None:
    try:
        return JsonConnection(address.url, {"Authorization": f"Bearer {address.token}"}, timeout)
    except OHarnessError:  # not plain http: the general client serves it
        return None


def task_kind(task: Mapping[str, Any] | str) -> TaskKind:
    task_id = task if isinstance(task, str) else str(task.get("taskId", ""))
    kind = task_id.split("-", 1)[0]
    if kind not in ("remember", "forget", "dream"):
        raise DaemonError(0, "invalid_task", f"{task_id!r} is not a memory task id")
    return kind  # type: ignore[return-value]


class _Requests:
    """Paths and bodies shared by the sync and async clients."""

    def __init__(self, project_id: str | None) -> None:
        self.prefix = f"/workspaces/{project_id}" if project_id else "/workspace"
        self.sync_prefix = f"/workspaces/{project_id}" if project_id else ""

    def headers(self, client_id: str | None) -> dict[str, str]:
        return {CLIENT_ID_HEADER: client_id} if client_id else {}

    def post(self, kind: TaskKind) -> str:
        return f"{self.prefix}/memory/{kind}"

    def poll(self, kind: TaskKind, task_id: str) -> str:
        return f"{self.prefix}/memory/{kind}/{task_id}"

    @staticmethod
    def remember_body(content: str, context_mode: str, scope: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"content": content, "contextMode": context_mode}
        if scope is not None:
            body["scope"] = scope
        return body

    def memory(self, tail: str) -> str:
        """``.../memory/<tail>`` of this workspace."""
        return f"{self.prefix}/memory/{tail}"

    def note(self, note_id: str) -> str:
        return self.memory(f"notes/{quote(note_id, safe='')}")

    def restore(self, backup_id: str) -> str:
        return self.memory(f"backups/{quote(backup_id, safe='')}/restore")

    def conflicts(self) -> str:
        return f"{self.sync_prefix}/sync/conflicts"

    def resolve(self, note_id: str) -> str:
        return f"{self.sync_prefix}/sync/conflicts/{quote(note_id, safe='')}/resolve"

    @staticmethod
    def params(**values: str | int | None) -> dict[str, str | int]:
        """Query parameters, those left as None left out."""
        return {name: value for name, value in values.items() if value is not None}

    @staticmethod
    def resolve_body(keep: str | None, text: str | None, scope: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if keep is not None:
            body["keep"] = keep
        if text is not None:
            body["text"] = text
        if scope is not None:
            body["scope"] = scope
        return body

    @staticmethod
    def forget_body(query: str, scope: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query}
        if scope is not None:
            body["scope"] = scope
        return body


def _address(url: str | None, token: str | None, home: Path | None) -> DaemonAddress:
    if url is not None and token is not None:
        return DaemonAddress(url, token)
    found = find_daemon(home)
    return DaemonAddress(url or found.url, token or found.token)


class DaemonClient:
    """The daemon's API, synchronously."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        home: Path | None = None,
        project_id: str | None = None,
        client_id: str | None = None,
        transport: httpx2.BaseTransport | None = None,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        address = _address(url, token, home)
        self.url = address.url
        self.client_id = client_id
        self._paths = _Requests(project_id)
        self._sleep = sleep
        self._http = httpx2.Client(
            base_url=address.url,
            headers={"Authorization": f"Bearer {address.token}"},
            transport=transport,
            timeout=timeout,
        )
        #: The per-prompt recall's own lean connection (the general client when one is injected).
        self._recall = None if transport is not None else _recall_connection(address, timeout)

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        if self._recall is not None:
            self._recall.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx2.HTTPError as exc:
            raise DaemonError(0, "unreachable", f"the daemon at {self.url} is unreachable") from exc
        return raise_for(response)

    def _client(self, client_id: str | None) -> dict[str, str]:
        return self._paths.headers(client_id or self.client_id)

    def capabilities(self) -> dict[str, Any]:
        """What the daemon offers (``{"capabilities": {...}}``)."""
        result: dict[str, Any] = self._call("GET", "/capabilities")
        return result

    def remember_workspace_memory(
        self,
        content: str,
        *,
        context_mode: str = "workspace",
        scope: str | None = None,
        client_id: str | None = None,
    ) -> dict[str, Any]:
        body = self._paths.remember_body(content, context_mode, scope)
        result: dict[str, Any] = self._call(
            "POST", self._paths.post("remember"), json=body, headers=self._client(client_id)
        )
        return result

    def forget_workspace_memory(
        self, query: str, *, scope: str | None = None, client_id: str | None = None
    ) -> dict[str, Any]:
        body = self._paths.forget_body(query, scope)
        result: dict[str, Any] = self._call(
            "POST", self._paths.post("forget"), json=body, headers=self._client(client_id)
        )
        return result

    def dream_workspace_memory(self, *, client_id: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "POST", self._paths.post("dream"), json={}, headers=self._client(client_id)
        )
        return result

    def _get_task(self, kind: TaskKind, task_id: str, client_id: str | None) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "GET", self._paths.poll(kind, task_id), headers=self._client(client_id)
        )
        return result

    def get_workspace_memory_remember_task(
        self, task_id: str, *, client_id: str | None = None
    ) -> dict[str, Any]:
        return self._get_task("remember", task_id, client_id)

    def get_workspace_memory_forget_task(
        self, task_id: str, *, client_id: str | None = None
    ) -> dict[str, Any]:
        return self._get_task("forget", task_id, client_id)

    def get_workspace_memory_dream_task(
        self, task_id: str, *, client_id: str | None = None
    ) -> dict[str, Any]:
        return self._get_task("dream", task_id, client_id)

    def wait(
        self,
        task: Mapping[str, Any] | str,
        *,
        timeout: float = 330.0,
        client_id: str | None = None,
        first_delay: float = 0.05,
        max_delay: float = 2.0,
    ) -> dict[str, Any]:
        """Poll until the task is completed or failed (delays doubling up to ``max_delay``)."""
        kind = task_kind(task)
        task_id = task if isinstance(task, str) else str(task["taskId"])
        delay, waited = first_delay, 0.0
        while True:
            snapshot = self._get_task(kind, task_id, client_id)
            if snapshot.get("status") in TERMINAL:
                return snapshot
            if waited >= timeout:
                raise DaemonError(0, "wait_timeout", f"task {task_id} did not finish in time")
            self._sleep(delay)
            waited += delay
            delay = min(delay * 2, max_delay)

    def sync_status(self) -> dict[str, Any]:
        """Cloud sync status of this workspace's scopes (spec 07.7)."""
        result: dict[str, Any] = self._call("GET", f"{self._paths.sync_prefix}/sync/status")
        return result

    def sync_now(self) -> dict[str, Any]:
        """Sync this workspace's scopes now (never past the off switch or a 429 deadline)."""
        result: dict[str, Any] = self._call("POST", f"{self._paths.sync_prefix}/sync/now")
        return result

    def set_sync_enabled(self, enabled: bool) -> dict[str, Any]:
        """Switch cloud sync on or off for both scopes (off aborts a pass in flight)."""
        path = "/sync/on" if enabled else "/sync/off"
        result: dict[str, Any] = self._call("POST", path)
        return result

    # ---- showing and managing memory ----------------------------------------------------

    def list_notes(
        self,
        *,
        scope: str | None = None,
        type: str | None = None,
        tag: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> NoteListing:
        """One page of notes, newest first, kept by scope, type (``"none"``: untyped) and tag
        (``oharness memory list``); ``nextOffset`` asks for the next page."""
        params = self._paths.params(scope=scope, type=type, tag=tag, offset=offset, limit=limit)
        return cast(NoteListing, self._call("GET", self._paths.memory("notes"), params=params))

    def search_notes(
        self,
        query: str,
        *,
        scope: str | None = None,
        type: str | None = None,
        tag: str | None = None,
        limit: int = 10,
    ) -> SearchResults:
        """Notes matching ``query``, best first, with snippets (``oharness memory search``)."""
        params = self._paths.params(q=query, scope=scope, type=type, tag=tag, limit=limit)
        return cast(SearchResults, self._call("GET", self._paths.memory("search"), params=params))

    def get_note(self, note_id: str, *, scope: str | None = None) -> Note:
        """One note with its links and the notes linking to it (``oharness memory show``);
        ``scope`` when the id is in both scopes."""
        params = self._paths.params(scope=scope)
        return cast(Note, self._call("GET", self._paths.note(note_id), params=params))

    def list_conflicts(self) -> ConflictListing:
        """Open sync conflicts with both sides (``oharness sync conflicts``)."""
        return cast(ConflictListing, self._call("GET", self._paths.conflicts()))

    def resolve_conflict(
        self,
        note_id: str,
        *,
        keep: str | None = None,
        text: str | None = None,
        scope: str | None = None,
    ) -> dict[str, Any]:
        """Resolve a conflict: ``keep`` ``"local"``, ``"cloud"`` or ``"both"``, or the note's
        merged ``text`` (``oharness sync resolve``); ``{"id", "keep", "newId", "backups"}``."""
        body = self._paths.resolve_body(keep, text, scope)
        result: dict[str, Any] = self._call("POST", self._paths.resolve(note_id), json=body)
        return result

    def list_backups(self, *, limit: int = 50) -> BackupListing:
        """This workspace's newest backups, each with when, why and what restoring it would
        replace (the Memory page's Backups)."""
        params = self._paths.params(limit=limit)
        return cast(BackupListing, self._call("GET", self._paths.memory("backups"), params=params))

    def restore_backup(self, backup_id: str, *, confirmed: bool = False) -> Restored:
        """Put a backup back (the note there now is backed up first). Replacing a newer
        version is refused (409 ``replaces_newer``) unless ``confirmed``."""
        body = {"confirmed": confirmed}
        return cast(Restored, self._call("POST", self._paths.restore(backup_id), json=body))

    def recall(self, message: str, exclude: list[str] | None = None) -> dict[str, Any]:
        """The ``<recalled-memory>`` block for a message (``{"block", "attached", ...}``)."""
        body = {"message": message, "exclude": exclude or []}
        path = f"{self._paths.prefix}/recall"
        if self._recall is None:
            result: dict[str, Any] = self._call("POST", path, json=body)
            return result
        try:
            status, data = self._recall.post(path, json.dumps(body).encode("utf-8"))
        except (OSError, http.client.HTTPException) as exc:
            raise DaemonError(0, "unreachable", f"the daemon at {self.url} is unreachable") from exc
        result = json_answer(status, data)
        return result

    def events(self) -> Iterator[dict[str, Any]]:
        """Normalised daemon events until the stream ends (or the caller stops iterating)."""
        try:
            with self._http.stream("GET", "/events", timeout=httpx2.Timeout(None)) as response:
                if response.status_code != 200:
                    response.read()
                    raise_for(response)
                yield from parse_sse(response.iter_lines())
        except httpx2.HTTPError as exc:
            raise DaemonError(0, "unreachable", f"the event stream of {self.url} ended") from exc
