"""Uploading a pass's changes (spec 06.4, 07.4): commits sized to fit, the position they earn.

Commits are split by the server's ``maxChangesPerCommit`` and by bytes: the smaller of
:data:`MAX_COMMIT_BYTES` and the request limit the server announces (``maxRequestBytes``). A
proxy in front of the server may still answer 413 with a lower limit of its own: the commit is
then halved and sent again, down to one note per commit, and a single note that is still too
large is reported for that note alone while the others go on.

Every change is written ahead (the base's ``pending``) before its commit is sent, so a lost
answer is recoverable. Each applied change is recorded only after the server accepted it.

The version the base may claim afterwards: the snapshot's, or a commit's own version when that
commit wrote it (``changed``) directly on top of the version already claimed. A commit whose
changes were all already there (another machine committed the same bytes a moment earlier) is
a no-op that answers the current version: claiming it would skip what that machine committed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oharness.errors import SyncError
from oharness.notes.format import file_revision, parse_note_bytes
from oharness.sync.ancestor import AncestorStore, BaseNote, BaseState, PendingNote
from oharness.sync.client import SyncClient
from oharness.sync.protocol import Change, CommitRequest, CommitResponse, Quotas, SyncScope

#: Commits are split by count (the server's maxChangesPerCommit) and by bytes (this, or the
#: server's announced request limit when lower).
MAX_COMMIT_BYTES = 8 * 1024 * 1024
#: Room for everything in a commit request but the changes themselves.
REQUEST_OVERHEAD = 1024
#: Per change on top of its content: id, op, baseRev, JSON framing.
CHANGE_OVERHEAD = 256

Upload = tuple[Change, bytes | None]


@dataclass
class Position:
    """A manifest version with the commit id that names it (``None``: not known)."""

    version: int | None
    commit: str | None = None


@dataclass
class UploadOutcome:
    """What the commits did: the position reached, pushed ids, CAS refusals, other problems."""

    position: Position
    pushed: list[str] = field(default_factory=list)
    #: Compare-and-swap refusals: id -> the server's current rev (``None``: no live note).
    refused: dict[str, str | None] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    generation: str | None = None
    #: Whether the position moved past every commit sent (false: another machine committed
    #: in between, or an older server did not say).
    claimed: bool = True


def change_weight(change: Change) -> int:
    """An upper bound of the bytes ``change`` adds to a commit request body."""
    text = change.content or ""
    return len(json.dumps(text)) + CHANGE_OVERHEAD


def byte_budget(quotas: Quotas) -> int:
    """The bytes of changes one commit may carry."""
    if quotas.max_request_bytes is None:
        return MAX_COMMIT_BYTES
    return max(CHANGE_OVERHEAD, min(MAX_COMMIT_BYTES, quotas.max_request_bytes - REQUEST_OVERHEAD))


def split_commits(uploads: list[Upload], max_changes: int, max_bytes: int) -> list[list[Upload]]:
    """Consecutive chunks of at most ``max_changes`` changes and ``max_bytes`` bytes (a change
    larger than ``max_bytes`` alone in its chunk)."""
    chunks: list[list[Upload]] = [[]]
    size = 0
    for upload in uploads:
        weight = change_weight(upload[0])
        if chunks[-1] and (len(chunks[-1]) >= max_changes or size + weight > max_bytes):
            chunks.append([])
            size = 0
        chunks[-1].append(upload)
        size += weight
    return [chunk for chunk in chunks if chunk]


def _too_large(exc: SyncError) -> bool:
    return exc.status == 413 or (exc.status is None and exc.code == "too_large")


class Uploader:
    """Sends one pass's uploads for one scope and records what the server accepted."""

    def __init__(
        self,
        *,
        base: AncestorStore,
        client: SyncClient,
        scope: SyncScope,
        protocol: int,
        progress: Callable[[str, int, int], None] | None = None,
        check_cancelled: Callable[[], None] = lambda: None,
    ) -> None:
        self.base = base
        self.client = client
        self.scope = scope
        self.protocol = protocol
        self._progress = progress
        self._check_cancelled = check_cancelled

    def upload(
        self, uploads: list[Upload], state: BaseState, quotas: Quotas, start: Position
    ) -> UploadOutcome:
        """Commit every upload; the base is saved after each commit."""
        outcome = UploadOutcome(Position(start.version, start.commit))
        claimable = True
        queue = split_commits(uploads, quotas.max_changes_per_commit, byte_budget(quotas))
        done = 0
        while queue:
            chunk = queue.pop(0)
            if self._progress is not None:
                self._progress("upload", done, len(uploads))
            self._announce(chunk, state)
            self._check_cancelled()
            try:
                response = self.client.commit(
                    CommitRequest(self.scope, tuple(change for change, _ in chunk), self.protocol)
                )
            except SyncError as exc:
                if not _too_large(exc):
                    raise
                if len(chunk) > 1:  # a limit below ours (a proxy): halve and send again
                    half = len(chunk) // 2
                    queue[:0] = [chunk[:half], chunk[half:]]
                    continue
                outcome.errors.append(_oversize(chunk[0][0], exc))
                done += 1
                continue
            self._record(chunk, response, state, outcome)
            claimable = claimable and self._advance(outcome, response)
            done += len(chunk)
        if not claimable:
            outcome.position = Position(start.version, start.commit)
        outcome.claimed = claimable
        return outcome

    @staticmethod
    def _advance(outcome: UploadOutcome, response: CommitResponse) -> bool:
        """Move the claimed position past this commit when it directly follows it."""
        position = outcome.position
        if response.generation is not None:
            outcome.generation = response.generation
        if position.version is None or response.changed is None:
            return False  # an older server does not say whether this commit wrote its version
        if response.changed and response.version == position.version + 1:
            outcome.position = Position(response.version, response.commit)
            return True
        return not response.changed and response.version == position.version

    def _record(
        self,
        chunk: list[Upload],
        response: CommitResponse,
        state: BaseState,
        outcome: UploadOutcome,
    ) -> None:
        by_id = {change.id: data for change, data in chunk}
        for applied in response.applied:
            data = by_id.get(applied.id)
            if applied.op == "delete":
                state.notes.pop(applied.id, None)
            elif data is not None:
                self.base.write_copy(applied.id, applied.rev, data)
                state.notes[applied.id] = BaseNote(applied.rev, parse_note_bytes(data).content_hash)
            outcome.pushed.append(applied.id)
        state.pending = {}
        for rejected in response.rejected:
            if rejected.reason == "conflict":  # a CAS race: the pass plans the note again
                outcome.refused[rejected.id] = rejected.current_rev
                continue
            outcome.rejected.append(
                {"id": rejected.id, "reason": rejected.reason, "message": rejected.message}
            )
        self.base.save(state)

    def _announce(self, chunk: list[Upload], state: BaseState) -> None:
        """Record what a commit sends before sending it: a lost answer is then recoverable."""
        for change, data in chunk:
            if change.op == "put" and data is not None:
                rev = file_revision(data)
                self.base.write_copy(change.id, rev, data)
                state.pending[change.id] = PendingNote(
                    rev, parse_note_bytes(data).content_hash, "upload"
                )
        self.base.save(state)


def _oversize(change: Change, exc: SyncError) -> dict[str, str]:
    size = change_weight(change) - CHANGE_OVERHEAD
    return {
        "id": change.id,
        "code": "too_large",
        "message": f"{change.id} ({size:,} bytes as sent) is larger than the request limit of "
        "the sync server or a proxy in front of it (HTTP 413); shorten the note or raise the "
        f"limit ({exc.message})",
    }


def refuse_case_collisions(
    uploads: list[Upload], state: BaseState, rejected: list[dict[str, Any]]
) -> list[Upload]:
    """Leave out puts whose id differs from a synced note's only by case (reported)."""
    known = {note_id.casefold(): note_id for note_id in state.notes}
    kept = []
    for change, data in uploads:
        other = known.get(change.id.casefold())
        if change.op == "put" and other is not None and other != change.id:
            rejected.append(
                {
                    "id": change.id,
                    "reason": "case_collision",
                    "message": f"{change.id} differs from the synced note {other} only by "
                    "letter case; rename one of them",
                }
            )
            continue
        kept.append((change, data))
    return kept
