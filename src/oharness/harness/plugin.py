"""The public plugin API (spec 09.1): what a plugin is and what it can register.

A plugin has an ``id`` and a ``setup(api)`` method. Through the :class:`PluginApi` the host
hands it, it registers tools, system-prompt sections, user-message hooks (which may attach a
block to the message), lifecycle hooks (run start and stop, before and after compaction, session
resume), page descriptors and background services. The built-in memory plugin uses exactly
this API; nothing reaches the runtime through another door.

Every hook runs isolated: an exception is logged and the run goes on without that plugin's
contribution.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from oharness.harness.message import Message
from oharness.harness.providers import Models
from oharness.harness.session import Session
from oharness.harness.tool import Emit, PluginRegistration, Tool
from oharness.memory.workspace import Workspace
from oharness.project.paths import HomeLayout
from oharness.settings import Settings
from oharness.types import Clock


@dataclass(frozen=True)
class HarnessEnvironment:
    """Where plugins run: the home, the settings, the project workspace, the clock, the models."""

    home: HomeLayout
    settings: Settings
    workspace: Workspace
    clock: Clock
    models: Models | None = None


@dataclass(frozen=True)
class RunContext:
    """A run: one user message answered (with any tool calls in between)."""

    session: Session
    emit: Emit


@dataclass(frozen=True)
class UserMessageContext:
    """A user message about to be sent; ``message_id`` is the id it will have."""

    session: Session
    message_id: str
    text: str
    emit: Emit


@dataclass(frozen=True)
class RunStopContext:
    """A run that ended: its final text and the messages it added."""

    session: Session
    emit: Emit
    final_text: str
    added: tuple[Message, ...]
    outcome: str


@dataclass(frozen=True)
class CompactionContext:
    """Older messages replaced by a summary (``summary`` is None before the replacement)."""

    session: Session
    emit: Emit
    replaced: tuple[Message, ...]
    summary: Message | None
    reason: str


@dataclass(frozen=True)
class ResumeContext:
    """A session reloaded from its transcript."""

    session: Session
    emit: Emit


@dataclass(frozen=True)
class MessageBlock:
    """What a user-message hook attaches: a block beside the user's words, and its metadata.

    ``metadata`` is recorded on the message under the plugin's id (``metadata[plugin_id]``)
    and on the attachment itself, so it survives in the transcript.
    """

    kind: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PageSection:
    """One section of a page: the data it shows and the actions it offers."""

    id: str
    title: str
    data: str
    actions: tuple[str, ...] = ()


@dataclass(frozen=True)
class PageDescriptor:
    """A page the host renders with one of its own renderers (no plugin front-end code)."""

    id: str
    title: str
    renderer: str
    sections: tuple[PageSection, ...] = ()


class BackgroundService(Protocol):
    """Started when the harness is created, stopped when it closes."""

    @property
    def name(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


PromptSection = Callable[[RunContext], str | None]
UserMessageHook = Callable[[UserMessageContext], MessageBlock | None]
RunStartHook = Callable[[RunContext], None]
RunStopHook = Callable[[RunStopContext], None]
CompactionHook = Callable[[CompactionContext], None]
ResumeHook = Callable[[ResumeContext], None]


@dataclass
class Contributions:
    """Everything one plugin registered."""

    tools: list[Tool] = field(default_factory=list)
    prompt_sections: list[tuple[int, PromptSection]] = field(default_factory=list)
    user_message_hooks: list[UserMessageHook] = field(default_factory=list)
    run_start: list[RunStartHook] = field(default_factory=list)
    run_stop: list[RunStopHook] = field(default_factory=list)
    before_compaction: list[CompactionHook] = field(default_factory=list)
    after_compaction: list[CompactionHook] = field(default_factory=list)
    session_resume: list[ResumeHook] = field(default_factory=list)
    pages: list[PageDescriptor] = field(default_factory=list)
    services: list[BackgroundService] = field(default_factory=list)


class PluginApi:
    """The door through which a plugin registers (one per installed plugin)."""

    def __init__(
        self,
        registration: PluginRegistration,
        environment: HarnessEnvironment,
        config: Mapping[str, Any],
    ) -> None:
        self.registration = registration
        self.environment = environment
        self.config = dict(config)
        self.contributions = Contributions()

    @property
    def plugin_id(self) -> str:
        return self.registration.plugin_id

    def add_tool(self, tool: Tool) -> None:
        """Offer a tool to the model (names are unique across plugins)."""
        self.contributions.tools.append(tool)

    def add_prompt_section(self, render: PromptSection, *, order: int = 100) -> None:
        """Add a system-prompt section, rendered at the start of every run (lower order first)."""
        self.contributions.prompt_sections.append((order, render))

    def add_user_message_hook(self, hook: UserMessageHook) -> None:
        """See each user message before it is sent; may attach a block."""
        self.contributions.user_message_hooks.append(hook)

    def on_run_start(self, hook: RunStartHook) -> None:
        self.contributions.run_start.append(hook)

    def on_run_stop(self, hook: RunStopHook) -> None:
        self.contributions.run_stop.append(hook)

    def on_before_compaction(self, hook: CompactionHook) -> None:
        self.contributions.before_compaction.append(hook)

    def on_after_compaction(self, hook: CompactionHook) -> None:
        self.contributions.after_compaction.append(hook)

    def on_session_resume(self, hook: ResumeHook) -> None:
        self.contributions.session_resume.append(hook)

    def add_page(self, page: PageDescriptor) -> None:
        """Describe a page for the host to render."""
        self.contributions.pages.append(page)

    def add_service(self, service: BackgroundService) -> None:
        """A background service started and stopped with the harness."""
        self.contributions.services.append(service)


class Plugin(Protocol):
    """An architecture plugin."""

    @property
    def id(self) -> str: ...

    def setup(self, api: PluginApi) -> None: ...


#: Builds a plugin from its ``plugins.json`` config (what an entry point names).
PluginFactory = Callable[[Mapping[str, Any]], Plugin]
