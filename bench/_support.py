"""What several benchmarks share (imported by bare name: each puts ``bench/`` on ``sys.path``).

- The sync-server benchmarks (``storage_ops``, ``sync_server``): the development token's
  secret, a token, the server's settings, a bench note's text and the S3 test server.
- The recall benchmarks with notes on disk (``daemon_recall``, ``hook_latency``,
  ``extraction_pass``): a project and a home holding a synthetic corpus as note files.
- The machine's load printed with the figures, so a reader can judge them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from recall_corpus import Corpus, synthetic_corpus

from oharness.notes.format import Note, serialise_note, serialise_note_bytes
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.object_store import ObjectStore

SECRET = "bench-secret-0123456789abcdef0123456789abcdef"
#: Notes per commit when a benchmark uploads a scope.
BATCH = 500

# ---- the sync server -------------------------------------------------------------------------


def token(user: str) -> str:
    """A development token for ``user``, valid for an hour."""
    return jwt.encode({"sub": user, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")


def server_settings(**overrides: Any) -> ServerSettings:
    """The server as the benchmarks run it: tokens signed with :data:`SECRET`, no rate limit."""
    values: dict[str, Any] = {"jwt": JwtSettings(secret=SECRET), "rate_per_minute": 0}
    values.update(overrides)
    return ServerSettings(**values)


def note_text(index: int, generation: int = 0) -> str:
    """The file text of bench note ``index`` (a new generation changes its body and time)."""
    body = f"Note {index}, generation {generation}.\n\n" + ("Some remembered detail. " * 12)
    note = Note(
        id=f"note-{index:05d}",
        summary=f"Remembered fact number {index}",
        body=body + "\n",
        tags=("bench",),
        created_at=1_789_000_000_000,
        updated_at=1_789_000_000_000 + generation,
    )
    return serialise_note(note)


def backend_options(
    doc: str, quick: str, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, int]:
    """The options of a benchmark over the file and S3 backends, and the notes in its scope."""
    parser = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--notes", type=int, default=None, help="notes in the scope")
    parser.add_argument("--no-s3", action="store_true", help="skip the S3 backend")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    return args, args.notes or (300 if args.quick else 5000)


def s3_server(tmp: Path) -> tuple[Any, str]:
    """SeaweedFS from ``tests/s3server.py`` (started), or ``None`` and why it cannot start."""
    tests = Path(__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(tests))
    try:
        from s3server import S3ServerUnavailable, start_s3_server
    except ImportError as exc:
        return None, f"tests/s3server.py cannot be imported ({exc})"
    try:
        return start_s3_server(tmp / "s3"), ""
    except S3ServerUnavailable as exc:
        return None, str(exc).splitlines()[0]


def s3_stores(tmp: Path) -> tuple[Callable[[], ObjectStore] | None, str, Callable[[], None]]:
    """Stores on one fresh bucket prefix of the S3 test server, why not, and how to stop it."""
    server, reason = s3_server(tmp)
    if server is None:
        return None, reason, lambda: None
    prefix = f"bench-{int(time.time())}"
    return (lambda: server.store(prefix)), "", server.stop


# ---- notes on disk ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LaidOut:
    """A project and a home whose notes folders hold a synthetic corpus."""

    project: Path
    home: Path
    corpus: Corpus


def lay_out_corpus(root: Path, count: int, *, aged: bool = True) -> LaidOut:
    """``count`` synthetic notes as files in both scopes under ``root`` (``project``, ``home``);
    ``aged``: the folders' times an hour back, as a real notes folder's are."""
    project, home = root / "project", root / "home"
    (project / ".oharness").mkdir(parents=True)
    (project / ".oharness" / "project.json").write_text(json.dumps({"id": "p-bench"}))
    folders = {"project": project / "MEMORY", "user": home / "memory" / "user"}
    for folder in folders.values():
        folder.mkdir(parents=True)
    corpus = synthetic_corpus(count)
    for scope, note in corpus.notes:
        (folders[scope] / f"{note.id}.md").write_bytes(serialise_note_bytes(note))
    if aged:
        for folder in folders.values():
            os.utime(folder, (time.time() - 3600, time.time() - 3600))
    return LaidOut(project, home, corpus)


# ---- the machine -----------------------------------------------------------------------------


def load_average() -> float:
    """The one-minute load average now."""
    return os.getloadavg()[0]


def load_line(before: float) -> str:
    """``load average B at the start, N at the end, on C cores`` (N: now)."""
    return (
        f"load average {before:.1f} at the start, {load_average():.1f} at the end, "
        f"on {os.cpu_count()} cores"
    )
