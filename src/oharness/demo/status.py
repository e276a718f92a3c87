"""What the running demo says on its terminal: where to look, and sync changes as they happen.

At start: the page's sign-in URL, what the sample memory holds (notes per scope, the waiting
conflict, the tidy-up list, backups) and where it syncs. Then once a ``period``: a line when a
scope's sync error appears or clears, and one when the demo's sync server stopped on its own
(a pass is then asked for, so the error shows on the page within seconds, not at the next
scheduled pass). Twenty seconds in, the other device writes a note and this device syncs, so
a note pulled from the cloud can be seen arriving on the open page. The same state goes to
``demo.json`` in the temporary home, for scripts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from oharness.demo.cloud import CloudProcess
from oharness.demo.home import DemoHome
from oharness.demo.seed import Seeded, write_on_other_device
from oharness.errors import OHarnessError
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.review.review_service import open_review

log = logging.getLogger(__name__)
#: The longest a stop waits for a look in progress (a pass gives up on its own by then).
STOP_SECONDS = 90.0


class StatusWatch:
    """Prints the demo's status and watches sync and the sync server until stopped."""

    def __init__(
        self,
        home: DemoHome,
        cloud: CloudProcess | None,
        seeded: Seeded,
        announce: Callable[[str], None],
        *,
        period: float = 1.0,
        other_device_after: float | None = None,
    ) -> None:
        self.home = home
        self.cloud = cloud
        self.seeded = seeded
        self.announce = announce
        self.period = period
        self._stop = threading.Event()
        self._errors: dict[str, str | None] = {}
        self._cloud_reported = False
        self._thread: threading.Thread | None = None
        self._app: Any = None
        #: Seconds after the start when the other device writes a note (None: never).
        self._other_device_at = (
            time.monotonic() + other_device_after if other_device_after is not None else None
        )

    def start(self, app: Any, url: str, page: str) -> None:
        """Say where to look, record ``demo.json``, start watching."""
        self._app = app
        workspace: Workspace = app.state.daemon.registry.default.workspace
        self.home.write_status(
            {
                "pid": os.getpid(),
                "state": "running",
                "url": url,
                "home": str(self.home.this_device.home),
                "project": str(self.home.this_device.project),
                "otherDevice": str(self.home.other_device.home),
                "syncServer": (
                    {"url": self.cloud.origin, "pid": self.cloud.pid} if self.cloud else None
                ),
            }
        )
        for line in self._summary(workspace, url, page):
            self.announce(line)
        self.check_once()  # the errors already recorded (e.g. not signed in) are said now
        self._thread = threading.Thread(target=self._loop, name="demo-status", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; waits for a look in progress (it may be a sync pass)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_SECONDS)

    def _summary(self, workspace: Workspace, url: str, page: str) -> list[str]:
        lines = [
            f"oharness demo on {url}",
            f"open the Memory page (this link signs the browser in, once): {page}",
        ]
        try:
            lines += self._contents(workspace)
        except OHarnessError as exc:  # the link above is what matters; say why, go on
            lines.append(f"the sample memory could not be counted: {exc.message}")
        lines.append("Ctrl-C stops the demo and removes its temporary home")
        return lines

    def _contents(self, workspace: Workspace) -> list[str]:
        service = workspace.service
        counts = {scope: len(service.store(scope).notes()) for scope in service.available_scopes()}
        findings = open_review(workspace, clock=wall_clock_ms).review()
        backups = len(service.backups().recent(None))
        if self.cloud is not None:
            where = (
                f"sync: signed in to the demo's sync server at {self.cloud.origin}, with a "
                "second device"
            )
        else:
            where = "sync: no sync server (--no-sync-server): the page shows the sync error"
        conflicts = len(self.seeded.conflicts)
        return [
            f"sample project: {counts.get('project', 0)} project notes, "
            f"{counts.get('user', 0)} user notes; {_count(conflicts, 'conflict')} waiting, "
            f"{len(findings)} to tidy up, {_count(backups, 'backup')}",
            where,
        ]

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self._other_device_writes()
                self.check_once()
            except Exception:  # the watch must outlive one bad look
                log.exception("demo status check failed")

    def _other_device_writes(self) -> None:
        at = self._other_device_at
        if at is None or time.monotonic() < at or self.cloud is None:
            return
        self._other_device_at = None
        if self.cloud.exit_code() is not None:
            return
        summary = write_on_other_device(self.home.other_device)
        self.announce(
            f"the other device added a note, {summary!r}; this device syncs now (as 'Sync now' "
            "on the page would) and the page shows it without a reload"
        )
        sync = self._app.state.daemon.sync if self._app is not None else None
        if sync is not None:
            for target in sync.targets(self._app.state.daemon.registry.default):
                if target.scope == "project":
                    sync.coordinator.sync_now(target)

    def check_once(self) -> None:
        """One look at the sync server and each scope's last error."""
        sync = self._app.state.daemon.sync if self._app is not None else None
        if sync is None:
            return
        hosted = self._app.state.daemon.registry.default
        targets = sync.targets(hosted)
        if self.cloud is not None and not self._cloud_reported:
            code = self.cloud.exit_code()
            if code is not None:
                self._cloud_reported = True
                self.announce(
                    f"the demo's sync server stopped (exit code {code}): sync shows an error; "
                    "local memory keeps working"
                )
                for target in targets:
                    sync.coordinator.notify_write(target)
        for target in targets:
            with contextlib.suppress(OHarnessError):
                error = sync.service.status(target).get("lastError")
                message = error.get("message") if isinstance(error, dict) else None
                self._report(target.scope, message)

    def _report(self, scope: str, message: str | None) -> None:
        if scope in self._errors and self._errors[scope] == message:
            return
        first = scope not in self._errors
        self._errors[scope] = message
        if message is not None:
            self.announce(f"sync error ({scope} notes): {message}")
        elif not first:
            self.announce(f"sync ok again ({scope} notes)")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
