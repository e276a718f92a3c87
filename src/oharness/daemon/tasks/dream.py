"""The daemon's dream task (spec 10.1): review's same-topic merges, concatenated drafts.

:class:`ReviewDreamer` is the :class:`~oharness.daemon.tasks.memory_tasks.Dreamer` that
``oharness serve`` installs. One dream:

1. reads the review of every available scope (project first, then user) and takes its
   ``same-topic`` findings — dismissed ones are left alone, as the review list hides them;
2. for each group, plans the merge against the notes as they are now (so an earlier merge's
   relinks never make a later plan stale), builds the concatenated draft (手动合并: every
   original's text kept, oldest first), checks the task's cancel token, and applies it through
   :meth:`~oharness.review.review_service.ReviewService.apply` — the merge path of spec 05.2: the
   oldest note's id is kept, the others deleted, ``[[links]]`` to them rewritten, everything
   changed backed up with reason ``merge``; when the scope syncs, the batch is committed to the
   cloud first (:class:`~oharness.sync.batch.CommitFirst`);
3. a merge that is refused (a stale plan, a draft over ``memory.maxNoteBytes``, sync refusing
   or unreachable) changes nothing; it is reported and the next group goes on.

A sync pass in flight over a scope (the daemon's own background pass, ``oharness sync`` in
another process) is waited for before that scope's commit-first pass — at most
``pass_wait_s`` (the merge path's 2 minutes) — instead of refusing the merge; past the bound
the group is refused like any merge that could not sync first.

A timeout or drain sets the token: the dream stops before the next merge is applied (a merge
already under way completes or is refused as a whole), and the sync pass that precedes a
commit-first merge, or the wait for another pass, stops before its next request.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx2

from oharness.daemon.tasks.lane import CancelToken, TaskCancelled
from oharness.daemon.tasks.memory_tasks import DreamOutcome
from oharness.errors import OHarnessError
from oharness.memory.workspace import Workspace
from oharness.review.findings import Finding
from oharness.review.review_service import BatchCommitter, MergeResult, ReviewService, open_review
from oharness.types import Clock, Scope

HttpFactory = Callable[[], httpx2.Client]


@dataclass
class _Dream:
    """What one dream did so far."""

    merged: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    touched: list[Scope] = field(default_factory=list)

    def outcome(self) -> DreamOutcome:
        return DreamOutcome(
            dream_summary(self.merged, self.refused),
            tuple(self.merged),
            tuple(self.touched),
            tuple(self.refused),
        )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def dream_summary(merged: list[dict[str, Any]], refused: list[dict[str, Any]]) -> str:
    """One line: what was merged, in which scopes, and what was refused (the first reason)."""
    if not merged and not refused:
        return "Nothing to merge: no notes on the same topic"
    parts = []
    if merged:
        removed = sum(len(entry["removedIds"]) for entry in merged)
        scopes = ", ".join(dict.fromkeys(str(entry["scope"]) for entry in merged))
        parts.append(
            f"Merged {_plural(len(merged), 'same-topic group')} "
            f"({_plural(removed, 'note')} folded into the oldest one; {scopes})"
        )
    if refused:
        first = refused[0]
        parts.append(
            f"{_plural(len(refused), 'group')} not merged, unchanged "
            f"({', '.join(first['notes'])}: {first['reason']})"
        )
    return "; ".join(parts)


def merged_entry(review: ReviewService, result: MergeResult) -> dict[str, Any]:
    """One ``dedupedEntries`` item: the kept note and what was folded into it."""
    stored = review.memory.store(result.scope).get(result.kept)
    return {
        "id": result.kept,
        "scope": result.scope,
        "summary": stored.note.summary if stored is not None else None,
        "filePath": str(stored.path) if stored is not None else None,
        "removedIds": list(result.deleted),
        "relinkedIds": list(result.relinked),
        "backupIds": list(result.backups),
        "committedVersion": result.committed_version,
    }


class ReviewDreamer:
    """Dream over :mod:`oharness.review`: every same-topic group, one merge at a time."""

    def __init__(
        self,
        *,
        clock: Clock,
        token: str | None = None,
        http: HttpFactory | None = None,
        sync: bool = True,
        pass_wait_s: float | None = None,
    ) -> None:
        self.clock = clock
        self.token = token
        self.http = http or (lambda: httpx2.Client(timeout=60))
        self.sync = sync
        #: How long a merge waits for a sync pass in flight (None: the merge path's default).
        self.pass_wait_s = pass_wait_s

    def _committer(
        self, workspace: Workspace, cancel: CancelToken, stack: ExitStack
    ) -> BatchCommitter | None:
        """Commit-first for the scopes that sync (none when the home cannot hold sync state)."""
        if not self.sync or not workspace.user_available:
            return None
        from oharness.sync.batch import PASS_WAIT_S, commit_first_for
        from oharness.sync.sync_service import SyncService

        http = stack.enter_context(self.http())
        service = SyncService(
            workspace.home,
            backups=workspace.service.backups(),
            clock=self.clock,
            environ_token=self.token,
            http=http,
            cancelled=lambda: cancel.cancelled,
        )
        wait = PASS_WAIT_S if self.pass_wait_s is None else self.pass_wait_s
        return commit_first_for(service, workspace, pass_wait_s=wait)

    def dream(self, workspace: Workspace, cancel: CancelToken) -> DreamOutcome:
        done = _Dream()
        with ExitStack() as stack:
            committer = self._committer(workspace, cancel, stack)
            review = open_review(workspace, clock=self.clock, committer=committer)
            for scope in workspace.service.available_scopes():
                for finding in review.review(scope):
                    if finding.kind == "same-topic":
                        cancel.check()
                        self._merge(review, finding, cancel, done)
        return done.outcome()

    @staticmethod
    def _merge(review: ReviewService, finding: Finding, cancel: CancelToken, done: _Dream) -> None:
        try:
            plan = review.plan(finding.notes, finding.scope)
            draft = review.draft(plan, "concat")
            cancel.check()
            result = review.apply(plan, draft)
        except TaskCancelled:
            raise
        except OHarnessError as exc:
            done.refused.append(
                {
                    "finding": finding.id,
                    "scope": finding.scope,
                    "notes": list(finding.notes),
                    "code": str(exc.details.get("reason") or exc.code),
                    "reason": exc.message,
                }
            )
            return
        done.merged.append(merged_entry(review, result))
        if result.scope not in done.touched:
            done.touched.append(result.scope)
