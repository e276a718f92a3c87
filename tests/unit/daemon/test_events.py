"""The event bus: publishers never wait, slow consumers lose the oldest events with a gap."""

from __future__ import annotations

import asyncio
import json
import threading
import time

from oharness.daemon.events import Event, EventBus


def _parse(chunks: list[str]) -> list[dict[str, object]]:
    found = []
    for chunk in chunks:
        for block in chunk.split("\n\n"):
            lines = block.splitlines()
            data = [line[6:] for line in lines if line.startswith("data: ")]
            kind = [line[7:] for line in lines if line.startswith("event: ")]
            if data:
                found.append({"event": kind[0], **json.loads(data[0])})
    return found


def test_a_slow_consumer_never_blocks_publishers_and_sees_a_gap() -> None:
    async def run() -> tuple[float, list[dict[str, object]], list[dict[str, object]]]:
        bus = EventBus(queue_limit=10)
        slow = bus.subscribe()
        fast = bus.subscribe()
        started = time.perf_counter()
        for index in range(1000):  # nobody reads while these are published
            bus.publish(Event("memory_changed", {"n": index}, workspace="w"))
        elapsed = time.perf_counter() - started
        chunks: list[str] = []
        stream = bus.stream(slow, heartbeat=0.05)
        chunks.append(await anext(stream))  # connected
        chunks.append(await anext(stream))
        for _ in range(10):
            chunks.append(await anext(stream))
        await stream.aclose()
        fast_chunks = []
        fast_stream = bus.stream(fast, heartbeat=0.05)
        for _ in range(12):
            fast_chunks.append(await anext(fast_stream))
        await fast_stream.aclose()
        return elapsed, _parse(chunks), _parse(fast_chunks)

    elapsed, events, other = asyncio.run(run())
    assert elapsed < 0.5
    assert events[0]["event"] == "gap" and events[0]["data"] == {"dropped": 990}
    assert [event["data"]["n"] for event in events[1:]] == list(range(990, 1000))  # type: ignore[index]
    assert other[0]["event"] == "gap"


def test_heartbeats_and_envelope_shape() -> None:
    async def run() -> list[str]:
        bus = EventBus()
        subscription = bus.subscribe()
        stream = bus.stream(subscription, heartbeat=0.01)
        chunks = [await anext(stream), await anext(stream)]
        bus.publish(Event("recalled", {"count": 2}, workspace="p1", originator_client_id="c"))
        chunks.append(await anext(stream))
        await stream.aclose()
        assert bus.subscribers == 0
        return chunks

    chunks = asyncio.run(run())
    assert chunks[1] == ": heartbeat\n\n"
    assert chunks[2].startswith("event: recalled\ndata: ")
    body = json.loads(chunks[2].split("data: ", 1)[1])
    assert body == {
        "type": "recalled",
        "data": {"count": 2},
        "originatorClientId": "c",
        "workspace": "p1",
    }


def test_publishing_from_other_threads() -> None:
    def publish_many(bus: EventBus) -> None:
        for _ in range(200):
            bus.publish(Event("sync_status", {}))

    async def run() -> int:
        bus = EventBus(queue_limit=10_000)
        subscription = bus.subscribe()
        threads = [threading.Thread(target=publish_many, args=(bus,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stream = bus.stream(subscription, heartbeat=1)
        await anext(stream)
        count = 0
        while count < 800:
            text = await asyncio.wait_for(anext(stream), 5)
            count += text.count("event: sync_status")
        await stream.aclose()
        return count

    assert asyncio.run(run()) == 800
