"""The ``oharness`` console script: prompt hooks and the MCP server take a short path (a client
waits for them), everything else the CLI."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``oharness hook …`` and ``oharness mcp …`` without loading the full CLI; else
    run the CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from oharness.cli.hook import run_hook

        return run_hook(args[1:])
    if args[:1] == ["mcp"]:
        from oharness.cli.mcp_relay import relay_session

        relayed = relay_session(args[1:])  # through the daemon when one runs
        if relayed is not None:
            return relayed
        from oharness.cli.error_policy import run_command
        from oharness.cli.mcp import mcp

        return run_command(mcp, args[1:], "oharness mcp")
    from oharness.cli.main import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
