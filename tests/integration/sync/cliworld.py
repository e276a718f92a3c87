"""Machines running the real ``oharness`` CLI against a real ``oharness sync-server serve`` on
loopback, over file storage or SeaweedFS S3; and a tiny proxy that answers 413 above a size."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2

from oharness.notes.format import Note, serialise_note_bytes

OHARNESS = Path(sys.executable).with_name("oharness")
SECRET = "divergence-secret-0123456789abcdef0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Storage:
    """Where the server keeps its objects, and the operator's hand on them."""

    url: str
    environ: dict[str, str]
    directory: Path | None = None
    s3: Any = None  # an S3ObjectStore-like (list, get, delete) when on S3

    def keys(self) -> dict[str, bytes]:
        """Every object the storage holds."""
        if self.directory is not None:
            return {
                str(path.relative_to(self.directory)): path.read_bytes()
                for path in self.directory.rglob("*")
                if path.is_file()
            }
        found = {}
        for key in self.s3.list(""):
            stored = self.s3.get(key)
            if stored is not None:
                found[key] = stored.data
        return found

    def restore(self, copy: dict[str, bytes]) -> None:
        """The operator puts back an older copy (taken with :meth:`keys`)."""
        self.wipe()
        for key, data in copy.items():
            if self.directory is not None:
                path = self.directory / key
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            else:
                self.s3.put(key, data)

    def wipe(self) -> None:
        """The operator empties the storage."""
        if self.directory is not None:
            shutil.rmtree(self.directory)
            self.directory.mkdir()
            return
        for key in list(self.s3.list("")):
            self.s3.delete(key)


class Server:
    """``oharness sync-server serve`` in its own process on a free loopback port."""

    def __init__(self, storage: Storage, log: Path, **env: str) -> None:
        self.storage = storage
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("OHARNESS_SYNC_", "AWS_"))
        }
        environment.update({"OHARNESS_SYNC_JWT_SECRET": SECRET, **storage.environ, **env})
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [
                str(OHARNESS),
                "sync-server",
                "serve",
                "--storage",
                storage.url,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            env=environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(self.origin + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the sync server did not start: {log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


class Machine:
    """One machine: a project folder and an OHARNESS_HOME, driven through the CLI."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = root, home
        (root / ".oharness").mkdir(parents=True, exist_ok=True)
        (root / ".oharness" / "project.json").write_text(
            json.dumps({"id": "p-divergence-0123456789abcdef", "createdAt": 1}), encoding="utf-8"
        )
        home.mkdir(parents=True, exist_ok=True)

    @property
    def notes(self) -> Path:
        return self.root / "MEMORY"

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items() if k != "OHARNESS_TOKEN"}
        environment.update({"OHARNESS_HOME": str(self.home), **env})
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            env=environment,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def ok(self, *args: str) -> str:
        result = self.run(*args)
        assert result.returncode == 0, (result.stdout, result.stderr)
        return result.stdout

    def status(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.ok("sync", "status", "--json"))
        return {scope["scope"]: scope for scope in data["scopes"]}

    def login(self, origin: str, user: str = "alice") -> None:
        self.ok("login", "--origin", origin, "--token", token_for(user))

    def write(self, note_id: str, body: str, *, summary: str | None = None) -> bytes:
        """A note written by hand (an editor, a git checkout): one file in MEMORY/."""
        note = Note(
            note_id, summary or f"Note {note_id}", body, (), None, 1789000000000, 1789000000000
        )
        data = serialise_note_bytes(note)
        self.notes.mkdir(exist_ok=True)
        (self.notes / f"{note_id}.md").write_bytes(data)
        return data

    def files(self) -> dict[str, bytes]:
        return {path.name: path.read_bytes() for path in sorted(self.notes.glob("*.md"))}


def token_for(user: str) -> str:
    import jwt

    payload = {"sub": user, "exp": int(time.time()) + 3600, "ent": {"plan": "paid"}}
    return jwt.encode(payload, SECRET, algorithm="HS256")


class LimitingProxy:
    """A reverse proxy on loopback that answers 413 (an HTML page, as nginx does) to any
    request body over ``limit`` bytes and forwards everything else."""

    def __init__(self, upstream: str, limit: int) -> None:
        self.upstream = upstream
        self.limit = limit
        self.refused = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if length > proxy.limit:
                    proxy.refused += 1
                    page = b"<html><body>413 Request Entity Too Large</body></html>"
                    self.send_response(413)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                reply = httpx2.request(
                    self.command, proxy.upstream + self.path, headers=headers, content=body
                )
                self.send_response(reply.status_code)
                for key, value in reply.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            do_GET = _forward
            do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def plaintext_in(storage: Storage, words: list[str]) -> list[str]:
    """The ``words`` the storage holds in clear, in an object's name or contents."""
    everything = b"".join(storage.keys().values()) + "".join(storage.keys()).encode()
    return [word for word in words if word.encode() in everything]


def storage_for(kind: str, tmp_path: Path, s3_server: Any = None) -> Storage:
    """File storage in ``tmp_path``, or a prefix of its own on the S3 test server."""
    if kind == "file":
        directory = tmp_path / "storage"
        directory.mkdir()
        return Storage(f"file://{directory}", {}, directory=directory)
    prefix = f"cli-{tmp_path.name}"
    return Storage(
        f"s3://{s3_server.bucket}/{prefix}", s3_server.environ(), s3=s3_server.store(prefix)
    )


@contextlib.contextmanager
def running_server(storage: Storage, tmp_path: Path, **env: str) -> Iterator[Server]:
    """``oharness sync-server serve`` on ``storage`` for one test (``env``: its settings)."""
    running = Server(storage, tmp_path / "server.log", **env)
    try:
        yield running
    finally:
        running.stop()


def machines(tmp: Path, count: int) -> Iterator[Machine]:
    for index in range(count):
        yield Machine(tmp / f"m{index}" / "repo", tmp / f"m{index}" / "home")
