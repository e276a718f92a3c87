"""``oharness mcp`` driven by the MCP SDK's own stdio client, for the bridge tests."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.integration.bridges.runner import OHARNESS

Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]
Body = Callable[[ClientSession], Awaitable[Any]]


def session(
    home: Path, cwd: Path, *args: str, elicit: Elicit | None = None
) -> Callable[[Body], Any]:
    """What runs ``body`` in one initialised session of ``oharness mcp ARGS`` started in
    ``cwd`` with ``OHARNESS_HOME=home``, and returns what it returns."""
    params = StdioServerParameters(
        command=str(OHARNESS),
        args=["mcp", *args],
        env={**os.environ, "OHARNESS_HOME": str(home)},
        cwd=str(cwd),
    )

    async def run(body: Body) -> Any:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, elicitation_callback=cast(Any, elicit)) as client,
            ):
                await client.initialize()
                return await body(client)

    return lambda body: anyio.run(run, body)


def tool_data(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON a tool call answered."""
    assert result.content and isinstance(result.content[0], types.TextContent)
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def forget_approved(
    home: Path, project: Path, note_id: str
) -> tuple[types.CallToolResult, list[str]]:
    """``forget`` called through a session whose person accepts the question, and the
    questions asked."""
    asked: list[str] = []

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async def body(client: ClientSession) -> types.CallToolResult:
        return await client.call_tool("forget", {"id": note_id})

    result: types.CallToolResult = session(home, project, elicit=approve)(body)
    return result, asked
