"""Readers of foreign memory layouts: Claude Code auto memory, Codex memories, Markdown.

Each reader is pure over the files it is given: it returns a :class:`Reading` of drafts and
skips and writes nothing. Mapping choices are documented in docs/integrations.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from oharness.importers.claude_projects import (
    CLAUDE_INDEX,
    INSTRUCTION_FILES,
    ClaudeProject,
    InstructionFile,
    instruction_files,
    read_claude_tree,
)
from oharness.importers.frontmatter import FrontmatterError, split_frontmatter
from oharness.importers.source import (
    Draft,
    Reading,
    Skip,
    TextFile,
    first_line_summary,
    parse_time,
    read_text_file,
    shorten,
    walk_markdown,
)
from oharness.notes.ids import is_valid_id, slugify
from oharness.types import NOTE_TYPES

_INDEX_LINK: Final = re.compile(r"^\s*[-*]\s*\[([^\]]*)\]\(([^)\s]+)\)\s*(?:[—–:-]+\s*(.*))?$")
_SECTION: Final = re.compile(r"^##\s+(.+?)\s*#*\s*$")
_SUMMARY_KEYS: Final = ("summary", "description", "title", "name")
_TAG_KEYS: Final = ("tags", "keywords", "tag")
_CREATED_KEYS: Final = ("createdAt", "created_at", "created", "date")
_UPDATED_KEYS: Final = ("updatedAt", "updated_at", "updated", "modified", "lastModified")
_EMPTY_BODY: Final = "empty body: write the note's text in the file, or leave it out"


def read_markdown(root: Path) -> Reading:
    """Any folder of Markdown files: one note per file, frontmatter YAML, JSON or none."""
    reading = Reading()
    for found in walk_markdown(root, reading):
        draft = _markdown_draft(found, reading)
        if draft is not None:
            reading.drafts.append(draft)
    return reading


def markdown_draft(found: TextFile) -> Draft | Skip:
    """One Markdown file as a draft note, or why it cannot be one (``memory adopt``)."""
    reading = Reading()
    draft = _markdown_draft(found, reading)
    return draft if draft is not None else reading.skips[0]


def _markdown_draft(found: TextFile, reading: Reading, **overrides: Any) -> Draft | None:
    try:
        parsed = split_frontmatter(found.text)
    except FrontmatterError as exc:
        reading.skips.append(Skip(found.relative, str(exc)))
        return None
    fields = parsed.fields
    body = parsed.body.strip("\n")
    if not body.strip():
        reading.skips.append(Skip(found.relative, _EMPTY_BODY))
        return None
    summary = _first_text(fields, _SUMMARY_KEYS) or first_line_summary(body)
    note_type, tags = _type_and_tags(fields)
    created = _first_time(fields, _CREATED_KEYS)
    updated = _first_time(fields, _UPDATED_KEYS) or created or found.mtime_ms
    raw_id = fields.get("id")
    values: dict[str, Any] = {
        "source": found.relative,
        "summary": shorten(summary),
        "body": body,
        "type": note_type,
        "tags": tags,
        "id": raw_id if isinstance(raw_id, str) and is_valid_id(raw_id) else None,
        "created_at": created or updated,
        "updated_at": updated,
    }
    values.update(overrides)
    return Draft(**values)


def _first_text(fields: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = fields.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _first_time(fields: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        found = parse_time(fields.get(key))
        if found is not None:
            return found
    return None


def _type_and_tags(fields: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    tags: list[str] = []
    for key in _TAG_KEYS:
        value = fields.get(key)
        if isinstance(value, str):
            tags.extend(part for part in re.split(r"[,\s]+", value) if part)
        elif isinstance(value, list):
            tags.extend(str(item) for item in value if str(item).strip())
    raw_type = fields.get("type")
    note_type: str | None = None
    if isinstance(raw_type, str) and raw_type.strip():
        lowered = raw_type.strip().lower()
        if lowered in NOTE_TYPES:
            note_type = lowered
        else:
            tags.append(lowered)  # kept as a tag rather than lost
    return note_type, tuple(dict.fromkeys(tags))


# ---- Claude Code -------------------------------------------------------------------------

_INSTRUCTIONS_SKIPPED: Final = (
    "instructions Claude Code reads from this file itself, not a memory: not imported "
    "(add --include-claude-md to import it as a note)"
)


def read_claude_code(root: Path, *, include_instructions: bool = False) -> Reading:
    """Claude Code auto memory at ``root``: every project there, ``MEMORY.md`` and topic files."""
    tree = read_claude_tree(root)
    return read_claude_projects(
        root, tree.projects, instructions=tree.instructions, include=include_instructions
    )


def read_claude_projects(
    root: Path,
    projects: list[ClaudeProject],
    *,
    instructions: list[InstructionFile] | None = None,
    include: bool = False,
) -> Reading:
    """The auto memory of ``projects`` (found under ``root``, which sources are named from).

    ``instructions`` (CLAUDE.md files found beside them) and any CLAUDE.md in a project
    folder are imported only when ``include``, else reported as skipped with the reason.
    """
    reading = Reading()
    base = root.resolve()
    if not projects and not any(item.path.is_relative_to(base) for item in instructions or []):
        reading.skips.append(Skip(".", "no Claude Code memory folder (…/memory/MEMORY.md) here"))
    for item in instructions or []:
        _instruction_file(item, base, include, reading)
    for project in projects:
        folder = project.memory.resolve()
        if project.folder.resolve() != folder:
            for path in instruction_files(project.folder):
                _instruction_file(InstructionFile(path, project.name), base, include, reading)
        _read_claude_folder(folder, base, reading, project.name, include)
    return reading


def _instruction_file(item: InstructionFile, base: Path, include: bool, reading: Reading) -> None:
    """Read a CLAUDE.md file; one outside ``base`` (a project's own) is named by its path."""
    inside = item.path.is_relative_to(base)
    found = read_text_file(item.path, base if inside else item.path.parent, reading)
    if found is None:
        return
    if not inside:
        found = replace(found, relative=str(item.path))
    _instruction_draft(found, item.where, item.user_wide, include, reading)


def _instruction_draft(
    found: TextFile, where: str, user_wide: bool, include: bool, reading: Reading
) -> None:
    if not include:
        reading.skips.append(Skip(found.relative, _INSTRUCTIONS_SKIPPED))
        return
    body = found.text.strip("\n")
    if not body.strip():
        reading.skips.append(Skip(found.relative, _EMPTY_BODY))
        return
    reading.drafts.append(
        Draft(
            source=found.relative,
            summary=shorten(
                f"Claude Code instructions ({found.path.name}, {where}): {first_line_summary(body)}"
            ),
            body=body,
            type="feedback",
            tags=("claude-code", "claude-md"),
            created_at=found.mtime_ms,
            updated_at=found.mtime_ms,
            scope="user" if user_wide else None,
        )
    )


def _read_claude_folder(
    folder: Path, base: Path, reading: Reading, project: str, include_instructions: bool
) -> None:
    hooks: dict[str, str] = {}
    index_file = folder / CLAUDE_INDEX
    if index_file.exists():
        index = read_text_file(index_file, base, reading)
        if index is not None:
            leftover = _read_index(index, folder, base, hooks, reading)
            if leftover.strip():
                reading.drafts.append(
                    Draft(
                        source=index.relative,
                        summary=shorten(f"Claude Code memory notes of {project}"),
                        body=leftover.strip("\n"),
                        type="project",
                        tags=("claude-code", slugify(project)),
                        created_at=index.mtime_ms,
                        updated_at=index.mtime_ms,
                    )
                )
    for found in walk_markdown(folder, reading, base):
        if found.path.parent == folder and found.path.name == CLAUDE_INDEX:
            continue
        if found.path.name in INSTRUCTION_FILES:
            _instruction_draft(found, project, False, include_instructions, reading)
            continue
        _claude_topic(found, folder, base, hooks, reading)


def _read_index(
    index: TextFile, folder: Path, base: Path, hooks: dict[str, str], reading: Reading
) -> str:
    """Collect the index's one-line hooks per topic file; return its lines that are not links."""
    leftover: list[str] = []
    for line in index.text.split("\n"):
        match = _INDEX_LINK.match(line)
        if match is None:
            if not line.startswith("# ") or leftover:
                leftover.append(line)
            continue
        title, target, hook = match.group(1), match.group(2), match.group(3) or ""
        if "://" in target:
            leftover.append(line)
            continue
        hooks[target] = (hook or title).strip()
        if not (folder / target).exists():
            reading.skips.append(
                Skip(
                    _relative(folder / target, base), "listed in MEMORY.md but the file is missing"
                )
            )
    return "\n".join(leftover)


def _claude_topic(
    found: TextFile, folder: Path, base: Path, hooks: dict[str, str], reading: Reading
) -> None:
    relative_to_folder = found.path.relative_to(folder).as_posix()
    stem = found.path.stem
    draft = _markdown_draft(found, reading, id=_claude_id(stem))
    if draft is None:
        return
    fields = split_frontmatter(found.text).fields
    name = _first_text(fields, ("name",))
    summary = _first_text(fields, ("description",)) or hooks.get(relative_to_folder, "")
    summary = summary or name or draft.summary
    if name and _plain(name) != _plain(draft.id or stem) and _plain(name) not in _plain(summary):
        # The title leads the summary, where search and recall both read it: a key term
        # only in the title ("缓存失效策略" beside "Cache policy") still names the note.
        summary = f"{' '.join(name.split())}: {summary}"
    tags = tuple(dict.fromkeys((*draft.tags, "claude-code")))
    reading.drafts.append(
        Draft(
            source=draft.source,
            summary=shorten(summary),
            body=_kept_in_body(draft.body, name, summary, draft.id or stem),
            type=draft.type,
            tags=tags,
            id=draft.id,
            created_at=draft.created_at,
            updated_at=draft.updated_at,
        )
    )


def _kept_in_body(body: str, name: str, summary: str, note_id: str) -> str:
    """``body`` with what the note would otherwise lose put on top: the title (``name``)
    unless the id, summary or body already holds it, and a summary too long to keep whole."""
    lead: list[str] = []
    if name and _plain(name) != _plain(note_id) and _plain(name) not in _plain(summary + body):
        lead.append(f"# {' '.join(name.split())}")
    if shorten(summary) != " ".join(summary.split()):
        lead.append(summary.strip())
    return "\n\n".join([*lead, body]) if lead else body


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[\s_-]+", " ", text.casefold()).split())


def _relative(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)


def _claude_id(stem: str) -> str | None:
    candidate = stem if is_valid_id(stem) else slugify(stem)
    return candidate if is_valid_id(candidate) else None


# ---- Codex -------------------------------------------------------------------------------


def read_codex(root: Path) -> Reading:
    """Codex memories (``~/.codex/memories/``): one note per ``##`` section of each file."""
    folder = root / "memories" if (root / "memories").is_dir() else root
    reading = Reading()
    for found in walk_markdown(folder, reading, root):
        _codex_file(found, reading)
    return reading


def _codex_file(found: TextFile, reading: Reading) -> None:
    source = found.relative
    try:
        parsed = split_frontmatter(found.text)
    except FrontmatterError as exc:
        reading.skips.append(Skip(source, str(exc)))
        return
    sections = _sections(parsed.body)
    stem_tag = slugify(found.path.stem)
    for heading, text in sections:
        body = text.strip("\n")
        if not body.strip():
            continue
        reading.drafts.append(
            Draft(
                source=f"{source}#{slugify(heading)}" if heading else source,
                summary=shorten(heading or first_line_summary(body)),
                body=body,
                tags=("codex", stem_tag),
                created_at=found.mtime_ms,
                updated_at=found.mtime_ms,
                scope="user",
            )
        )
    if not any(text.strip() for _, text in sections):
        reading.skips.append(Skip(source, _EMPTY_BODY))


def _sections(body: str) -> list[tuple[str, str]]:
    """Split on ``##`` headings; text before the first heading is its own section."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in body.split("\n"):
        match = _SECTION.match(line)
        if match:
            sections.append((match.group(1), []))
        else:
            sections[-1][1].append(line)
    return [(heading, "\n".join(lines)) for heading, lines in sections]


READERS: Final[dict[str, Callable[[Path], Reading]]] = {
    "claude-code": read_claude_code,
    "codex": read_codex,
    "markdown": read_markdown,
}
