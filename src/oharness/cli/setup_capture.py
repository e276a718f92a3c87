"""The capture step of ``oharness setup``: is memory captured from agent sessions, and how.

Capture (docs/capture.md) runs with a model (``models.small`` and ``autoExtract.onStop``) or,
without one, by asking the agent itself (``autoExtract.askAgent``), which costs the agent's
tokens: so setup asks before switching that on, or takes ``--ask-agent`` / ``--no-ask-agent``.
Only the user's own ``config.json`` is written (a repository may only switch capture off);
every other key in it is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oharness.cli.setup_steps import Outcome, SetupRequest
from oharness.errors import OHarnessError

QUESTION = (
    "Capture memories from Claude Code and Codex sessions by asking the agent, at the end of a "
    "session, to save what is worth keeping? It costs the agent's tokens"
)
HOW = "docs/capture.md; oharness setup --ask-agent, or models.small with autoExtract.onStop"


def _object(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _state(config: dict[str, Any]) -> str | None:
    """What captures now, or None when nothing does."""
    auto = _object(_object(config, "memory"), "autoExtract")
    models = _object(config, "models")
    model = models.get("small") or models.get("main")
    if model and auto.get("onStop") is True:
        return f"on: extraction with {model}"
    if not model and auto.get("askAgent") is True:
        return "on: the agent is asked to save at the end of a session"
    return None


def capture_step(
    request: SetupRequest, ask_agent: bool | None, ask: Callable[[str], bool] | None
) -> Outcome:
    """Report capture; switch ask-the-agent mode on or off when chosen (or asked and agreed)."""
    from oharness.fsio import atomic_write
    from oharness.project.config import read_config_file
    from oharness.project.paths import HomeLayout

    path = HomeLayout(request.home).config_file
    try:
        config = read_config_file(path) or {}
    except OHarnessError as exc:
        return Outcome("capture", f"cannot be read: {exc.message}", fix="fix or remove the file")
    state = _state(config)
    if not request.install:
        return Outcome("capture", f"{state or 'off'} (your config is kept)")
    if ask_agent is None and state is None and ask is not None:
        ask_agent = ask(QUESTION) or None
    current = _object(_object(config, "memory"), "autoExtract").get("askAgent") is True
    if ask_agent is None or ask_agent == current:
        return Outcome("capture", state or f"off ({HOW})")
    memory = config.setdefault("memory", {})
    auto = memory.setdefault("autoExtract", {}) if isinstance(memory, dict) else None
    if not isinstance(auto, dict):
        fix = "make memory.autoExtract a JSON object"
        return Outcome("capture", f"{path}: memory.autoExtract is not an object", fix=fix)
    auto["askAgent"] = ask_agent
    verb = "would be " if request.dry_run else ""
    said = f"ask-the-agent mode {verb}switched {'on' if ask_agent else 'off'} in {path}"
    if not request.dry_run:
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        atomic_write(path, text.encode("utf-8"), mode=0o600)
    return Outcome("capture", said, changed=True)
