"""The plugin host: installs plugins and runs their contributions, each one isolated.

A plugin whose ``setup`` raises is left out (its partial registrations discarded); a hook that
raises is logged and skipped; a tool whose name another plugin already took is refused; a
service that fails to start or stop is logged. None of these ever breaks a run. Every event a
plugin emits carries the plugin's id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from oharness.harness.message import Attachment, Message
from oharness.harness.plugin import (
    BackgroundService,
    CompactionContext,
    Contributions,
    HarnessEnvironment,
    PageDescriptor,
    Plugin,
    PluginApi,
    PromptSection,
    ResumeContext,
    RunContext,
    RunStopContext,
    UserMessageContext,
)
from oharness.harness.session import Session
from oharness.harness.tool import Emit, PluginRegistration, RegisteredTool

log = logging.getLogger(__name__)
T = TypeVar("T")
C = TypeVar("C")


@dataclass(frozen=True)
class RunEvent:
    """Something a run reports as it goes (``plugin`` is None for the host's own events)."""

    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)
    plugin: str | None = None


EventSink = Callable[[RunEvent], None]


@dataclass(frozen=True)
class PluginProblem:
    """A plugin failure the host isolated (shown by interfaces, kept for tests)."""

    plugin_id: str
    stage: str
    message: str


@dataclass(frozen=True)
class InstalledPlugin:
    plugin: Plugin
    registration: PluginRegistration
    contributions: Contributions


def _ignore(event: RunEvent) -> None:
    return None


def _start(service: BackgroundService) -> bool:
    service.start()
    return True


def _stop(service: BackgroundService) -> None:
    service.stop()


class PluginHost:
    """Holds the installed plugins and dispatches to them."""

    def __init__(self, environment: HarnessEnvironment) -> None:
        self.environment = environment
        self._installed: list[InstalledPlugin] = []
        self._tools: dict[str, RegisteredTool] = {}
        self.problems: list[PluginProblem] = []
        self._started: list[tuple[str, BackgroundService]] = []

    # ---- installing ------------------------------------------------------------------------

    def install(
        self,
        plugin: Plugin,
        config: Mapping[str, Any] | None = None,
        *,
        trusted: bool = False,
        source: str = "builtin",
    ) -> bool:
        """Set a plugin up; False (and a logged problem) when it could not be installed."""
        plugin_id = getattr(plugin, "id", None)
        if not isinstance(plugin_id, str) or not plugin_id:
            self._problem("?", "install", f"a plugin from {source} has no id; left out")
            return False
        if self.plugin(plugin_id) is not None:
            self._problem(plugin_id, "install", f"plugin id {plugin_id!r} is taken; left out")
            return False
        registration = PluginRegistration(plugin_id, trusted=trusted, source=source)
        api = PluginApi(registration, self.environment, config or {})
        try:
            plugin.setup(api)
        except Exception as exc:
            log.exception("plugin %s failed to set up; left out", plugin_id)
            self._problem(plugin_id, "setup", f"{type(exc).__name__}: {exc}")
            return False
        contributions = api.contributions
        kept = []
        for tool in contributions.tools:
            if tool.name in self._tools:
                owner = self._tools[tool.name].registration.plugin_id
                self._problem(
                    plugin_id, "tool", f"tool {tool.name!r} is already registered by {owner}"
                )
                continue
            self._tools[tool.name] = RegisteredTool(tool, registration)
            kept.append(tool)
        contributions.tools = kept
        self._installed.append(InstalledPlugin(plugin, registration, contributions))
        return True

    def _problem(self, plugin_id: str, stage: str, message: str) -> None:
        log.warning("plugin %s: %s: %s", plugin_id, stage, message)
        self.problems.append(PluginProblem(plugin_id, stage, message))

    # ---- looking things up -----------------------------------------------------------------

    @property
    def installed(self) -> tuple[InstalledPlugin, ...]:
        return tuple(self._installed)

    def plugin(self, plugin_id: str) -> Plugin | None:
        """The installed plugin with this id."""
        return next(
            (p.plugin for p in self._installed if p.registration.plugin_id == plugin_id), None
        )

    def tools(self) -> list[RegisteredTool]:
        """Every tool, in registration order."""
        return list(self._tools.values())

    def tool(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def pages(self) -> list[PageDescriptor]:
        """Every page descriptor (the first plugin to use a page id keeps it)."""
        seen: dict[str, PageDescriptor] = {}
        for installed in self._installed:
            for page in installed.contributions.pages:
                seen.setdefault(page.id, page)
        return list(seen.values())

    # ---- dispatching, each call isolated ---------------------------------------------------

    def _guard(self, plugin_id: str, stage: str, hook: Callable[[C], T], context: C) -> T | None:
        try:
            return hook(context)
        except Exception as exc:
            log.exception("plugin %s failed in %s; the run goes on without it", plugin_id, stage)
            self.problems.append(PluginProblem(plugin_id, stage, f"{type(exc).__name__}: {exc}"))
            return None

    @staticmethod
    def emitter(plugin_id: str | None, sink: EventSink) -> Emit:
        """An ``emit`` that tags events with the plugin's id."""

        def emit(kind: str, data: Mapping[str, Any]) -> None:
            sink(RunEvent(kind, dict(data), plugin_id))

        return emit

    def system_sections(self, session: Session, sink: EventSink = _ignore) -> list[str]:
        """Every plugin's prompt sections for this run, in order."""
        ordered: list[tuple[int, int, str, PromptSection]] = []
        for position, installed in enumerate(self._installed):
            for order, render in installed.contributions.prompt_sections:
                ordered.append((order, position, installed.registration.plugin_id, render))
        sections = []
        for _, _, plugin_id, render in sorted(ordered, key=lambda item: item[:2]):
            context = RunContext(session, self.emitter(plugin_id, sink))
            text = self._guard(plugin_id, "prompt section", render, context)
            if isinstance(text, str) and text.strip():
                sections.append(text.strip())
        return sections

    def user_message(
        self, session: Session, message_id: str, text: str, sink: EventSink = _ignore
    ) -> tuple[tuple[Attachment, ...], dict[str, Any]]:
        """The blocks plugins attach to a user message, and the metadata they record."""
        attachments: list[Attachment] = []
        metadata: dict[str, Any] = {}
        for installed in self._installed:
            plugin_id = installed.registration.plugin_id
            context = UserMessageContext(session, message_id, text, self.emitter(plugin_id, sink))
            for hook in installed.contributions.user_message_hooks:
                block = self._guard(plugin_id, "user message", hook, context)
                if block is None or not block.text:
                    continue
                attachments.append(Attachment(plugin_id, block.kind, block.text, block.metadata))
                metadata.setdefault(plugin_id, {}).update(block.metadata)
        return tuple(attachments), metadata

    def run_start(self, session: Session, sink: EventSink = _ignore) -> None:
        for installed in self._installed:
            plugin_id = installed.registration.plugin_id
            context = RunContext(session, self.emitter(plugin_id, sink))
            for hook in installed.contributions.run_start:
                self._guard(plugin_id, "run start", hook, context)

    def run_stop(
        self,
        session: Session,
        final_text: str,
        added: tuple[Message, ...],
        outcome: str,
        sink: EventSink = _ignore,
    ) -> None:
        for installed in self._installed:
            plugin_id = installed.registration.plugin_id
            emit = self.emitter(plugin_id, sink)
            context = RunStopContext(session, emit, final_text, added, outcome)
            for hook in installed.contributions.run_stop:
                self._guard(plugin_id, "run stop", hook, context)

    def compaction(
        self,
        stage: str,
        session: Session,
        replaced: tuple[Message, ...],
        summary: Message | None,
        reason: str,
        sink: EventSink = _ignore,
    ) -> None:
        """``stage``: ``before`` or ``after``."""
        for installed in self._installed:
            plugin_id = installed.registration.plugin_id
            emit = self.emitter(plugin_id, sink)
            context = CompactionContext(session, emit, replaced, summary, reason)
            hooks = (
                installed.contributions.before_compaction
                if stage == "before"
                else installed.contributions.after_compaction
            )
            for hook in hooks:
                self._guard(plugin_id, f"{stage} compaction", hook, context)

    def session_resume(self, session: Session, sink: EventSink = _ignore) -> None:
        for installed in self._installed:
            plugin_id = installed.registration.plugin_id
            context = ResumeContext(session, self.emitter(plugin_id, sink))
            for hook in installed.contributions.session_resume:
                self._guard(plugin_id, "session resume", hook, context)

    # ---- background services ---------------------------------------------------------------

    def start_services(self) -> None:
        """Start every plugin's background services (a failing one is logged and skipped)."""
        for installed in self._installed:
            plugin_id = installed.registration.plugin_id
            for service in installed.contributions.services:
                if self._guard(plugin_id, "service start", _start, service):
                    self._started.append((plugin_id, service))

    def stop_services(self) -> None:
        """Stop the started services, last started first."""
        while self._started:
            plugin_id, service = self._started.pop()
            self._guard(plugin_id, "service stop", _stop, service)
