"""Per-day recall counts in memory-usage/: kept for 90 days, older files still load."""

from __future__ import annotations

import json
from pathlib import Path

from oharness.memory.usage import HISTORY_DAYS, UsageLog

DAY = 86_400_000


def test_recalls_are_counted_per_day_and_old_days_dropped(tmp_path: Path) -> None:
    now = [100 * DAY + 5]
    log = UsageLog(tmp_path, clock=lambda: now[0])
    log.record("user", ["a", "b"])
    log.record("user", ["a"])
    now[0] += DAY
    log.record("user", ["a"])
    assert log.history({"user": "user"}) == {
        ("user", "a"): {100: 2, 101: 1},
        ("user", "b"): {100: 1},
    }
    assert log.load({"user": "user"})[("user", "a")].count == 3
    now[0] += HISTORY_DAYS * DAY
    log.record("user", ["a"])
    assert log.history({"user": "user"})[("user", "a")] == {101 + HISTORY_DAYS: 1}


def test_a_file_from_before_per_day_counts_still_loads(tmp_path: Path) -> None:
    log = UsageLog(tmp_path, clock=lambda: 10 * DAY)
    log.record("user", ["a"])
    path = next(tmp_path.glob("*.json"))
    data = json.loads(path.read_text())
    data["notes"]["a"].pop("days")
    data["notes"]["b"] = {"count": 4, "lastRecalledAt": 5, "days": "junk"}
    path.write_text(json.dumps(data))
    assert log.history({"user": "user"}) == {}
    assert log.load({"user": "user"})[("user", "b")].count == 4
    log.record("user", ["b"])
    assert log.history({"user": "user"}) == {("user", "b"): {10: 1}}
