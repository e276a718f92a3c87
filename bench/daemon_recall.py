"""The daemon's recall endpoint over loopback HTTP (spec 10, 03.3): what another harness's
per-message hook pays. Baseline in the same run: the same recall called in-process.

A real daemon (uvicorn, the full app with auth) runs in its own process over a workspace of
note files; a client with a kept-alive connection posts each message to ``/workspace/recall``.

    python bench/daemon_recall.py            # 10,000 notes (two scopes of 5,000), 300 messages
    python bench/daemon_recall.py --quick    # 1,000 notes, 50 messages, for CI
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import httpx2
import uvicorn
from recall_corpus import synthetic_corpus, synthetic_messages

from oharness.daemon import DaemonOptions, create_app
from oharness.notes.format import serialise_note_bytes
from oharness.tools.attach import recall_for_message


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.2f} {pick(0.95):8.2f} {pick(0.99):8.2f} {len(samples):6d}"


def _serve(home: Path, project: Path, port_file: Path) -> None:
    """The daemon process: warm the index, listen, write the port."""
    app = create_app(DaemonOptions(home=home, start=project, background_sync=False))
    recall = app.state.daemon.registry.default.workspace.service.recall
    assert recall is not None
    recall.index()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="on", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port_file.write_text(str(server.servers[0].sockets[0].getsockname()[1]))
    thread.join()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, 50 messages")
    args = parser.parse_args(argv)
    count, message_count = (1_000, 50) if args.quick else (10_000, 300)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        project, home = root / "project", root / "home"
        (project / ".oharness").mkdir(parents=True)
        (project / ".oharness" / "project.json").write_text(json.dumps({"id": "p-bench"}))
        folders = {"project": project / "MEMORY", "user": home / "memory" / "user"}
        for folder in folders.values():
            folder.mkdir(parents=True)
        corpus = synthetic_corpus(count)
        for scope, note in corpus.notes:
            (folders[scope] / f"{note.id}.md").write_bytes(serialise_note_bytes(note))
        messages = synthetic_messages(corpus, message_count)
        for folder in folders.values():  # written long ago, as a real notes folder is
            os.utime(folder, (time.time() - 3600, time.time() - 3600))

        app = create_app(DaemonOptions(home=home, start=project, background_sync=False))
        token = app.state.daemon.auth.token
        recall = app.state.daemon.registry.default.workspace.service.recall
        assert recall is not None
        recall.index()
        recall.flush_cache(force=True)
        port_file = root / "port"
        child = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(home, project, port_file), daemon=True
        )
        child.start()
        deadline = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text():
            if time.monotonic() > deadline or not child.is_alive():
                raise RuntimeError("the daemon did not start")
            time.sleep(0.05)
        port = int(port_file.read_text())

        in_process: list[float] = []
        for message in messages:
            started = time.perf_counter()
            recall_for_message(recall, message, record=False)
            in_process.append((time.perf_counter() - started) * 1000)

        floor: list[float] = []
        over_http: list[float] = []
        attached = 0
        headers = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
            for message in messages[:5]:  # warm the connection
                client.post("/workspace/recall", json={"message": message})
            for _ in messages:
                started = time.perf_counter()
                client.get("/capabilities")
                floor.append((time.perf_counter() - started) * 1000)
            for message in messages:
                started = time.perf_counter()
                response = client.post("/workspace/recall", json={"message": message})
                over_http.append((time.perf_counter() - started) * 1000)
                attached += bool(response.json()["attached"])
        child.terminate()
        child.join(10)

        print(
            f"{count:,} notes as files, two scopes; {len(messages)} messages, "
            f"{attached} attached something"
        )
        print("per message (ms)                                p50      p95      p99      n")
        print(f"in-process recall (baseline)               {_percentiles(in_process)}")
        print(f"GET /capabilities (the HTTP floor)         {_percentiles(floor)}")
        print(
            f"POST /workspace/recall over loopback HTTP  {_percentiles(over_http)}"
            "   bar p95 <= 5 ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
