"""Background consolidation in the daemon (spec 05.3) when a small model is configured.

Each hosted workspace gets a :class:`~oharness.harness.consolidation.ConsolidationService`
while it is hosted: the same policy, launch delay, cooldown and merge path (commit-first when
the scope syncs) as ``oharness chat``. The user notes are shared by every hosted workspace, so
only the default workspace looks after them; every other workspace consolidates its project
notes alone. A pass that merged or refused something is announced as a ``memory_changed``
event (``source: "consolidation"``) for the pages and SDK clients listening.
"""

from __future__ import annotations

import logging
import threading

from oharness.daemon.events import Event, EventBus
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.harness.consolidation import ConsolidationService
from oharness.harness.model import ChatModel
from oharness.review.consolidate import PassOutcome
from oharness.types import Clock

log = logging.getLogger(__name__)


class DaemonConsolidation:
    """One consolidation service per hosted workspace."""

    def __init__(self, model: ChatModel, bus: EventBus, *, clock: Clock, token: str | None) -> None:
        self._model = model
        self._bus = bus
        self._clock = clock
        self._token = token
        self._services: dict[str, ConsolidationService] = {}
        self._lock = threading.Lock()

    def add(self, hosted: DaemonWorkspace) -> None:
        """Start consolidating a newly hosted workspace."""

        def announce(outcomes: list[PassOutcome]) -> None:
            for outcome in outcomes:
                if outcome.merged or outcome.refused:
                    self._bus.publish(
                        Event(
                            "memory_changed",
                            {"source": "consolidation", **outcome.to_dict()},
                            workspace=hosted.project_id,
                        )
                    )

        service = ConsolidationService(
            hosted.workspace,
            self._model,
            clock=self._clock,
            token=self._token,
            scopes=None if hosted.default else ("project",),
            on_outcomes=announce,
        )
        with self._lock:
            if hosted.key in self._services:
                return
            self._services[hosted.key] = service
        service.start()

    def remove(self, hosted: DaemonWorkspace) -> None:
        """Stop consolidating a workspace no longer hosted."""
        with self._lock:
            service = self._services.pop(hosted.key, None)
        if service is not None:
            service.stop()

    def tick(self) -> list[PassOutcome]:
        """Run every pass due now (each service's thread does this on its own; so can a test
        with an injected clock)."""
        with self._lock:
            services = list(self._services.values())
        return [outcome for service in services for outcome in service.tick()]

    def stop(self) -> None:
        """Stop every service (a model call in flight is cancelled)."""
        with self._lock:
            services = list(self._services.values())
            self._services.clear()
        for service in services:
            service.stop()
