"""Account and team erasure (spec 06.7): the marker first, then everything under the prefixes.

Once a marker exists, every request for that account is refused with ``account_erased`` (even
with a still-valid token), and an erased team no longer makes its members' plan paid. Erasing
again is harmless: the marker keeps its first time and deleting absent keys is a no-op.
"""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor

from oharness.errors import PreconditionFailed
from oharness.server.auth import Principal
from oharness.storage.object_store import ObjectStore
from oharness.sync.protocol import (
    team_erase_marker_key,
    team_feed_prefix,
    user_erase_marker_key,
    user_feed_prefix,
    user_key_segment,
    user_prefix,
)


def read_erase_state(store: ObjectStore, principal: Principal) -> tuple[bool, frozenset[str]]:
    """Whether the caller's account is erased, and which of its teams are (key segments)."""
    if store.get(user_erase_marker_key(principal.segment)) is not None:
        return True, frozenset()
    erased = set()
    for team in principal.teams:
        segment = user_key_segment(team.id)
        if store.get(team_erase_marker_key(segment)) is not None:
            erased.add(segment)
    return False, frozenset(erased)


def _write_marker(store: ObjectStore, key: str, now: int) -> None:
    data = json.dumps({"erasedAt": now}).encode("utf-8")
    with contextlib.suppress(PreconditionFailed):  # already erased: keep the first marker
        store.put(key, data, if_none_match=True)


def _delete_prefixes(store: ObjectStore, prefixes: list[str], concurrency: int) -> int:
    keys = [key for prefix in prefixes for key in store.list(prefix)]
    if len(keys) < 4:
        for key in keys:
            store.delete(key)
        return len(keys)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        # list() drains the iterator so a failed delete raises here.
        list(pool.map(store.delete, keys))
    return len(keys)


def erase_user(store: ObjectStore, user_id: str, *, now: int, concurrency: int = 16) -> int:
    """Erase one account: marker, then its memory (both scopes) and feed; returns keys deleted."""
    segment = user_key_segment(user_id)
    _write_marker(store, user_erase_marker_key(segment), now)
    return _delete_prefixes(store, [user_prefix(segment), user_feed_prefix(segment)], concurrency)


def erase_team(store: ObjectStore, team_id: str, *, now: int, concurrency: int = 16) -> int:
    """Erase one team: marker, then its feed (teams have no memory); returns keys deleted."""
    segment = user_key_segment(team_id)
    _write_marker(store, team_erase_marker_key(segment), now)
    return _delete_prefixes(store, [team_feed_prefix(segment)], concurrency)
