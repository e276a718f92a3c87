"""Extraction fixtures: a pass over the test workspace with a scripted small model."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from extraction_helpers import Extract, SmallModel, conversation  # noqa: E402

from oharness.extraction import ExtractionOptions, ExtractionReport, run_extraction  # noqa: E402
from oharness.harness.extraction_trigger import ChatExtractionModel  # noqa: E402
from oharness.harness.harness import Harness, HarnessOptions, create_harness  # noqa: E402
from oharness.harness.memory_plugin import MemoryPluginOptions  # noqa: E402
from oharness.harness.model import ModelReply, ModelRequest  # noqa: E402
from oharness.harness.providers import Models  # noqa: E402
from oharness.harness.scripted import ScriptedModel, text_reply  # noqa: E402
from oharness.memory.workspace import Workspace  # noqa: E402
from oharness.types import Clock  # noqa: E402


@pytest.fixture
def extract(workspace: Workspace) -> Extract:
    """``extract(answer, turns=..., dry_run=..., **options)``: one pass answering ``answer``.

    ``answer`` is a JSON-ready object, a text, or a function of the request returning either.
    The scripted model is kept on ``extract.model`` to look at what it was asked.
    """

    def run(
        answer: Any,
        *,
        turns: list[Any] | None = None,
        dry_run: bool = False,
        **options: Any,
    ) -> ExtractionReport:
        def reply(request: ModelRequest) -> ModelReply:
            value = answer(request) if callable(answer) else answer
            return ModelReply(text=value if isinstance(value, str) else json.dumps(value))

        model = ScriptedModel([reply])
        run.model = model  # type: ignore[attr-defined]
        return run_extraction(
            turns if turns is not None else conversation(),
            workspace.service,
            ChatExtractionModel(model),
            ExtractionOptions(**options),
            dry_run=dry_run,
        )

    return run


@pytest.fixture
def prompt_of() -> Callable[[ScriptedModel], str]:
    def prompt(model: ScriptedModel) -> str:
        [request] = model.requests
        return request.messages[0].text

    return prompt


@pytest.fixture
def main_model() -> ScriptedModel:
    return ScriptedModel(fallback=text_reply("ok"))


@pytest.fixture
def small() -> SmallModel:
    return SmallModel()


@pytest.fixture
def configure(home: Path) -> Callable[..., None]:
    """``configure(onStop=True, minUserTurns=1, project=None)``: the user's (and the project's)
    ``memory.autoExtract`` config."""

    def write(project: dict[str, Any] | None = None, **auto_extract: Any) -> None:
        config = {"memory": {"autoExtract": auto_extract}}
        (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
        if project is not None:
            folder = home.parent / "project" / ".oharness"
            folder.mkdir(parents=True, exist_ok=True)
            data = {"memory": {"autoExtract": project}}
            (folder / "config.json").write_text(json.dumps(data), encoding="utf-8")

    return write


@pytest.fixture
def make_harness(
    open_ws: Callable[..., Workspace],
    clock: Clock,
    main_model: ScriptedModel,
    small: SmallModel,
) -> Iterator[Callable[..., Harness]]:
    """``make_harness(**options)``: a harness over a freshly opened workspace (config read now),
    the scripted main model and the small one; closed after the test."""
    created: list[Harness] = []
    counter = itertools.count(1)

    def factory(**options: Any) -> Harness:
        options.setdefault("workspace", open_ws())
        options.setdefault("models", Models(main_model, small))
        options.setdefault("clock", clock)
        options.setdefault("hex_source", lambda n: format(next(counter), "x").rjust(n, "0"))
        options.setdefault("entry_points", None)
        options.setdefault("memory", MemoryPluginOptions(background_sync=False))
        harness = create_harness(HarnessOptions(**options))
        created.append(harness)
        return harness

    yield factory
    for harness in created:
        harness.close()
