"""The harness: plugins, sessions, permissions and a model, in one agent loop (spec 09).

:func:`create_harness` reads ``plugins.json``, installs the built-in memory plugin (unless
switched off), the embedder's plugins and the listed entry-point plugins, and starts their
background services. :meth:`Harness.send` runs one user message to a final answer:

1. run-start hooks; user-message hooks attach their blocks (recall) beside the user's words;
2. the system prompt is built once for the run (base prompt + every plugin's sections);
3. the model answers; each tool call goes through the permission rules (and the approver);
   repeat until an answer without tool calls, or ``maxSteps`` rounds;
4. run-stop hooks. Compaction happens before a model call when the conversation has grown past
   ``harness.compactAtChars``, or on demand with :meth:`Harness.compact`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from oharness.errors import ConflictError, StorageError
from oharness.harness.compaction import SUMMARY_PREFIX, compaction_cut, summarise, summary_metadata
from oharness.harness.config import HarnessConfig, harness_config
from oharness.harness.memory_plugin import MEMORY_PLUGIN_ID, MemoryPlugin, MemoryPluginOptions
from oharness.harness.message import Message, transcript_chars
from oharness.harness.model import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT_S,
    CancelToken,
    ModelError,
    ModelRequest,
    ToolSpec,
)
from oharness.harness.permission import Approver, PermissionMode, headless_approver
from oharness.harness.plugin import HarnessEnvironment, PageDescriptor, Plugin
from oharness.harness.plugin_config import (
    EntryPointSource,
    PluginsFile,
    installed_entry_points,
    instantiate,
    read_plugins_file,
)
from oharness.harness.plugin_host import EventSink, PluginHost, PluginProblem, RunEvent
from oharness.harness.providers import Models
from oharness.harness.session import Session, new_session_id
from oharness.harness.tool_runner import RunResult, ToolOutcome, ToolRunner
from oharness.harness.transcript import SessionHeader, TranscriptStore
from oharness.memory.memory_service import MemoryService
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.notes.ids import random_hex
from oharness.types import Clock, HexSource

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are an AI agent working with a person in their project, from a terminal. Answer "
    "plainly and briefly; use the tools you have when they help."
)
_SESSION_ID_ATTEMPTS = 8


@dataclass(frozen=True)
class HarnessOptions:
    """What a harness is made of. ``permission_mode`` None: config's ``defaultMode``."""

    workspace: Workspace
    models: Models
    permission_mode: PermissionMode | None = None
    approver: Approver = headless_approver
    plugins: Sequence[Plugin] = ()
    trusted_plugins: Collection[str] = ()
    entry_points: EntryPointSource | None = installed_entry_points
    memory: MemoryPluginOptions = field(default_factory=MemoryPluginOptions)
    clock: Clock = wall_clock_ms
    hex_source: HexSource = random_hex
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    keep_turns: int = 2
    model_timeout_s: float = DEFAULT_TIMEOUT_S
    max_tokens: int = DEFAULT_MAX_TOKENS


@dataclass(frozen=True)
class CompactionResult:
    replaced: tuple[Message, ...]
    summary: Message


def _ignore(event: RunEvent) -> None:
    return None


def _sink(events: list[RunEvent], on_event: Callable[[RunEvent], None] | None) -> EventSink:
    def sink(event: RunEvent) -> None:
        events.append(event)
        if on_event is not None:
            try:
                on_event(event)
            except Exception:  # a display problem never breaks a run
                log.exception("an event listener failed")

    return sink


class Harness:
    """Plugins, sessions, permissions and a model. Create with :func:`create_harness`."""

    def __init__(
        self, options: HarnessOptions, host: PluginHost, config: HarnessConfig | None = None
    ) -> None:
        config = config or harness_config(options.workspace.settings)
        self.options = options
        self.host = host
        self.workspace = options.workspace
        self.models = options.models
        self.mode: PermissionMode = options.permission_mode or config.default_mode
        self.rules = config.rules
        self.compact_at_chars = config.compact_at_chars
        self.max_steps = config.max_steps
        self.transcripts = TranscriptStore(self.workspace.home.sessions_dir)
        self._closed = False

    # ---- what embedders see ----------------------------------------------------------------

    @property
    def memory(self) -> MemoryService | None:
        """The memory of this project (project and user scopes); None when the plugin is off."""
        plugin = self.host.plugin(MEMORY_PLUGIN_ID)
        return plugin.service if isinstance(plugin, MemoryPlugin) else None

    @property
    def memory_user_service(self) -> MemoryService | None:
        """The user scope alone; None when the plugin is off (or the home is unusable)."""
        plugin = self.host.plugin(MEMORY_PLUGIN_ID)
        return plugin.user_service if isinstance(plugin, MemoryPlugin) else None

    @property
    def project_id(self) -> str | None:
        project = self.workspace.project
        return project.identity.id if project is not None and project.identity else None

    @property
    def problems(self) -> list[PluginProblem]:
        return list(self.host.problems)

    def pages(self) -> list[PageDescriptor]:
        return self.host.pages()

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return tuple(registered.tool.spec() for registered in self.host.tools())

    def system_prompt(self, session: Session, sink: EventSink = _ignore) -> str:
        """The base prompt and every plugin's sections, rendered now."""
        parts = [self.options.system_prompt.strip(), *self.host.system_sections(session, sink)]
        return "\n\n".join(part for part in parts if part)

    # ---- sessions --------------------------------------------------------------------------

    def new_session(self, *, subagent: bool = False, parent: Session | None = None) -> Session:
        """Start a session with a transcript (subagents: no recall, no extraction)."""
        attempts = 0
        while True:
            header = SessionHeader(
                id=new_session_id(self.options.clock, self.options.hex_source),
                project_id=self.project_id,
                created_at=self.options.clock(),
                subagent=subagent or parent is not None,
                parent_id=parent.id if parent is not None else None,
            )
            try:
                path = self.transcripts.create(header)
            except ConflictError:
                attempts += 1
                if attempts >= _SESSION_ID_ATTEMPTS:
                    raise
                continue
            except StorageError as exc:  # an unusable home: chat on, without a transcript
                log.warning("%s; this session is not saved and cannot be resumed", exc.message)
                return Session(header, clock=self.options.clock)
            return Session(header, clock=self.options.clock, store=self.transcripts, path=path)

    def resume_session(
        self, session_id: str, *, on_event: Callable[[RunEvent], None] | None = None
    ) -> Session:
        """Reload a session from its transcript; plugins rebuild their state from it."""
        loaded = self.transcripts.load(self.transcripts.find(session_id, self.project_id))
        session = Session.from_transcript(loaded, clock=self.options.clock, store=self.transcripts)
        self.host.session_resume(session, _sink([], on_event))
        return session

    # ---- a run -----------------------------------------------------------------------------

    def send(
        self,
        session: Session,
        text: str,
        *,
        approver: Approver | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
        cancel: CancelToken | None = None,
    ) -> RunResult:
        """Answer one user message (raises :class:`ModelError` when the model fails)."""
        events: list[RunEvent] = []
        sink = _sink(events, on_event)
        runner = ToolRunner(
            self.host, mode=self.mode, rules=self.rules, approver=approver or self.options.approver
        )
        added: list[Message] = []
        outcomes: list[ToolOutcome] = []
        final, outcome = "", "error"
        self.host.run_start(session, sink)
        try:
            message_id = session.next_message_id()
            attachments, metadata = self.host.user_message(session, message_id, text, sink)
            user = Message(
                message_id, "user", text, attachments, metadata=metadata, created_at=session.now()
            )
            added.append(session.append(user))
            final, outcome = self._steps(session, runner, sink, cancel, added, outcomes)
        except ModelError as exc:
            outcome = "cancelled" if exc.code == "cancelled" else "error"
            raise
        except KeyboardInterrupt:
            outcome = "cancelled"
            raise
        finally:
            self.host.run_stop(session, final, tuple(added), outcome, sink)
        return RunResult(session.id, final, outcome, tuple(added), tuple(events), tuple(outcomes))

    def _steps(
        self,
        session: Session,
        runner: ToolRunner,
        sink: EventSink,
        cancel: CancelToken | None,
        added: list[Message],
        outcomes: list[ToolOutcome],
    ) -> tuple[str, str]:
        """Model answers and tool rounds until a final answer: ``(text, outcome)``."""
        system = self.system_prompt(session, sink)  # once per run: stable within the run
        final = ""
        for _ in range(self.max_steps):
            self._compact_if_large(session, sink, cancel)
            reply = self.models.main.complete(
                ModelRequest(
                    system=system,
                    messages=session.messages,
                    tools=self.tool_specs(),
                    max_tokens=self.options.max_tokens,
                    timeout_s=self.options.model_timeout_s,
                ),
                cancel=cancel,
            )
            assistant = Message(
                session.next_message_id(),
                "assistant",
                reply.text,
                tool_calls=reply.tool_calls,
                metadata={"model": self.models.main.name, "stopReason": reply.stop_reason},
                created_at=session.now(),
            )
            added.append(session.append(assistant))
            final = reply.text
            if not reply.tool_calls:
                return final, "done"
            for call in reply.tool_calls:
                tool_outcome = runner.run(session, call, sink)
                outcomes.append(tool_outcome)
                added.append(session.append(tool_outcome.message))
        return final, "max_steps"

    # ---- compaction ------------------------------------------------------------------------

    def _compact_if_large(
        self, session: Session, sink: EventSink, cancel: CancelToken | None
    ) -> None:
        if transcript_chars(list(session.messages)) <= self.compact_at_chars:
            return
        try:
            self._compact(session, "auto", sink, cancel)
        except ModelError as exc:
            if exc.code == "cancelled":
                raise
            log.warning("compaction failed; the conversation is sent whole: %s", exc.message)

    def compact(
        self,
        session: Session,
        *,
        on_event: Callable[[RunEvent], None] | None = None,
        cancel: CancelToken | None = None,
    ) -> CompactionResult | None:
        """Summarise all but the last few turns; None when there is too little to compact."""
        return self._compact(session, "manual", _sink([], on_event), cancel)

    def _compact(
        self, session: Session, reason: str, sink: EventSink, cancel: CancelToken | None
    ) -> CompactionResult | None:
        messages = session.messages
        cut = compaction_cut(messages, self.options.keep_turns)
        if cut == 0:
            return None
        replaced = messages[:cut]
        self.host.compaction("before", session, replaced, None, reason, sink)
        model = self.models.summariser
        text = summarise(
            model,
            replaced,
            request_id=session.next_message_id(),
            timeout_s=self.options.model_timeout_s,
            cancel=cancel,
        )
        summary = Message(
            session.next_message_id(),
            "user",
            SUMMARY_PREFIX + text,
            metadata=summary_metadata(replaced, reason, model.name),
            created_at=session.now(),
        )
        session.compact(list(replaced), summary, reason)
        sink(RunEvent("compaction", {"reason": reason, "replaced": len(replaced)}))
        self.host.compaction("after", session, replaced, summary, reason, sink)
        return CompactionResult(replaced, summary)

    # ---- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop background services and save derived state (once)."""
        if self._closed:
            return
        self._closed = True
        self.host.stop_services()
        self.workspace.close()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _install_entry_points(host: PluginHost, plugins: PluginsFile, source: EntryPointSource) -> None:
    try:
        found = list(source())
    except Exception:
        log.exception("could not list the installed oharness.plugins entry points")
        return
    for entry_point in found:
        entry = plugins.entry(entry_point.name)
        if entry is None or not entry.enabled or host.plugin(entry_point.name) is not None:
            continue
        where = f"entry point {entry_point.name}"
        try:
            plugin = instantiate(entry_point.load(), entry.config, entry_point.name)
        except Exception as exc:
            log.exception("plugin %s could not be loaded", entry_point.name)
            host.problems.append(PluginProblem(entry_point.name, "load", f"{exc}"))
            continue
        if plugin.id != entry_point.name:
            host.problems.append(
                PluginProblem(entry_point.name, "load", f"{where} gave plugin {plugin.id!r}")
            )
            continue
        host.install(plugin, entry.config, trusted=False, source=where)


def create_harness(options: HarnessOptions) -> Harness:
    """Read ``plugins.json``, install plugins, start their services."""
    workspace = options.workspace
    config = harness_config(workspace.settings)
    plugins = read_plugins_file(workspace.home.plugins_file)
    environment = HarnessEnvironment(
        workspace.home, workspace.settings, workspace, options.clock, options.models
    )
    host = PluginHost(environment)
    if plugins.enabled(MEMORY_PLUGIN_ID, default=True):
        host.install(MemoryPlugin(options.memory), plugins.config(MEMORY_PLUGIN_ID), trusted=True)
    for plugin in options.plugins:
        if plugins.enabled(plugin.id, default=True):
            trusted = plugin.id in options.trusted_plugins
            host.install(plugin, plugins.config(plugin.id), trusted=trusted, source="embedder")
    if options.entry_points is not None:
        _install_entry_points(host, plugins, options.entry_points)
    harness = Harness(options, host, config)
    host.start_services()
    return harness
