"""The curated public API: ``import oharness`` (docs/api.md) and ``oharness.recall``."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import oharness
import oharness.recall

REPO = Path(__file__).resolve().parents[2]
API_DOC = REPO / "docs" / "api.md"


def _documented_names() -> list[str]:
    text = API_DOC.read_text(encoding="utf-8")
    names = text.split("## Names", 1)[1]
    return re.findall(r"^\| `([A-Za-z_]+)` \|", names, flags=re.MULTILINE)


def test_the_exported_names_are_exactly_the_documented_ones() -> None:
    documented = _documented_names()
    assert len(documented) == len(set(documented))
    assert sorted(oharness.__all__) == sorted(documented)


@pytest.mark.parametrize("package", [oharness, oharness.recall], ids=lambda p: p.__name__)
def test_every_exported_name_is_its_defining_modules_own_object(package: ModuleType) -> None:
    table: dict[str, str] = package._EXPORTS
    assert set(package.__all__) - {"__version__"} == set(table)
    for name, module in table.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
    assert set(package.__all__) <= set(dir(package))


def test_the_main_entry_points_are_there() -> None:
    assert oharness.open_workspace.__module__ == "oharness.memory.workspace"
    assert issubclass(oharness.SecretError, oharness.ValidationError)
    assert issubclass(oharness.SyncError, oharness.OHarnessError)
    assert oharness.AgentMemory.__name__ == "AgentMemory"
    assert oharness.__version__


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'oharness' has no attribute 'open_workspaces'"):
        _ = oharness.open_workspaces  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        from oharness import no_such_name  # type: ignore[attr-defined]  # noqa: F401


def _loaded_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(result.stdout.split())


def test_importing_the_package_loads_nothing_else() -> None:
    loaded = _loaded_after("import oharness")
    assert {name for name in loaded if name.startswith("oharness")} == {
        "oharness",
        "oharness.exports",
    }


def test_one_name_loads_only_what_it_needs() -> None:
    loaded = _loaded_after("import oharness; oharness.ValidationError")
    assert "oharness.memory.workspace" not in loaded and "oharness.harness" not in loaded
    loaded = _loaded_after("import oharness.recall; oharness.recall.Tokenizer")
    assert "oharness.recall.tokenize" in loaded and "Stemmer" in loaded
    assert "numpy" not in loaded and "oharness.recall.index" not in loaded


def test_submodules_still_import_through_the_packages() -> None:
    from oharness.recall import cache, tokenize

    assert cache.read_cache is oharness.recall.read_cache
    assert tokenize.Tokenizer is oharness.recall.Tokenizer


def test_the_documented_example_runs(tmp_path: Path) -> None:
    example = API_DOC.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    env = {**os.environ, "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", example],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("invalid ")
    assert list((project / "MEMORY").glob("*.md")), "the example's note was not written"
