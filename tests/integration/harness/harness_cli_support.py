"""Running ``oharness`` through its installed entry point with a loopback model server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from stub_model_server import StubModelServer

OHARNESS = Path(sys.executable).with_name("oharness")
_SESSION = re.compile(r"--resume (\S+)\)")
_VARIABLES = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OHARNESS_TOKEN",
    "EDITOR",
)


class Chat:
    """Runs ``oharness`` commands in a project with a temporary ``OHARNESS_HOME``."""

    def __init__(self, home: Path, cwd: Path, stub: StubModelServer) -> None:
        self.home = home
        self.cwd = cwd
        self.stub = stub

    def run(
        self, *args: str, cwd: Path | None = None, input: str = "", **env: str
    ) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
        environment.update(
            OHARNESS_HOME=str(self.home),
            OPENAI_BASE_URL=f"{self.stub.url}/v1",
            OPENAI_API_KEY="test-key-openai",
            **env,
        )
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=cwd or self.cwd,
            input=input,
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
        )

    def ok(
        self, *args: str, cwd: Path | None = None, input: str = "", **env: str
    ) -> subprocess.CompletedProcess[str]:
        result = self.run(*args, cwd=cwd, input=input, **env)
        assert result.returncode == 0, result.stderr
        return result

    def say(
        self,
        message: str,
        *extra: str,
        model: str = "openai:stub-model",
        cwd: Path | None = None,
        **env: str,
    ) -> subprocess.CompletedProcess[str]:
        """``oharness chat -p MESSAGE --model MODEL …``, which must succeed."""
        return self.ok("chat", "-p", message, "--model", model, *extra, cwd=cwd, **env)

    @staticmethod
    def session_id(result: subprocess.CompletedProcess[str]) -> str:
        found = _SESSION.search(result.stderr)
        assert found, result.stderr
        return found.group(1)
