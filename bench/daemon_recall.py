"""The daemon's recall endpoint over loopback HTTP (spec 10, 03.3): what another harness's
per-message hook pays. Baselines in the same run: the same recall called in-process, and a
bare Starlette endpoint doing nothing, served by uvicorn the same way and asked by the same
client (the floor of any Python HTTP endpoint on this machine).

A real daemon (uvicorn, the full app with auth) runs in its own process over a workspace of
note files; each message is posted to ``/workspace/recall`` by an ``httpx2`` client with a
kept-alive connection (as the SDK does) and by the prompt hook's own client (a new connection
per request, as one hook process per prompt makes), and the same two clients ask the bare
endpoint.
The cases take turns message by message, so a change in the machine's load hits them alike;
the load average is printed with the figures, and the CPU each server process spent per
request (user + system, from ``/proc``) is shown beside the wall-clock percentiles.

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
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import httpx2
import uvicorn
from _support import lay_out_corpus, load_average, load_line
from recall_corpus import synthetic_messages
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from oharness.bridges.prompt_hook import post_json
from oharness.daemon import DaemonOptions, create_app
from oharness.daemon.serve import warm_up
from oharness.tools.attach import recall_for_message


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.2f} {pick(0.95):8.2f} {pick(0.99):8.2f} {len(samples):6d}"


async def _nothing(request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse({})


def _bare_app() -> Starlette:
    return Starlette(routes=[Route("/nothing", _nothing, methods=["POST"])])


def _serve(app: Any, port_file: Path) -> None:
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


def _serve_daemon(home: Path, project: Path, port_file: Path) -> None:
    """The daemon process, as ``oharness serve`` prepares it: index loaded, heap frozen."""
    app = create_app(DaemonOptions(home=home, start=project, background_sync=False))
    warm_up(app)
    _serve(app, port_file)


def _serve_bare(port_file: Path) -> None:
    _serve(_bare_app(), port_file)


def _cpu_ms(pid: int | None) -> float:
    """User + system CPU of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _start(target: Callable[..., None], args: tuple[Any, ...], port_file: Path) -> Any:
    child = multiprocessing.get_context("spawn").Process(target=target, args=args, daemon=True)
    child.start()
    deadline = time.monotonic() + 300
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline or not child.is_alive():
            raise RuntimeError("a server process did not start")
        time.sleep(0.05)
    return child, int(port_file.read_text())


def _lay_out(root: Path, count: int, message_count: int) -> tuple[Path, Path, list[str]]:
    laid = lay_out_corpus(root, count)
    return laid.project, laid.home, synthetic_messages(laid.corpus, message_count)


def _timed(samples: list[float], call: Callable[[], object]) -> Any:
    started = time.perf_counter()
    result = call()
    samples.append((time.perf_counter() - started) * 1000)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, 50 messages")
    args = parser.parse_args(argv)
    count, message_count = (1_000, 50) if args.quick else (10_000, 300)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        project, home, messages = _lay_out(root, count, message_count)
        app = create_app(DaemonOptions(home=home, start=project, background_sync=False))
        token = app.state.daemon.auth.token
        recall = app.state.daemon.registry.default.workspace.service.recall
        assert recall is not None
        recall.index()
        recall.flush_cache(force=True)  # the daemon process starts from it, as after a restart
        daemon, port = _start(_serve_daemon, (home, project, root / "port"), root / "port")
        bare, bare_port = _start(_serve_bare, (root / "bare-port",), root / "bare-port")
        load_before = load_average()
        rows: dict[str, list[float]] = {name: [] for name in CASES}
        cpu = {"daemon": 0.0, "bare": 0.0}
        attached = 0
        headers = {"Authorization": f"Bearer {token}"}
        with (
            httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client,
            httpx2.Client(base_url=f"http://127.0.0.1:{bare_port}") as bare_client,
        ):
            for message in messages[:5]:  # warm the connections
                client.post("/workspace/recall", json={"message": message})
                bare_client.post("/nothing", json={"message": message})
            for message in messages:
                body = {"message": message}
                raw = json.dumps(body).encode()
                _timed(rows[CASES[0]], partial(recall_for_message, recall, message, record=False))
                before = _cpu_ms(bare.pid)
                _timed(rows[CASES[1]], partial(bare_client.post, "/nothing", json=body))
                cpu["bare"] += _cpu_ms(bare.pid) - before
                before = _cpu_ms(daemon.pid)
                response = _timed(
                    rows[CASES[2]], partial(client.post, "/workspace/recall", json=body)
                )
                cpu["daemon"] += _cpu_ms(daemon.pid) - before
                attached += bool(response.json()["attached"])
                path = "/workspace/recall"
                hook_call = partial(post_json, "127.0.0.1", port, path, token, raw, 10.0)
                _timed(rows[CASES[3]], hook_call)
                bare_call = partial(post_json, "127.0.0.1", bare_port, "/nothing", "-", raw, 10.0)
                _timed(rows[CASES[4]], bare_call)
        for child in (daemon, bare):
            child.terminate()
            child.join(10)
    n = len(messages)
    print(
        f"{count:,} notes as files, two scopes; {n} messages, {attached} attached something; "
        + load_line(load_before)
    )
    print(f"{'per message (ms)':44} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
    for name, samples in rows.items():
        bar = "   bar p95 <= 5 ms" if name == CASES[2] else ""
        print(f"{name:44} {_percentiles(samples)}{bar}")
    print(
        f"server CPU per request (user+system): daemon recall {cpu['daemon'] / n:.2f} ms, "
        f"bare endpoint {cpu['bare'] / n:.2f} ms"
    )
    return 0


CASES = (
    "in-process recall (library baseline)",
    "bare Starlette endpoint, kept-alive client",
    "POST /workspace/recall, kept-alive client",
    "POST /workspace/recall, the hook's client",
    "bare Starlette endpoint, the hook's client",
)

if __name__ == "__main__":
    sys.exit(main())
