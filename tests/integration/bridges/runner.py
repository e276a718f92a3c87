"""Running the installed ``oharness`` entry point against a fixture home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

OHARNESS = Path(sys.executable).with_name("oharness")


def run(
    home: Path, cwd: Path, *args: str, input: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``oharness ARGS`` with ``OHARNESS_HOME=home`` in ``cwd``."""
    environment = {**os.environ, "OHARNESS_HOME": str(home), **env}
    return subprocess.run(
        [str(OHARNESS), *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def ok(home: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run and insist on success."""
    result = run(home, cwd, *args, **env)
    assert result.returncode == 0, result.stderr
    return result


def as_json(home: Path, cwd: Path, *args: str, **env: str) -> Any:
    """Run with ``--json`` and parse the output."""
    return json.loads(ok(home, cwd, *args, "--json", **env).stdout)
