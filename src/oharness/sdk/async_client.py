"""``AsyncDaemonClient``: the async twin of :class:`~oharness.sdk.client.DaemonClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, cast

import httpx2

from oharness.sdk.client import (
    TERMINAL,
    DaemonError,
    SseParser,
    TaskKind,
    _address,
    _Requests,
    raise_for,
    task_kind,
)
from oharness.sdk.shapes import (
    BackupListing,
    ConflictListing,
    Note,
    NoteListing,
    Restored,
    SearchResults,
)


class AsyncDaemonClient:
    """The daemon's API for asyncio code (same methods, awaited)."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        home: Path | None = None,
        project_id: str | None = None,
        client_id: str | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        address = _address(url, token, home)
        self.url = address.url
        self.client_id = client_id
        self._paths = _Requests(project_id)
        self._sleep = sleep
        self._http = httpx2.AsyncClient(
            base_url=address.url,
            headers={"Authorization": f"Bearer {address.token}"},
            transport=transport,
            timeout=timeout,
        )

    async def __aenter__(self) -> AsyncDaemonClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx2.HTTPError as exc:
            raise DaemonError(0, "unreachable", f"the daemon at {self.url} is unreachable") from exc
        return raise_for(response)

    def _client(self, client_id: str | None) -> dict[str, str]:
        return self._paths.headers(client_id or self.client_id)

    async def capabilities(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._call("GET", "/capabilities")
        return result

    async def remember_workspace_memory(
        self,
        content: str,
        *,
        context_mode: str = "workspace",
        scope: str | None = None,
        client_id: str | None = None,
    ) -> dict[str, Any]:
        body = self._paths.remember_body(content, context_mode, scope)
        result: dict[str, Any] = await self._call(
            "POST", self._paths.post("remember"), json=body, headers=self._client(client_id)
        )
        return result

    async def forget_workspace_memory(
        self, query: str, *, scope: str | None = None, client_id: str | None = None
    ) -> dict[str, Any]:
        body = self._paths.forget_body(query, scope)
        result: dict[str, Any] = await self._call(
            "POST", self._paths.post("forget"), json=body, headers=self._client(client_id)
        )
        return result

    async def dream_workspace_memory(self, *, client_id: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "POST", self._paths.post("dream"), json={}, headers=self._client(client_id)
        )
        return result

    async def _get_task(
        self, kind: TaskKind, task_id: str, client_id: str | None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._call(
            "GET", self._paths.poll(kind, task_id), headers=self._client(client_id)
        )
        return result

    async def get_workspace_memory_remember_task(
        self, task_id: str, *, client_id: str | None = None
    ) -> dict[str, Any]:
        return await self._get_task("remember", task_id, client_id)

    async def get_workspace_memory_forget_task(
        self, task_id: str, *, client_id: str | None = None
    ) -> dict[str, Any]:
        return await self._get_task("forget", task_id, client_id)

    async def get_workspace_memory_dream_task(
        self, task_id: str, *, client_id: str | None = None
    ) -> dict[str, Any]:
        return await self._get_task("dream", task_id, client_id)

    async def wait(
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
            snapshot = await self._get_task(kind, task_id, client_id)
            if snapshot.get("status") in TERMINAL:
                return snapshot
            if waited >= timeout:
                raise DaemonError(0, "wait_timeout", f"task {task_id} did not finish in time")
            await self._sleep(delay)
            waited += delay
            delay = min(delay * 2, max_delay)

    async def sync_status(self) -> dict[str, Any]:
        """Cloud sync status of this workspace's scopes (spec 07.7)."""
        result: dict[str, Any] = await self._call("GET", f"{self._paths.sync_prefix}/sync/status")
        return result

    async def sync_now(self) -> dict[str, Any]:
        """Sync this workspace's scopes now (never past the off switch or a 429 deadline)."""
        result: dict[str, Any] = await self._call("POST", f"{self._paths.sync_prefix}/sync/now")
        return result

    async def set_sync_enabled(self, enabled: bool) -> dict[str, Any]:
        """Switch cloud sync on or off for both scopes (off aborts a pass in flight)."""
        path = "/sync/on" if enabled else "/sync/off"
        result: dict[str, Any] = await self._call("POST", path)
        return result

    # ---- showing and managing memory (see DaemonClient) ----------------------------------

    async def list_notes(
        self,
        *,
        scope: str | None = None,
        type: str | None = None,
        tag: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> NoteListing:
        """One page of notes, newest first, kept by scope, type and tag."""
        params = self._paths.params(scope=scope, type=type, tag=tag, offset=offset, limit=limit)
        path = self._paths.memory("notes")
        return cast(NoteListing, await self._call("GET", path, params=params))

    async def search_notes(
        self,
        query: str,
        *,
        scope: str | None = None,
        type: str | None = None,
        tag: str | None = None,
        limit: int = 10,
    ) -> SearchResults:
        """Notes matching ``query``, best first, with snippets."""
        params = self._paths.params(q=query, scope=scope, type=type, tag=tag, limit=limit)
        path = self._paths.memory("search")
        return cast(SearchResults, await self._call("GET", path, params=params))

    async def get_note(self, note_id: str, *, scope: str | None = None) -> Note:
        """One note with its links and the notes linking to it."""
        params = self._paths.params(scope=scope)
        return cast(Note, await self._call("GET", self._paths.note(note_id), params=params))

    async def list_conflicts(self) -> ConflictListing:
        """Open sync conflicts with both sides."""
        return cast(ConflictListing, await self._call("GET", self._paths.conflicts()))

    async def resolve_conflict(
        self,
        note_id: str,
        *,
        keep: str | None = None,
        text: str | None = None,
        scope: str | None = None,
    ) -> dict[str, Any]:
        """Resolve a conflict by ``keep`` (local, cloud, both) or the merged ``text``."""
        body = self._paths.resolve_body(keep, text, scope)
        result: dict[str, Any] = await self._call("POST", self._paths.resolve(note_id), json=body)
        return result

    async def list_backups(self, *, limit: int = 50) -> BackupListing:
        """This workspace's newest backups."""
        params = self._paths.params(limit=limit)
        path = self._paths.memory("backups")
        return cast(BackupListing, await self._call("GET", path, params=params))

    async def restore_backup(self, backup_id: str, *, confirmed: bool = False) -> Restored:
        """Put a backup back; replacing a newer version needs ``confirmed``."""
        body = {"confirmed": confirmed}
        return cast(Restored, await self._call("POST", self._paths.restore(backup_id), json=body))

    async def recall(self, message: str, exclude: list[str] | None = None) -> dict[str, Any]:
        body = {"message": message, "exclude": exclude or []}
        result: dict[str, Any] = await self._call("POST", f"{self._paths.prefix}/recall", json=body)
        return result

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Normalised daemon events until the stream ends."""
        try:
            async with self._http.stream(
                "GET", "/events", timeout=httpx2.Timeout(None)
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise_for(response)
                parser = SseParser()
                async for line in response.aiter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        yield event
        except httpx2.HTTPError as exc:
            raise DaemonError(0, "unreachable", f"the event stream of {self.url} ended") from exc
