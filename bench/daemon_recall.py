"""The daemon's recall endpoint over loopback HTTP (spec 10, 03.3): what another harness's
per-message hook pays. Baselines in the same run: the same recall called in-process, and a
bare Starlette endpoint doing nothing, served by uvicorn the same way and asked by the same
client (the floor of any Python HTTP endpoint on this machine).

A real daemon (uvicorn, the full app with auth) runs in its own process over a workspace of
note files; each message is posted to ``/workspace/recall`` by the SDK
(``DaemonClient.recall``, its kept-alive connection) and by the prompt hook's own client (a new
connection per request, as one hook process per prompt makes), and the same two kinds of
connection ask the bare endpoint.
Each message is new to every server that gets it, as a prompt is: the kept-alive client and
the hook's client take alternate messages (asking both clients the same message would time the
second one on a server whose caches already hold that message's words), and the in-process
recall times the kept-alive client's messages.
The cases take turns message by message (who goes first moving on with each message), so a
change in the machine's load hits them alike;
the load average is printed with the figures, and the CPU each server process spent per
request (every thread's time on a CPU, from ``/proc``) is shown beside the wall-clock
percentiles.
``--compare DIR`` also runs the daemon of another checkout's ``src/`` (``git archive main src |
tar -x -C DIR``) over its own copy of the same notes, asked in turn with the same messages.

    python bench/daemon_recall.py            # 10,000 notes (two scopes of 5,000), 300 messages
    python bench/daemon_recall.py --quick    # 1,000 notes, 50 messages, for CI
    python bench/daemon_recall.py --compare DIR
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

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
from oharness.memory.attach import recall_for_message


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


def _cpu_ms(pid: int | None) -> float:
    """CPU time of a process so far, all its threads: from each thread's ``schedstat``
    (nanoseconds; Linux), else user + system from ``stat`` (clock ticks), else 0."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):  # a thread just ended
                total += int((task / "schedstat").read_text().split()[0])
        if total:
            return total / 1e6
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _start(arguments: list[str], port_file: Path, source: Path | None = None) -> Any:
    """This script as a server (``--serve-daemon`` or ``--serve-bare``), importing
    ``source/src`` (None: this checkout); the process and its port once it listens."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source / "src")
    child = subprocess.Popen([sys.executable, __file__, *arguments], env=environment)
    deadline = time.monotonic() + 300
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline or child.poll() is not None:
            child.kill()
            raise RuntimeError("a server process did not start")
        time.sleep(0.05)
    return child, int(port_file.read_text())


def _lay_out(root: Path, count: int, message_count: int) -> tuple[Path, Path, list[str]]:
    laid = lay_out_corpus(root, count)
    # Five to warm the connections, then one message per client and case.
    return laid.project, laid.home, synthetic_messages(laid.corpus, 2 * message_count + 5)


def _timed(samples: list[float], call: Callable[[], object]) -> Any:
    started = time.perf_counter()
    result = call()
    samples.append((time.perf_counter() - started) * 1000)
    return result


@dataclass
class _Server:
    """One server under test: its process, port, token, the rows it fills and its CPU."""

    name: str
    process: Any
    port: int
    token: str
    path: str
    cpu: float = 0.0
    hook_cpu: float = 0.0
    client: Any = None
    rows: dict[str, list[float]] = field(default_factory=dict)

    def ask(self, kept_message: str, raw: bytes) -> bool:
        """One message with the kept-alive client, then another with the hook's; True if the
        first attached something."""
        before = _cpu_ms(self.process.pid)
        kept = self.rows.setdefault(f"{self.name}, kept-alive client", [])
        answer = _timed(kept, partial(self.client, kept_message))
        self.cpu += _cpu_ms(self.process.pid) - before
        hook = partial(post_json, "127.0.0.1", self.port, self.path, self.token, raw, 10.0)
        before = _cpu_ms(self.process.pid)
        _timed(self.rows.setdefault(f"{self.name}, the hook's client", []), hook)
        self.hook_cpu += _cpu_ms(self.process.pid) - before
        return self.path != "/nothing" and bool(answer["attached"])


def _daemon(root: Path, count: int, messages: int, source: Path | None) -> tuple[Any, list[str]]:
    """A workspace of note files and its daemon (this checkout's, or ``source``'s)."""
    project, home, texts = _lay_out(root, count, messages)
    app = create_app(DaemonOptions(home=home, start=project, background_sync=False))
    token = app.state.daemon.auth.token
    recall = app.state.daemon.registry.default.workspace.service.recall
    assert recall is not None
    if source is None:  # the daemon starts from this code's cache, as after a restart
        recall.index()
        recall.flush_cache(force=True)
    arguments = ["--serve-daemon", str(home), str(project), str(root / "port")]
    process, port = _start(arguments, root / "port", source)
    name = "POST /workspace/recall" + (f" [{source}]" if source else "")
    return _Server(name, process, port, token, "/workspace/recall"), [recall, texts]


def _report(servers: list[_Server], library: list[float], count: int, attached: int) -> None:
    n = len(library)
    print(
        f"{count:,} notes as files, two scopes; {n} messages per client, each new to its server; "
        f"{attached} of the kept-alive client's attached something"
    )
    width = max(len(name) for server in servers for name in server.rows)
    print(f"{'per message (ms)':{width}} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
    print(f"{'in-process recall (library baseline)':{width}} {_percentiles(library)}")
    for server in servers:
        for name, samples in server.rows.items():
            bar = "   bar p95 <= 5 ms" if name.startswith("POST") and "kept" in name else ""
            print(f"{name:{width}} {_percentiles(samples)}{bar}")
    print("server CPU per request (all threads), kept-alive client / hook's client:")
    for server in servers:
        print(f"  {server.name:{width - 2}} {server.cpu / n:8.2f} {server.hook_cpu / n:8.2f} ms")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, 50 messages")
    parser.add_argument("--compare", type=Path, action="append", default=[], metavar="DIR")
    parser.add_argument("--serve-daemon", nargs=3, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve-bare", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_daemon:
        _serve_daemon(*args.serve_daemon)
        return 0
    if args.serve_bare:
        _serve(_bare_app(), args.serve_bare)
        return 0
    count, message_count = (1_000, 50) if args.quick else (10_000, 300)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        servers, (recall, messages) = [], [None, []]
        try:  # every server started is stopped, whatever fails
            for number, source in enumerate([None, *args.compare]):
                server, found = _daemon(root / str(number), count, message_count, source)
                servers.append(server)
                if source is None:
                    recall, messages = found
            bare, port = _start(["--serve-bare", str(root / "bare-port")], root / "bare-port")
            servers.append(_Server("bare Starlette endpoint", bare, port, "-", "/nothing"))
            load_before = load_average()
            library, attached = _run(servers, recall, messages)
        finally:
            for server in servers:
                server.process.terminate()
                server.process.wait(10)
    _report(servers, library, count, attached)
    print(load_line(load_before))
    return 0


def _post_bare(connection: Any, message: str) -> dict[str, Any]:
    status, data = connection.post("/nothing", json.dumps({"message": message}).encode())
    assert status == 200
    return dict(json.loads(data))


def _run(servers: list[_Server], recall: Any, messages: list[str]) -> tuple[list[float], int]:
    """Every message to every server in turn, and to the library; (library times, attached)."""
    # Here, not at the top: a server of another checkout (--compare) runs this script too.
    from oharness.sdk import DaemonClient
    from oharness.sdk.connection import JsonConnection

    library: list[float] = []
    attached = 0
    closers = []
    for server in servers:
        url = f"http://127.0.0.1:{server.port}"
        if server.path == "/nothing":  # the SDK's kind of connection, to the bare endpoint
            connection = JsonConnection(url, {"Authorization": "Bearer -"}, 10.0)
            server.client = partial(_post_bare, connection)
            closers.append(connection.close)
        else:
            sdk = DaemonClient(url, server.token, timeout=10.0)
            server.client = sdk.recall
            closers.append(sdk.close)
    try:
        for message in messages[:5]:  # warm the connections
            for server in servers:
                server.client(message)
        rest = messages[5:]
        cases: list[_Server | None] = [None, *servers]  # None: the in-process recall
        for turn, (kept, hooked) in enumerate(zip(rest[0::2], rest[1::2], strict=False)):
            raw = json.dumps({"message": hooked}).encode()
            # Who goes first moves on each message: the case after the in-process recall
            # finds the CPU caches full of another index (about 0.3 ms more CPU a request).
            shift = turn % len(cases)
            for server in cases[shift:] + cases[:shift]:
                if server is None:
                    _timed(library, partial(recall_for_message, recall, kept, record=False))
                else:
                    attached += server.ask(kept, raw) and server is servers[0]
    finally:
        for close in closers:
            close()
    return library, attached


if __name__ == "__main__":
    sys.exit(main())
