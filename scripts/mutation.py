"""Mutation testing of the cores: how many planted one-line bugs the unit tests catch.

For each core of the table below (the note format, the merge, sync planning, the secret rules,
the daemon's auth) mutmut plants every small change it knows (``<`` for ``<=``, another
constant, a dropped argument, ...) in the core's files, one at a time, and runs the tests that
cover them; a mutant the tests fail on is killed, one they pass on survived. A mutant that
makes the tests hang past mutmut's time limit counts as killed. The score is killed / total,
per core and over all cores; the goal is 85 % on every core.

Some survivors cannot be killed by any test: mutmut switches a mutant on when its function is
called, in a process that imported the module beforehand, so the mutants of functions that only
run while a module is imported (the builders of the secret rules' table: ``_pattern_rule``,
``_lazy``, ``_Rule.__init__``) stay dormant. Others change nothing observable (an encoding
spelled ``"UTF-8"`` for ``"utf-8"``, ``ensure_ascii=None`` for ``False``). Read the survivors
with ``--show`` before writing a test for one.

Each core runs in a temporary copy of the committed tree (``git archive HEAD``), so the working
tree is never mutated and uncommitted changes are not measured: commit first. The copy's
``pyproject.toml`` gets a ``[tool.mutmut]`` section for the core, and ``PYTHONPATH`` points at
mutmut's mutated copy so the tests import it rather than the installed package.

It takes 18 to 45 minutes for the secret rules and about two minutes for each other core, on
one core of a shared two-core machine, which is why it is not part of ``scripts/test.sh``; run
it after changing a core or its tests. Needs the ``dev`` extra (``mutmut``).

Usage::

    .venv/bin/python scripts/mutation.py                  # every core
    .venv/bin/python scripts/mutation.py --core merge     # one core (repeatable)
    .venv/bin/python scripts/mutation.py --show           # also print each survivor's diff
    .venv/bin/python scripts/mutation.py --keep           # keep the copies (mutmut show there)

Exit code 1 when the overall score is under 85 %.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.85


@dataclass(frozen=True)
class Core:
    """The files mutated and the tests that must catch the mutants."""

    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    # Tests left out of the mutation run (node ids): slow statistical checks whose mutants
    # the quick tests catch too.
    deselect: tuple[str, ...] = ()


# A module that moves is a change to this table only.
CORES: dict[str, Core] = {
    "note format": Core(
        mutate=("src/oharness/notes/format.py",),
        tests=("tests/unit/notes/test_format.py",),
    ),
    "merge": Core(
        mutate=("src/oharness/merge/*.py",),
        tests=("tests/unit/merge",),
    ),
    "sync planning": Core(
        mutate=("src/oharness/sync/plan.py",),
        tests=("tests/unit/sync/test_plan.py",),
    ),
    "secret rules": Core(
        mutate=("src/oharness/notes/secrets/*.py",),
        tests=(
            "tests/unit/notes/test_secrets.py",
            "tests/unit/notes/test_secret_boundaries.py",
            "tests/unit/notes/test_secret_detection.py",
            "tests/unit/notes/test_secret_prose.py",
            "tests/unit/notes/test_secret_values.py",
            "tests/unit/notes/test_secret_encoded.py",
        ),
        deselect=(
            "tests/unit/notes/test_secret_detection.py::"
            "test_every_benchmark_pattern_stays_within_half_a_percent",
            "tests/unit/notes/test_secret_detection.py::"
            "test_the_labelled_corpus_meets_both_targets",
        ),
    ),
    "daemon auth": Core(
        mutate=("src/oharness/daemon/auth.py",),
        tests=("tests/unit/daemon/test_auth.py", "tests/unit/daemon/test_guards.py"),
    ),
}

# What the copy holds: the package, the tests and what they read, the project file.
COPIED = ("src", "tests", "bench", "pyproject.toml")
KILLED = ("killed", "timeout", "segfault", "caught_by_type_check")


@dataclass(frozen=True)
class CoreResult:
    """One core's counts and the names of its survivors."""

    name: str
    killed: int
    total: int
    survivors: tuple[str, ...]
    seconds: float

    @property
    def score(self) -> float:
        return self.killed / self.total if self.total else 1.0


def _toml_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def _mutmut_section(core: Core) -> str:
    cli_args = ["-p", "no:cacheprovider", "-q", "-x", "-n", "0"]
    for node in core.deselect:
        cli_args += ["--deselect", node]
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {_toml_list(core.mutate)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(core.tests)}\n"
        f"pytest_add_cli_args = {_toml_list(cli_args)}\n"
    )


def _copy_committed_tree(destination: Path) -> None:
    """The committed files of COPIED, extracted into ``destination``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD", *COPIED],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")


def _mutmut(directory: Path, *args: str, quiet: bool = True) -> str:
    mutmut = Path(sys.executable).parent / "mutmut"
    environment = {**os.environ, "PYTHONPATH": str(directory / "mutants" / "src")}
    result = subprocess.run(
        [str(mutmut), *args],
        cwd=directory,
        env=environment,
        capture_output=quiet,
        text=True,
    )
    if result.returncode != 0:
        if quiet:
            sys.stdout.write(result.stdout + result.stderr)
        raise SystemExit(f"mutmut {' '.join(args)} failed in {directory} ({result.returncode})")
    return result.stdout or ""


def run_core(name: str, core: Core, directory: Path, *, show: bool) -> CoreResult:
    """Copy the tree into ``directory``, run mutmut on one core, read its counts."""
    started = time.monotonic()
    _copy_committed_tree(directory)
    with (directory / "pyproject.toml").open("a", encoding="utf-8") as project:
        project.write(_mutmut_section(core))
    # PYTHONPATH must name an existing folder when Python starts, or the import system
    # remembers it as empty and the tests import the installed package instead of the mutants;
    # mutmut fills the folder in (it skips files already there, so an empty one is harmless).
    (directory / "mutants" / "src").mkdir(parents=True)
    _mutmut(directory, "run", "--max-children", "1")
    _mutmut(directory, "export-cicd-stats")
    stats = json.loads((directory / "mutants" / "mutmut-cicd-stats.json").read_text("utf-8"))
    survivors = tuple(
        line.strip().split(":", 1)[0]
        for line in _mutmut(directory, "results").splitlines()
        if line.startswith("    ") and ":" in line
    )
    if show:
        for survivor in survivors:
            print(_mutmut(directory, "show", survivor))
    return CoreResult(
        name=name,
        killed=sum(int(stats.get(key, 0)) for key in KILLED),
        total=int(stats["total"]),
        survivors=survivors,
        seconds=time.monotonic() - started,
    )


def _percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--core", action="append", choices=sorted(CORES), help="run only these")
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    options = parser.parse_args(argv)
    names = options.core or list(CORES)

    results: list[CoreResult] = []
    for name in names:
        directory = Path(tempfile.mkdtemp(prefix=f"mutation-{name.replace(' ', '-')}-"))
        print(f"== {name}: mutating {', '.join(CORES[name].mutate)}", flush=True)
        try:
            result = run_core(name, CORES[name], directory, show=options.show)
        finally:
            if options.keep:
                print(f"   kept in {directory}")
            else:
                shutil.rmtree(directory, ignore_errors=True)
        results.append(result)
        print(
            f"   {result.killed}/{result.total} killed ({_percent(result.score)}) "
            f"in {result.seconds:.0f} s",
            flush=True,
        )
        for survivor in result.survivors:
            print(f"   survived: {survivor}")

    killed = sum(result.killed for result in results)
    total = sum(result.total for result in results)
    overall = killed / total if total else 1.0
    print("\n| core | killed / total | score |\n|---|---|---|")
    for result in results:
        print(f"| {result.name} | {result.killed} / {result.total} | {_percent(result.score)} |")
    print(f"| overall | {killed} / {total} | {_percent(overall)} |")
    print(f"\ntook {sum(result.seconds for result in results):.0f} s; goal {_percent(GOAL)}")
    return 0 if overall >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
