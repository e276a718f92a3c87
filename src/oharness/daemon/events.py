"""The daemon's event stream (spec 10.2): publishers never wait for subscribers.

Each subscriber has a bounded queue; when it is full the oldest event is dropped and the
subscriber's next read starts with a ``gap`` event saying how many were lost, so a slow
consumer (or a stalled browser tab) never blocks a task, a sync pass or another subscriber.
Publishing is thread-safe (the sync loop publishes from its own thread). Events carry ids,
scopes and counts only, never note text.

On the wire (Server-Sent Events): ``event: <type>`` and ``data: {"type", "data",
"originatorClientId"?, "workspace"}``; a comment line every ``heartbeat`` seconds keeps
proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

QUEUE_LIMIT: Final = 256
HEARTBEAT_SECONDS: Final = 15.0


@dataclass(frozen=True)
class Event:
    type: str
    data: Mapping[str, Any]
    workspace: str | None = None
    originator_client_id: str | None = None

    def envelope(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.type, "data": dict(self.data)}
        if self.originator_client_id is not None:
            body["originatorClientId"] = self.originator_client_id
        body["workspace"] = self.workspace
        return body

    def sse(self) -> str:
        data = json.dumps(self.envelope(), ensure_ascii=False, separators=(",", ":"))
        return f"event: {self.type}\ndata: {data}\n\n"


@dataclass
class Subscription:
    """One consumer's bounded queue."""

    limit: int
    loop: asyncio.AbstractEventLoop
    workspace: str | None = None
    events: deque[Event] = field(default_factory=deque)
    dropped: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, event: Event) -> None:
        """Called with the bus lock held."""
        if self.workspace is not None and event.workspace not in (None, self.workspace):
            return
        if len(self.events) >= self.limit:
            self.events.popleft()
            self.dropped += 1
        self.events.append(event)
        self.loop.call_soon_threadsafe(self.ready.set)


class EventBus:
    """Fan-out of daemon events to every subscriber."""

    def __init__(self, *, queue_limit: int = QUEUE_LIMIT) -> None:
        self.queue_limit = queue_limit
        self._subscribers: list[Subscription] = []
        self._lock = threading.Lock()
        self.closed = False

    def publish(self, event: Event) -> None:
        """Queue ``event`` for every subscriber; never blocks on a consumer."""
        with self._lock:
            for subscription in self._subscribers:
                try:
                    subscription.offer(event)
                except RuntimeError:  # its loop is closed: the subscriber is gone
                    continue

    def subscribe(self, workspace: str | None = None) -> Subscription:
        """A new subscription (call from the event loop that will read it)."""
        subscription = Subscription(self.queue_limit, asyncio.get_running_loop(), workspace)
        with self._lock:
            self._subscribers.append(subscription)
        return subscription

    def offer(self, subscription: Subscription, event: Event) -> None:
        """Queue ``event`` for one subscriber only (what it missed before it subscribed)."""
        with self._lock:
            subscription.offer(event)

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    def close(self) -> None:
        """End every stream (shutdown)."""
        with self._lock:
            self.closed = True
            subscribers = list(self._subscribers)
        for subscription in subscribers:
            subscription.loop.call_soon_threadsafe(subscription.ready.set)

    def _take(self, subscription: Subscription) -> list[Event]:
        with self._lock:
            taken: list[Event] = []
            if subscription.dropped:
                taken.append(Event("gap", {"dropped": subscription.dropped}))
                subscription.dropped = 0
            taken.extend(subscription.events)
            subscription.events.clear()
            subscription.ready.clear()
            return taken

    async def stream(
        self, subscription: Subscription, *, heartbeat: float = HEARTBEAT_SECONDS
    ) -> AsyncGenerator[str, None]:
        """SSE text for one subscriber until the bus closes or the consumer goes away."""
        try:
            yield ": connected\n\n"
            while not self.closed:
                try:
                    await asyncio.wait_for(subscription.ready.wait(), heartbeat)
                except TimeoutError:
                    yield ": heartbeat\n\n"
                    continue
                for event in self._take(subscription):
                    yield event.sse()
        finally:
            self.unsubscribe(subscription)
