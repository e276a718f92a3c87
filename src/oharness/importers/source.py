"""Reading a foreign folder safely: what a reader found (drafts) and what it left (skips).

Walking never follows a symlink out of the folder, never opens anything but a regular file
(a FIFO would block), reads at most :data:`MAX_FILE_BYTES` of a file, and refuses binary or
non-UTF-8 files with a reason. Nothing here writes.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Final

MAX_FILE_BYTES: Final = 1_048_576
MAX_FILES: Final = 100_000
MARKDOWN_SUFFIXES: Final = (".md", ".markdown")
_ISO_DATE: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$"
)


@dataclass(frozen=True)
class Draft:
    """One note a reader proposes to import."""

    source: str  # the file (and section) it came from, relative to the folder read
    summary: str
    body: str
    type: str | None = None
    tags: tuple[str, ...] = ()
    id: str | None = None
    created_at: int | None = None
    updated_at: int | None = None
    scope: str | None = None  # the reader's suggestion; --scope wins


@dataclass(frozen=True)
class Skip:
    """Something a reader did not turn into a draft, and why."""

    source: str
    reason: str


@dataclass
class Reading:
    """What a reader found in a folder."""

    drafts: list[Draft] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)


@dataclass(frozen=True)
class TextFile:
    """A Markdown file read whole, with its modification time in ms."""

    path: Path
    relative: str
    text: str
    mtime_ms: int


def walk_markdown(root: Path, reading: Reading, base: Path | None = None) -> Iterator[TextFile]:
    """Every readable Markdown file under ``root``, sorted; problems go to ``reading.skips``.

    ``base`` (default ``root``) is the folder nothing may leave and paths are named from.
    """
    start = root.resolve()
    base = start if base is None else base.resolve()
    count = 0
    for directory, dirnames, filenames in os.walk(start, followlinks=False):
        dirnames.sort()
        for name in list(dirnames):
            full = Path(directory) / name
            if full.is_symlink():
                dirnames.remove(name)
                reading.skips.append(Skip(_rel(full, base), "a symlinked folder (not followed)"))
            elif name.startswith("."):
                dirnames.remove(name)
        for name in sorted(filenames):
            count += 1
            if count > MAX_FILES:
                reading.skips.append(Skip(_rel(start, base), f"more than {MAX_FILES} files"))
                return
            found = read_text_file(Path(directory) / name, base, reading)
            if found is not None:
                yield found


def read_text_file(path: Path, base: Path, reading: Reading) -> TextFile | None:
    """Read one file under ``base`` if it is a safe, bounded UTF-8 Markdown file."""
    relative = _rel(path, base)
    if not path.name.lower().endswith(MARKDOWN_SUFFIXES):
        reading.skips.append(Skip(relative, "not a Markdown file (.md)"))
        return None
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        reading.skips.append(Skip(relative, "a broken symlink"))
        return None
    if os.path.commonpath([str(real), str(base)]) != str(base):
        reading.skips.append(Skip(relative, "a symlink leading outside the folder (not followed)"))
        return None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        reading.skips.append(Skip(relative, f"cannot be opened: {exc.strerror or exc}"))
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            reading.skips.append(Skip(relative, "not a regular file"))
            return None
        if info.st_size > MAX_FILE_BYTES:
            reading.skips.append(
                Skip(
                    relative,
                    f"too large ({info.st_size} bytes; at most {MAX_FILE_BYTES}): split it into "
                    "smaller files and import again",
                )
            )
            return None
        data = os.read(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        reading.skips.append(
            Skip(
                relative,
                f"too large (over {MAX_FILE_BYTES} bytes): split it into smaller files and "
                "import again",
            )
        )
        return None
    if b"\x00" in data:
        binary = "binary (contains NUL bytes): not a text note; left as it is"
        reading.skips.append(Skip(relative, binary))
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        encoding = "not UTF-8 text: save it as UTF-8 (iconv -f latin1 -t utf-8) and import again"
        reading.skips.append(Skip(relative, encoding))
        return None
    return TextFile(path, relative, text.replace("\r\n", "\n"), info.st_mtime_ns // 1_000_000)


def _rel(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix() or "."
    except ValueError:
        return str(path)


def parse_time(value: object) -> int | None:
    """Milliseconds from an epoch number (s or ms) or an ISO date; ``None`` when unknown."""
    from datetime import datetime

    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
        if number <= 0:
            return None
        return int(number if number > 1e11 else number * 1000)
    if not isinstance(value, str) or not _ISO_DATE.match(value.strip()):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def first_line_summary(body: str) -> str:
    """A summary from a body: its first heading or line, cut at a word to 200 characters."""
    for line in body.split("\n"):
        text = line.strip().lstrip("#").strip().strip("*_").strip()
        if text:
            return shorten(text)
    return ""


def shorten(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, cut at a word with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return (cut or text[: limit - 1]) + "…"
