"""Which file paths a project note names, for the "missing file" finding (spec 05.1).

The rule, in order:

1. Fenced code blocks (``` or ~~~) are skipped whole: what they hold is usually an example.
2. Candidates are inline code spans (`` `src/pricing/cards.tsx` ``) and Markdown link targets
   (``[the doc](docs/a.md#usage)``; the ``#anchor`` and ``?query`` are dropped).
3. A candidate is a path only when it is relative and plain: no URL scheme (``https:``,
   ``mailto:``), not absolute (``/etc/hosts``, ``~/x``, ``C:\\x``), no spaces, no wildcard or
   placeholder characters (``* ? < > { } $ %``), no ``..`` leaving the project, and no
   placeholder segment (``path/to``, ``foo``, ``bar``, ``example``, ``your-…``, ``xxx``).
4. An inline code span must also look like a file path: at least two segments separated by
   ``/`` and a last segment with an extension (``src/app.py``), or a trailing ``/`` naming a
   folder (``docs/``). Placeholder segments are compared without their extension
   (``src/foo.py`` is an example). So ``and/or``, ``origin/main`` and ``application/json``
   are not paths. A Markdown link target needs no extension (``[the scripts](scripts)``
   names a folder).

A path names something that exists when a file or folder is there, relative to the project
root.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Final

_FENCE: Final = re.compile(r"^[ \t]{0,3}(```|~~~)")
_INLINE_CODE: Final = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_LINK_TARGET: Final = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_BAD_CHARS: Final = frozenset("*?<>{}$%|\"'\\ \t")
_EXTENSION: Final = re.compile(r"\.[A-Za-z0-9]{1,10}$")
_PLACEHOLDER_SEGMENTS: Final = frozenset({"foo", "bar", "baz", "example", "xxx", "..."})


def _outside_fences(body: str) -> str:
    """The body with fenced code blocks blanked out."""
    kept: list[str] = []
    fence: str | None = None
    for line in body.splitlines():
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        kept.append(line)
    return "\n".join(kept)


def _plain_relative(candidate: str) -> str | None:
    """The normalised relative path, or None when the candidate is not a plain one."""
    text = candidate.strip()
    if not text or _SCHEME.match(text) or text.startswith(("/", "~", "#")):
        return None
    if any(char in _BAD_CHARS for char in text):
        return None
    text = text.removeprefix("./")
    parts = [part for part in PurePosixPath(text).parts if part != "."]
    if not parts or ".." in parts:
        return None
    lowered = {PurePosixPath(part).stem.casefold() for part in parts}
    if lowered & _PLACEHOLDER_SEGMENTS or any(p.casefold().startswith("your") for p in parts):
        return None
    if "path/to/" in "/".join(parts).casefold() + "/":
        return None
    return "/".join(parts) + ("/" if text.endswith("/") else "")


def _code_path(span: str) -> str | None:
    path = _plain_relative(span)
    if path is None:
        return None
    if path.endswith("/") or ("/" in path and _EXTENSION.search(path)):
        return path
    return None


def _link_path(target: str) -> str | None:
    target = target.split("#", 1)[0].split("?", 1)[0]
    return _plain_relative(target) if target else None


def referenced_paths(body: str) -> tuple[str, ...]:
    """The relative paths a note body names (the rule above), in order, each once."""
    if "`" not in body and "](" not in body:
        return ()
    text = _outside_fences(body)
    found: list[str] = []
    for match in _INLINE_CODE.finditer(text):
        path = _code_path(match.group(1))
        if path is not None:
            found.append(path)
    for match in _LINK_TARGET.finditer(text):
        path = _link_path(match.group(1))
        if path is not None:
            found.append(path)
    return tuple(dict.fromkeys(found))


def missing_paths(body: str, exists: Callable[[str], bool]) -> tuple[str, ...]:
    """The paths a body names that ``exists`` (relative to the project root) says are gone."""
    return tuple(path for path in referenced_paths(body) if not exists(path))
