"""Recall counts on this machine: every recorded recall shows in the next load, however soon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oharness.errors import StorageError
from oharness.memory.usage import UsageLog
from oharness.types import Scope


class Clock:
    def __init__(self) -> None:
        self.now = 1_789_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


def test_each_record_shows_in_the_next_load_even_when_the_file_keeps_its_size(
    tmp_path: Path,
) -> None:
    usage = UsageLog(tmp_path / "usage", clock=Clock())
    keys: dict[Scope, str] = {"project": "project:p1", "user": "user"}
    assert dict(usage.load(keys)) == {}
    usage.record("project:p1", ["a"])
    first = usage.load(keys)
    assert first[("project", "a")].count == 1
    assert usage.load(keys) is first  # unchanged files: the same mapping, nothing parsed
    for expected in range(2, 8):  # counts 2..7 keep the file's size: still seen at once
        usage.record("project:p1", ["a"])
        assert usage.load(keys)[("project", "a")].count == expected
    usage.record("user", ["u"])
    both = usage.load(keys)
    assert both[("user", "u")].count == 1 and both[("project", "a")].count == 7


def test_a_file_written_by_another_process_is_read_again(tmp_path: Path) -> None:
    usage = UsageLog(tmp_path, clock=Clock())
    keys: dict[Scope, str] = {"project": "project:p1"}
    usage.record("project:p1", ["a"])
    assert usage.load(keys)[("project", "a")].count == 1
    other = UsageLog(tmp_path, clock=Clock())  # another process's log over the same folder
    other.record("project:p1", ["a", "b"])
    loaded = usage.load(keys)
    assert loaded[("project", "a")].count == 2 and loaded[("project", "b")].count == 1
    (path,) = tmp_path.glob("*.json")
    path.write_text(json.dumps({"notes": "garbage"}))
    assert dict(usage.load(keys)) == {}
    path.unlink()
    assert dict(usage.load(keys)) == {}


def test_the_loaded_usage_is_a_read_only_mapping_of_both_scopes(tmp_path: Path) -> None:
    from oharness.recall.score import Usage

    clock = Clock()
    usage = UsageLog(tmp_path, clock=clock)
    keys: dict[Scope, str] = {"project": "project:p1", "user": "user"}
    usage.record("project:p1", ["a", "b"])
    usage.record("user", ["a"])
    loaded = usage.load(keys)
    assert len(loaded) == 3
    assert set(loaded) == {("project", "a"), ("project", "b"), ("user", "a")}
    assert loaded[("user", "a")] == Usage(1, clock.now)
    assert loaded.get(("user", "b")) is None and ("project", "c") not in loaded
    assert dict(UsageLog(tmp_path, clock=clock).load(keys)) == dict(loaded)  # as on disk


def test_a_failed_write_shows_what_is_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oharness.fsio import atomic_write as real_write

    usage = UsageLog(tmp_path, clock=Clock())
    keys: dict[Scope, str] = {"project": "project:p1"}
    usage.record("project:p1", ["a"])
    seen: list[int] = []

    def fail_before(path: Path, data: bytes, **options: object) -> None:
        seen.append(usage.load(keys)[("project", "a")].count)  # a reader meanwhile
        raise OSError(28, "No space left on device")

    def fail_after(path: Path, data: bytes, **options: object) -> None:
        real_write(path, data)  # replaced, then the folder's fsync fails
        seen.append(usage.load(keys)[("project", "a")].count)
        raise OSError(5, "Input/output error")

    for failing, on_disk in ((fail_before, 1), (fail_after, 2)):
        monkeypatch.setattr("oharness.memory.usage.atomic_write", failing)
        with pytest.raises(StorageError, match="could not record recall usage"):
            usage.record("project:p1", ["a"])
        assert seen.pop() == on_disk
        assert usage.load(keys)[("project", "a")].count == on_disk
        assert UsageLog(tmp_path, clock=Clock()).load(keys)[("project", "a")].count == on_disk
