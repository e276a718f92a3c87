"""Background consolidation (spec 05.3): merge a few same-topic groups with the small model.

Policy: ``memory.consolidate.auto`` is ``"subscribers"`` by default — on only when the last
sync response of the scope said the account (or a team of it) is on a paid plan; off for free
accounts and whenever the plan is unknown (sync off, signed out). ``true``/``false`` override;
a project config can lower it, never raise it (enforced when config is layered).

When on, a pass over a scope runs no earlier than :data:`LAUNCH_DELAY_MS` after launch and at
most once per ``cooldownHours``; the time of the last pass is kept per scope in
``$OHARNESS_HOME/memory-review/consolidation.json``, so restarts do not rerun it. A pass merges
up to ``maxMerges`` same-topic groups (not dismissed ones) through the same path as a merge by
hand (:meth:`ReviewService.apply`, commit-first included) with the model's draft. It never
acts on the other findings. A group whose draft or merge is refused is reported and left as it
is; the pass goes on with the next group.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import filelock

from oharness.errors import OHarnessError, StorageError
from oharness.fsio import PRIVATE_FILE_MODE, atomic_write, make_directory
from oharness.review.drafting import DraftModel
from oharness.review.review_service import ReviewService
from oharness.settings import ConsolidateSettings
from oharness.types import Clock, Scope

log = logging.getLogger(__name__)

LAUNCH_DELAY_MS: Final = 120_000
HOUR_MS: Final = 3_600_000
STATE_FILE: Final = "consolidation.json"


def consolidation_on(auto: bool | str, plan: str | None) -> bool:
    """Whether background merges run for a scope whose last known plan is ``plan``."""
    if auto is True or auto is False:
        return auto
    return auto == "subscribers" and plan == "paid"


class ConsolidationLog:
    """When each scope was last consolidated (machine-local, never synced)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / STATE_FILE

    def _read(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        runs = data.get("lastRun") if isinstance(data, dict) else None
        if not isinstance(runs, dict):
            return {}
        return {k: v for k, v in runs.items() if isinstance(k, str) and isinstance(v, int)}

    def last_run(self, scope_key: str) -> int | None:
        """When a pass last started for this scope (ms), if ever."""
        return self._read().get(scope_key)

    def record(self, scope_key: str, at: int) -> None:
        """Keep ``at`` as the scope's last pass."""
        try:
            make_directory(self.path.parent)
            with filelock.FileLock(str(self.path) + ".lock", timeout=10, mode=PRIVATE_FILE_MODE):
                runs = self._read()
                runs[scope_key] = at
                text = json.dumps({"format": 1, "lastRun": runs}, sort_keys=True, indent=1)
                atomic_write(self.path, text.encode("utf-8"))
        except (OSError, filelock.Timeout) as exc:
            raise StorageError(
                f"cannot record the consolidation run in {self.path}: {exc}"
            ) from exc


@dataclass
class PassOutcome:
    """What one consolidation pass over one scope did."""

    scope: Scope
    merged: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "merged": self.merged, "refused": self.refused}


class Consolidator:
    """Decides when to consolidate each scope, and runs the passes."""

    def __init__(
        self,
        review: ReviewService,
        settings: ConsolidateSettings,
        *,
        model: DraftModel,
        plan_of: Callable[[Scope], str | None],
        runs: ConsolidationLog,
        clock: Clock,
        started_at: int,
        scopes: tuple[Scope, ...] | None = None,
    ) -> None:
        self.review = review
        #: The scopes this consolidator looks after (``None``: every available one; a daemon
        #: hosting several projects leaves the shared user scope to one of them).
        self.scopes = scopes
        self.settings = settings
        self.model = model
        self.plan_of = plan_of
        self.runs = runs
        self.clock = clock
        self.started_at = started_at

    def enabled(self, scope: Scope) -> bool:
        """The policy for this scope now (the plan is read fresh each time)."""
        return consolidation_on(self.settings.auto, self.plan_of(scope))

    def due_at(self, scope: Scope) -> int:
        """The earliest time the next pass over ``scope`` may start."""
        first = self.started_at + LAUNCH_DELAY_MS
        last = self.runs.last_run(self.review.memory.scope_key(scope))
        if last is None:
            return first
        return max(first, last + self.settings.cooldown_hours * HOUR_MS)

    def next_wake(self) -> int | None:
        """When a pass may next be due (None: consolidation is off for every scope)."""
        times = [self.due_at(s) for s in self._scopes() if self.enabled(s)]
        return min(times) if times else None

    def _scopes(self) -> list[Scope]:
        available = self.review.memory.available_scopes()
        return [s for s in available if self.scopes is None or s in self.scopes]

    def tick(self) -> list[PassOutcome]:
        """Run the passes that are due now (never raises: failures are logged and reported)."""
        outcomes = []
        now = self.clock()
        for scope in self._scopes():
            try:
                if self.enabled(scope) and now >= self.due_at(scope):
                    outcomes.append(self.run_pass(scope))
            except Exception:  # the host's loop must outlive one bad pass
                log.exception("background consolidation of the %s notes failed", scope)
        return outcomes

    def run_pass(self, scope: Scope) -> PassOutcome:
        """One pass over a scope: up to ``maxMerges`` same-topic groups, with the model."""
        self.runs.record(self.review.memory.scope_key(scope), self.clock())
        outcome = PassOutcome(scope)
        groups = [f for f in self.review.review(scope) if f.kind == "same-topic"]
        for finding in groups[: max(0, self.settings.max_merges)]:
            try:
                plan = self.review.plan(finding.notes, scope)
                draft = self.review.draft(plan, "model", self.model)
                result = self.review.apply(plan, draft)
            except OHarnessError as exc:
                outcome.refused.append(
                    {"finding": finding.id, "notes": list(finding.notes), "reason": exc.message}
                )
                continue
            outcome.merged.append({"finding": finding.id, **result.to_dict()})
        return outcome


def plan_reader(plans: Mapping[Scope, Callable[[], str | None]]) -> Callable[[Scope], str | None]:
    """``plan_of`` from per-scope readers (a scope without one has no known plan)."""

    def plan_of(scope: Scope) -> str | None:
        reader = plans.get(scope)
        return reader() if reader is not None else None

    return plan_of
