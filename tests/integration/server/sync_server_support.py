"""Helpers shared by the sync-server tests: tokens, note files, clients, a live uvicorn server."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import jwt
import uvicorn
from starlette.applications import Starlette
from sync_support import serve_in_thread

from oharness.notes.format import Note, file_revision, parse_note, serialise_note
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.object_store import ObjectStore
from oharness.sync.protocol import Quotas

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"


class FakeClock:
    """Milliseconds that move only when told."""

    def __init__(self, start: int = 1_789_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance_days(self, days: float) -> None:
        self.now += int(days * 86_400_000)


class FakeMonotonic:
    """Seconds for the rate limiter."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def token_for(
    user: str,
    *,
    plan: str | None = None,
    teams: list[dict[str, str]] | None = None,
    secret: str = SECRET,
    expires_in: int = 3600,
    **claims: Any,
) -> str:
    """An HS256 token for ``user`` (no ``ent`` claim unless a plan or teams are given)."""
    payload: dict[str, Any] = {"sub": user, "exp": int(time.time()) + expires_in, **claims}
    if plan is not None or teams is not None:
        payload["ent"] = {"plan": plan or "free", "teams": teams or []}
    return jwt.encode(payload, secret, algorithm="HS256")


def auth(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


def note_text(note_id: str, body: str = "Body.\n", *, summary: str = "A note", **kw: Any) -> str:
    """A note file's text."""
    return serialise_note(Note(id=note_id, summary=summary, body=body, **kw))


def rev_of(text: str) -> str:
    """The revision id of a note file's text."""
    return file_revision(text.encode("utf-8"))


def project_scope(project_id: str = "git-abc") -> dict[str, str]:
    return {"kind": "project", "projectId": project_id}


def put(note_id: str, text: str, base_rev: str | None = None) -> dict[str, Any]:
    return {"op": "put", "id": note_id, "baseRev": base_rev, "content": text}


def delete(note_id: str, base_rev: str) -> dict[str, Any]:
    return {"op": "delete", "id": note_id, "baseRev": base_rev}


def commit_body(
    changes: list[dict[str, Any]],
    *,
    scope: dict[str, str] | None = None,
    atomic: bool = False,
    base_version: int | None = None,
    protocol: int = 2,
) -> dict[str, Any]:
    return {
        "protocol": protocol,
        "scope": scope or project_scope(),
        "baseVersion": base_version,
        "atomic": atomic,
        "changes": changes,
    }


def snapshot_body(
    *,
    scope: dict[str, str] | None = None,
    since: int | None = None,
    have: list[str] | None = None,
    want: list[str] | None = None,
    protocol: int = 2,
) -> dict[str, Any]:
    body: dict[str, Any] = {"protocol": protocol, "scope": scope or project_scope()}
    if since is not None:
        body["since"] = since
    if have is not None:
        body["have"] = have
    if want is not None:
        body["want"] = want
    return body


def make_settings(**overrides: Any) -> ServerSettings:
    """Test settings: HS256 with :data:`SECRET`, admin key set, rate limit generous."""
    values: dict[str, Any] = {
        "jwt": JwtSettings(secret=SECRET),
        "quotas": Quotas(),
        "rate_per_minute": 100_000,
        "admin_key": ADMIN_KEY,
    }
    values.update(overrides)
    return ServerSettings(**values)


@dataclass
class LiveServer:
    """A uvicorn server on loopback in a background thread."""

    app: Starlette
    host: str = "127.0.0.1"
    port: int = 0
    _server: uvicorn.Server | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> LiveServer:
        self._server, self._thread, self.port = serve_in_thread(self.app, port=self.port)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    def client(self, **kwargs: Any) -> httpx2.Client:
        return httpx2.Client(base_url=self.url, timeout=60, **kwargs)


@contextlib.contextmanager
def live_server(
    store: ObjectStore, settings: ServerSettings, **app_kwargs: Any
) -> Iterator[LiveServer]:
    """Run the app over ``store`` on a free loopback port for the duration of the block."""
    server = LiveServer(create_app(store, settings, **app_kwargs)).start()
    try:
        yield server
    finally:
        server.stop()


class Api:
    """Protocol calls over any httpx2 client (Starlette's TestClient or a real one)."""

    def __init__(self, client: httpx2.Client, token: str) -> None:
        self.client = client
        self.token = token

    def as_user(self, token: str) -> Api:
        return Api(self.client, token)

    def identity(self) -> httpx2.Response:
        return self.client.get("/v1/memory/identity", headers=auth(self.token))

    def snapshot(self, **kwargs: Any) -> httpx2.Response:
        return self.client.post(
            "/v1/memory/snapshot", json=snapshot_body(**kwargs), headers=auth(self.token)
        )

    def commit(self, changes: list[dict[str, Any]], **kwargs: Any) -> httpx2.Response:
        return self.client.post(
            "/v1/memory/commit", json=commit_body(changes, **kwargs), headers=auth(self.token)
        )

    def ok_commit(self, changes: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        response = self.commit(changes, **kwargs)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def ok_snapshot(self, **kwargs: Any) -> dict[str, Any]:
        response = self.snapshot(**kwargs)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data


#: ``make_api(on_store=..., user=..., **settings)`` (the unit tests' fixture) -> an Api.
MakeApi = Callable[..., Api]


#: the concurrency tests' writers: each creates a note and increments one shared counter note
CLIENTS = 50
COUNTER = "counter-1"


class Client:
    """One device: its own HTTP connection, retrying 503s and conflicts."""

    def __init__(self, url: str, index: int) -> None:
        self.http = httpx2.Client(base_url=url, timeout=120)
        self.api = Api(self.http, token_for("alice"))
        self.index = index
        self.versions: list[int] = []

    def commit(self, changes: list[dict[str, Any]]) -> dict[str, Any]:
        for _ in range(200):
            response = self.api.commit(changes)
            if response.status_code == 503:
                continue
            assert response.status_code == 200, response.text
            data: dict[str, Any] = response.json()
            return data
        raise AssertionError("the server stayed unavailable")

    def create_own_note(self) -> None:
        note_id = f"client-{self.index}"
        data = self.commit([put(note_id, note_text(note_id, f"from client {self.index}\n"))])
        assert data["applied"] and not data["rejected"], data
        self.versions.append(data["version"])

    def increment_counter(self) -> None:
        base_rev: str | None = None
        text: str | None = None
        seen_version = 0
        for _ in range(10 * CLIENTS):
            if base_rev is not None and text is None:
                base_rev, text = self.fetch_counter(base_rev, seen_version)
            value = 0 if text is None else counter_value(text)
            # Who wrote it is part of the content: two clients writing the same bytes would be
            # one revision, and the protocol rightly treats the second as a retry of the first.
            new_text = note_text(COUNTER, f"{value + 1}\nby client {self.index}\n")
            data = self.commit([put(COUNTER, new_text, base_rev)])
            if data["applied"]:
                assert data["applied"][0]["rev"] == rev_of(new_text)
                self.versions.append(data["version"])
                return
            rejected = data["rejected"][0]
            assert rejected["reason"] == "conflict", rejected
            base_rev, text, seen_version = rejected["currentRev"], None, data["version"]
        raise AssertionError("never got the counter")

    def fetch_counter(self, rev: str, version: int) -> tuple[str, str]:
        """The counter's body: the wanted revision, or a newer one the delta lists."""
        data = self.api.ok_snapshot(since=version, want=[rev])
        if rev in data["objects"]:
            return rev, str(data["objects"][rev])
        listed = {note["id"]: note["rev"] for note in data["notes"]}
        newer = listed[COUNTER]  # superseded meanwhile: the delta carries the new one
        return newer, str(data["objects"][newer])

    def run(self) -> None:
        self.create_own_note()
        self.increment_counter()


def counter_value(text: str) -> int:
    return int(parse_note(text).body.split("\n", 1)[0])
