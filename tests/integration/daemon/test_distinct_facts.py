"""No fact lost to "likely duplicate": the daemon's workspace mode through real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import LiveDaemon, live_daemon, wait_terminal

from oharness.daemon import DaemonOptions

FACTS = (
    "The billing service deploys every Monday at 8:00.",
    "The mailer service deploys every Monday at 13:00.",
    "The search service deploys every Tuesday at 9:30.",
    "The billing service deploys every Thursday at 8:00.",
    "The ledger service deploys every Monday at 8:00.",
    "The billing database backs up every Monday at 2:00.",
    "The mailer service rotates its logs every Monday at 13:00.",
    "The gateway service deploys every Wednesday at 17:00.",
    "The payroll service deploys every Friday at 10:00.",
    "The webhook service deploys every Saturday at 6:00.",
)
SUBJECTS = ("cache", "queue", "upload", "export", "audit", "report", "invoice", "metrics")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    project = tmp_path / "project"
    project.mkdir()
    options = DaemonOptions(home=tmp_path / "home", start=project, background_sync=False)
    with live_daemon(options) as running:
        yield running


def _remember(http: httpx2.Client, content: str, mode: str = "workspace") -> dict[str, object]:
    posted = http.post("/workspace/memory/remember", json={"content": content, "contextMode": mode})
    assert posted.status_code == 202, posted.text
    done = wait_terminal(http, "remember", posted.json()["taskId"])
    assert done["status"] == "completed", done
    result: dict[str, object] = done["result"]
    return result


def _bodies(folder: Path) -> list[str]:
    return [path.read_text("utf-8").split("\n---\n", 1)[1] for path in folder.glob("*.md")]


def _backups(home: Path) -> list[Path]:
    return sorted((home / "memory-backups").rglob("*.md"))


@pytest.mark.parametrize("busy", [False, True], ids=["fresh", "busy"])
def test_ten_distinct_facts_all_stay_live(daemon: LiveDaemon, tmp_path: Path, busy: bool) -> None:
    memory = tmp_path / "project" / "MEMORY"
    with daemon.client() as http:
        if busy:  # a project already full of notes on the same topics
            for number, subject in enumerate(SUBJECTS * 3):
                day = ("Monday", "Tuesday", "Friday")[number % 3]
                _remember(http, f"The {subject} service deploys every {day} at {number}:15.")
        before = len(_bodies(memory))
        for fact in FACTS:
            _remember(http, fact)
    bodies = _bodies(memory)
    assert len(bodies) == before + len(FACTS)
    for fact in FACTS:
        assert sum(fact in body for body in bodies) == 1, fact
    assert _backups(tmp_path / "home") == []


def test_a_near_identical_restatement_replaces_with_a_backup(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    memory = tmp_path / "project" / "MEMORY"
    with daemon.client() as http:
        for fact in FACTS[:3]:
            _remember(http, fact)
        replaced = _remember(http, "the billing service deploys on Monday at 08:00")
        assert "duplicate" in str(replaced["summary"])
        extended = _remember(http, FACTS[1] + " Ask Dana before moving it.")
        assert "duplicate" in str(extended["summary"])
        kept = _remember(http, "The billing service deploys every Monday at 9:00.")
        assert str(kept["summary"]).startswith("Added")
    bodies = _bodies(memory)
    assert len(bodies) == 4
    assert "the billing service deploys on Monday at 08:00\n" in bodies
    assert FACTS[1] + " Ask Dana before moving it.\n" in bodies
    backups = [path.read_text("utf-8") for path in _backups(tmp_path / "home")]
    assert backups  # each replaced version is backed up
    assert any(FACTS[0] in text for text in backups) and any(FACTS[1] in text for text in backups)
