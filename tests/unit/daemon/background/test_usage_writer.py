"""Recall counts written in batches off the request path: every recall counted, one write per
scope for a window, a failed write logged and the next one still made, nothing lost at stop."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

import pytest

from oharness.daemon.background.usage_writer import UsageWriter
from oharness.errors import StorageError
from oharness.memory.scope_recall import MemoryRecall, NoteKey
from oharness.memory.workspace import Workspace


def _recall(workspace: Workspace) -> MemoryRecall:
    assert workspace.service.recall is not None
    return workspace.service.recall


def _counts(recall: MemoryRecall) -> dict[NoteKey, int]:
    assert recall._usage is not None
    loaded = recall._usage.load(recall._scope_keys)
    return {key: loaded[key].count for key in loaded}


def _notes(workspace: Workspace) -> tuple[NoteKey, NoteKey]:
    service = workspace.service
    project = service.remember("Deploys happen on Tuesdays", "Noon train.").id
    user = service.remember("Prefers terse answers", "Code first.", type="user").id
    return ("project", project), ("user", user)


def test_recalls_in_one_window_are_all_counted_in_one_write_per_scope(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    recall = _recall(workspace)
    project, user = _notes(workspace)
    writes: list[list[str]] = []
    assert recall._usage is not None
    real = recall._usage.record

    def counted(key: str, ids: Iterable[str]) -> None:
        writes.append(list(ids))
        real(key, writes[-1])

    monkeypatch.setattr(recall._usage, "record", counted)
    writer = UsageWriter(window=3600)  # nothing is written before stop
    writer.add(recall, [project])
    writer.add(recall, [project, user])
    writer.add(recall, [project])
    assert writes == []
    writer.stop()
    assert _counts(recall) == {project: 3, user: 1}
    assert sorted(writes) == [[project[1]] * 3, [user[1]]]


def test_the_writer_thread_writes_within_its_window(workspace: Workspace) -> None:
    recall = _recall(workspace)
    project, _ = _notes(workspace)
    writer = UsageWriter(window=0.01)
    try:
        writer.add(recall, [project])
        deadline = time.monotonic() + 10
        while _counts(recall) != {project: 1}:
            assert time.monotonic() < deadline, "the count was never written"
            time.sleep(0.01)
        writer.add(recall, [project])
        while _counts(recall) != {project: 2}:
            assert time.monotonic() < deadline, "the second count was never written"
            time.sleep(0.01)
    finally:
        writer.stop()


def test_a_failed_write_is_logged_and_the_next_batch_still_written(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    recall = _recall(workspace)
    project, _ = _notes(workspace)
    writer = UsageWriter(window=3600)
    assert recall._usage is not None
    real = recall._usage.record

    def broken(key: str, ids: object) -> None:
        raise StorageError("could not record recall usage: disk full")

    monkeypatch.setattr(recall._usage, "record", broken)
    writer.add(recall, [project])
    with caplog.at_level(logging.ERROR, logger="oharness.daemon.background.usage_writer"):
        assert writer.flush() == 0
    assert "recall usage of 1 notes not recorded" in caplog.text
    assert "disk full" in caplog.text
    monkeypatch.setattr(recall._usage, "record", real)
    writer.add(recall, [project])
    writer.stop()
    assert _counts(recall) == {project: 1}


def test_a_recall_counted_after_stop_is_written_at_once(workspace: Workspace) -> None:
    recall = _recall(workspace)
    project, _ = _notes(workspace)
    writer = UsageWriter(window=3600)
    writer.stop()
    writer.add(recall, [project])
    assert _counts(recall) == {project: 1}
