"""The Memory page's render time over loopback HTTP at 5,000 notes (spec 11, issue 16 item 7).

A real daemon (uvicorn, the full app with its cookie auth) over a workspace of linked notes in
both scopes (one in ten links dangling, one in five notes an orphan) with 30 days of recall
history; a signed-in client fetches each section. Baselines in the same run: the HTTP floor
(``GET /capabilities``) and the same sections at a tenth of the notes.

    python bench/page_render.py            # 5,000 notes (and 500), 20 fetches per page
    python bench/page_render.py --quick    # 500 notes (and 50), 3 fetches, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import httpx2
import uvicorn
from recall_corpus import synthetic_corpus

from oharness.daemon import DaemonOptions, create_app
from oharness.memory.usage import UsageLog
from oharness.notes.format import serialise_note_bytes
from oharness.project.paths import HomeLayout

DAY_MS = 86_400_000
NOW = 1_790_000_000_000
PAGES = (
    ("/memory/notes", "notes list"),
    ("/memory/notes?q=release+build+cache", "notes search"),
    ("/memory/graph", "graph + recall charts"),
)


def _workspace(root: Path, count: int) -> tuple[Path, Path]:
    project, home = root / "project", root / "home"
    (project / ".oharness").mkdir(parents=True)
    (project / ".oharness" / "project.json").write_text(json.dumps({"id": "p-bench"}))
    folders = {"project": project / "MEMORY", "user": home / "memory" / "user"}
    for folder in folders.values():
        folder.mkdir(parents=True)
    rng = random.Random(7)
    corpus = synthetic_corpus(count)
    ids = [note.id for _, note in corpus.notes]
    by_scope: dict[str, list[str]] = {"project": [], "user": []}
    for index, (scope, note) in enumerate(corpus.notes):
        links = []
        if index % 5:  # one in five stays an orphan (nothing links to it either, mostly)
            links = [rng.choice(ids[: max(1, index)]) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.1:
                links.append(f"missing-{index}")
        body = note.body + "".join(f"\nSee [[{target}]]." for target in links) + "\n"
        changed = note.with_changes(body=body)
        (folders[scope] / f"{note.id}.md").write_bytes(serialise_note_bytes(changed))
        by_scope[scope].append(note.id)
    usage = home / "memory-usage"
    for day in range(30):  # 30 days of recalls of a few hundred notes each
        log = UsageLog(usage, clock=lambda day=day: NOW - (29 - day) * DAY_MS)  # type: ignore[misc]
        for scope, key in (("project", "project:p-bench"), ("user", "user")):
            pool = by_scope[scope]
            log.record(key, rng.sample(pool, min(len(pool), count // 20)))
    return project, home


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.1f} {pick(0.95):8.1f} {len(samples):5d}"


def _measure(root: Path, count: int, fetches: int) -> dict[str, list[float]]:
    project, home = _workspace(root / str(count), count)
    assert HomeLayout(home).usage_dir == home / "memory-usage"
    options = DaemonOptions(
        home=home, start=project, background_sync=False, watch_seconds=0, clock=lambda: NOW
    )
    app = create_app(options)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="on", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    timings: dict[str, list[float]] = {}
    try:
        with httpx2.Client(base_url=url, timeout=120) as browser:
            code = app.state.daemon.auth.page_code
            assert browser.get(f"/auth?code={code}").status_code == 200
            for path, name in (("/capabilities", "GET /capabilities (floor)"), *PAGES):
                browser.get(path)  # warm: the index, the caches
                samples = []
                for _ in range(fetches):
                    started = time.perf_counter()
                    response = browser.get(path)
                    samples.append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, (path, response.status_code)
                timings[name] = samples
    finally:
        server.should_exit = True
        thread.join(30)
    return timings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 notes, 3 fetches")
    args = parser.parse_args(argv)
    count, fetches = (500, 3) if args.quick else (5_000, 20)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        small = _measure(root, count // 10, fetches)
        large = _measure(root, count, fetches)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Memory page over loopback HTTP, signed-in browser client; {fetches} fetches each")
    print(f"(load average during the run: {load} on {os.cpu_count()} cores)")
    print("per page (ms)                        notes     p50      p95     n")
    for name in small:
        print(f"{name:36s} {count // 10:5d} {_percentiles(small[name])}")
        bar = "   bar p95 <= 1000 ms" if name != "GET /capabilities (floor)" else ""
        print(f"{name:36s} {count:5d} {_percentiles(large[name])}{bar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
