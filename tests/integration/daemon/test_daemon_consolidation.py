"""Background consolidation in the daemon (spec 05.3) with a small model: the real OpenAI wire
path to a loopback stub, an injected clock: nothing before the launch delay, then the
same-topic notes of the hosted project merged (backed up first) and the pass announced as a
``memory_changed`` event; nothing at all when the policy is off."""

from __future__ import annotations

import json
from pathlib import Path

from daemon_support import events_until, live_daemon
from stub_model_server import StubModelServer, openai_text

from oharness.daemon import DaemonOptions
from oharness.harness.openai_provider import OpenAIChatModel
from oharness.memory.workspace import open_workspace
from oharness.review.consolidate import LAUNCH_DELAY_MS


class Clock:
    """Wall time that moves only when told (milliseconds)."""

    def __init__(self) -> None:
        self.now = 1_789_000_000_000

    def __call__(self) -> int:
        return self.now


def _project(tmp_path: Path, auto: bool) -> tuple[Path, Path, list[str]]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    config = {"memory": {"consolidate": {"auto": auto, "maxMerges": 3}}}
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
    workspace = open_workspace(project, home, register=True)
    service = workspace.service
    ids = [
        service.remember("Deploy train leaves Tuesday noon", "Tuesdays.", tags="release").id,
        service.remember("Deploy train: Tuesday at noon", "Noon.", tags="release").id,
    ]
    workspace.close()
    return project, home, ids


def test_the_daemon_merges_same_topic_notes_after_the_launch_delay(
    tmp_path: Path, stub: StubModelServer
) -> None:
    project, home, ids = _project(tmp_path, auto=True)
    clock = Clock()
    model = OpenAIChatModel("small-test", base_url=stub.url + "/v1", api_key="k")
    options = DaemonOptions(
        home=home, start=project, small_model=model, background_sync=False, clock=clock
    )
    with live_daemon(options) as daemon:
        consolidation = daemon.state.consolidation
        assert consolidation is not None
        assert consolidation.tick() == [] and stub.requests == []  # the launch delay first
        clock.now += LAUNCH_DELAY_MS
        body = {"summary": "Deploy train: Tuesdays at noon", "tags": ["release"], "body": "x"}
        stub.script(openai_text(json.dumps(body)))
        with daemon.client() as listener, listener.stream("GET", "/events") as stream:
            lines = stream.iter_lines()
            assert next(lines).startswith(": connected")
            outcomes = consolidation.tick()
            seen = events_until(lines, '"source":"consolidation"')
        assert [outcome.scope for outcome in outcomes if outcome.merged] == ["project"]
        announced = seen[-1]["data"]
        assert announced["scope"] == "project" and len(announced["merged"]) == 1
        left = sorted(path.stem for path in (project / "MEMORY").glob("*.md"))
        assert len(left) == 1 and set(ids) >= set(left)
        text = (project / "MEMORY" / f"{left[0]}.md").read_text(encoding="utf-8")
        assert "Tuesdays at noon" in text
        assert len(list((home / "memory-backups").glob("*-merge.md"))) == 2  # backed up first
        clock.now += LAUNCH_DELAY_MS
        assert consolidation.tick() == []  # the cooldown holds


def test_nothing_runs_when_consolidation_is_off(tmp_path: Path, stub: StubModelServer) -> None:
    project, home, ids = _project(tmp_path, auto=False)
    clock = Clock()
    model = OpenAIChatModel("small-test", base_url=stub.url + "/v1", api_key="k")
    options = DaemonOptions(
        home=home, start=project, small_model=model, background_sync=False, clock=clock
    )
    with live_daemon(options) as daemon:
        clock.now += 10 * LAUNCH_DELAY_MS
        assert daemon.state.consolidation.tick() == []
    assert stub.requests == []
    assert sorted(p.stem for p in (project / "MEMORY").glob("*.md")) == sorted(ids)
