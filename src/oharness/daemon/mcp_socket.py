"""Agents' MCP sessions served by the daemon, over a Unix socket in the home.

An agent (Claude Code, Codex) starts ``oharness mcp`` for every session and waits for its
answer to ``initialize``; importing the MCP SDK alone takes about half a second. While a
daemon runs, ``oharness mcp`` imports nothing of the kind: it relays the bytes of its standard
input and output to ``$OHARNESS_HOME/mcp.sock`` (:mod:`oharness.bridges.mcp_relay`), where
the daemon - which imported the SDK once and holds the project's notes loaded - serves the
session with the same server as the in-process one (``DaemonOptions.mcp_sessions``, which
``oharness serve`` sets to :func:`oharness.bridges.mcp_server.serve_connection` when the
``mcp`` extra is installed).

The exchange: the relay sends one JSON line ``{"token", "version", "start", "allowForget"}``
(the daemon's token, the relay's release, the folder the agent started it in); the daemon
answers ``{"ok": true}`` and the connection then carries the MCP stdio transport (one JSON-RPC
message per line) both ways, or ``{"ok": false, "reason": …}`` and closes, and the relay
serves the session in-process. The daemon takes a session only for a project it can host
(a registered project, or a git checkout it registers, as ``oharness mcp`` would): a folder
that is no project, one refused by the discovery rule, or another release's relay is served
in-process, so the answers are the same either way.

The socket is 0600 in the 0700 home (and the token is checked), so only its user reaches it.
A path too long for a Unix socket (about 100 bytes) leaves the daemon without one: every
session is then served in-process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from oharness import __version__
from oharness.daemon.errors import DaemonApiError
from oharness.memory.workspace import Workspace, open_workspace
from oharness.project.identity import find_project, registers_on_use

if TYPE_CHECKING:
    from oharness.daemon.state import DaemonState, McpSessions

log = logging.getLogger(__name__)

MCP_SOCKET: Final = "mcp.sock"
#: Longest socket path the platforms take (sockaddr_un: 108 bytes on Linux, 104 on macOS).
_PATH_MOST: Final = 103
_HELLO_BYTES: Final = 16 * 1024
_HELLO_SECONDS: Final = 5.0
#: One JSON-RPC message per line; a longer one ends the session.
_LINE_BYTES: Final = 64 * 1024 * 1024


async def start_mcp_socket(state: DaemonState) -> Callable[[], None] | None:
    """Listen on the home's MCP socket; returns what stops it (None: no socket here)."""
    path = state.options.home / MCP_SOCKET
    sessions = state.options.mcp_sessions
    if sessions is None:
        return None  # the MCP extra is not installed: agents' servers run in-process
    if len(os.fsencode(path)) > _PATH_MOST or not hasattr(asyncio, "start_unix_server"):
        log.info(
            "no MCP socket at %s (path too long or no Unix sockets): sessions in-process", path
        )
        return None
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # left by a daemon that was killed (this one holds the home's lock)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await _session(state, sessions, reader, writer)
        except Exception:
            log.exception("an MCP session through the daemon failed")
        finally:
            writer.close()

    try:
        server = await asyncio.start_unix_server(serve, path=str(path), limit=_LINE_BYTES)
        os.chmod(path, 0o600)
    except OSError as exc:
        log.warning("no MCP socket at %s: %s; sessions in-process", path, exc)
        return None

    def stop() -> None:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    return stop


async def _session(
    state: DaemonState,
    sessions: McpSessions,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    try:
        line = await asyncio.wait_for(reader.readline(), _HELLO_SECONDS)
        hello = json.loads(line[:_HELLO_BYTES]) if len(line) <= _HELLO_BYTES else None
    except (TimeoutError, ValueError, asyncio.LimitOverrunError):
        return
    opened, reason = await _workspace_for(state, hello)
    if opened is None:
        writer.write(json.dumps({"ok": False, "reason": reason}).encode() + b"\n")
        await writer.drain()
        return
    writer.write(b'{"ok": true}\n')
    await writer.drain()
    allow_forget = isinstance(hello, dict) and hello.get("allowForget") is True
    try:
        await sessions(opened.get, allow_forget, reader, writer)
    finally:
        await asyncio.to_thread(opened.close)


async def _workspace_for(state: DaemonState, hello: Any) -> tuple[_SessionWorkspace | None, str]:
    """What opens the hosted workspace of the hello's folder, or None and why."""
    if not isinstance(hello, dict) or not isinstance(hello.get("token"), str):
        return None, "not an MCP relay hello"
    if not hmac.compare_digest(hello["token"].encode(), state.auth.token.encode()):
        return None, "wrong daemon token"
    if hello.get("version") != __version__:
        return None, f"this daemon runs oharness {__version__}"
    start = hello.get("start")
    if not isinstance(start, str) or not os.path.isabs(start) or not os.path.isdir(start):
        return None, "start must be an absolute path to a folder"
    try:
        return await asyncio.to_thread(_opener, state, Path(start)), ""
    except _NotHere as exc:
        return None, str(exc)


class _NotHere(Exception):
    """The folder's session is served in-process (its answers would differ here)."""


def _opener(state: DaemonState, start: Path) -> _SessionWorkspace:
    """What hosts ``start``'s project at the session's first use (the answer to the hello
    never waits for a folder of notes to load); refused at once where the session would not
    be the in-process one's."""
    location = find_project(start, state.options.home)
    if location is None or location.refused is not None:
        raise _NotHere("no usable project here")
    registered = location.registered
    if not registered and not registers_on_use(start, state.options.home):
        raise _NotHere("not a project: served with the user notes alone, in-process")
    return _SessionWorkspace(state, start, create=not registered)


class _SessionWorkspace:
    """The workspace of one session: the hosted project's, or - for a folder of a project
    the daemon hosts from another folder (a second clone, synced as its own replica but not
    hosted) - one of the session's own, as ``oharness mcp`` would open in-process."""

    def __init__(self, state: DaemonState, start: Path, *, create: bool) -> None:
        self._state, self._start, self._create = state, start, create
        self._workspace: Workspace | None = None
        self._own = False
        self._lock = threading.Lock()

    def get(self) -> Workspace:
        with self._lock:
            if self._workspace is None:
                self._workspace = self._open()
            return self._workspace

    def _open(self) -> Workspace:
        state = self._state
        try:
            hosted, _ = state.registry.register(
                self._start, home=state.options.home, create=self._create
            )
        except DaemonApiError as exc:
            if exc.code != "workspace_conflict":
                raise
            self._own = True
            return open_workspace(
                self._start, state.options.home, register=self._create, clock=state.options.clock
            )
        return hosted.workspace

    def close(self) -> None:
        with self._lock:
            if self._own and self._workspace is not None:
                self._workspace.close()
