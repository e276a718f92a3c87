"""Where a running daemon is: ``daemon.json`` (its URL) and ``daemon-token`` in the home.

The same two files :func:`oharness.sdk.find_daemon` reads, with the standard library only: the
``oharness.sdk`` package imports its HTTP client, which a prompt hook cannot afford.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_daemon_address(home: Path) -> tuple[str, str]:
    """``(url, token)`` of the daemon of ``home``; ``OSError``/``ValueError`` when none runs."""
    info = json.loads((home / "daemon.json").read_text("utf-8"))
    token = (home / "daemon-token").read_text("utf-8").strip()
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url or not token:
        raise ValueError(f"{home / 'daemon.json'} names no daemon URL")
    return url, token


def post_json(host: str, port: int, path: str, token: str, body: bytes, timeout: float) -> bytes:
    """POST a JSON body over loopback HTTP/1.1 and return the 200 response's body.

    A plain socket instead of ``http.client``, whose ``email`` imports cost a hook more than
    the request itself. Raises ``OSError`` or ``ValueError`` on any failure or non-200 status.
    """
    import socket

    request = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("latin-1") + body
    chunks: list[bytes] = []
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(request)
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    head, separator, payload = b"".join(chunks).partition(b"\r\n\r\n")
    if not separator:
        raise ValueError("the daemon's answer has no header end")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if len(status) < 2 or status[1] != "200":
        raise ValueError(f"daemon answered {lines[0]!r}: {payload[:200]!r}")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines[1:])
    }
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return _unchunk(payload)
    if "content-length" in headers and len(payload) != int(headers["content-length"]):
        raise ValueError("the daemon's answer was cut short")
    return payload


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    while True:
        size_line, separator, rest = data.partition(b"\r\n")
        if not separator:
            raise ValueError("a chunked answer was cut short")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        if len(rest) < size + 2:
            raise ValueError("a chunked answer was cut short")
        out.append(rest[:size])
        data = rest[size + 2 :]
