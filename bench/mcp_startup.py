"""``oharness mcp`` start-up as a client sees it (issue 17): from spawning the server to the
answer of its first ``tools/list``, through the MCP SDK's own stdio client, over 1,000 notes.
Baseline in the same run: ``oharness --version`` (the CLI's own start-up, no MCP).

    python bench/mcp_startup.py            # 10 starts
    python bench/mcp_startup.py --quick    # 3 starts, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).parent))

from recall_corpus import synthetic_corpus

from oharness.notes.format import serialise_note_bytes

OHARNESS = Path(sys.executable).with_name("oharness")


async def _one_start(params: StdioServerParameters) -> tuple[float, float]:
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            ready = time.perf_counter()
            listed = await session.list_tools()
            done = time.perf_counter()
            assert {tool.name for tool in listed.tools} == {"remember", "memory", "forget"}
    return (ready - started) * 1000, (done - started) * 1000


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{ordered[len(ordered) // 2]:8.0f} {ordered[-1]:8.0f} {len(ordered):4d}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 starts")
    args = parser.parse_args(argv)
    starts = 3 if args.quick else 10
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        project, home = root / "project", root / "home"
        (project / ".oharness").mkdir(parents=True)
        (project / ".oharness" / "project.json").write_text(json.dumps({"id": "p-bench"}))
        folders = {"project": project / "MEMORY", "user": home / "memory" / "user"}
        for folder in folders.values():
            folder.mkdir(parents=True)
        for scope, note in synthetic_corpus(1_000).notes:
            (folders[scope] / f"{note.id}.md").write_bytes(serialise_note_bytes(note))
        env = {**os.environ, "OHARNESS_HOME": str(home)}
        params = StdioServerParameters(
            command=str(OHARNESS), args=["mcp"], env=env, cwd=str(project)
        )
        version, initialized, listed = [], [], []
        for _ in range(starts):
            started = time.perf_counter()
            subprocess.run([str(OHARNESS), "--version"], env=env, capture_output=True, check=True)
            version.append((time.perf_counter() - started) * 1000)
            ready, done = anyio.run(_one_start, params)
            initialized.append(ready)
            listed.append(done)
    print(f"start-up in ms, 1,000 notes, {starts} starts; load {os.getloadavg()[0]:.1f}")
    print(f"{'case':36} {'median':>8} {'max':>8} {'n':>4}")
    print(f"{'oharness --version (baseline)':36} {_summary(version)}")
    print(f"{'mcp: spawn to initialize answered':36} {_summary(initialized)}")
    print(f"{'mcp: spawn to tools/list answered':36} {_summary(listed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
