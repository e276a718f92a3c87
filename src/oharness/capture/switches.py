"""What a capture hook needs of the config, read with the standard library alone.

The hook runs at every stop of the agent, so it does not load the settings machinery
(:func:`oharness.project.config.load_settings`, a third of its start-up). It reads the user's
``config.json`` and the project's ``.oharness/config.json`` as JSON and applies the same rules
to the few keys it needs: the project's file comes second and may switch
``memory.autoExtract.onStop``/``onCompaction``/``askAgent`` off, never on (spec 01.5), and may
set the rest. Anything it does not read plainly (a missing or broken file is fine; a value of
the wrong type, a section that is not an object) makes :func:`read_switches` answer None, and
the hook loads the full settings instead, which reports the problem with its fix. A test holds
the two readers to the same answers.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # not typing's: a hook pays for every import
if TYPE_CHECKING:
    from typing import Any, Final

FLAGS: Final = ("onStop", "onCompaction", "askAgent")
DEFAULT_MIN_USER_TURNS: Final = 3


class Switches:
    """The capture settings a hook acts on."""

    __slots__ = ("ask_agent", "min_user_turns", "model", "on_compaction", "on_stop")

    def __init__(
        self, model: bool, on_stop: bool, on_compaction: bool, ask_agent: bool, min_turns: int
    ) -> None:
        self.model = model
        self.on_stop = on_stop
        self.on_compaction = on_compaction
        self.ask_agent = ask_agent
        self.min_user_turns = min_turns

    def as_tuple(self) -> tuple[bool, bool, bool, bool, int]:
        return (self.model, self.on_stop, self.on_compaction, self.ask_agent, self.min_user_turns)


class _NotPlain(Exception):
    """A value the plain reader leaves to the full settings loader."""


def _file(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise _NotPlain from exc
    if not isinstance(data, dict):
        raise _NotPlain
    return data


def _section(data: dict[str, Any], *path: str) -> dict[str, Any]:
    node = data
    for key in path:
        inner = node.get(key, {})
        if not isinstance(inner, dict):
            raise _NotPlain
        node = inner
    return node


def _layer(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(autoExtract, models)`` of one file, each value of the type the settings expect."""
    auto = _section(data, "memory", "autoExtract")
    models = _section(data, "models")
    for flag in FLAGS:
        if flag in auto and not isinstance(auto[flag], bool):
            raise _NotPlain
    turns = auto.get("minUserTurns", 0)
    if isinstance(turns, bool) or not isinstance(turns, int):
        raise _NotPlain
    for key in ("main", "small"):
        if models.get(key) is not None and not isinstance(models[key], str):
            raise _NotPlain
    return auto, models


def read_switches(home: str, project_root: str) -> Switches | None:
    """The capture switches of ``project_root`` for ``home``'s user, or None to load them
    the full way."""
    try:
        user = _file(os.path.join(home, "config.json"))
        project = _file(os.path.join(project_root, ".oharness", "config.json"))
    except _NotPlain:
        return None
    return plain_switches(user, project)


def plain_switches(user: dict[str, Any], project: dict[str, Any]) -> Switches | None:
    """The switches of a user's and a project's config objects (None: not plain)."""
    try:
        user_auto, user_models = _layer(user)
        project_auto, project_models = _layer(project)
    except _NotPlain:
        return None
    flags = {}
    for flag in FLAGS:
        value = user_auto.get(flag, False)
        flags[flag] = False if project_auto.get(flag) is False else value
    turns = project_auto.get("minUserTurns", user_auto.get("minUserTurns", DEFAULT_MIN_USER_TURNS))
    models = {**user_models, **project_models}
    model = bool(models.get("small") or models.get("main"))
    return Switches(model, flags["onStop"], flags["onCompaction"], flags["askAgent"], turns)
