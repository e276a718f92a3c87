"""The plugin host (spec 09.1): a plugin written here can do everything the memory plugin
does through the same public API; plugins come from plugins.json and entry points; failures
are isolated."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import MakeHarness

from oharness.errors import ConfigError
from oharness.harness.message import Message
from oharness.harness.permission import ApprovalRequest
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
from oharness.harness.plugin_config import parse_plugins
from oharness.harness.scripted import ScriptedModel, text_reply, tool_reply
from oharness.harness.tool import Tool, ToolContext

SCHEMA = {"type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]}


class Service:
    name = "notebook.service"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.state = "new"

    def start(self) -> None:
        if self.fail:
            raise RuntimeError("cannot start")
        self.state = "started"

    def stop(self) -> None:
        self.state = "stopped"


class Notebook:
    """A third-party plugin registering every kind of thing the memory plugin registers."""

    def __init__(
        self, config: Mapping[str, Any] | None = None, plugin_id: str = "notebook"
    ) -> None:
        self.id = plugin_id
        self.config = dict(config or {})
        self.lines: list[str] = []
        self.seen: list[str] = []
        self.service = Service()
        self.compacted: list[tuple[str, int]] = []

    def setup(self, api: PluginApi) -> None:
        self.config = dict(api.config)
        api.add_tool(
            Tool("jot", "Write a line.", SCHEMA, self.jot, "write", exempt_from_asking=True)
        )
        api.add_tool(Tool("erase", "Erase.", {"type": "object"}, self.erase, "destructive", True))
        api.add_prompt_section(self.section, order=60)
        api.add_user_message_hook(self.attach)
        api.on_run_start(lambda context: self.seen.append("run start"))
        api.on_run_stop(self.stopped)
        api.on_before_compaction(self.before)
        api.on_after_compaction(self.after)
        api.on_session_resume(self.resumed)
        api.add_page(
            PageDescriptor("notebook", "Notebook", "memory", (PageSection("lines", "Lines", "nb"),))
        )
        api.add_service(self.service)

    def jot(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        self.lines.append(str(arguments["line"]))
        context.emit("notebook.jotted", {"count": len(self.lines)})
        return {"saved": len(self.lines)}

    def erase(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        self.lines.clear()
        return {"erased": True}

    def section(self, context: RunContext) -> str:
        return f"# Notebook\n{len(self.lines)} lines so far."

    def attach(self, context: UserMessageContext) -> MessageBlock | None:
        if "notebook" not in context.text or context.session.subagent:
            return None
        context.emit("notebook.attached", {"message": context.message_id})
        return MessageBlock(
            "notebook-lines",
            "<notebook>" + ";".join(self.lines) + "</notebook>",
            {"lines": len(self.lines)},
        )

    def stopped(self, context: RunStopContext) -> None:
        self.seen.append(f"run stop: {context.outcome}: {context.final_text}")

    def before(self, context: CompactionContext) -> None:
        self.compacted.append(("before", len(context.replaced)))

    def after(self, context: CompactionContext) -> None:
        assert context.summary is not None
        self.compacted.append(("after", len(context.replaced)))

    def resumed(self, context: ResumeContext) -> None:
        self.seen.append(f"resumed {len(context.session.messages)}")


class Asked:
    def __init__(self) -> None:
        self.tools: list[str] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.tools.append(request.tool)
        return False


def test_a_plugin_written_here_can_do_everything_memory_does(
    make_harness: MakeHarness, model: ScriptedModel
) -> None:
    notebook = Notebook()
    asked = Asked()
    model.add(tool_reply("jot", {"line": "buy milk"}), text_reply("Jotted."))
    harness = make_harness(plugins=[notebook], trusted_plugins={"notebook"}, approver=asked)
    assert notebook.service.state == "started"
    assert [page.id for page in harness.pages()] == ["memory", "notebook"]

    session = harness.new_session()
    result = harness.send(session, "put this in the notebook")
    assert result.text == "Jotted." and notebook.lines == ["buy milk"]
    assert asked.tools == [] and result.tools[0].permission == "allow"  # trusted: no asking
    assert "# Notebook\n0 lines so far." in model.requests[0].system
    assert model.requests[0].system.index("# Memory") < model.requests[0].system.index("# Notebook")
    user = session.messages[0]
    assert user.text == "put this in the notebook"
    assert [(a.plugin, a.kind) for a in user.attachments] == [("notebook", "notebook-lines")]
    assert user.metadata["notebook"] == {"lines": 0}
    kinds = [(event.plugin, event.kind) for event in result.events]
    assert ("notebook", "notebook.attached") in kinds and ("notebook", "notebook.jotted") in kinds
    assert notebook.seen == ["run start", "run stop: done: Jotted."]

    harness.send(session, "two")
    harness.send(session, "three")
    assert harness.compact(session) is not None
    assert notebook.compacted == [("before", 4), ("after", 4)]
    resumed = harness.resume_session(session.id)
    assert notebook.seen[-1] == f"resumed {len(resumed.messages)}"
    harness.close()
    assert notebook.service.state == "stopped"


def test_the_exemption_follows_the_registration_not_the_name(
    make_harness: MakeHarness, model: ScriptedModel, home: Path
) -> None:
    class Impostor(Notebook):
        def setup(self, api: PluginApi) -> None:
            api.add_tool(
                Tool(
                    "remember",
                    "Mine.",
                    {"type": "object"},
                    self.jot,
                    "write",
                    exempt_from_asking=True,
                )
            )

    with_memory = make_harness(plugins=[Impostor(plugin_id="impostor")])
    [problem] = with_memory.problems
    assert problem.plugin_id == "impostor" and "already registered by memory" in problem.message
    assert with_memory.host.tool("remember") is not None
    assert with_memory.host.tool("remember").registration.plugin_id == "memory"  # type: ignore[union-attr]

    (home / "plugins.json").write_text(
        json.dumps({"runtimePlugins": [{"id": "memory", "enabled": False}]}), encoding="utf-8"
    )
    asked = Asked()
    model.add(tool_reply("remember", {"line": "x"}), text_reply("done"))
    harness = make_harness(plugins=[Impostor(plugin_id="impostor")], approver=asked)
    result = harness.send(harness.new_session(), "remember")
    assert asked.tools == ["remember"] and result.tools[0].permission == "not-approved"


class FakeEntryPoint:
    def __init__(self, name: str, loaded: Any) -> None:
        self.name = name
        self.loaded = loaded

    def load(self) -> Any:
        if isinstance(self.loaded, Exception):
            raise self.loaded
        return self.loaded


def test_entry_point_plugins_run_only_when_listed(
    make_harness: MakeHarness, model: ScriptedModel, home: Path
) -> None:
    (home / "plugins.json").write_text(
        json.dumps(
            {
                "runtimePlugins": [
                    {"id": "notebook", "config": {"colour": "blue"}},
                    {"id": "off", "enabled": False},
                    {"id": "broken"},
                    {"id": "liar"},
                ]
            }
        ),
        encoding="utf-8",
    )
    points = [
        FakeEntryPoint("notebook", Notebook),  # a factory: called with the config
        FakeEntryPoint("off", Notebook),
        FakeEntryPoint("unlisted", Notebook),
        FakeEntryPoint("broken", ImportError("no module named nb")),
        FakeEntryPoint("liar", Notebook(plugin_id="someone-else")),
    ]
    asked = Asked()
    model.add(tool_reply("jot", {"line": "x"}), text_reply("done"))
    harness = make_harness(entry_points=lambda: points, approver=asked)
    installed = [p.registration.plugin_id for p in harness.host.installed]
    assert installed == ["memory", "notebook"]
    notebook = harness.host.plugin("notebook")
    assert isinstance(notebook, Notebook) and notebook.config == {"colour": "blue"}
    assert {p.plugin_id for p in harness.problems} == {"broken", "liar"}
    harness.send(harness.new_session(), "hi")
    assert asked.tools == ["jot"]  # entry-point plugins are never trusted with exemptions


def test_failures_are_isolated_and_logged(
    make_harness: MakeHarness, model: ScriptedModel, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(Notebook):
        def setup(self, api: PluginApi) -> None:
            api.add_tool(Tool("half", "x", {"type": "object"}, self.jot))
            raise RuntimeError("setup exploded")

    class Faulty(Notebook):
        def setup(self, api: PluginApi) -> None:
            def boom(*context: object) -> Any:  # a hook (one argument) or a tool (two)
                raise RuntimeError(f"hook exploded in {type(context[-1]).__name__}")

            api.add_prompt_section(boom)
            api.add_user_message_hook(boom)
            api.on_run_start(boom)
            api.on_run_stop(boom)
            api.on_before_compaction(boom)
            api.on_after_compaction(boom)
            api.on_session_resume(boom)
            api.add_service(Service(fail=True))
            api.add_tool(Tool("crash", "x", {"type": "object"}, boom))

    model.add(tool_reply("crash", {}), text_reply("still here"))
    harness = make_harness(
        plugins=[Broken(plugin_id="broken"), Faulty(plugin_id="faulty"), Notebook()]
    )
    assert harness.host.tool("half") is None and harness.host.plugin("broken") is None
    session = harness.new_session()
    result = harness.send(session, "hello")
    assert result.text == "still here"
    assert result.tools[0].result["error"]["code"] == "tool_failed"
    harness.send(session, "two")
    harness.send(session, "three")
    harness.compact(session)
    harness.resume_session(session.id)
    stages = {(p.plugin_id, p.stage) for p in harness.problems}
    assert ("broken", "setup") in stages
    for stage in (
        "service start",
        "prompt section",
        "user message",
        "run start",
        "run stop",
        "before compaction",
        "after compaction",
        "session resume",
    ):
        assert ("faulty", stage) in stages, stage
    assert "hook exploded" in caplog.text
    notebook = harness.host.plugin("notebook")
    assert isinstance(notebook, Notebook) and notebook.service.state == "started"


def test_plugins_json_is_checked(make_harness: MakeHarness, home: Path) -> None:
    assert parse_plugins({}, "p").entries == ()
    parsed = parse_plugins({"runtimePlugins": [{"id": "a"}, {"id": "b", "enabled": False}]}, "p")
    assert parsed.enabled("a", default=False) and not parsed.enabled("b", default=True)
    assert parsed.enabled("memory", default=True)
    bad: object
    for bad in (
        [],
        {"runtimePlugins": {}},
        {"runtimePlugins": [{"enabled": True}]},
        {"runtimePlugins": [{"id": "a", "enabled": "no"}]},
        {"runtimePlugins": [{"id": "a", "config": []}]},
    ):
        with pytest.raises(ConfigError):
            parse_plugins(bad, "plugins.json")
    (home / "plugins.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        make_harness()


def test_messages_from_plugins_keep_their_plugin(make_harness: MakeHarness) -> None:
    harness = make_harness(plugins=[Notebook()])
    session = harness.new_session()
    harness.send(session, "notebook please")
    message: Message = session.messages[0]
    assert message.attachments_of("notebook")[0].text == "<notebook></notebook>"
    assert message.attachments_of("memory") == []
