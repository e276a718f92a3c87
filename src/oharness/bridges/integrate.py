"""``oharness integrate``: our MCP server and hooks in another agent's user configuration.

Pure planning (old text in, new text out) is separate from writing, so a dry run shows exactly
what a real run writes. Only our own entries are ever added or removed: the MCP server named
``oharness`` and hook commands that run ``oharness hook``; every other key stays as it was, and
TOML comments survive (``tomlkit``). JSON has no comments to keep; key order is kept.

Files (contracts as documented late 2026; docs/capture.md names the versions):
- Claude Code: hooks in ``~/.claude/settings.json`` (``hooks.UserPromptSubmit``,
  ``hooks.SessionStart``, and for capture ``hooks.Stop``, ``hooks.PreCompact``,
  ``hooks.SessionEnd``: ``[{"hooks": [{"type": "command", "command", "timeout"}]}]``);
  user-scope MCP servers in ``~/.claude.json`` (``mcpServers.<name>``: ``type``, ``command``,
  ``args``).
- Codex: ``~/.codex/config.toml`` (``[mcp_servers.<name>]`` with ``command`` and ``args``) and
  ``~/.codex/hooks.json`` (the same hook shape as Claude Code's).
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from oharness.errors import UnavailableError, ValidationError
from oharness.fsio import atomic_write

SERVER_NAME: Final = "oharness"
HOOK_EVENTS: Final = (
    ("UserPromptSubmit", "user-prompt-submit"),
    ("SessionStart", "session-start"),
    ("Stop", "stop"),
    ("PreCompact", "pre-compact"),
    ("SessionEnd", "session-end"),
)
HOOK_TIMEOUT_S: Final = 10
#: Codex caps a SessionEnd hook at 3 s and warns at every start about a longer timeout; the
#: capture hook hands the session over and returns well within it.
SHORT_TIMEOUTS_S: Final = {("codex", "SessionEnd"): 3}
AGENTS: Final = ("claude-code", "codex")


@dataclass(frozen=True)
class FileChange:
    """One configuration file before and after."""

    path: Path
    old: str | None  # None: the file does not exist yet
    new: str

    @property
    def changed(self) -> bool:
        return (self.old or "") != self.new and not (self.old is None and self.new == "")

    def diff(self) -> str:
        """A unified diff of the change (empty when nothing changes)."""
        if not self.changed:
            return ""
        return "".join(
            difflib.unified_diff(
                (self.old or "").splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                fromfile=str(self.path) if self.old is not None else "/dev/null",
                tofile=str(self.path),
            )
        )


def _is_ours(hook: Any) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 3 and Path(words[0]).name == "oharness" and words[1] == "hook"


def _hooks_of(group: Any) -> list[Any]:
    if isinstance(group, dict) and isinstance(group.get("hooks"), list):
        return list(group["hooks"])
    return []


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{path} is not valid JSON ({exc}); fix it first") from exc
    if not isinstance(data, dict):
        raise ValidationError(f"{path} does not hold a JSON object; fix it first")
    return data


def _dump_json(data: dict[str, Any], text: str | None = None) -> str:
    """``data`` as JSON, indented as ``text`` (the file it replaces) was, else by 2."""
    indent = 2
    if text is not None:
        line = next((line for line in text.splitlines()[1:] if line.strip()), "")
        indent = (len(line) - len(line.lstrip(" "))) or indent
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def plan_hooks(path: Path, text: str | None, command: str, agent: str, install: bool) -> FileChange:
    """``settings.json`` / ``hooks.json`` with our hook entries added (or removed)."""
    data = _load_json(path, text)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ValidationError(f"{path}: 'hooks' is not an object; fix it first")
    own_empty = "hooks" in data and not hooks  # the person's own: kept as it is
    for event, name in HOOK_EVENTS:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise ValidationError(f"{path}: hooks.{event} is not a list; fix it first")
        ours = {
            "type": "command",
            "command": f"{shlex.quote(command)} hook {agent} {name}",
            "timeout": SHORT_TIMEOUTS_S.get((agent, event), HOOK_TIMEOUT_S),
        }
        found = [hook for group in groups for hook in _hooks_of(group) if _is_ours(hook)]
        if len(found) == 1:  # one the person customised keeps its keys (a longer timeout)
            ours = {**ours, **found[0], "type": "command", "command": ours["command"]}
        if install and found == [ours]:
            continue  # already there as it would be written: left where the person keeps it
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                rest = [hook for hook in group["hooks"] if not _is_ours(hook)]
                if rest or not group["hooks"]:
                    kept.append({**group, "hooks": rest})
            else:
                kept.append(group)
        if install:
            kept.append({"hooks": [ours]})
        if kept or (event in hooks and not found):  # the person's own empty list stays
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if hooks or own_empty:
        data["hooks"] = hooks
    else:
        data.pop("hooks", None)
    return _change(path, text, data)


def _change(path: Path, text: str | None, data: dict[str, Any]) -> FileChange:
    new = _dump_json(data, text) if data or text is not None else ""
    if text is not None and _load_json(path, text) == data:
        new = text  # nothing of ours changed: leave the file byte for byte
    return FileChange(path, text, new)


def plan_claude_mcp(path: Path, text: str | None, command: str, install: bool) -> FileChange:
    """``~/.claude.json`` with the user-scope MCP server added (or removed)."""
    data = _load_json(path, text)
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValidationError(f"{path}: 'mcpServers' is not an object; fix it first")
    known = servers.pop(SERVER_NAME, None)
    if install:
        entry: dict[str, Any] = {"type": "stdio", "command": command, "args": ["mcp"], "env": {}}
        if isinstance(known, dict):  # a customised entry keeps its arguments and environment
            entry = {**known, **{"type": "stdio", "command": command}}
            entry["args"] = kept_arguments(known.get("args"))
        servers[SERVER_NAME] = entry
    if servers or "mcpServers" in data:
        data["mcpServers"] = servers
    return _change(path, text, data)


def plan_codex_config(path: Path, text: str | None, command: str, install: bool) -> FileChange:
    """``~/.codex/config.toml`` with ``[mcp_servers.oharness]`` added (or removed)."""
    try:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError
    except ImportError as exc:
        raise UnavailableError(
            "editing Codex's config.toml needs tomlkit: pip install 'oharness[mcp]'"
        ) from exc
    try:
        document = tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise ValidationError(f"{path} is not valid TOML ({exc}); fix it first") from exc
    servers = document.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise ValidationError(f"{path}: mcp_servers is not a table; fix it first")
    known = servers.get(SERVER_NAME) if servers is not None else None
    if install:
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            document["mcp_servers"] = servers
        inline = isinstance(servers, tomlkit.items.InlineTable) or isinstance(
            known, tomlkit.items.InlineTable
        )
        entry = tomlkit.inline_table() if inline else tomlkit.table()
        if isinstance(known, dict):  # a customised entry keeps its other keys and arguments
            for key, value in known.items():
                if key not in ("command", "args"):
                    entry[key] = value
        entry["command"] = command
        entry["args"] = kept_arguments(known.get("args") if isinstance(known, dict) else None)
        if known is not None:
            del servers[SERVER_NAME]
        servers[SERVER_NAME] = entry
    elif servers is not None and SERVER_NAME in servers:
        del servers[SERVER_NAME]
    elif servers is not None and len(servers) == 0:
        del document["mcp_servers"]
    new = tomlkit.dumps(document)
    if text:  # removing a table leaves its blank separator line: end the file as it ended
        trailing = len(text) - len(text.rstrip("\n"))
        new = new.rstrip("\n") + "\n" * trailing
    return FileChange(path, text, new if (text is not None or new.strip()) else "")


def kept_arguments(known: Any) -> list[str]:
    """The arguments of our MCP entry: ``mcp`` and whatever options the person added to it
    (``--allow-forget``, ``--project PATH``), kept across a re-run."""
    if not isinstance(known, list) or not all(isinstance(item, str) for item in known):
        return ["mcp"]
    extra = [str(item) for item in known if item != "mcp"]
    return ["mcp", *extra]


def codex_hooks_switched_off(text: str) -> str | None:
    """The ``[features]`` key of a Codex ``config.toml`` that switches lifecycle hooks off
    (``hooks``, or its older name ``codex_hooks``), or None. Hooks are on by default in
    current Codex releases; older ones needed ``codex_hooks = true``."""
    import tomllib

    try:
        features = tomllib.loads(text).get("features", {})
    except tomllib.TOMLDecodeError:
        return None
    if not isinstance(features, dict):
        return None
    for key in ("hooks", "codex_hooks"):
        if features.get(key) is False:
            return key
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def plan(agent: str, user_home: Path, command: str, *, install: bool) -> list[FileChange]:
    """Every file change ``integrate`` would make for ``agent``."""
    if agent == "claude-code":
        settings = user_home / ".claude" / "settings.json"
        state = user_home / ".claude.json"
        return [
            plan_hooks(settings, _read(settings), command, "claude-code", install),
            plan_claude_mcp(state, _read(state), command, install),
        ]
    if agent == "codex":
        config = user_home / ".codex" / "config.toml"
        hooks = user_home / ".codex" / "hooks.json"
        return [
            plan_codex_config(config, _read(config), command, install),
            plan_hooks(hooks, _read(hooks), command, "codex", install),
        ]
    raise ValidationError(f"unknown agent {agent!r}: claude-code or codex")


def apply(
    changes: list[FileChange], clock: Callable[[], int] = lambda: time.time_ns() // 10**6
) -> list[Path]:
    """Write the changed files, each backed up next to itself first; returns the backups."""
    backups: list[Path] = []
    for change in changes:
        if not change.changed:
            continue
        current = _read(change.path)
        if current != change.old:
            raise ValidationError(f"{change.path} changed while this ran; run the command again")
        # A settings file linked from a dotfiles folder is written where the link points:
        # replacing the link with a file would cut the user's setup off from it.
        target = Path(os.path.realpath(change.path)) if change.path.is_symlink() else change.path
        if change.old is not None:  # a backup is the user's alone (the file may be 0600)
            backup = change.path.with_name(f"{change.path.name}.oharness-backup-{clock()}")
            atomic_write(backup, change.old.encode("utf-8"), mode=0o600)
            backups.append(backup)
            atomic_write(target, change.new.encode("utf-8"))
        else:  # a file made here is the user's alone, as the agent's own are
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, change.new.encode("utf-8"), mode=0o600)
    return backups
