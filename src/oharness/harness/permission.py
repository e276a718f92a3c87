"""Permission modes, user rules and the approver (spec 09.3, 02.3).

Order of decision, first match wins:

1. a ``deny`` rule naming the tool: refused;
2. ``plan`` mode: every ``write`` and ``destructive`` tool refused;
3. an ``ask`` rule naming the tool: ask;
4. a tool marked always-ask (``forget``): ask, in every mode;
5. an ``allow`` rule: allowed;
6. a tool whose registration holds the host's exemption (the memory plugin's ``remember``):
   allowed;
7. the mode: ``read`` tools pass; ``default`` asks for ``write`` and ``destructive``;
   ``acceptEdits`` passes ``write`` and asks for ``destructive``; ``bypassPermissions`` passes all.

Rules are tool-name patterns (``fnmatch``: ``*`` and ``?``), matched case-sensitively.
Asking goes through an :data:`Approver`; headless runs use :func:`headless_approver` (no).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from oharness.errors import ConfigError

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
PERMISSION_MODES: Final[tuple[PermissionMode, ...]] = (
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
)
PermissionClass = Literal["read", "write", "destructive"]
PERMISSION_CLASSES: Final[tuple[PermissionClass, ...]] = ("read", "write", "destructive")
Action = Literal["allow", "ask", "deny"]


def parse_mode(text: str, *, source: str = "--permission-mode") -> PermissionMode:
    """A permission mode from a string, or a clear error."""
    for mode in PERMISSION_MODES:
        if text == mode:
            return mode
    raise ConfigError(
        f"{source}: unknown permission mode {text!r}; use one of {', '.join(PERMISSION_MODES)}",
        key=source,
    )


@dataclass(frozen=True)
class PermissionRules:
    """User rules: tool-name patterns to allow, ask about, or deny."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @staticmethod
    def _any(patterns: Sequence[str], name: str) -> str | None:
        return next((p for p in patterns if fnmatch.fnmatchcase(name, p)), None)

    def match(self, kind: Action, name: str) -> str | None:
        """The first pattern of ``kind`` that names this tool."""
        return self._any({"allow": self.allow, "ask": self.ask, "deny": self.deny}[kind], name)


@dataclass(frozen=True)
class PermissionDecision:
    action: Action
    reason: str


def decide(
    *,
    name: str,
    permission: PermissionClass,
    mode: PermissionMode,
    rules: PermissionRules,
    always_ask: bool = False,
    exempt: bool = False,
) -> PermissionDecision:
    """Whether a tool call runs, is refused, or needs a person's approval."""
    if (pattern := rules.match("deny", name)) is not None:
        return PermissionDecision("deny", f"a deny rule ({pattern!r}) refuses {name}")
    if mode == "plan" and permission != "read":
        return PermissionDecision(
            "deny", f"plan mode refuses {permission} tools like {name}; nothing was changed"
        )
    if (pattern := rules.match("ask", name)) is not None:
        return PermissionDecision("ask", f"an ask rule ({pattern!r}) names {name}")
    if always_ask:
        return PermissionDecision("ask", f"{name} always asks")
    if (pattern := rules.match("allow", name)) is not None:
        return PermissionDecision("allow", f"an allow rule ({pattern!r}) names {name}")
    if exempt or permission == "read" or mode == "bypassPermissions":
        return PermissionDecision("allow", f"{name} may run in {mode} mode")
    if mode == "acceptEdits" and permission == "write":
        return PermissionDecision("allow", f"acceptEdits mode accepts write tools like {name}")
    return PermissionDecision("ask", f"{name} is a {permission} tool")


@dataclass(frozen=True)
class ApprovalRequest:
    """What a person is asked to approve."""

    tool: str
    arguments: Mapping[str, Any]
    permission: PermissionClass
    reason: str
    session_id: str
    plugin: str


#: Asks a person; True approves. CLI prompt, daemon event, or "no" when headless.
Approver = Callable[[ApprovalRequest], bool]


def headless_approver(request: ApprovalRequest) -> bool:
    """Nobody to ask: the answer is no."""
    return False


def rules_from_config(
    raw: Mapping[str, Any], source: str = "config"
) -> tuple[PermissionRules, PermissionMode | None]:
    """``permissions: {allow, ask, deny, defaultMode}`` from the merged config."""
    section = raw.get("permissions", {})
    if not isinstance(section, Mapping):
        raise ConfigError(f"{source}: 'permissions' must be a JSON object", key="permissions")
    lists: dict[str, tuple[str, ...]] = {}
    for kind in ("allow", "ask", "deny"):
        value = section.get(kind, [])
        if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
            raise ConfigError(
                f"{source}: 'permissions.{kind}' must be a list of tool-name patterns",
                key=f"permissions.{kind}",
            )
        lists[kind] = tuple(value)
    mode_text = section.get("defaultMode")
    mode = None
    if mode_text is not None:
        if not isinstance(mode_text, str):
            raise ConfigError(
                f"{source}: 'permissions.defaultMode' must be a string",
                key="permissions.defaultMode",
            )
        mode = parse_mode(mode_text, source="permissions.defaultMode")
    return PermissionRules(lists["allow"], lists["ask"], lists["deny"]), mode
