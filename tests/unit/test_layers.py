"""The layer table of docs/architecture.md: lower layers never import higher ones.

``lint-imports`` (import-linter, configured in pyproject.toml) enforces the table; the rules it
cannot express live in ``layer_rules.py``. These tests run both, check that the contract is
the table the docs show, and plant a violation of every kind in a copy of the package to see
each one caught.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from layer_rules import REPO, SERVER_MAY_IMPORT, all_violations, layer_rows

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
RULES_SCRIPT = Path(__file__).with_name("layer_rules.py")
DOCS = REPO / "docs" / "architecture.md"


def _lint(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _rules(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RULES_SCRIPT), str(repo)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_lint_imports_keeps_every_contract() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_rules_import_linter_cannot_express_hold() -> None:
    assert all_violations() == []


def _docs_table() -> list[list[str]]:
    text = DOCS.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(r"\| L\d ", line)]
    assert len(rows) == 5, "docs/architecture.md: the layer table (L0 to L4) was not found"
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _names(cell: str) -> list[str]:
    return re.findall(r"`([a-z_.]+)`", cell)


def test_the_layer_table_in_the_docs_is_the_contract() -> None:
    # The docs list layers bottom-up and, inside a layer, groups highest first ("a over b").
    documented: list[tuple[str, ...]] = []
    for cells in reversed(_docs_table()):
        for group in cells[1].split(" over "):
            documented.append(tuple(sorted(_names(group))))
    contract = [tuple(sorted(row)) for row in layer_rows()]
    assert documented == contract


def test_the_servers_allow_list_is_the_documented_one() -> None:
    (l3,) = [cells for cells in _docs_table() if cells[0].startswith("L3")]
    narrower = re.search(r"\(`server`: only (.*)\)", l3[2])
    assert narrower, "docs/architecture.md: the server's narrower imports are not stated"
    layer0 = {f"oharness.{name}" for name in layer_rows()[-1] + layer_rows()[-2]}
    allowed = set(SERVER_MAY_IMPORT) - layer0 - {"oharness.server"}
    assert {f"oharness.{name}" for name in _names(narrower.group(1))} == allowed


def test_every_package_is_placed_in_the_table() -> None:
    placed = {name for row in layer_rows() for name in row}
    src = REPO / "src" / "oharness"
    present = {path.name.removesuffix(".py") for path in src.iterdir() if path.suffix == ".py"}
    present |= {path.name for path in src.iterdir() if (path / "__init__.py").exists()}
    assert present - {"__init__"} <= placed


#: (file under src/oharness, line appended, which check must catch it, what it must name)
PLANTED = {
    "bare package import": ("notes/links.py", "from oharness import cli", "lint", "cli"),
    "relative import": ("notes/links.py", "from ..recall import index", "lint", "recall"),
    "relative same-layer import": ("storage/file.py", "from ..merge import text", "lint", "merge"),
    "same layer: notes -> recall": ("notes/store.py", "import oharness.recall.index", "lint", ""),
    "same layer: storage -> merge": (
        "storage/file.py",
        "from oharness.merge.text import merge_text",
        "lint",
        "oharness.merge",
    ),
    "inside L2: memory -> sync": (
        "memory/memory_service.py",
        "from oharness.sync import plan",
        "lint",
        "",
    ),
    "lowest layer upwards": ("errors.py", "from oharness.harness import model", "lint", ""),
    "type-checking import": (
        "notes/links.py",
        "import typing\nif typing.TYPE_CHECKING:\n    from oharness.memory import memory_service",
        "lint",
        "oharness.memory",
    ),
    "server -> memory": (
        "server/app.py",
        "from oharness.memory import workspace",
        "lint",
        "memory",
    ),
    "server -> sync engine": (
        "server/app.py",
        "from oharness.sync import scope_sync",
        "rules",
        "oharness.sync.scope_sync",
    ),
    "through the public API": (
        "notes/links.py",
        "from oharness import open_workspace",
        "rules",
        "oharness.notes.links",
    ),
    "importlib.import_module": (
        "notes/links.py",
        "import importlib\nimportlib.import_module('oharness.cli.main')",
        "rules",
        "oharness.cli.main",
    ),
    "relative dynamic import": (
        "recall/index.py",
        "from importlib import import_module\nimport_module('..merge.text', __package__)",
        "rules",
        "oharness.merge.text",
    ),
    "lazy re-export": (
        "notes/links.py",
        "from oharness.exports import lazy_exports\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'x': 'oharness.memory.memory_service'})",
        "rules",
        "oharness.memory.memory_service",
    ),
    "__import__": ("project/config.py", "__import__('oharness.sync.scope_sync')", "rules", "sync"),
    "computed module name": (
        "notes/links.py",
        "import importlib\nNAME = 'oharness.cli'\nimportlib.import_module(NAME)",
        "rules",
        "computed",
    ),
}


@pytest.fixture(scope="module")
def pristine_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layers") / "pristine"
    shutil.copytree(REPO / "src" / "oharness", root / "src" / "oharness")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_a_planted_violation_is_caught(kind: str, pristine_copy: Path, tmp_path: Path) -> None:
    relative, line, check, named = PLANTED[kind]
    repo = tmp_path / "repo"
    shutil.copytree(pristine_copy, repo)
    target = repo / "src" / "oharness" / relative
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    result = _lint(repo) if check == "lint" else _rules(repo)
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"{kind} went unnoticed:\n{output}"
    importer = "oharness." + relative.removesuffix(".py").replace("/", ".")
    assert importer in output or relative in output, output
    assert named in output, output


#: (file under src/oharness, lines appended, the package whose parts then import each other, the
#: two parts the contract names)
CIRCLES = {
    "two modules of one package": (
        "notes/format.py",
        "from oharness.notes import store",
        "oharness.notes",
        (".format", ".store"),
    ),
    "in a function body, between a room and its house": (
        "daemon/events.py",
        "def _circle() -> object:\n    from oharness.daemon.state import DaemonState\n"
        "    return DaemonState",
        "oharness.daemon",
        (".events", ".state"),
    ),
}


@pytest.mark.parametrize("kind", sorted(CIRCLES))
def test_a_planted_import_circle_is_caught(kind: str, pristine_copy: Path, tmp_path: Path) -> None:
    relative, lines, package, parts = CIRCLES[kind]
    repo = tmp_path / "repo"
    shutil.copytree(pristine_copy, repo)
    target = repo / "src" / "oharness" / relative
    target.write_text(target.read_text(encoding="utf-8") + "\n" + lines + "\n", encoding="utf-8")
    result = _lint(repo)
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"{kind} went unnoticed:\n{output}"
    assert "No import circles between the modules and packages of any package BROKEN" in output
    assert f"No cycles are allowed in {package}." in output, output
    assert all(part in output for part in parts), output


def test_a_package_missing_from_the_table_is_caught(pristine_copy: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(pristine_copy, repo)
    (repo / "src" / "oharness" / "newthing").mkdir()
    (repo / "src" / "oharness" / "newthing" / "__init__.py").write_text("", encoding="utf-8")
    result = _lint(repo)
    assert result.returncode != 0
    assert "oharness.newthing" in result.stdout + result.stderr


def test_the_pristine_copy_passes_both_checks(pristine_copy: Path) -> None:
    # Without this, a copy that fails for an unrelated reason would make every case pass.
    assert _lint(pristine_copy).returncode == 0
    assert _rules(pristine_copy).returncode == 0
