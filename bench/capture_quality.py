"""Capture from recorded Claude Code and Codex sessions (issue 30): what lands, and what a hook
costs the agent.

Quality: the six recorded sessions of ``tests/data/capture/bench_sessions.json`` (two projects,
both agents' transcript shapes, durable facts, chit-chat, a credential typed in) are fed
through the real hook commands as the agents call them (stdin JSON of the documented shape):
the first part of each transcript at ``stop`` (or ``pre-compact``), the rest appended and read
at ``session-end``. Extraction is answered by a loopback OpenAI-compatible stub with a fixed,
plain rule standing in for a model — every user sentence that is a statement (not a question)
of at least six words becomes a note, unless an updatable note shown in the prompt already
shares most of its words (then that note is updated). The figures therefore measure the
capture path — which words reach the model, thresholds, the cursor, the related notes shown
to it, credential redaction, what lands on disk — not a model's judgment (the chit-chat line
is the stub's own). Printed: facts captured, notes per session, duplicates across two
sessions of one project, chit-chat notes, secrets in prompts or notes.

Latency: the hook process's wall and CPU time as the agent waits for it, ``stop`` on a new
session each time: below ``minUserTurns`` (the hook reads the transcript and hands nothing
over: most stops of a session), and with enough new user messages with no daemon (the hook
starts a detached pass), with ``oharness serve`` running (the hook posts a task), and in
ask-the-agent mode (no model; the hook answers itself). Each pass is let finish before the
next hook runs, so the figures are the hook's own. Baseline in the same run: ``python -c pass``.

    python bench/capture_quality.py            # 60 hook runs per latency case
    python bench/capture_quality.py --daemon   # the quality run through a daemon
    python bench/capture_quality.py --quick    # 8 runs per case, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _support import load_average, load_line

OHARNESS = Path(sys.executable).with_name("oharness")
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "capture"
MANIFEST = DATA / "bench_sessions.json"
MIN_WORDS = 6
SHARED_WORDS = 0.6
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_UPDATABLE = re.compile(r'<note id="([^"]+)"[^>]*updatable="yes">\n(.*?)</note>', re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9_/.]{4,}")
EVENT_NAMES = {"stop": "Stop", "pre-compact": "PreCompact", "session-end": "SessionEnd"}


# ---- the stub model --------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {word.lower().strip(".") for word in _WORD.findall(text)}


def stub_answer(prompt: str) -> dict[str, list[dict[str, Any]]]:
    """The stub's extraction answer for one prompt (see the module docstring)."""
    conversation = prompt.split("<conversation>", 1)[-1].split("</conversation>", 1)[0]
    said = [
        line[len("User: ") :] for line in conversation.splitlines() if line.startswith("User: ")
    ]
    shown = {note_id: text for note_id, text in _UPDATABLE.findall(prompt)}
    new: list[dict[str, Any]] = []
    updates: dict[str, dict[str, Any]] = {}
    for sentence in (part.strip() for text in said for part in _SENTENCE.split(text)):
        if sentence.endswith("?") or len(sentence.split()) < MIN_WORDS:
            continue
        words = _words(sentence)
        twin = next(
            (
                note_id
                for note_id, text in shown.items()
                if words and len(words & _words(text)) >= SHARED_WORDS * len(words)
            ),
            None,
        )
        if twin is None:
            new.append({"summary": sentence[:200], "body": sentence})
        elif sentence not in shown[twin]:
            lines = shown[twin].strip().splitlines()
            body = "\n".join(lines[1:]).strip()
            updates[twin] = {"id": twin, "summary": lines[0], "body": f"{body}\n\n{sentence}"}
    return {"new": new, "updates": list(updates.values())}


class StubModel:
    """A loopback OpenAI-compatible chat-completions server answering :func:`stub_answer`."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                stub.prompts.append(prompt)
                text = json.dumps(stub_answer(prompt))
                answer = {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---- running the hooks -----------------------------------------------------------------------


@dataclass
class Bench:
    root: Path
    env: dict[str, str]
    stub: StubModel
    projects: dict[str, Path] = field(default_factory=dict)
    daemon: subprocess.Popen[bytes] | None = None

    @property
    def home(self) -> Path:
        return Path(self.env["OHARNESS_HOME"])

    def run(self, *args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(OHARNESS), *args], cwd=cwd, input=stdin, capture_output=True, text=True,
            env=self.env, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"oharness {' '.join(args)} failed: {done.stderr}")
        return done

    def project(self, name: str) -> Path:
        if name not in self.projects:
            folder = self.root / name
            folder.mkdir()
            self.run("project", "init", cwd=folder)
            self.projects[name] = folder
        return self.projects[name]

    def configure(self, config: dict[str, Any]) -> None:
        (self.home / "config.json").write_text(json.dumps(config), encoding="utf-8")

    def hook_input(self, agent: str, event: str, session: str, path: Path, cwd: Path) -> str:
        """The stdin JSON the agent sends (Claude Code's hooks reference; Codex's hooks page)."""
        payload: dict[str, Any] = {
            "session_id": session,
            "transcript_path": str(path),
            "cwd": str(cwd),
            "hook_event_name": EVENT_NAMES[event],
        }
        if agent == "claude-code":
            payload["permission_mode"] = "default"
        else:
            payload.update(model="gpt-5-codex", turn_id=f"turn-{time.monotonic_ns()}")
        if event == "stop":
            payload["stop_hook_active"] = False
        elif event == "pre-compact":
            payload.update(trigger="auto", custom_instructions="")
        else:
            payload["reason"] = "prompt_input_exit" if agent == "claude-code" else "other"
        return json.dumps(payload)

    def settle(self) -> None:
        """Wait until no capture pass runs (detached processes, then the daemon's tasks)."""
        deadline = time.monotonic() + 300
        while _passes_running(self.root) or self._daemon_busy():
            if time.monotonic() > deadline:
                raise SystemExit("a capture pass did not finish in 300 s")
            time.sleep(0.02)

    def _daemon_busy(self) -> bool:
        if self.daemon is None:
            return False
        info = json.loads((self.home / "daemon.json").read_text("utf-8"))
        token = (self.home / "daemon-token").read_text("utf-8").strip()
        import urllib.request

        request = urllib.request.Request(
            f"{info['url']}/workspaces", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            listed = json.loads(answer.read())
        return any(hosted["pendingTasks"] for hosted in listed["workspaces"])

    def start_daemon(self) -> None:
        elsewhere = self.root / "daemon-start"
        elsewhere.mkdir(exist_ok=True)
        self.daemon = subprocess.Popen(
            [str(OHARNESS), "serve", "--port", "0"], cwd=elsewhere, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not (self.home / "daemon.json").exists():
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the daemon did not start")
            time.sleep(0.05)

    def stop_daemon(self) -> None:
        if self.daemon is not None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=60)
            self.daemon = None


def _passes_running(marker: Path) -> bool:
    """Whether a detached ``capture-run`` of this bench still runs (Linux: ``/proc``)."""
    proc = Path("/proc")
    if not proc.is_dir():
        time.sleep(2.0)
        return False
    needle = str(marker).encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"capture-run" in command and needle in command:
            return True
    return False


def _notes(project: Path) -> dict[str, str]:
    folder = project / "MEMORY"
    return {path.stem: path.read_text("utf-8") for path in sorted(folder.glob("*.md"))}


def _holds(text: str, words: Sequence[str]) -> bool:
    lowered = text.lower()
    return all(word.lower() in lowered for word in words)


# ---- quality ---------------------------------------------------------------------------------


@dataclass
class SessionFigures:
    name: str
    notes_before: int
    notes_after: int
    prompts: int


def run_sessions(bench: Bench, sessions: list[dict[str, Any]]) -> list[SessionFigures]:
    """Feed every recorded session through the hooks, in order."""
    folder = bench.root / "transcripts"
    folder.mkdir(exist_ok=True)
    figures = []
    for session in sessions:
        project = bench.project(session["project"])
        lines = (DATA / session["file"]).read_text("utf-8").splitlines(keepends=True)
        path = folder / session["file"]
        before, prompts = len(_notes(project)), len(bench.stub.prompts)
        cut = session["stopAfter"]
        for event, part in ((session["firstEvent"], lines[:cut]), ("session-end", lines[cut:])):
            with path.open("a", encoding="utf-8") as handle:
                handle.write("".join(part))
            stdin = bench.hook_input(session["agent"], event, session["sessionId"], path, project)
            bench.run("hook", session["agent"], event, cwd=project, stdin=stdin)
            bench.settle()
        figures.append(
            SessionFigures(
                session["file"],
                before,
                len(_notes(project)),
                len(bench.stub.prompts) - prompts,
            )
        )
    return figures


def quality_report(
    bench: Bench, sessions: list[dict[str, Any]], figures: list[SessionFigures]
) -> list[str]:
    """The quality figures as printed lines."""
    notes = {name: _notes(folder) for name, folder in bench.projects.items()}
    facts: dict[tuple[str, str], list[str]] = {}
    named: dict[tuple[str, str], int] = {}
    for session in sessions:
        for fact, words in session["facts"].items():
            facts[(session["project"], fact)] = words
            named[(session["project"], fact)] = named.get((session["project"], fact), 0) + 1
    holding = {
        key: [note_id for note_id, text in notes[key[0]].items() if _holds(text, words)]
        for key, words in facts.items()
    }
    captured = sum(1 for found in holding.values() if found)
    repeated = [key for key, count in named.items() if count > 1]
    duplicates = sum(max(0, len(holding[key]) - 1) for key in repeated)
    chit = [
        (session["file"], marker)
        for session in sessions
        for marker in session["chitchat"]
        if any(marker.lower() in text.lower() for text in notes[session["project"]].values())
    ]
    secrets = [secret for session in sessions for secret in session["secrets"]]
    in_prompts = sum(1 for secret in secrets for prompt in bench.stub.prompts if secret in prompt)
    in_notes = sum(
        1 for secret in secrets for texts in notes.values() for text in texts.values()
        if secret in text
    )  # fmt: skip
    missed = ", ".join(f"{p}/{f}" for (p, f), found in holding.items() if not found)
    ran: dict[str, int] = {}
    for record in (bench.home / "capture" / "sessions").glob("*.json"):
        via = json.loads(record.read_text("utf-8")).get("last", {}).get("via", "none")
        ran[via] = ran.get(via, 0) + 1
    lines = [
        f"sessions whose last pass ran in: {', '.join(f'{k} {v}' for k, v in sorted(ran.items()))}",
        f"facts captured: {captured} of {len(facts)} ({missed or 'none missed'})",
        f"facts told in two sessions of one project: {len(repeated)}; extra notes holding one "
        f"(duplicates): {duplicates}",
        f"notes on disk: {', '.join(f'{name} {len(texts)}' for name, texts in notes.items())}",
        f"chit-chat markers found in notes (the stub's judgment): {len(chit)}"
        + (f" ({'; '.join(f'{f}: {m}' for f, m in chit)})" if chit else ""),
        f"secrets typed in: {len(secrets)}; found in model prompts: {in_prompts}; in notes: "
        f"{in_notes}",
        f"{'session':40} {'model calls':>11} {'notes added':>11}",
    ]
    lines.extend(
        f"{row.name:40} {row.prompts:11d} {row.notes_after - row.notes_before:11d}"
        for row in figures
    )
    return lines


# ---- latency ---------------------------------------------------------------------------------


def _child_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.1f} {pick(0.95):8.1f} {pick(0.99):8.1f} {len(samples):6d}"


def time_hooks(
    bench: Bench, runs: int, tag: str, transcript: Path
) -> tuple[list[float], list[float]]:
    """``runs`` stop hooks on new sessions: (wall ms, CPU ms) of each hook process."""
    project = bench.project("alpha")
    walls: list[float] = []
    cpus: list[float] = []
    for number in range(runs):
        path = bench.root / "transcripts" / f"{tag}-{number}.jsonl"
        shutil.copyfile(transcript, path)
        stdin = bench.hook_input("claude-code", "stop", f"{tag}-{number}", path, project)
        command = [str(OHARNESS), "hook", "claude-code", "stop"]
        cpu_before = _child_cpu_ms()
        started = time.perf_counter()
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=bench.env,
                              cwd=project)  # fmt: skip
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append(_child_cpu_ms() - cpu_before)
        if done.returncode != 0 or done.stderr:
            raise SystemExit(f"the hook failed: {done.stderr}")
        bench.settle()
    return walls, cpus


def floor(runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        cpu_before = _child_cpu_ms()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append(_child_cpu_ms() - cpu_before)
    return walls, cpus


def _short_transcript(bench: Bench, lines: int) -> Path:
    """The first ``lines`` lines of the first recorded session."""
    path = bench.root / f"first-{lines}.jsonl"
    text = (DATA / "bench_alpha_claude_1.jsonl").read_text("utf-8").splitlines(keepends=True)
    path.write_text("".join(text[:lines]), encoding="utf-8")
    return path


# ---- main ------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 hook runs per latency case")
    parser.add_argument("--daemon", action="store_true", help="the quality run through a daemon")
    args = parser.parse_args(argv)
    runs = 8 if args.quick else 60
    sessions = json.loads(MANIFEST.read_text("utf-8"))["sessions"]
    stub = StubModel()
    load_before = load_average()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "home").mkdir()
        kept = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
        kept.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once
        env = {**kept, "OHARNESS_HOME": str(root / "home"), "OPENAI_BASE_URL": stub.url,
               "OPENAI_API_KEY": "bench-key"}  # fmt: skip
        bench = Bench(root, env, stub)
        auto = {"onStop": True, "onCompaction": True}
        with_model = {"models": {"small": "openai:capture-bench"}, "memory": {"autoExtract": auto}}
        bench.configure(with_model)
        try:
            if args.daemon:
                bench.start_daemon()
            figures = run_sessions(bench, sessions)
            report = quality_report(bench, sessions, figures)
            bench.stop_daemon()
            short = _short_transcript(bench, 2)  # one user turn: below the threshold
            enough = _short_transcript(bench, 11)  # four user turns: handed over, or asked
            alpha = bench.project("alpha")
            rows: dict[str, tuple[list[float], list[float]]] = {}
            rows["python -c pass (floor)"] = floor(runs, env)
            warm = bench.hook_input("claude-code", "stop", "warm", enough, alpha)
            bench.run("hook", "claude-code", "stop", cwd=alpha, stdin=warm)
            bench.settle()
            rows["stop, below minUserTurns (no pass)"] = time_hooks(bench, runs, "few", short)
            rows["stop, no daemon (detached pass)"] = time_hooks(bench, runs, "process", enough)
            bench.start_daemon()
            rows["stop, daemon running (task)"] = time_hooks(bench, runs, "daemon", enough)
            bench.stop_daemon()
            bench.configure({"memory": {"autoExtract": {"askAgent": True}}})
            rows["stop, ask-the-agent mode"] = time_hooks(bench, runs, "ask", enough)
        finally:
            bench.stop_daemon()
            stub.stop()
    via = "a daemon (oharness serve)" if args.daemon else "detached processes (no daemon)"
    print(f"capture quality: {len(sessions)} recorded sessions through the real hooks, via {via}")
    print(load_line(load_before))
    print("\n".join(report))
    print(f"\nhook latency, whole process, {runs} runs per case")
    for title, part in (("case (wall ms)", 0), ("case (CPU ms, user+system)", 1)):
        print(f"{title:40} {'p50':>8} {'p95':>8} {'p99':>8} {'n':>6}")
        for name, samples in rows.items():
            print(f"{name:40} {_percentiles(samples[part])}")
    print("target: the hook returns within 100 ms p95")
    return 0


if __name__ == "__main__":
    sys.exit(main())
