"""``oharness mcp`` through the daemon: the session's bytes relayed to the daemon's MCP socket.

An agent starts ``oharness mcp`` for every session and waits for it to answer ``initialize``.
Serving MCP in this process means importing the MCP SDK first (about half a second); while a
daemon runs, this module - standard library and the hook's daemon helpers only - connects to
its socket (:mod:`oharness.daemon.mcp_socket`), says which folder the session is for, and then
copies standard input to the socket and the socket to standard output, line for line. The
daemon serves the session with the same server, over the same notes.

When no daemon runs, when it declines the session (a folder that is no project, another
release) or does not answer within a second, the session is served in this process as
before; a daemon that did not answer is skipped for a minute, as by the prompt hook. If the
daemon goes away during the session (stopped, restarted, upgraded), the session goes on in
this process: the client's ``initialize`` request and ``initialized`` notification are
played to the new server again (its answer to them is not passed on: the client has had
one), then the requests the daemon had not answered, then whatever the client sends next.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import Callable

from oharness.bridges.prompt_hook import cooling_down, daemon_address, start_cooldown
from oharness.cli.hook import hook_home

SOCKET_NAME = "mcp.sock"
HELLO_SECONDS = 1.0
_HELLO_BYTES = 16 * 1024


def relay_session(args: list[str]) -> int | None:
    """Serve the session through the daemon; None when it is for this process (options this
    path does not take, no daemon, a daemon that declines or does not answer)."""
    options = _options(args)
    if options is None:
        return None
    start, allow_forget = options
    home = hook_home()
    connection = _connect(home, start, allow_forget)
    if connection is None:
        return None
    return Relay(connection, lambda streams: _in_process(start, allow_forget, streams)).run()


def _options(args: list[str]) -> tuple[str, bool] | None:
    """``(start folder, allow forget)`` for ``[--project PATH] [--allow-forget] [--debug]``;
    None for anything else (``--help``, ``--in-process``, a mistake: the full CLI says)."""
    project: str | None = None
    allow_forget = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--allow-forget":
            allow_forget = True
        elif arg == "--debug":
            continue
        elif arg == "--project" and rest:
            project = rest.pop(0)
        elif arg.startswith("--project="):
            project = arg.removeprefix("--project=")
        else:
            return None
    start = os.path.abspath(project if project is not None else os.getcwd())
    return (start, allow_forget) if os.path.isdir(start) else None


def _connect(home: str, start: str, allow_forget: bool) -> socket.socket | None:
    """The daemon's MCP connection for ``start``'s session, its hello answered; or None."""
    if not hasattr(socket, "AF_UNIX") or cooling_down(home):
        return None
    try:
        token = daemon_address(home)[2]
    except (OSError, ValueError):
        return None  # no daemon (the usual case without one)
    from oharness import __version__

    hello = {"token": token, "version": __version__, "start": start, "allowForget": allow_forget}
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(HELLO_SECONDS)
    try:
        connection.connect(os.path.join(home, SOCKET_NAME))
        connection.sendall(json.dumps(hello).encode() + b"\n")
        reply = json.loads(_read_line(connection))
    except TimeoutError:
        connection.close()
        with contextlib.suppress(OSError):  # unwritable: the next session waits once more
            start_cooldown(home)
        return None
    except (OSError, ValueError):
        connection.close()
        return None
    if not (isinstance(reply, dict) and reply.get("ok") is True):
        connection.close()
        return None
    connection.settimeout(None)
    return connection


def _read_line(connection: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk or len(data) > _HELLO_BYTES:
            raise ValueError("the daemon ended the hello")
        data += chunk
    return data


Streams = tuple[int, int]
"""The in-process server's input and output file descriptors."""


class Relay:
    """Copies the session both ways; carries it on in this process if the daemon goes."""

    def __init__(self, connection: socket.socket, serve: Callable[[Streams], None]) -> None:
        self._connection = connection
        self._serve = serve
        self._lock = threading.Lock()
        #: The client's ``initialize`` request and ``initialized`` notification.
        self._handshake: list[bytes] = []
        self._initialize_id: object = None
        #: Requests sent to the daemon and not answered yet, by id.
        self._pending: dict[str, bytes] = {}
        #: The in-process server's input, once the daemon is gone.
        self._fallback: int | None = None
        self._client_done = threading.Event()

    def run(self) -> int:
        threading.Thread(target=self._from_client, name="mcp-relay-in", daemon=True).start()
        self._to_client()
        if self._client_done.is_set():
            return 0
        return self._carry_on()

    def _from_client(self) -> None:
        stdin = sys.stdin.buffer
        while line := stdin.readline():
            self._note_from_client(line)
            with self._lock:
                if self._fallback is not None:
                    _write_all(self._fallback, line)
                    continue
                with contextlib.suppress(OSError):  # the daemon is gone: a request waits in
                    self._connection.sendall(line)  # _pending for the next server
        with self._lock:
            self._client_done.set()
            if self._fallback is not None:
                os.close(self._fallback)
                self._fallback = None
            else:
                with contextlib.suppress(OSError):
                    self._connection.shutdown(socket.SHUT_WR)

    def _note_from_client(self, line: bytes) -> None:
        message = _message(line)
        if message is None:
            return
        method = message.get("method")
        if method == "initialize":
            self._handshake = [line]
            self._initialize_id = message.get("id")
        elif method == "notifications/initialized":
            self._handshake.append(line)
        elif "id" in message and method is not None:
            with self._lock:
                self._pending[json.dumps(message["id"])] = line

    def _to_client(self) -> None:
        """The daemon's messages to standard output, until it hangs up."""
        buffered = b""
        while chunk := _receive(self._connection):
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                message = _message(line)
                if message is not None and _is_answer(message):
                    with self._lock:
                        self._pending.pop(json.dumps(message["id"]), None)
                _write_all(1, line + b"\n")
        self._connection.close()

    def _carry_on(self) -> int:
        """Serve the rest of the session in this process (the daemon went away)."""
        into_server, server_input = os.pipe()
        server_output, to_relay = os.pipe()
        threading.Thread(target=self._replay, args=(server_input,), daemon=True).start()
        passing = threading.Thread(
            target=self._pass_answers, args=(server_output,), name="mcp-relay-out", daemon=True
        )
        passing.start()
        self._serve((into_server, to_relay))  # closes both when the client is done
        passing.join()
        return 0

    def _replay(self, target: int) -> None:
        """The handshake and the unanswered requests, before anything the client sends next
        (which waits for the lock)."""
        with self._lock:
            for line in [*self._handshake, *self._pending.values()]:
                _write_all(target, line)
            if self._client_done.is_set():
                os.close(target)
            else:
                self._fallback = target

    def _pass_answers(self, source: int) -> None:
        """The in-process server's messages to standard output, but its second answer to the
        client's ``initialize``."""
        skip = self._initialize_id if self._handshake else None
        with os.fdopen(source, "rb") as lines:
            for line in lines:
                message = _message(line)
                if skip is not None and message is not None and _is_answer(message, skip):
                    skip = None
                    continue
                _write_all(1, line)


def _is_answer(message: dict[str, object], *request_id: object) -> bool:
    """True for an answer to a request of the client's (to ``request_id`` when given): it has
    an id and no method (a request of the server's own may carry the same id: ids are per
    side)."""
    if "method" in message or "id" not in message:
        return False
    return not request_id or message["id"] == request_id[0]


def _message(line: bytes) -> dict[str, object] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _receive(connection: socket.socket) -> bytes:
    try:
        return connection.recv(65536)
    except OSError:
        return b""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _in_process(start: str, allow_forget: bool, streams: Streams) -> None:
    from pathlib import Path

    from oharness.cli.mcp import serve_in_process

    serve_in_process(Path(start), allow_forget, streams)
