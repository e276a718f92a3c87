"""Helpers shared by the harness unit tests."""

from __future__ import annotations

from collections.abc import Callable

from oharness.harness.harness import Harness
from oharness.harness.session import Session
from oharness.memory.workspace import Workspace

MakeHarness = Callable[..., Harness]
ZEPHYR = "Deploys go out through the Zephyr release train"


def remember_zephyr(workspace: Workspace) -> str:
    """A project note that a message mentioning Zephyr recalls."""
    saved = workspace.service.remember(
        ZEPHYR, "Every Tuesday at noon; hotfixes any day.", tags="zephyr, deploy, release"
    )
    return saved.id


def users_words(session: Session) -> list[str]:
    """The text of every user message (never what was attached)."""
    return [m.text for m in session.messages if m.role == "user"]
