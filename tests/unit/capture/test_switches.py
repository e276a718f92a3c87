"""The capture hook's plain config reader against the full settings loader, value for value."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from oharness.capture.switches import plain_switches, read_switches
from oharness.errors import ConfigError
from oharness.project.config import load_settings
from oharness.settings import ConfigLayer, build_settings

FLAG_VALUES: list[Any] = [None, True, False]  # None: the key is left out


def _auto(*flags: Any, turns: Any) -> dict[str, Any]:
    on_stop, on_compaction, ask_agent = flags
    values = {
        "onStop": on_stop,
        "onCompaction": on_compaction,
        "askAgent": ask_agent,
        "minUserTurns": turns,
    }
    return {key: value for key, value in values.items() if value is not None}


def _config(auto: dict[str, Any], models: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {"memory": {"autoExtract": auto}} if auto else {}
    if models is not None:
        data["models"] = models
    return data


def _full(user: dict[str, Any], project: dict[str, Any]) -> tuple[bool, bool, bool, bool, int]:
    settings = build_settings(
        [ConfigLayer("user", user), ConfigLayer("project", project, is_project=True)]
    )
    auto = settings.memory.auto_extract
    model = bool(settings.models.small or settings.models.main)
    return (model, auto.on_stop, auto.on_compaction, auto.ask_agent, auto.min_user_turns)


def test_the_plain_reader_agrees_with_the_settings_loader_on_every_combination() -> None:
    flags = list(itertools.product(FLAG_VALUES, repeat=3))
    models: list[dict[str, Any] | None] = [
        None,
        {"small": "openai:m"},
        {"main": "anthropic:m", "small": None},
        {"small": None},
    ]
    checked = 0
    for user_flags, project_flags in itertools.product(flags, flags):
        for user_turns, project_turns in [(None, None), (1, None), (None, 5), (2, 0)]:
            for user_models, project_models in [(models[1], None), (None, models[2]),
                                                (models[1], models[3]), (None, None)]:  # fmt: skip
                user = _config(_auto(*user_flags, turns=user_turns), user_models)
                project = _config(_auto(*project_flags, turns=project_turns), project_models)
                plain = plain_switches(user, project)
                assert plain is not None
                assert plain.as_tuple() == _full(user, project), (user, project)
                checked += 1
    assert checked == 27 * 27 * 16


@pytest.mark.parametrize(
    "user",
    [
        {"memory": {"autoExtract": {"onStop": "yes"}}},
        {"memory": {"autoExtract": {"minUserTurns": "3"}}},
        {"memory": {"autoExtract": {"minUserTurns": True}}},
        {"memory": {"autoExtract": []}},
        {"memory": "on"},
        {"models": {"small": 5}},
        {"models": []},
    ],
)
def test_what_is_not_plain_goes_to_the_full_loader_which_names_the_fix(
    user: dict[str, Any], tmp_path: Path
) -> None:
    assert plain_switches(user, {}) is None
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".oharness").mkdir(parents=True)
    home.mkdir()
    (home / "config.json").write_text(json.dumps(user))
    assert read_switches(str(home), str(project)) is None
    with pytest.raises(ConfigError, match=r"config\.json"):
        load_settings(home / "config.json", project)


def _read(home: Path, project: Path) -> tuple[bool, bool, bool, bool, int]:
    switches = read_switches(str(home), str(project))
    assert switches is not None
    return switches.as_tuple()


def test_files_are_read_from_the_home_and_the_project(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".oharness").mkdir(parents=True)
    home.mkdir()
    assert _read(home, project) == (False, False, False, False, 3)
    user = {"models": {"small": "openai:m"}, "memory": {"autoExtract": {"onStop": True}}}
    (home / "config.json").write_text(json.dumps(user))
    off = {"memory": {"autoExtract": {"onStop": False, "askAgent": True, "minUserTurns": 1}}}
    (project / ".oharness" / "config.json").write_text(json.dumps(off))
    assert _read(home, project) == (True, False, False, False, 1)
    (home / "config.json").write_text("{ broken")
    assert read_switches(str(home), str(project)) is None
