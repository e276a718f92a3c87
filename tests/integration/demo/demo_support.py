"""``oharness demo`` in its own process, as a person starts it, over a home that must stay
untouched: a HOME and OHARNESS_HOME with a sentinel credential and notes, provider keys in the
environment, and a private TMPDIR so every test sees only its own demo's temporary folders."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

OHARNESS = Path(sys.executable).with_name("oharness")
SENTINEL = "sentinel-7f3a9c-do-not-read"
_PAGE = re.compile(r"open the Memory page .*: (http://127\.0\.0\.1:(\d+)/auth\?code=\S+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:
            return False
        return True


def process_gone(pid: int) -> bool:
    """No such process, or only a zombie left for init to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@dataclass
class RealHome:
    """A user's real home: files whose bytes, mtimes and atimes must not change."""

    root: Path
    paths: list[Path] = field(default_factory=list)
    stamps: dict[Path, tuple[int, int]] = field(default_factory=dict)
    contents: dict[Path, bytes] = field(default_factory=dict)

    @classmethod
    def make(cls, root: Path) -> RealHome:
        oharness = root / ".oharness"
        (oharness / "memory" / "user").mkdir(parents=True)
        (oharness / "credentials.json").write_text(
            json.dumps({"token": SENTINEL, "origin": "https://sync.example.invalid"})
        )
        (oharness / "cloud.json").write_text(json.dumps({"origin": "https://sync.example.invalid"}))
        note = f'---\n{{"id": "private-note-001", "summary": "{SENTINEL} private"}}\n---\nMine.\n'
        (oharness / "memory" / "user" / "private-note-001.md").write_text(note)
        (oharness / "projects.json").write_text(json.dumps({"projects": {SENTINEL: "/nowhere"}}))
        paths = [root, *sorted(root.rglob("*"))]
        home = cls(root, paths)
        home.contents = {path: path.read_bytes() for path in paths if path.is_file()}
        # relatime updates an atime only when it is older than the mtime: make every one
        # older, so any later read of these files or listing of these folders shows.
        for path in paths:
            os.utime(path, ns=(1_000_000_000, 2_000_000_000))
        home.stamps = {path: _stamp(path) for path in paths}
        return home

    def assert_untouched(self) -> None:
        # Times first (stat reads nothing), then contents and listings (which do read).
        for path in self.paths:
            assert _stamp(path) == self.stamps[path], f"{path} was read or written"
        assert [self.root, *sorted(self.root.rglob("*"))] == self.paths, "files appeared"
        for path, data in self.contents.items():
            assert path.read_bytes() == data, f"{path} changed"


def _stamp(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_atime_ns, info.st_mtime_ns


class Demo:
    """One ``oharness demo`` process; its output is collected line by line."""

    def __init__(self, tmp: Path, real_home: RealHome, *args: str, **env: str) -> None:
        self.tmp = tmp
        self.started_at = time.monotonic()
        environment = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")
        }
        environment.update(
            HOME=str(real_home.root),
            OHARNESS_HOME=str(real_home.root / ".oharness"),
            OHARNESS_TOKEN=SENTINEL,
            OPENAI_API_KEY=SENTINEL,
            ANTHROPIC_API_KEY=SENTINEL,
            TMPDIR=str(tmp),
            **env,
        )
        self.process = subprocess.Popen(
            [str(OHARNESS), "demo", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=environment,
            cwd=real_home.root,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout as stream:
            for line in stream:
                with self._changed:
                    self.lines.append(line.rstrip("\n"))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """The first output line matching ``pattern`` (waiting for it)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    match = regex.search(line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                ended = self.process.stdout is None or self.process.stdout.closed
                if left <= 0 or ended:
                    raise AssertionError(f"no line matching {pattern!r} in:\n{self.output}")
                self._changed.wait(min(left, 0.2))

    def page(self, timeout: float = 60) -> tuple[str, int]:
        """The printed sign-in URL and the port."""
        match = self.wait_for(_PAGE.pattern, timeout)
        return match.group(1), int(match.group(2))

    def status(self) -> dict[str, Any]:
        (marker,) = self.tmp.glob("oharness-demo-*/demo.json")
        data: dict[str, Any] = json.loads(marker.read_text())
        return data

    def temp_homes(self) -> list[Path]:
        return sorted(self.tmp.glob("oharness-demo-*"))

    def token(self) -> str:
        return Path(self.status()["home"], "daemon-token").read_text().strip()

    def api(self, port: int) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {self.token()}"}
        return httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30)

    def stop(self, signum: int = signal.SIGINT, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
