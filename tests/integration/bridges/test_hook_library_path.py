"""The prompt hook without a daemon attaches what the library's recall attaches, in order."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.bridges.runner import ok, run

from oharness.memory.attach import recall_for_message
from oharness.memory.workspace import open_workspace
from oharness.notes.format import Note, serialise_note_bytes


def _words(text: str) -> list[str]:
    return text.split()


_SUBJECTS = _words("billing deploy gateway ledger payroll search upload webhook invoice cache")
_DETAILS = _words("retries timeouts quotas rollbacks schemas tokens shards alerts exports audits")
_WORDS = _words("stable weekly nightly strict careful manual hourly async cheap fast")


def _notes(count: int, seed: int) -> list[Note]:
    rng = random.Random(seed)
    notes = []
    for number in range(count):
        subject, detail = rng.choice(_SUBJECTS), rng.choice(_DETAILS)
        words = " ".join(rng.sample(_WORDS, 3))
        notes.append(
            Note(
                f"{subject}-{detail}-{number:03d}",
                f"The {subject} {detail} are {words}",
                f"Decided in review {number}: {subject} {detail} stay {words}.\n"
                f"Ask the {rng.choice(_SUBJECTS)} owners before changing it.\n",
                (subject, detail),
                created_at=1_700_000_000_000 + number * 60_000,
                updated_at=1_700_000_000_000 + number * 60_000,
            )
        )
    return notes


@pytest.fixture
def fixture_home(home: Path, project_dir: Path) -> tuple[Path, Path]:
    ok(home, project_dir, "project", "init")
    notes = _notes(120, seed=17)
    folders = (project_dir / "MEMORY", home / "memory" / "user")
    for number, note in enumerate(notes):
        folder = folders[number % 2]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{note.id}.md").write_bytes(serialise_note_bytes(note))
    return home, project_dir


def _prompts() -> list[str]:
    rng = random.Random(5)
    prompts = [
        f"what did we decide about the {rng.choice(_SUBJECTS)} {rng.choice(_DETAILS)}?"
        for _ in range(12)
    ]
    return [*prompts, "hello there", "the billing retries and the ledger schemas, again?"]


def _hook(home: Path, project: Path, prompt: str, session: str) -> str:
    payload = json.dumps({"session_id": session, "cwd": str(project), "prompt": prompt})
    result = run(home, project, "hook", "claude-code", "user-prompt-submit", input=payload)
    assert result.returncode == 0 and result.stderr == ""
    if not result.stdout:
        return ""
    context: str = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    return context


def _library_block(home: Path, project: Path, prompt: str, exclude: list[str]) -> str:
    """What ``recall_for_message`` attaches with every note read first (no cache involved)."""
    workspace = open_workspace(project, home, register=False)
    workspace.service.all_notes()
    recall = workspace.service.recall
    assert recall is not None
    keys = [tuple(key.split(":", 1)) for key in exclude]
    return recall_for_message(recall, prompt, keys, record=False, strict=True).block  # type: ignore[arg-type]


def _drop_recall_cache(home: Path) -> None:
    for path in (home / "cache").glob("recall-*.marshal"):
        path.unlink()


def test_the_hook_attaches_what_the_library_attaches(fixture_home: tuple[Path, Path]) -> None:
    """Cold (no recall cache) and warm (from the cache, reading only what it attaches); each
    compared with the library in the same state (the hook counts usage, which may reorder)."""
    home, project = fixture_home
    attached_any = 0
    for number, prompt in enumerate(_prompts()):
        expected = _library_block(home, project, prompt, [])
        _drop_recall_cache(home)
        assert _hook(home, project, prompt, f"cold-{number}") == expected, prompt
        assert list((home / "cache").glob("recall-*.marshal"))  # the cold run wrote it
        expected = _library_block(home, project, prompt, [])
        assert _hook(home, project, prompt, f"warm-{number}") == expected, prompt
        attached_any += bool(expected)
    assert attached_any >= 8  # the fixture is about something


def test_within_a_session_the_hook_leaves_out_what_it_attached(
    fixture_home: tuple[Path, Path],
) -> None:
    home, project = fixture_home
    prompt = "what about the billing retries and the billing quotas?"
    first = _hook(home, project, prompt, "one")
    assert first
    record = next((home / "hooks" / "claude-code" / "sessions").glob("*.json"))
    attached = json.loads(record.read_text(encoding="utf-8"))["attached"]
    expected = _library_block(home, project, prompt, attached)
    second = _hook(home, project, prompt, "one")
    assert second == expected
    assert not any(f'id="{key.split(":", 1)[1]}"' in second for key in attached)


_THREADS = (
    "import json, os, sys\n"
    "from oharness.cli.entry import main\n"
    "code = main(['hook', 'claude-code', 'user-prompt-submit'])\n"
    "threads = len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else 0\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump([threads, 'numpy' in sys.modules, os.environ['OPENBLAS_NUM_THREADS']], out)\n"
    "sys.exit(code)\n"
)


@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("2", "2")])
def test_the_library_path_runs_on_one_thread_unless_told_otherwise(
    fixture_home: tuple[Path, Path], tmp_path: Path, preset: str | None, expected: str
) -> None:
    home, project = fixture_home
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS",)}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    listing = tmp_path / "threads.json"
    payload = json.dumps({"session_id": "t", "cwd": str(project), "prompt": "billing retries?"})
    result = subprocess.run(
        [sys.executable, "-c", _THREADS, str(listing)],
        input=payload,
        capture_output=True,
        text=True,
        env={**env, "OHARNESS_HOME": str(home)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    threads, numpy_loaded, setting = json.loads(listing.read_text())
    assert numpy_loaded and setting == expected
    if preset is None and threads:  # Linux: numpy's BLAS started no thread of its own
        assert threads == 1
