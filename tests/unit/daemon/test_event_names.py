"""Every event type the daemon publishes has its SDK name in the one scheme, and both are in
the table of docs/daemon.md: a new event cannot be added without a name and a line there."""

from __future__ import annotations

import re
from pathlib import Path

from oharness.daemon.background.note_watch import NOTES_CHANGED
from oharness.sdk.client import EVENT_NAMES, normalise_event, parse_sse

ROOT = Path(__file__).resolve().parents[3]
DAEMON = ROOT / "src" / "oharness" / "daemon"
#: ``Event("<type>", …)`` with the type written out; the watcher's is a constant.
PUBLISHED = re.compile(r"""\bEvent\(\s*["']([a-z_]+)["']""")
SCHEME = re.compile(r"[a-z]+(\.[a-z]+){1,2}")


def _published_types() -> set[str]:
    found = {NOTES_CHANGED}
    for source in DAEMON.rglob("*.py"):
        found.update(PUBLISHED.findall(source.read_text("utf-8")))
    return found


def test_every_published_type_has_a_name_in_the_scheme() -> None:
    published = _published_types()
    assert {"memory_changed", "sync_status", "gap"} <= published  # the scan finds them
    assert published == set(EVENT_NAMES)
    for name in EVENT_NAMES.values():
        assert SCHEME.fullmatch(name), name
    assert EVENT_NAMES["memory_changed"] == "workspace.memory.changed"  # spec 10.3


def test_the_table_in_the_daemon_docs_names_each() -> None:
    text = (ROOT / "docs" / "daemon.md").read_text("utf-8")
    for wire, name in EVENT_NAMES.items():
        assert re.search(rf"^\| `{wire}` \| `{re.escape(name)}` \|", text, re.M), wire


def test_events_are_normalised_by_the_table_and_unknown_ones_pass() -> None:
    lines = [
        "event: sync_status",
        'data: {"type":"sync_status","data":{"scope":"user"},"workspace":null}',
        "",
        ": heartbeat",
        "event: later_kind",
        'data: {"type":"later_kind","data":{},"originatorClientId":"ui","workspace":"p1"}',
        "",
    ]
    first, second = parse_sse(iter(lines))
    assert first == {
        "type": "workspace.sync.changed",
        "data": {"scope": "user"},
        "originatorClientId": None,
        "workspace": None,
        "wireType": "sync_status",
    }
    assert (second["type"], second["wireType"], second["originatorClientId"]) == (
        "later_kind",
        "later_kind",
        "ui",
    )
    page = normalise_event("memory_changed", {"type": "memory_changed", "data": {"scope": "user"}})
    assert page["type"] == "workspace.memory.changed" and page["data"] == {"scope": "user"}
