"""Claude Code's per-prompt hook as a whole process (issue 17): what each prompt waits for.

``oharness hook claude-code user-prompt-submit`` is run as Claude Code runs it, one process per
prompt with the hook JSON on stdin, over 1,000 notes: without a daemon (the library answers,
with its index cache warm) and with ``oharness serve`` running (the daemon answers). Baselines
in the same run: an empty interpreter (``python -c pass``, the floor of any Python hook) and
``oharness --version`` (the full CLI's start-up). Targets: p95 ≤ 100 ms with the daemon,
≤ 400 ms without.

    python bench/hook_latency.py            # 1,000 notes, 60 prompts per case
    python bench/hook_latency.py --quick    # 1,000 notes, 8 prompts per case, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _support import lay_out_corpus, load_average, load_line
from recall_corpus import synthetic_messages

OHARNESS = Path(sys.executable).with_name("oharness")


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.1f} {pick(0.95):8.1f} {pick(0.99):8.1f} {len(samples):6d}"


CPU: list[float] = []  # CPU ms (user + system) of each child, the load-independent figure


def _child_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _time_runs(command: list[str], inputs: list[str], env: dict[str, str]) -> list[float]:
    samples = []
    CPU.clear()
    for text in inputs:
        cpu_before = _child_cpu_ms()
        started = time.perf_counter()
        done = subprocess.run(command, input=text, capture_output=True, text=True, env=env)
        samples.append((time.perf_counter() - started) * 1000)
        CPU.append(_child_cpu_ms() - cpu_before)
        if done.returncode != 0:
            raise SystemExit(f"{command} failed: {done.stderr}")
    return samples


def _payloads(project: Path, messages: list[str], tag: str) -> list[str]:
    return [
        json.dumps(
            {
                "session_id": f"{tag}-{n}",
                "cwd": str(project),
                "prompt": message,
                "hook_event_name": "UserPromptSubmit",
            }
        )
        for n, message in enumerate(messages)
    ]


def _lay_out(root: Path, count: int) -> tuple[Path, Path, list[str]]:
    laid = lay_out_corpus(root, count)
    return laid.project, laid.home, synthetic_messages(laid.corpus, 200)


def _start_daemon(home: Path, project: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(
        [str(OHARNESS), "serve", "--port", str(port)],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (home / "daemon.json").exists():
        if daemon.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the daemon did not start")
        time.sleep(0.05)
    return daemon


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 prompts per case")
    args = parser.parse_args(argv)
    runs = 8 if args.quick else 60
    hook = [str(OHARNESS), "hook", "claude-code", "user-prompt-submit"]
    with tempfile.TemporaryDirectory() as scratch:
        project, home, messages = _lay_out(Path(scratch), 1_000)
        env = {**os.environ, "OHARNESS_HOME": str(home)}
        load_before = load_average()
        # One run builds and saves the derived index cache, as the first prompt of a day would.
        _time_runs(hook, _payloads(project, messages[:1], "warm"), env)
        rows: dict[str, tuple[list[float], list[float]]] = {}
        rows["python -c pass (floor)"] = (
            _time_runs([sys.executable, "-c", "pass"], [""] * runs, env),
            list(CPU),
        )
        rows["oharness --version (CLI)"] = (
            _time_runs([str(OHARNESS), "--version"], [""] * runs, env),
            list(CPU),
        )
        rows["hook, library (no daemon)"] = (
            _time_runs(hook, _payloads(project, messages[:runs], "lib"), env),
            list(CPU),
        )
        daemon = _start_daemon(home, project, env)
        try:
            _time_runs(hook, _payloads(project, messages[:1], "dwarm"), env)
            wall = _time_runs(hook, _payloads(project, messages[runs : 2 * runs], "daemon"), env)
            rows["hook, daemon running"] = (wall, list(CPU))
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
    print(f"whole-process latency in ms, 1,000 notes, {runs} prompts per case")
    print(load_line(load_before))
    print(f"{'case (wall ms)':32} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
    for name, (wall_ms, _) in rows.items():
        print(f"{name:32} {_percentiles(wall_ms)}")
    print(f"{'case (CPU ms, user+system)':32} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
    for name, (_, cpu_ms) in rows.items():
        print(f"{name:32} {_percentiles(cpu_ms)}")
    print("targets: p95 <= 100 ms with the daemon, <= 400 ms without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
