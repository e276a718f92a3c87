"""Account and team erasure (spec 06.7): the marker first, then everything under the prefixes.

Once a marker exists, every request for that account is refused with ``account_erased`` (even
with a still-valid token), and an erased team no longer makes its members' plan paid. Erasing
again is harmless: the marker keeps its first time and deleting absent keys is a no-op.

The scopes' manifests are deleted right after the marker, before every other key, and
:class:`EraseGate` is how one server instance sees the markers without reading them on every
request (docs/scaling.md, "Erase"):

- a user's marker is read on every request that can return notes or change them (identity, a
  commit, a snapshot that is not answered ``unchanged``); an idle check, which returns only the
  version, reads none: once the erase deleted the scope's manifest, the check finds no manifest,
  reads the marker and is refused. An erased user is remembered for good on the instance.
- a team's marker only decides a plan: it is read once per ``team_lifetime`` seconds per team
  and instance, so a team erase reaches every plan within that bound.
- the instance that runs an erase knows it at once.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

from oharness.errors import PreconditionFailed
from oharness.server.auth import Principal
from oharness.storage.object_store import ObjectStore
from oharness.sync.protocol import (
    manifest_key,
    team_erase_marker_key,
    team_feed_prefix,
    user_erase_marker_key,
    user_feed_prefix,
    user_key_segment,
    user_prefix,
)

_V = TypeVar("_V")
_MANIFEST_NAME: Final = manifest_key("")
#: erased accounts and team states remembered per instance (least recently used forgotten first)
GATE_CAPACITY: Final = 100_000


class EraseGate:
    """The erase markers as one instance sees them (see the module notes for the bounds)."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        team_lifetime: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._team_lifetime = team_lifetime
        self._monotonic = monotonic
        self._erased_users: OrderedDict[str, None] = OrderedDict()
        self._teams: OrderedDict[str, tuple[bool, float]] = OrderedDict()
        self._lock = threading.Lock()

    def user_erased(self, segment: str) -> bool:
        """Whether the account is erased: remembered once seen, else its marker is read."""
        with self._lock:
            if segment in self._erased_users:
                return True
        if self._store.get(user_erase_marker_key(segment)) is None:
            return False
        self.mark_user(segment)
        return True

    def erased_teams(self, principal: Principal) -> frozenset[str]:
        """The key segments of the caller's teams that are erased."""
        return frozenset(
            segment
            for segment in (user_key_segment(team.id) for team in principal.teams)
            if self._team_erased(segment)
        )

    def mark_user(self, segment: str) -> None:
        """Remember that this account is erased."""
        with self._lock:
            self._erased_users[segment] = None
            self._erased_users.move_to_end(segment)
            _trim(self._erased_users)

    def mark_team(self, segment: str) -> None:
        """Remember that this team is erased."""
        self._remember_team(segment, True)

    def _team_erased(self, segment: str) -> bool:
        now = self._monotonic()
        with self._lock:
            known = self._teams.get(segment)
        if known is not None and (known[0] or now - known[1] < self._team_lifetime):
            return known[0]
        erased = self._store.get(team_erase_marker_key(segment)) is not None
        self._remember_team(segment, erased)
        return erased

    def _remember_team(self, segment: str, erased: bool) -> None:
        with self._lock:
            self._teams[segment] = (erased, self._monotonic())
            self._teams.move_to_end(segment)
            _trim(self._teams)


def _trim(entries: OrderedDict[str, _V]) -> None:
    while len(entries) > GATE_CAPACITY:
        entries.popitem(last=False)


def _write_marker(store: ObjectStore, key: str, now: int) -> None:
    data = json.dumps({"erasedAt": now}).encode("utf-8")
    with contextlib.suppress(PreconditionFailed):  # already erased: keep the first marker
        store.put(key, data, if_none_match=True)


def delete_prefixes(store: ObjectStore, prefixes: list[str], concurrency: int) -> int:
    keys = [key for prefix in prefixes for key in store.list(prefix)]
    # The manifests first: an idle check on any instance then finds none and reads the marker.
    manifests = [key for key in keys if key.rsplit("/", 1)[-1] == _MANIFEST_NAME]
    for key in manifests:
        store.delete(key)
    keys = [key for key in keys if key.rsplit("/", 1)[-1] != _MANIFEST_NAME]
    if len(keys) < 4:
        for key in keys:
            store.delete(key)
        return len(manifests) + len(keys)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        # list() drains the iterator so a failed delete raises here.
        list(pool.map(store.delete, keys))
    return len(manifests) + len(keys)


def erase_user(
    store: ObjectStore,
    user_id: str,
    *,
    now: int,
    concurrency: int = 16,
    gate: EraseGate | None = None,
) -> int:
    """Erase one account: marker, then its memory (both scopes) and feed; returns keys deleted."""
    segment = user_key_segment(user_id)
    _write_marker(store, user_erase_marker_key(segment), now)
    if gate is not None:
        gate.mark_user(segment)
    return delete_prefixes(store, [user_prefix(segment), user_feed_prefix(segment)], concurrency)


def erase_team(
    store: ObjectStore,
    team_id: str,
    *,
    now: int,
    concurrency: int = 16,
    gate: EraseGate | None = None,
) -> int:
    """Erase one team: marker, then its feed (teams have no memory); returns keys deleted."""
    segment = user_key_segment(team_id)
    _write_marker(store, team_erase_marker_key(segment), now)
    if gate is not None:
        gate.mark_team(segment)
    return delete_prefixes(store, [team_feed_prefix(segment)], concurrency)
