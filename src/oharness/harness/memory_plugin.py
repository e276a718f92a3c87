"""Memory as a built-in plugin (spec 09.1, 02.3, 03.2), through the public plugin API only.

What it registers:

- a system-prompt section: the Memory index, rendered at the start of every run;
- a user-message hook: recall, attached as a ``recalled-memory`` block beside the user's words
  and recorded in the message metadata (``metadata["memory"]["recalled"]``); a note is not
  attached again while a message carrying it is in the conversation — the carried ids are read
  back from message metadata when a session is resumed or first seen after a restart, and
  compaction frees the ids of the messages it summarised; subagent sessions never recall;
- the tools ``remember`` (write, exempt from asking: this registration is trusted by the host),
  ``memory`` (read) and ``forget`` (destructive, always asks);
- run-stop announcements (``memory.saved``), the Memory page descriptor, and the background
  syncer (:class:`~oharness.harness.memory_sync.MemorySync`), and background consolidation
  (:class:`~oharness.harness.consolidation.ConsolidationService`, spec 05.3) when a model is set;
- automatic extraction when ``memory.autoExtract`` switches it on
  (:class:`~oharness.harness.extraction_trigger.ExtractionTrigger`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from oharness.errors import UnavailableError
from oharness.harness.agent_memory import RECALLED_KIND, AgentMemory, recall_metadata
from oharness.harness.consolidation import ConsolidationService
from oharness.harness.extraction_trigger import ExtractionTrigger, trigger_for
from oharness.harness.memory_sync import MemorySync
from oharness.harness.plugin import (
    CompactionContext,
    MessageBlock,
    PageDescriptor,
    PageSection,
    PluginApi,
    ResumeContext,
    RunContext,
    RunStopContext,
    UserMessageContext,
)
from oharness.harness.session import Session
from oharness.harness.tool import Tool, ToolContext, ToolHandler
from oharness.memory.memory_service import MemoryService, ScopeHandle
from oharness.memory.scope_recall import MemoryRecall
from oharness.memory.tools import FORGET, MEMORY, REMEMBER, call_tool
from oharness.memory.usage import UsageLog
from oharness.memory.workspace import Workspace
from oharness.sync.coordinator import SyncCoordinator
from oharness.types import Clock, Scope

MEMORY_PLUGIN_ID: Final = "memory"

MEMORY_PAGE: Final = PageDescriptor(
    id="memory",
    title="Memory",
    renderer="memory",
    sections=(
        PageSection("notes", "Notes", "memory.notes", ("remember", "edit", "forget")),
        PageSection("sync", "Cloud sync", "memory.sync", ("sync-now", "sync-on", "sync-off")),
        PageSection("conflicts", "Conflicts", "memory.conflicts", ("resolve",)),
        PageSection("tidy", "To tidy up", "memory.review", ("merge", "dismiss")),
        PageSection("backups", "Backups", "memory.backups", ("restore",)),
        PageSection("graph", "Graph", "memory.graph", ()),
    ),
)


@dataclass(frozen=True)
class MemoryPluginOptions:
    """How the host wires the plugin: the sync token and coordinator, or no background sync."""

    sync_token: str | None = None
    sync_coordinator: SyncCoordinator | None = None
    background_sync: bool = True
    background_consolidation: bool = True


def user_scope_service(workspace: Workspace, clock: Clock) -> MemoryService | None:
    """A service over the user scope alone (None when the home cannot hold user notes)."""
    service = workspace.service
    if "user" not in service.available_scopes():
        return None
    store, key = service.store("user"), service.scope_key("user")
    try:
        backups = service.backups()
    except UnavailableError:
        backups = None
    home = workspace.home
    recall = MemoryRecall(
        {"user": store},
        workspace.settings.memory.recall,
        scope_keys={"user": key},
        clock=clock,
        cache_dir=home.cache_dir,
        usage=UsageLog(home.usage_dir, clock=clock),
    )
    return MemoryService(
        {"user": ScopeHandle(store, key)},
        backups=backups,
        clock=clock,
        max_note_bytes=workspace.settings.memory.max_note_bytes,
        recall=recall,
    )


def _note_ref(result: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": result.get("id"), "scope": result.get("scope")}


class MemoryPlugin:
    """The ``memory`` plugin."""

    id = MEMORY_PLUGIN_ID

    def __init__(self, options: MemoryPluginOptions | None = None) -> None:
        self.config: dict[str, Any] = {}
        self.options = options or MemoryPluginOptions()
        self.service: MemoryService | None = None
        self.user_service: MemoryService | None = None
        self.sync: MemorySync | None = None
        self.consolidation: ConsolidationService | None = None
        self.extraction: ExtractionTrigger | None = None
        self._index_chars = 4000
        self._sessions: dict[str, AgentMemory] = {}
        self._saved: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def setup(self, api: PluginApi) -> None:
        """Register everything memory adds to a harness."""
        environment = api.environment
        workspace = environment.workspace
        self.config = dict(api.config)
        self.service = workspace.service
        self.user_service = user_scope_service(workspace, environment.clock)
        self._index_chars = environment.settings.memory.index_chars
        api.add_prompt_section(self._index_section, order=50)
        api.add_user_message_hook(self._recall)
        for tool in self._tools():
            api.add_tool(tool)
        api.on_run_start(self._run_started)
        api.on_run_stop(self._run_stopped)
        api.on_session_resume(self._resumed)
        api.on_after_compaction(self._compacted)
        api.add_page(MEMORY_PAGE)
        if self.options.background_sync:
            self.sync = MemorySync(
                workspace,
                clock=environment.clock,
                token=self.options.sync_token,
                coordinator=self.options.sync_coordinator,
            )
            api.add_service(self.sync)
        if self.options.background_consolidation and environment.models is not None:
            model, token = environment.models.summariser, self.options.sync_token
            self.consolidation = ConsolidationService(
                workspace, model, clock=environment.clock, token=token
            )
            api.add_service(self.consolidation)
        # Installed after the syncer, so closing waits for a pass before sync stops.
        self.extraction = trigger_for(self.service, environment, self._extracted)
        self.extraction.install(api)

    # ---- per-session recall state ------------------------------------------------------------

    def _service(self) -> MemoryService:
        if self.service is None:
            raise UnavailableError("the memory plugin is not set up")
        return self.service

    @staticmethod
    def _carriers(session: Session) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for message in session.messages:
            metadata = message.metadata.get(MEMORY_PLUGIN_ID)
            if isinstance(metadata, Mapping):
                yield message.id, metadata

    def memory_for(self, session: Session) -> AgentMemory:
        """This session's view of the memory (rebuilt from its transcript when first seen)."""
        with self._lock:
            memory = self._sessions.get(session.id)
            if memory is None:
                memory = AgentMemory(self._service(), index_chars=self._index_chars)
                memory.reload(self._carriers(session))
                self._sessions[session.id] = memory
            return memory

    # ---- hooks -------------------------------------------------------------------------------

    def _index_section(self, context: RunContext) -> str:
        return self.memory_for(context.session).system_section()

    def _recall(self, context: UserMessageContext) -> MessageBlock | None:
        if self.sync is not None:
            self.sync.touched()
        if context.session.subagent:
            return None
        memory = self.memory_for(context.session)
        outcome = memory.recall(context.text, message_id=context.message_id)
        if not outcome.block:
            return None
        context.emit(
            "memory.recalled",
            {
                "count": len(outcome.attached),
                "notes": [note.to_dict() for note in outcome.attached],
            },
        )
        return MessageBlock(RECALLED_KIND, outcome.block, recall_metadata(outcome))

    def _resumed(self, context: ResumeContext) -> None:
        with self._lock:
            self._sessions.pop(context.session.id, None)
        self.memory_for(context.session)

    def _compacted(self, context: CompactionContext) -> None:
        freed = self.memory_for(context.session).release(m.id for m in context.replaced)
        if freed:
            context.emit("memory.released", {"notes": sorted(f"{s}:{i}" for s, i in freed)})

    def _run_started(self, context: RunContext) -> None:
        with self._lock:
            self._saved[context.session.id] = []

    def _run_stopped(self, context: RunStopContext) -> None:
        with self._lock:
            saved = self._saved.pop(context.session.id, [])
        if saved:
            context.emit("memory.saved", {"count": len(saved), "notes": saved})
        service = self.service
        if service is not None and service.recall is not None:
            service.recall.flush_cache()

    def _extracted(self, scope: Scope) -> None:
        if self.sync is not None:
            self.sync.wrote(scope)

    # ---- tools -------------------------------------------------------------------------------

    def _tools(self) -> list[Tool]:
        def spec(definition: Mapping[str, Any]) -> tuple[str, str, Mapping[str, Any]]:
            return definition["name"], definition["description"], definition["input_schema"]

        return [
            Tool(
                *spec(REMEMBER),
                self._handler("remember"),
                permission="write",
                exempt_from_asking=True,
            ),
            Tool(*spec(MEMORY), self._handler("memory"), permission="read"),
            Tool(
                *spec(FORGET),
                self._handler("forget"),
                permission="destructive",
                always_ask=True,
            ),
        ]

    def _handler(self, name: str) -> ToolHandler:
        def run(arguments: Mapping[str, Any], context: ToolContext) -> Mapping[str, Any]:
            result = call_tool(self._service(), name, arguments)
            if "error" in result or name == "memory":
                return result
            if name == "remember" and not result.get("changed", True):
                return result
            note = _note_ref(result)
            if self.sync is not None and note["scope"] in ("project", "user"):
                self.sync.wrote(note["scope"])
            context.emit(f"memory.{name}", {**note, "created": result.get("created", False)})
            if name == "remember":
                with self._lock:
                    self._saved.setdefault(context.session.id, []).append(note)
            return result

        return run
