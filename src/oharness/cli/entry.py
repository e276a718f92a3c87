"""The ``oharness`` console script: prompt hooks take a short path, everything else the CLI."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``oharness hook …`` without loading the full CLI; else run the CLI."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from oharness.cli.hook import run_hook

        return run_hook(args[1:])
    from oharness.cli.main import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
