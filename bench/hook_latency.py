"""Claude Code's per-prompt hook as a whole process (issue 17): what each prompt waits for.

``oharness hook claude-code user-prompt-submit`` is run as Claude Code runs it, one process per
prompt with the hook JSON on stdin, over 1,000 notes: without a daemon (the library answers,
with its index cache warm) and with ``oharness serve`` running (the daemon answers). Baselines
in the same run: an empty interpreter (``python -c pass``, the floor of any Python hook) and
``oharness --version`` (the full CLI's start-up). Targets: p95 ≤ 100 ms with the daemon,
≤ 400 ms without.

A hung daemon (issue 29): ``daemon.json`` names a socket that accepts connections and never
answers. The first prompt waits for the hook's short timeout, then the library answers and the
hook skips the daemon for its cool-down; that first prompt is timed on its own (the cool-down
mark removed before each), then the prompts during the cool-down. Target: the first costs at
most one short wait (the timeout, 1 s, plus the library's answer), the others what the library
costs. CPU time (user + system of each child) is printed beside the wall time: it
is what the load of the machine changes least. The hooks run with their bytecode compiled, as
an installed package has it (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment and
a first run writes it): a hook compiling every module from source measures the compiler.

``--compare DIR`` adds the library case of another checkout's ``src/`` (e.g.
``git archive main src | tar -x -C DIR``), run in alternation with this code, prompt by prompt,
on its own copy of the home, so both see the same load::

    python bench/hook_latency.py                      # 1,000 notes, 60 prompts per case
    python bench/hook_latency.py --compare /tmp/main  # and main's library path beside it
    python bench/hook_latency.py --quick              # 1,000 notes, 8 prompts per case, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
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


def _child_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


Case = tuple[list[str], dict[str, str]]
Samples = tuple[list[float], list[float]]  # wall ms, CPU ms (user + system) of each child


def _time_runs(cases: dict[str, Case], inputs: list[list[str]]) -> dict[str, Samples]:
    """Run each case once per input, the cases in alternation (``inputs[n][case]``)."""
    samples: dict[str, Samples] = {name: ([], []) for name in cases}
    for row in inputs:
        for (name, (command, env)), text in zip(cases.items(), row, strict=True):
            cpu_before = _child_cpu_ms()
            started = time.perf_counter()
            done = subprocess.run(command, input=text, capture_output=True, text=True, env=env)
            samples[name][0].append((time.perf_counter() - started) * 1000)
            samples[name][1].append(_child_cpu_ms() - cpu_before)
            if done.returncode != 0 or done.stderr:
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


class HungDaemon:
    """A listening socket that accepts every connection and never reads or answers."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(128)
        self.port = self.server.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:  # closed
                return
            self.held.append(connection)

    def close(self) -> None:
        self.server.close()
        for connection in self.held:
            connection.close()


def _hung_daemon_rows(
    hook: list[str], home: Path, project: Path, env: dict[str, str], messages: list[str], runs: int
) -> dict[str, Samples]:
    """The first prompt after a daemon hung (each alone), then the prompts of its cool-down."""
    hung_home = home.with_name("home-hung")
    shutil.copytree(home, hung_home)
    hung_env = {**env, "OHARNESS_HOME": str(hung_home)}
    hung = HungDaemon()
    try:
        url = f"http://127.0.0.1:{hung.port}"
        (hung_home / "daemon.json").write_text(json.dumps({"url": url, "pid": os.getpid()}))
        (hung_home / "daemon-token").write_text("hung-daemon-token\n")
        mark = hung_home / "hooks" / "daemon-unresponsive"
        case = {"hook, daemon hung: first prompt": (hook, hung_env)}
        # The copied home's derived index cache is rebuilt once, as after any move: not timed.
        _time_runs(case, [_payloads(project, messages[:1], "hwarm")])
        first: Samples = ([], [])
        for prompt in _payloads(project, messages[: max(3, runs // 6)], "hung"):
            mark.unlink(missing_ok=True)
            wall, cpu = _time_runs(case, [[prompt]])[next(iter(case))]
            first[0].extend(wall)
            first[1].extend(cpu)
            if not mark.exists():
                raise SystemExit("the hook did not start its cool-down after the daemon hung")
        cooling = {"  then during the cool-down": (hook, hung_env)}
        prompts = _payloads(project, messages[:runs], "cool")
        rows = {next(iter(case)): first}
        rows.update(_time_runs(cooling, [[prompt] for prompt in prompts]))
        return rows
    finally:
        hung.close()


def _library_cases(
    hook: list[str], home: Path, env: dict[str, str], compare: Path | None
) -> dict[str, Case]:
    cases: dict[str, Case] = {"hook, library (no daemon)": (hook, env)}
    if compare is not None:  # its own home: two versions never share a derived cache
        other = home.with_name("home-compare")
        shutil.copytree(home, other)
        other_env = {**env, "OHARNESS_HOME": str(other), "PYTHONPATH": str(compare / "src")}
        cases[f"  the same, {compare}"] = (hook, other_env)
    return cases


def _print_table(rows: dict[str, Samples], runs: int, load_before: float) -> None:
    print(f"whole-process latency in ms, 1,000 notes, {runs} prompts per case")
    print(load_line(load_before))
    for title, part in (("case (wall ms)", 0), ("case (CPU ms, user+system)", 1)):
        print(f"{title:40} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
        for name, samples in rows.items():
            print(f"{name:40} {_percentiles(samples[part])}")
    print("targets: p95 <= 100 ms with the daemon, <= 400 ms without; a hung daemon costs one")
    print("short wait (the hook's 1 s timeout) on the first prompt, then none for the cool-down")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 prompts per case")
    parser.add_argument("--compare", type=Path, help="another checkout, run in alternation")
    args = parser.parse_args(argv)
    runs = 8 if args.quick else 60
    hook = [str(OHARNESS), "hook", "claude-code", "user-prompt-submit"]
    with tempfile.TemporaryDirectory() as scratch:
        project, home, messages = _lay_out(Path(scratch), 1_000)
        kept = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env = {**kept, "OHARNESS_HOME": str(home)}
        load_before = load_average()
        rows: dict[str, Samples] = {}
        baselines: dict[str, Case] = {
            "python -c pass (floor)": ([sys.executable, "-c", "pass"], env),
            "oharness --version (CLI)": ([str(OHARNESS), "--version"], env),
        }
        for name, baseline in baselines.items():
            rows.update(_time_runs({name: baseline}, [[""]] * runs))
        cases = _library_cases(hook, home, env, args.compare)
        # One run each builds and saves the derived index cache, as a day's first prompt would.
        _time_runs(cases, [_payloads(project, messages[:1], "warm") * len(cases)])
        prompts = _payloads(project, messages[:runs], "lib")
        rows.update(_time_runs(cases, [[prompt] * len(cases) for prompt in prompts]))
        daemon = _start_daemon(home, project, env)
        try:
            daemon_case = {"hook, daemon running": (hook, env)}
            _time_runs(daemon_case, [_payloads(project, messages[:1], "dwarm")])
            prompts = _payloads(project, messages[runs : 2 * runs], "daemon")
            rows.update(_time_runs(daemon_case, [[prompt] for prompt in prompts]))
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
        rows.update(_hung_daemon_rows(hook, home, project, env, messages, runs))
    _print_table(rows, runs, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
