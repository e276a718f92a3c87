"""A chat process killed (SIGKILL) while its extraction pass waits for the model: nothing is
half-written, and the next pass reads the stretch again without saving it twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from harness_cli_support import OHARNESS
from raw_model_server import RawModelServer

NOTE = {"summary": "Deploys go out through the Zephyr release train", "body": "Tuesdays."}


def _environment(home: Path, server: RawModelServer) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OHARNESS"))}
    environment.update(OHARNESS_HOME=str(home), OPENAI_BASE_URL=server.url, OPENAI_API_KEY="k")
    return environment


def test_a_chat_killed_mid_pass_loses_nothing_and_saves_once(
    home: Path, project_dir: Path, raw_server: RawModelServer
) -> None:
    config = {"memory": {"autoExtract": {"onStop": True, "minUserTurns": 1}}}
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
    environment = _environment(home, raw_server)
    raw_server.answer("Noted.")
    raw_server.answer(json.dumps({"new": [NOTE]}))
    raw_server.hold_after = 1  # the extraction request waits
    raw_server.released.clear()
    chat = subprocess.Popen(
        [str(OHARNESS), "chat", "-p", "We deploy with Zephyr.", "--model", "openai:m"],
        cwd=project_dir,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert raw_server.wait_for_requests(2)
    finally:
        chat.send_signal(signal.SIGKILL)
        out, _ = chat.communicate(timeout=30)
    assert out.strip() == "Noted."  # the reply came before the pass
    raw_server.released.set()
    assert not (project_dir / "MEMORY").exists() or not list((project_dir / "MEMORY").glob("*.md"))
    [transcript] = list((home / "sessions").glob("*/*.jsonl"))
    session_id = transcript.stem

    raw_server.answer("Fine.")
    raw_server.answer(json.dumps({"new": [NOTE]}))
    resumed = subprocess.run(
        [
            str(OHARNESS),
            "chat",
            "-p",
            "Anything else?",
            "--resume",
            session_id,
            "--model",
            "openai:m",
        ],
        cwd=project_dir,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    extraction = raw_server.requests[-1]["messages"][1]["content"]
    assert "User: We deploy with Zephyr." in extraction  # the killed pass's stretch, read again
    assert "User: Anything else?" in extraction
    assert len(list((project_dir / "MEMORY").glob("*.md"))) == 1
