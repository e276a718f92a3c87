"""A stem match whose words differ counts less; the words of the session weigh little."""

from __future__ import annotations

from pathlib import Path

import pytest
from recall_helpers import realistic_notes

from oharness.notes.format import Note
from oharness.recall.cache import read_cache, write_cache
from oharness.recall.index import RecallIndex
from oharness.recall.postings import CacheKey, NoteKey
from oharness.recall.surface import inflection_key
from oharness.types import Scope


def test_inflections_share_a_key_derivations_do_not() -> None:
    for forms in (
        ("change", "changes", "changed", "changing"),
        ("add", "adds", "adding", "added"),
        ("retry", "retries", "retried"),
        ("use", "uses", "using", "used"),
        ("need", "needs", "needed"),
        ("colour", "color", "colours"),
    ):
        assert len({inflection_key(form) for form in forms}) == 1, forms
    for first, second in (("expression", "express"), ("uploader", "upload")):
        assert inflection_key(first) != inflection_key(second)


def _index(filler: int) -> RecallIndex:
    index = RecallIndex()
    index.add_many(realistic_notes(filler))
    index.add_many(
        [
            ("project", Note("express-1", "Express sessions are kept in Redis", "x.")),
            ("project", Note("express-2", "The api client must not call Express directly", "")),
            ("project", Note("deploys-9a0", "Deploys happen on Tuesdays", "Release train.")),
            ("project", Note("pr-a08", "Keep pull requests small", "", ("review", "git"))),
        ]
    )
    return index


@pytest.mark.parametrize("filler", [0, 50, 500])
def test_a_derived_word_alone_does_not_name_a_note(filler: int) -> None:
    index = _index(filler)
    for message in (
        "explain what this regular expression does",
        "what does the expression on line 8 return?",
        "the expressions in this function are hard to read",
    ):
        assert index.recall(message) == [], message


@pytest.mark.parametrize("filler", [0, 50, 500])
def test_the_same_word_and_its_inflections_still_name_the_note(filler: int) -> None:
    index = _index(filler)
    found = [hit.id for hit in index.recall("why does Express drop the sessions?")]
    assert found[:1] == ["express-1"]
    for message in ("a deploy happened on a Tuesday", "the deploys on Tuesday"):
        assert [hit.id for hit in index.recall(message)][:1] == ["deploys-9a0"], message


@pytest.mark.parametrize("filler", [0, 50, 500])
def test_the_words_of_the_session_alone_attach_nothing(filler: int) -> None:
    index = _index(filler)
    for message in (
        "please review the changes in this file",
        "run the tests for this file again",
        "the output looks wrong on line 3",
        "did the change fix it?",
    ):
        assert index.recall(message) == [], message
    assert [hit.id for hit in index.recall("review this pull request for me")][:1] == ["pr-a08"]


def test_a_base_word_does_not_name_a_note_holding_only_a_derived_one() -> None:
    index = _index(50)
    index.add("project", Note("regex-1", "Regular expressions are compiled once at start", ""))
    assert "regex-1" not in [hit.id for hit in index.recall("can you express this as a fraction?")]
    found = [hit.id for hit in index.recall("where are the regular expressions compiled?")]
    assert found[:1] == ["regex-1"]


def test_a_message_whose_only_candidate_matches_through_the_stem_attaches_nothing() -> None:
    body = " ".join(f"filler{n} word{n}" for n in range(80))  # not a short note
    notes: list[tuple[Scope, Note]] = [
        ("project", Note("expr-1", "Expressions evaluation", body, ("templating",)))
    ]
    notes += [("project", Note(f"x{n}", f"Cats and dogs {n}", "plain")) for n in range(30)]
    index = RecallIndex()
    index.add_many(notes)
    assert index.recall("express") == []
    assert [hit.id for hit in index.recall("expressed evaluation")] == ["expr-1"]


def test_the_marks_survive_a_cache_round_trip(tmp_path: Path) -> None:
    notes: list[tuple[Scope, Note]] = [
        ("project", Note("express-1", "Express sessions are kept in Redis", "x.")),
        ("project", Note("regex-1", "Regular expressions are compiled once at start", "")),
        ("project", Note("deploys-9a0", "Deploys happen on Tuesdays", "Release train.")),
    ]
    keys: dict[NoteKey, CacheKey] = {
        (scope, note.id): (1, 2, number) for number, (scope, note) in enumerate(notes)
    }
    index = RecallIndex()
    index.add_many(notes, keys)
    path = tmp_path / "recall.bin"
    assert write_cache(path, index) == len(notes)
    restored = RecallIndex()
    assert read_cache(path, restored, keys) == set()
    for message in (
        "explain what this regular expression does",
        "why does Express drop the sessions?",
        "can you express this as a fraction?",
    ):
        assert restored.recall(message) == index.recall(message), message
    assert [hit.id for hit in restored.recall("why does Express drop the sessions?")] == [
        "express-1"
    ]


@pytest.mark.parametrize(
    ("word", "key"),
    [
        ("cities", "city"),
        ("retried", "retry"),
        ("ties", "ti"),  # too short for "-ies": the "-es" ending
        ("agreed", "agreed"),  # "-eed" is no "-ed" ending
        ("needed", "need"),
        ("boxes", "box"),
        ("bob's", "bob"),
        ("stopping", "stop"),
        ("glass", "glas"),  # "-ss" is no plural; the doubled consonant goes
        ("analysis", "analysis"),
        ("bus", "bus"),
        ("colours", "color"),
        ("went", "go"),
        ("sing", "sing"),  # "-ing" needs two letters before it
    ],
)
def test_the_inflection_key_of_each_ending(word: str, key: str) -> None:
    assert inflection_key(word) == key


@pytest.mark.parametrize("filler", [0, 50, 500])
def test_a_derived_word_beside_the_notes_own_words_leaves_it_found(filler: int) -> None:
    # The derived word was the message's strongest at the note; the others still name it.
    index = _index(filler)
    index.add("project", Note("uploader-1", "The uploader retries large files in chunks", ""))
    found = [hit.id for hit in index.recall("the regular expression for sessions in redis")]
    assert found[:1] == ["express-1"]
    assert [hit.id for hit in index.recall("upload large files")][:1] == ["uploader-1"]
