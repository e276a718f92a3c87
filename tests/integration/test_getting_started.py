"""Every ``sh`` block of docs/getting-started.md, run as written in a fresh HOME against a real
sync server; ``pipx`` and ``python`` on PATH are this test environment's (no download)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.integration.sync.cliworld import Server, Storage, token_for

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "getting-started.md"


def shell_blocks() -> list[str]:
    """The ``sh`` blocks of the guide, in order."""
    return re.findall(r"^```sh\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


def _tools(folder: Path) -> None:
    """``pipx`` that installs this environment's oharness into ~/.local/bin, and ``python``."""
    folder.mkdir()
    pipx = folder / "pipx"
    pipx.write_text(
        '#!/bin/sh\n[ "$1" = install ] || exit 2\nmkdir -p "$HOME/.local/bin"\n'
        f'ln -sf {Path(sys.executable).with_name("oharness")} "$HOME/.local/bin/oharness"\n'
    )
    pipx.chmod(0o755)
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)


def test_every_command_of_the_guide_runs(tmp_path: Path) -> None:
    blocks = shell_blocks()
    assert len(blocks) >= 6
    user, tools = tmp_path / "user", tmp_path / "tools"
    (user / ".claude").mkdir(parents=True)
    _tools(tools)
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin]
    server = Server(Storage(f"file://{tmp_path / 'objects'}", {}), tmp_path / "server.log")
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OHARNESS_", "XDG_"))},
        "HOME": str(user),
        "PATH": os.pathsep.join([str(tools), str(user / ".local" / "bin"), *path]),
        "SYNC_URL": server.origin,
        "SYNC_TOKEN": token_for("ada"),
    }
    script = "set -eu\n" + f"cd {ROOT}\n" + blocks[0] + 'cd "$HOME"\n' + "".join(blocks[1:])
    try:
        result = subprocess.run(
            ["bash", "-c", script],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "dry run: nothing written" in out and "doctor exit code: 3" in out
    assert f"signed in to {server.origin} as ada" in out
    assert "We deploy on Tuesdays" in out
    assert (user / ".claude.json").is_file() and (user / ".codex" / "hooks.json").is_file()
