"""Frontmatter of foreign Markdown files: JSON, a small YAML subset, or none.

The YAML side is a deliberately tiny subset parser (``key: value``, quoted strings, flow lists
``[a, b]``, block lists of ``- item``, and ``|`` / ``>`` block scalars). It has no anchors, no
aliases, no tags and no nesting beyond one list level, so a "billion laughs" document or a
deeply nested one cannot blow up: anything outside the subset is refused with a reason, and the
frontmatter is bounded in size before it is looked at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from oharness.errors import NoteFormatError

MAX_FRONTMATTER_CHARS: Final = 16_384
MAX_KEYS: Final = 64


class FrontmatterError(NoteFormatError, ValueError):
    """The frontmatter could not be read; ``str(exc)`` says why."""


@dataclass(frozen=True)
class Parsed:
    """A file split into its frontmatter fields and its body."""

    fields: dict[str, Any]
    body: str
    kind: str  # "json", "yaml" or "none"


def split_frontmatter(text: str) -> Parsed:
    """Split ``text`` into frontmatter and body; raises :class:`FrontmatterError`."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        return Parsed({}, text, "none")
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return Parsed({}, text, "none")
    end = None
    used = 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            end = index
            break
        used += len(lines[index]) + 1
        if used > MAX_FRONTMATTER_CHARS:
            raise FrontmatterError(f"frontmatter over {MAX_FRONTMATTER_CHARS} characters")
    if end is None:
        raise FrontmatterError("frontmatter opened with --- but never closed")
    head = "\n".join(lines[1:end])
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    stripped = head.strip()
    if stripped.startswith("{"):
        return Parsed(_json_fields(stripped), body, "json")
    return Parsed(parse_yaml_subset(head), body, "yaml")


def _json_fields(head: str) -> dict[str, Any]:
    try:
        value = json.loads(head)
    except (ValueError, RecursionError) as exc:
        raise FrontmatterError(f"JSON frontmatter does not parse: {exc}") from exc
    if not isinstance(value, dict):
        raise FrontmatterError("JSON frontmatter is not an object")
    if len(value) > MAX_KEYS:
        raise FrontmatterError(f"frontmatter has more than {MAX_KEYS} keys")
    return value


def parse_yaml_subset(head: str) -> dict[str, Any]:
    """Parse the YAML subset described in the module docstring."""
    fields: dict[str, Any] = {}
    lines = head.split("\n")
    index = 0
    while index < len(lines):
        raw = lines[index]
        index += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            raise FrontmatterError(f"frontmatter line {index}: unexpected indentation")
        key, sep, rest = raw.partition(":")
        key = key.strip()
        if not sep or not key or key[0] in "&*!?[{-|>'\"%@`":
            raise FrontmatterError(f"frontmatter line {index}: not a 'key: value' line")
        rest = rest.strip()
        if rest in ("|", ">", "|-", ">-", "|+", ">+"):
            block, index = _block(lines, index)
            fields[key] = "\n".join(block) if rest[0] == "|" else " ".join(block)
        elif rest == "":
            items, index = _block_list(lines, index)
            fields[key] = items if items is not None else None
        else:
            fields[key] = _scalar_or_flow(rest, index)
        if len(fields) > MAX_KEYS:
            raise FrontmatterError(f"frontmatter has more than {MAX_KEYS} keys")
    return fields


def _block(lines: list[str], index: int) -> tuple[list[str], int]:
    block: list[str] = []
    while index < len(lines) and (not lines[index].strip() or lines[index][0] in " \t"):
        block.append(lines[index].strip())
        index += 1
    while block and not block[-1]:
        block.pop()
    return block, index


def _block_list(lines: list[str], index: int) -> tuple[list[str] | None, int]:
    items: list[str] = []
    while index < len(lines):
        line = lines[index].strip()
        if not line:
            index += 1
            continue
        if not line.startswith("- ") and line != "-":
            break
        value = _scalar_or_flow(line[1:].strip(), index + 1)
        if not isinstance(value, str):
            raise FrontmatterError(f"frontmatter line {index + 1}: nested lists are not read")
        items.append(value)
        index += 1
    return (items or None), index


def _scalar_or_flow(text: str, line: int) -> Any:
    if text[0] in "&*!":
        raise FrontmatterError(f"frontmatter line {line}: anchors, aliases and tags are refused")
    if text.startswith("{"):
        raise FrontmatterError(f"frontmatter line {line}: nested mappings are not read")
    if text.startswith("["):
        if not text.endswith("]"):
            raise FrontmatterError(f"frontmatter line {line}: unclosed list")
        inner = text[1:-1].strip()
        if "[" in inner or "{" in inner:
            raise FrontmatterError(f"frontmatter line {line}: nested lists are not read")
        return [str(_scalar(part.strip(), line)) for part in inner.split(",") if part.strip()]
    return _scalar(text, line)


def _scalar(text: str, line: int) -> Any:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        if text[0] == "'":
            return inner.replace("''", "'")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise FrontmatterError(f"frontmatter line {line}: bad quoted string") from exc
    if text[0] in "'\"":
        raise FrontmatterError(f"frontmatter line {line}: unclosed quote")
    comment = text.find(" #")
    if comment >= 0:
        text = text[:comment].rstrip()
    if text in ("null", "~"):
        return None
    if text in ("true", "false"):
        return text == "true"
    return text
