"""Running the tool calls of a model's answer, each through the permission rules (spec 09.3)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oharness.harness.message import Message, ToolCall
from oharness.harness.permission import (
    ApprovalRequest,
    Approver,
    PermissionMode,
    PermissionRules,
    decide,
    headless_approver,
)
from oharness.harness.plugin_host import EventSink, PluginHost, RunEvent
from oharness.harness.session import Session
from oharness.harness.tool import RegisteredTool, ToolContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call and what became of it (``permission``: allow, approved, deny, not-approved,
    unknown-tool or bad-arguments)."""

    call: ToolCall
    message: Message
    permission: str

    @property
    def result(self) -> Any:
        """The result as JSON (or text when it was not JSON)."""
        try:
            return json.loads(self.message.text)
        except ValueError:
            return self.message.text


@dataclass(frozen=True)
class RunResult:
    """A run: the final answer, the messages it added, its events and tool calls.

    ``outcome``: ``done`` (a final answer), ``max_steps`` (stopped after too many tool rounds).
    """

    session_id: str
    text: str
    outcome: str
    added: tuple[Message, ...]
    events: tuple[RunEvent, ...]
    tools: tuple[ToolOutcome, ...]

    def events_of(self, kind: str) -> list[RunEvent]:
        return [event for event in self.events if event.kind == kind]


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class ToolRunner:
    """Decides, asks when needed, runs, and turns the result into a tool message."""

    def __init__(
        self,
        host: PluginHost,
        *,
        mode: PermissionMode,
        rules: PermissionRules,
        approver: Approver,
    ) -> None:
        self.host = host
        self.mode = mode
        self.rules = rules
        self.approver = approver

    def run(self, session: Session, call: ToolCall, sink: EventSink) -> ToolOutcome:
        """Run one call; every refusal is a tool result the model can read."""
        sink(RunEvent("tool.call", {"id": call.id, "name": call.name, "arguments": call.arguments}))
        registered = self.host.tool(call.name)
        plugin: str | None = None
        if registered is None:
            names = ", ".join(tool.name for tool in self.host.tools()) or "none"
            result: Mapping[str, Any] | str = _error(
                "unknown_tool", f"there is no tool named {call.name!r}; the tools are: {names}"
            )
            permission = "unknown-tool"
        elif call.arguments is None:
            plugin = registered.registration.plugin_id
            result = _error(
                "invalid_arguments",
                f"the arguments of {call.name} are not a JSON object; call it again with "
                "valid JSON",
            )
            permission = "bad-arguments"
        else:
            plugin = registered.registration.plugin_id
            result, permission = self._checked(session, registered, call, call.arguments, sink)
        is_error = isinstance(result, Mapping) and "error" in result
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        message = Message(
            session.next_message_id(),
            "tool",
            text,
            tool_call_id=call.id,
            tool_name=call.name,
            is_error=is_error,
            metadata={"permission": permission, "plugin": plugin},
            created_at=session.now(),
        )
        sink(
            RunEvent(
                "tool.result",
                {
                    "id": call.id,
                    "name": call.name,
                    "isError": is_error,
                    "permission": permission,
                    "errorCode": _error_code(result) if is_error else None,
                },
            )
        )
        return ToolOutcome(call, message, permission)

    def _checked(
        self,
        session: Session,
        registered: RegisteredTool,
        call: ToolCall,
        arguments: Mapping[str, Any],
        sink: EventSink,
    ) -> tuple[Mapping[str, Any] | str, str]:
        tool = registered.tool
        decision = decide(
            name=tool.name,
            permission=tool.permission,
            mode=self.mode,
            rules=self.rules,
            always_ask=tool.always_ask,
            exempt=registered.exempt,
        )
        if decision.action == "deny":
            return _error("permission_denied", f"{decision.reason}."), "deny"
        permission = "allow"
        if decision.action == "ask":
            request = ApprovalRequest(
                tool.name,
                dict(arguments),
                tool.permission,
                decision.reason,
                session.id,
                registered.registration.plugin_id,
            )
            if not self._approved(request):
                return (
                    _error(
                        "not_approved",
                        f"{tool.name} needs the user's approval ({decision.reason}) and "
                        f"{self._no_answer()}; nothing was changed",
                    ),
                    "not-approved",
                )
            permission = "approved"
        context = ToolContext(
            session, call.id, self.host.emitter(registered.registration.plugin_id, sink)
        )
        try:
            return tool.handler(arguments, context), permission
        except Exception as exc:
            log.exception("tool %s failed", tool.name)
            return _error("tool_failed", f"{tool.name} failed: {type(exc).__name__}: {exc}"), (
                permission
            )

    def _no_answer(self) -> str:
        if self.approver is headless_approver:
            return "it was not given (with nobody to ask, the answer is no)"
        return "the user declined"

    def _approved(self, request: ApprovalRequest) -> bool:
        try:
            return bool(self.approver(request))
        except Exception:  # an approver that cannot ask counts as "no"
            log.exception("the approver failed; %s is not approved", request.tool)
            return False


def _error_code(result: Mapping[str, Any] | str) -> str | None:
    """The ``code`` of a tool's ``{"error": {...}}`` result, for the interface to report."""
    error = result.get("error") if isinstance(result, Mapping) else None
    code = error.get("code") if isinstance(error, Mapping) else None
    return code if isinstance(code, str) else None
