"""``oharness mcp`` start-up as a client sees it: from spawning the server to the answer of
its ``initialize``, of its first ``tools/list``, and of a first tool call (the notes loaded),
through the MCP SDK's own stdio client, over 1,000 notes; with a daemon running (the session
relayed to it, the default) and served in this process (``--in-process``: what every session
costs without a daemon). Baselines in the same run, each a whole process: ``python -c pass``
(the interpreter), importing the MCP SDK's server side and nothing else (what no server built
on the SDK in the session's own process can avoid), and ``oharness --version`` (the whole
CLI). The cases take turns; the load average is printed with the figures. Target: the answer
to ``initialize`` within 500 ms (p50) through the daemon.

    python bench/mcp_startup.py            # 20 starts
    python bench/mcp_startup.py --quick    # 3 starts, for CI
"""

from __future__ import annotations

import argparse
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

from _support import lay_out_corpus, load_average, load_line

OHARNESS = Path(sys.executable).with_name("oharness")


# Ends at once after the import: the interpreter's teardown of the SDK's modules (hundreds of
# ms) is on no client's path.
SDK_IMPORT = (
    "import mcp_types, mcp.server.lowlevel, mcp.server.stdio, mcp.server.context, os; os._exit(0)"
)


async def _one_start(params: StdioServerParameters) -> tuple[float, float, float]:
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
            called = await session.call_tool("memory", {"query": "deploy"})
            answered = time.perf_counter()
            assert not called.is_error
    return (ready - started) * 1000, (done - started) * 1000, (answered - started) * 1000


def _process(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def _summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    return f"{pick(0.5):8.0f} {pick(0.95):8.0f} {len(ordered):4d}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 starts")
    args = parser.parse_args(argv)
    starts = 3 if args.quick else 20
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        laid = lay_out_corpus(root, 1_000, aged=False)
        project, home = laid.project, laid.home
        env = {**os.environ, "OHARNESS_HOME": str(home)}
        relayed, in_process = (
            StdioServerParameters(command=str(OHARNESS), args=args, env=env, cwd=str(project))
            for args in (["mcp"], ["mcp", "--in-process"])
        )
        rows: dict[str, list[float]] = {name: [] for name in CASES}
        daemon = _start_daemon(home, root, env)
        try:
            load_before = load_average()
            for _ in range(starts):
                rows[CASES[0]].append(_process([sys.executable, "-c", "pass"], env))
                rows[CASES[1]].append(_process([sys.executable, "-c", SDK_IMPORT], env))
                rows[CASES[2]].append(_process([str(OHARNESS), "--version"], env))
                for name, value in zip(CASES[3:6], anyio.run(_one_start, relayed), strict=True):
                    rows[name].append(value)
                for name, value in zip(CASES[6:], anyio.run(_one_start, in_process), strict=True):
                    rows[name].append(value)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    print(f"start-up in ms, 1,000 notes, {starts} starts; {load_line(load_before)}")
    print(f"{'case (wall ms, whole process or spawn to)':48} {'p50':>8} {'p95':>8} {'n':>4}")
    for name, samples in rows.items():
        print(f"{name:48} {_summary(samples)}")
    answered = sorted(rows[CASES[3]])[len(rows[CASES[3]]) // 2]
    verdict = "met" if answered <= 500 else "NOT met"
    print(f"initialize through the daemon <= 500 ms (p50): {verdict} ({answered:.0f} ms)")
    return 0


def _start_daemon(home: Path, where: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``oharness serve`` for ``home``, ready (its address file written)."""
    process = subprocess.Popen(
        [str(OHARNESS), "serve", "--port", "0"],
        cwd=where,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (home / "daemon.json").exists() or not (home / "mcp.sock").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the daemon did not start")
        time.sleep(0.05)
    return process


CASES = (
    "python -c pass (the interpreter)",
    "import the MCP SDK's server (baseline)",
    "oharness --version (the whole CLI)",
    "mcp, daemon: initialize answered",
    "mcp, daemon: tools/list answered",
    "mcp, daemon: first tool call answered",
    "mcp --in-process: initialize answered",
    "mcp --in-process: tools/list answered",
    "mcp --in-process: first tool call (notes loaded)",
)


if __name__ == "__main__":
    sys.exit(main())
