"""``oharness mcp`` driven by the MCP SDK's own stdio client: tools, refusals, index, forget."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.integration.bridges.mcp_client import forget_approved, session, tool_data
from tests.integration.bridges.runner import OHARNESS, ok

from oharness.memory.tools import tool_definitions
from oharness.memory.workspace import open_workspace


@pytest.fixture
def project(home: Path, project_dir: Path) -> Path:
    ok(home, project_dir, "project", "init")
    return project_dir


def test_tools_have_the_built_in_schemas_and_annotations(home: Path, project: Path) -> None:
    async def body(session: ClientSession) -> types.ListToolsResult:
        return await session.list_tools()

    listed = session(home, project)(body)
    by_name = {tool.name: tool for tool in listed.tools}
    assert set(by_name) == {"remember", "memory", "forget"}
    for definition in tool_definitions():
        assert by_name[definition["name"]].input_schema == definition["input_schema"]
    assert by_name["forget"].annotations.destructive_hint is True
    assert by_name["memory"].annotations.read_only_hint is True


def test_remember_search_read_list_and_refusal(home: Path, project: Path) -> None:
    async def body(session: ClientSession) -> dict[str, Any]:
        saved = await session.call_tool(
            "remember",
            {
                "summary": "Deploys happen on Tuesdays",
                "body": "Release train at noon.",
                "tags": ["release"],
            },
        )
        found = await session.call_tool("memory", {"query": "when do deploys happen"})
        listing = await session.call_tool("memory", {})
        secret = await session.call_tool(
            "remember", {"summary": "token", "body": "ghp_Zq8Lr2Vt6Wm1Xy4Ns9Kp3Bd7Hf5Jc0Ga2Ue8"}
        )
        bad = await session.call_tool("memory", {"nonsense": 1})
        huge = await session.call_tool("memory", {"query": "q " * 50_000})
        bad_tags = [
            await session.call_tool("remember", {"summary": "s", "body": "b", "tags": tags})
            for tags in (42, True, {"a": 1})
        ]
        split = await session.call_tool(
            "remember", {"summary": "The VPN password is", "body": "Zq8vN2kLp4!xY"}
        )
        slug = await session.call_tool(
            "remember", {"summary": "Where the admin password is kept", "body": "In 1Password."}
        )
        note_id = tool_data(saved)["id"]
        read = await session.call_tool("memory", {"id": note_id})
        index = await session.read_resource("oharness://memory/index")
        prompt = await session.get_prompt("memory-index")
        return {
            "saved": saved,
            "found": found,
            "listing": listing,
            "secret": secret,
            "bad": bad,
            "huge": huge,
            "bad_tags": bad_tags,
            "split": split,
            "slug": slug,
            "read": read,
            "index": index,
            "prompt": prompt,
        }

    out = session(home, project)(body)
    saved = tool_data(out["saved"])
    assert out["saved"].is_error is False and saved["created"] is True
    assert Path(saved["path"]).is_file() and Path(saved["path"]).parent == project / "MEMORY"
    assert tool_data(out["found"])["results"][0]["id"] == saved["id"]
    assert tool_data(out["listing"])["notes"][0]["id"] == saved["id"]
    assert tool_data(out["read"])["body"].startswith("Release train")
    assert out["secret"].is_error is True
    assert "credential" in tool_data(out["secret"])["error"]["message"]
    assert "ghp_" not in out["secret"].content[0].text
    assert out["huge"].is_error is True and "at most 20,000" in out["huge"].content[0].text
    assert len(out["huge"].content[0].text) < 1_000  # not echoed back
    for refused in out["bad_tags"]:  # a tool error, never a protocol error or a crash
        assert refused.is_error is True and "tags must be" in refused.content[0].text
    assert out["split"].is_error is True and "Zq8v" not in out["split"].content[0].text
    slug = tool_data(out["slug"])  # an id holding "password" is shown whole
    assert (
        slug["id"].startswith("where-the-admin-password-is-kept-") and "removed" not in slug["id"]
    )
    assert len(list((project / "MEMORY").glob("*.md"))) == 2
    assert out["bad"].is_error is True and "unknown argument" in out["bad"].content[0].text
    assert saved["id"] in out["index"].contents[0].text
    assert saved["id"] in out["prompt"].messages[0].content.text


def _remember_one(home: Path, project: Path) -> str:
    result = ok(home, project, "memory", "remember", "-s", "Old fact", "-b", "Obsolete.", "--json")
    note_id: str = json.loads(result.stdout)["id"]
    return note_id


def test_forget_asks_the_person_and_keeps_a_backup(home: Path, project: Path) -> None:
    note_id = _remember_one(home, project)
    result, asked = forget_approved(home, project, note_id)
    assert result.is_error is False, result.content
    assert asked and note_id in asked[0]
    assert not (project / "MEMORY" / f"{note_id}.md").exists()
    assert tool_data(result)["backupId"]
    assert any((home / "memory-backups").iterdir())


def test_forget_declined_or_unaskable_deletes_nothing(home: Path, project: Path) -> None:
    note_id = _remember_one(home, project)

    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async def body(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("forget", {"id": note_id})

    declined = session(home, project, elicit=decline)(body)
    assert declined.is_error is True and "did not approve" in declined.content[0].text

    async def fail(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-1, message="the client cannot show forms")

    failed = session(home, project, elicit=cast(Any, fail))(body)  # a tool error, not a crash
    assert failed.is_error is True and "nothing was deleted" in failed.content[0].text
    unaskable = session(home, project)(body)
    assert unaskable.is_error is True and "--allow-forget" in unaskable.content[0].text
    assert (project / "MEMORY" / f"{note_id}.md").exists()
    allowed = session(home, project, "--allow-forget")(body)
    assert allowed.is_error is False
    assert not (project / "MEMORY" / f"{note_id}.md").exists()


def test_project_flag_and_missing_note(home: Path, project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def body(session: ClientSession) -> types.CallToolResult:
        await session.call_tool("remember", {"summary": "From elsewhere", "body": "Text."})
        return await session.call_tool("forget", {"id": "no-such-note"})

    missing = session(home, elsewhere, "--project", str(project), "--allow-forget")(body)
    assert missing.is_error is True
    assert len(list((project / "MEMORY").glob("*.md"))) == 1
    assert not (elsewhere / "MEMORY").exists()


def test_a_broken_configuration_never_stalls_start_up_and_every_call_says_why(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / ".oharness" / "config.json").write_text("{ not json", encoding="utf-8")

    async def body(session: ClientSession) -> tuple[types.ListToolsResult, types.CallToolResult]:
        listed = await session.list_tools()
        return listed, await session.call_tool("memory", {})

    errors = tmp_path / "stderr.txt"
    params = StdioServerParameters(
        command=str(OHARNESS),
        args=["mcp"],
        env={**os.environ, "OHARNESS_HOME": str(home)},
        cwd=str(project),
    )

    async def run() -> tuple[types.ListToolsResult, types.CallToolResult]:
        with open(errors, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await body(session)

    listed, called = anyio.run(run)
    assert {tool.name for tool in listed.tools} == {"remember", "memory", "forget"}
    assert called.is_error is True
    error = tool_data(called)["error"]
    assert "config.json" in error["message"]
    assert "oharness mcp: error:" in errors.read_text() and "config.json" in errors.read_text()


def test_remember_refuses_and_memory_redacts_the_forms_of_the_attack_report(
    home: Path, project: Path
) -> None:
    aws_secret = "9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko"
    reversed_token = "eUg0As5Jh1FxDc6Bn3YwR7tZ4pLv9Qm2Tk8R_phg"

    # A hand-written note holding one, written before the server starts.
    saved = open_workspace(project, home, register=True).service.remember(
        "CI deploy credentials", "In the team vault."
    )
    path = Path(saved.path)
    path.write_text(path.read_text("utf-8") + f"AWS secret for CI: {aws_secret}\n", "utf-8")

    async def body(session: ClientSession) -> dict[str, Any]:
        refused = [
            await session.call_tool("remember", {"summary": "CI", "body": text})
            for text in (f"The AWS secret for CI is {aws_secret}", f"backwards: {reversed_token}")
        ]
        read = await session.call_tool("memory", {"id": saved.id})
        found = await session.call_tool("memory", {"query": "AWS secret for CI"})
        return {"refused": refused, "read": read, "found": found}

    out = session(home, project)(body)
    for result in out["refused"]:
        text = result.content[0].text
        assert result.is_error is True and "credential" in text
        assert aws_secret[:12] not in text and reversed_token[:12] not in text
    read, found = out["read"].content[0].text, out["found"].content[0].text
    assert aws_secret[:12] not in read and "credential removed" in read
    assert aws_secret[:12] not in found


def test_an_unknown_resource_or_prompt_is_an_invalid_params_error(
    home: Path, project: Path
) -> None:
    from mcp.shared.exceptions import MCPError

    async def body(session: ClientSession) -> list[int]:
        codes = []
        for ask in (
            lambda: session.read_resource("file:///etc/passwd"),
            lambda: session.get_prompt("../../etc"),
        ):
            with pytest.raises(MCPError) as refused:
                await ask()
            codes.append(refused.value.code)
        return codes

    assert session(home, project)(body) == [types.INVALID_PARAMS] * 2
