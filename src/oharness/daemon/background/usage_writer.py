"""Recall counts written off the request path, many recalls to a write (spec 03.2).

Every recall that attached something counts one use of each attached note in
``$OHARNESS_HOME/memory-usage/`` — a read-modify-write under a file lock with an ``fsync``.
Done for each request, that write (and its CPU) would compete with the next prompt's recall on
the same cores. The daemon's :class:`UsageWriter` collects the notes attached within a short
window (:data:`WINDOW_SECONDS` after the first one) and then writes each index's counts once
per scope, on its own thread. A note attached by several recalls in the window is counted once
per recall. A failed write is logged, never silently lost, and never fails a request; stopping
the writer (at shutdown) writes whatever is still collected.
"""

from __future__ import annotations

import logging
import threading
from typing import Final

from oharness.errors import OHarnessError
from oharness.memory.scope_recall import MemoryRecall, NoteKey

log = logging.getLogger(__name__)

#: How long the writer collects after the first recall of a batch before it writes.
WINDOW_SECONDS: Final = 0.5


class UsageWriter:
    """Collects attached notes per recall index; one thread writes them in batches."""

    def __init__(self, window: float = WINDOW_SECONDS) -> None:
        self.window = window
        self._pending: dict[int, tuple[MemoryRecall, list[NoteKey]]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, recall: MemoryRecall, keys: list[NoteKey]) -> None:
        """Count one recall of each of ``keys`` (written within the window)."""
        if not keys:
            return
        with self._lock:
            entry = self._pending.setdefault(id(recall), (recall, []))
            entry[1].extend(keys)
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="oharness-usage", daemon=True
                )
                self._thread.start()
            stopped = self._stopping.is_set()
        if stopped:  # after stop: nobody else will write it
            self.flush()
        else:
            self._wake.set()

    def flush(self) -> int:
        """Write everything collected now; returns how many recalls of notes it counted."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._wake.clear()
        counted = 0
        for recall, keys in pending.values():
            try:
                recall.record_usage(keys)
                counted += len(keys)
            except OHarnessError as exc:  # a count lost is logged; the daemon goes on answering
                log.error("recall usage of %d notes not recorded: %s", len(keys), exc.message)
            except Exception:
                log.exception("recall usage of %d notes not recorded", len(keys))
        return counted

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait()
            self._stopping.wait(self.window)  # collect the rest of the window (or stop)
            self.flush()

    def stop(self) -> None:
        """Write what is collected and end the thread."""
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)
        self.flush()
