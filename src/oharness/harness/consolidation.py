"""Background consolidation where a harness runs (spec 05.3): the memory plugin's service.

The harness supplies what the review package cannot import: the small model (as a
:data:`~oharness.review.drafting.DraftModel`), the sync path (merges commit to the cloud first
when a scope syncs) and the plan the last sync response gave. The loop thread sleeps until the
next pass may be due (:meth:`~oharness.review.consolidate.Consolidator.next_wake`, looked at
again at least every minute, since a sync may change the plan) and stops with the harness.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

from oharness.errors import OHarnessError, UnavailableError
from oharness.harness.message import Message
from oharness.harness.model import CancelToken, ChatModel, ModelRequest
from oharness.memory.workspace import Workspace
from oharness.review.consolidate import ConsolidationLog, Consolidator, PassOutcome
from oharness.review.drafting import DraftModel
from oharness.review.review_service import open_review, review_dir
from oharness.sync.batch import CommitFirst, commit_first_for, last_plan, sync_is_on
from oharness.sync.sync_service import SyncService
from oharness.types import Clock, Scope

log = logging.getLogger(__name__)
_MAX_WAIT_S: Final = 60.0
DRAFT_TIMEOUT_S: Final = 120.0


def chat_model_drafter(model: ChatModel, *, cancel: CancelToken | None = None) -> DraftModel:
    """A merge drafter over a chat model: one request, the reply's text."""

    def draft(system: str, prompt: str) -> str:
        request = ModelRequest(
            system=system,
            messages=(Message(id="merge-draft", role="user", text=prompt),),
            timeout_s=DRAFT_TIMEOUT_S,
        )
        return model.complete(request, cancel=cancel).text

    return draft


def build_consolidator(
    workspace: Workspace,
    model: ChatModel,
    *,
    clock: Clock,
    token: str | None = None,
    cancel: CancelToken | None = None,
    scopes: tuple[Scope, ...] | None = None,
) -> Consolidator:
    """A consolidator over a workspace's scopes, starting its launch delay now."""
    try:
        backups = workspace.service.backups()
    except UnavailableError as exc:
        raise UnavailableError(f"background consolidation needs backups: {exc.message}") from exc
    sync = SyncService(workspace.home, backups=backups, clock=clock, environ_token=token)
    committer: CommitFirst = commit_first_for(sync, workspace)

    def plan_of(scope: Scope) -> str | None:
        target = committer.targets.get(scope)
        if target is None or not sync_is_on(sync, target):
            return None  # sync off or signed out: the plan is unknown
        return last_plan(sync, target)

    return Consolidator(
        open_review(workspace, clock=clock, committer=committer),
        workspace.settings.memory.consolidate,
        model=chat_model_drafter(model, cancel=cancel),
        plan_of=plan_of,
        runs=ConsolidationLog(review_dir(workspace.home.home)),
        clock=clock,
        started_at=clock(),
        scopes=scopes,
    )


class ConsolidationService:
    """Runs consolidation passes on a background thread while the harness is open."""

    name = "memory.consolidate"

    def __init__(
        self,
        workspace: Workspace,
        model: ChatModel,
        *,
        clock: Clock,
        token: str | None = None,
        run_thread: bool = True,
        scopes: tuple[Scope, ...] | None = None,
        on_outcomes: Callable[[list[PassOutcome]], None] | None = None,
    ) -> None:
        self._workspace = workspace
        self._scopes = scopes
        #: Told of every pass that ran (the daemon announces merges as events).
        self._on_outcomes = on_outcomes
        self._model = model
        self._clock = clock
        self._token = token
        self._run_thread = run_thread
        self._cancel = CancelToken()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.consolidator: Consolidator | None = None
        self.outcomes: list[PassOutcome] = []

    def start(self) -> None:
        """Set up (the launch delay starts now) and start the loop thread."""
        if not self._workspace.user_available:
            return  # no writable home: no backups, so no merges
        try:
            self.consolidator = build_consolidator(
                self._workspace,
                self._model,
                clock=self._clock,
                token=self._token,
                cancel=self._cancel,
                scopes=self._scopes,
            )
        except OHarnessError as exc:  # never stops a harness from starting; said in the log
            log.warning("background consolidation is off: %s", exc.message)
            return
        if self._run_thread:
            self._thread = threading.Thread(
                target=self._loop, name="oharness-consolidate", daemon=True
            )
            self._thread.start()

    def tick(self) -> list[PassOutcome]:
        """Run the passes due now (the loop calls this; so can a host or a test)."""
        if self.consolidator is None:
            return []
        outcomes = self.consolidator.tick()
        self.outcomes.extend(outcomes)
        if outcomes and self._on_outcomes is not None:
            try:
                self._on_outcomes(outcomes)
            except Exception:  # an announcement never stops the loop
                log.exception("announcing a consolidation pass failed")
        return outcomes

    def _loop(self) -> None:
        while not self._stopping:
            self.tick()
            try:
                wake = self.consolidator.next_wake() if self.consolidator is not None else None
            except Exception:  # a config file broken mid-run: try again after the longest wait
                log.exception("reading when consolidation is next due failed")
                wake = None
            wait = _MAX_WAIT_S
            if wake is not None:
                wait = min(wait, max(0.0, (wake - self._clock()) / 1000))
            self._wake.wait(wait)
            self._wake.clear()

    def stop(self) -> None:
        """Stop the loop (a model call in flight is cancelled)."""
        self._stopping = True
        self._cancel.cancel()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
